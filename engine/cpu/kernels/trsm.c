#include "cpu/kernels/trsm.h"

#include <math.h>

#include <immintrin.h>

#if !defined(__AVX2__) || !defined(__FMA__)
#error "engine/cpu is built for x86-64-v3 (-march=x86-64-v3): AVX2 and FMA"
#endif

/* Row s of x is kept in registers while the rows above are subtracted from
 * it: 64 columns at a time (eight accumulators hide the FMA latency), then
 * 8, then one.  A column goes through the same operations in every case. */
void
clef_cpu_trsm_unit_lower(int n, const float *l, int64_t ldl, float *x,
    int64_t ldx, int cols)
{
    __m256        a0, a1, a2, a3, a4, a5, a6, a7, f;
    const float  *ls, *xr;
    float        *xs, acc;
    int           s, r, c;

    for (s = 1; s < n; s++) {
        xs = x + s * ldx;
        ls = l + s * ldl;
        for (c = 0; c + 64 <= cols; c += 64) {
            a0 = _mm256_loadu_ps(xs + c);
            a1 = _mm256_loadu_ps(xs + c + 8);
            a2 = _mm256_loadu_ps(xs + c + 16);
            a3 = _mm256_loadu_ps(xs + c + 24);
            a4 = _mm256_loadu_ps(xs + c + 32);
            a5 = _mm256_loadu_ps(xs + c + 40);
            a6 = _mm256_loadu_ps(xs + c + 48);
            a7 = _mm256_loadu_ps(xs + c + 56);
            for (r = 0; r < s; r++) {
                f = _mm256_broadcast_ss(ls + r);
                xr = x + r * ldx + c;
                a0 = _mm256_fnmadd_ps(f, _mm256_loadu_ps(xr), a0);
                a1 = _mm256_fnmadd_ps(f, _mm256_loadu_ps(xr + 8), a1);
                a2 = _mm256_fnmadd_ps(f, _mm256_loadu_ps(xr + 16), a2);
                a3 = _mm256_fnmadd_ps(f, _mm256_loadu_ps(xr + 24), a3);
                a4 = _mm256_fnmadd_ps(f, _mm256_loadu_ps(xr + 32), a4);
                a5 = _mm256_fnmadd_ps(f, _mm256_loadu_ps(xr + 40), a5);
                a6 = _mm256_fnmadd_ps(f, _mm256_loadu_ps(xr + 48), a6);
                a7 = _mm256_fnmadd_ps(f, _mm256_loadu_ps(xr + 56), a7);
            }
            _mm256_storeu_ps(xs + c, a0);
            _mm256_storeu_ps(xs + c + 8, a1);
            _mm256_storeu_ps(xs + c + 16, a2);
            _mm256_storeu_ps(xs + c + 24, a3);
            _mm256_storeu_ps(xs + c + 32, a4);
            _mm256_storeu_ps(xs + c + 40, a5);
            _mm256_storeu_ps(xs + c + 48, a6);
            _mm256_storeu_ps(xs + c + 56, a7);
        }
        for ( ; c + 8 <= cols; c += 8) {
            a0 = _mm256_loadu_ps(xs + c);
            for (r = 0; r < s; r++) {
                a0 = _mm256_fnmadd_ps(_mm256_broadcast_ss(ls + r),
                                      _mm256_loadu_ps(x + r * ldx + c), a0);
            }
            _mm256_storeu_ps(xs + c, a0);
        }
        for ( ; c < cols; c++) {
            acc = xs[c];
            for (r = 0; r < s; r++) {
                acc = fmaf(-ls[r], x[r * ldx + c], acc);
            }
            xs[c] = acc;
        }
    }
}
