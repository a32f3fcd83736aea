/*
 * The tensor-role table (roles.h).  Rows are in checkpoint order within
 * each part: the order the release's index lists them, which `clef
 * mkmodel` writes and the inventory checks.
 */
#include "model/roles.h"

#include <stdio.h>
#include <string.h>

#include "model/model_omni.h"
#include "model/model_vision.h"

#define F       CLEF_WANT_FLOAT
#define F32     CLEF_WANT_F32_OR_BF16
#define MAT     CLEF_RK_MATRIX
#define BIAS    CLEF_RK_BIAS
#define NORM    CLEF_RK_NORM
#define NORM1P  CLEF_RK_NORM_1P
#define NBIAS   CLEF_RK_NORM_BIAS
#define MAPPED  CLEF_KEEP_MAPPED
#define PACKED  CLEF_KEEP_PACKED
#define FP32    CLEF_KEEP_F32
#define G1      CLEF_GGUF_PLUS_ONE
#define GV      CLEF_GGUF_V_ROWS
#define GM      CLEF_GGUF_MMPROJ
#define GQKV    CLEF_GGUF_SPLIT_QKV
#define GR      CLEF_GGUF_AFTER_ROUTING
#define GB3     CLEF_GGUF_BIAS3

#define D(...)  { __VA_ARGS__ }

/* One row at its role's index: role, part, canonical name, GGUF name,
 * GGUF flags, dimensions and their sizes, stored types, kind, how the CPU
 * keeps it. */
#define ROW(role, ...)  [role] = { role, __VA_ARGS__ }

static const clef_role_info  roles[CLEF_ROLE_COUNT] = {

    /* the text stack */
    ROW(CLEF_ROLE_EMBED, CLEF_PART_EMBED,
        "embed_tokens.weight", "token_embd.weight", 0, 2,
        D(CLEF_D_VOCAB, CLEF_D_HIDDEN), F, CLEF_RK_EMBED, MAPPED),
    ROW(CLEF_ROLE_FINAL_NORM, CLEF_PART_FINAL,
        "norm.weight", "output_norm.weight", G1, 1, D(CLEF_D_HIDDEN), F,
        NORM1P, FP32),
    ROW(CLEF_ROLE_LM_HEAD, CLEF_PART_LM_HEAD,
        "lm_head.weight", "output.weight", 0, 2,
        D(CLEF_D_VOCAB, CLEF_D_HIDDEN), F, CLEF_RK_EMBED, MAPPED),

    /* a decoder layer's norms */
    ROW(CLEF_ROLE_INPUT_NORM, CLEF_PART_NORMS,
        "input_layernorm.weight", "blk.%d.attn_norm.weight", G1, 1,
        D(CLEF_D_HIDDEN), F, NORM1P, FP32),
    ROW(CLEF_ROLE_POST_NORM, CLEF_PART_NORMS,
        "post_attention_layernorm.weight", "blk.%d.post_attention_norm.weight",
        G1, 1, D(CLEF_D_HIDDEN), F, NORM1P, FP32),

    /* the Gated DeltaNet mixer */
    ROW(CLEF_ROLE_GDN_QKV, CLEF_PART_GDN,
        "linear_attn.in_proj_qkv.weight", "blk.%d.attn_qkv.weight", GV, 2,
        D(CLEF_D_CONV, CLEF_D_HIDDEN), F, MAT, PACKED),
    ROW(CLEF_ROLE_GDN_Z, CLEF_PART_GDN,
        "linear_attn.in_proj_z.weight", "blk.%d.attn_gate.weight", GV, 2,
        D(CLEF_D_VALUE, CLEF_D_HIDDEN), F, MAT, PACKED),
    ROW(CLEF_ROLE_GDN_B, CLEF_PART_GDN,
        "linear_attn.in_proj_b.weight", "blk.%d.ssm_beta.weight", GV, 2,
        D(CLEF_D_HV, CLEF_D_HIDDEN), F, MAT, PACKED),
    ROW(CLEF_ROLE_GDN_A, CLEF_PART_GDN,
        "linear_attn.in_proj_a.weight", "blk.%d.ssm_alpha.weight", GV, 2,
        D(CLEF_D_HV, CLEF_D_HIDDEN), F, MAT, PACKED),
    ROW(CLEF_ROLE_GDN_CONV, CLEF_PART_GDN,
        "linear_attn.conv1d.weight", "blk.%d.ssm_conv1d.weight",
        CLEF_GGUF_SQUEEZE | GV, 3, D(CLEF_D_CONV, CLEF_D_1, CLEF_D_KERNEL), F,
        MAT, FP32),
    ROW(CLEF_ROLE_GDN_DT_BIAS, CLEF_PART_GDN,
        "linear_attn.dt_bias", "blk.%d.ssm_dt.bias", GV, 1, D(CLEF_D_HV), F,
        CLEF_RK_DT_BIAS, FP32),
    ROW(CLEF_ROLE_GDN_A_LOG, CLEF_PART_GDN,
        "linear_attn.A_log", "blk.%d.ssm_a", CLEF_GGUF_NEG_EXP | GV, 1,
        D(CLEF_D_HV), F32, CLEF_RK_A_LOG, FP32),
    ROW(CLEF_ROLE_GDN_NORM, CLEF_PART_GDN,
        "linear_attn.norm.weight", "blk.%d.ssm_norm.weight", 0, 1,
        D(CLEF_D_DV), F32, NORM, FP32),
    ROW(CLEF_ROLE_GDN_OUT, CLEF_PART_GDN,
        "linear_attn.out_proj.weight", "blk.%d.ssm_out.weight",
        CLEF_GGUF_V_COLS, 2, D(CLEF_D_HIDDEN, CLEF_D_VALUE), F, MAT, PACKED),

    /* the gated attention mixer */
    ROW(CLEF_ROLE_ATTN_Q, CLEF_PART_ATTN,
        "self_attn.q_proj.weight", "blk.%d.attn_q.weight", 0, 2,
        D(CLEF_D_QPROJ, CLEF_D_HIDDEN), F, MAT, PACKED),
    ROW(CLEF_ROLE_ATTN_K, CLEF_PART_ATTN,
        "self_attn.k_proj.weight", "blk.%d.attn_k.weight", 0, 2,
        D(CLEF_D_KV, CLEF_D_HIDDEN), F, MAT, PACKED),
    ROW(CLEF_ROLE_ATTN_V, CLEF_PART_ATTN,
        "self_attn.v_proj.weight", "blk.%d.attn_v.weight", 0, 2,
        D(CLEF_D_KV, CLEF_D_HIDDEN), F, MAT, PACKED),
    ROW(CLEF_ROLE_ATTN_O, CLEF_PART_ATTN,
        "self_attn.o_proj.weight", "blk.%d.attn_output.weight", 0, 2,
        D(CLEF_D_HIDDEN, CLEF_D_ATTN), F, MAT, PACKED),
    ROW(CLEF_ROLE_ATTN_Q_NORM, CLEF_PART_ATTN,
        "self_attn.q_norm.weight", "blk.%d.attn_q_norm.weight", G1, 1,
        D(CLEF_D_HEADDIM), F, NORM1P, FP32),
    ROW(CLEF_ROLE_ATTN_K_NORM, CLEF_PART_ATTN,
        "self_attn.k_norm.weight", "blk.%d.attn_k_norm.weight", G1, 1,
        D(CLEF_D_HEADDIM), F, NORM1P, FP32),

    /* the dense MLP */
    ROW(CLEF_ROLE_MLP_GATE, CLEF_PART_MLP_DENSE,
        "mlp.gate_proj.weight", "blk.%d.ffn_gate.weight", 0, 2,
        D(CLEF_D_INTER, CLEF_D_HIDDEN), F, MAT, PACKED),
    ROW(CLEF_ROLE_MLP_UP, CLEF_PART_MLP_DENSE,
        "mlp.up_proj.weight", "blk.%d.ffn_up.weight", 0, 2,
        D(CLEF_D_INTER, CLEF_D_HIDDEN), F, MAT, PACKED),
    ROW(CLEF_ROLE_MLP_DOWN, CLEF_PART_MLP_DENSE,
        "mlp.down_proj.weight", "blk.%d.ffn_down.weight", 0, 2,
        D(CLEF_D_HIDDEN, CLEF_D_INTER), F, MAT, PACKED),

    /* the routed experts (Clef Omni; llama.cpp's qwen3vlmoe names, each
     * expert's matrices of a layer in one 3-D tensor) */
    ROW(CLEF_ROLE_MOE_ROUTER, CLEF_PART_MLP_MOE,
        "mlp.gate.weight", "blk.%d.ffn_gate_inp.weight", 0, 2,
        D(CLEF_D_EXPERTS, CLEF_D_HIDDEN), F, MAT, PACKED),
    ROW(CLEF_ROLE_MOE_GATE, CLEF_PART_MLP_MOE,
        "mlp.experts.%d.gate_proj.weight", "blk.%d.ffn_gate_exps.weight",
        CLEF_GGUF_EXPERTS, 2, D(CLEF_D_MOE_INTER, CLEF_D_HIDDEN), F, MAT,
        PACKED, 1),
    ROW(CLEF_ROLE_MOE_UP, CLEF_PART_MLP_MOE,
        "mlp.experts.%d.up_proj.weight", "blk.%d.ffn_up_exps.weight",
        CLEF_GGUF_EXPERTS, 2, D(CLEF_D_MOE_INTER, CLEF_D_HIDDEN), F, MAT,
        PACKED, 1),
    ROW(CLEF_ROLE_MOE_DOWN, CLEF_PART_MLP_MOE,
        "mlp.experts.%d.down_proj.weight", "blk.%d.ffn_down_exps.weight",
        CLEF_GGUF_EXPERTS, 2, D(CLEF_D_HIDDEN, CLEF_D_MOE_INTER), F, MAT,
        PACKED, 1),

    /* the vision tower (llama.cpp: the mmproj file) */
    ROW(CLEF_ROLE_V_PATCH, CLEF_PART_TOWER,
        "patch_embed.proj.weight", "v.patch_embd.weight",
        GM | CLEF_GGUF_SPLIT_T, 5,
        D(CLEF_D_V_HIDDEN, CLEF_D_V_CHANNELS, CLEF_D_V_TEMPORAL,
          CLEF_D_V_PATCH, CLEF_D_V_PATCH),
        F, MAT, PACKED),
    ROW(CLEF_ROLE_V_PATCH_BIAS, CLEF_PART_TOWER,
        "patch_embed.proj.bias", "v.patch_embd.bias", GM, 1,
        D(CLEF_D_V_HIDDEN), F, BIAS, FP32),
    ROW(CLEF_ROLE_V_POS, CLEF_PART_TOWER,
        "pos_embed.weight", "v.position_embd.weight", GM, 2,
        D(CLEF_D_V_POSITIONS, CLEF_D_V_HIDDEN), F, CLEF_RK_POSITIONS, FP32),

    ROW(CLEF_ROLE_V_NORM1, CLEF_PART_TOWER_BLOCK,
        "norm1.weight", "v.blk.%d.ln1.weight", GM, 1, D(CLEF_D_V_HIDDEN), F,
        NORM, FP32),
    ROW(CLEF_ROLE_V_NORM1_BIAS, CLEF_PART_TOWER_BLOCK,
        "norm1.bias", "v.blk.%d.ln1.bias", GM, 1, D(CLEF_D_V_HIDDEN), F, NBIAS,
        FP32),
    ROW(CLEF_ROLE_V_NORM2, CLEF_PART_TOWER_BLOCK,
        "norm2.weight", "v.blk.%d.ln2.weight", GM, 1, D(CLEF_D_V_HIDDEN), F,
        NORM, FP32),
    ROW(CLEF_ROLE_V_NORM2_BIAS, CLEF_PART_TOWER_BLOCK,
        "norm2.bias", "v.blk.%d.ln2.bias", GM, 1, D(CLEF_D_V_HIDDEN), F, NBIAS,
        FP32),
    ROW(CLEF_ROLE_V_QKV, CLEF_PART_TOWER_BLOCK,
        "attn.qkv.weight", "v.blk.%d.attn_qkv.weight", GM, 2,
        D(CLEF_D_V_HIDDEN3, CLEF_D_V_HIDDEN), F, MAT, PACKED),
    ROW(CLEF_ROLE_V_QKV_BIAS, CLEF_PART_TOWER_BLOCK,
        "attn.qkv.bias", "v.blk.%d.attn_qkv.bias", GM, 1, D(CLEF_D_V_HIDDEN3),
        F, BIAS, FP32),
    ROW(CLEF_ROLE_V_PROJ, CLEF_PART_TOWER_BLOCK,
        "attn.proj.weight", "v.blk.%d.attn_out.weight", GM, 2,
        D(CLEF_D_V_HIDDEN, CLEF_D_V_HIDDEN), F, MAT, PACKED),
    ROW(CLEF_ROLE_V_PROJ_BIAS, CLEF_PART_TOWER_BLOCK,
        "attn.proj.bias", "v.blk.%d.attn_out.bias", GM, 1, D(CLEF_D_V_HIDDEN),
        F, BIAS, FP32),
    ROW(CLEF_ROLE_V_FC1, CLEF_PART_TOWER_BLOCK,
        "mlp.linear_fc1.weight", "v.blk.%d.ffn_up.weight", GM, 2,
        D(CLEF_D_V_INTER, CLEF_D_V_HIDDEN), F, MAT, PACKED),
    ROW(CLEF_ROLE_V_FC1_BIAS, CLEF_PART_TOWER_BLOCK,
        "mlp.linear_fc1.bias", "v.blk.%d.ffn_up.bias", GM, 1,
        D(CLEF_D_V_INTER), F, BIAS, FP32),
    ROW(CLEF_ROLE_V_FC2, CLEF_PART_TOWER_BLOCK,
        "mlp.linear_fc2.weight", "v.blk.%d.ffn_down.weight", GM, 2,
        D(CLEF_D_V_HIDDEN, CLEF_D_V_INTER), F, MAT, PACKED),
    ROW(CLEF_ROLE_V_FC2_BIAS, CLEF_PART_TOWER_BLOCK,
        "mlp.linear_fc2.bias", "v.blk.%d.ffn_down.bias", GM, 1,
        D(CLEF_D_V_HIDDEN), F, BIAS, FP32),

    ROW(CLEF_ROLE_V_MERGER_NORM, CLEF_PART_MERGER,
        "merger.norm.weight", "v.post_ln.weight", GM, 1, D(CLEF_D_V_HIDDEN), F,
        NORM, FP32),
    ROW(CLEF_ROLE_V_MERGER_NORM_BIAS, CLEF_PART_MERGER,
        "merger.norm.bias", "v.post_ln.bias", GM, 1, D(CLEF_D_V_HIDDEN), F,
        NBIAS, FP32),
    ROW(CLEF_ROLE_V_MERGER_FC1, CLEF_PART_MERGER,
        "merger.linear_fc1.weight", "mm.0.weight", GM, 2,
        D(CLEF_D_V_MERGED, CLEF_D_V_MERGED), F, MAT, PACKED),
    ROW(CLEF_ROLE_V_MERGER_FC1_BIAS, CLEF_PART_MERGER,
        "merger.linear_fc1.bias", "mm.0.bias", GM, 1, D(CLEF_D_V_MERGED), F,
        BIAS, FP32),
    ROW(CLEF_ROLE_V_MERGER_FC2, CLEF_PART_MERGER,
        "merger.linear_fc2.weight", "mm.2.weight", GM, 2,
        D(CLEF_D_V_OUT, CLEF_D_V_MERGED), F, MAT, PACKED),
    ROW(CLEF_ROLE_V_MERGER_FC2_BIAS, CLEF_PART_MERGER,
        "merger.linear_fc2.bias", "mm.2.bias", GM, 1, D(CLEF_D_V_OUT), F, BIAS,
        FP32),

    /* Clef Omni's DeepStack mergers (LayerNorm after the 2 x 2 shuffle);
     * the GGUF name's %d is the tower block the merger reads */
    ROW(CLEF_ROLE_V_DS_NORM, CLEF_PART_DEEPSTACK,
        "norm.weight", "v.deepstack.%d.norm.weight", GM, 1,
        D(CLEF_D_V_MERGED), F, NORM, FP32),
    ROW(CLEF_ROLE_V_DS_NORM_BIAS, CLEF_PART_DEEPSTACK,
        "norm.bias", "v.deepstack.%d.norm.bias", GM, 1, D(CLEF_D_V_MERGED), F,
        NBIAS, FP32),
    ROW(CLEF_ROLE_V_DS_FC1, CLEF_PART_DEEPSTACK,
        "linear_fc1.weight", "v.deepstack.%d.fc1.weight", GM, 2,
        D(CLEF_D_V_MERGED, CLEF_D_V_MERGED), F, MAT, PACKED),
    ROW(CLEF_ROLE_V_DS_FC1_BIAS, CLEF_PART_DEEPSTACK,
        "linear_fc1.bias", "v.deepstack.%d.fc1.bias", GM, 1,
        D(CLEF_D_V_MERGED), F, BIAS, FP32),
    ROW(CLEF_ROLE_V_DS_FC2, CLEF_PART_DEEPSTACK,
        "linear_fc2.weight", "v.deepstack.%d.fc2.weight", GM, 2,
        D(CLEF_D_V_OUT, CLEF_D_V_MERGED), F, MAT, PACKED),
    ROW(CLEF_ROLE_V_DS_FC2_BIAS, CLEF_PART_DEEPSTACK,
        "linear_fc2.bias", "v.deepstack.%d.fc2.bias", GM, 1,
        D(CLEF_D_V_OUT), F, BIAS, FP32),

    /* Clef Omni's audio tower (transformers' Qwen3OmniMoeAudioEncoder;
     * in the mmproj file under the names llama.cpp's Qwen3-Omni mmproj
     * converter writes: gguf-py's a.* and mm.a.* tensors, the
     * convolutions' biases as [1, 1, C]) */
    ROW(CLEF_ROLE_A_CONV1, CLEF_PART_AUDIO,
        "conv2d1.weight", "a.conv2d.1.weight", GM, 4,
        D(CLEF_D_A_CHANNELS, CLEF_D_1, CLEF_D_3, CLEF_D_3), F, MAT, FP32),
    ROW(CLEF_ROLE_A_CONV1_BIAS, CLEF_PART_AUDIO,
        "conv2d1.bias", "a.conv2d.1.bias", GM | GB3, 1,
        D(CLEF_D_A_CHANNELS), F, BIAS, FP32),
    ROW(CLEF_ROLE_A_CONV2, CLEF_PART_AUDIO,
        "conv2d2.weight", "a.conv2d.2.weight", GM, 4,
        D(CLEF_D_A_CHANNELS, CLEF_D_A_CHANNELS, CLEF_D_3, CLEF_D_3), F, MAT,
        FP32),
    ROW(CLEF_ROLE_A_CONV2_BIAS, CLEF_PART_AUDIO,
        "conv2d2.bias", "a.conv2d.2.bias", GM | GB3, 1,
        D(CLEF_D_A_CHANNELS), F, BIAS, FP32),
    ROW(CLEF_ROLE_A_CONV3, CLEF_PART_AUDIO,
        "conv2d3.weight", "a.conv2d.3.weight", GM, 4,
        D(CLEF_D_A_CHANNELS, CLEF_D_A_CHANNELS, CLEF_D_3, CLEF_D_3), F, MAT,
        FP32),
    ROW(CLEF_ROLE_A_CONV3_BIAS, CLEF_PART_AUDIO,
        "conv2d3.bias", "a.conv2d.3.bias", GM | GB3, 1,
        D(CLEF_D_A_CHANNELS), F, BIAS, FP32),
    ROW(CLEF_ROLE_A_CONV_OUT, CLEF_PART_AUDIO,
        "conv_out.weight", "a.conv_out.weight",
        GM, 2, D(CLEF_D_A_MODEL, CLEF_D_A_CONV_IN), F,
        MAT, PACKED),

    ROW(CLEF_ROLE_A_K, CLEF_PART_AUDIO_LAYER,
        "self_attn.k_proj.weight", "a.blk.%d.attn_k.weight", GM, 2,
        D(CLEF_D_A_MODEL, CLEF_D_A_MODEL), F, MAT, PACKED),
    ROW(CLEF_ROLE_A_K_BIAS, CLEF_PART_AUDIO_LAYER,
        "self_attn.k_proj.bias", "a.blk.%d.attn_k.bias",
        GM, 1, D(CLEF_D_A_MODEL), F, BIAS, FP32),
    ROW(CLEF_ROLE_A_V, CLEF_PART_AUDIO_LAYER,
        "self_attn.v_proj.weight", "a.blk.%d.attn_v.weight", GM, 2,
        D(CLEF_D_A_MODEL, CLEF_D_A_MODEL), F, MAT, PACKED),
    ROW(CLEF_ROLE_A_V_BIAS, CLEF_PART_AUDIO_LAYER,
        "self_attn.v_proj.bias", "a.blk.%d.attn_v.bias",
        GM, 1, D(CLEF_D_A_MODEL), F, BIAS, FP32),
    ROW(CLEF_ROLE_A_Q, CLEF_PART_AUDIO_LAYER,
        "self_attn.q_proj.weight", "a.blk.%d.attn_q.weight", GM, 2,
        D(CLEF_D_A_MODEL, CLEF_D_A_MODEL), F, MAT, PACKED),
    ROW(CLEF_ROLE_A_Q_BIAS, CLEF_PART_AUDIO_LAYER,
        "self_attn.q_proj.bias", "a.blk.%d.attn_q.bias",
        GM, 1, D(CLEF_D_A_MODEL), F, BIAS, FP32),
    ROW(CLEF_ROLE_A_OUT, CLEF_PART_AUDIO_LAYER,
        "self_attn.out_proj.weight", "a.blk.%d.attn_out.weight", GM, 2,
        D(CLEF_D_A_MODEL, CLEF_D_A_MODEL), F, MAT, PACKED),
    ROW(CLEF_ROLE_A_OUT_BIAS, CLEF_PART_AUDIO_LAYER,
        "self_attn.out_proj.bias", "a.blk.%d.attn_out.bias",
        GM, 1, D(CLEF_D_A_MODEL), F, BIAS,
        FP32),
    ROW(CLEF_ROLE_A_NORM1, CLEF_PART_AUDIO_LAYER,
        "self_attn_layer_norm.weight", "a.blk.%d.ln1.weight",
        GM, 1, D(CLEF_D_A_MODEL), F, NORM,
        FP32),
    ROW(CLEF_ROLE_A_NORM1_BIAS, CLEF_PART_AUDIO_LAYER,
        "self_attn_layer_norm.bias", "a.blk.%d.ln1.bias",
        GM, 1, D(CLEF_D_A_MODEL), F, NBIAS,
        FP32),
    ROW(CLEF_ROLE_A_FC1, CLEF_PART_AUDIO_LAYER,
        "fc1.weight", "a.blk.%d.ffn_up.weight",
        GM, 2, D(CLEF_D_A_FFN, CLEF_D_A_MODEL), F, MAT,
        PACKED),
    ROW(CLEF_ROLE_A_FC1_BIAS, CLEF_PART_AUDIO_LAYER,
        "fc1.bias", "a.blk.%d.ffn_up.bias",
        GM, 1, D(CLEF_D_A_FFN), F, BIAS, FP32),
    ROW(CLEF_ROLE_A_FC2, CLEF_PART_AUDIO_LAYER,
        "fc2.weight", "a.blk.%d.ffn_down.weight",
        GM, 2, D(CLEF_D_A_MODEL, CLEF_D_A_FFN), F, MAT,
        PACKED),
    ROW(CLEF_ROLE_A_FC2_BIAS, CLEF_PART_AUDIO_LAYER,
        "fc2.bias", "a.blk.%d.ffn_down.bias",
        GM, 1, D(CLEF_D_A_MODEL), F, BIAS, FP32),
    ROW(CLEF_ROLE_A_NORM2, CLEF_PART_AUDIO_LAYER,
        "final_layer_norm.weight", "a.blk.%d.ln2.weight",
        GM, 1, D(CLEF_D_A_MODEL), F, NORM,
        FP32),
    ROW(CLEF_ROLE_A_NORM2_BIAS, CLEF_PART_AUDIO_LAYER,
        "final_layer_norm.bias", "a.blk.%d.ln2.bias",
        GM, 1, D(CLEF_D_A_MODEL), F, NBIAS,
        FP32),

    ROW(CLEF_ROLE_A_POST_NORM, CLEF_PART_AUDIO_POST,
        "ln_post.weight", "a.post_ln.weight",
        GM, 1, D(CLEF_D_A_MODEL), F, NORM, FP32),
    ROW(CLEF_ROLE_A_POST_NORM_BIAS, CLEF_PART_AUDIO_POST,
        "ln_post.bias", "a.post_ln.bias",
        GM, 1, D(CLEF_D_A_MODEL), F, NBIAS, FP32),
    ROW(CLEF_ROLE_A_PROJ1, CLEF_PART_AUDIO_POST,
        "proj1.weight", "mm.a.mlp.1.weight",
        GM, 2, D(CLEF_D_A_MODEL, CLEF_D_A_MODEL), F, MAT,
        PACKED),
    ROW(CLEF_ROLE_A_PROJ1_BIAS, CLEF_PART_AUDIO_POST,
        "proj1.bias", "mm.a.mlp.1.bias",
        GM, 1, D(CLEF_D_A_MODEL), F, BIAS, FP32),
    ROW(CLEF_ROLE_A_PROJ2, CLEF_PART_AUDIO_POST,
        "proj2.weight", "mm.a.mlp.2.weight",
        GM, 2, D(CLEF_D_A_OUT, CLEF_D_A_MODEL), F, MAT,
        PACKED),
    ROW(CLEF_ROLE_A_PROJ2_BIAS, CLEF_PART_AUDIO_POST,
        "proj2.bias", "mm.a.mlp.2.bias", GM, 1, D(CLEF_D_A_OUT), F, BIAS, FP32),

    /* the joint head: joint_head.safetensors; llama.cpp's converter puts
     * it in the model's file as decision.* and dec.blk.N.* */
    ROW(CLEF_ROLE_H_PRIOR_SCALE, CLEF_PART_HEAD,
        "prior_logit_scale", NULL, CLEF_GGUF_SCALES, 0, D(0), F,
        CLEF_RK_SCALAR, FP32),
    ROW(CLEF_ROLE_H_JOINT_SCALE, CLEF_PART_HEAD,
        "joint_logit_scale", NULL, CLEF_GGUF_SCALES, 0, D(0), F,
        CLEF_RK_SCALAR, FP32),
    ROW(CLEF_ROLE_H_RESIDUAL_GATE, CLEF_PART_HEAD,
        "residual_gate", NULL, CLEF_GGUF_SCALES | CLEF_GGUF_SIGMOID, 0, D(0),
        F, CLEF_RK_SCALAR, FP32),
    ROW(CLEF_ROLE_H_HIDDEN_NORM, CLEF_PART_HEAD,
        "hidden_norm.weight", "decision.hidden_norm.weight", 0, 1,
        D(CLEF_D_H_HIDDEN), F, NORM, FP32),
    ROW(CLEF_ROLE_H_HIDDEN_NORM_BIAS, CLEF_PART_HEAD,
        "hidden_norm.bias", "decision.hidden_norm.bias", 0, 1,
        D(CLEF_D_H_HIDDEN), F, NBIAS, FP32),
    ROW(CLEF_ROLE_H_MEMORY_PROJ, CLEF_PART_HEAD,
        "memory_projection.weight", "decision.proj_memory.weight", 0, 2,
        D(CLEF_D_WIDTH, CLEF_D_H_HIDDEN), F, MAT, FP32),
    ROW(CLEF_ROLE_H_QUESTION_PROJ, CLEF_PART_HEAD,
        "question_projection.weight", "decision.proj_question.weight", 0, 2,
        D(CLEF_D_WIDTH, CLEF_D_H_HIDDEN), F, MAT, FP32),
    ROW(CLEF_ROLE_H_OPTION_QUESTION_PROJ, CLEF_PART_HEAD,
        "option_question_projection.weight",
        "decision.proj_option_question.weight", 0, 2,
        D(CLEF_D_WIDTH, CLEF_D_H_HIDDEN), F, MAT, FP32),
    ROW(CLEF_ROLE_H_GLOBAL_PROJ, CLEF_PART_HEAD,
        "global_projection.weight", "decision.proj_global.weight", 0, 2,
        D(CLEF_D_WIDTH, CLEF_D_H_HIDDEN), F, MAT, FP32),
    ROW(CLEF_ROLE_H_OPTION_CONTEXT_PROJ, CLEF_PART_HEAD,
        "option_context_projection.weight",
        "decision.proj_option_context.weight", 0, 2,
        D(CLEF_D_WIDTH, CLEF_D_H_HIDDEN), F, MAT, FP32),
    ROW(CLEF_ROLE_H_OPTION_LEXICAL_PROJ, CLEF_PART_HEAD,
        "option_lexical_projection.weight",
        "decision.proj_option_lexical.weight", 0, 2,
        D(CLEF_D_WIDTH, CLEF_D_H_HIDDEN), F, MAT, FP32),
    ROW(CLEF_ROLE_H_TYPE_EMBEDDING, CLEF_PART_HEAD,
        "type_embedding.weight", "token_types.weight", 0, 2,
        D(CLEF_D_3, CLEF_D_WIDTH), F, CLEF_RK_EMBED, FP32),

    /* each routing layer */
    ROW(CLEF_ROLE_HR_QUERY_NORM, CLEF_PART_HEAD_ROUTE,
        "query_norm.weight", "dec.blk.%d.cross_attn_norm.weight", 0, 1,
        D(CLEF_D_WIDTH), F, NORM, FP32),
    ROW(CLEF_ROLE_HR_QUERY_NORM_BIAS, CLEF_PART_HEAD_ROUTE,
        "query_norm.bias", "dec.blk.%d.cross_attn_norm.bias", 0, 1,
        D(CLEF_D_WIDTH), F, NBIAS, FP32),
    ROW(CLEF_ROLE_HR_MEMORY_NORM, CLEF_PART_HEAD_ROUTE,
        "memory_norm.weight", "dec.blk.%d.cross_attn_norm_kv.weight", 0, 1,
        D(CLEF_D_WIDTH), F, NORM, FP32),
    ROW(CLEF_ROLE_HR_MEMORY_NORM_BIAS, CLEF_PART_HEAD_ROUTE,
        "memory_norm.bias", "dec.blk.%d.cross_attn_norm_kv.bias", 0, 1,
        D(CLEF_D_WIDTH), F, NBIAS, FP32),
    ROW(CLEF_ROLE_HR_ATTN_IN, CLEF_PART_HEAD_ROUTE,
        "attention.in_proj_weight", "dec.blk.%d.cross_attn_q.weight", GQKV, 2,
        D(CLEF_D_WIDTH3, CLEF_D_WIDTH), F, MAT, FP32),
    ROW(CLEF_ROLE_HR_ATTN_IN_BIAS, CLEF_PART_HEAD_ROUTE,
        "attention.in_proj_bias", "dec.blk.%d.cross_attn_q.bias", GQKV, 1,
        D(CLEF_D_WIDTH3), F, BIAS, FP32),
    ROW(CLEF_ROLE_HR_ATTN_OUT, CLEF_PART_HEAD_ROUTE,
        "attention.out_proj.weight", "dec.blk.%d.cross_attn_o.weight", 0, 2,
        D(CLEF_D_WIDTH, CLEF_D_WIDTH), F, MAT, FP32),
    ROW(CLEF_ROLE_HR_ATTN_OUT_BIAS, CLEF_PART_HEAD_ROUTE,
        "attention.out_proj.bias", "dec.blk.%d.cross_attn_o.bias", 0, 1,
        D(CLEF_D_WIDTH), F, BIAS, FP32),
    ROW(CLEF_ROLE_HR_FF_NORM, CLEF_PART_HEAD_ROUTE,
        "feedforward_norm.weight", "dec.blk.%d.ffn_norm.weight", 0, 1,
        D(CLEF_D_WIDTH), F, NORM, FP32),
    ROW(CLEF_ROLE_HR_FF_NORM_BIAS, CLEF_PART_HEAD_ROUTE,
        "feedforward_norm.bias", "dec.blk.%d.ffn_norm.bias", 0, 1,
        D(CLEF_D_WIDTH), F, NBIAS, FP32),
    ROW(CLEF_ROLE_HR_FF0, CLEF_PART_HEAD_ROUTE,
        "feedforward.0.weight", "dec.blk.%d.ffn_up.weight", 0, 2,
        D(CLEF_D_FF, CLEF_D_WIDTH), F, MAT, FP32),
    ROW(CLEF_ROLE_HR_FF0_BIAS, CLEF_PART_HEAD_ROUTE,
        "feedforward.0.bias", "dec.blk.%d.ffn_up.bias", 0, 1, D(CLEF_D_FF), F,
        BIAS, FP32),
    ROW(CLEF_ROLE_HR_FF3, CLEF_PART_HEAD_ROUTE,
        "feedforward.3.weight", "dec.blk.%d.ffn_down.weight", 0, 2,
        D(CLEF_D_WIDTH, CLEF_D_FF), F, MAT, FP32),
    ROW(CLEF_ROLE_HR_FF3_BIAS, CLEF_PART_HEAD_ROUTE,
        "feedforward.3.bias", "dec.blk.%d.ffn_down.bias", 0, 1,
        D(CLEF_D_WIDTH), F, BIAS, FP32),

    ROW(CLEF_ROLE_H_SUMMARY_NORM, CLEF_PART_HEAD_SUMMARY,
        "option_summary_norm.weight", "decision.option_summary_norm.weight", 0,
        1, D(CLEF_D_WIDTH), F, NORM, FP32),
    ROW(CLEF_ROLE_H_SUMMARY_NORM_BIAS, CLEF_PART_HEAD_SUMMARY,
        "option_summary_norm.bias", "decision.option_summary_norm.bias", 0, 1,
        D(CLEF_D_WIDTH), F, NBIAS, FP32),

    /* each decoder layer of the head */
    ROW(CLEF_ROLE_HD_SELF_IN, CLEF_PART_HEAD_DEC,
        "self_attn.in_proj_weight", "dec.blk.%d.attn_q.weight", GR | GQKV, 2,
        D(CLEF_D_WIDTH3, CLEF_D_WIDTH), F, MAT, FP32),
    ROW(CLEF_ROLE_HD_SELF_IN_BIAS, CLEF_PART_HEAD_DEC,
        "self_attn.in_proj_bias", "dec.blk.%d.attn_q.bias", GR | GQKV, 1,
        D(CLEF_D_WIDTH3), F, BIAS, FP32),
    ROW(CLEF_ROLE_HD_SELF_OUT, CLEF_PART_HEAD_DEC,
        "self_attn.out_proj.weight", "dec.blk.%d.attn_o.weight", GR, 2,
        D(CLEF_D_WIDTH, CLEF_D_WIDTH), F, MAT, FP32),
    ROW(CLEF_ROLE_HD_SELF_OUT_BIAS, CLEF_PART_HEAD_DEC,
        "self_attn.out_proj.bias", "dec.blk.%d.attn_o.bias", GR, 1,
        D(CLEF_D_WIDTH), F, BIAS, FP32),
    ROW(CLEF_ROLE_HD_CROSS_IN, CLEF_PART_HEAD_DEC,
        "multihead_attn.in_proj_weight", "dec.blk.%d.cross_attn_q.weight",
        GR | GQKV, 2, D(CLEF_D_WIDTH3, CLEF_D_WIDTH), F, MAT, FP32),
    ROW(CLEF_ROLE_HD_CROSS_IN_BIAS, CLEF_PART_HEAD_DEC,
        "multihead_attn.in_proj_bias", "dec.blk.%d.cross_attn_q.bias",
        GR | GQKV, 1, D(CLEF_D_WIDTH3), F, BIAS, FP32),
    ROW(CLEF_ROLE_HD_CROSS_OUT, CLEF_PART_HEAD_DEC,
        "multihead_attn.out_proj.weight", "dec.blk.%d.cross_attn_o.weight", GR,
        2, D(CLEF_D_WIDTH, CLEF_D_WIDTH), F, MAT, FP32),
    ROW(CLEF_ROLE_HD_CROSS_OUT_BIAS, CLEF_PART_HEAD_DEC,
        "multihead_attn.out_proj.bias", "dec.blk.%d.cross_attn_o.bias", GR, 1,
        D(CLEF_D_WIDTH), F, BIAS, FP32),
    ROW(CLEF_ROLE_HD_LINEAR1, CLEF_PART_HEAD_DEC,
        "linear1.weight", "dec.blk.%d.ffn_up.weight", GR, 2,
        D(CLEF_D_FF, CLEF_D_WIDTH), F, MAT, FP32),
    ROW(CLEF_ROLE_HD_LINEAR1_BIAS, CLEF_PART_HEAD_DEC,
        "linear1.bias", "dec.blk.%d.ffn_up.bias", GR, 1, D(CLEF_D_FF), F, BIAS,
        FP32),
    ROW(CLEF_ROLE_HD_LINEAR2, CLEF_PART_HEAD_DEC,
        "linear2.weight", "dec.blk.%d.ffn_down.weight", GR, 2,
        D(CLEF_D_WIDTH, CLEF_D_FF), F, MAT, FP32),
    ROW(CLEF_ROLE_HD_LINEAR2_BIAS, CLEF_PART_HEAD_DEC,
        "linear2.bias", "dec.blk.%d.ffn_down.bias", GR, 1, D(CLEF_D_WIDTH), F,
        BIAS, FP32),
    ROW(CLEF_ROLE_HD_NORM1, CLEF_PART_HEAD_DEC,
        "norm1.weight", "dec.blk.%d.attn_norm.weight", GR, 1, D(CLEF_D_WIDTH),
        F, NORM, FP32),
    ROW(CLEF_ROLE_HD_NORM1_BIAS, CLEF_PART_HEAD_DEC,
        "norm1.bias", "dec.blk.%d.attn_norm.bias", GR, 1, D(CLEF_D_WIDTH), F,
        NBIAS, FP32),
    ROW(CLEF_ROLE_HD_NORM2, CLEF_PART_HEAD_DEC,
        "norm2.weight", "dec.blk.%d.cross_attn_norm.weight", GR, 1,
        D(CLEF_D_WIDTH), F, NORM, FP32),
    ROW(CLEF_ROLE_HD_NORM2_BIAS, CLEF_PART_HEAD_DEC,
        "norm2.bias", "dec.blk.%d.cross_attn_norm.bias", GR, 1,
        D(CLEF_D_WIDTH), F, NBIAS, FP32),
    ROW(CLEF_ROLE_HD_NORM3, CLEF_PART_HEAD_DEC,
        "norm3.weight", "dec.blk.%d.ffn_norm.weight", GR, 1, D(CLEF_D_WIDTH),
        F, NORM, FP32),
    ROW(CLEF_ROLE_HD_NORM3_BIAS, CLEF_PART_HEAD_DEC,
        "norm3.bias", "dec.blk.%d.ffn_norm.bias", GR, 1, D(CLEF_D_WIDTH), F,
        NBIAS, FP32),

    /* the scorer */
    ROW(CLEF_ROLE_H_FIELD_NORM, CLEF_PART_HEAD_SCORE,
        "field_norm.weight", "decision.field_norm.weight", 0, 1,
        D(CLEF_D_WIDTH), F, NORM, FP32),
    ROW(CLEF_ROLE_H_FIELD_NORM_BIAS, CLEF_PART_HEAD_SCORE,
        "field_norm.bias", "decision.field_norm.bias", 0, 1, D(CLEF_D_WIDTH),
        F, NBIAS, FP32),
    ROW(CLEF_ROLE_H_OPTION_NORM, CLEF_PART_HEAD_SCORE,
        "option_norm.weight", "decision.option_norm.weight", 0, 1,
        D(CLEF_D_WIDTH), F, NORM, FP32),
    ROW(CLEF_ROLE_H_OPTION_NORM_BIAS, CLEF_PART_HEAD_SCORE,
        "option_norm.bias", "decision.option_norm.bias", 0, 1, D(CLEF_D_WIDTH),
        F, NBIAS, FP32),
    ROW(CLEF_ROLE_H_SCORER, CLEF_PART_HEAD_SCORE,
        "residual_scorer.0.weight", "decision.scorer.weight", 0, 2,
        D(CLEF_D_WIDTH, CLEF_D_WIDTH4), F, MAT, FP32),
    ROW(CLEF_ROLE_H_SCORER_BIAS, CLEF_PART_HEAD_SCORE,
        "residual_scorer.0.bias", "decision.scorer.bias", 0, 1,
        D(CLEF_D_WIDTH), F, BIAS, FP32),
    ROW(CLEF_ROLE_H_SCORER_OUT, CLEF_PART_HEAD_SCORE,
        "residual_scorer.3.weight", "decision.scorer_out.weight", 0, 2,
        D(CLEF_D_1, CLEF_D_WIDTH), F, MAT, FP32),
    ROW(CLEF_ROLE_H_SCORER_OUT_BIAS, CLEF_PART_HEAD_SCORE,
        "residual_scorer.3.bias", "decision.scorer_out.bias", 0, 1,
        D(CLEF_D_1), F, BIAS, FP32),
};

const clef_role_info *
clef_role_of(clef_role r)
{
    return (unsigned) r < CLEF_ROLE_COUNT ? &roles[r] : NULL;
}

/* ---- sizes -------------------------------------------------------------- */

void
clef_dims_text(clef_dims *d, const clef_text_config *c)
{
    d->v[CLEF_D_1] = 1;
    d->v[CLEF_D_3] = 3;
    d->v[CLEF_D_VOCAB] = c->vocab_size;
    d->v[CLEF_D_HIDDEN] = c->hidden_size;
    d->v[CLEF_D_INTER] = c->intermediate_size;
    d->v[CLEF_D_CONV] = 2 * (int64_t) c->linear_num_key_heads
                        * c->linear_key_head_dim
                        + (int64_t) c->linear_num_value_heads
                          * c->linear_value_head_dim;
    d->v[CLEF_D_VALUE] = (int64_t) c->linear_num_value_heads
                         * c->linear_value_head_dim;
    d->v[CLEF_D_HV] = c->linear_num_value_heads;
    d->v[CLEF_D_DV] = c->linear_value_head_dim;
    d->v[CLEF_D_KERNEL] = c->linear_conv_kernel_dim;
    d->v[CLEF_D_ATTN] = (int64_t) c->num_attention_heads * c->head_dim;
    d->v[CLEF_D_QPROJ] = d->v[CLEF_D_ATTN] * (c->attn_output_gate ? 2 : 1);
    d->v[CLEF_D_KV] = (int64_t) c->num_key_value_heads * c->head_dim;
    d->v[CLEF_D_HEADDIM] = c->head_dim;
    d->v[CLEF_D_EXPERTS] = c->num_experts;
    d->v[CLEF_D_MOE_INTER] = c->moe_intermediate_size;
}

void
clef_dims_vision(clef_dims *d, const clef_vision_config *v)
{
    d->v[CLEF_D_1] = 1;
    d->v[CLEF_D_3] = 3;
    d->v[CLEF_D_V_HIDDEN] = v->hidden_size;
    d->v[CLEF_D_V_HIDDEN3] = 3 * (int64_t) v->hidden_size;
    d->v[CLEF_D_V_INTER] = v->intermediate_size;
    d->v[CLEF_D_V_MERGED] = (int64_t) v->hidden_size * v->spatial_merge_size
                            * v->spatial_merge_size;
    d->v[CLEF_D_V_OUT] = v->out_hidden_size;
    d->v[CLEF_D_V_CHANNELS] = v->in_channels;
    d->v[CLEF_D_V_TEMPORAL] = v->temporal_patch_size;
    d->v[CLEF_D_V_PATCH] = v->patch_size;
    d->v[CLEF_D_V_POSITIONS] = v->num_position_embeddings;
}

void
clef_dims_audio(clef_dims *d, const clef_audio_tower_config *a)
{
    int  bins = a->num_mel_bins, k;

    /* three convolutions of kernel 3, stride 2, padding 1 */
    for (k = 0; k < 3; k++) {
        bins = (bins - 1) / 2 + 1;
    }
    d->v[CLEF_D_1] = 1;
    d->v[CLEF_D_3] = 3;
    d->v[CLEF_D_A_MODEL] = a->d_model;
    d->v[CLEF_D_A_FFN] = a->encoder_ffn_dim;
    d->v[CLEF_D_A_CHANNELS] = a->downsample_hidden_size;
    d->v[CLEF_D_A_CONV_IN] = (int64_t) a->downsample_hidden_size * bins;
    d->v[CLEF_D_A_OUT] = a->output_dim;
}

void
clef_dims_head(clef_dims *d, const clef_head_config *h)
{
    d->v[CLEF_D_1] = 1;
    d->v[CLEF_D_3] = 3;
    d->v[CLEF_D_H_HIDDEN] = h->hidden_size;
    d->v[CLEF_D_WIDTH] = h->width;
    d->v[CLEF_D_WIDTH3] = 3 * (int64_t) h->width;
    d->v[CLEF_D_WIDTH4] = 4 * (int64_t) h->width;
    d->v[CLEF_D_FF] = h->feedforward;
}

int
clef_role_shape(clef_role r, const clef_dims *d, int64_t *shape)
{
    const clef_role_info  *ri = clef_role_of(r);
    int                    k;

    for (k = 0; k < 5; k++) {
        shape[k] = ri != NULL && k < ri->ndim ? d->v[ri->dims[k]] : 0;
    }
    return ri != NULL ? ri->ndim : 0;
}

int64_t
clef_role_numel(clef_role r, const clef_dims *d)
{
    int64_t  shape[5], n = 1;
    int      k, ndim = clef_role_shape(r, d, shape);

    for (k = 0; k < ndim; k++) {
        n *= shape[k];
    }
    return n;
}

/* ---- names -------------------------------------------------------------- */

const char *
clef_role_name(const clef_text_config *c, clef_role r, int layer, char *buf,
    size_t size)
{
    return clef_role_expert_name(c, r, layer, 0, buf, size);
}

const char *
clef_role_expert_name(const clef_text_config *c, clef_role r, int layer,
    int expert, char *buf, size_t size)
{
    const clef_role_info  *ri = clef_role_of(r);
    char                   suffix[96];

    if (ri == NULL) {
        snprintf(buf, size, "?");
        return buf;
    }
    switch (ri->part) {
    case CLEF_PART_EMBED:
    case CLEF_PART_FINAL:
        snprintf(buf, size, CLEF_TEXT_PREFIX "%s", ri->name);
        break;
    case CLEF_PART_MLP_MOE:
        if (ri->per_expert) {
            snprintf(suffix, sizeof(suffix), ri->name, expert);
            clef_layer_tensor(&c->layer[layer], suffix, buf, size);
            break;
        }
        /* fall through */
    case CLEF_PART_NORMS:
    case CLEF_PART_GDN:
    case CLEF_PART_ATTN:
    case CLEF_PART_MLP_DENSE:
        clef_layer_tensor(&c->layer[layer], ri->name, buf, size);
        break;
    case CLEF_PART_TOWER:
    case CLEF_PART_MERGER:
        snprintf(buf, size, CLEF_VISION_PREFIX "%s", ri->name);
        break;
    case CLEF_PART_TOWER_BLOCK:
        snprintf(buf, size, CLEF_VISION_PREFIX "blocks.%d.%s", layer, ri->name);
        break;
    case CLEF_PART_DEEPSTACK:
        snprintf(buf, size, CLEF_VISION_PREFIX "deepstack_merger_list.%d.%s",
                 layer, ri->name);
        break;
    case CLEF_PART_AUDIO:
    case CLEF_PART_AUDIO_POST:
        snprintf(buf, size, CLEF_AUDIO_PREFIX "%s", ri->name);
        break;
    case CLEF_PART_AUDIO_LAYER:
        snprintf(buf, size, CLEF_AUDIO_PREFIX "layers.%d.%s", layer, ri->name);
        break;
    case CLEF_PART_HEAD_ROUTE:
        snprintf(buf, size, "evidence_layers.%d.%s", layer, ri->name);
        break;
    case CLEF_PART_HEAD_DEC:
        snprintf(buf, size, "layers.%d.%s", layer, ri->name);
        break;
    default:
        snprintf(buf, size, "%s", ri->name);
        break;
    }
    return buf;
}

const char *
clef_role_gguf_name(clef_role r, int block, char *buf, size_t size)
{
    const clef_role_info  *ri = clef_role_of(r);

    if (ri == NULL || ri->gguf == NULL) {
        return NULL;
    }
    if (strstr(ri->gguf, "%d") != NULL) {
        snprintf(buf, size, ri->gguf, block);
    } else {
        snprintf(buf, size, "%s", ri->gguf);
    }
    return buf;
}

unsigned
clef_role_gguf_flags(const clef_text_config *c, clef_role r)
{
    const clef_role_info  *ri = clef_role_of(r);
    unsigned               f = ri != NULL ? ri->gguf_flags : 0;

    /* only a stack whose RMSNorms multiply by 1 + w is stored so */
    if (c != NULL && !c->norm_plus_one) {
        f &= ~(unsigned) CLEF_GGUF_PLUS_ONE;
    }
    return f;
}

const char *
clef_role_gguf_name_in(const clef_text_config *c, clef_role r, int block,
    char *buf, size_t size)
{
    /* a routed stack is named as llama.cpp's Qwen3-(VL-)MoE converters
     * name it: its post-attention norm is the MLP's input norm */
    if (c != NULL && c->num_experts > 0 && r == CLEF_ROLE_POST_NORM) {
        snprintf(buf, size, "blk.%d.ffn_norm.weight", block);
        return buf;
    }
    return clef_role_gguf_name(r, block, buf, size);
}

clef_role_kind
clef_role_kind_in(const clef_text_config *c, clef_role r)
{
    const clef_role_info  *ri = clef_role_of(r);

    if (ri == NULL) {
        return CLEF_RK_MATRIX;
    }
    return ri->kind == CLEF_RK_NORM_1P && c != NULL && !c->norm_plus_one
           ? CLEF_RK_NORM : ri->kind;
}

/* ---- which roles -------------------------------------------------------- */

int
clef_part_roles(clef_part p, clef_role *out, int max)
{
    int  r, n = 0;

    for (r = 0; r < CLEF_ROLE_COUNT; r++) {
        if (roles[r].part == p && n < max) {
            out[n++] = (clef_role) r;
        }
    }
    return n;
}

int
clef_layer_roles(const clef_layer_desc *d, clef_role *out, int max)
{
    clef_part  mixer, mlp;
    int        n = 0, k;

    mixer = d->mixer == CLEF_MIXER_FULL ? CLEF_PART_ATTN : CLEF_PART_GDN;
    mlp = d->mlp == CLEF_MLP_DENSE ? CLEF_PART_MLP_DENSE : CLEF_PART_MLP_MOE;
    if (max < 2) {
        return -1;
    }
    out[n++] = CLEF_ROLE_INPUT_NORM;
    n += clef_part_roles(mixer, out + n, max - n);
    if (n >= max) {
        return -1;
    }
    out[n++] = CLEF_ROLE_POST_NORM;
    k = clef_part_roles(mlp, out + n, max - n);
    return k > 0 ? n + k : -1;
}

const clef_role  clef_roles_route_attention[4] = {
    CLEF_ROLE_HR_ATTN_IN, CLEF_ROLE_HR_ATTN_IN_BIAS,
    CLEF_ROLE_HR_ATTN_OUT, CLEF_ROLE_HR_ATTN_OUT_BIAS
};

const clef_role  clef_roles_dec_self_attention[4] = {
    CLEF_ROLE_HD_SELF_IN, CLEF_ROLE_HD_SELF_IN_BIAS,
    CLEF_ROLE_HD_SELF_OUT, CLEF_ROLE_HD_SELF_OUT_BIAS
};

const clef_role  clef_roles_dec_cross_attention[4] = {
    CLEF_ROLE_HD_CROSS_IN, CLEF_ROLE_HD_CROSS_IN_BIAS,
    CLEF_ROLE_HD_CROSS_OUT, CLEF_ROLE_HD_CROSS_OUT_BIAS
};

int
clef_dtype_wanted(clef_dtype_want want, clef_dtype dt)
{
    if (want == CLEF_WANT_F32_OR_BF16) {
        return dt == CLEF_DTYPE_F32 || dt == CLEF_DTYPE_BF16;
    }
    /* any type of the table that holds numbers: a release's F32, F16,
     * BF16, a GGUF's block types */
    return clef_dtype_is_float(dt);
}

/* ---- the inventory ------------------------------------------------------ */

/* The specs of roles rs[0..n) of layer `layer` to fn. */
static int
emit(const clef_text_config *c, const clef_role *rs, int n, int layer,
    const clef_dims *d, clef_tensor_spec_fn fn, void *ctx)
{
    clef_tensor_spec  s;
    int               i, e, experts, rc;

    for (i = 0; i < n; i++) {
        experts = roles[rs[i]].per_expert ? (int) d->v[CLEF_D_EXPERTS] : 1;
        for (e = 0; e < experts; e++) {
            memset(&s, 0, sizeof(s));
            clef_role_expert_name(c, rs[i], layer, e, s.name, sizeof(s.name));
            s.role = rs[i];
            s.layer = layer;
            s.expert = roles[rs[i]].per_expert ? e : -1;
            s.ndim = clef_role_shape(rs[i], d, s.shape);
            s.dtype = roles[rs[i]].want;
            rc = fn(&s, ctx);
            if (rc != 0) {
                return rc;
            }
        }
    }
    return 0;
}

static int
emit_part(const clef_text_config *c, clef_part p, int layer,
    const clef_dims *d, clef_tensor_spec_fn fn, void *ctx)
{
    clef_role  rs[CLEF_ROLE_COUNT];

    return emit(c, rs, clef_part_roles(p, rs, CLEF_ROLE_COUNT), layer, d, fn,
                ctx);
}

int
clef_text_tensors(const clef_text_config *c, clef_tensor_spec_fn fn, void *ctx)
{
    clef_dims  d;
    clef_role  rs[CLEF_ROLE_COUNT];
    int        l, n, rc;

    memset(&d, 0, sizeof(d));
    clef_dims_text(&d, c);
    rc = emit_part(c, CLEF_PART_EMBED, 0, &d, fn, ctx);
    for (l = 0; rc == 0 && l < c->num_hidden_layers; l++) {
        n = clef_layer_roles(&c->layer[l], rs, CLEF_ROLE_COUNT);
        rc = n < 0 ? -1 : emit(c, rs, n, l, &d, fn, ctx);
    }
    if (rc == 0) {
        rc = emit_part(c, CLEF_PART_FINAL, 0, &d, fn, ctx);
    }
    if (rc == 0 && !c->tie_word_embeddings) {
        rc = emit_part(c, CLEF_PART_LM_HEAD, 0, &d, fn, ctx);
    }
    return rc;
}

int
clef_vision_tensors(const clef_vision_config *v, clef_tensor_spec_fn fn,
    void *ctx)
{
    clef_dims  d;
    int        l, rc;

    memset(&d, 0, sizeof(d));
    clef_dims_vision(&d, v);
    rc = emit_part(NULL, CLEF_PART_TOWER, 0, &d, fn, ctx);
    for (l = 0; rc == 0 && l < v->depth; l++) {
        rc = emit_part(NULL, CLEF_PART_TOWER_BLOCK, l, &d, fn, ctx);
    }
    if (rc == 0) {
        rc = emit_part(NULL, CLEF_PART_MERGER, 0, &d, fn, ctx);
    }
    for (l = 0; rc == 0 && l < v->n_deepstack; l++) {
        rc = emit_part(NULL, CLEF_PART_DEEPSTACK, l, &d, fn, ctx);
    }
    return rc;
}

int
clef_audio_tensors(const clef_audio_tower_config *a, clef_tensor_spec_fn fn,
    void *ctx)
{
    clef_dims  d;
    int        l, rc;

    memset(&d, 0, sizeof(d));
    clef_dims_audio(&d, a);
    rc = emit_part(NULL, CLEF_PART_AUDIO, 0, &d, fn, ctx);
    for (l = 0; rc == 0 && l < a->encoder_layers; l++) {
        rc = emit_part(NULL, CLEF_PART_AUDIO_LAYER, l, &d, fn, ctx);
    }
    return rc == 0 ? emit_part(NULL, CLEF_PART_AUDIO_POST, 0, &d, fn, ctx)
                   : rc;
}

int
clef_head_tensors(const clef_head_config *h, clef_tensor_spec_fn fn, void *ctx)
{
    clef_dims  d;
    int        l, rc;

    memset(&d, 0, sizeof(d));
    clef_dims_head(&d, h);
    rc = emit_part(NULL, CLEF_PART_HEAD, 0, &d, fn, ctx);
    for (l = 0; rc == 0 && l < h->routing_layers; l++) {
        rc = emit_part(NULL, CLEF_PART_HEAD_ROUTE, l, &d, fn, ctx);
    }
    if (rc == 0) {
        rc = emit_part(NULL, CLEF_PART_HEAD_SUMMARY, 0, &d, fn, ctx);
    }
    for (l = 0; rc == 0 && l < h->layers; l++) {
        rc = emit_part(NULL, CLEF_PART_HEAD_DEC, l, &d, fn, ctx);
    }
    return rc == 0 ? emit_part(NULL, CLEF_PART_HEAD_SCORE, 0, &d, fn, ctx) : rc;
}

const clef_tensor *
clef_model_role(const clef_model *m, clef_role r, int layer)
{
    const clef_role_info  *ri = clef_role_of(r);
    char                   name[160];

    if (ri == NULL) {
        return NULL;
    }
    clef_role_name(clef_model_text_config(m), r, layer, name, sizeof(name));
    /* the joint head's parts come last in clef_part */
    return ri->part >= CLEF_PART_HEAD ? clef_model_head_tensor(m, name)
                                      : clef_model_tensor(m, name);
}

const clef_tensor *
clef_model_expert_role(const clef_model *m, clef_role r, int layer,
    int expert)
{
    char  name[160];

    clef_role_expert_name(clef_model_text_config(m), r, layer, expert, name,
                          sizeof(name));
    return clef_model_tensor(m, name);
}
