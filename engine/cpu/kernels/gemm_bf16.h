/*
 * bf16 products on a CPU's native bf16 instructions (AVX512-BF16, AMX),
 * through oneDNN: the path precision=bf16 takes where the CPU has them.
 *
 * Why oneDNN: it is the library made for this that Debian 12 ships
 * (libdnnl-dev 2.6.3, matmul on brgemm kernels for avx512_core_bf16 and
 * AMX).  Debian 12's OpenBLAS 0.3.21 is built without bfloat16: it has no
 * sbgemm.  oneDNN is opened with dlopen() by the backend that asks for it,
 * so nginx, its workers and an fp32 engine never map it (nor its OpenMP
 * runtime), and a machine without it runs the fallback.
 *
 * Dispatch, at run time: clef_cpu_bf16_native_open() returns NULL, saying
 * why, unless oneDNN loads, implements a bf16 x bf16 -> fp32 matmul with
 * a native bf16 kernel (its implementation's name says avx512_core_bf16 or
 * amx; a reference or emulated one is refused: the fallback of gemm.h is
 * faster), and passes the checks below.  Without it, bf16 products run on
 * gemm.h's kernel (activations rounded to bf16, bf16 weights widened,
 * fp32 sums), which is what runs on AVX2-only machines such as this
 * project's CI.
 *
 * Determinism, which oneDNN does not promise across shapes or thread
 * counts, is enforced by never letting either vary: every library call
 * computes a fixed NATIVE_MB x NATIVE_NB tile over the whole reduction
 * (rows of x padded with zeros, weights padded to whole tiles), single-
 * threaded (our pool splits tiles, oneDNN's OpenMP is held to one thread),
 * from one primitive per reduction length created once.  So a row's
 * result is computed by the same kernel with the same blocking whatever
 * the batch.  What remains -- that the kernel computes each row of a tile
 * alike wherever the row sits -- is checked when the path opens: rows
 * moved to other places in a tile among other rows must give the same
 * bits, and every product must be within an fp32 sum's rounding of the
 * fallback's.  A library that fails either is not used.
 */
#ifndef CLEF_CPU_GEMM_BF16_H
#define CLEF_CPU_GEMM_BF16_H

#include <stddef.h>
#include <stdint.h>

#include "cpu/kernels/gemm.h"
#include "cpu/parallel/pool.h"

#define CLEF_BF16_NATIVE_MB  64     /* rows of x per library call */
#define CLEF_BF16_NATIVE_NB  CLEF_GEMM_NATIVE_NB   /* columns of y per call */

typedef struct clef_cpu_bf16_native clef_cpu_bf16_native;

/* oneDNN for reductions of the given lengths (the k of every weight that
 * will use it), for a pool of `workers`; NULL with why[] filled when the
 * CPU, the library or the checks say no. */
clef_cpu_bf16_native *clef_cpu_bf16_native_open(const int64_t *ks, int n_ks,
    int workers, char *why, size_t why_len);
void                  clef_cpu_bf16_native_close(clef_cpu_bf16_native *nat);

/* One line: the library, its version and its kernel. */
const char *clef_cpu_bf16_native_describe(const clef_cpu_bf16_native *nat);

/* Allocates w for an n x k weight in the native layout (w->rows: bf16
 * row-major, n rounded up to whole NATIVE_NB tiles, zeroed); filled by
 * clef_cpu_wpack_rows() and clef_cpu_wpack_rows_bf16().  -1 when out of
 * memory or when k is not one of the lengths nat was opened for. */
int  clef_cpu_wpack_alloc_native(clef_cpu_wpack *w, int64_t n, int64_t k,
    const clef_cpu_bf16_native *nat);

/* y[m][n] = bf16(x) . W^T + beta * y on the native path (gemm.h's
 * clef_cpu_linear_prec() sends the products of such a w here).  scratch:
 * clef_cpu_linear_scratch_floats(k) floats. */
void clef_cpu_bf16_native_linear(clef_cpu_pool *pool, const float *x,
    int64_t ldx, int64_t m, const clef_cpu_wpack *w, float *y, int64_t ldy,
    float beta, float *scratch);

#endif
