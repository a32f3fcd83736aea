/*
 * GGUF block weights on the CPU at fp32 (and bf16) precision: the packed
 * weight format CLEF_CPU_WBLOCKS (wpack.h) for matrices stored in a block
 * type (Q8_0, Q4_K, ...) or in F16.
 *
 * Nothing is copied when the backend opens: the format is a view of the
 * model's tensors (up to CLEF_CPU_WBLOCKS_RUNS of them, one per range of
 * rows a loader takes, each cut by rows and columns), so the weights stay
 * in the mapped file, in their type, and the converter's reorderings
 * (tensor.h: runs of rows, spans of columns) cost nothing.  The product
 * (gemm.h's clef_cpu_filled_linear) asks the format for fp32 panels of
 * 2 NR rows by one KC block of columns at a time, just before the kernel
 * reads them, from a buffer on the worker's stack: each block is
 * dequantized exactly (dtype.h, bit-identical to gguf-py) into the very
 * panels the fp32 product packs, so a product has the bits of the same
 * product over an fp32 copy of the dequantized weights, whatever the
 * batch, the thread count or the kernel, without the copy.
 */
#ifndef CLEF_CPU_WBLOCKS_H
#define CLEF_CPU_WBLOCKS_H

#include <stddef.h>
#include <stdint.h>

#include "cpu/kernels/wpack.h"

#define CLEF_CPU_WBLOCKS_RUNS  8

/* Rows [row, row + n) of the weight are rows [t_row, t_row + n) of t,
 * columns [t_col, t_col + the weight's columns). */
typedef struct {
    int64_t             row, n;
    const clef_tensor  *t;
    int64_t             t_row, t_col;
} clef_cpu_wblocks_run;

typedef struct {
    int                   n;
    clef_cpu_wblocks_run  run[CLEF_CPU_WBLOCKS_RUNS];
} clef_cpu_wblocks;

/* The format's entries (wpack.c's table). */
size_t clef_cpu_wblocks_bytes(int64_t rows, int64_t cols);
size_t clef_cpu_wblocks_held(const clef_cpu_wpack *w);
int    clef_cpu_wblocks_add(clef_cpu_wpack *w, clef_cpu_pool *pool,
    int64_t row, const clef_tensor *t, int64_t t_row, int64_t n,
    int64_t t_col);
void   clef_cpu_wblocks_fill(const clef_cpu_wpack *w, int64_t j0, int64_t n,
    int64_t k0, int64_t kc, float *panels);

#endif
