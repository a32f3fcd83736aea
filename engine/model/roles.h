/*
 * The tensor-role table: every tensor a Clef model has, once.  A row says
 * which part of the model holds it (the text stack, a decoder layer's
 * norms, mixer or MLP, the vision tower, the joint head), its name in the
 * release checkpoint and in llama.cpp's GGUF files, its shape in terms of
 * the configs, the types the release may store it in, what it is (a
 * matrix, a norm of one form or the other, ...) and how the CPU backend
 * keeps it.  The inventory that checks a checkpoint (model.c), the weight
 * loaders of both backends, and `clef mkmodel` read names and shapes from
 * here and spell none themselves.
 *
 * Names are canonical (what a container maps its own names onto,
 * container.h): the text stack under CLEF_TEXT_PREFIX and each decoder
 * layer under its prefix (clef_layer_desc), the tower under
 * CLEF_VISION_PREFIX, the head's as in joint_head.safetensors.  The GGUF
 * column is the name llama.cpp's converter (conversion/clef.py over
 * qwen.py and qwen3vl.py, gguf-py's tensor map for MODEL_ARCH.CLEF and
 * MMPROJ) writes for the tensor, %d standing for the block index; its
 * flags say what the converter did to the values on the way (a GGUF
 * container undoes them, or a loader reads them as they are).
 *
 * The MoE MLP of Clef Omni joins as a part (CLEF_PART_MLP_MOE) with its
 * roles (router, the experts' gate/up/down, the shared expert and its
 * gate) and their rows; a layer whose clef_layer_desc says CLEF_MLP_MOE
 * then lists them (clef_layer_roles).
 */
#ifndef CLEF_ROLES_H
#define CLEF_ROLES_H

#include <stddef.h>
#include <stdint.h>

#include "model/model.h"

typedef enum {
    CLEF_PART_EMBED = 0,     /* the token embedding: under CLEF_TEXT_PREFIX */
    CLEF_PART_FINAL,         /* the final norm: under CLEF_TEXT_PREFIX */
    CLEF_PART_LM_HEAD,       /* lm_head, at the root, absent when tied */
    CLEF_PART_NORMS,         /* every decoder layer: its two norms */
    CLEF_PART_GDN,           /* a layer whose mixer is the gated delta rule */
    CLEF_PART_ATTN,          /* a layer of gated softmax attention */
    CLEF_PART_MLP_DENSE,     /* a layer's dense SwiGLU MLP */
    CLEF_PART_MLP_MOE,       /* Clef Omni's routed experts: the router,
                                then each expert's matrices */
    CLEF_PART_TOWER,         /* the vision tower's patch and position
                                embeddings: under CLEF_VISION_PREFIX */
    CLEF_PART_TOWER_BLOCK,   /* each tower block: "blocks.N." */
    CLEF_PART_MERGER,        /* the tower's merger */
    CLEF_PART_DEEPSTACK,     /* each DeepStack merger (Clef Omni):
                                "deepstack_merger_list.N." */
    CLEF_PART_AUDIO,         /* Clef Omni's audio tower: its convolutions,
                                under CLEF_AUDIO_PREFIX */
    CLEF_PART_AUDIO_LAYER,   /* each of its layers: "layers.N." */
    CLEF_PART_AUDIO_POST,    /* its final norm and projections */
    CLEF_PART_HEAD,          /* joint_head.safetensors: its inputs */
    CLEF_PART_HEAD_ROUTE,    /* each routing layer: "evidence_layers.N." */
    CLEF_PART_HEAD_SUMMARY,  /* the option summary's norm */
    CLEF_PART_HEAD_DEC,      /* each decoder layer: "layers.N." */
    CLEF_PART_HEAD_SCORE,    /* the scorer */
    CLEF_PART_COUNT
} clef_part;

typedef enum {
    CLEF_ROLE_EMBED = 0,
    CLEF_ROLE_FINAL_NORM,
    CLEF_ROLE_LM_HEAD,

    CLEF_ROLE_INPUT_NORM,            /* before the mixer */
    CLEF_ROLE_POST_NORM,             /* before the MLP */

    CLEF_ROLE_GDN_QKV,               /* in checkpoint order */
    CLEF_ROLE_GDN_Z,
    CLEF_ROLE_GDN_B,
    CLEF_ROLE_GDN_A,
    CLEF_ROLE_GDN_CONV,
    CLEF_ROLE_GDN_DT_BIAS,
    CLEF_ROLE_GDN_A_LOG,
    CLEF_ROLE_GDN_NORM,
    CLEF_ROLE_GDN_OUT,

    CLEF_ROLE_ATTN_Q,
    CLEF_ROLE_ATTN_K,
    CLEF_ROLE_ATTN_V,
    CLEF_ROLE_ATTN_O,
    CLEF_ROLE_ATTN_Q_NORM,
    CLEF_ROLE_ATTN_K_NORM,

    CLEF_ROLE_MLP_GATE,
    CLEF_ROLE_MLP_UP,
    CLEF_ROLE_MLP_DOWN,

    CLEF_ROLE_MOE_ROUTER,            /* mlp.gate: [experts][H] */
    CLEF_ROLE_MOE_GATE,              /* per expert (its name's %d) */
    CLEF_ROLE_MOE_UP,
    CLEF_ROLE_MOE_DOWN,

    CLEF_ROLE_V_PATCH,
    CLEF_ROLE_V_PATCH_BIAS,
    CLEF_ROLE_V_POS,

    CLEF_ROLE_V_NORM1,
    CLEF_ROLE_V_NORM1_BIAS,
    CLEF_ROLE_V_NORM2,
    CLEF_ROLE_V_NORM2_BIAS,
    CLEF_ROLE_V_QKV,
    CLEF_ROLE_V_QKV_BIAS,
    CLEF_ROLE_V_PROJ,
    CLEF_ROLE_V_PROJ_BIAS,
    CLEF_ROLE_V_FC1,
    CLEF_ROLE_V_FC1_BIAS,
    CLEF_ROLE_V_FC2,
    CLEF_ROLE_V_FC2_BIAS,

    CLEF_ROLE_V_MERGER_NORM,
    CLEF_ROLE_V_MERGER_NORM_BIAS,
    CLEF_ROLE_V_MERGER_FC1,
    CLEF_ROLE_V_MERGER_FC1_BIAS,
    CLEF_ROLE_V_MERGER_FC2,
    CLEF_ROLE_V_MERGER_FC2_BIAS,

    CLEF_ROLE_V_DS_NORM,
    CLEF_ROLE_V_DS_NORM_BIAS,
    CLEF_ROLE_V_DS_FC1,
    CLEF_ROLE_V_DS_FC1_BIAS,
    CLEF_ROLE_V_DS_FC2,
    CLEF_ROLE_V_DS_FC2_BIAS,

    CLEF_ROLE_A_CONV1,
    CLEF_ROLE_A_CONV1_BIAS,
    CLEF_ROLE_A_CONV2,
    CLEF_ROLE_A_CONV2_BIAS,
    CLEF_ROLE_A_CONV3,
    CLEF_ROLE_A_CONV3_BIAS,
    CLEF_ROLE_A_CONV_OUT,

    CLEF_ROLE_A_K,
    CLEF_ROLE_A_K_BIAS,
    CLEF_ROLE_A_V,
    CLEF_ROLE_A_V_BIAS,
    CLEF_ROLE_A_Q,
    CLEF_ROLE_A_Q_BIAS,
    CLEF_ROLE_A_OUT,
    CLEF_ROLE_A_OUT_BIAS,
    CLEF_ROLE_A_NORM1,
    CLEF_ROLE_A_NORM1_BIAS,
    CLEF_ROLE_A_FC1,
    CLEF_ROLE_A_FC1_BIAS,
    CLEF_ROLE_A_FC2,
    CLEF_ROLE_A_FC2_BIAS,
    CLEF_ROLE_A_NORM2,
    CLEF_ROLE_A_NORM2_BIAS,

    CLEF_ROLE_A_POST_NORM,
    CLEF_ROLE_A_POST_NORM_BIAS,
    CLEF_ROLE_A_PROJ1,
    CLEF_ROLE_A_PROJ1_BIAS,
    CLEF_ROLE_A_PROJ2,
    CLEF_ROLE_A_PROJ2_BIAS,

    CLEF_ROLE_H_PRIOR_SCALE,
    CLEF_ROLE_H_JOINT_SCALE,
    CLEF_ROLE_H_RESIDUAL_GATE,
    CLEF_ROLE_H_HIDDEN_NORM,
    CLEF_ROLE_H_HIDDEN_NORM_BIAS,
    CLEF_ROLE_H_MEMORY_PROJ,
    CLEF_ROLE_H_QUESTION_PROJ,
    CLEF_ROLE_H_OPTION_QUESTION_PROJ,
    CLEF_ROLE_H_GLOBAL_PROJ,
    CLEF_ROLE_H_OPTION_CONTEXT_PROJ,
    CLEF_ROLE_H_OPTION_LEXICAL_PROJ,
    CLEF_ROLE_H_TYPE_EMBEDDING,

    CLEF_ROLE_HR_QUERY_NORM,
    CLEF_ROLE_HR_QUERY_NORM_BIAS,
    CLEF_ROLE_HR_MEMORY_NORM,
    CLEF_ROLE_HR_MEMORY_NORM_BIAS,
    CLEF_ROLE_HR_ATTN_IN,
    CLEF_ROLE_HR_ATTN_IN_BIAS,
    CLEF_ROLE_HR_ATTN_OUT,
    CLEF_ROLE_HR_ATTN_OUT_BIAS,
    CLEF_ROLE_HR_FF_NORM,
    CLEF_ROLE_HR_FF_NORM_BIAS,
    CLEF_ROLE_HR_FF0,
    CLEF_ROLE_HR_FF0_BIAS,
    CLEF_ROLE_HR_FF3,
    CLEF_ROLE_HR_FF3_BIAS,

    CLEF_ROLE_H_SUMMARY_NORM,
    CLEF_ROLE_H_SUMMARY_NORM_BIAS,

    CLEF_ROLE_HD_SELF_IN,
    CLEF_ROLE_HD_SELF_IN_BIAS,
    CLEF_ROLE_HD_SELF_OUT,
    CLEF_ROLE_HD_SELF_OUT_BIAS,
    CLEF_ROLE_HD_CROSS_IN,
    CLEF_ROLE_HD_CROSS_IN_BIAS,
    CLEF_ROLE_HD_CROSS_OUT,
    CLEF_ROLE_HD_CROSS_OUT_BIAS,
    CLEF_ROLE_HD_LINEAR1,
    CLEF_ROLE_HD_LINEAR1_BIAS,
    CLEF_ROLE_HD_LINEAR2,
    CLEF_ROLE_HD_LINEAR2_BIAS,
    CLEF_ROLE_HD_NORM1,
    CLEF_ROLE_HD_NORM1_BIAS,
    CLEF_ROLE_HD_NORM2,
    CLEF_ROLE_HD_NORM2_BIAS,
    CLEF_ROLE_HD_NORM3,
    CLEF_ROLE_HD_NORM3_BIAS,

    CLEF_ROLE_H_FIELD_NORM,
    CLEF_ROLE_H_FIELD_NORM_BIAS,
    CLEF_ROLE_H_OPTION_NORM,
    CLEF_ROLE_H_OPTION_NORM_BIAS,
    CLEF_ROLE_H_SCORER,
    CLEF_ROLE_H_SCORER_BIAS,
    CLEF_ROLE_H_SCORER_OUT,
    CLEF_ROLE_H_SCORER_OUT_BIAS,

    CLEF_ROLE_COUNT
} clef_role;

/* Sizes a shape is written in, resolved against the configs (clef_dims). */
typedef enum {
    CLEF_D_NONE = 0, CLEF_D_1, CLEF_D_3,
    /* the text stack */
    CLEF_D_VOCAB, CLEF_D_HIDDEN, CLEF_D_INTER,
    CLEF_D_CONV,        /* GDN conv channels (q, k and v): 2 Hk dk + Hv dv */
    CLEF_D_VALUE,       /* Hv dv */
    CLEF_D_HV, CLEF_D_DV, CLEF_D_KERNEL,
    CLEF_D_QPROJ,       /* Hq head_dim, twice with the output gate */
    CLEF_D_KV,          /* Hkv head_dim */
    CLEF_D_ATTN,        /* Hq head_dim */
    CLEF_D_HEADDIM,
    CLEF_D_EXPERTS,     /* routed experts */
    CLEF_D_MOE_INTER,   /* an expert's intermediate size */
    /* the vision tower */
    CLEF_D_V_HIDDEN, CLEF_D_V_HIDDEN3, CLEF_D_V_INTER,
    CLEF_D_V_MERGED,    /* hidden x spatial_merge_size^2 */
    CLEF_D_V_OUT, CLEF_D_V_CHANNELS, CLEF_D_V_TEMPORAL, CLEF_D_V_PATCH,
    CLEF_D_V_POSITIONS,
    /* the audio tower */
    CLEF_D_A_MODEL, CLEF_D_A_FFN, CLEF_D_A_CHANNELS,
    CLEF_D_A_CONV_IN,   /* channels x the mel bins after three convolutions */
    CLEF_D_A_OUT,
    /* the joint head */
    CLEF_D_H_HIDDEN, CLEF_D_WIDTH, CLEF_D_WIDTH3, CLEF_D_WIDTH4, CLEF_D_FF,
    CLEF_D_COUNT
} clef_dim;

typedef struct {
    int64_t  v[CLEF_D_COUNT];
} clef_dims;

/* Fills the sizes of one config into d (the others are left as they are);
 * zero d first. */
void clef_dims_text(clef_dims *d, const clef_text_config *c);
void clef_dims_vision(clef_dims *d, const clef_vision_config *v);
void clef_dims_head(clef_dims *d, const clef_head_config *h);
void clef_dims_audio(clef_dims *d, const clef_audio_tower_config *a);

/* The types a release may store a tensor in. */
typedef enum {
    CLEF_WANT_FLOAT = 0,       /* F32, F16 or BF16 (a GGUF: any type of
                                  dtype.h that holds numbers) */
    CLEF_WANT_F32_OR_BF16      /* the release stores these F32 */
} clef_dtype_want;

/* What a tensor is: how it is applied, and how a random one is drawn. */
typedef enum {
    CLEF_RK_MATRIX = 0,        /* a linear layer's [out][in] (or conv taps) */
    CLEF_RK_EMBED,             /* a table read by rows */
    CLEF_RK_BIAS,
    CLEF_RK_NORM,              /* a norm weight applied as w (LayerNorm,
                                  the gated RMSNorm): around 1 */
    CLEF_RK_NORM_1P,           /* a zero-centred RMSNorm weight, applied as
                                  1 + w */
    CLEF_RK_NORM_BIAS,
    CLEF_RK_A_LOG,             /* log of the GDN's decay rate */
    CLEF_RK_DT_BIAS,
    CLEF_RK_POSITIONS,         /* learned position embeddings */
    CLEF_RK_SCALAR             /* one learned number */
} clef_role_kind;

/* How the CPU backend keeps a tensor (its precision there; the matrices
 * are multiplied at the model's precision, base/precision.h). */
typedef enum {
    CLEF_KEEP_MAPPED = 0,      /* read in place from the mapped file, rows
                                  converted as a batch uses them */
    CLEF_KEEP_PACKED,          /* packed for the GEMM in the stored type
                                  where its kernel reads it, else fp32
                                  (cpu/kernels/wpack.h) */
    CLEF_KEEP_F32              /* converted to fp32 */
} clef_keep;

/* What llama.cpp's converter did to the values (flags). */
enum {
    CLEF_GGUF_PLUS_ONE   = 1 << 0,   /* stores 1 + w */
    CLEF_GGUF_NEG_EXP    = 1 << 1,   /* stores -exp(A_log) */
    CLEF_GGUF_SQUEEZE    = 1 << 2,   /* the size-1 dimension dropped */
    CLEF_GGUF_V_ROWS     = 1 << 3,   /* value heads (rows; in_proj_qkv its
                                        v rows, conv1d its v channels)
                                        from grouped by key head to tiled
                                        order, when Hk != Hv */
    CLEF_GGUF_V_COLS     = 1 << 4,   /* the same on the columns */
    CLEF_GGUF_SPLIT_QKV  = 1 << 5,   /* stored as three tensors, the name's
                                        "_q" then "_k" and "_v" */
    CLEF_GGUF_SPLIT_T    = 1 << 6,   /* the patch embedding split along its
                                        temporal axis: ".weight", ".weight.1" */
    CLEF_GGUF_SCALES     = 1 << 7,   /* folded into decision.scales
                                        (CLEF_GGUF_SCALES_TENSOR), element
                                        role - CLEF_ROLE_H_PRIOR_SCALE, as
                                        the value used: exp(min(v, ln 100)),
                                        or with CLEF_GGUF_SIGMOID sigmoid(v) */
    CLEF_GGUF_AFTER_ROUTING = 1 << 8,/* block index = layer + routing layers */
    CLEF_GGUF_MMPROJ     = 1 << 9,   /* in the tower's own file (mmproj) */
    CLEF_GGUF_EXPERTS    = 1 << 10,  /* every expert's matrix of a layer in
                                        one 3-D tensor [experts][rows][cols] */
    CLEF_GGUF_SIGMOID    = 1 << 11,  /* stores sigmoid(v) (with SCALES) */
    CLEF_GGUF_BIAS3      = 1 << 12   /* a vector [C] stored as [1, 1, C]
                                        (GGML ne [C, 1, 1]: the same
                                        bytes) */
};

/* The tensor the converter folds the head's three scalars into. */
#define CLEF_GGUF_SCALES_TENSOR  "decision.scales"

typedef struct {
    clef_role        role;
    clef_part        part;
    const char      *name;         /* under the part's prefix */
    const char      *gguf;         /* %d: the block; NULL: none of its own */
    unsigned         gguf_flags;
    int              ndim;
    uint8_t          dims[5];      /* clef_dim */
    clef_dtype_want  want;
    clef_role_kind   kind;
    clef_keep        keep;
    int              per_expert;   /* one tensor per routed expert: the
                                      name's %d is the expert */
} clef_role_info;

const clef_role_info *clef_role_of(clef_role r);

/* The canonical name of role r of layer (or tower block, or head layer)
 * `layer`; c is needed for a decoder layer's prefix. */
const char *clef_role_name(const clef_text_config *c, clef_role r, int layer,
    char *buf, size_t size);

/* The same of expert e, for a role with per_expert (a role without
 * ignores e). */
const char *clef_role_expert_name(const clef_text_config *c, clef_role r,
    int layer, int expert, char *buf, size_t size);

/* The kind of role r in a model of text config c: a norm the role table
 * lists as CLEF_RK_NORM_1P is applied as w (CLEF_RK_NORM) in a model
 * whose config says its RMSNorm weights are plain (Clef Omni). */
clef_role_kind clef_role_kind_in(const clef_text_config *c, clef_role r);

/* The role's CLEF_GGUF_* flags in a model of text config c (NULL: as
 * the table has them): a Clef Omni file stores its plain RMSNorm weights
 * as they are (its converter is Qwen3-VL-MoE's), so PLUS_ONE is dropped
 * where c->norm_plus_one is 0. */
unsigned clef_role_gguf_flags(const clef_text_config *c, clef_role r);

/* The GGUF name of role r at block `block` (the caller adds the routing
 * layers where the flags say CLEF_GGUF_AFTER_ROUTING); NULL when the
 * converter writes none of its own (CLEF_GGUF_SCALES). */
const char *clef_role_gguf_name(clef_role r, int block, char *buf,
    size_t size);

/* The same in a model of text config c: a routed stack (Clef Omni) has
 * its post-attention norm under blk.%d.ffn_norm (Qwen3-VL-MoE's name),
 * the other roles as above. */
const char *clef_role_gguf_name_in(const clef_text_config *c, clef_role r,
    int block, char *buf, size_t size);

/* Its shape under d: the number of dimensions, shape[] filled (up to 5). */
int     clef_role_shape(clef_role r, const clef_dims *d, int64_t *shape);
int64_t clef_role_numel(clef_role r, const clef_dims *d);

/* A decoder layer's roles in checkpoint order: its input norm, its
 * mixer's, its post-attention norm, its MLP's (a per-expert role once,
 * standing for all the layer's experts); the count, or -1 for more than
 * max. */
int clef_layer_roles(const clef_layer_desc *d, clef_role *out, int max);

/* The roles of one part, in checkpoint order; their count. */
int clef_part_roles(clef_part p, clef_role *out, int max);

/* The joint head's nn.MultiheadAttention blocks, each as its in_proj
 * weight, in_proj bias, out_proj weight and out_proj bias roles: the
 * routing layers' attention, the decoder layers' self- and cross-attention. */
extern const clef_role  clef_roles_route_attention[4];
extern const clef_role  clef_roles_dec_self_attention[4];
extern const clef_role  clef_roles_dec_cross_attention[4];

/* Whether a dtype satisfies a want. */
int clef_dtype_wanted(clef_dtype_want want, clef_dtype dt);

/* ---- the inventory ------------------------------------------------------ */

/* One tensor a config implies. */
typedef struct {
    char             name[96];        /* canonical */
    clef_role        role;
    int              layer;           /* of its part; 0 for a part once */
    int              expert;          /* a per-expert role's, else -1 */
    int              ndim;
    int64_t          shape[5];        /* the patch embedding is 5-D */
    clef_dtype_want  dtype;
} clef_tensor_spec;

/* Calls fn once per tensor, in checkpoint order; stops at and returns fn's
 * first non-zero return. */
typedef int (*clef_tensor_spec_fn)(const clef_tensor_spec *s, void *ctx);

/* The text stack under its canonical names ("model.language_model.…",
 * "lm_head.weight" unless the embeddings are tied). */
int clef_text_tensors(const clef_text_config *c, clef_tensor_spec_fn fn,
    void *ctx);

/* Every model.visual.* tensor of the tower (its DeepStack mergers
 * included). */
int clef_vision_tensors(const clef_vision_config *v, clef_tensor_spec_fn fn,
    void *ctx);

/* Every model.audio_tower.* tensor of Clef Omni's audio tower. */
int clef_audio_tensors(const clef_audio_tower_config *a,
    clef_tensor_spec_fn fn, void *ctx);

/* joint_head.safetensors: the names of the reference JointSchemaHead's
 * state_dict (with strict loading, exactly these). */
int clef_head_tensors(const clef_head_config *h, clef_tensor_spec_fn fn,
    void *ctx);

/* The tensor of role r (of layer `layer`) in a model, by its canonical
 * name; NULL when absent. */
const clef_tensor *clef_model_role(const clef_model *m, clef_role r,
    int layer);

/* The same of expert e of a per-expert role. */
const clef_tensor *clef_model_expert_role(const clef_model *m, clef_role r,
    int layer, int expert);

#endif
