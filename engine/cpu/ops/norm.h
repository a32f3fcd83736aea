/*
 * The RMSNorm flavours of the text models (spec §3, §6, §8.3), all in
 * fp32:
 *   plain:               y = (x / sqrt(mean(x^2) + eps)) * m
 *       every norm of the backbone, m its multiplier as the CPU weights
 *       keep it: 1 + w for Qwen3.5's zero-centred weights (computed once
 *       in fp32 when they load, the value the reference multiplies by),
 *       w for Clef Omni's;
 *   zero-centred ("1p"): y = x / sqrt(mean(x^2) + eps) * (1 + w), the same
 *       with 1 + w computed per call;
 *   gated:               y = (x / sqrt(mean(x^2) + eps)) * w * silu(z)
 *       the Gated DeltaNet output norm, with the plain weight w.
 * Rows are `dim` floats; x and y may be the same memory.
 */
#ifndef CLEF_CPU_NORM_H
#define CLEF_CPU_NORM_H

#include <stdint.h>

#include "cpu/parallel/pool.h"

void clef_cpu_rmsnorm_row(const float *x, float *y, int dim, const float *m,
    float eps);
void clef_cpu_rmsnorm1p_row(const float *x, float *y, int dim, const float *w,
    float eps);
void clef_cpu_rmsnorm_gated_row(const float *x, const float *z, float *y,
    int dim, const float *w, float eps);

/* rows of x at stride ldx -> rows of y at stride ldy, in parallel. */
void clef_cpu_rmsnorm(clef_cpu_pool *pool, const float *x, int64_t ldx,
    float *y, int64_t ldy, int64_t rows, int dim, const float *m, float eps);
void clef_cpu_rmsnorm1p(clef_cpu_pool *pool, const float *x, int64_t ldx,
    float *y, int64_t ldy, int64_t rows, int dim, const float *w, float eps);

/* rows of (x, z) -> y, in parallel, at the given row strides; each row
 * holds `heads` consecutive groups of dim floats, normalised one by one. */
void clef_cpu_rmsnorm_gated(clef_cpu_pool *pool, const float *x, int64_t ldx,
    const float *z, int64_t ldz, float *y, int64_t ldy, int64_t rows,
    int heads, int dim, const float *w, float eps);

#endif
