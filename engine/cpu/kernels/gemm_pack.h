/*
 * Packing for the CPU GEMM (gemm.c): copies of blocks of A and B into the
 * panels the micro-kernel reads (gemm_kernel.h), zero-padded to whole
 * panels.  Data movement only, but for clef_cpu_round_bf16().
 */
#ifndef CLEF_CPU_GEMM_PACK_H
#define CLEF_CPU_GEMM_PACK_H

#include <stdint.h>

#include "cpu/kernels/gemm.h"

/* Rows [i0, i0 + m) x columns [k0, k0 + kc) of A as panels of MR rows,
 * panel p at dst + p * ps, each [kc][MR]; a tail panel's missing rows are
 * zeros. */
void clef_cpu_pack_a(const clef_cpu_mat *a, int64_t i0, int64_t m, int64_t k0,
    int64_t kc, float *dst, int64_t ps);

/* Rows [k0, k0 + kc) x columns [j0, j0 + n) of B as panels of NR columns,
 * panel p at dst + p * ps, each [kc][NR] (32-byte aligned when dst and ps
 * are); columns past n are zeros. */
void clef_cpu_pack_b(const clef_cpu_mat *b, int64_t k0, int64_t kc, int64_t j0,
    int64_t n, float *dst, int64_t ps);

/* p[i] = p[i] rounded to bf16 (to nearest even, NaN kept quiet), as fp32:
 * the activations of a bf16 product, exactly clef_f32_to_bf16() widened
 * back.  The one packing step that changes values (CLEF_PRECISION_BF16). */
void clef_cpu_round_bf16(float *p, int64_t n);

#endif
