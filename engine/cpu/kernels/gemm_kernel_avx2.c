/*
 * The 6 x 16 fp32 micro-kernel for x86-64-v3 (AVX2 + FMA): twelve 8-lane
 * accumulators (6 rows x 2 vectors of columns), two vectors of B and one
 * broadcast of A in flight, which fills the 16 ymm registers and keeps both
 * FMA pipes busy.  Explicit FMA intrinsics are not affected by
 * -ffp-contract=off; nothing here depends on the CPU beyond AVX2 and FMA,
 * so machines with AVX-512 compute the same bits.
 *
 * Two entry points, one arithmetic: the packed one reads A's six values of
 * a step from one pointer, the strided one from a matrix read in place (the
 * small products, whose packing would cost as much as their arithmetic).
 * The steps, their order and the instructions applied to a lane are the
 * same.  The bf16-weight entry points only load B differently: a step's 16
 * weights are one 32-byte load, widened to fp32 by a shift (even 16-bit
 * positions: columns 0-7) and a mask (odd positions: columns 8-15), which
 * is exact, so the lanes see the values and the FMAs of the fp32 kernel.
 */
#include "cpu/kernels/gemm.h"
#include "cpu/kernels/gemm_kernel.h"

#include <immintrin.h>

#if !defined(__AVX2__) || !defined(__FMA__)
#error "engine/cpu is built for x86-64-v3 (-march=x86-64-v3): AVX2 and FMA"
#endif

#if CLEF_GEMM_MR != 6 || CLEF_GEMM_NR != 16
#error "gemm_kernel_avx2.c computes 6 x 16 tiles"
#endif

/* One step k of the tile: row i's value broadcast from A_i (an address
 * expression), times B's two vectors, into row i's accumulators. */
#define ROW(i, A_i)                                                          \
    av = _mm256_broadcast_ss(A_i);                                           \
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

#define DECLARE                                                              \
    __m256   c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51;     \
    __m256   b0, b1, av, al, r0, r1;                                         \
    int64_t  k

/* zeroed accumulators, and C fetched while they fill (it is read or
 * written once, at the end) */
#define START                                                                \
    c00 = c01 = c10 = c11 = c20 = c21 = _mm256_setzero_ps();                 \
    c30 = c31 = c40 = c41 = c50 = c51 = _mm256_setzero_ps();                 \
    for (k = 0; k < CLEF_GEMM_MR; k++) {                                     \
        _mm_prefetch((const char *) (c + k * ldc), _MM_HINT_T0);             \
        _mm_prefetch((const char *) (c + k * ldc + CLEF_GEMM_NR - 1),        \
                     _MM_HINT_T0);                                           \
    }

#define FINISH                                                               \
    al = _mm256_set1_ps(alpha);                                              \
    STORE(0);                                                                \
    STORE(1);                                                                \
    STORE(2);                                                                \
    STORE(3);                                                                \
    STORE(4);                                                                \
    STORE(5)

/* B's two vectors of step k from a bf16 panel (gemm_kernel.h) */
#define LOAD_BF16(bp)                                                        \
    raw = _mm256_loadu_si256((const __m256i *) (bp));                        \
    b0 = _mm256_castsi256_ps(_mm256_slli_epi32(raw, 16));                    \
    b1 = _mm256_castsi256_ps(_mm256_and_si256(raw, hi))

/* One step k of the tile's six rows: A packed (a), or read in place
 * (p: rows 0-2, q: rows 3-5) */
#define PACKED_STEP                                                          \
    ROW(0, a);                                                               \
    ROW(1, a + 1);                                                           \
    ROW(2, a + 2);                                                           \
    ROW(3, a + 3);                                                           \
    ROW(4, a + 4);                                                           \
    ROW(5, a + 5);                                                           \
    a += CLEF_GEMM_MR

#define STRIDED_STEP                                                         \
    ROW(0, p);                                                               \
    ROW(1, p + ars);                                                         \
    ROW(2, p + 2 * ars);                                                     \
    ROW(3, q);                                                               \
    ROW(4, q + ars);                                                         \
    ROW(5, q + 2 * ars);                                                     \
    p += acs;                                                                \
    q += acs

void
clef_cpu_gemm_kernel(int64_t kc, const float *a, const float *b, int64_t bks,
    float alpha, float *c, int64_t ldc, int load_c)
{
    DECLARE;

    START;
#pragma GCC unroll 4
    for (k = 0; k < kc; k++) {
        b0 = _mm256_loadu_ps(b);
        b1 = _mm256_loadu_ps(b + 8);
        b += bks;
        PACKED_STEP;
    }
    FINISH;
}

void
clef_cpu_gemm_kernel_strided(int64_t kc, const float *a, int64_t ars, int64_t acs,
    const float *b, int64_t bks, float alpha, float *c, int64_t ldc, int load_c)
{
    const float  *p = a, *q = a + 3 * ars;
    DECLARE;

    START;
#pragma GCC unroll 4
    for (k = 0; k < kc; k++) {
        b0 = _mm256_loadu_ps(b);
        b1 = _mm256_loadu_ps(b + 8);
        b += bks;
        STRIDED_STEP;
    }
    FINISH;
}

/* The bf16 loops, with or without pulling step k of the next tile's panel
 * into L1 (a line holds two steps; prefetching one again is nearly free):
 * one loop each, so that neither tests anything per step. */
#define BF16_LOOP(STEP_A, PREFETCH)                                          \
    for (k = 0; k < kc; k++) {                                               \
        PREFETCH;                                                            \
        LOAD_BF16(b);                                                        \
        b += CLEF_GEMM_NR;                                                   \
        STEP_A;                                                              \
    }

#define PREFETCH_NEXT                                                        \
    _mm_prefetch((const char *) (next + k * CLEF_GEMM_NR), _MM_HINT_T0)

void
clef_cpu_gemm_kernel_bf16w(int64_t kc, const float *a, const uint16_t *b,
    const uint16_t *next, float alpha, float *c, int64_t ldc, int load_c)
{
    __m256i  raw, hi = _mm256_set1_epi32((int) 0xffff0000u);
    DECLARE;

    START;
    if (next != NULL) {
#pragma GCC unroll 4
        BF16_LOOP(PACKED_STEP, PREFETCH_NEXT)
    } else {
#pragma GCC unroll 4
        BF16_LOOP(PACKED_STEP, (void) 0)
    }
    FINISH;
}

void
clef_cpu_gemm_kernel_bf16w_strided(int64_t kc, const float *a, int64_t ars,
    int64_t acs, const uint16_t *b, const uint16_t *next, float alpha, float *c,
    int64_t ldc, int load_c)
{
    const float  *p = a, *q = a + 3 * ars;
    __m256i       raw, hi = _mm256_set1_epi32((int) 0xffff0000u);
    DECLARE;

    START;
    if (next != NULL) {
#pragma GCC unroll 4
        BF16_LOOP(STRIDED_STEP, PREFETCH_NEXT)
    } else {
#pragma GCC unroll 4
        BF16_LOOP(STRIDED_STEP, (void) 0)
    }
    FINISH;
}
