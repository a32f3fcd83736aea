/*
 * The one GEMM shape of the backbone, y = x . W^T (a linear layer without
 * bias), on OpenBLAS.
 *
 * Threading: the CPU backend runs OpenBLAS single-threaded
 * (openblas_set_num_threads(1), see backend_cpu.c) and parallelises every
 * GEMM itself, giving each pool worker a slice of W's rows (columns of y).
 * One set of threads then owns the cores: no OpenBLAS threads spin while the
 * pool runs the element-wise ops, and small GEMMs inside pool tasks (the
 * delta-rule chunks, attention blocks) run single-threaded where they are
 * called.  Each element of y is computed by one call over the whole of K,
 * so the result does not depend on the number of threads.
 */
#ifndef CLEF_CPU_GEMM_H
#define CLEF_CPU_GEMM_H

#include <stdint.h>

#include "pool.h"

/* y[m][n] (row stride ldy) = x[m][k] (row stride ldx) . w[n][k]^T + beta * y.
 * beta is 0 (y is overwritten) or 1 (accumulate, e.g. into the residual). */
void clef_cpu_linear(clef_cpu_pool *pool, const float *x, int64_t ldx,
    int64_t m, int64_t k, const float *w, int64_t n, float *y, int64_t ldy,
    float beta);

#endif
