/*
 * The CPU backend's fp32 matrix products, on our own kernel (no BLAS).
 *
 * Every product runs through one micro-kernel (gemm_kernel.h) that
 * computes an MR x NR tile of C from packed panels of A (MR rows, k-major)
 * and B (NR columns, k-major).  The result is bit-identical whatever the
 * shapes around an element, the thread count or the CPU, because:
 *
 *   - an element of C is one lane of one accumulator: its value is
 *     c = c + alpha * (sum of a[i][k] b[k][j] over k in one KC block,
 *     in k order, by fused multiply-adds), block after block, with KC a
 *     compile-time constant.  It depends on row i of A, column j of B, K and
 *     nothing else: never on M, N, the tile's position or neighbours;
 *   - tail tiles (M or N not a multiple of MR or NR) are zero-padded in the
 *     packing and computed by the same kernel as full tiles;
 *   - work is split over threads along M and N only, never along K, so the
 *     split changes which thread computes an element, not how;
 *   - nothing about the machine enters the arithmetic: the x86-64-v3
 *     (AVX2 + FMA) kernel runs everywhere, and on CPUs with AVX-512 a wide
 *     12 x 32 kernel (gemm_kernel_avx512.c) applies the same operations, in
 *     the same order, to each element, so it gives the same bits twice as
 *     many lanes at a time.  CLEF_CPU_GEMM_KERNEL=avx2 keeps the AVX2 one.
 *
 * Weights are packed once (clef_cpu_wpack, wpack.h, when the backend
 * opens), as fp32 or bf16 panels (bf16: the release dtype, 2 bytes a
 * parameter): the kernel
 * widens bf16 weights as it loads them, which is exact, so an fp32 product
 * over bf16 weights has the bits of the same product over their fp32
 * copies.  The big products pack groups of rows of the activations; the
 * small ones read A in place, and B in place when its rows are contiguous.
 *
 * Precision (clef_cpu_linear_prec, base/precision.h): CLEF_PRECISION_FP32
 * multiplies the fp32 activations; CLEF_PRECISION_BF16 rounds them to bf16
 * (to nearest even) as they are packed, then runs the same kernel, so its
 * products are exact bf16 x bf16 products summed in fp32 -- the arithmetic
 * of a bf16 dot product instruction -- and deterministic by the same
 * argument.  A weight
 * packed for a native bf16 library (gemm_bf16.h) has its products computed
 * there, always in bf16.
 */
#ifndef CLEF_CPU_GEMM_H
#define CLEF_CPU_GEMM_H

#include <stddef.h>
#include <stdint.h>

#include "base/precision.h"
#include "cpu/kernels/wpack.h"
#include "cpu/parallel/pool.h"

#define CLEF_GEMM_MR  6       /* rows of a micro-tile */
#define CLEF_GEMM_NR  16      /* columns of a micro-tile (two AVX vectors) */
#define CLEF_GEMM_KC  256     /* the reduction is summed in blocks of this
                                 many: part of the numerics, the same on
                                 every machine */

/* A matrix element (i, j) at p[i * rs + j * cs]: any transpose. */
typedef struct {
    const float  *p;
    int64_t       rs, cs;
} clef_cpu_mat;

/* A row-major matrix with row stride ld, and the transpose of one. */
static inline clef_cpu_mat
clef_cpu_rows(const float *p, int64_t ld)
{
    clef_cpu_mat  m = { p, ld, 1 };

    return m;
}

static inline clef_cpu_mat
clef_cpu_trans(const float *p, int64_t ld)
{
    clef_cpu_mat  m = { p, 1, ld };

    return m;
}

/* Columns of y per call of a native bf16 library (gemm_bf16.h): the rows
 * of its weights are padded to a multiple of this, which
 * clef_cpu_wpack_native_rows() gives for n. */
#define CLEF_GEMM_NATIVE_NB  256
int64_t clef_cpu_wpack_native_rows(int64_t n);

/* Cache blocking, which never changes a result: rows of A and columns of B
 * run at a time. */
#define CLEF_GEMM_MC  144
#define CLEF_GEMM_NC  512

/* Scratch floats clef_cpu_gemm() needs: a constant, whatever the shapes
 * (a packed block of B and its partial panel, and room to align them). */
#define CLEF_GEMM_SCRATCH_FLOATS                                             \
    ((size_t) (CLEF_GEMM_NC + CLEF_GEMM_NR) * CLEF_GEMM_KC + 16)

/* C[m][n] = alpha * A[m][k] . B[k][n] + beta * C, beta 0 (C is not read)
 * or 1, on the calling thread; for the small products inside pool tasks.
 * scratch: CLEF_GEMM_SCRATCH_FLOATS floats. */
void   clef_cpu_gemm(int64_t m, int64_t n, int64_t k, float alpha,
    clef_cpu_mat a, clef_cpu_mat b, float beta, float *c, int64_t ldc,
    float *scratch);

/* The same with B = W^T, W packed (in fp32 or bf16 panels, not for a
 * native library): y[m][n] = x[m][k] . W^T + beta * y. */
void   clef_cpu_gemm_packed(int64_t m, const float *x, int64_t ldx,
    const clef_cpu_wpack *w, float beta, float *y, int64_t ldy);

/* The product of the panel formats (wpack.h's CLEF_CPU_WF32 and
 * CLEF_CPU_WBF16): clef_cpu_linear_prec() over them, split over the pool. */
void   clef_cpu_panels_linear(clef_cpu_pool *pool, const float *x, int64_t ldx,
    int64_t m, const clef_cpu_wpack *w, float *y, int64_t ldy, float beta,
    float *scratch, clef_precision prec);

/* The product of a format that fills fp32 panels as they are needed (its
 * traits' fill: wblocks.h's block view): clef_cpu_panels_linear()'s
 * work, split and summed the same way, with each 2 NR x KC block of W's
 * panels filled on the worker's stack just before the kernel reads it,
 * so the bits are those of the fp32 panels the fill writes. */
void   clef_cpu_filled_linear(clef_cpu_pool *pool, const float *x,
    int64_t ldx, int64_t m, const clef_cpu_wpack *w, float *y, int64_t ldy,
    float beta, float *scratch, clef_precision prec);

/* Floats clef_cpu_linear() needs as scratch for at most k columns of x. */
size_t clef_cpu_linear_scratch_floats(int64_t k);

/* y[m][n] = x[m][k] . W^T + beta * y (beta 0 or 1), split over the pool,
 * by the product of W's format (wpack.h): in tiles of rows and columns on
 * the panels.  scratch: clef_cpu_linear_scratch_floats(k) floats, shared
 * by the workers.  fp32 activations (CLEF_PRECISION_FP32). */
void   clef_cpu_linear(clef_cpu_pool *pool, const float *x, int64_t ldx,
    int64_t m, const clef_cpu_wpack *w, float *y, int64_t ldy, float beta,
    float *scratch);

/* clef_cpu_linear() at a given precision (base/precision.h): bf16 rounds
 * the activations, any other multiplies them as they are. */
void   clef_cpu_linear_prec(clef_cpu_pool *pool, const float *x, int64_t ldx,
    int64_t m, const clef_cpu_wpack *w, float *y, int64_t ldy, float beta,
    float *scratch, clef_precision prec);

/* One line naming the product path, for logs and `clef bench`. */
const char *clef_cpu_gemm_describe(void);

/* The same for a precision: which kernel its linear layers run on. */
const char *clef_cpu_gemm_describe_prec(clef_precision prec);

#endif
