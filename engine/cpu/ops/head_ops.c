#include "cpu/ops/head_ops.h"

#include <math.h>

void
clef_head_ln_rows(const clef_head_ln *ln, const float *x, float *y,
    size_t rows)
{
    size_t        r;
    int           i, n = ln->n;
    double        mean, var, d;
    float         inv;
    const float  *xr;
    float        *yr;

    for (r = 0; r < rows; r++) {
        xr = x + r * (size_t) n;
        yr = y + r * (size_t) n;

        /* two passes in double: the statistics are the only place where
         * fp32 summation over thousands of features would cost digits */
        mean = 0.0;
        for (i = 0; i < n; i++) {
            mean += xr[i];
        }
        mean /= n;
        var = 0.0;
        for (i = 0; i < n; i++) {
            d = xr[i] - mean;
            var += d * d;
        }
        var /= n;
        inv = (float) (1.0 / sqrt(var + CLEF_HEAD_LN_EPS));

        for (i = 0; i < n; i++) {
            yr[i] = ((xr[i] - (float) mean) * inv) * ln->weight[i] + ln->bias[i];
        }
    }
}

void
clef_head_linear_rows(const clef_head_linear *l, const float *x, float *y,
    size_t rows, float *scratch)
{
    size_t  r;
    int     o;

    if (rows == 0) {
        return;
    }
    if (l->packed.data != NULL) {
        clef_cpu_gemm_packed((int64_t) rows, x, l->in, &l->packed, 0.0f, y, l->out);
    } else {
        clef_cpu_gemm((int64_t) rows, l->out, l->in, 1.0f, clef_cpu_rows(x, l->in),
                      clef_cpu_trans(l->weight, l->in), 0.0f, y, l->out, scratch);
    }
    if (l->bias != NULL) {
        for (r = 0; r < rows; r++) {
            for (o = 0; o < l->out; o++) {
                y[r * (size_t) l->out + o] += l->bias[o];
            }
        }
    }
}

void
clef_head_gelu(float *x, size_t n)
{
    size_t  i;

    for (i = 0; i < n; i++) {
        x[i] = 0.5f * x[i] * (1.0f + erff(x[i] * (float) M_SQRT1_2));
    }
}
