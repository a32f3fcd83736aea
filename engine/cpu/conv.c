#include "conv.h"

#include "records.h"
#include "vec.h"

typedef struct {
    const float    *x, *w;
    float          *y;
    int64_t         ldx, ldy;
    int             channels, kernel;
    const int32_t  *cu;
    int             n_records;
} conv_job;

static void
conv_task(void *ctx, int64_t begin, int64_t end, int worker)
{
    const conv_job  *j = ctx;
    const float     *src, *wi;
    float           *dst;
    int64_t          t, start;
    int              r, i, c, K = j->kernel, C = j->channels;

    r = clef_cpu_record_of(j->cu, j->n_records, begin);
    for (t = begin; t < end; t++) {
        while (t >= j->cu[r + 1]) {
            r++;
        }
        start = j->cu[r];
        dst = j->y + t * j->ldy;

        for (c = 0; c < C; c++) {
            dst[c] = 0.0f;
        }
        /* taps in order 0..K-1, skipping those before the record */
        for (i = 0; i < K; i++) {
            int64_t  s = t - (K - 1) + i;

            if (s < start) {
                continue;
            }
            src = j->x + s * j->ldx;
            wi = j->w + (int64_t) i * C;
            for (c = 0; c < C; c++) {
                dst[c] += wi[c] * src[c];
            }
        }
        for (c = 0; c < C; c++) {
            dst[c] = clef_silu(dst[c]);
        }
    }
}

void
clef_cpu_conv_silu(clef_cpu_pool *pool, const float *x, int64_t ldx, float *y,
    int64_t ldy, int channels, const float *w, int kernel,
    const int32_t *cu_seqlens, int n_records)
{
    conv_job  j = { x, w, y, ldx, ldy, channels, kernel, cu_seqlens, n_records };
    int64_t   tokens = cu_seqlens[n_records];

    clef_cpu_pool_for(pool, tokens, 4, conv_task, &j);
}
