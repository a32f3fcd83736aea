/*
 * The 6 x 16 fp32 micro-kernel for x86-64-v3 (AVX2 + FMA): twelve 8-lane
 * accumulators (6 rows x 2 vectors of columns), two vectors of B and one
 * broadcast of A in flight, which fills the 16 ymm registers and keeps both
 * FMA pipes busy.  Explicit FMA intrinsics are not affected by
 * -ffp-contract=off; nothing here depends on the CPU beyond AVX2 and FMA,
 * so machines with AVX-512 compute the same bits.
 */
#include "gemm.h"
#include "gemm_kernel.h"

#include <immintrin.h>

#if !defined(__AVX2__) || !defined(__FMA__)
#error "engine/cpu is built for x86-64-v3 (-march=x86-64-v3): AVX2 and FMA"
#endif

#if CLEF_GEMM_MR != 6 || CLEF_GEMM_NR != 16
#error "gemm_kernel_avx2.c computes 6 x 16 tiles"
#endif

#define ROW(i)                                                               \
    av = _mm256_broadcast_ss(a + (i));                                       \
    c##i##0 = _mm256_fmadd_ps(av, b0, c##i##0);                              \
    c##i##1 = _mm256_fmadd_ps(av, b1, c##i##1)

#define STORE(i)                                                             \
    r0 = _mm256_mul_ps(c##i##0, al);                                         \
    r1 = _mm256_mul_ps(c##i##1, al);                                         \
    if (load_c) {                                                            \
        r0 = _mm256_add_ps(_mm256_loadu_ps(c + (i) * ldc), r0);              \
        r1 = _mm256_add_ps(_mm256_loadu_ps(c + (i) * ldc + 8), r1);          \
    }                                                                        \
    _mm256_storeu_ps(c + (i) * ldc, r0);                                     \
    _mm256_storeu_ps(c + (i) * ldc + 8, r1)

void
clef_cpu_gemm_kernel(int64_t kc, const float *a, const float *b, float alpha,
    float *c, int64_t ldc, int load_c)
{
    __m256   c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51;
    __m256   b0, b1, av, al, r0, r1;
    int64_t  k;

    c00 = c01 = c10 = c11 = c20 = c21 = _mm256_setzero_ps();
    c30 = c31 = c40 = c41 = c50 = c51 = _mm256_setzero_ps();

    /* C is read (or written) once at the end: start fetching it now */
    for (k = 0; k < CLEF_GEMM_MR; k++) {
        _mm_prefetch((const char *) (c + k * ldc), _MM_HINT_T0);
        _mm_prefetch((const char *) (c + k * ldc + CLEF_GEMM_NR - 1), _MM_HINT_T0);
    }

#pragma GCC unroll 4
    for (k = 0; k < kc; k++) {
        b0 = _mm256_load_ps(b);
        b1 = _mm256_load_ps(b + 8);
        ROW(0);
        ROW(1);
        ROW(2);
        ROW(3);
        ROW(4);
        ROW(5);
        a += CLEF_GEMM_MR;
        b += CLEF_GEMM_NR;
    }

    al = _mm256_set1_ps(alpha);
    STORE(0);
    STORE(1);
    STORE(2);
    STORE(3);
    STORE(4);
    STORE(5);
}
