/*
 * The micro-kernel under every CPU matrix product (gemm.h): one
 * CLEF_GEMM_MR x CLEF_GEMM_NR tile of C from a packed A panel (kc rows of MR
 * floats) and a packed B panel (kc rows of NR floats).
 *
 * Each element of the tile is one lane of one accumulator, summed from zero
 * in k order by fused multiply-adds, then scaled by alpha and added to C:
 * its value depends on its own row of A and column of B only.
 */
#ifndef CLEF_CPU_GEMM_KERNEL_H
#define CLEF_CPU_GEMM_KERNEL_H

#include <stdint.h>

/* c[i][j] (row stride ldc) = (load_c ? c[i][j] : 0)
 *                            + alpha * sum_{k < kc} a[k][i] b[k][j].
 * a: kc x MR floats; b: kc x NR floats, 32-byte aligned. */
void clef_cpu_gemm_kernel(int64_t kc, const float *a, const float *b,
    float alpha, float *c, int64_t ldc, int load_c);

#endif
