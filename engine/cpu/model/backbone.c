#include "cpu/model/backbone.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "cpu/kernels/gemm.h"
#include "cpu/model/weights.h"
#include "cpu/ops/attention.h"
#include "cpu/ops/conv.h"
#include "cpu/ops/embed.h"
#include "cpu/ops/gdn.h"
#include "cpu/ops/mlp.h"
#include "cpu/ops/moe.h"
#include "cpu/ops/norm.h"
#include "cpu/ops/rope.h"
#include "cpu/parallel/rowpar.h"

/* A part starts where every block the arithmetic counts from a record's
 * first token starts (backend.h), and after at least the conv's kernel - 1
 * tokens (the longest a configuration may name is 64) */
_Static_assert(CLEF_PART_ALIGN % CLEF_GDN_CHUNK == 0
               && CLEF_PART_ALIGN % CLEF_ATTN_BLOCK_Q == 0
               && CLEF_PART_ALIGN >= 64 - 1,
               "a part must start at a delta-rule chunk and a query block");

/* Rows of the MLP run at a time: its intermediate activations ([rows][2 I])
 * then stay small whatever the batch. */
#define MLP_TILE  1024

struct clef_cpu_backbone {
    clef_cpu_weights   w;
    clef_cpu_pool     *pool;
    int                any_full, any_gdn, any_moe;

    /* tensor parallelism: the rank's communicator, NULL when unsharded */
    clef_comm         *comm;
    clef_cpu_rowpar    rowpar;         /* how row-parallel products sum */
    int                fail_layer;     /* test hook: fail there, or -1 */

    /* RoPE table for positions [0, rope_positions), grown on demand */
    float             *cos, *sin;
    int64_t            rope_positions;

    double             prof[CLEF_PROF_COUNT];

    void             (*progress)(void *ctx);
    void              *progress_ctx;
};

/* One forward's activations. */
typedef struct {
    float  *x;          /* [T][H] residual stream */
    float  *xn;         /* [T][H] normed input of a mixer or the MLP */
    float  *proj;       /* [T][max(gdn_in_dim, attn_in_dim)] */
    float  *u;          /* [T][qkv_dim] conv output */
    float  *o;          /* [T][max(Hv dv, Hq hd)] mixer output before out_proj */
    float  *beta, *g;   /* [T][Hv] */
    float  *mlp;        /* [MLP_TILE][2 I] */
    /* routed experts, MLP_TILE tokens at a time */
    clef_cpu_moe_routing route;
    float  *logits;     /* [MLP_TILE][E] */
    float  *rows;       /* [MLP_TILE k][H] the tokens grouped by expert */
    float  *hid;        /* [MLP_TILE k][2 I_moe] */
    float  *out;        /* [MLP_TILE k][H] */
    float  *part;       /* [segs][tile][H] a row-parallel product's
                           segment partials (rowpar.h) */
    float  *scratch;    /* per worker */
    float  *gemm;       /* clef_cpu_linear()'s packed rows */
    /* RoPE as attention_prepare reads it: the table by position and the
     * batch's records, or (M-RoPE) a row per token and one "record" */
    const float    *rcos, *rsin;
    const int32_t  *rcu;
    int             rn;
    float          *mcos, *msin;   /* [T][rot / 2], M-RoPE only */
    int32_t         one[2];
    const int64_t  *roff;          /* text RoPE: the records' offsets */
    /* chunked prefill: the batch's parts (NULL: records whole) and one
     * layer's view of their seqs, [n_records] each */
    const clef_cpu_part  *parts;
    int64_t              *poff;
    float               **pstate;
    const float         **ptail;
    clef_attn_past       *past;
} acts;

static const char  *prof_names[CLEF_PROF_COUNT] = {
    "embed", "rmsnorm", "gdn in_proj", "gdn conv+silu", "gdn l2norm/beta/g",
    "gdn delta rule", "gdn gated norm", "gdn out_proj", "attn qkv_proj",
    "attn qk-norm+rope", "attn softmax", "attn gate", "attn o_proj",
    "mlp gate/up", "mlp silu*up", "mlp down", "all-reduce"
};

const char *
clef_cpu_prof_name(int op)
{
    return op >= 0 && op < CLEF_PROF_COUNT ? prof_names[op] : "?";
}

#define TIMED(b, op, stmt)                                                   \
    do {                                                                     \
        double t_ = clef_clock_seconds();                                    \
        stmt;                                                                \
        (b)->prof[op] += clef_clock_seconds() - t_;                          \
    } while (0)

int
clef_cpu_backbone_open(const clef_model *m, clef_cpu_pool *pool,
    clef_cpu_backbone **out, clef_error *err)
{
    return clef_cpu_backbone_open_prec(m, pool, CLEF_PRECISION_FP32, out, err);
}

int
clef_cpu_backbone_open_prec(const clef_model *m, clef_cpu_pool *pool,
    clef_precision prec, clef_cpu_backbone **out, clef_error *err)
{
    return clef_cpu_backbone_open_shard(m, pool, prec, NULL, NULL, out, err);
}

int
clef_cpu_backbone_open_shard(const clef_model *m, clef_cpu_pool *pool,
    clef_precision prec, const clef_shard *shard, clef_comm *comm,
    clef_cpu_backbone **out, clef_error *err)
{
    clef_cpu_backbone  *b;
    int                 i;

    if (shard != NULL && shard->size > 1
        && (comm == NULL || comm->size != shard->size))
    {
        return clef_error_fail(err, CLEF_E_INTERNAL, "rank %d of %d needs "
                               "a communicator of its size", shard->rank,
                               shard->size);
    }
    b = calloc(1, sizeof(*b));
    if (b == NULL) {
        return clef_error_fail(err, CLEF_E_NO_MEMORY, "out of memory");
    }
    b->pool = pool;
    b->fail_layer = -1;
    b->comm = shard != NULL && shard->size > 1 ? comm : NULL;
    if (clef_cpu_weights_load(&b->w, m, pool, prec, shard, err) != 0) {
        free(b);
        return -1;
    }
    b->rowpar.segs = b->w.segs;
    b->rowpar.seg0 = b->w.seg0;
    b->rowpar.nseg = b->w.nseg;
    b->rowpar.rank = b->w.shard.rank;
    b->rowpar.comm = b->comm;
    b->rowpar.prec = prec;
    for (i = 0; i < b->w.cfg.num_hidden_layers; i++) {
        b->any_moe |= b->w.layers[i].mlp.kind == CLEF_MLP_MOE;
        if (b->w.layers[i].mixer == CLEF_MIXER_FULL) {
            b->any_full = 1;
        } else {
            b->any_gdn = 1;
        }
    }
    *out = b;
    return 0;
}

void
clef_cpu_backbone_close(clef_cpu_backbone *b)
{
    if (b == NULL) {
        return;
    }
    clef_cpu_weights_free(&b->w);
    free(b->cos);
    free(b->sin);
    free(b);
}

int
clef_cpu_backbone_hidden_size(const clef_cpu_backbone *b)
{
    return b->w.cfg.hidden_size;
}

size_t
clef_cpu_backbone_weight_bytes(const clef_cpu_backbone *b)
{
    return b->w.bytes;
}

const char *
clef_cpu_backbone_gemm_describe(const clef_cpu_backbone *b)
{
    return b->w.gemm;
}

void
clef_cpu_backbone_profile(const clef_cpu_backbone *b, double seconds[CLEF_PROF_COUNT])
{
    memcpy(seconds, b->prof, sizeof(b->prof));
}

void
clef_cpu_backbone_profile_reset(clef_cpu_backbone *b)
{
    memset(b->prof, 0, sizeof(b->prof));
}

static int
rope_reserve(clef_cpu_backbone *b, int64_t positions, clef_error *err)
{
    int64_t  half = b->w.rot_dim / 2;
    float   *c, *s;

    if (positions <= b->rope_positions) {
        return 0;
    }
    c = malloc(sizeof(float) * (size_t) (positions * half + 1));
    s = malloc(sizeof(float) * (size_t) (positions * half + 1));
    if (c == NULL || s == NULL) {
        free(c);
        free(s);
        return clef_error_fail(err, CLEF_E_NO_MEMORY,
                               "out of memory for the RoPE table");
    }
    clef_cpu_rope_table(b->w.rot_dim, b->w.cfg.rope_theta, positions, c, s);
    free(b->cos);
    free(b->sin);
    b->cos = c;
    b->sin = s;
    b->rope_positions = positions;
    return 0;
}

static void
acts_free(acts *a)
{
    free(a->x);
    free(a->xn);
    free(a->proj);
    free(a->u);
    free(a->o);
    free(a->beta);
    free(a->g);
    free(a->mlp);
    free(a->part);
    free(a->scratch);
    free(a->gemm);
    free(a->mcos);
    free(a->msin);
    free(a->logits);
    free(a->rows);
    free(a->hid);
    free(a->out);
    free(a->poff);
    free(a->pstate);
    free(a->ptail);
    free(a->past);
    clef_cpu_moe_route_free(&a->route);
}

static int
acts_alloc(acts *a, const clef_cpu_backbone *b, int64_t T)
{
    const clef_cpu_weights  *w = &b->w;
    int64_t                  H = w->cfg.hidden_size, hv = w->hv;
    int64_t                  proj = 0, o = 0, tile, k;
    size_t                   scratch = 0, s;

    if (b->any_gdn) {
        proj = w->gdn_in_dim;
        o = w->gdn_v_dim;
        scratch = clef_cpu_gdn_scratch_floats(w->cfg.linear_key_head_dim,
                                              w->cfg.linear_value_head_dim);
    }
    if (b->any_full) {
        proj = w->attn_in_dim > proj ? w->attn_in_dim : proj;
        o = w->attn_o_dim > o ? w->attn_o_dim : o;
        s = clef_cpu_attention_scratch_floats(w->hq / w->hkv, w->cfg.head_dim);
        scratch = s > scratch ? s : scratch;
    }
    tile = T < MLP_TILE ? T : MLP_TILE;
    /* the widest input of a linear layer */
    k = H > w->inter ? H : w->inter;
    k = w->cfg.moe_intermediate_size > k ? w->cfg.moe_intermediate_size : k;
    k = o > k ? o : k;

    memset(a, 0, sizeof(*a));
    a->x = malloc(sizeof(float) * (size_t) (T * H));
    a->xn = malloc(sizeof(float) * (size_t) (T * H));
    a->proj = malloc(sizeof(float) * (size_t) (T * proj));
    a->o = malloc(sizeof(float) * (size_t) (T * o));
    a->mlp = malloc(sizeof(float) * (size_t) (tile * 2 * w->inter));
    a->part = malloc(sizeof(float) * clef_cpu_rowpar_floats(&b->rowpar, T, H));
    a->scratch = malloc(sizeof(float) * scratch * (size_t) clef_cpu_pool_size(b->pool));
    a->gemm = malloc(sizeof(float) * clef_cpu_linear_scratch_floats(k));
    if (b->any_gdn) {
        a->u = malloc(sizeof(float) * (size_t) (T * w->qkv_dim));
        a->beta = malloc(sizeof(float) * (size_t) (T * hv));
        a->g = malloc(sizeof(float) * (size_t) (T * hv));
    }
    if (b->any_moe) {
        int64_t  E = w->cfg.num_experts, K = w->cfg.num_experts_per_tok;
        int64_t  Im = w->cfg.moe_intermediate_size;

        a->logits = malloc(sizeof(float) * (size_t) (tile * E));
        a->rows = malloc(sizeof(float) * (size_t) (tile * K * H));
        a->hid = malloc(sizeof(float) * (size_t) (tile * K * 2 * Im));
        a->out = malloc(sizeof(float) * (size_t) (tile * K * H));
        if (clef_cpu_moe_route_alloc(&a->route, tile, (int) E, (int) K) != 0
            || a->logits == NULL || a->rows == NULL || a->hid == NULL
            || a->out == NULL)
        {
            acts_free(a);
            return -1;
        }
    }
    if (a->x == NULL || a->xn == NULL || a->proj == NULL || a->o == NULL
        || a->mlp == NULL || a->scratch == NULL || a->gemm == NULL
        || a->part == NULL
        || (b->any_gdn && (a->u == NULL || a->beta == NULL || a->g == NULL)))
    {
        acts_free(a);
        return -1;
    }
    return 0;
}

/* x += in . W^T for a row-parallel W (o_proj, out_proj, down) in the
 * order every tp shares (rowpar.h, shard.h); the time in the exchange
 * counts as all-reduce, the rest as op. */
static int
row_parallel_add(clef_cpu_backbone *b, acts *a, int op, const float *in,
    int64_t ldin, int64_t m, const clef_cpu_wpack *w, float *x,
    clef_error *err)
{
    double  t0 = clef_clock_seconds(), ex = 0;
    int     rc;

    rc = clef_cpu_rowpar_add(b->pool, &b->rowpar, in, ldin, m, w, x,
                             b->w.cfg.hidden_size, a->part, a->gemm, &ex, err);
    b->prof[op] += clef_clock_seconds() - t0 - ex;
    b->prof[CLEF_PROF_ALLREDUCE] += ex;
    return rc;
}

/* x += out_proj(GatedDeltaNet(xn)) */
/* Chunked prefill: layer i's conv tails and delta-rule states of the
 * batch's parts (a part at offset 0 has no tail yet). */
static void
gdn_parts(const acts *a, int i, int n_records)
{
    clef_cpu_seq  *s;
    int            r;

    for (r = 0; r < n_records; r++) {
        s = a->parts[r].seq;
        a->pstate[r] = s != NULL ? s->state[i] : NULL;
        a->ptail[r] = s != NULL && a->parts[r].offset > 0 ? s->tail[i] : NULL;
    }
}

/* Chunked prefill: the conv's last kernel - 1 input rows of each part, for
 * the record's next part (a part that short is a record's last). */
static void
gdn_keep_tails(const clef_cpu_backbone *b, const acts *a, int i,
    const int32_t *cu, int n_records)
{
    const clef_cpu_weights  *w = &b->w;
    int64_t                  k1 = w->cfg.linear_conv_kernel_dim - 1, t;
    int                      r;

    for (r = 0; r < n_records; r++) {
        if (a->parts[r].seq == NULL || cu[r + 1] - cu[r] < k1) {
            continue;
        }
        for (t = 0; t < k1; t++) {
            memcpy(a->parts[r].seq->tail[i] + t * w->qkv_dim,
                   a->proj + (cu[r + 1] - k1 + t) * w->gdn_in_dim,
                   sizeof(float) * (size_t) w->qkv_dim);
        }
    }
}

static int
gdn_layer(clef_cpu_backbone *b, const clef_cpu_gdn_w *l, int li, acts *a,
    int64_t T, const int32_t *cu, int n_records, clef_error *err)
{
    const clef_cpu_weights  *w = &b->w;
    const clef_text_config  *c = &w->cfg;
    clef_cpu_pool           *pool = b->pool;
    clef_gdn_args            ga;
    int                      H = c->hidden_size, hk = w->hk;
    int                      hv = w->hv, dk = c->linear_key_head_dim;
    int                      dv = c->linear_value_head_dim, ld = w->gdn_in_dim;

    TIMED(b, CLEF_PROF_GDN_IN,
          clef_cpu_linear_prec(pool, a->xn, H, T, &l->in_proj, a->proj, ld,
                               0.0f, a->gemm, b->w.prec));
    if (a->parts != NULL) {
        gdn_parts(a, li, n_records);
    }
    TIMED(b, CLEF_PROF_GDN_CONV,
          clef_cpu_conv_silu_tails(pool, a->proj, ld, a->u, w->qkv_dim,
                                   w->qkv_dim, l->conv,
                                   c->linear_conv_kernel_dim, cu, n_records,
                                   a->parts != NULL ? a->ptail : NULL));
    if (a->parts != NULL) {
        gdn_keep_tails(b, a, li, cu, n_records);
    }
    TIMED(b, CLEF_PROF_GDN_PREP,
          clef_cpu_gdn_prepare(pool, a->u, w->qkv_dim, T, hk, dk,
                               a->proj + w->qkv_dim + w->gdn_v_dim, ld, hv,
                               l->A_log, l->dt_bias, a->beta, a->g));

    ga.q = a->u;
    ga.k = a->u + (int64_t) hk * dk;
    ga.ldqk = w->qkv_dim;
    ga.v = a->u + 2 * (int64_t) hk * dk;
    ga.ldv = w->qkv_dim;
    ga.g = a->g;
    ga.beta = a->beta;
    ga.o = a->o;
    ga.ldo = w->gdn_v_dim;
    ga.hk = hk;
    ga.hv = hv;
    ga.dk = dk;
    ga.dv = dv;
    ga.recurrent = 0;
    TIMED(b, CLEF_PROF_GDN_CORE,
          clef_cpu_gdn_states(pool, &ga, cu, n_records,
                              a->parts != NULL ? a->pstate : NULL,
                              a->scratch));

    TIMED(b, CLEF_PROF_GDN_NORM,
          clef_cpu_rmsnorm_gated(pool, a->o, w->gdn_v_dim, a->proj + w->qkv_dim, ld,
                                 a->o, w->gdn_v_dim, T, hv, dv, l->norm,
                                 (float) c->rms_norm_eps));
    return row_parallel_add(b, a, CLEF_PROF_GDN_OUT, a->o, w->gdn_v_dim, T,
                            l->out_proj, a->x, err);
}

/* Chunked prefill: each part's keys and values (normed and turned) join
 * those its record's earlier parts left in layer i's cache, which the
 * attention then reads for the part's queries. */
static void
attn_parts(const clef_attn_args *aa, acts *a, int i, const int32_t *cu,
    int n_records)
{
    clef_cpu_seq  *s;
    int64_t        kvw = (int64_t) aa->hkv * aa->hd, t, off;
    int            r;

    for (r = 0; r < n_records; r++) {
        s = a->parts[r].seq;
        memset(&a->past[r], 0, sizeof(a->past[r]));
        if (s == NULL) {
            continue;
        }
        off = a->parts[r].offset;
        for (t = cu[r]; t < cu[r + 1]; t++) {
            memcpy(s->k[i] + (off + t - cu[r]) * kvw, aa->k + t * aa->ldk,
                   sizeof(float) * (size_t) kvw);
            memcpy(s->v[i] + (off + t - cu[r]) * kvw, aa->v + t * aa->ldv,
                   sizeof(float) * (size_t) kvw);
        }
        a->past[r].k = s->k[i];
        a->past[r].v = s->v[i];
        a->past[r].ld = kvw;
        a->past[r].offset = off;
    }
}

/* x += o_proj(GatedAttention(xn)) */
static int
attn_layer(clef_cpu_backbone *b, const clef_cpu_attn_w *l, int li, acts *a,
    int64_t T, const int32_t *cu, int n_records, clef_error *err)
{
    const clef_cpu_weights  *w = &b->w;
    const clef_text_config  *c = &w->cfg;
    clef_cpu_pool           *pool = b->pool;
    clef_attn_args           aa;
    int                      H = c->hidden_size, hd = c->head_dim, ld = w->attn_in_dim;
    int                      rc;

    TIMED(b, CLEF_PROF_ATTN_IN,
          clef_cpu_linear_prec(pool, a->xn, H, T, &l->qkv_proj, a->proj, ld,
                               0.0f, a->gemm, b->w.prec));

    aa.q = a->proj;
    aa.ldq = ld;
    aa.q_head_stride = w->q_head_dim;
    aa.k = a->proj + (int64_t) w->hq * w->q_head_dim;
    aa.ldk = ld;
    aa.v = aa.k + (int64_t) w->hkv * hd;
    aa.ldv = ld;
    aa.o = a->o;
    aa.ldo = w->attn_o_dim;
    aa.hq = w->hq;
    aa.hkv = w->hkv;
    aa.hd = hd;
    aa.scale = (float) pow((double) hd, -0.5);

    TIMED(b, CLEF_PROF_ATTN_PREP,
          clef_cpu_attention_prepare_at(pool, &aa, l->q_norm, l->k_norm,
                                        (float) c->rms_norm_eps, w->rot_dim,
                                        a->rcos, a->rsin, a->rcu, a->roff,
                                        a->rn));
    if (a->parts != NULL) {
        attn_parts(&aa, a, li, cu, n_records);
    }
    TIMED(b, CLEF_PROF_ATTN_CORE,
          rc = clef_cpu_attention_parts(pool, &aa, cu,
                                        a->parts != NULL ? a->past : NULL,
                                        n_records, a->scratch));
    if (rc != 0) {
        return clef_error_fail(err, CLEF_E_NO_MEMORY,
                               "out of memory in attention");
    }
    if (c->attn_output_gate) {
        TIMED(b, CLEF_PROF_ATTN_GATE,
              clef_cpu_attention_gate(pool, a->o, w->attn_o_dim, a->proj + hd, ld,
                                      w->q_head_dim, T, aa.hq, hd));
    }
    return row_parallel_add(b, a, CLEF_PROF_ATTN_OUT, a->o, w->attn_o_dim, T,
                            l->o_proj, a->x, err);
}

/* x += down(silu(gate xn) * up xn), MLP_TILE rows at a time (down in the
 * shared order of row_parallel_add) */
static int
dense_mlp(clef_cpu_backbone *b, const clef_cpu_dense_w *l, acts *a, int64_t T,
    clef_error *err)
{
    const clef_text_config  *c = &b->w.cfg;
    clef_cpu_pool           *pool = b->pool;
    int64_t                  H = c->hidden_size, I = b->w.inter, t0, n;

    for (t0 = 0; t0 < T; t0 += MLP_TILE) {
        n = T - t0 < MLP_TILE ? T - t0 : MLP_TILE;
        TIMED(b, CLEF_PROF_MLP_UP,
              clef_cpu_linear_prec(pool, a->xn + t0 * H, H, n, &l->gate_up,
                                   a->mlp, 2 * I, 0.0f, a->gemm, b->w.prec));
        TIMED(b, CLEF_PROF_MLP_ACT, clef_cpu_swiglu(pool, a->mlp, 2 * I, n, (int) I));
        if (row_parallel_add(b, a, CLEF_PROF_MLP_DOWN, a->mlp, 2 * I, n, l->down,
                             a->x + t0 * H, err) != 0)
        {
            return -1;
        }
    }
    return 0;
}

/* x += the routed experts of xn (cpu/ops/moe.h), MLP_TILE tokens at a
 * time: the router's product, the routing, then per expert one product of
 * gate|up, the activation and one product of down over the tokens routed
 * to it, and each token's weighted sum in expert order. */
static int
moe_mlp(clef_cpu_backbone *b, const clef_cpu_moe_w *l, acts *a, int64_t T)
{
    const clef_text_config  *c = &b->w.cfg;
    clef_cpu_pool           *pool = b->pool;
    const clef_cpu_moe_routing *r = &a->route;
    int64_t                  H = c->hidden_size, E = c->num_experts;
    int64_t                  I = c->moe_intermediate_size;
    int64_t                  t0, n, r0, rows;
    int                      e;

    for (t0 = 0; t0 < T; t0 += MLP_TILE) {
        n = T - t0 < MLP_TILE ? T - t0 : MLP_TILE;
        TIMED(b, CLEF_PROF_MLP_UP,
              clef_cpu_linear_prec(pool, a->xn + t0 * H, H, n, &l->router,
                                   a->logits, E, 0.0f, a->gemm, b->w.prec);
              clef_cpu_moe_route(pool, a->logits, E, n, c->norm_topk_prob,
                                 &a->route);
              clef_cpu_moe_gather(pool, r, n, a->xn + t0 * H, H, (int) H,
                                  a->rows));
        for (e = 0; e < E; e++) {
            r0 = r->offset[e];
            rows = r->offset[e + 1] - r0;
            if (rows == 0) {
                continue;
            }
            TIMED(b, CLEF_PROF_MLP_UP,
                  clef_cpu_linear_prec(pool, a->rows + r0 * H, H, rows,
                                       &l->gate_up[e], a->hid + r0 * 2 * I,
                                       2 * I, 0.0f, a->gemm, b->w.prec));
            TIMED(b, CLEF_PROF_MLP_ACT,
                  clef_cpu_swiglu(pool, a->hid + r0 * 2 * I, 2 * I, rows,
                                  (int) I));
            TIMED(b, CLEF_PROF_MLP_DOWN,
                  clef_cpu_linear_prec(pool, a->hid + r0 * 2 * I, 2 * I, rows,
                                       &l->down[e], a->out + r0 * H, H, 0.0f,
                                       a->gemm, b->w.prec));
        }
        TIMED(b, CLEF_PROF_MLP_DOWN,
              clef_cpu_moe_combine(pool, r, n, a->out, (int) H,
                                   a->x + t0 * H, H));
    }
    return 0;
}

/* x += MLP(xn), by the layer's kind of MLP (weights.h) */
static int
mlp_layer(clef_cpu_backbone *b, const clef_cpu_mlp_w *mlp, acts *a, int64_t T,
    clef_error *err)
{
    switch (mlp->kind) {
    case CLEF_MLP_DENSE:
        return dense_mlp(b, &mlp->dense, a, T, err);
    case CLEF_MLP_MOE:
        return moe_mlp(b, &mlp->moe, a, T);
    default:
        return clef_error_fail(err, CLEF_E_INTERNAL,
                               "an MLP of kind %d in the backbone",
                               (int) mlp->kind);
    }
}

/* M-RoPE (docs/spec/backbone.md §5.3): token t's rotary pair j turns by
 * its position on pair j's axis, read from the table by position (every
 * position is below the longest record's length). */
static int
mrope_tables(const clef_cpu_backbone *b, acts *a, const int32_t *pos, int64_t T)
{
    const clef_text_config  *c = &b->w.cfg;
    int64_t                  t, p;
    int                      half = b->w.rot_dim / 2, j, axis;

    a->mcos = malloc(sizeof(float) * (size_t) (T * half + 1));
    a->msin = malloc(sizeof(float) * (size_t) (T * half + 1));
    if (a->mcos == NULL || a->msin == NULL) {
        return -1;
    }
    for (j = 0; j < half; j++) {
        axis = j % 3 == 1 && j < 3 * c->mrope_section[1] ? 1
               : j % 3 == 2 && j < 3 * c->mrope_section[2] ? 2 : 0;
        for (t = 0; t < T; t++) {
            p = pos[axis * T + t];
            a->mcos[t * half + j] = b->cos[p * half + j];
            a->msin[t * half + j] = b->sin[p * half + j];
        }
    }
    a->rcos = a->mcos;
    a->rsin = a->msin;
    a->one[0] = 0;
    a->one[1] = (int32_t) T;
    a->rcu = a->one;
    a->rn = 1;
    a->roff = NULL;
    return 0;
}

/* The image features over their pad tokens' embeddings, and M-RoPE. */
static int
clef_cpu_media_apply(const clef_cpu_backbone *b, const clef_cpu_media *m,
    acts *a, int64_t T, clef_error *err)
{
    int64_t  H = b->w.cfg.hidden_size;
    int      i;

    for (i = 0; i < m->n_spans; i++) {
        if (m->spans[i].start < 0 || m->spans[i].len < 0
            || (int64_t) m->spans[i].start + m->spans[i].len > T)
        {
            return clef_error_fail(err, CLEF_E_INTERNAL,
                                   "media span %d is outside the batch", i);
        }
        memcpy(a->x + (int64_t) m->spans[i].start * H,
               m->features + (int64_t) m->spans[i].row * H,
               sizeof(float) * (size_t) (m->spans[i].len * H));
    }
    if (m->positions != NULL && mrope_tables(b, a, m->positions, T) != 0) {
        return clef_error_fail(err, CLEF_E_NO_MEMORY,
                               "out of memory for M-RoPE");
    }
    return 0;
}

/* DeepStack: x += level d's rows at the visual spans' tokens, in the
 * reference's order (hidden + visual embeds) */
static void
deepstack_add(const clef_cpu_backbone *b, const clef_cpu_media *m, int d,
    acts *a)
{
    const float  *src;
    float        *x;
    int64_t       H = b->w.cfg.hidden_size, t, h;
    int           i;

    for (i = 0; i < m->n_visual; i++) {
        for (t = 0; t < m->visual[i].len; t++) {
            x = a->x + (int64_t) (m->visual[i].start + t) * H;
            src = m->deepstack + d * m->level_stride
                  + (int64_t) (m->visual[i].row + t) * H;
            for (h = 0; h < H; h++) {
                x[h] = x[h] + src[h];
            }
        }
    }
}

int
clef_cpu_backbone_forward(clef_cpu_backbone *b, const int32_t *ids,
    const int32_t *cu_seqlens, int n_records, float *hidden, clef_error *err)
{
    return clef_cpu_backbone_forward_media(b, ids, cu_seqlens, n_records, NULL,
                                           hidden, err);
}

int
clef_cpu_backbone_forward_media(clef_cpu_backbone *b, const int32_t *ids,
    const int32_t *cu_seqlens, int n_records, const clef_cpu_media *media,
    float *hidden, clef_error *err)
{
    return clef_cpu_backbone_forward_parts(b, ids, cu_seqlens, n_records,
                                           media, NULL, hidden, err);
}

int
clef_cpu_backbone_seq_open(const clef_cpu_backbone *b, int64_t tokens,
    clef_cpu_seq **out, clef_error *err)
{
    return clef_cpu_seq_open(&b->w, tokens, out, err);
}

/* Chunked prefill: the parts' checks (each where its record's last part
 * ended, at an aligned offset, within the record), the RoPE table's
 * length they need, and their arrays in a.  Their seqs are marked failed
 * until the forward ends well. */
static int
parts_begin(const clef_cpu_backbone *b, const clef_cpu_part *parts,
    const int32_t *cu, int n_records, const clef_cpu_media *media,
    int64_t *longest, acts *a, clef_error *err)
{
    const clef_cpu_seq  *s;
    int64_t              len, t, T = cu[n_records];
    int                  r;

    for (r = 0; r < n_records; r++) {
        s = parts[r].seq;
        len = (int64_t) cu[r + 1] - cu[r];
        if (s == NULL) {
            continue;
        }
        if (s->failed || parts[r].offset != s->done
            || parts[r].offset % CLEF_PART_ALIGN != 0
            || parts[r].offset + len > s->tokens
            || s->layers != b->w.cfg.num_hidden_layers)
        {
            return clef_error_fail(err, CLEF_E_INTERNAL, "record %d: a part "
                                   "of %lld tokens at %lld does not follow "
                                   "its record's %lld of %lld tokens run "
                                   "at a multiple of %d%s", r,
                                   (long long) len,
                                   (long long) parts[r].offset,
                                   (long long) s->done, (long long) s->tokens,
                                   CLEF_PART_ALIGN,
                                   s->failed ? " (a forward failed)" : "");
        }
        *longest = parts[r].offset + len > *longest
                   ? parts[r].offset + len : *longest;
    }
    if (media != NULL && media->positions != NULL) {
        /* a part's M-RoPE positions need not be below its end */
        for (t = 0; t < 3 * T; t++) {
            *longest = media->positions[t] + 1 > *longest
                       ? media->positions[t] + 1 : *longest;
        }
    }
    a->parts = parts;
    a->poff = malloc(sizeof(*a->poff) * (size_t) n_records);
    a->pstate = malloc(sizeof(*a->pstate) * (size_t) n_records);
    a->ptail = malloc(sizeof(*a->ptail) * (size_t) n_records);
    a->past = malloc(sizeof(*a->past) * (size_t) n_records);
    if (a->poff == NULL || a->pstate == NULL || a->ptail == NULL
        || a->past == NULL)
    {
        return clef_error_fail(err, CLEF_E_NO_MEMORY, "out of memory");
    }
    for (r = 0; r < n_records; r++) {
        a->poff[r] = parts[r].offset;
        if (parts[r].seq != NULL) {
            parts[r].seq->failed = 1;
        }
    }
    return 0;
}

/* The parts ran: their seqs hold their records' tokens so far. */
static void
parts_end(const clef_cpu_part *parts, const int32_t *cu, int n_records)
{
    int  r;

    for (r = 0; r < n_records; r++) {
        if (parts[r].seq != NULL) {
            parts[r].seq->done += (int64_t) cu[r + 1] - cu[r];
            parts[r].seq->failed = 0;
        }
    }
}

int
clef_cpu_backbone_forward_parts(clef_cpu_backbone *b, const int32_t *ids,
    const int32_t *cu_seqlens, int n_records, const clef_cpu_media *media,
    const clef_cpu_part *parts, float *hidden, clef_error *err)
{
    const clef_text_config  *c = &b->w.cfg;
    clef_cpu_pool           *pool = b->pool;
    const clef_cpu_layer    *l;
    acts                     a;
    int64_t                  T, H = c->hidden_size, longest = 0, len;
    float                    eps = (float) c->rms_norm_eps;
    int                      r, i, rc = -1;

    if (n_records <= 0 || cu_seqlens[0] != 0) {
        return clef_error_fail(err, CLEF_E_INTERNAL,
                               "a batch needs records and cu_seqlens[0] = 0");
    }
    for (r = 0; r < n_records; r++) {
        len = (int64_t) cu_seqlens[r + 1] - cu_seqlens[r];
        if (len < 0) {
            return clef_error_fail(err, CLEF_E_INTERNAL,
                                   "cu_seqlens decreases at record %d", r);
        }
        longest = len > longest ? len : longest;
    }
    T = cu_seqlens[n_records];
    if (T == 0) {
        return 0;
    }

    if (acts_alloc(&a, b, T) != 0) {
        return clef_error_fail(err, CLEF_E_NO_MEMORY,
            "out of memory for the activations of %lld tokens",
            (long long) T);
    }
    if (parts != NULL
        && parts_begin(b, parts, cu_seqlens, n_records, media, &longest, &a,
                       err) != 0)
    {
        acts_free(&a);
        return -1;
    }
    if (media != NULL && media->positions != NULL) {
        /* every M-RoPE position is below its record's length, but the
         * table must exist even with no full-attention layer to read it */
        longest = longest > 0 ? longest : 1;
    }
    if ((b->any_full || (media != NULL && media->positions != NULL))
        && rope_reserve(b, longest, err) != 0)
    {
        rc = -1;
        goto done;
    }

    TIMED(b, CLEF_PROF_EMBED,
          rc = clef_cpu_embed(pool, b->w.embed, ids, T, a.x, H, err));
    if (rc != 0) {
        goto done;
    }
    a.rcos = b->cos;
    a.rsin = b->sin;
    a.rcu = cu_seqlens;
    a.rn = n_records;
    a.roff = a.poff;
    if (media != NULL && clef_cpu_media_apply(b, media, &a, T, err) != 0) {
        rc = -1;
        goto done;
    }

    for (i = 0; i < c->num_hidden_layers; i++) {
        l = &b->w.layers[i];
        TIMED(b, CLEF_PROF_NORM,
              clef_cpu_rmsnorm(pool, a.x, H, a.xn, H, T, (int) H, l->norm.input,
                                 eps));
        if (i == b->fail_layer) {
            rc = clef_error_fail(err, CLEF_E_INTERNAL, "rank %d: a fault "
                                 "injected at layer %d", b->w.shard.rank, i);
            goto done;
        }
        rc = l->mixer == CLEF_MIXER_FULL
             ? attn_layer(b, &l->attn, i, &a, T, cu_seqlens, n_records, err)
             : gdn_layer(b, &l->gdn, i, &a, T, cu_seqlens, n_records, err);
        if (rc != 0) {
            goto done;
        }
        TIMED(b, CLEF_PROF_NORM,
              clef_cpu_rmsnorm(pool, a.x, H, a.xn, H, T, (int) H, l->norm.post,
                                 eps));
        rc = mlp_layer(b, &l->mlp, &a, T, err);
        if (rc != 0) {
            goto done;
        }
        if (media != NULL && i < media->n_deepstack) {
            deepstack_add(b, media, i, &a);
        }
        if (b->progress != NULL) {
            b->progress(b->progress_ctx);
        }
    }

    /* a rank other than the one running the head needs no output */
    if (hidden != NULL) {
        TIMED(b, CLEF_PROF_NORM,
              clef_cpu_rmsnorm(pool, a.x, H, hidden, H, T, (int) H,
                                 b->w.final_norm, eps));
    }
    if (parts != NULL) {
        parts_end(parts, cu_seqlens, n_records);
    }
    rc = 0;

done:
    acts_free(&a);
    return rc;
}


void
clef_cpu_backbone_fail_at(clef_cpu_backbone *b, int layer)
{
    b->fail_layer = layer;
}

void
clef_cpu_backbone_set_progress(clef_cpu_backbone *b, void (*fn)(void *ctx),
    void *ctx)
{
    b->progress = fn;
    b->progress_ctx = ctx;
}
