/*
 * The wide micro-kernel for CPUs with AVX-512: a 12 x 32 tile of C (two
 * panels of A's MR = 6 rows, two panels of B's NR = 16 columns) in 24
 * 16-lane accumulators, which the 32 zmm registers hold with two vectors
 * of B and a broadcast of A beside them.  Twice the lanes of the AVX2
 * kernel per instruction, and more work per load of B.
 *
 * It computes the AVX2 kernel's bits.  An element of C is still one lane of
 * one accumulator, zeroed, then one fused multiply-add per step k in k
 * order, then a multiply by alpha and, when C is loaded, C + that: the same
 * operations on the same values in the same order, each correctly rounded,
 * and nothing (vector width, which lane, which tile) enters a lane from
 * outside.  So which kernel runs is not part of the numerics, and
 * gemm.c may pick per machine; test_cpu_gemm_wide checks the two bit for
 * bit.
 *
 * Panels are those of the AVX2 kernel, so packing and the weights do not
 * depend on the kernel.  A bf16 panel's step is 16 weights in the
 * interleaved order of gemm_kernel.h (column j at position 2j, or
 * 2(j - 8) + 1 from j = 8): widened position by position, the lanes hold
 * columns 0, 8, 1, 9, ...; the tile is put back in column order as it is
 * stored, which moves values and changes none.
 *
 * Two things only for speed.  The weights' format is a constant of each
 * entry point (bf16), so the loop is compiled once per format with no test
 * inside (a runtime pointer test there cost 6% in L1).  And a bf16 tile
 * may be given the panels of the tile to its right (next0, next1): it
 * pulls them into L1 a line every other step, so that the tile that next
 * reads them from memory does not wait for them (+10% on a 256 x 6144 x
 * 1024 product whose weights come from DRAM).  Prefetching reads nothing
 * into a register.
 *
 * Compiled for AVX-512F by function attribute, so the file builds under
 * every rule of the Makefile and nothing else in the library needs
 * AVX-512; gemm.c calls it only where the CPU and the OS have it.
 */
#include "cpu/kernels/gemm.h"
#include "cpu/kernels/gemm_kernel.h"

#include <immintrin.h>

#if CLEF_GEMM_MR != 6 || CLEF_GEMM_NR != 16
#error "gemm_kernel_avx512.c computes two 6 x 16 panels of A and of B"
#endif

#define TARGET  __attribute__((target("avx512f")))
#define INLINE  static inline __attribute__((always_inline))

/* Row r of the tile, step k: A[r][k] broadcast, times B's two vectors. */
#define ROW(r, A_r)                                                          \
    av = _mm512_set1_ps(*(A_r));                                             \
    c[r][0] = _mm512_fmadd_ps(av, b0, c[r][0]);                              \
    c[r][1] = _mm512_fmadd_ps(av, b1, c[r][1])

/* The six rows of one panel of A from r on: rows r .. r + 2 at p, + ars,
 * + 2 ars, rows r + 3 .. r + 5 the same from q = p + 3 ars. */
#define PANEL_ROWS(r, p, q)                                                  \
    ROW((r), (p));                                                           \
    ROW((r) + 1, (p) + ars);                                                 \
    ROW((r) + 2, (p) + 2 * ars);                                             \
    ROW((r) + 3, (q));                                                       \
    ROW((r) + 4, (q) + ars);                                                 \
    ROW((r) + 5, (q) + 2 * ars)

/* Step k of the next tile's bf16 panels into L1: a 64-byte line holds two
 * steps of a panel, so on even steps only. */
#define PREFETCH_NEXT(k)                                                     \
    if (next0 != NULL && ((k) & 1) == 0) {                                   \
        _mm_prefetch((const char *) (next0 + (k) * CLEF_GEMM_NR),            \
                     _MM_HINT_T0);                                           \
        _mm_prefetch((const char *) (next1 + (k) * CLEF_GEMM_NR),            \
                     _MM_HINT_T0);                                           \
    }

/*
 * The tile.  A: rows 0-5 from a0, rows 6-11 from a1, row r of a group at
 * + r * ars, step k at + k * acs (a packed panel: ars 1, acs MR).  B:
 * fp32 panels bf0, bf1 (step k at + k * bks), or, when bf16, bf16 panels
 * bh0, bh1 (step k at + k * NR), with next0, next1 (or NULL) to prefetch.
 * rows: 12, or 6 for a half tile (rows 0-5 only; a1 unused).  Inlined
 * into five entry points, so rows, a packed A's strides and bf16 are
 * constants.
 */
TARGET INLINE void
wide_tile(int64_t kc, int rows, const float *a0, const float *a1, int64_t ars,
    int64_t acs, const float *bf0, const float *bf1, int64_t bks, int bf16,
    const uint16_t *bh0, const uint16_t *bh1, const uint16_t *next0,
    const uint16_t *next1, float alpha, float *cp, int64_t ldc, int load_c)
{
    /* a widened bf16 step holds column j in lane order[j] */
    const __m512i  order = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14,
                                             1, 3, 5, 7, 9, 11, 13, 15);
    __m512         c[12][2], b0, b1, av, al, r0, r1;
    const float   *p0 = a0, *q0 = a0 + 3 * ars, *p1 = a1, *q1 = a1 + 3 * ars;
    int64_t        k, r;

    for (r = 0; r < rows; r++) {
        c[r][0] = _mm512_setzero_ps();
        c[r][1] = _mm512_setzero_ps();
    }

    for (k = 0; k < kc; k++) {
        if (bf16) {
            PREFETCH_NEXT(k);
            b0 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(
                     _mm256_loadu_si256((const __m256i *) (bh0 + k * CLEF_GEMM_NR))),
                     16));
            b1 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(
                     _mm256_loadu_si256((const __m256i *) (bh1 + k * CLEF_GEMM_NR))),
                     16));
        } else {
            b0 = _mm512_loadu_ps(bf0 + k * bks);
            b1 = _mm512_loadu_ps(bf1 + k * bks);
        }
        PANEL_ROWS(0, p0, q0);
        if (rows == 12) {
            PANEL_ROWS(6, p1, q1);
        }
        p0 += acs;
        q0 += acs;
        p1 += acs;
        q1 += acs;
    }

    al = _mm512_set1_ps(alpha);
    for (r = 0; r < rows; r++) {
        r0 = c[r][0];
        r1 = c[r][1];
        if (bf16) {
            r0 = _mm512_permutexvar_ps(order, r0);
            r1 = _mm512_permutexvar_ps(order, r1);
        }
        r0 = _mm512_mul_ps(r0, al);
        r1 = _mm512_mul_ps(r1, al);
        if (load_c) {
            r0 = _mm512_add_ps(_mm512_loadu_ps(cp + r * ldc), r0);
            r1 = _mm512_add_ps(_mm512_loadu_ps(cp + r * ldc + 16), r1);
        }
        _mm512_storeu_ps(cp + r * ldc, r0);
        _mm512_storeu_ps(cp + r * ldc + 16, r1);
    }
}

TARGET void
clef_cpu_gemm_kernel_wide(int64_t kc, const float *a0, const float *a1,
    const float *b0, const float *b1, int64_t bks, float alpha, float *c,
    int64_t ldc, int load_c)
{
    wide_tile(kc, 12, a0, a1, 1, CLEF_GEMM_MR, b0, b1, bks, 0, NULL, NULL, NULL,
              NULL, alpha, c, ldc, load_c);
}

TARGET void
clef_cpu_gemm_kernel_wide_strided(int64_t kc, const float *a, int64_t ars,
    int64_t acs, const float *b0, const float *b1, int64_t bks, float alpha,
    float *c, int64_t ldc, int load_c)
{
    wide_tile(kc, 12, a, a + CLEF_GEMM_MR * ars, ars, acs, b0, b1, bks, 0, NULL,
              NULL, NULL, NULL, alpha, c, ldc, load_c);
}

TARGET void
clef_cpu_gemm_kernel_wide_bf16w(int64_t kc, const float *a0, const float *a1,
    const uint16_t *b0, const uint16_t *b1, const uint16_t *next0,
    const uint16_t *next1, float alpha, float *c, int64_t ldc, int load_c)
{
    wide_tile(kc, 12, a0, a1, 1, CLEF_GEMM_MR, NULL, NULL, 0, 1, b0, b1, next0,
              next1, alpha, c, ldc, load_c);
}

TARGET void
clef_cpu_gemm_kernel_wide_bf16w_strided(int64_t kc, const float *a, int64_t ars,
    int64_t acs, const uint16_t *b0, const uint16_t *b1, const uint16_t *next0,
    const uint16_t *next1, float alpha, float *c, int64_t ldc, int load_c)
{
    wide_tile(kc, 12, a, a + CLEF_GEMM_MR * ars, ars, acs, NULL, NULL, 0, 1, b0, b1,
              next0, next1, alpha, c, ldc, load_c);
}

TARGET void
clef_cpu_gemm_kernel_half_bf16w(int64_t kc, const float *a, const uint16_t *b0,
    const uint16_t *b1, const uint16_t *next0, const uint16_t *next1,
    float alpha, float *c, int64_t ldc, int load_c)
{
    wide_tile(kc, 6, a, a, 1, CLEF_GEMM_MR, NULL, NULL, 0, 1, b0, b1, next0,
              next1, alpha, c, ldc, load_c);
}

int
clef_cpu_gemm_wide_supported(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f");
}
