/*
 * Matrix products of the CUDA backend through cuBLASLt.
 *
 *   D[rows][n] = X[rows][k] . W[n][k]^T + beta * D  (+ bias[n])
 *
 * W is a weight as stored ([out, in], row-major), X and D are row-major
 * activations.
 *
 * Batch invariance (cuda/README.md, "Determinism"): row r of D depends on
 * row r of X and on nothing else of the batch, bit for bit.  cuBLASLt's
 * heuristics choose by the whole shape, rows included, and for few rows
 * they pick split-K, whose partial sums add in another order.  So each
 * shape's algorithm is chosen once *without* its row count (mode, n, k,
 * strides, alignments, beta, bias): asked for GEMM_REF_ROWS rows, among
 * the algorithms that run each dot product in one sequence (reduction
 * scheme NONE, split-K pinned to 1), and that configuration then runs every
 * row count.  A row count cuBLASLt refuses it for gets its own algorithm,
 * counted by clef_gemm_fallbacks() (0 is the contract; the tests check).
 */
#ifndef CLEF_CUDA_GEMM_H
#define CLEF_CUDA_GEMM_H

#include <cuda_runtime_api.h>

#include "base/error.h"

typedef enum {
    CLEF_GEMM_BF16 = 0,     /* bf16 in/out, fp32 accumulate (bias not allowed) */
    CLEF_GEMM_F32,          /* fp32 in/out, fp32 accumulate */
    CLEF_GEMM_TF32          /* fp32 in/out, TF32 tensor cores, fp32 accumulate */
} clef_gemm_mode;

typedef struct clef_gemm clef_gemm;

int  clef_gemm_create(clef_gemm **out, clef_error *err);
void clef_gemm_destroy(clef_gemm *g);

int  clef_gemm_run(clef_gemm *g, cudaStream_t s, clef_gemm_mode mode,
    int rows, int n, int k, const void *W, int ldw, const void *X, int ldx,
    void *D, int ldd, float beta, const float *bias, clef_error *err);

/* Heuristic queries made so far (one per new shape, whatever its rows). */
long clef_gemm_heuristic_calls(const clef_gemm *g);

/* Row counts that could not use their shape's algorithm. */
long clef_gemm_fallbacks(const clef_gemm *g);

#endif
