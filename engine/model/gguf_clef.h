/*
 * A Clef decision model in GGUF, as llama.cpp's converter writes it
 * (conversion/clef.py on top of its Qwen3.5 converter): the model's
 * configuration from the metadata, and every tensor of the release under
 * its canonical name, with what the converter did to it.
 *
 * The file: general.architecture = "clef", clef.decision.type = "clef",
 * the backbone's tensors as blk.N.*, the joint head's as decision.*,
 * dec.blk.N.* and token_types.weight.  The vision tower is not in it: the
 * converter writes it to a separate mmproj file (--mmproj; general.
 * architecture "clip", clip.vision.*, v.* and mm.* tensors), given here
 * beside the model.  A tower in the model file itself (v.* tensors and
 * clip.vision.* keys there) is read the same way.
 *
 * Metadata -> clef_text_config (model.h):
 *   clef.embedding_length             hidden_size
 *   clef.feed_forward_length          intermediate_size
 *   clef.block_count                  num_hidden_layers
 *   clef.attention.head_count(_kv)    num_attention_heads, num_key_value_heads
 *   clef.attention.key_length         head_dim (value_length must equal it)
 *   clef.attention.layer_norm_rms_epsilon   rms_norm_eps (an f32)
 *   clef.rope.freq_base               rope_theta
 *   clef.rope.dimension_count         partial_rotary_factor x head_dim
 *   clef.rope.dimension_sections      mrope_section (its 4th entry 0)
 *   clef.ssm.group_count              linear_num_key_heads
 *   clef.ssm.time_step_rank           linear_num_value_heads
 *   clef.ssm.state_size               linear_key_head_dim
 *   clef.ssm.inner_size               linear_value_head_dim x value heads
 *   clef.ssm.conv_kernel              linear_conv_kernel_dim
 *   clef.attention.recurrent_layers   layer_types (true: linear_attention);
 *                                     when absent, clef.full_attention_interval
 *   token_embd.weight rows            vocab_size
 *   attn_q.weight rows                attn_output_gate (2 x heads x head_dim)
 *   output.weight absent              tie_word_embeddings
 * -> clef_head_config: hidden_size the backbone's; routing_layers, layers,
 *   heads from clef.decision.{routing_block_count, block_count,
 *   head_count}; width and feedforward from decision.proj_memory and
 *   dec.blk.0's ffn_up shapes.  clef.attention.layer_norm_epsilon is the
 *   head's LayerNorm eps (1e-5, torch's default, as in the release).
 * -> clef_vision_config: clip.vision.{embedding_length, feed_forward_length,
 *   block_count, attention.head_count, patch_size, spatial_merge_size,
 *   projection_dim}; num_position_embeddings the rows of
 *   v.position_embd; in_channels from v.patch_embd; temporal_patch_size 2
 *   (the converter splits the Conv3d in two); image_mean/std into the
 *   processor, the rest of it the release's defaults; the image token ids
 *   by their tokens in tokenizer.ggml.tokens.
 *
 * Tensors: GGML's ne is the reverse of the release's shape, the memory
 * order the same (a row of a weight is a row).  What the converter
 * changed, and how the canonical values are had back:
 *   - RMSNorm weights of Qwen3.5's (1 + w) form (input_layernorm,
 *     post_attention_layernorm, q_norm, k_norm, the final norm; not
 *     linear_attn.norm): stored as 1 + w, computed in f32 from the
 *     release's bf16 (CLEF_GGX_PLUS_ONE; w = x - 1 exactly, and where the
 *     sum rounded, 1 + (x - 1) == x, so a forward is the same);
 *   - A_log: stored as -exp(A_log) in f32 (CLEF_GGX_NEG_EXP);
 *   - the head's three scalars: one tensor decision.scales, holding
 *     exp(min(prior_logit_scale, ln 100)), the same of joint_logit_scale,
 *     and sigmoid(residual_gate), each computed in double and rounded to
 *     f32: the values the head uses (CLEF_GGX_SCALE_EXP, _SIGMOID);
 *   - nn.MultiheadAttention's in_proj_weight / in_proj_bias: split into
 *     q, k, v tensors (three parts, stacked along the rows);
 *   - conv1d.weight [C, 1, K]: squeezed to [C, K];
 *   - the gated delta rule's value heads, when there are more value heads
 *     than key heads: reordered from grouped (value head j with key head
 *     j / (Hv / Hk)) to tiled (key head j % Hk), in in_proj_qkv's V rows,
 *     in_proj_z, in_proj_a, in_proj_b, A_log, dt_bias, conv1d's V channels
 *     and out_proj's columns (CLEF_GGV_ROWS / CLEF_GGV_COLS); a backend
 *     can also keep the file's order and pair value head j with key head
 *     j % Hk (rows of quantized blocks move freely, out_proj's columns do
 *     not: a block of 256 spans two value heads);
 *   - the head's layers: routing blocks are dec.blk.0..R-1, decision
 *     blocks dec.blk.R.., one numbering;
 *   - the vision patch embedding's Conv3d [H, C, 2, P, P]: two Conv2d
 *     tensors, temporal slice 0 and 1 (v.patch_embd.weight, .weight.1).
 * llama-quantize keeps 1-D tensors and norms in F32; the rest may be any
 * block type of quant.h.
 */
#ifndef CLEF_GGUF_CLEF_H
#define CLEF_GGUF_CLEF_H

#include <stdint.h>

#include "base/error.h"
#include "model/gguf.h"
#include "model/model.h"

typedef enum {
    CLEF_GGX_NONE = 0,      /* the release's values */
    CLEF_GGX_PLUS_ONE,      /* 1 + w */
    CLEF_GGX_NEG_EXP,       /* -exp(A_log) */
    CLEF_GGX_SCALE_EXP,     /* exp(min(s, ln 100)) */
    CLEF_GGX_SIGMOID        /* sigmoid(g) */
} clef_ggx;

typedef enum {
    CLEF_GGV_NONE = 0,
    CLEF_GGV_ROWS,          /* rows [v_from, v_from + Hv v_unit) tiled */
    CLEF_GGV_COLS           /* columns likewise */
} clef_ggv;

#define CLEF_GGUF_CLEF_PARTS  3

typedef struct {
    char                     name[96];  /* canonical: "model.language_model
                                           .layers.0.mlp.up_proj.weight",
                                           "model.visual.…", "lm_head.weight",
                                           or a head tensor's name in
                                           joint_head.safetensors */
    int                      head;      /* 1: a joint head tensor */
    int                      ndim;      /* the release's shape */
    int64_t                  shape[5];
    int                      n_parts;
    const clef_gguf_tensor  *part[CLEF_GGUF_CLEF_PARTS];
    int                      temporal;  /* parts are temporal slices (dim 2)
                                           rather than row blocks */
    int64_t                  elem;      /* a scalar's index in its part */
    clef_ggx                 xform;
    clef_ggv                 vorder;
    int64_t                  v_from;    /* rows/columns before the V heads */
    int64_t                  v_unit;    /* rows/columns per V head */
    int                      v_hk;      /* key heads (tiled period) */
    int                      v_hv;      /* value heads */
} clef_gguf_clef_tensor;

typedef struct clef_gguf_clef clef_gguf_clef;

/*
 * Opens a Clef GGUF (and its mmproj file, or NULL) and checks every
 * tensor the configuration implies: present, of the shape it implies.
 * Refuses a file that is not a Clef decision model with type
 * "not_a_decision_model" (501), saying what the file is and what to do: a
 * plain Qwen3.5 GGUF (general.architecture qwen35, converted before
 * llama.cpp's Clef support) has no joint head.  flags: CLEF_GGUF_HEADERS_ONLY
 * maps nothing.
 */
clef_gguf_clef *clef_gguf_clef_open(const char *path, const char *mmproj,
    int flags, clef_error *err);
void            clef_gguf_clef_close(clef_gguf_clef *m);

const clef_text_config   *clef_gguf_clef_text_config(const clef_gguf_clef *m);
const clef_head_config   *clef_gguf_clef_head_config(const clef_gguf_clef *m);
/* NULL without a tower. */
const clef_vision_config *clef_gguf_clef_vision_config(const clef_gguf_clef *m);
const clef_gguf          *clef_gguf_clef_file(const clef_gguf_clef *m);

/* Every tensor of the release, backbone (and tower) then head. */
size_t clef_gguf_clef_count(const clef_gguf_clef *m);
const clef_gguf_clef_tensor *clef_gguf_clef_at(const clef_gguf_clef *m,
    size_t i);
/* By canonical name; head: 1 for joint head tensors.  NULL when absent. */
const clef_gguf_clef_tensor *clef_gguf_clef_find(const clef_gguf_clef *m,
    const char *name, int head);

/* The tensor's values in the release's shape and order, dequantized
 * (bit-identical to gguf-py), the parts joined, the value heads back in
 * grouped order; still in the stored form of its xform.  dst holds the
 * product of shape.  -1 with err when the data is not mapped. */
int clef_gguf_clef_read_f32(const clef_gguf_clef_tensor *t, float *dst,
    clef_error *err);

/* Stored form -> the release's values, in place: exact for PLUS_ONE; a
 * logarithm for the others (within an ulp or two of the release; the
 * compute should use the stored form, which is what it computes). */
void clef_ggx_to_release(clef_ggx x, float *v, int64_t n);

/* The token strings, types and merges of tokenizer.ggml.* as the
 * tokenizer constructor wants them (text/tokenizer.h). */
clef_tokenizer *clef_gguf_clef_tokenizer(const clef_gguf_clef *m,
    clef_error *err);

#endif
