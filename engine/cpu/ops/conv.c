#include "cpu/ops/conv.h"

#include "cpu/kernels/vec.h"
#include "cpu/ops/records.h"

typedef struct {
    const float    *x, *w;
    float          *y;
    int64_t         ldx, ldy;
    int             channels, kernel;
    const int32_t  *cu;
    int             n_records;
    const float *const *tails;
} conv_job;

/* the longest kernel a configuration may name (model_config.c) */
#define CONV_MAX_KERNEL  64

/* One token: y = silu(sum of the taps from `first` on, in tap order), tap
 * i reading row x[i].  A lane's sum starts from zero and adds w * x tap
 * after tap, as the scalar tail does, so every channel has the same bits
 * wherever it falls; eight channels at a time stay in a register through
 * the taps and the silu. */
static void
conv_token(const float *const *x, const float *w, int C, int K, int first,
    float *dst)
{
    __m256        acc;
    float         s;
    int           i, c;

    for (c = 0; c + 8 <= C; c += 8) {
        acc = _mm256_setzero_ps();
        for (i = first; i < K; i++) {
            acc = _mm256_add_ps(acc, _mm256_mul_ps(
                      _mm256_loadu_ps(w + (int64_t) i * C + c),
                      _mm256_loadu_ps(x[i] + c)));
        }
        _mm256_storeu_ps(dst + c, clef_silu8(acc));
    }
    for ( ; c < C; c++) {
        s = 0.0f;
        for (i = first; i < K; i++) {
            s += w[(int64_t) i * C + c] * x[i][c];
        }
        dst[c] = clef_silu(s);
    }
}

static void
conv_task(void *ctx, int64_t begin, int64_t end, int worker)
{
    const conv_job  *j = ctx;
    const float     *rows[CONV_MAX_KERNEL], *tail;
    int64_t          t, first, src;
    int              r, i, K = j->kernel;

    r = clef_cpu_record_of(j->cu, j->n_records, begin);
    for (t = begin; t < end; t++) {
        while (t >= j->cu[r + 1]) {
            r++;
        }
        /* taps 0..K-1 read tokens t - (K-1) + i: those before the record
         * are skipped, or read from its tail when it continues */
        tail = j->tails != NULL ? j->tails[r] : NULL;
        first = tail != NULL ? 0 : j->cu[r] - (t - (K - 1));
        first = first > 0 ? first : 0;
        for (i = (int) first; i < K; i++) {
            src = t - (K - 1) + i;
            rows[i] = src >= j->cu[r]
                      ? j->x + src * j->ldx
                      : tail + (K - 1 - (j->cu[r] - src)) * j->channels;
        }
        conv_token(rows, j->w, j->channels, K, (int) first, j->y + t * j->ldy);
    }
}

void
clef_cpu_conv_silu(clef_cpu_pool *pool, const float *x, int64_t ldx, float *y,
    int64_t ldy, int channels, const float *w, int kernel,
    const int32_t *cu_seqlens, int n_records)
{
    clef_cpu_conv_silu_tails(pool, x, ldx, y, ldy, channels, w, kernel,
                             cu_seqlens, n_records, NULL);
}

void
clef_cpu_conv_silu_tails(clef_cpu_pool *pool, const float *x, int64_t ldx,
    float *y, int64_t ldy, int channels, const float *w, int kernel,
    const int32_t *cu_seqlens, int n_records, const float *const *tails)
{
    conv_job  j = { x, w, y, ldx, ldy, channels, kernel, cu_seqlens, n_records,
                    tails };
    int64_t   tokens = cu_seqlens[n_records];

    clef_cpu_pool_for(pool, tokens, 4, conv_task, &j);
}
