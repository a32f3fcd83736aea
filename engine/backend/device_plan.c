/*
 * The CUDA backend's memory plan (device_plan.h).  Every size here is the
 * one cuda/backend.c and cuda/weights.c allocate: they call these
 * functions rather than spell the sizes again.
 */
#include "backend/device_plan.h"

#include <stdio.h>
#include <string.h>

#include "model/roles.h"
#include "model/shard.h"

static int
round_up(int v, int unit)
{
    return (v + unit - 1) / unit * unit;
}

static int
imax(int a, int b)
{
    return a > b ? a : b;
}

void
clef_devplan_rank_of(const clef_text_config *tc, const clef_head_config *hc,
    int tp, int rank, clef_devplan_rank *r)
{
    clef_shard  s;
    int         l;

    memset(r, 0, sizeof(*r));
    r->rank = rank;
    r->tp = tp > 1 ? tp : 1;
    r->H = tc->hidden_size;
    r->I = tc->intermediate_size;
    r->V = tc->vocab_size;
    r->L = tc->num_hidden_layers;
    r->Hq = tc->num_attention_heads;
    r->Hkv = tc->num_key_value_heads;
    r->hd = tc->head_dim;
    r->Hk = tc->linear_num_key_heads;
    r->Hv = tc->linear_num_value_heads;
    r->dk = tc->linear_key_head_dim;
    r->dv = tc->linear_value_head_dim;
    r->Kc = tc->linear_conv_kernel_dim;
    r->gated = tc->attn_output_gate;
    r->rot = (int) (r->hd * tc->partial_rotary_factor);
    r->E = tc->num_experts;
    r->Ke = tc->num_experts_per_tok;
    r->Im = tc->moe_intermediate_size;
    r->W = hc->width;
    r->F = hc->feedforward;
    r->heads = hc->heads;
    for (l = 0; l < r->L && l < CLEF_MAX_LAYERS; l++) {
        r->any_moe |= tc->layer[l].mlp == CLEF_MLP_MOE;
        if (tc->layer_full[l]) {
            r->n_attn++;
        } else {
            r->n_gdn++;
        }
    }

    /* the rank's share (model/shard.h): its heads and columns */
    if (r->tp > 1) {
        clef_shard_of(tc, r->tp, rank, &s);
        r->Hq = s.q_heads;
        r->Hkv = s.kv_heads;
        r->Hk = s.k_heads;
        r->Hv = s.v_heads;
        r->I = s.inter;
    }
    r->Cconv = 2 * r->Hk * r->dk + r->Hv * r->dv;
    r->q_rows = r->Hq * r->hd * (r->gated ? 2 : 1);
    r->gdn_rows = round_up(r->Cconv + r->Hv * r->dv + 2 * r->Hv, 8);
    r->attn_rows = round_up(r->q_rows + 2 * r->Hkv * r->hd, 8);
    r->proj_ld = imax(2 * r->I, imax(r->n_gdn ? r->gdn_rows : 0,
                                     r->n_attn ? r->attn_rows : 0));
    r->mix_ld = imax(8, imax(r->n_gdn ? r->Cconv : 0,
                             r->n_attn ? (r->Hq + r->Hkv) * r->hd : 0));
    r->act_ld = imax(r->I, imax(r->n_gdn ? r->Hv * r->dv : 0,
                                r->n_attn ? r->Hq * r->hd : 0));
}

size_t
clef_devplan_ws_sizes(const clef_devplan_rank *r, const clef_devplan_caps *c,
    size_t sz[CLEF_WS_COUNT])
{
    size_t  T = (size_t) c->T, N = (size_t) c->N, Q = (size_t) c->Q;
    size_t  NR = (size_t) c->NR, NQ = N > Q ? N : Q;
    size_t  H = (size_t) r->H, W = (size_t) r->W, F = (size_t) r->F;
    size_t  E = (size_t) r->E, K = (size_t) r->Ke, Im = (size_t) r->Im;
    size_t  d = r->heads > 0 ? (size_t) (r->W / r->heads) : 0, total = 0;
    int     i;

    memset(sz, 0, CLEF_WS_COUNT * sizeof(size_t));
    sz[CLEF_WS_HID] = T * H * 2;
    sz[CLEF_WS_XN] = T * H * 2;
    sz[CLEF_WS_PROJ] = T * (size_t) r->proj_ld * 2;
    sz[CLEF_WS_MIX] = T * (size_t) r->mix_ld * 2;
    sz[CLEF_WS_ACT] = T * (size_t) r->act_ld * 2;
    if (r->any_moe) {
        sz[CLEF_WS_R_LOGITS] = T * E * 4;
        sz[CLEF_WS_R_WEIGHT] = T * K * 4;
        sz[CLEF_WS_R_EXPERT] = T * K * 4;
        sz[CLEF_WS_R_SLOT] = T * K * 4;
        sz[CLEF_WS_R_ROW] = T * K * 4;
        sz[CLEF_WS_R_COUNT] = E * 4;
        sz[CLEF_WS_R_OFFSET] = (E + 1) * 4;
        sz[CLEF_WS_R_TILES] = (E + 1) * 4;
        sz[CLEF_WS_M_GU] = T * K * 2 * Im * 2;
        sz[CLEF_WS_M_ACT] = T * K * Im * 2;
        sz[CLEF_WS_M_OUT] = T * K * H * 2;
    }
    /* the head runs on rank 0 alone */
    if (r->rank == 0) {
        sz[CLEF_WS_X] = T * H * 4;
        sz[CLEF_WS_M] = T * W * 4;
        sz[CLEF_WS_MN] = T * W * 4;
        sz[CLEF_WS_KV] = T * 2 * W * 4;
        sz[CLEF_WS_QV] = Q * H * 4;
        sz[CLEF_WS_CTX] = N * H * 4;
        sz[CLEF_WS_GLOB] = NR * H * 4;
        sz[CLEF_WS_LEX] = N * H * 4;
        sz[CLEF_WS_QVP] = Q * 2 * W * 4;
        sz[CLEF_WS_GP] = NR * W * 4;
        sz[CLEF_WS_R] = N * W * 4;
        sz[CLEF_WS_RN] = NQ * W * 4;
        sz[CLEF_WS_QH] = NQ * 3 * W * 4;
        sz[CLEF_WS_A] = NQ * W * 4;
        sz[CLEF_WS_FF] = NQ * F * 4;
        sz[CLEF_WS_FQ] = Q * W * 4;
        sz[CLEF_WS_RO] = N * W * 4;
        sz[CLEF_WS_Z] = N * 4 * W * 4;
        sz[CLEF_WS_HS] = N * W * 4;
        sz[CLEF_WS_PART] = (size_t) c->items * (size_t) r->heads
                           * CLEF_DEVPLAN_GATTN_GQ * (d + 2) * 4;
        sz[CLEF_WS_LOGITS] = N * 4;
    }
    for (i = 0; i < CLEF_WS_COUNT; i++) {
        total += (sz[i] + CLEF_DEVPLAN_ALIGN - 1) / CLEF_DEVPLAN_ALIGN
                 * CLEF_DEVPLAN_ALIGN;
    }
    return total;
}

int
clef_devplan_grow(int cap, int need, int unit)
{
    if (need <= cap) {
        return cap;
    }
    return imax(round_up(need, unit), cap + cap / 4);
}

void
clef_devplan_caps_round(clef_devplan_caps *c)
{
    c->T = clef_devplan_grow(0, c->T, CLEF_DEVPLAN_UNIT_T);
    c->N = clef_devplan_grow(0, c->N, CLEF_DEVPLAN_UNIT_N);
    c->Q = clef_devplan_grow(0, c->Q, CLEF_DEVPLAN_UNIT_Q);
    c->NR = clef_devplan_grow(0, c->NR, CLEF_DEVPLAN_UNIT_NR);
    c->items = clef_devplan_grow(0, c->items, CLEF_DEVPLAN_UNIT_ITEMS);
}

static int
ceil_div(int a, int b)
{
    return (a + b - 1) / b;
}

void
clef_devplan_caps_for(int64_t tokens, int records, clef_devplan_caps *c)
{
    int  T, NR, per, len, og, fm, fs;

    /* no batch holds more (cuda/plan.c refuses it) */
    T = (int) (tokens < CLEF_DEVPLAN_MAX_TOKENS ? tokens
                                                : CLEF_DEVPLAN_MAX_TOKENS);
    NR = records < T ? records : T;
    NR = NR > 0 ? NR : 1;
    c->T = T;
    c->NR = NR;
    c->N = ceil_div(T, CLEF_DEVPLAN_TOKENS_PER_OPTION);
    c->Q = c->N;
    /* records of equal length, each with its share of options and
     * questions: the work items cuda/plan.c counts for them */
    len = ceil_div(T, NR);
    per = ceil_div(c->N, NR);
    og = ceil_div(per, CLEF_DEVPLAN_GATTN_GQ)
         * imax(1, ceil_div(len, CLEF_DEVPLAN_GATTN_SPLIT));
    fm = og;                                /* questions as many as options */
    fs = ceil_div(per, CLEF_DEVPLAN_GATTN_GQ)
         * imax(1, ceil_div(per, CLEF_DEVPLAN_GATTN_SPLIT));
    c->items = NR * imax(og, imax(fm, fs));
    clef_devplan_caps_round(c);
}

static int64_t
numel(clef_role role, const clef_dims *d)
{
    return clef_role_numel(role, d);
}

/* A layer's bytes on the rank (cuda/weights.c, upload_layer). */
static int64_t
layer_bytes(const clef_text_config *tc, const clef_devplan_rank *r,
    const clef_dims *d, int l)
{
    int64_t  H = r->H, b;

    b = 2 * numel(CLEF_ROLE_INPUT_NORM, d) * 2;
    if (tc->layer[l].mlp == CLEF_MLP_MOE) {
        b += numel(CLEF_ROLE_MOE_ROUTER, d) * 4
             + (int64_t) r->E * 3 * r->Im * H * 2;
    } else {
        b += 2 * (int64_t) r->I * H * 2 + H * r->I * 2;
    }
    if (tc->layer_full[l]) {
        b += (int64_t) r->attn_rows * H * 2 + H * r->Hq * r->hd * 2
             + (numel(CLEF_ROLE_ATTN_Q_NORM, d)
                + numel(CLEF_ROLE_ATTN_K_NORM, d)) * 2;
    } else {
        b += (int64_t) r->gdn_rows * H * 2 + H * r->Hv * r->dv * 2
             + numel(CLEF_ROLE_GDN_NORM, d) * 4
             + (int64_t) r->Cconv * r->Kc * 2 + 2 * (int64_t) r->Hv * 4;
    }
    return b;
}

/* The joint head in fp32, its three scalars kept on the host. */
static int
head_tensor(const clef_tensor_spec *s, void *ctx)
{
    int64_t  *bytes = ctx, n = 1;
    int       i;

    if (s->ndim == 0) {
        return 0;
    }
    for (i = 0; i < s->ndim; i++) {
        n *= s->shape[i];
    }
    *bytes += n * 4;
    return 0;
}

int64_t
clef_devplan_weights(const clef_text_config *tc, const clef_head_config *hc,
    const clef_devplan_rank *r)
{
    clef_dims  d;
    int64_t    b, head = 0;
    int        l;

    memset(&d, 0, sizeof(d));
    clef_dims_text(&d, tc);
    clef_dims_head(&d, hc);
    /* the embedding on every rank, RoPE's inverse frequencies */
    b = (int64_t) r->V * r->H * 2
        + (int64_t) (r->rot / 2 > 0 ? r->rot / 2 : 1) * 4;
    for (l = 0; l < r->L && l < CLEF_MAX_LAYERS; l++) {
        b += layer_bytes(tc, r, &d, l);
    }
    if (r->rank == 0) {
        b += numel(CLEF_ROLE_FINAL_NORM, &d) * 2;
        if (!tc->tie_word_embeddings) {
            b += (int64_t) r->V * r->H * 2;
        }
        (void) clef_head_tensors(hc, head_tensor, &head);
        b += head;
    }
    return b;
}

void
clef_devplan_of(const clef_devplan_rank *r, int64_t weights, int64_t tokens,
    int records, clef_devplan *p)
{
    clef_devplan_caps  c;
    size_t             sz[CLEF_WS_COUNT];

    clef_devplan_caps_for(tokens, records, &c);
    p->weights = weights;
    p->workspace = (int64_t) clef_devplan_ws_sizes(r, &c, sz);
    p->fixed = CLEF_DEVPLAN_GEMM_WS;
    p->total = p->weights + p->workspace + p->fixed;
    p->batch_tokens = tokens;
}

int64_t
clef_devplan_fit_tokens(const clef_devplan_rank *r, int64_t weights,
    int64_t tokens, int records, int64_t budget)
{
    clef_devplan  p;
    int64_t       lo = 0, hi = tokens / CLEF_DEVPLAN_UNIT_T, mid;

    /* the workspace grows with the tokens: the largest multiple of the
     * unit that fits, by bisection */
    while (lo < hi) {
        mid = (lo + hi + 1) / 2;
        clef_devplan_of(r, weights, mid * CLEF_DEVPLAN_UNIT_T, records, &p);
        if (p.total <= budget) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    return lo * CLEF_DEVPLAN_UNIT_T;
}

/* bytes as "16.9 GB", or "63.6 MB" below a GB */
const char *
clef_devplan_size_text(int64_t bytes, char *buf, size_t n)
{
    if (bytes >= 1000000000) {
        snprintf(buf, n, "%.1f GB", (double) bytes / 1e9);
    } else {
        snprintf(buf, n, "%.1f MB", (double) bytes / 1e6);
    }
    return buf;
}

const char *
clef_devplan_describe(const clef_devplan *p, char *buf, size_t n)
{
    char  t[32], w[32], s[32], f[32];

    snprintf(buf, n, "%s on each GPU (weights %s, workspace %s at "
             "max_batch_tokens=%lld, cuBLASLt %s)",
             clef_devplan_size_text(p->total, t, sizeof(t)),
             clef_devplan_size_text(p->weights, w, sizeof(w)),
             clef_devplan_size_text(p->workspace, s, sizeof(s)),
             (long long) p->batch_tokens,
             clef_devplan_size_text(p->fixed, f, sizeof(f)));
    return buf;
}

const char *
clef_devplan_refusal(const clef_devplan_rank *r, int64_t weights, int records,
    const clef_devplan *p, int64_t budget, const char *against, char *buf,
    size_t n)
{
    int64_t  fit;
    char     plan[160];
    int      len;

    if (p->total <= budget) {
        return NULL;
    }
    len = snprintf(buf, n, "needs %s but %s",
                   clef_devplan_describe(p, plan, sizeof(plan)), against);
    /* the weights fit: the batch the memory left allows */
    fit = clef_devplan_fit_tokens(r, weights, p->batch_tokens, records, budget);
    if (fit > 0 && len > 0 && (size_t) len < n) {
        snprintf(buf + len, n - (size_t) len, "; max_batch_tokens=%lld fits",
                 (long long) fit);
    }
    return buf;
}
