#include "cpu/ops/gdn.h"

#include <string.h>
#include <xmmintrin.h>

#include "cpu/kernels/act.h"
#include "cpu/kernels/gemm.h"
#include "cpu/kernels/trsm.h"
#include "cpu/kernels/vec.h"

#define C  CLEF_GDN_CHUNK

typedef struct {
    float        *qk;
    int64_t       ldqk;
    int           hk, dk, hv;
    const float  *ba;
    int64_t       ldba;
    const float  *A_log, *dt_bias;
    float        *beta, *g;
} prepare_job;

static void
l2norm(float *x, int n)
{
    float  r = 1.0f / sqrtf(clef_vec_sumsq(x, n) + 1e-6f);
    int    i;

    for (i = 0; i < n; i++) {
        x[i] *= r;
    }
}

static void
prepare_task(void *ctx, int64_t begin, int64_t end, int worker)
{
    const prepare_job  *j = ctx;
    float              *row, *q, *k;
    const float        *b, *a;
    float               scale = (float) pow((double) j->dk, -0.5);
    int64_t             t;
    int                 h, i;

    for (t = begin; t < end; t++) {
        row = j->qk + t * j->ldqk;
        for (h = 0; h < j->hk; h++) {
            q = row + (int64_t) h * j->dk;
            k = row + (int64_t) (j->hk + h) * j->dk;
            l2norm(q, j->dk);
            l2norm(k, j->dk);
            for (i = 0; i < j->dk; i++) {
                q[i] *= scale;
            }
        }
        b = j->ba + t * j->ldba;
        a = b + j->hv;
        for (h = 0; h < j->hv; h++) {
            j->beta[t * j->hv + h] = clef_sigmoid(b[h]);
            j->g[t * j->hv + h] = -expf(j->A_log[h])
                                  * clef_softplus(a[h] + j->dt_bias[h]);
        }
    }
}

void
clef_cpu_gdn_prepare(clef_cpu_pool *pool, float *qk, int64_t ldqk,
    int64_t tokens, int hk, int dk, const float *ba, int64_t ldba, int hv,
    const float *A_log, const float *dt_bias, float *beta, float *g)
{
    prepare_job  j = { qk, ldqk, hk, dk, hv, ba, ldba, A_log, dt_bias, beta, g };

    clef_cpu_pool_for(pool, tokens, 16, prepare_task, &j);
}

size_t
clef_cpu_gdn_scratch_floats(int dk, int dv)
{
    /* S, KK, QK, [U | W], Q*e^gamma, K*e^(gamma_n - gamma), V', gamma,
     * the GEMM's packing */
    return (size_t) dk * dv + 2 * C * C + (size_t) C * (dv + dk)
           + 2 * (size_t) C * dk + (size_t) C * dv + C
           + CLEF_GEMM_SCRATCH_FLOATS;
}

void
clef_cpu_gdn_chunk_head(int64_t T, int dk, int dv, const float *q,
    const float *k, int64_t ldqk, const float *v, int64_t ldv, const float *g,
    const float *beta, int64_t ldgb, float *o, int64_t ldo, float *scratch,
    float *state)
{
    float        *S = state != NULL ? state : scratch;
    float        *kk = scratch + (size_t) dk * dv;
    float        *qk = kk + C * C;
    float        *uw = qk + C * C;              /* [C][dv + dk] */
    float        *qg = uw + (size_t) C * (dv + dk);
    float        *kd = qg + (size_t) C * dk;
    float        *vn = kd + (size_t) C * dk;
    float        *gam = vn + (size_t) C * dv;
    float        *gs = gam + C;                 /* the GEMM's scratch */
    const float  *qc, *kc, *vc;
    float        *oc, *row, acc, bs, e, en;
    int64_t       t0;
    int           n, s, r, i, ldu = dv + dk;

    if (state == NULL) {
        memset(S, 0, sizeof(float) * (size_t) dk * dv);
    }

    for (t0 = 0; t0 < T; t0 += C) {
        n = T - t0 < C ? (int) (T - t0) : C;
        qc = q + t0 * ldqk;
        kc = k + t0 * ldqk;
        vc = v + t0 * ldv;
        oc = o + t0 * ldo;

        acc = 0.0f;
        for (s = 0; s < n; s++) {
            acc += g[(t0 + s) * ldgb];
            gam[s] = acc;
        }

        /* KK = K K^T, QK = Q K^T */
        clef_cpu_gemm(n, n, dk, 1.0f, clef_cpu_rows(kc, ldqk),
                      clef_cpu_trans(kc, ldqk), 0.0f, kk, C, gs);
        clef_cpu_gemm(n, n, dk, 1.0f, clef_cpu_rows(qc, ldqk),
                      clef_cpu_trans(kc, ldqk), 0.0f, qk, C, gs);

        /* Decay masks.  Only r <= s is ever exponentiated: gamma is
         * non-increasing, so e^{gamma_s - gamma_r} <= 1 there, and the
         * upper triangle (which would overflow) is never formed. */
        for (s = 0; s < n; s++) {
            bs = beta[(t0 + s) * ldgb];
            clef_cpu_decay_row(kk + s * C, qk + s * C, gam, gam[s], bs, s);
            for (r = s + 1; r < n; r++) {
                qk[s * C + r] = 0.0f;
            }

            /* right-hand sides: beta v and beta e^gamma k */
            row = uw + (size_t) s * ldu;
            e = clef_exp(gam[s]);
            for (i = 0; i < dv; i++) {
                row[i] = bs * vc[s * ldv + i];
            }
            for (i = 0; i < dk; i++) {
                row[dv + i] = (bs * kc[s * ldqk + i]) * e;
            }
        }

        /* (I + A) [U | W] = [beta V | beta e^gamma K]; Unit: the diagonal
         * and upper triangle of kk are not read. */
        clef_cpu_trsm_unit_lower(n, kk, C, uw, ldu, ldu);

        /* V' = U - W S */
        for (s = 0; s < n; s++) {
            memcpy(vn + (size_t) s * dv, uw + (size_t) s * ldu,
                   sizeof(float) * dv);
        }
        clef_cpu_gemm(n, dv, dk, -1.0f, clef_cpu_rows(uw + dv, ldu),
                      clef_cpu_rows(S, dv), 1.0f, vn, dv, gs);

        /* O = (Q e^gamma) S + (QK^T Gamma) V' */
        en = gam[n - 1];
        for (s = 0; s < n; s++) {
            e = clef_exp(gam[s]);
            for (i = 0; i < dk; i++) {
                qg[s * dk + i] = qc[s * ldqk + i] * e;
            }
            e = clef_exp(en - gam[s]);
            for (i = 0; i < dk; i++) {
                kd[s * dk + i] = kc[s * ldqk + i] * e;
            }
        }
        clef_cpu_gemm(n, dv, dk, 1.0f, clef_cpu_rows(qg, dk),
                      clef_cpu_rows(S, dv), 0.0f, oc, ldo, gs);
        clef_cpu_gemm(n, dv, n, 1.0f, clef_cpu_rows(qk, C),
                      clef_cpu_rows(vn, dv), 1.0f, oc, ldo, gs);

        /* S = e^{gamma_n} S + (K e^{gamma_n - gamma})^T V' */
        e = clef_exp(en);
        for (i = 0; i < dk * dv; i++) {
            S[i] *= e;
        }
        clef_cpu_gemm(dk, dv, n, 1.0f, clef_cpu_trans(kd, dk),
                      clef_cpu_rows(vn, dv), 1.0f, S, dv, gs);
    }
}

void
clef_cpu_gdn_recurrent_head(int64_t T, int dk, int dv, const float *q,
    const float *k, int64_t ldqk, const float *v, int64_t ldv, const float *g,
    const float *beta, int64_t ldgb, float *o, int64_t ldo, float *scratch,
    float *state)
{
    float        *S = state != NULL ? state : scratch;
    float        *d = scratch + (size_t) dk * dv;
    float        *srow, *ot, e, b;
    const float  *qt, *kt, *vt;
    int64_t       t;
    int           i, c;

    if (state == NULL) {
        memset(S, 0, sizeof(float) * (size_t) dk * dv);
    }

    for (t = 0; t < T; t++) {
        qt = q + t * ldqk;
        kt = k + t * ldqk;
        vt = v + t * ldv;
        ot = o + t * ldo;
        e = clef_exp(g[t * ldgb]);
        b = beta[t * ldgb];

        for (i = 0; i < dk * dv; i++) {
            S[i] *= e;
        }
        /* d = beta (v - S^T k) */
        memset(d, 0, sizeof(float) * dv);
        for (i = 0; i < dk; i++) {
            srow = S + (size_t) i * dv;
            for (c = 0; c < dv; c++) {
                d[c] += srow[c] * kt[i];
            }
        }
        for (c = 0; c < dv; c++) {
            d[c] = (vt[c] - d[c]) * b;
        }
        /* S += k d^T, o = S^T q */
        memset(ot, 0, sizeof(float) * dv);
        for (i = 0; i < dk; i++) {
            srow = S + (size_t) i * dv;
            for (c = 0; c < dv; c++) {
                srow[c] += kt[i] * d[c];
                ot[c] += srow[c] * qt[i];
            }
        }
    }
}

typedef struct {
    const clef_gdn_args  *a;
    const int32_t        *cu;
    float *const         *state;
    float                *scratch;
    size_t                per_worker;
} gdn_job;

/*
 * The delta rule runs with subnormals flushed to zero (MXCSR FTZ and DAZ,
 * set here on whichever thread runs the task and restored after).  Its
 * decay factors e^gamma and the state they shrink fall below 2^-126
 * wherever a head forgets fast: Intel cores then take a microcode assist
 * of ~100 cycles on every operation that reads or makes a subnormal, and
 * measured on a random medium checkpoint the delta rule took 4.2 s of an
 * 8.2 s forward instead of 0.19 s (AMD cores pay far less, which is why it
 * went unseen).  What is flushed is below 2^-126 in magnitude: added to
 * the state or an output it changes nothing unless they are themselves
 * below ~2^-102.  The mode is set by this code, not by the machine, so
 * every CPU computes the same bits.
 */
#define MXCSR_FTZ_DAZ  0x8040u

static void
gdn_task(void *ctx, int64_t begin, int64_t end, int worker)
{
    const gdn_job        *j = ctx;
    const clef_gdn_args  *a = j->a;
    float                *scratch = j->scratch + (size_t) worker * j->per_worker;
    int64_t               item, t0, T;
    int                   r, h, kh;
    float                *st;
    unsigned int          mxcsr = _mm_getcsr();

    _mm_setcsr(mxcsr | MXCSR_FTZ_DAZ);
    for (item = begin; item < end; item++) {
        r = (int) (item / a->hv);
        h = (int) (item % a->hv);
        kh = h / (a->hv / a->hk);
        t0 = j->cu[r];
        T = j->cu[r + 1] - t0;
        st = j->state != NULL && j->state[r] != NULL
             ? j->state[r] + (int64_t) h * a->dk * a->dv : NULL;
        (a->recurrent ? clef_cpu_gdn_recurrent_head : clef_cpu_gdn_chunk_head)(
            T, a->dk, a->dv,
            a->q + t0 * a->ldqk + (int64_t) kh * a->dk,
            a->k + t0 * a->ldqk + (int64_t) kh * a->dk, a->ldqk,
            a->v + t0 * a->ldv + (int64_t) h * a->dv, a->ldv,
            a->g + t0 * a->hv + h, a->beta + t0 * a->hv + h, a->hv,
            a->o + t0 * a->ldo + (int64_t) h * a->dv, a->ldo, scratch, st);
    }
    _mm_setcsr(mxcsr);
}

void
clef_cpu_gdn(clef_cpu_pool *pool, const clef_gdn_args *a,
    const int32_t *cu_seqlens, int n_records, float *scratch)
{
    clef_cpu_gdn_states(pool, a, cu_seqlens, n_records, NULL, scratch);
}

void
clef_cpu_gdn_states(clef_cpu_pool *pool, const clef_gdn_args *a,
    const int32_t *cu_seqlens, int n_records, float *const *state,
    float *scratch)
{
    gdn_job  j = { a, cu_seqlens, state, scratch,
                   clef_cpu_gdn_scratch_floats(a->dk, a->dv) };

    clef_cpu_pool_for(pool, (int64_t) n_records * a->hv, 1, gdn_task, &j);
}
