#include "cpu/ops/head_mha.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Folds one chunk of scores s[nq][c] of head h into the running maxima mx,
 * sums l and outputs o (online softmax): s becomes the chunk's weights. */
static void
softmax_fold(float *s, size_t nq, size_t c, float *mx, float *l, float *o,
    int width, int d)
{
    size_t  i, j;
    int     k;
    float   m, mnew, alpha, sum;
    float  *si, *oi;

    for (i = 0; i < nq; i++) {
        si = s + i * c;
        oi = o + i * (size_t) width;

        m = si[0];
        for (j = 1; j < c; j++) {
            m = si[j] > m ? si[j] : m;
        }
        mnew = m > mx[i] ? m : mx[i];
        alpha = isinf(mx[i]) ? 0.0f : expf(mx[i] - mnew);

        sum = 0.0f;
        for (j = 0; j < c; j++) {
            si[j] = expf(si[j] - mnew);
            sum += si[j];
        }
        for (k = 0; k < d; k++) {
            oi[k] *= alpha;
        }
        l[i] = l[i] * alpha + sum;
        mx[i] = mnew;
    }
}

int
clef_head_mha_forward(const clef_head_mha *a, const float *q, size_t nq,
    const float *kv, size_t nkv, const clef_head_ln *kv_norm, float *out,
    clef_error *err)
{
    int             W = a->width;
    clef_head_attn  at;

    memset(&at, 0, sizeof(at));
    at.width = W;
    at.heads = a->heads;
    at.q.in = W;
    at.q.out = W;
    at.q.weight = a->in_weight;
    at.q.bias = a->in_bias;
    at.kv.in = W;
    at.kv.out = 2 * W;
    at.kv.weight = a->in_weight + (size_t) W * W;
    at.kv.bias = a->in_bias + W;
    at.out.in = W;
    at.out.out = W;
    at.out.weight = a->out_weight;
    at.out.bias = a->out_bias;
    return clef_head_attn_forward(&at, q, nq, kv, nkv, kv_norm, out, err);
}

int
clef_head_attn_forward(const clef_head_attn *a, const float *q, size_t nq,
    const float *kv, size_t nkv, const clef_head_ln *kv_norm, float *out,
    clef_error *err)
{
    int                W = a->width, d = a->width / a->heads, h;
    size_t             chunk, c0, c, i;
    float              scale = 1.0f / sqrtf((float) d);
    float             *Q, *O, *S, *KV, *kvn, *mx, *l, *oi, *gs;
    const float       *src;

    if (nq == 0) {
        return 0;
    }
    if (nkv == 0) {
        return clef_error_fail(err, CLEF_E_INTERNAL,
                               "the head's attention has no keys");
    }
    chunk = nkv < CLEF_HEAD_MHA_CHUNK ? nkv : CLEF_HEAD_MHA_CHUNK;

    Q = malloc(nq * W * sizeof(float));
    O = calloc(nq * W, sizeof(float));
    S = malloc(nq * chunk * sizeof(float));
    KV = malloc(chunk * 2 * W * sizeof(float));
    kvn = kv_norm ? malloc(chunk * W * sizeof(float)) : NULL;
    mx = malloc(nq * a->heads * sizeof(float));
    l = calloc(nq * a->heads, sizeof(float));
    gs = malloc(CLEF_GEMM_SCRATCH_FLOATS * sizeof(float));
    if (Q == NULL || O == NULL || S == NULL || KV == NULL || mx == NULL
        || l == NULL || gs == NULL || (kv_norm != NULL && kvn == NULL))
    {
        free(Q); free(O); free(S); free(KV); free(kvn); free(mx); free(l); free(gs);
        return clef_error_fail(err, CLEF_E_NO_MEMORY,
                               "out of memory in the head's attention");
    }
    for (i = 0; i < nq * a->heads; i++) {
        mx[i] = -INFINITY;
    }

    clef_head_linear_rows(&a->q, q, Q, nq, gs);

    for (c0 = 0; c0 < nkv; c0 += chunk) {
        c = nkv - c0 < chunk ? nkv - c0 : chunk;
        src = kv + c0 * W;
        if (kv_norm != NULL) {
            clef_head_ln_rows(kv_norm, src, kvn, c);
            src = kvn;
        }
        /* K and V of the chunk in one product: rows W..3W-1 of in_proj */
        clef_head_linear_rows(&a->kv, src, KV, c, gs);

        for (h = 0; h < a->heads; h++) {
            clef_cpu_gemm((int64_t) nq, (int64_t) c, d, scale,
                          clef_cpu_rows(Q + h * d, W),
                          clef_cpu_trans(KV + h * d, 2 * W), 0.0f, S,
                          (int64_t) c, gs);
            softmax_fold(S, nq, c, mx + h * nq, l + h * nq, O + h * d, W, d);
            clef_cpu_gemm((int64_t) nq, d, (int64_t) c, 1.0f,
                          clef_cpu_rows(S, (int64_t) c),
                          clef_cpu_rows(KV + W + h * d, 2 * W), 1.0f, O + h * d,
                          W, gs);
        }
    }

    for (h = 0; h < a->heads; h++) {
        for (i = 0; i < nq; i++) {
            float  inv = 1.0f / l[h * nq + i];
            int    k;

            oi = O + i * W + h * d;
            for (k = 0; k < d; k++) {
                oi[k] *= inv;
            }
        }
    }
    clef_head_linear_rows(&a->out, O, out, nq, gs);

    free(Q); free(O); free(S); free(KV); free(kvn); free(mx); free(l); free(gs);
    return 0;
}
