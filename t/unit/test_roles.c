/*
 * The weight-format tables of engine/model/: the storage types
 * (dtype.h) and the tensor-role table (roles.h):
 *
 *   - every role's row sits at its own index, in a part, with a name;
 *   - canonical names of each part (text stack, a layer under its prefix,
 *     the tower and its blocks, the head and its layers) and the GGUF names
 *     llama.cpp's converter writes, with its transforms, for a sample of
 *     roles (the names gguf-py's tensor map gives for MODEL_ARCH.CLEF and
 *     MMPROJ);
 *   - a layer's roles in the release's checkpoint order, a MoE layer's
 *     router and experts among them; an expert's names; the norm form
 *     of each family;
 *   - shapes resolved against the configs (the clef-flash layer sizes);
 *   - the dtype table: names, GGUF ids, block bytes, conversions.
 */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "flash_config.h"
#include "model/dtype.h"
#include "model/model_config.h"
#include "model/roles.h"

static clef_text_config
flash_text(void)
{
    clef_text_config  c;
    int               i;

    flash_config(&c);
    c.vocab_size = 248320;
    c.num_hidden_layers = 32;
    c.linear_conv_kernel_dim = 4;
    for (i = 0; i < 32; i++) {
        c.layer_full[i] = (i + 1) % 4 == 0;
    }
    clef_text_config_describe_layers(&c);
    return c;
}

static void
test_table(void)
{
    const clef_role_info  *ri;
    int                    r, at_index = 1, named = 1, parts = 1;

    for (r = 0; r < CLEF_ROLE_COUNT; r++) {
        ri = clef_role_of((clef_role) r);
        at_index &= ri != NULL && ri->role == (clef_role) r;
        named &= ri != NULL && ri->name != NULL && ri->name[0] != '\0';
        parts &= ri != NULL && ri->part < CLEF_PART_COUNT;
    }
    CHECK(at_index, "every role's row is at its own index");
    CHECK(named, "every role has a canonical name");
    CHECK(parts, "every role is in a part");
    CHECK(clef_role_of(CLEF_ROLE_COUNT) == NULL, "no row past the table");
}

static void
name_is(const clef_text_config *c, clef_role r, int layer, const char *want)
{
    char  buf[160];

    CHECK_STR(clef_role_name(c, r, layer, buf, sizeof(buf)), want,
              "canonical name: %s", want);
}

static void
gguf_is(clef_role r, int block, const char *want, unsigned flags)
{
    char         buf[160];
    const char  *got = clef_role_gguf_name(r, block, buf, sizeof(buf));

    if (want == NULL) {
        CHECK(got == NULL, "role %d has no GGUF tensor of its own", (int) r);
    } else {
        CHECK_STR(got, want, "GGUF name: %s", want);
    }
    CHECK_INT(clef_role_of(r)->gguf_flags, flags, "GGUF flags of role %d",
              (int) r);
}

static void
test_names(void)
{
    clef_text_config  c = flash_text();

    name_is(&c, CLEF_ROLE_EMBED, 0, "model.language_model.embed_tokens.weight");
    name_is(&c, CLEF_ROLE_FINAL_NORM, 0, "model.language_model.norm.weight");
    name_is(&c, CLEF_ROLE_LM_HEAD, 0, "lm_head.weight");
    name_is(&c, CLEF_ROLE_MLP_GATE, 3,
            "model.language_model.layers.3.mlp.gate_proj.weight");
    name_is(&c, CLEF_ROLE_GDN_A_LOG, 0,
            "model.language_model.layers.0.linear_attn.A_log");
    name_is(&c, CLEF_ROLE_ATTN_O, 31,
            "model.language_model.layers.31.self_attn.o_proj.weight");
    name_is(&c, CLEF_ROLE_V_PATCH, 0, "model.visual.patch_embed.proj.weight");
    name_is(&c, CLEF_ROLE_V_FC2_BIAS, 26,
            "model.visual.blocks.26.mlp.linear_fc2.bias");
    name_is(&c, CLEF_ROLE_V_MERGER_FC1, 0, "model.visual.merger.linear_fc1.weight");
    name_is(NULL, CLEF_ROLE_H_PRIOR_SCALE, 0, "prior_logit_scale");
    name_is(NULL, CLEF_ROLE_HR_ATTN_IN, 1,
            "evidence_layers.1.attention.in_proj_weight");
    name_is(NULL, CLEF_ROLE_HD_NORM3_BIAS, 2, "layers.2.norm3.bias");
    name_is(NULL, CLEF_ROLE_H_SCORER_OUT, 0, "residual_scorer.3.weight");

    gguf_is(CLEF_ROLE_EMBED, 0, "token_embd.weight", 0);
    gguf_is(CLEF_ROLE_LM_HEAD, 0, "output.weight", 0);
    gguf_is(CLEF_ROLE_FINAL_NORM, 0, "output_norm.weight", CLEF_GGUF_PLUS_ONE);
    gguf_is(CLEF_ROLE_INPUT_NORM, 5, "blk.5.attn_norm.weight",
            CLEF_GGUF_PLUS_ONE);
    gguf_is(CLEF_ROLE_MLP_GATE, 3, "blk.3.ffn_gate.weight", 0);
    gguf_is(CLEF_ROLE_GDN_Z, 2, "blk.2.attn_gate.weight", CLEF_GGUF_V_ROWS);
    gguf_is(CLEF_ROLE_GDN_A_LOG, 2, "blk.2.ssm_a",
            CLEF_GGUF_NEG_EXP | CLEF_GGUF_V_ROWS);
    gguf_is(CLEF_ROLE_GDN_DT_BIAS, 2, "blk.2.ssm_dt.bias", CLEF_GGUF_V_ROWS);
    gguf_is(CLEF_ROLE_GDN_OUT, 2, "blk.2.ssm_out.weight", CLEF_GGUF_V_COLS);
    gguf_is(CLEF_ROLE_GDN_NORM, 2, "blk.2.ssm_norm.weight", 0);
    gguf_is(CLEF_ROLE_ATTN_O, 3, "blk.3.attn_output.weight", 0);
    gguf_is(CLEF_ROLE_V_PATCH, 0, "v.patch_embd.weight",
            CLEF_GGUF_MMPROJ | CLEF_GGUF_SPLIT_T);
    gguf_is(CLEF_ROLE_V_MERGER_NORM, 0, "v.post_ln.weight", CLEF_GGUF_MMPROJ);
    gguf_is(CLEF_ROLE_V_MERGER_FC2, 0, "mm.2.weight", CLEF_GGUF_MMPROJ);
    gguf_is(CLEF_ROLE_H_RESIDUAL_GATE, 0, NULL,
            CLEF_GGUF_SCALES | CLEF_GGUF_SIGMOID);
    gguf_is(CLEF_ROLE_H_TYPE_EMBEDDING, 0, "token_types.weight", 0);
    gguf_is(CLEF_ROLE_HR_MEMORY_NORM, 0, "dec.blk.0.cross_attn_norm_kv.weight",
            0);
    gguf_is(CLEF_ROLE_HD_SELF_IN, 3, "dec.blk.3.attn_q.weight",
            CLEF_GGUF_AFTER_ROUTING | CLEF_GGUF_SPLIT_QKV);
    gguf_is(CLEF_ROLE_H_SCORER_OUT, 0, "decision.scorer_out.weight", 0);
}

static void
test_layer_roles(void)
{
    static const clef_role  gdn[] = {
        CLEF_ROLE_INPUT_NORM, CLEF_ROLE_GDN_QKV, CLEF_ROLE_GDN_Z,
        CLEF_ROLE_GDN_B, CLEF_ROLE_GDN_A, CLEF_ROLE_GDN_CONV,
        CLEF_ROLE_GDN_DT_BIAS, CLEF_ROLE_GDN_A_LOG, CLEF_ROLE_GDN_NORM,
        CLEF_ROLE_GDN_OUT, CLEF_ROLE_POST_NORM, CLEF_ROLE_MLP_GATE,
        CLEF_ROLE_MLP_UP, CLEF_ROLE_MLP_DOWN
    };
    static const clef_role  attn[] = {
        CLEF_ROLE_INPUT_NORM, CLEF_ROLE_ATTN_Q, CLEF_ROLE_ATTN_K,
        CLEF_ROLE_ATTN_V, CLEF_ROLE_ATTN_O, CLEF_ROLE_ATTN_Q_NORM,
        CLEF_ROLE_ATTN_K_NORM, CLEF_ROLE_POST_NORM, CLEF_ROLE_MLP_GATE,
        CLEF_ROLE_MLP_UP, CLEF_ROLE_MLP_DOWN
    };
    clef_text_config  c = flash_text();
    clef_layer_desc   moe;
    clef_role         got[CLEF_ROLE_COUNT];
    int               n;

    n = clef_layer_roles(&c.layer[0], got, CLEF_ROLE_COUNT);
    CHECK(n == (int) (sizeof(gdn) / sizeof(gdn[0]))
          && memcmp(got, gdn, sizeof(gdn)) == 0,
          "a GDN layer: input norm, mixer, post norm, MLP in checkpoint order");
    n = clef_layer_roles(&c.layer[3], got, CLEF_ROLE_COUNT);
    CHECK(n == (int) (sizeof(attn) / sizeof(attn[0]))
          && memcmp(got, attn, sizeof(attn)) == 0,
          "an attention layer likewise");
    CHECK_INT(clef_layer_roles(&c.layer[3], got, 5), -1,
              "more roles than room: refused");
    moe = c.layer[3];
    moe.mlp = CLEF_MLP_MOE;
    n = clef_layer_roles(&moe, got, CLEF_ROLE_COUNT);
    CHECK(n == 12 && memcmp(got, attn, 8 * sizeof(clef_role)) == 0
          && got[8] == CLEF_ROLE_MOE_ROUTER && got[9] == CLEF_ROLE_MOE_GATE
          && got[10] == CLEF_ROLE_MOE_UP && got[11] == CLEF_ROLE_MOE_DOWN,
          "a MoE layer: the router, then the experts' gate, up, down");
    CHECK_INT(clef_part_roles(CLEF_PART_MLP_MOE, got, CLEF_ROLE_COUNT), 4,
              "the MoE part's four roles");
}

/* Clef Omni's per-expert names and its plain norms. */
static void
test_experts(void)
{
    clef_text_config  c = flash_text();
    char              name[160];

    c.layer[3].mlp = CLEF_MLP_MOE;
    CHECK_STR(clef_role_expert_name(&c, CLEF_ROLE_MOE_GATE, 3, 127, name,
                                    sizeof(name)),
              "model.language_model.layers.3.mlp.experts.127.gate_proj.weight",
              "an expert's gate by its index");
    CHECK_STR(clef_role_expert_name(&c, CLEF_ROLE_MOE_DOWN, 3, 0, name,
                                    sizeof(name)),
              "model.language_model.layers.3.mlp.experts.0.down_proj.weight",
              "expert 0's down");
    CHECK_STR(clef_role_expert_name(&c, CLEF_ROLE_MOE_ROUTER, 3, 5, name,
                                    sizeof(name)),
              "model.language_model.layers.3.mlp.gate.weight",
              "the router is the layer's, whatever the expert");
    CHECK_STR(clef_role_gguf_name(CLEF_ROLE_MOE_UP, 3, name, sizeof(name)),
              "blk.3.ffn_up_exps.weight", "the experts' GGUF tensor");
    CHECK(clef_role_of(CLEF_ROLE_MOE_UP)->gguf_flags & CLEF_GGUF_EXPERTS,
          "stored as one 3-D tensor in a GGUF");
    c.norm_plus_one = 1;
    CHECK_INT(clef_role_kind_in(&c, CLEF_ROLE_INPUT_NORM), CLEF_RK_NORM_1P,
              "Qwen3.5's norms are 1 + w");
    c.norm_plus_one = 0;
    CHECK_INT(clef_role_kind_in(&c, CLEF_ROLE_ATTN_Q_NORM), CLEF_RK_NORM,
              "Omni's are w");
    CHECK_INT(clef_role_kind_in(&c, CLEF_ROLE_GDN_NORM), CLEF_RK_NORM,
              "the gated norm is w in both");
}

static void
test_shapes(void)
{
    clef_text_config    c = flash_text();
    clef_vision_config  v;
    clef_head_config    h = { 4096, 1024, 2, 4, 16, 4096 };
    clef_dims           d;
    int64_t             shape[5];

    memset(&v, 0, sizeof(v));
    v.hidden_size = 1152;
    v.intermediate_size = 4304;
    v.spatial_merge_size = 2;
    v.out_hidden_size = 4096;
    v.in_channels = 3;
    v.temporal_patch_size = 2;
    v.patch_size = 16;
    v.num_position_embeddings = 2304;
    memset(&d, 0, sizeof(d));
    clef_dims_text(&d, &c);
    clef_dims_vision(&d, &v);
    clef_dims_head(&d, &h);

    CHECK(clef_role_shape(CLEF_ROLE_GDN_QKV, &d, shape) == 2
          && shape[0] == 8192 && shape[1] == 4096,
          "in_proj_qkv [2 Hk dk + Hv dv, H] = [8192, 4096]");
    CHECK(clef_role_shape(CLEF_ROLE_GDN_CONV, &d, shape) == 3
          && shape[0] == 8192 && shape[1] == 1 && shape[2] == 4,
          "conv1d [8192, 1, 4]");
    CHECK(clef_role_shape(CLEF_ROLE_ATTN_Q, &d, shape) == 2
          && shape[0] == 8192 && shape[1] == 4096,
          "q_proj with the output gate: [2 Hq hd, H] = [8192, 4096]");
    CHECK_INT(clef_role_numel(CLEF_ROLE_MLP_DOWN, &d), 4096LL * 12288,
              "down_proj: H x I");
    CHECK(clef_role_shape(CLEF_ROLE_V_PATCH, &d, shape) == 5
          && shape[0] == 1152 && shape[1] == 3 && shape[2] == 2
          && shape[3] == 16 && shape[4] == 16,
          "the patch embedding [1152, 3, 2, 16, 16]");
    CHECK_INT(clef_role_numel(CLEF_ROLE_V_MERGER_FC1, &d), 4608LL * 4608,
              "the merger's fc1: (hidden x merge^2)^2");
    CHECK_INT(clef_role_shape(CLEF_ROLE_H_PRIOR_SCALE, &d, shape), 0,
              "a head scalar has no dimension");
    CHECK_INT(clef_role_numel(CLEF_ROLE_H_PRIOR_SCALE, &d), 1,
              "and one value");
    CHECK_INT(clef_role_numel(CLEF_ROLE_HR_ATTN_IN, &d), 3LL * 1024 * 1024,
              "in_proj_weight [3 W, W]");
}

static void
test_dtypes(void)
{
    static const uint16_t  bf16[3] = { 0x3f80, 0xc040, 0x0000 };
    static const uint16_t  f16[3] = { 0x3c00, 0xc200, 0x0001 };
    clef_dtype             dt;
    float                  f[3];

    CHECK(clef_dtype_from_name("BF16", &dt) == 0 && dt == CLEF_DTYPE_BF16,
          "safetensors' BF16");
    CHECK(clef_dtype_from_name("Q8_0", &dt) != 0,
          "Q8_0 is not a safetensors dtype");
    CHECK(clef_dtype_from_ggml(30, &dt) == 0 && dt == CLEF_DTYPE_BF16,
          "GGUF type 30 is BF16");
    CHECK(clef_dtype_from_ggml(1, &dt) == 0 && dt == CLEF_DTYPE_F16,
          "GGUF type 1 is F16");
    CHECK(clef_dtype_from_ggml(8, &dt) == 0 && dt == CLEF_DTYPE_Q8_0
          && clef_dtype_is_block(dt) && clef_dtype_is_float(dt),
          "GGUF type 8 is Q8_0, a block type of numbers");
    CHECK(clef_dtype_from_ggml(12, &dt) == 0 && dt == CLEF_DTYPE_Q4_K
          && clef_dtype_bytes(dt, 512) == 288 && clef_dtype_bytes(dt, 300) < 0,
          "GGUF type 12 is Q4_K: 144 bytes per 256 values, whole blocks only");
    CHECK(clef_dtype_from_ggml(10, &dt) == 0 && dt == CLEF_DTYPE_Q2_K
          && clef_dtype_is_float(dt)
          && clef_dtype_traits_of(dt)->from_f32 == NULL,
          "GGUF type 10 is Q2_K, read only: no quantizer");
    CHECK(clef_dtype_from_ggml(9, &dt) != 0,
          "GGUF type 9 (Q8_1, llama.cpp's activations): not a type ngx_clef"
          " reads");
    CHECK(clef_dtype_from_ggml(-1, &dt) != 0, "no GGUF type -1");
    CHECK_INT(clef_dtype_bytes(CLEF_DTYPE_BF16, 10), 20, "10 bf16: 20 bytes");
    CHECK_INT(clef_dtype_bytes(CLEF_DTYPE_I64, 3), 24, "3 i64: 24 bytes");
    CHECK_INT(clef_dtype_size(CLEF_DTYPE_F32), 4, "f32 element: 4 bytes");
    CHECK(clef_dtype_is_float(CLEF_DTYPE_F16) && !clef_dtype_is_float(CLEF_DTYPE_U8),
          "F16 converts to fp32, U8 does not");
    CHECK(clef_dtype_traits_of(CLEF_DTYPE_COUNT) == NULL, "no row past the table");
    CHECK_STR(clef_dtype_name(CLEF_DTYPE_COUNT), "?", "no name past the table");

    clef_dtype_traits_of(CLEF_DTYPE_BF16)->to_f32(bf16, f, 3);
    CHECK(f[0] == 1.0f && f[1] == -3.0f && f[2] == 0.0f, "bf16 rows to fp32");
    clef_dtype_traits_of(CLEF_DTYPE_F16)->to_f32(f16, f, 3);
    CHECK(f[0] == 1.0f && f[1] == -3.0f && f[2] == 0x1p-24f,
          "f16 rows to fp32, a subnormal included");
}

int
main(void)
{
    test_table();
    test_names();
    test_layer_roles();
    test_experts();
    test_shapes();
    test_dtypes();
    return check_done();
}
