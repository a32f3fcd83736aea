/*
 * `clef mkmodel --gguf TYPE`: the random model written straight into a
 * GGUF file, as llama.cpp's converter (conversion/clef.py) would write the
 * release mkmodel makes with the same seed, and llama-quantize would then
 * quantize it (mkmodel.h).  No release is written first: every tensor's
 * rows are drawn, converted and quantized a slice at a time while the
 * file is written (a 27B Q4_K_M file needs no 54 GB intermediate).
 *
 * What the converter does to the values is the inverse of what a GGUF
 * container undoes (model/gguf_clef.h, the role table's CLEF_GGUF_* flags):
 * RMSNorm weights stored as 1 + w, A_log as -exp(A_log), the head's scales
 * folded into decision.scales as the values used, in_proj split in q, k and
 * v, the value heads of the gated delta rule from grouped to tiled order,
 * the conv taps squeezed, the Conv3d patch embedding split in two.
 *
 * Types, per TYPE (llama-quantize's names):
 *   f32             every tensor F32 (the converter's --outtype f32);
 *   f16, bf16       matrices in it; vectors, norms, the conv taps, the
 *                   type embedding and the tower's positions F32;
 *   q8_0 q4_0 q4_1 q5_0 q5_1 q6_k q4_k_m q5_k_m iq4_xs q3_k_m
 *                   llama-quantize's choice on the f32 file: the tensors it
 *                   quantizes (two dimensions or more, named "*weight", not
 *                   a norm, conv taps, positions or type embedding) in the
 *                   type's block type, output.weight (or the tied
 *                   embedding) Q6_K, the K_M mixes' attention-value and
 *                   ffn_down tensors Q6_K on its "more bits" layers, counted
 *                   in its order (the non-block tensors by name, then each
 *                   block's by name); rows that are not a multiple of 256
 *                   fall back as it does (Q4_K -> Q5_0, Q5_K -> Q5_1,
 *                   Q6_K -> Q8_0, IQ4_XS -> IQ4_NL, Q3_K -> Q4_0).  Its
 *                   tensors are written in that order.  iq4_xs (without
 *                   an importance matrix: ffn_down Q5_K on the first
 *                   eighth of the layers, attention values Q5_K where
 *                   there are 4 query heads or more to a key head) and
 *                   q3_k_m (attention values Q5_K on the first two, then
 *                   Q4_K; attn_output Q4_K; ffn_down Q5_K on the first
 *                   sixteenth, then Q4_K) have no quantizer here and are
 *                   written --sparse only.
 * The mmproj file (the tower) holds its matrices in F16 (F32, BF16 when
 * TYPE is).  --sparse leaves the matrices' data as holes (all zeros, in
 * every type a valid block), the small tensors a reader computes from
 * written for real, and in a routed model (Clef Omni) the token embedding
 * and the routers too (routes() below).
 */
#include "mkmodel.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/dtype.h"
#include "model/gguf_clef.h"
#include "model/gguf_tokenizer.h"
#include "model/gguf_write.h"
#include "model/quant.h"

/* llama.cpp's general.file_type values */
enum {
    FT_F32 = 0, FT_F16 = 1, FT_Q4_0 = 2, FT_Q4_1 = 3, FT_Q8_0 = 7,
    FT_Q5_0 = 8, FT_Q5_1 = 9, FT_Q3_K_M = 12, FT_Q4_K_M = 15, FT_Q5_K_M = 17,
    FT_Q6_K = 18, FT_IQ4_XS = 30, FT_BF16 = 32
};

typedef struct {
    const char  *name;
    int          file_type;
    uint32_t     base;          /* the block type, or the float type */
    int          k_mix;         /* a _M mix: more bits on some layers */
} gguf_kind;

static const gguf_kind  kinds[] = {
    { "f32", FT_F32, CLEF_GGML_F32, 0 },
    { "f16", FT_F16, CLEF_GGML_F16, 0 },
    { "bf16", FT_BF16, CLEF_GGML_BF16, 0 },
    { "q8_0", FT_Q8_0, CLEF_GGML_Q8_0, 0 },
    { "q4_0", FT_Q4_0, CLEF_GGML_Q4_0, 0 },
    { "q4_1", FT_Q4_1, CLEF_GGML_Q4_1, 0 },
    { "q5_0", FT_Q5_0, CLEF_GGML_Q5_0, 0 },
    { "q5_1", FT_Q5_1, CLEF_GGML_Q5_1, 0 },
    { "q6_k", FT_Q6_K, CLEF_GGML_Q6_K, 0 },
    { "q4_k_m", FT_Q4_K_M, CLEF_GGML_Q4_K, 1 },
    { "q5_k_m", FT_Q5_K_M, CLEF_GGML_Q5_K, 1 },
    { "iq4_xs", FT_IQ4_XS, CLEF_GGML_IQ4_XS, 0 },
    { "q3_k_m", FT_Q3_K_M, CLEF_GGML_Q3_K, 0 },
};

/* One tensor of the file: a canonical tensor, or a part of one. */
typedef struct {
    char              name[96];
    clef_tensor_spec  s;
    unsigned          flags;        /* the role's CLEF_GGUF_* */
    int               part;         /* SPLIT_QKV / SPLIT_T: which */
    int               n_parts;
    int               ndim;
    int64_t           ne[4];
    int               torch_ndim;   /* as the converter counts */
    uint32_t          type;
    int               block;        /* blk.N / dec.blk.N: N, else -1 */
    int               dec;          /* a head block (dec.blk.N) */
    const struct mk_gguf  *g;
} gtensor;

typedef struct mk_gguf {
    const mkmodel_gguf_args   *a;
    const clef_model_configs  *cfg;
    const clef_text_config    *tc;
    const clef_head_config    *hc;
    int                        omni;        /* Clef Omni: its release's
                                               names draw the values */
    gtensor                   *t;
    int                        n, cap;
    clef_tensor_spec           scale[3];    /* decision.scales' sources */
    int                        mmproj;      /* collecting the tower */
} mk_gguf;

static int
fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int
fail(const char *fmt, ...)
{
    va_list  ap;

    fprintf(stderr, "clef mkmodel: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
    return 1;
}

/* ---- the file's tensors ------------------------------------------------ */

static gtensor *
new_tensor(mk_gguf *g, const clef_tensor_spec *s, const char *name)
{
    gtensor  *p;

    if (g->n == g->cap) {
        g->cap = g->cap ? 2 * g->cap : 512;
        p = realloc(g->t, (size_t) g->cap * sizeof(*p));
        if (p == NULL) {
            return NULL;
        }
        g->t = p;
    }
    p = &g->t[g->n++];
    memset(p, 0, sizeof(*p));
    snprintf(p->name, sizeof(p->name), "%s", name);
    p->s = *s;
    p->flags = clef_role_gguf_flags(g->tc, s->role);
    if (g->omni && clef_role_of(s->role)->part < CLEF_PART_HEAD
        && mkmodel_omni_name(p->s.name, sizeof(p->s.name)) != 0)
    {
        g->n--;
        return NULL;
    }
    p->n_parts = 1;
    p->g = g;
    p->torch_ndim = s->ndim;
    p->ndim = s->ndim;
    for (int j = 0; j < s->ndim; j++) {
        p->ne[j] = s->shape[s->ndim - 1 - j];
    }
    if (sscanf(name, "blk.%d.", &p->block) != 1
        && sscanf(name, "dec.blk.%d.", &p->block) != 1)
    {
        p->block = -1;
    }
    p->dec = strncmp(name, "dec.", 4) == 0;
    return p;
}

static int
on_spec(const clef_tensor_spec *s, void *ctx)
{
    mk_gguf               *g = ctx;
    const clef_role_info  *ri = clef_role_of(s->role);
    gtensor               *p;
    char                   name[96], *q;
    int                    block = s->layer, i;

    if (ri->gguf_flags & CLEF_GGUF_SCALES) {
        g->scale[s->role - CLEF_ROLE_H_PRIOR_SCALE] = *s;
        if (s->role != CLEF_ROLE_H_PRIOR_SCALE) {
            return 0;
        }
        p = new_tensor(g, s, CLEF_GGUF_SCALES_TENSOR);
        if (p == NULL) {
            return -1;
        }
        p->ndim = p->torch_ndim = 1;
        p->ne[0] = 3;
        return 0;
    }
    if (ri->gguf_flags & CLEF_GGUF_AFTER_ROUTING) {
        block += g->hc->routing_layers;
    }
    if (ri->part == CLEF_PART_DEEPSTACK) {
        /* v.deepstack.N: N the tower block it reads (the converter's
         * "absolute clip layer index") */
        block = g->cfg->vision.deepstack[s->layer];
    }
    if (ri->gguf_flags & CLEF_GGUF_EXPERTS && s->expert > 0) {
        return 0;                   /* in expert 0's 3-D tensor */
    }
    if (clef_role_gguf_name_in(g->tc, s->role, block, name,
                               sizeof(name) - 2) == NULL)
    {
        fail("no GGUF name for %s", s->name);
        return -1;
    }
    if (ri->gguf_flags & (CLEF_GGUF_EXPERTS | CLEF_GGUF_BIAS3)) {
        p = new_tensor(g, s, name);
        if (p == NULL) {
            return -1;
        }
        p->ndim = p->torch_ndim = 3;
        if (ri->gguf_flags & CLEF_GGUF_EXPERTS) {
            /* [E][rows][cols]: GGML [cols, rows, E] */
            p->ne[2] = g->tc->num_experts;
        } else {
            /* [C] unsqueezed to [C, 1, 1]: GGML [1, 1, C] */
            p->ne[2] = p->ne[0];
            p->ne[0] = p->ne[1] = 1;
        }
        return 0;
    }
    if (ri->gguf_flags & CLEF_GGUF_SPLIT_QKV) {
        q = strstr(name, "_q.");
        for (i = 0; q != NULL && i < 3; i++) {
            q[1] = "qkv"[i];
            p = new_tensor(g, s, name);
            if (p == NULL) {
                return -1;
            }
            p->part = i;
            p->n_parts = 3;
            p->ne[p->ndim - 1] /= 3;
        }
        return q != NULL ? 0 : -1;
    }
    if (ri->gguf_flags & CLEF_GGUF_SPLIT_T) {
        /* [H, C, T, P, P]: T tensors of GGML dims [P, P, C, H] */
        for (i = 0; i < s->shape[2]; i++) {
            p = new_tensor(g, s, name);
            if (p == NULL) {
                return -1;
            }
            if (i > 0) {
                snprintf(p->name, sizeof(p->name), "%.80s.%d", name, i % 100);
            }
            p->part = i;
            p->n_parts = (int) s->shape[2];
            p->ndim = p->torch_ndim = 4;
            p->ne[0] = s->shape[4];
            p->ne[1] = s->shape[3];
            p->ne[2] = s->shape[1];
            p->ne[3] = s->shape[0];
        }
        return 0;
    }
    p = new_tensor(g, s, name);
    if (p == NULL) {
        return -1;
    }
    if (ri->gguf_flags & CLEF_GGUF_SQUEEZE) {
        p->ne[1] = p->ne[2];            /* [C, 1, K] -> [C, K] */
        p->ndim = p->torch_ndim = 2;
    }
    return 0;
}

/* ---- values ------------------------------------------------------------ */

/* The file's value-head slot t holds the release's head h (tiled order
 * from grouped: h = group * per + j sits at j * hk + group). */
static int64_t
grouped(const clef_text_config *c, int64_t t)
{
    int64_t  hk = c->linear_num_key_heads;
    int64_t  per = c->linear_num_value_heads / hk;

    return (t % hk) * per + t / hk;
}

static float
convert(unsigned flags, clef_role role, float v)
{
    if (flags & CLEF_GGUF_PLUS_ONE) {
        return v + 1.0f;
    }
    if (flags & CLEF_GGUF_NEG_EXP) {
        return (float) -exp((double) v);
    }
    if (flags & CLEF_GGUF_SCALES) {
        if (role == CLEF_ROLE_H_RESIDUAL_GATE) {
            return (float) (1.0 / (1.0 + exp(-(double) v)));
        }
        return (float) exp(fmin((double) v, log(100.0)));
    }
    return v;
}

/* Rows [row, row + n) of a 3-D expert tensor: row r is row r % rows of
 * expert r / rows, its values drawn under that expert's release name. */
static int
expert_rows(const gtensor *p, int64_t row, int64_t n, float *out)
{
    const clef_text_config  *c = p->g->tc;
    clef_tensor_spec         se = p->s;
    int64_t                  rows = p->ne[1], cols = p->ne[0], r;
    int                      e = -1;

    for (r = row; r < row + n; r++, out += cols) {
        if (r / rows != e) {
            e = (int) (r / rows);
            clef_role_expert_name(c, se.role, se.layer, e, se.name,
                                  sizeof(se.name));
            se.expert = e;
            if (p->g->omni
                && mkmodel_omni_name(se.name, sizeof(se.name)) != 0)
            {
                return -1;
            }
        }
        mkmodel_values(&se, clef_role_kind_in(c, se.role),
                       mkmodel_release_dtype(&se), p->g->a->seed,
                       r % rows * cols, cols, out);
    }
    return 0;
}

/* Rows [row, row + n) of the file's tensor, in f32. */
static int
rows_fn(void *ctx, int64_t row, int64_t n, void *dst, clef_error *err)
{
    const gtensor           *p = ctx;
    const clef_text_config  *c = p->g->tc;
    const clef_tensor_spec  *s = &p->s;
    clef_dtype               dt = mkmodel_release_dtype(s);
    clef_role_kind           kind = clef_role_kind_in(c, s->role);
    uint64_t                 seed = p->g->a->seed;
    float                   *out = dst, *tmp = NULL;
    int64_t                  cols = p->ne[0], numel = 1, rel_rows, rel_cols;
    int64_t                  r, rr, base, t, v_from = 0, unit = 0, j;
    int                      k, reorder, v_rows, v_cols;

    (void) err;
    if (p->flags & CLEF_GGUF_EXPERTS) {
        return expert_rows(p, row, n, out);
    }
    if (p->flags & CLEF_GGUF_BIAS3) {
        /* rows of one value: the vector's [row, row + n) */
        mkmodel_values(s, kind, dt, seed, row, n, out);
        return 0;
    }
    if (p->flags & CLEF_GGUF_SCALES) {
        for (k = 0; k < 3; k++) {
            mkmodel_values(&p->g->scale[k],
                           clef_role_kind_in(c, p->g->scale[k].role), dt,
                           seed, 0, 1, out + k);
            out[k] = convert(p->flags, p->g->scale[k].role, out[k]);
        }
        return 0;
    }
    for (k = 0; k < s->ndim; k++) {
        numel *= s->shape[k];
    }
    rel_rows = s->shape[0];
    rel_cols = numel / rel_rows;
    reorder = c->linear_num_key_heads != c->linear_num_value_heads;
    v_rows = reorder && (p->flags & CLEF_GGUF_V_ROWS);
    v_cols = reorder && (p->flags & CLEF_GGUF_V_COLS);
    if (v_rows) {
        unit = rel_rows == c->linear_num_value_heads
               ? 1 : c->linear_value_head_dim;
        v_from = rel_rows - c->linear_num_value_heads * unit;
    }
    if (v_cols && s->ndim > 1) {
        tmp = malloc(sizeof(float) * (size_t) cols);
        if (tmp == NULL) {
            return clef_error_fail(err, CLEF_E_NO_MEMORY, "out of memory");
        }
    }
    if (s->ndim == 1) {
        /* one row: a vector, its value heads one value each */
        unit = 1;
        v_from = numel - (v_rows ? c->linear_num_value_heads : 0);
        tmp = malloc(sizeof(float) * (size_t) cols);
        if (tmp == NULL) {
            return clef_error_fail(err, CLEF_E_NO_MEMORY, "out of memory");
        }
        mkmodel_values(s, kind, dt, seed, p->part * (numel / p->n_parts), cols, tmp);
        for (j = 0; j < cols; j++) {
            rr = v_rows && j >= v_from ? v_from + grouped(c, j - v_from) : j;
            out[j] = convert(p->flags, s->role, tmp[rr]);
        }
        free(tmp);
        return 0;
    }
    for (r = row; r < row + n; r++, out += cols) {
        if (p->flags & CLEF_GGUF_SPLIT_T) {
            /* row r = (o, y) of part j: the release's [o][j][y][:] */
            base = ((r / s->shape[3] * p->n_parts + p->part) * s->shape[3]
                    + r % s->shape[3]) * s->shape[4];
        } else {
            rr = r;
            if (v_rows && r >= v_from) {
                t = (r - v_from) / unit;
                rr = v_from + grouped(c, t) * unit + (r - v_from) % unit;
            }
            /* a row of the file is a row of the release, or (a 4-D
             * convolution, GGML rows of its last dimension) a run of one */
            base = p->part * (numel / p->n_parts)
                   + (s->ndim > 2 && !(p->flags & CLEF_GGUF_SQUEEZE)
                      ? rr * cols : rr * rel_cols);
        }
        if (!v_cols) {
            mkmodel_values(s, kind, dt, seed, base, cols, out);
        } else {
            /* file column t * dv + i holds the release's grouped(t) */
            mkmodel_values(s, kind, dt, seed, base, cols, tmp);
            for (j = 0; j < cols; j++) {
                t = j / c->linear_value_head_dim;
                out[j] = tmp[grouped(c, t) * c->linear_value_head_dim
                             + j % c->linear_value_head_dim];
            }
        }
        for (j = 0; j < cols; j++) {
            out[j] = convert(p->flags, s->role, out[j]);
        }
    }
    free(tmp);
    return 0;
}

/* ---- types ------------------------------------------------------------- */

/* GGML's count of dimensions: up to the last one above 1. */
static int
ggml_ndim(const gtensor *p)
{
    int  nd = p->ndim;

    while (nd > 1 && p->ne[nd - 1] == 1) {
        nd--;
    }
    return nd;
}

static int
has(const char *name, const char *part)
{
    return strstr(name, part) != NULL;
}

static int
ends(const char *name, const char *suffix)
{
    size_t  n = strlen(name), k = strlen(suffix);

    return n >= k && strcmp(name + n - k, suffix) == 0;
}

/* Kept in F32 by the converter at f16/bf16: vectors, norms, conv taps,
 * the type embedding, the tower's positions, the routers. */
static int
float_keeps_f32(const gtensor *p)
{
    return p->torch_ndim < 2 || ends(p->name, "_norm.weight")
           || has(p->name, "ssm_conv1d") || has(p->name, "token_types")
           || has(p->name, "position_embd") || has(p->name, "ffn_gate_inp");
}

/* What llama-quantize leaves as the f32 file has it. */
static int
quantizable(const gtensor *p)
{
    return ggml_ndim(p) >= 2 && ends(p->name, "weight")
           && !has(p->name, "_norm.weight") && !has(p->name, "ssm_conv1d")
           && !has(p->name, "ffn_gate_inp.weight")
           && !has(p->name, "token_types") && !has(p->name, "position_embd");
}

static int
block_of(uint32_t type)
{
    const char  *name;
    int          block = 1, bytes;

    clef_ggml_type_layout(type, &name, &block, &bytes);
    return block;
}

/* llama-quantize's fallback for rows its block does not divide. */
static uint32_t
fallback(uint32_t type, int64_t ncols)
{
    if (ncols % block_of(type) == 0) {
        return type;
    }
    switch (type) {
    case CLEF_GGML_Q4_K: type = CLEF_GGML_Q5_0; break;
    case CLEF_GGML_Q5_K: type = CLEF_GGML_Q5_1; break;
    case CLEF_GGML_Q6_K: type = CLEF_GGML_Q8_0; break;
    case CLEF_GGML_IQ4_XS: type = CLEF_GGML_IQ4_NL; break;
    case CLEF_GGML_Q3_K: type = CLEF_GGML_Q4_0; break;
    default: break;
    }
    return ncols % block_of(type) == 0 ? type : CLEF_GGML_F16;
}

static int
more_bits(int i, int n)
{
    return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
}

/* llama-quantize's type of layer i's ffn_down of n (t its base type). */
static uint32_t
ffn_down_type(const gguf_kind *k, uint32_t t, int i, int n)
{
    if (k->k_mix && more_bits(i, n)) {
        return CLEF_GGML_Q6_K;
    }
    if (k->file_type == FT_Q3_K_M) {
        return i < n / 16 ? CLEF_GGML_Q5_K : CLEF_GGML_Q4_K;
    }
    if (k->file_type == FT_IQ4_XS && i < n / 8) {
        return CLEF_GGML_Q5_K;          /* without an importance matrix */
    }
    return t;
}

/* llama-quantize's order: the tensors outside blocks by name, then each
 * block's by name. */
static int
quant_order(const void *x, const void *y)
{
    const gtensor  *a = x, *b = y;
    int             ab = strncmp(a->name, "blk.", 4) == 0;
    int             bb = strncmp(b->name, "blk.", 4) == 0;

    if (ab != bb) {
        return ab - bb;
    }
    if (ab && a->block != b->block) {
        return a->block - b->block;
    }
    return strcmp(a->name, b->name);
}

static void
assign_types(mk_gguf *g, const gguf_kind *k, int first, int n, int tower)
{
    gtensor   *p;
    uint32_t   t;
    int        i, n_wv = 0, i_wv = 0, i_down = 0, tied = 1;
    int        experts = g->tc->num_experts;

    if (!tower && k->base != CLEF_GGML_F32 && k->base != CLEF_GGML_F16
        && k->base != CLEF_GGML_BF16)
    {
        qsort(g->t + first, (size_t) n, sizeof(*g->t), quant_order);
    }
    for (i = first; i < first + n; i++) {
        n_wv += has(g->t[i].name, "attn_v.weight")
                || has(g->t[i].name, "attn_qkv.weight");
        tied &= strcmp(g->t[i].name, "output.weight") != 0;
    }
    for (i = first; i < first + n; i++) {
        p = &g->t[i];
        if (tower || k->base == CLEF_GGML_F32 || k->base == CLEF_GGML_F16
            || k->base == CLEF_GGML_BF16)
        {
            t = tower && k->base != CLEF_GGML_F32 && k->base != CLEF_GGML_BF16
                ? CLEF_GGML_F16 : k->base;
            p->type = float_keeps_f32(p) ? CLEF_GGML_F32 : t;
            continue;
        }
        /* llama-quantize writes GGML's count of dimensions */
        p->ndim = ggml_ndim(p);
        if (!quantizable(p)) {
            p->type = CLEF_GGML_F32;
            continue;
        }
        t = k->base;
        if (strcmp(p->name, "output.weight") == 0
            || (tied && strcmp(p->name, "token_embd.weight") == 0))
        {
            t = p->ne[0] % block_of(t) != 0 ? CLEF_GGML_Q8_0
                : t != CLEF_GGML_Q8_0 ? CLEF_GGML_Q6_K : t;
        } else if (has(p->name, "attn_v.weight")
                   || has(p->name, "attn_qkv.weight"))
        {
            if (k->k_mix && more_bits(i_wv, n_wv)) {
                t = CLEF_GGML_Q6_K;
            } else if (k->file_type == FT_Q3_K_M) {
                t = i_wv < 2 ? CLEF_GGML_Q5_K : CLEF_GGML_Q4_K;
            } else if (k->file_type == FT_IQ4_XS
                       && g->tc->num_key_value_heads > 0
                       && g->tc->num_attention_heads
                          / g->tc->num_key_value_heads >= 4)
            {
                t = CLEF_GGML_Q5_K;
            }
            if (experts == 8) {
                t = CLEF_GGML_Q8_0;     /* "trades just ~128MB" */
            }
            i_wv++;
        } else if (has(p->name, "attn_k.weight")) {
            if (experts == 8) {
                t = CLEF_GGML_Q8_0;
            }
        } else if (has(p->name, "attn_output.weight")) {
            if (experts == 8
                && (k->file_type == FT_Q4_K_M || k->file_type == FT_Q3_K_M
                    || k->file_type == FT_IQ4_XS))
            {
                t = CLEF_GGML_Q5_K;
            } else if (experts != 8 && k->file_type == FT_Q3_K_M) {
                t = CLEF_GGML_Q4_K;
            }
        } else if (has(p->name, "ffn_down")) {
            /* with experts, the layer is the name's block (llama-quantize
             * parses blk.N; the head's dec.blk.N it cannot, ours takes
             * N), else the count of ffn_down tensors so far */
            t = ffn_down_type(k, t, experts > 1 ? p->block : i_down,
                              g->tc->num_hidden_layers);
            i_down++;
        }
        p->type = fallback(t, p->ne[0]);
    }
}

/* ---- metadata ---------------------------------------------------------- */

static int
put_u32(clef_gguf_writer *w, const char *key, int64_t v, clef_error *err)
{
    return clef_gguf_put_uint(w, key, CLEF_GGUF_UINT32, (uint64_t) v, err);
}

static int
put_f32(clef_gguf_writer *w, const char *key, double v, clef_error *err)
{
    return clef_gguf_put_float(w, key, CLEF_GGUF_FLOAT32, v, err);
}

static int
put_s(clef_gguf_writer *w, const char *key, const char *s, clef_error *err)
{
    return clef_gguf_put_str(w, key, s, strlen(s), err);
}

static int
text_meta(clef_gguf_writer *w, const mk_gguf *g, const gguf_kind *k,
    clef_error *err)
{
    const clef_text_config  *c = g->tc;
    const clef_head_config  *h = g->hc;
    int32_t                  sec[4];
    uint8_t                  rec[CLEF_MAX_LAYERS];
    int                      l;
    int                      rope = (int) (c->partial_rotary_factor
                                           * c->head_dim + 0.5);

    for (l = 0; l < 3; l++) {
        sec[l] = c->mrope_section[l];
    }
    sec[3] = 0;
    for (l = 0; l < c->num_hidden_layers; l++) {
        rec[l] = !c->layer_full[l];
    }
    return put_s(w, "general.architecture", "clef", err)
        || put_s(w, "general.type", "model", err)
        || put_s(w, "general.name", g->a->name, err)
        || put_u32(w, "clef.block_count", c->num_hidden_layers, err)
        || put_u32(w, "clef.context_length", g->a->context_length, err)
        || put_u32(w, "clef.embedding_length", c->hidden_size, err)
        || put_u32(w, "clef.feed_forward_length", c->intermediate_size, err)
        || put_u32(w, "clef.attention.head_count", c->num_attention_heads,
                   err)
        || put_u32(w, "clef.attention.head_count_kv", c->num_key_value_heads,
                   err)
        || clef_gguf_put_arr(w, "clef.rope.dimension_sections",
                             CLEF_GGUF_INT32, sec, 4, err)
        || put_f32(w, "clef.rope.freq_base", c->rope_theta, err)
        || put_f32(w, "clef.attention.layer_norm_rms_epsilon",
                   c->rms_norm_eps, err)
        || put_u32(w, "clef.attention.key_length", c->head_dim, err)
        || put_u32(w, "clef.attention.value_length", c->head_dim, err)
        || put_u32(w, "general.file_type", k->file_type, err)
        || put_u32(w, "clef.ssm.conv_kernel", c->linear_conv_kernel_dim, err)
        || put_u32(w, "clef.ssm.state_size", c->linear_key_head_dim, err)
        || put_u32(w, "clef.ssm.group_count", c->linear_num_key_heads, err)
        || put_u32(w, "clef.ssm.time_step_rank", c->linear_num_value_heads,
                   err)
        || put_u32(w, "clef.ssm.inner_size", (int64_t) c->linear_value_head_dim
                                             * c->linear_num_value_heads, err)
        || clef_gguf_put_arr(w, "clef.attention.recurrent_layers",
                             CLEF_GGUF_BOOL, rec,
                             (uint64_t) c->num_hidden_layers, err)
        || put_u32(w, "clef.full_attention_interval",
                   g->a->full_attention_interval, err)
        || put_u32(w, "clef.rope.dimension_count", rope, err)
        || put_s(w, "clef.decision.type", "clef", err)
        || put_u32(w, "clef.decision.routing_block_count", h->routing_layers,
                   err)
        || put_u32(w, "clef.decision.block_count", h->layers, err)
        || put_u32(w, "clef.decision.head_count", h->heads, err)
        || put_f32(w, "clef.attention.layer_norm_epsilon", 1e-5, err)
        || clef_gguf_put_tokenizer(w, g->a->tokenizer_dir, c->vocab_size,
                                   "qwen2", err)
        || put_u32(w, "general.quantization_version", 2, err)
        ? -1 : 0;
}

#define OA  CLEF_GGUF_OMNI_ARCH "."

/* Clef Omni's thinker as llama.cpp's Qwen3-VL-MoE converter writes its
 * qwen3vlmoe keys, under CLEF_GGUF_OMNI_ARCH (gguf_clef.h), and the
 * head's as Clef's. */
static int
omni_meta(clef_gguf_writer *w, const mk_gguf *g, const gguf_kind *k,
    clef_error *err)
{
    const clef_text_config  *c = g->tc;
    const clef_head_config  *h = g->hc;
    int32_t                  sec[4];
    int                      l;
    int                      rope = (int) (c->partial_rotary_factor
                                           * c->head_dim + 0.5);

    for (l = 0; l < 3; l++) {
        sec[l] = c->mrope_section[l];
    }
    sec[3] = 0;
    return put_s(w, "general.architecture", CLEF_GGUF_OMNI_ARCH, err)
        || put_s(w, "general.type", "model", err)
        || put_s(w, "general.name", g->a->name, err)
        || put_u32(w, OA "block_count", c->num_hidden_layers, err)
        || put_u32(w, OA "context_length", g->a->context_length, err)
        || put_u32(w, OA "embedding_length", c->hidden_size, err)
        || put_u32(w, OA "feed_forward_length", c->intermediate_size, err)
        || put_u32(w, OA "attention.head_count", c->num_attention_heads, err)
        || put_u32(w, OA "attention.head_count_kv", c->num_key_value_heads,
                   err)
        || put_f32(w, OA "rope.freq_base", c->rope_theta, err)
        || put_f32(w, OA "attention.layer_norm_rms_epsilon", c->rms_norm_eps,
                   err)
        || put_u32(w, OA "expert_used_count", c->num_experts_per_tok, err)
        || put_u32(w, OA "attention.key_length", c->head_dim, err)
        || put_u32(w, OA "attention.value_length", c->head_dim, err)
        || put_u32(w, "general.file_type", k->file_type, err)
        || put_u32(w, OA "expert_count", c->num_experts, err)
        || put_u32(w, OA "expert_feed_forward_length",
                   c->moe_intermediate_size, err)
        || clef_gguf_put_uint(w, OA "expert_weights_norm", CLEF_GGUF_BOOL,
                              (uint64_t) c->norm_topk_prob, err)
        || clef_gguf_put_arr(w, OA "rope.dimension_sections", CLEF_GGUF_INT32,
                             sec, 4, err)
        || put_u32(w, OA "rope.dimension_count", rope, err)
        || put_u32(w, OA "n_deepstack_layers", g->cfg->vision.present
                                               ? g->cfg->vision.n_deepstack
                                               : 0, err)
        || put_u32(w, OA "position_id_per_seconds",
                   g->cfg->omni.position_id_per_seconds, err)
        || put_s(w, OA "decision.type", "clef", err)
        || put_u32(w, OA "decision.routing_block_count", h->routing_layers,
                   err)
        || put_u32(w, OA "decision.block_count", h->layers, err)
        || put_u32(w, OA "decision.head_count", h->heads, err)
        || put_f32(w, OA "attention.layer_norm_epsilon", 1e-5, err)
        || clef_gguf_put_tokenizer(w, g->a->tokenizer_dir, c->vocab_size,
                                   "qwen2", err)
        || put_u32(w, "general.quantization_version", 2, err)
        ? -1 : 0;
}

/* Clef Omni's audio tower as llama.cpp's Qwen3-Omni mmproj has it
 * (Qwen25AudioModel's keys), and ours it lacks (gguf_clef.h). */
static int
audio_meta(clef_gguf_writer *w, const clef_audio_tower_config *a,
    clef_error *err)
{
    return clef_gguf_put_uint(w, "clip.has_audio_encoder", CLEF_GGUF_BOOL, 1,
                              err)
        || put_s(w, "clip.audio.projector_type", "qwen3a", err)
        || put_u32(w, "clip.audio.num_mel_bins", a->num_mel_bins, err)
        || put_f32(w, "clip.audio.attention.layer_norm_epsilon", 1e-5, err)
        || put_u32(w, "clip.audio.embedding_length", a->d_model, err)
        || put_u32(w, "clip.audio.feed_forward_length", a->encoder_ffn_dim,
                   err)
        || put_u32(w, "clip.audio.block_count", a->encoder_layers, err)
        || put_u32(w, "clip.audio.attention.head_count",
                   a->encoder_attention_heads, err)
        || put_u32(w, "clip.audio.projection_dim", a->output_dim, err)
        || put_u32(w, "clip.audio.n_window", a->n_window, err)
        || put_u32(w, "clip.audio.n_window_infer", a->n_window_infer, err)
        || put_u32(w, "clip.audio.max_pos_emb", a->max_source_positions, err)
        ? -1 : 0;
}

static int
tower_meta(clef_gguf_writer *w, const mk_gguf *g, const gguf_kind *k,
    const clef_vision_config *v, clef_error *err)
{
    float    mean[3], std[3];
    uint8_t  deep[1024];
    int      i, side = 0;

    for (i = 0; i < 3; i++) {
        mean[i] = (float) v->processor.mean[i];
        std[i] = (float) v->processor.std[i];
    }
    memset(deep, 0, sizeof(deep));
    for (i = 0; i < v->n_deepstack; i++) {
        if (v->deepstack[i] >= 0 && v->deepstack[i] < 1024) {
            deep[v->deepstack[i]] = 1;
        }
    }
    while ((side + 1) * (side + 1) <= v->num_position_embeddings) {
        side++;
    }
    return put_s(w, "general.architecture", "clip", err)
        || put_s(w, "general.type", "mmproj", err)
        || put_s(w, "general.name", g->a->name, err)
        || put_u32(w, "general.file_type",
                   k->base == CLEF_GGML_F32 ? FT_F32
                   : k->base == CLEF_GGML_BF16 ? FT_BF16 : FT_F16, err)
        || clef_gguf_put_uint(w, "clip.has_vision_encoder", CLEF_GGUF_BOOL, 1,
                              err)
        || put_u32(w, "clip.vision.projection_dim", v->out_hidden_size, err)
        || put_u32(w, "clip.vision.image_size", side * v->patch_size, err)
        || put_u32(w, "clip.vision.patch_size", v->patch_size, err)
        || put_u32(w, "clip.vision.embedding_length", v->hidden_size, err)
        || put_u32(w, "clip.vision.feed_forward_length", v->intermediate_size,
                   err)
        || put_u32(w, "clip.vision.block_count", v->depth, err)
        || put_u32(w, "clip.vision.attention.head_count", v->num_heads, err)
        || clef_gguf_put_arr(w, "clip.vision.image_mean", CLEF_GGUF_FLOAT32,
                             mean, 3, err)
        || clef_gguf_put_arr(w, "clip.vision.image_std", CLEF_GGUF_FLOAT32,
                             std, 3, err)
        || put_s(w, g->omni ? "clip.vision.projector_type"
                            : "clip.projector_type", "qwen3vl_merger", err)
        || (g->omni && g->cfg->audio.present
            && audio_meta(w, &g->cfg->audio, err) != 0)
        || clef_gguf_put_uint(w, "clip.use_gelu", CLEF_GGUF_BOOL, 1, err)
        || put_u32(w, "clip.vision.spatial_merge_size", v->spatial_merge_size,
                   err)
        || put_f32(w, "clip.vision.attention.layer_norm_epsilon", 1e-6, err)
        || clef_gguf_put_arr(w, "clip.vision.is_deepstack_layers",
                             CLEF_GGUF_BOOL, deep,
                             (uint64_t) (v->depth < 1024 ? v->depth : 1024),
                             err)
        || put_u32(w, "general.quantization_version", 2, err)
        ? -1 : 0;
}

/* ---- files ------------------------------------------------------------- */

/* Data the reader computes at open (small): written even when sparse. */
static int
small(const gtensor *p)
{
    return p->s.ndim <= 1
           || (p->flags & (CLEF_GGUF_PLUS_ONE | CLEF_GGUF_NEG_EXP
                           | CLEF_GGUF_SCALES | CLEF_GGUF_SQUEEZE
                           | CLEF_GGUF_SPLIT_T));
}

/* What --sparse writes for real beside the small tensors: in a routed
 * model, the token embedding and the routers, so that with every other
 * matrix zero each token still routes by its own hidden state (its
 * embedding, which the zero layers pass on) and the experts a request
 * reads are as many and as scattered as a real model's. */
static int
routes(const gtensor *p)
{
    return p->g->tc->num_experts > 0
           && (strcmp(p->name, "token_embd.weight") == 0
               || has(p->name, "ffn_gate_inp.weight"));
}

/* The first tensor whose rows would be quantized by a quantizer of a type
 * read only (IQ4_XS, Q3_K: --sparse leaves such matrices as holes). */
static const gtensor *
unwritable(const mk_gguf *g)
{
    const clef_dtype_traits  *tr;
    clef_dtype                dt;
    int                       i;

    for (i = 0; i < g->n; i++) {
        if (g->a->sparse && !small(&g->t[i]) && !routes(&g->t[i])) {
            continue;
        }
        if (clef_dtype_from_ggml((int) g->t[i].type, &dt) != 0
            || (tr = clef_dtype_traits_of(dt)) == NULL || tr->from_f32 == NULL)
        {
            return &g->t[i];
        }
    }
    return NULL;
}

static int
write_file(const mk_gguf *g, clef_gguf_writer *w, int first, int n,
    const char *path, uint64_t *bytes)
{
    const gtensor  *p;
    clef_error      err;
    int             i, rc;

    clef_error_clear(&err);
    for (i = first; i < first + n; i++) {
        p = &g->t[i];
        rc = g->a->sparse && !small(p) && !routes(p)
             ? clef_gguf_add_tensor_zero(w, p->name, p->type, p->ndim, p->ne,
                                         &err)
             : clef_gguf_add_tensor_rows(w, p->name, p->type, p->ndim, p->ne,
                                         1, rows_fn, (void *) p, &err);
        if (rc != 0) {
            return fail("%s: %s", path, err.message);
        }
        *bytes += (uint64_t) clef_ggml_row_bytes(p->type, p->ne[0])
                  * (uint64_t) (p->ne[1] ? p->ne[1] : 1)
                  * (uint64_t) (p->ndim > 2 ? p->ne[2] : 1)
                  * (uint64_t) (p->ndim > 3 ? p->ne[3] : 1);
    }
    if (clef_gguf_writer_write(w, path, &err) != 0) {
        return fail("%s", err.message);
    }
    return 0;
}

int
mkmodel_write_gguf(const mkmodel_gguf_args *a, const clef_model_configs *cfg)
{
    const clef_text_config    *tc = &cfg->text;
    const clef_head_config    *hc = &cfg->head;
    const clef_vision_config  *vc = &cfg->vision;
    const gguf_kind   *k = NULL;
    clef_gguf_writer  *w = NULL;
    clef_error         err;
    mk_gguf            g;
    uint64_t           bytes = 0, tower_bytes = 0;
    size_t             i;
    int                n_model, rc = 1;

    for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        if (strcmp(kinds[i].name, a->type) == 0) {
            k = &kinds[i];
        }
    }
    if (k == NULL) {
        fail("--gguf '%s' is not one of f32, f16, bf16, q8_0, q4_0, q4_1,"
             " q5_0, q5_1, q6_k, q4_k_m, q5_k_m, iq4_xs, q3_k_m", a->type);
        return 2;
    }
    memset(&g, 0, sizeof(g));
    g.a = a;
    g.cfg = cfg;
    g.tc = tc;
    g.hc = hc;
    g.omni = cfg->family == CLEF_FAMILY_OMNI;
    clef_error_clear(&err);
    if (clef_text_tensors(tc, on_spec, &g) != 0
        || clef_head_tensors(hc, on_spec, &g) != 0)
    {
        fail("out of memory");
        goto done;
    }
    n_model = g.n;
    if (a->mmproj != NULL && !vc->present) {
        fail("--mmproj: the model has no vision tower");
        goto done;
    }
    if (a->mmproj != NULL && vc->present
        && (clef_vision_tensors(vc, on_spec, &g) != 0
            || (g.omni && cfg->audio.present
                && clef_audio_tensors(&cfg->audio, on_spec, &g) != 0)))
    {
        fail("out of memory");
        goto done;
    }
    assign_types(&g, k, 0, n_model, 0);
    assign_types(&g, k, n_model, g.n - n_model, 1);
    if (unwritable(&g) != NULL) {
        fail("--gguf %s: %s has no quantizer here (write it with --sparse)",
             k->name, unwritable(&g)->name);
        goto done;
    }

    w = clef_gguf_writer_new();
    if (w == NULL
        || (g.omni ? omni_meta(w, &g, k, &err) : text_meta(w, &g, k, &err))
           != 0)
    {
        fail("%s", w == NULL ? "out of memory" : err.message);
        goto done;
    }
    if (write_file(&g, w, 0, n_model, a->out, &bytes) != 0) {
        goto done;
    }
    clef_gguf_writer_free(w);
    w = NULL;
    if (g.n > n_model) {
        w = clef_gguf_writer_new();
        if (w == NULL || tower_meta(w, &g, k, vc, &err) != 0) {
            fail("%s", w == NULL ? "out of memory" : err.message);
            goto done;
        }
        if (write_file(&g, w, n_model, g.n - n_model, a->mmproj,
                       &tower_bytes) != 0)
        {
            goto done;
        }
    }
    printf("%s: %s, vocab %d, hidden %d, %d layers, %d tensors, %llu bytes of"
           " tensor data%s", a->out, k->name, tc->vocab_size, tc->hidden_size,
           tc->num_hidden_layers, n_model, (unsigned long long) bytes,
           a->sparse ? " (sparse)" : "");
    if (g.n > n_model) {
        printf("; %s: the tower, %d tensors, %llu bytes", a->mmproj,
               g.n - n_model, (unsigned long long) tower_bytes);
    }
    printf("\n");
    rc = 0;

done:
    clef_gguf_writer_free(w);
    free(g.t);
    return rc;
}
