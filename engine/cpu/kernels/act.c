#include "cpu/kernels/act.h"

#include "cpu/kernels/vec.h"

void
clef_cpu_silu_mul(float *g, const float *u, int n)
{
    int  i;

    for (i = 0; i + 8 <= n; i += 8) {
        _mm256_storeu_ps(g + i, _mm256_mul_ps(clef_silu8(_mm256_loadu_ps(g + i)),
                                              _mm256_loadu_ps(u + i)));
    }
    for ( ; i < n; i++) {
        g[i] = clef_silu(g[i]) * u[i];
    }
}

void
clef_cpu_sigmoid_mul(float *o, const float *g, int n)
{
    int  i;

    for (i = 0; i + 8 <= n; i += 8) {
        _mm256_storeu_ps(o + i, _mm256_mul_ps(_mm256_loadu_ps(o + i),
                                              clef_sigmoid8(_mm256_loadu_ps(g + i))));
    }
    for ( ; i < n; i++) {
        o[i] *= clef_sigmoid(g[i]);
    }
}

void
clef_cpu_scale_gate_silu(const float *x, const float *z, float *y, int n,
    const float *w, float r)
{
    __m256  rv = _mm256_set1_ps(r), v;
    int     i;

    for (i = 0; i + 8 <= n; i += 8) {
        v = _mm256_mul_ps(_mm256_loadu_ps(w + i),
                          _mm256_mul_ps(_mm256_loadu_ps(x + i), rv));
        _mm256_storeu_ps(y + i, _mm256_mul_ps(v, clef_silu8(_mm256_loadu_ps(z + i))));
    }
    for ( ; i < n; i++) {
        y[i] = (w[i] * (x[i] * r)) * clef_silu(z[i]);
    }
}

void
clef_cpu_decay_row(float *kk, float *qk, const float *gam, float gs, float bs,
    int n)
{
    __m256  gv = _mm256_set1_ps(gs), bv = _mm256_set1_ps(bs), e;
    float   es;
    int     r;

    for (r = 0; r + 8 <= n; r += 8) {
        e = clef_exp8(_mm256_sub_ps(gv, _mm256_loadu_ps(gam + r)));
        _mm256_storeu_ps(kk + r, _mm256_mul_ps(_mm256_loadu_ps(kk + r),
                                               _mm256_mul_ps(bv, e)));
        _mm256_storeu_ps(qk + r, _mm256_mul_ps(_mm256_loadu_ps(qk + r), e));
    }
    for ( ; r < n; r++) {
        es = clef_exp(gs - gam[r]);
        kk[r] *= bs * es;
        qk[r] *= es;
    }
}

float
clef_cpu_exp_sum(float *s, int n, float m)
{
    __m256  mv = _mm256_set1_ps(m), acc = _mm256_setzero_ps(), e;
    float   lane[8], sum;
    int     i;

    /* lane j sums elements j, j + 8, ... from zero, as clef_vec_sum()'s
     * acc[j] does, and the lanes are combined in its order */
    for (i = 0; i + 8 <= n; i += 8) {
        e = clef_exp8(_mm256_sub_ps(_mm256_loadu_ps(s + i), mv));
        _mm256_storeu_ps(s + i, e);
        acc = _mm256_add_ps(acc, e);
    }
    _mm256_storeu_ps(lane, acc);
    sum = ((lane[0] + lane[4]) + (lane[1] + lane[5]))
          + ((lane[2] + lane[6]) + (lane[3] + lane[7]));
    for ( ; i < n; i++) {
        s[i] = clef_exp(s[i] - m);
        sum += s[i];
    }
    return sum;
}
