/*
 * The micro-kernel under every CPU matrix product (gemm.h): one
 * CLEF_GEMM_MR x CLEF_GEMM_NR tile of C from MR rows of A and NR columns of
 * B over kc steps of the reduction, read packed or in place.
 *
 * Each element of the tile is one lane of one accumulator, summed from zero
 * in k order by fused multiply-adds, then scaled by alpha and added to C:
 * its value depends on its own row of A and column of B only.
 */
#ifndef CLEF_CPU_GEMM_KERNEL_H
#define CLEF_CPU_GEMM_KERNEL_H

#include <stdint.h>

/* c[i][j] (row stride ldc) = (load_c ? c[i][j] : 0)
 *                            + alpha * sum_{k < kc} A[i][k] B[k][j]
 * for i < MR, j < NR, with B[k][j] = b[k * bks + j] (a packed panel, or NR
 * adjacent columns of a row-major matrix) and A[i][k] = a[k * MR + i] (a
 * packed panel, 32-byte aligned or not). */
void clef_cpu_gemm_kernel(int64_t kc, const float *a, const float *b,
    int64_t bks, float alpha, float *c, int64_t ldc, int load_c);

/* The same with A[i][k] = a[i * ars + k * acs]: a matrix read in place.
 * Bit for bit the same as clef_cpu_gemm_kernel() on the same values. */
void clef_cpu_gemm_kernel_strided(int64_t kc, const float *a, int64_t ars,
    int64_t acs, const float *b, int64_t bks, float alpha, float *c, int64_t ldc,
    int load_c);

/* The same two with B a panel of bf16 weights (gemm.h, clef_cpu_wpack):
 * [kc][NR] 16-bit values, step k at b + k * NR, column j of the tile at
 * position 2j for j < NR / 2 and 2 (j - NR / 2) + 1 above, so that one
 * shift and one mask widen a step to the two fp32 vectors the fp32 kernel
 * loads.  Widening bf16 to fp32 is exact: the arithmetic on a lane is that
 * of clef_cpu_gemm_kernel() on the widened values, bit for bit.  next, when
 * not NULL, is the panel of the tile to be computed after this one: it is
 * prefetched while this one runs (a hint: no value is read from it). */
void clef_cpu_gemm_kernel_bf16w(int64_t kc, const float *a, const uint16_t *b,
    const uint16_t *next, float alpha, float *c, int64_t ldc, int load_c);
void clef_cpu_gemm_kernel_bf16w_strided(int64_t kc, const float *a, int64_t ars,
    int64_t acs, const uint16_t *b, const uint16_t *next, float alpha, float *c,
    int64_t ldc, int load_c);

/* The wide kernel (gemm_kernel_avx512.c), for CPUs with AVX-512: a
 * 2 MR x 2 NR tile, rows [0, MR) from A panel a0 and [MR, 2 MR) from a1,
 * columns [0, NR) from B panel b0 and [NR, 2 NR) from b1; the strided forms
 * read 2 MR rows of A in place, row i at a + i * ars.  Each element has the
 * bits clef_cpu_gemm_kernel() and its variants give it: it is a choice of
 * speed, never of numerics.  Call only where
 * clef_cpu_gemm_wide_supported() says the CPU has AVX-512F. */
#define CLEF_GEMM_WIDE_MR  (2 * CLEF_GEMM_MR)
#define CLEF_GEMM_WIDE_NR  (2 * CLEF_GEMM_NR)

int  clef_cpu_gemm_wide_supported(void);
void clef_cpu_gemm_kernel_wide(int64_t kc, const float *a0, const float *a1,
    const float *b0, const float *b1, int64_t bks, float alpha, float *c,
    int64_t ldc, int load_c);
void clef_cpu_gemm_kernel_wide_strided(int64_t kc, const float *a, int64_t ars,
    int64_t acs, const float *b0, const float *b1, int64_t bks, float alpha,
    float *c, int64_t ldc, int load_c);

/* The bf16-weight wide kernels also take the panels of the tile to be
 * computed next, next0 and next1 (both or neither NULL), to prefetch while
 * this one runs: a hint, read into no register and no result. */
void clef_cpu_gemm_kernel_wide_bf16w(int64_t kc, const float *a0,
    const float *a1, const uint16_t *b0, const uint16_t *b1,
    const uint16_t *next0, const uint16_t *next1, float alpha, float *c,
    int64_t ldc, int load_c);
void clef_cpu_gemm_kernel_wide_bf16w_strided(int64_t kc, const float *a,
    int64_t ars, int64_t acs, const uint16_t *b0, const uint16_t *b1,
    const uint16_t *next0, const uint16_t *next1, float alpha, float *c,
    int64_t ldc, int load_c);

/* Half of a wide bf16 tile: MR x 2 NR, rows from one packed panel of A.
 * For the rows past the last whole 2 MR (a batch of 256 tokens leaves 4):
 * half the work of the four MR x NR tiles it replaces (their lanes are
 * 8 wide), the same bits. */
void clef_cpu_gemm_kernel_half_bf16w(int64_t kc, const float *a,
    const uint16_t *b0, const uint16_t *b1, const uint16_t *next0,
    const uint16_t *next1, float alpha, float *c, int64_t ldc, int load_c);

#endif
