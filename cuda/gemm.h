/*
 * Matrix products of the CUDA backend through cuBLASLt.
 *
 *   D[rows][n] = X[rows][k] . W[n][k]^T + beta * D  (+ bias[n])
 *
 * W is a weight as stored ([out, in], row-major), X and D are row-major
 * activations.  The algorithm for each shape comes from cuBLASLt's
 * heuristics once and is cached (per exact shape, and per shape with the
 * row count rounded up to a power of two so that a new batch size reuses a
 * checked algorithm instead of asking the heuristics again).
 */
#ifndef CLEF_CUDA_GEMM_H
#define CLEF_CUDA_GEMM_H

#include <cuda_runtime_api.h>

#include "error.h"

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

/* Number of heuristic queries made so far (a cache miss costs one). */
long clef_gemm_heuristic_calls(const clef_gemm *g);

#endif
