/*
 * The small fp32 building blocks of the joint schema head
 * (docs/spec/encoder-and-head.md §5): nn.LayerNorm, nn.Linear, exact GELU.
 * Rows are contiguous; products go through the CPU GEMM (gemm.h), so a
 * row's result never depends on the rows computed with it.
 */
#ifndef CLEF_CPU_HEAD_OPS_H
#define CLEF_CPU_HEAD_OPS_H

#include <stddef.h>

#include "cpu/kernels/gemm.h"

#define CLEF_HEAD_LN_EPS  1e-5

typedef struct {
    int           n;         /* features */
    const float  *weight;    /* [n] */
    const float  *bias;      /* [n] */
} clef_head_ln;

typedef struct {
    int             in;
    int             out;
    const float    *weight;  /* [out][in], as PyTorch stores it; NULL if packed */
    const float    *bias;    /* [out], or NULL */
    clef_cpu_wpack  packed;  /* .data != NULL: the weight packed once,
                                at open */
} clef_head_linear;

/* y[r] = LayerNorm(x[r]) for rows r < rows (biased variance, eps 1e-5);
 * y may equal x. */
void clef_head_ln_rows(const clef_head_ln *ln, const float *x, float *y,
    size_t rows);

/* y[rows][out] = x[rows][in] . W^T + b.  scratch: CLEF_GEMM_SCRATCH_FLOATS
 * floats. */
void clef_head_linear_rows(const clef_head_linear *l, const float *x, float *y,
    size_t rows, float *scratch);

/* x = gelu(x) = x/2 (1 + erf(x/sqrt 2)), elementwise. */
void clef_head_gelu(float *x, size_t n);

#endif
