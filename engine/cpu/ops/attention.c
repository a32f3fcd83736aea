#include "cpu/ops/attention.h"

#include <stdlib.h>
#include <string.h>

#include "cpu/kernels/act.h"
#include "cpu/kernels/gemm.h"
#include "cpu/kernels/vec.h"
#include "cpu/ops/norm.h"
#include "cpu/ops/records.h"
#include "cpu/ops/rope.h"

#define BQ  CLEF_ATTN_BLOCK_Q
#define BK  CLEF_ATTN_BLOCK_K

/* ---- q/k norm + RoPE ------------------------------------------------- */

typedef struct {
    const clef_attn_args  *a;
    const float           *q_norm, *k_norm, *cos, *sin;
    float                  eps;
    int                    rot;
    const int32_t         *cu;
    const int64_t         *offsets;
    int                    n_records;
} prepare_job;

static void
prepare_task(void *ctx, int64_t begin, int64_t end, int worker)
{
    const prepare_job     *j = ctx;
    const clef_attn_args  *a = j->a;
    const float           *c, *s;
    float                 *x;
    int64_t                t, pos;
    int                    r, h, half = j->rot / 2;

    r = clef_cpu_record_of(j->cu, j->n_records, begin);
    for (t = begin; t < end; t++) {
        while (t >= j->cu[r + 1]) {
            r++;
        }
        pos = t - j->cu[r] + (j->offsets != NULL ? j->offsets[r] : 0);
        c = j->cos + pos * half;
        s = j->sin + pos * half;
        for (h = 0; h < a->hq; h++) {
            x = a->q + t * a->ldq + h * a->q_head_stride;
            clef_cpu_rmsnorm_row(x, x, a->hd, j->q_norm, j->eps);
            clef_cpu_rope_apply(x, j->rot, c, s);
        }
        for (h = 0; h < a->hkv; h++) {
            x = a->k + t * a->ldk + (int64_t) h * a->hd;
            clef_cpu_rmsnorm_row(x, x, a->hd, j->k_norm, j->eps);
            clef_cpu_rope_apply(x, j->rot, c, s);
        }
    }
}

void
clef_cpu_attention_prepare(clef_cpu_pool *pool, const clef_attn_args *a,
    const float *q_norm, const float *k_norm, float eps, int rot,
    const float *cos, const float *sin, const int32_t *cu_seqlens,
    int n_records)
{
    clef_cpu_attention_prepare_at(pool, a, q_norm, k_norm, eps, rot, cos, sin,
                                  cu_seqlens, NULL, n_records);
}

void
clef_cpu_attention_prepare_at(clef_cpu_pool *pool, const clef_attn_args *a,
    const float *q_norm, const float *k_norm, float eps, int rot,
    const float *cos, const float *sin, const int32_t *cu_seqlens,
    const int64_t *offsets, int n_records)
{
    prepare_job  j = { a, q_norm, k_norm, cos, sin, eps, rot, cu_seqlens,
                       offsets, n_records };

    clef_cpu_pool_for(pool, cu_seqlens[n_records], 8, prepare_task, &j);
}

/* ---- blockwise causal softmax attention ------------------------------ */

size_t
clef_cpu_attention_scratch_floats(int group, int hd)
{
    size_t  rows = (size_t) group * BQ;

    /* scores, stacked queries, output accumulators, running max and sum,
     * the GEMM's packing */
    return rows * BK + 2 * rows * (size_t) hd + 2 * rows + CLEF_GEMM_SCRATCH_FLOATS;
}

typedef struct {
    const clef_attn_args  *a;
    const int32_t         *cu;
    const clef_attn_past  *past;       /* NULL: every record whole */
    const int64_t         *blocks;     /* [n_records + 1] prefix of query blocks */
    int                    n_records;
    int64_t                items;
    float                 *scratch;
    size_t                 per_worker;
} attn_job;

/* One query block of the g query heads that read kv head kv: queries
 * [q0, q0 + nq) of a record (counted from its first token), read at rows
 * q0 - qoff of qrow (and written at those of orow), against keys
 * [0, q0 + nq) at kb, vb (row stride ldk, ldv).  The g heads' queries are
 * stacked (row j * nq + i is head kv * g + j, query i) so that each
 * product with a key block is one GEMM of g * nq rows instead of g small
 * ones. */
static void
attend_block(const clef_attn_args *a, const float *qrow, float *orow_base,
    int64_t qoff, const float *kb, int64_t ldk, const float *vb, int64_t ldv,
    int64_t q0, int nq, int kv, float *scratch)
{
    const int     g = a->hq / a->hkv, hd = a->hd, rows = g * nq;
    const float  *kh = kb + (int64_t) kv * hd;
    const float  *vh = vb + (int64_t) kv * hd;
    float        *S = scratch;
    float        *Q = S + (size_t) g * BQ * BK;
    float        *O = Q + (size_t) g * BQ * hd;
    float        *mx = O + (size_t) g * BQ * hd, *sum = mx + g * BQ;
    float        *gs = sum + g * BQ;
    float        *srow, *orow, m, corr, l;
    const float  *src;
    int64_t       kend = q0 + nq, k0;
    int           nk, r, i, j, c, valid, d;

    for (j = 0; j < g; j++) {
        for (i = 0; i < nq; i++) {
            src = qrow + (q0 - qoff + i) * a->ldq
                  + (int64_t) (kv * g + j) * a->q_head_stride;
            memcpy(Q + (size_t) (j * nq + i) * hd, src, sizeof(float) * hd);
        }
    }
    memset(O, 0, sizeof(float) * (size_t) rows * hd);
    for (r = 0; r < rows; r++) {
        mx[r] = -INFINITY;
        sum[r] = 0.0f;
    }

    for (k0 = 0; k0 < kend; k0 += BK) {
        nk = kend - k0 < BK ? (int) (kend - k0) : BK;

        clef_cpu_gemm(rows, nk, hd, a->scale, clef_cpu_rows(Q, hd),
                      clef_cpu_trans(kh + k0 * ldk, ldk), 0.0f, S, BK, gs);

        for (r = 0; r < rows; r++) {
            srow = S + (size_t) r * BK;
            i = r % nq;
            /* keys k0 + c visible to query q0 + i: c <= q0 + i - k0 */
            valid = (int) (q0 + i - k0 + 1);
            if (valid > nk) {
                valid = nk;
            }
            if (valid <= 0) {
                memset(srow, 0, sizeof(float) * nk);
                continue;
            }
            m = clef_vec_max(srow, valid, mx[r]);
            corr = clef_exp(mx[r] - m);          /* 0 on the first block */
            l = clef_cpu_exp_sum(srow, valid, m);
            for (c = valid; c < nk; c++) {
                srow[c] = 0.0f;
            }
            sum[r] = sum[r] * corr + l;
            mx[r] = m;
            if (corr != 1.0f) {
                orow = O + (size_t) r * hd;
                for (d = 0; d < hd; d++) {
                    orow[d] *= corr;
                }
            }
        }

        clef_cpu_gemm(rows, hd, nk, 1.0f, clef_cpu_rows(S, BK),
                      clef_cpu_rows(vh + k0 * ldv, ldv), 1.0f, O, hd, gs);
    }

    for (j = 0; j < g; j++) {
        for (i = 0; i < nq; i++) {
            r = j * nq + i;
            orow = orow_base + (q0 - qoff + i) * a->ldo
                   + (int64_t) (kv * g + j) * hd;
            l = 1.0f / sum[r];
            for (d = 0; d < hd; d++) {
                orow[d] = O[(size_t) r * hd + d] * l;
            }
        }
    }
}

static void
attn_task(void *ctx, int64_t begin, int64_t end, int worker)
{
    const attn_job        *j = ctx;
    const clef_attn_args  *a = j->a;
    const clef_attn_past  *p;
    float                 *scratch = j->scratch + (size_t) worker * j->per_worker;
    int64_t                item, blk, t0, len, q0, off;
    int                    r, kv, lo, hi, mid;

    /* from the last item down: the last query blocks of a record see the
     * most keys, so the long ones start first and short ones fill in */
    for (item = j->items - 1 - begin; item > j->items - 1 - end; item--) {
        kv = (int) (item % a->hkv);
        blk = item / a->hkv;
        lo = 0;
        hi = j->n_records - 1;
        while (lo < hi) {
            mid = (lo + hi + 1) / 2;
            if (j->blocks[mid] <= blk) {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        r = lo;
        t0 = j->cu[r];
        len = j->cu[r + 1] - t0;
        p = j->past != NULL && j->past[r].k != NULL ? &j->past[r] : NULL;
        off = p != NULL ? p->offset : 0;
        q0 = off + (blk - j->blocks[r]) * BQ;
        attend_block(a, a->q + t0 * a->ldq, a->o + t0 * a->ldo, off,
                     p != NULL ? p->k : a->k + t0 * a->ldk,
                     p != NULL ? p->ld : a->ldk,
                     p != NULL ? p->v : a->v + t0 * a->ldv,
                     p != NULL ? p->ld : a->ldv, q0,
                     off + len - q0 < BQ ? (int) (off + len - q0) : BQ, kv,
                     scratch);
    }
}

int
clef_cpu_attention(clef_cpu_pool *pool, const clef_attn_args *a,
    const int32_t *cu_seqlens, int n_records, float *scratch)
{
    return clef_cpu_attention_parts(pool, a, cu_seqlens, NULL, n_records,
                                    scratch);
}

int
clef_cpu_attention_parts(clef_cpu_pool *pool, const clef_attn_args *a,
    const int32_t *cu_seqlens, const clef_attn_past *past, int n_records,
    float *scratch)
{
    attn_job  j;
    int64_t  *blocks;
    int       r;

    blocks = malloc(sizeof(int64_t) * (size_t) (n_records + 1));
    if (blocks == NULL) {
        return -1;
    }
    blocks[0] = 0;
    for (r = 0; r < n_records; r++) {
        blocks[r + 1] = blocks[r]
                        + (cu_seqlens[r + 1] - cu_seqlens[r] + BQ - 1) / BQ;
    }

    j.a = a;
    j.cu = cu_seqlens;
    j.past = past;
    j.blocks = blocks;
    j.n_records = n_records;
    j.scratch = scratch;
    j.items = blocks[n_records] * a->hkv;
    j.per_worker = clef_cpu_attention_scratch_floats(a->hq / a->hkv, a->hd);
    clef_cpu_pool_for(pool, j.items, 1, attn_task, &j);

    free(blocks);
    return 0;
}

/* ---- output gate ----------------------------------------------------- */

typedef struct {
    float        *o;
    int64_t       ldo;
    const float  *gate;
    int64_t       ldgate, gate_head_stride;
    int           hq, hd;
} gate_job;

static void
gate_task(void *ctx, int64_t begin, int64_t end, int worker)
{
    const gate_job  *j = ctx;
    const float     *gt;
    float           *ot;
    int64_t          t;
    int              h;

    for (t = begin; t < end; t++) {
        for (h = 0; h < j->hq; h++) {
            ot = j->o + t * j->ldo + (int64_t) h * j->hd;
            gt = j->gate + t * j->ldgate + h * j->gate_head_stride;
            clef_cpu_sigmoid_mul(ot, gt, j->hd);
        }
    }
}

void
clef_cpu_attention_gate(clef_cpu_pool *pool, float *o, int64_t ldo,
    const float *gate, int64_t ldgate, int64_t gate_head_stride, int64_t tokens,
    int hq, int hd)
{
    gate_job  j = { o, ldo, gate, ldgate, gate_head_stride, hq, hd };

    clef_cpu_pool_for(pool, tokens, 8, gate_task, &j);
}
