/*
 * The backbone's weights as the CPU backend uses them, laid out once when
 * the backend opens, a layer as its parts (norms, mixer, MLP), each loaded
 * by its own part loader (weights_parts.h) from the tensors the role table
 * names (model/roles.h).  The matrices of the linear layers are stored
 * packed for the GEMM (gemm.h, wpack.h), with the projections that read
 * the same input concatenated into one matrix so that each runs as one
 * product; the small vectors (norms, conv taps, A_log, dt_bias) stay plain
 * fp32, as the reference keeps them.
 *
 * The matrices keep the checkpoint's bf16 (2 bytes a parameter: Clef-flash
 * fits a 24 GB machine) in both precisions: the GEMM widens them as it
 * loads them, which is exact, so fp32 products over them are those of an
 * fp32 copy to the bit.  A matrix stored in f32 or f16 is kept in fp32 at
 * fp32 precision (rounding it would change the numbers) and rounded to
 * bf16 at bf16 precision.  Each tensor's pages of the mapped checkpoint
 * are released once it is packed (clef_tensor_release), so loading peaks
 * at the packed weights, not at them plus the file.  The embedding table
 * stays in the mmapped checkpoint and only the rows a batch uses are
 * converted.  At bf16 precision on a CPU with native bf16 instructions the
 * matrices are laid out for oneDNN instead (gemm_bf16.h): the same bytes,
 * in plain rows.
 *
 * Tensor parallelism: a rank loads only its shard (shard.h), cutting rows
 * of the column-parallel matrices and columns of the row-parallel ones
 * straight out of the mapped checkpoint, so a rank never holds more than
 * its share; the sizes below are then the rank's.
 *
 * The row-parallel matrices (out_proj, o_proj, down) are stored as nseg
 * segments of columns, each packed apart: segment seg0 + j of the model's
 * segs (shard.h), so that each segment's partial product is summed from
 * its own first column at every tp (rowpar.h).  Unsharded, that is all
 * segs of them.
 */
#ifndef CLEF_CPU_WEIGHTS_H
#define CLEF_CPU_WEIGHTS_H

#include <stddef.h>

#include "base/error.h"
#include "cpu/kernels/gemm.h"
#include "cpu/kernels/gemm_bf16.h"
#include "cpu/kernels/wpack.h"
#include "cpu/parallel/pool.h"
#include "model/model.h"
#include "model/shard.h"

/* A decoder layer's two norms, as their multipliers (cpu/ops/norm.h: 1 + w
 * for Qwen3.5's zero-centred weights, w for Clef Omni's). */
typedef struct {
    float           *input;        /* [H], before the mixer */
    float           *post;         /* [H], before the MLP */
} clef_cpu_norms;

/* The Gated DeltaNet mixer. */
typedef struct {
    clef_cpu_wpack   in_proj;      /* [qkv | z | b | a][H] */
    float           *conv;         /* [kernel][qkv channels], tap-major */
    float           *A_log;        /* [Hv] */
    float           *dt_bias;      /* [Hv] */
    float           *norm;         /* [dv], plain w */
    clef_cpu_wpack   out_proj[CLEF_SHARD_SEGS_MAX];  /* [H][Hv dv / segs] */
} clef_cpu_gdn_w;

/* The gated attention mixer. */
typedef struct {
    clef_cpu_wpack   qkv_proj;     /* [q (+ gate) per head | k | v][H] */
    float           *q_norm;       /* [head_dim], multipliers as above */
    float           *k_norm;       /* [head_dim] */
    clef_cpu_wpack   o_proj[CLEF_SHARD_SEGS_MAX];    /* [H][Hq hd / segs] */
} clef_cpu_attn_w;

/* The dense SwiGLU MLP. */
typedef struct {
    clef_cpu_wpack   gate_up;      /* [gate | up][H] */
    clef_cpu_wpack   down[CLEF_SHARD_SEGS_MAX];      /* [H][I / segs] */
} clef_cpu_dense_w;

/* Clef Omni's routed experts: the router, and each expert's gate|up and
 * down packed apart, so that an expert runs one product over the tokens
 * routed to it (backbone_moe.c). */
typedef struct {
    clef_cpu_wpack   router;       /* [E][H] */
    clef_cpu_wpack  *gate_up;      /* [E] of [gate | up][H] */
    clef_cpu_wpack  *down;         /* [E] of [H][I_moe] */
    int              experts;      /* E, once the arrays exist */
} clef_cpu_moe_w;

/* A layer's MLP, by its kind (model.h), each with its part loader
 * selected in clef_cpu_layer_parts() (weights_parts.h) and its forward
 * chosen in backbone.c's mlp_layer(). */
typedef struct {
    clef_mlp_kind      kind;
    clef_cpu_dense_w   dense;        /* CLEF_MLP_DENSE */
    clef_cpu_moe_w     moe;          /* CLEF_MLP_MOE */
} clef_cpu_mlp_w;

typedef struct {
    clef_mixer_kind    mixer;
    clef_cpu_norms     norm;
    clef_cpu_gdn_w     gdn;          /* mixer CLEF_MIXER_LINEAR */
    clef_cpu_attn_w    attn;         /* mixer CLEF_MIXER_FULL */
    clef_cpu_mlp_w     mlp;
} clef_cpu_layer;

typedef struct {
    clef_text_config    cfg;
    clef_precision      prec;        /* how the linear layers multiply */
    clef_cpu_bf16_native *native;    /* bf16 on native instructions, or NULL */
    char                gemm[512];   /* the product path, for logs */
    size_t              bytes;       /* the packed matrices and vectors */
    const clef_tensor  *embed;       /* in the checkpoint, any float dtype */
    float              *final_norm;  /* [H] */
    clef_cpu_layer     *layers;
    float              *block;       /* every plain fp32 vector, one
                                        allocation (weights_parts.h) */

    /* this rank's share (size 1: the whole model) and its head counts:
     * the sizes below are the rank's, the config's are the model's */
    clef_shard          shard;
    int                 hq, hkv;     /* attention query and KV heads */
    int                 hk, hv;      /* DeltaNet key and value heads */
    int                 inter;       /* MLP intermediate columns */
    int                 segs;        /* row-parallel segments (shard.h) */
    int                 seg0, nseg;  /* this rank's: [seg0, seg0 + nseg) */

    /* derived sizes */
    int                 qkv_dim;     /* GDN conv channels: 2 hk dk + hv dv */
    int                 gdn_v_dim;   /* hv dv */
    int                 gdn_in_dim;  /* qkv_dim + gdn_v_dim + 2 hv */
    int                 q_head_dim;  /* head_dim, doubled with the output gate */
    int                 attn_in_dim; /* hq q_head_dim + 2 hkv head_dim */
    int                 attn_o_dim;  /* hq head_dim */
    int                 rot_dim;     /* rotated dims of a head (even) */
} clef_cpu_weights;

/* Fills w from the model for products at precision prec (pool converts in
 * parallel), keeping only shard's heads and columns (shard.h: the rows of
 * the column-parallel matrices and vectors, the columns of the
 * row-parallel ones); shard NULL or of size 1: the whole model, as it has
 * always been loaded.  Refuses a config the backend cannot run, a tp it
 * cannot be split by, and a tensor whose size does not match, naming it. */
int  clef_cpu_weights_load(clef_cpu_weights *w, const clef_model *m,
    clef_cpu_pool *pool, clef_precision prec, const clef_shard *shard,
    clef_error *err);
void clef_cpu_weights_free(clef_cpu_weights *w);

#endif
