/*
 * The forward pass as a sequence of launches on the backend's stream: the
 * Qwen3.5 backbone (docs/spec/backbone.md §3) in bf16 with fp32
 * accumulation, then the joint schema head (docs/spec/encoder-and-head.md
 * §5) in fp32.  Nothing here waits for the device, so the whole sequence
 * can be captured into a CUDA graph.
 */
#include <string.h>

#include "cuda_backend.h"
#include "tower.h"

int
cuda_check(cudaError_t e, const char *what, clef_error *err)
{
    if (e == cudaSuccess) {
        return 0;
    }
    /* errors that leave the device's context unusable: the engine reopens
     * the replica (backend.h, "device_fault") */
    switch (e) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorECCUncorrectable:
    case cudaErrorLaunchTimeout:
        return clef_error_fail(err, CLEF_E_DEVICE_FAULT, "%s: %s", what,
            cudaGetErrorString(e));
    default:
        return clef_error_fail(err, CLEF_E_INTERNAL, "%s: %s", what,
            cudaGetErrorString(e));
    }
}

void
cuda_mark(clef_backend *b, int type)
{
    if (b->profile && b->n_marks < CUDA_MARKS_MAX) {
        cudaEventRecord(b->ev[b->n_marks], b->stream);
        b->mark_type[b->n_marks] = type;
        b->n_marks++;
    }
}

#define GEMM(mode, rows, n, k, Wt, ldw, Xp, ldx, Dp, ldd, beta, bias)          \
    do {                                                                      \
        if (clef_gemm_run(b->gemm, s, (mode), (rows), (n), (k), (Wt), (ldw),  \
                          (Xp), (ldx), (Dp), (ldd), (beta), (bias), err) != 0) \
        {                                                                     \
            return -1;                                                        \
        }                                                                     \
    } while (0)

/* Layer l's mixer on one rank: input norm, the rank's heads, and its
 * row-parallel share of the output projection added into hid with beta
 * (1: hid += the product, the residual; 0: hid = the product, a partial
 * sum for the all-reduce). */
static int
layer_mixer(clef_backend *b, const cuda_plan *p, int l, float beta,
    clef_error *err)
{
    cudaStream_t       s = b->stream;
    cuda_ws           *w = &b->ws;
    const int32_t     *meta = b->dmeta;
    const int          T = p->T, H = b->H;
    const cuda_layer  *ly = &b->layers[l];

    CK(clef_k_rmsnorm_form(w->hid, ly->norm.input, b->plain_norm, w->xn, T,
                           H, b->eps, s), "input norm");
    if (ly->mixer == CLEF_MIXER_LINEAR) {
        clef_k_gdn_args  g;

        GEMM(CLEF_GEMM_BF16, T, b->gdn_rows, H, ly->gdn.in, H, w->xn, H,
             w->proj, b->proj_ld, 0.0f, NULL);
        CK(clef_k_conv_silu(w->proj, b->proj_ld, ly->gdn.conv_wt, b->Kc,
                            meta + p->o_pos, w->mix, T, b->Cconv, s), "conv");
        g.u = w->mix;
        g.ldu = b->Cconv;
        g.ba = w->proj;
        g.ldba = b->proj_ld;
        g.b_off = b->b_off;
        g.a_off = b->a_off;
        g.neg_a = ly->gdn.neg_a;
        g.dt_bias = ly->gdn.dt_bias;
        g.cu = meta + p->o_cu;
        g.n_records = p->NR;
        g.o = w->act;
        g.Hk = b->Hk;
        g.Hv = b->Hv;
        g.dk = b->dk;
        g.dv = b->dv;
        CK(clef_k_gdn(&g, s), "gated delta rule");
        CK(clef_k_gated_norm(w->act, w->proj + b->z_off, b->proj_ld,
                             ly->gdn.norm, T, b->Hv, b->dv, b->eps, s),
           "gated norm");
        GEMM(CLEF_GEMM_BF16, T, H, b->Hv * b->dv, ly->gdn.out, b->Hv * b->dv,
             w->act, b->Hv * b->dv, w->hid, H, beta, NULL);
    } else {
        clef_k_rope_args  r;
        clef_k_attn_args  a;
        clef_bf16        *kbuf = w->mix + (size_t) T * b->Hq * b->hd;

        memset(&r, 0, sizeof(r));
        memset(&a, 0, sizeof(a));
        GEMM(CLEF_GEMM_BF16, T, b->attn_rows, H, ly->attn.in, H, w->xn, H,
             w->proj, b->proj_ld, 0.0f, NULL);
        r.proj = w->proj;
        r.ldp = b->proj_ld;
        r.q_hstride = b->gated ? 2 * b->hd : b->hd;
        r.k_off = b->k_off;
        r.q_norm = ly->attn.q_norm;
        r.k_norm = ly->attn.k_norm;
        r.pos = meta + p->o_pos;
        r.inv_freq = b->inv_freq;
        r.plain_norm = b->plain_norm;
        cuda_towers_rope(b, &r);        /* M-RoPE with images (tower.c) */
        r.rot = b->rot;
        r.q = w->mix;
        r.k = kbuf;
        r.T = T;
        r.Hq = b->Hq;
        r.Hkv = b->Hkv;
        r.hd = b->hd;
        r.eps = b->eps;
        CK(clef_k_qk_norm_rope(&r, s), "q/k norm and rope");

        a.q = w->mix;
        a.ldq = b->Hq * b->hd;
        a.q_hs = b->hd;
        a.k = kbuf;
        a.ldk = b->Hkv * b->hd;
        a.k_hs = b->hd;
        a.v = w->proj + b->v_off;
        a.ldv = b->proj_ld;
        a.v_hs = b->hd;
        a.gate = b->gated ? w->proj + b->hd : NULL;
        a.ldg = b->proj_ld;
        a.g_hs = 2 * b->hd;
        a.out = w->act;
        a.ldo = b->Hq * b->hd;
        a.o_hs = b->hd;
        a.tiles = meta + p->o_tiles;
        a.n_tiles = p->n_tiles;
        a.Hq = b->Hq;
        a.Hkv = b->Hkv;
        a.hd = b->hd;
        CK(clef_k_attention(&a, s), "attention");
        GEMM(CLEF_GEMM_BF16, T, H, b->Hq * b->hd, ly->attn.out, b->Hq * b->hd,
             w->act, b->Hq * b->hd, w->hid, H, beta, NULL);
    }
    return 0;
}

/* The routed experts of xn into hid (tp = 1: the whole layer): the
 * router, the routing and grouping, one grouped GEMM of every expert's
 * gate | up over its tokens' rows, SwiGLU over the grouped rows, one of
 * down_proj, each token's weighted sum (moe.cu). */
static int
layer_moe(clef_backend *b, const cuda_plan *p, const cuda_moe *m,
    clef_error *err)
{
    cudaStream_t          s = b->stream;
    cuda_ws              *w = &b->ws;
    const int             T = p->T, H = b->H, Im = b->Im, rows = T * b->Ke;
    clef_k_moe_args       r;
    clef_k_moe_gemm_args  g;

    CK(clef_k_moe_router(w->xn, m->router, w->r_logits, T, b->E, H, s),
       "router");
    r.logits = w->r_logits;
    r.T = T;
    r.E = b->E;
    r.k = b->Ke;
    r.renorm = b->renorm;
    r.expert = w->r_expert;
    r.weight = w->r_weight;
    r.count = w->r_count;
    r.offset = w->r_offset;
    r.tile_off = w->r_tiles;
    r.slot = w->r_slot;
    r.row_token = w->r_row;
    CK(clef_k_moe_route(&r, s), "routing");

    g.X = w->xn;
    g.ldx = H;
    g.row_token = w->r_row;
    g.W = m->gate_up;
    g.N = 2 * Im;
    g.K = H;
    g.D = w->m_gu;
    g.ldd = 2 * Im;
    g.offset = w->r_offset;
    g.tile_off = w->r_tiles;
    g.E = b->E;
    g.max_tiles = clef_k_moe_max_tiles(T, b->Ke, b->E);
    CK(clef_k_moe_gemm(&g, s), "experts' gate and up");
    CK(clef_k_swiglu(w->m_gu, 2 * Im, w->m_act, rows, Im, s), "experts' swiglu");
    g.X = w->m_act;
    g.ldx = Im;
    g.row_token = NULL;
    g.W = m->down;
    g.N = H;
    g.K = Im;
    g.D = w->m_out;
    g.ldd = H;
    CK(clef_k_moe_gemm(&g, s), "experts' down");
    CK(clef_k_moe_combine(w->m_out, H, w->r_slot, w->r_weight, T, b->Ke,
                          w->hid, H, s), "experts' sum");
    return 0;
}

/* Layer l's MLP on one rank: post norm, then by its kind: the routed
 * experts, or the dense MLP's intermediate columns and its share of
 * down_proj into hid with beta (as layer_mixer). */
static int
layer_mlp(clef_backend *b, const cuda_plan *p, int l, float beta,
    clef_error *err)
{
    cudaStream_t       s = b->stream;
    cuda_ws           *w = &b->ws;
    const int          T = p->T, H = b->H;
    const cuda_layer  *ly = &b->layers[l];

    CK(clef_k_rmsnorm_form(w->hid, ly->norm.post, b->plain_norm, w->xn, T, H,
                           b->eps, s), "post norm");
    if (ly->mlp.kind == CLEF_MLP_MOE) {
        return layer_moe(b, p, &ly->mlp.moe, err);
    }
    GEMM(CLEF_GEMM_BF16, T, 2 * b->I, H, ly->mlp.dense.gate_up, H, w->xn, H,
         w->proj, b->proj_ld, 0.0f, NULL);
    CK(clef_k_swiglu(w->proj, b->proj_ld, w->act, T, b->I, s), "swiglu");
    GEMM(CLEF_GEMM_BF16, T, H, b->I, ly->mlp.dense.down, b->I, w->act, b->I,
         w->hid, H, beta, NULL);
    return 0;
}

/*
 * The backbone over the replica's ranks.  At tp = 1 (no communicator) this
 * is one rank, beta 1, no collective: the launch sequence of a single GPU.
 * At tp > 1 every rank holds the residual stream hid, replicated: each
 * layer half runs on every rank (its device current, its stream), rank 0
 * adding its partial product to the residual and the others writing
 * theirs in place of it, and the in-place all-reduce of hid then leaves
 * residual + the sum of the partials on every rank, bit-identical across
 * ranks (comm.h): the next norm reads it on each rank's own stream.
 * The all-reduce is bf16, the residual stream's own precision, as vLLM and
 * SGLang reduce; each partial is rounded to bf16 once before the sum.
 */
int
cuda_backbone(clef_backend *b, const cuda_plan *p, clef_error *err)
{
    const int  T = p->T, H = b->H;
    int        l, r, cur = b->device;

    cuda_mark(b, -1);
    for (r = 0; r < b->tp; r++) {
        clef_backend  *k = b->ranks[r];

        if (cuda_rank_device(b, r, &cur, err) != 0) {
            return -1;
        }
        CK(clef_k_embed(k->dmeta + p->o_ids, k->embed, k->ws.hid, T, H, k->stream),
           "embedding");
        /* media: each tower's rows over its items' pad tokens (tower.c;
         * rank 0 only, which is every rank when media run: tp = 1) */
        if (r == 0 && cuda_towers_embed(k, err) != 0) {
            return -1;
        }
    }
    cuda_mark(b, CLEF_CUDA_PROF_EMBED);

    for (l = 0; l < b->L; l++) {
        for (r = 0; r < b->tp; r++) {
            if (cuda_rank_device(b, r, &cur, err) != 0
                || layer_mixer(b->ranks[r], p, l, r == 0 ? 1.0f : 0.0f, err) != 0)
            {
                return -1;
            }
        }
        cuda_mark(b, b->layers[l].mixer == CLEF_MIXER_FULL ? CLEF_CUDA_PROF_ATTN
                                                           : CLEF_CUDA_PROF_GDN);
        if (b->comm != NULL) {
            if (cuda_all_reduce(b, T, err) != 0) {
                return -1;
            }
            cuda_mark(b, CLEF_CUDA_PROF_COMM);
            cur = -1;           /* whatever device the collective left current */
        }

        for (r = 0; r < b->tp; r++) {
            if (cuda_rank_device(b, r, &cur, err) != 0
                || layer_mlp(b->ranks[r], p, l, r == 0 ? 1.0f : 0.0f, err) != 0)
            {
                return -1;
            }
        }
        cuda_mark(b, CLEF_CUDA_PROF_MLP);
        if (b->comm != NULL) {
            if (cuda_all_reduce(b, T, err) != 0) {
                return -1;
            }
            cuda_mark(b, CLEF_CUDA_PROF_COMM);
            cur = -1;           /* whatever device the collective left current */
        }
        /* DeepStack (Clef Omni): level l of the images' features over
         * their pad tokens (rank 0, which is every rank with images) */
        if (cuda_towers_layer(b, l, &cur, err) != 0) {
            return -1;
        }
    }
    /* the head runs on rank 0 alone, which holds the whole residual */
    if (cuda_rank_device(b, 0, &cur, err) != 0) {
        return -1;
    }
    CK(clef_k_rmsnorm_form(b->ws.hid, b->final_norm, b->plain_norm, b->ws.xn,
                           T, H, b->eps, b->stream), "final norm");
    return 0;
}

/* One nn.MultiheadAttention: q from xq [rows][W], k/v from the rows of kv
 * [.][2W] (already projected), output projection added into y. */
static int
mha_out(clef_backend *b, const cuda_mha *m, float *y, int rows, clef_error *err)
{
    cudaStream_t  s = b->stream;
    int           W = b->W;

    GEMM(CLEF_GEMM_F32, rows, W, W, m->out_w, W, b->ws.A, W, y, W, 1.0f, m->out_b);
    return 0;
}

static int
gattn(clef_backend *b, const cuda_plan *p, const float *q, int ldq,
    const float *k, const float *v, int ldkv, size_t o_g, size_t o_i,
    size_t o_gi, int ng, int ni, clef_error *err)
{
    clef_k_gattn_args  a;

    a.q = q;
    a.ldq = ldq;
    a.k = k;
    a.ldk = ldkv;
    a.v = v;
    a.ldv = ldkv;
    a.o = b->ws.A;
    a.ldo = b->W;
    a.groups = b->dmeta + o_g;
    a.n_groups = ng;
    a.items = b->dmeta + o_i;
    a.n_items = ni;
    a.group_items = b->dmeta + o_gi;
    a.part = b->ws.part;
    a.heads = b->heads;
    a.d = b->W / b->heads;
    (void) p;
    return cuda_check(clef_k_group_attention(&a, b->stream), "head attention", err);
}

/* A norm-first feed-forward block over n rows of x: x += W2 gelu(W1
 * LN(x) + b1) + b2, through Rn and FF. */
static int
head_ffn(clef_backend *b, float *x, int n, const float *n_w, const float *n_b,
    const float *w1, const float *b1, const float *w2, const float *b2,
    const char *norm, clef_error *err)
{
    cudaStream_t  s = b->stream;
    cuda_ws      *w = &b->ws;
    const int     W = b->W, F = b->F;

    CK(clef_k_layernorm(x, 0, W, w->Rn, W, n_w, n_b, n, W, 1e-5f, s), norm);
    GEMM(CLEF_GEMM_F32, n, F, W, w1, W, w->Rn, W, w->FF, F, 0.0f, NULL);
    CK(clef_k_bias_gelu(w->FF, F, b1, n, F, s), "gelu");
    GEMM(CLEF_GEMM_F32, n, W, F, w2, F, w->FF, F, x, W, 1.0f, b2);
    return 0;
}

/* One evidence-routing layer: the option queries R attend to the
 * memory M. */
static int
head_route(clef_backend *b, const cuda_plan *p, const cuda_route *r,
    clef_error *err)
{
    cudaStream_t  s = b->stream;
    cuda_ws      *w = &b->ws;
    const int     T = p->T, N = p->N, W = b->W;
    const float   eps = 1e-5f;

    CK(clef_k_layernorm(w->M, 0, W, w->Mn, W, r->mn_w, r->mn_b, T, W, eps, s),
       "memory norm");
    GEMM(CLEF_GEMM_TF32, T, 2 * W, W, r->att.in_w + (size_t) W * W, W, w->Mn, W,
         w->KV, 2 * W, 0.0f, r->att.in_b + W);
    CK(clef_k_layernorm(w->R, 0, W, w->Rn, W, r->qn_w, r->qn_b, N, W, eps, s),
       "query norm");
    GEMM(CLEF_GEMM_F32, N, W, W, r->att.in_w, W, w->Rn, W, w->Qh, W, 0.0f,
         r->att.in_b);
    if (gattn(b, p, w->Qh, W, w->KV, w->KV + W, 2 * W, p->o_og_g, p->o_og_i,
              p->o_og_gi, p->og_groups, p->og_items, err) != 0
        || mha_out(b, &r->att, w->R, N, err) != 0)
    {
        return -1;
    }
    return head_ffn(b, w->R, N, r->fn_w, r->fn_b, r->ff0_w, r->ff0_b,
                    r->ff3_w, r->ff3_b, "feedforward norm", err);
}

/* The fields: each question's options summed into its field Fq. */
static int
head_fields(clef_backend *b, const cuda_plan *p, clef_error *err)
{
    cuda_ws            *w = &b->ws;
    const cuda_head_w  *h = &b->head;
    const int32_t      *meta = b->dmeta;
    const int           W = b->W;
    clef_k_fields_args  fa;

    fa.R = w->R;
    fa.ldr = W;
    fa.B = w->QVP + W;
    fa.ldb = 2 * W;
    fa.G = w->GP;
    fa.ldgp = W;
    fa.type_emb = h->type_emb;
    fa.sum_w = h->sum_w;
    fa.sum_b = h->sum_b;
    fa.q_opt_off = meta + p->o_qoff;
    fa.q_rec = meta + p->o_qrec;
    fa.q_type = meta + p->o_qtype;
    fa.F = w->Fq;
    fa.ldf = W;
    fa.Q = p->Q;
    fa.W = W;
    fa.max_opts = p->max_opts;
    fa.eps = 1e-5f;
    return cuda_check(clef_k_fields(&fa, b->stream), "fields", err);
}

/* One decoder layer (norm first) over the fields; the memory is the raw
 * projection M. */
static int
head_decoder(clef_backend *b, const cuda_plan *p, const cuda_dec *d,
    clef_error *err)
{
    cudaStream_t  s = b->stream;
    cuda_ws      *w = &b->ws;
    const int     T = p->T, Q = p->Q, W = b->W;
    const float   eps = 1e-5f;

    CK(clef_k_layernorm(w->Fq, 0, W, w->Rn, W, d->n1_w, d->n1_b, Q, W, eps, s),
       "norm1");
    GEMM(CLEF_GEMM_F32, Q, 3 * W, W, d->sa.in_w, W, w->Rn, W, w->Qh, 3 * W, 0.0f,
         d->sa.in_b);
    if (gattn(b, p, w->Qh, 3 * W, w->Qh + W, w->Qh + 2 * W, 3 * W, p->o_fs_g,
              p->o_fs_i, p->o_fs_gi, p->fs_groups, p->fs_items, err) != 0
        || mha_out(b, &d->sa, w->Fq, Q, err) != 0)
    {
        return -1;
    }

    CK(clef_k_layernorm(w->Fq, 0, W, w->Rn, W, d->n2_w, d->n2_b, Q, W, eps, s),
       "norm2");
    GEMM(CLEF_GEMM_F32, Q, W, W, d->ca.in_w, W, w->Rn, W, w->Qh, W, 0.0f,
         d->ca.in_b);
    GEMM(CLEF_GEMM_TF32, T, 2 * W, W, d->ca.in_w + (size_t) W * W, W, w->M, W,
         w->KV, 2 * W, 0.0f, d->ca.in_b + W);
    if (gattn(b, p, w->Qh, W, w->KV, w->KV + W, 2 * W, p->o_fm_g, p->o_fm_i,
              p->o_fm_gi, p->fm_groups, p->fm_items, err) != 0
        || mha_out(b, &d->ca, w->Fq, Q, err) != 0)
    {
        return -1;
    }

    return head_ffn(b, w->Fq, Q, d->n3_w, d->n3_b, d->l1_w, d->l1_b, d->l2_w,
                    d->l2_b, "norm3", err);
}

/* Scores: F = field_norm(fields) in Rn, Ro = option_norm(R), the scorer's
 * hidden layer, then each option's logit. */
static int
head_scores(clef_backend *b, const cuda_plan *p, clef_error *err)
{
    cudaStream_t        s = b->stream;
    cuda_ws            *w = &b->ws;
    const cuda_head_w  *h = &b->head;
    const int32_t      *meta = b->dmeta;
    const int           N = p->N, Q = p->Q, W = b->W;
    const float         eps = 1e-5f;
    clef_k_score_args   sa;

    CK(clef_k_layernorm(w->Fq, 0, W, w->Rn, W, h->field_w, h->field_b, Q, W, eps, s),
       "field norm");
    CK(clef_k_layernorm(w->R, 0, W, w->Ro, W, h->opt_w, h->opt_b, N, W, eps, s),
       "option norm");
    CK(clef_k_scorer_input(w->Rn, W, w->Ro, W, meta + p->o_oq, w->Z, N, W, s),
       "scorer input");
    GEMM(CLEF_GEMM_F32, N, W, 4 * W, h->rs0_w, 4 * W, w->Z, 4 * W, w->Hs, W, 0.0f,
         NULL);
    CK(clef_k_bias_gelu(w->Hs, W, h->rs0_b, N, W, s), "gelu");

    sa.qv = w->qv;
    sa.g = w->glob;
    sa.lex = w->lex;
    sa.H = b->H;
    sa.F = w->Rn;
    sa.Ro = w->Ro;
    sa.Hs = w->Hs;
    sa.W = W;
    sa.w3 = h->rs3_w;
    sa.b3 = h->rs3_b;
    sa.o_q = meta + p->o_oq;
    sa.q_rec = meta + p->o_qrec;
    sa.prior_scale = h->prior_scale;
    sa.joint_scale = h->joint_scale;
    sa.gate = h->gate;
    sa.logits = w->logits;
    sa.N = N;
    CK(clef_k_scores(&sa, s), "scores");
    return 0;
}

int
cuda_head(clef_backend *b, const cuda_plan *p, clef_error *err)
{
    cudaStream_t        s = b->stream;
    cuda_ws            *w = &b->ws;
    const cuda_head_w  *h = &b->head;
    const int32_t      *meta = b->dmeta;
    const int           T = p->T, N = p->N, Q = p->Q, NR = p->NR;
    const int           H = b->H, W = b->W;
    float              *QV = w->qv, *CTX = w->ctx, *G = w->glob, *LEX = w->lex;
    const int32_t      *jobs = meta + p->o_jobs;
    const float         eps = 1e-5f;
    int                 i;

    /* Token level: X = LN(hidden), M = X Wm^T, span means. */
    CK(clef_k_layernorm(w->xn, 1, H, w->X, H, h->hn_w, h->hn_b, T, H, eps, s),
       "hidden norm");
    GEMM(CLEF_GEMM_TF32, T, W, H, h->mem_proj, H, w->X, H, w->M, W, 0.0f, NULL);
    /* Span means, one launch per kind of span into a buffer of its own:
     * were they rows of one buffer, the products below would read inputs
     * offset by Q or N rows of H floats, whose alignment (part of the GEMM
     * algorithm's key, gemm.h) would change with the batch. */
    CK(clef_k_span_mean(jobs, Q, w->X, meta + p->o_ids, b->lm_head, QV, H, s),
       "question means");
    CK(clef_k_span_mean(jobs + 3 * (size_t) Q, N, w->X, meta + p->o_ids, b->lm_head,
                        CTX, H, s), "option means");
    CK(clef_k_span_mean(jobs + 3 * (size_t) (Q + N), NR, w->X, meta + p->o_ids,
                        b->lm_head, G, H, s), "last-token rows");
    CK(clef_k_span_mean(jobs + 3 * (size_t) (Q + N + NR), N, w->X, meta + p->o_ids,
                        b->lm_head, LEX, H, s), "option lexical means");

    /* Option queries R = ctx Wc + lex Wl + (qv Woq)[q(o)]. */
    GEMM(CLEF_GEMM_F32, Q, 2 * W, H, h->qv_proj, H, QV, H, w->QVP, 2 * W, 0.0f, NULL);
    GEMM(CLEF_GEMM_F32, NR, W, H, h->glob_proj, H, G, H, w->GP, W, 0.0f, NULL);
    GEMM(CLEF_GEMM_F32, N, W, H, h->ctx_proj, H, CTX, H, w->R, W, 0.0f, NULL);
    GEMM(CLEF_GEMM_F32, N, W, H, h->lex_proj, H, LEX, H, w->R, W, 1.0f, NULL);
    CK(clef_k_add_rows(w->R, W, w->QVP, 2 * W, meta + p->o_oq, N, W, s),
       "option queries");

    /* Evidence routing, the fields, the decoder, the scores. */
    for (i = 0; i < b->n_route; i++) {
        if (head_route(b, p, &h->route[i], err) != 0) {
            return -1;
        }
    }
    if (head_fields(b, p, err) != 0) {
        return -1;
    }
    for (i = 0; i < b->n_dec; i++) {
        if (head_decoder(b, p, &h->dec[i], err) != 0) {
            return -1;
        }
    }
    return head_scores(b, p, err);
}
