/*
 * A weight matrix as the CPU backend's products read it: W[rows][cols]
 * (PyTorch's [out][in], y = x . W^T), laid out once when the backend opens
 * in one of the formats below.  A format is a row of the table in wpack.c:
 * its bytes, how rows are packed into it (from fp32 values, and in place
 * from the one stored type it copies without a conversion), and the
 * product over it.  The storage type of the checkpoint (model/dtype.h) and
 * the compute precision (base/precision.h) are separate choices:
 * clef_cpu_wformat_for() says which format a weight stored in some type is
 * kept in for products at some precision.
 *
 * GGUF's block types (Q8_0, Q4_K, ...) and F16 are kept as they are
 * stored, in the mapped file (CLEF_CPU_WBLOCKS, wblocks.h: a view, which
 * fills the fp32 panels of each product as the kernel needs them); at the
 * fast precision (q8) the block types are repacked, bits unchanged, for
 * integer products (CLEF_CPU_WQDOT, wqdot.h).  The loaders (cpu/model/
 * weights*.c) need nothing else: they pack whatever a tensor holds through
 * clef_cpu_wpack_from_tensor().
 */
#ifndef CLEF_CPU_WPACK_H
#define CLEF_CPU_WPACK_H

#include <stddef.h>
#include <stdint.h>

#include "base/precision.h"
#include "cpu/parallel/pool.h"
#include "model/tensor.h"

typedef enum {
    CLEF_CPU_WF32 = 0,       /* fp32 panels of CLEF_GEMM_NR rows of W, each
                                [cols][NR], the last one zero-padded */
    CLEF_CPU_WBF16,          /* the same panels in bf16 (the release's own
                                type, 2 bytes a parameter), each step's
                                columns interleaved as gemm_kernel.h says;
                                widened exactly in the kernel */
    CLEF_CPU_WBF16_ROWS,     /* bf16 rows for a native bf16 library
                                (gemm_bf16.h), rows padded to its tiles */
    CLEF_CPU_WBLOCKS,        /* the model's tensors in their stored type
                                (block types, F16), viewed in place and
                                dequantized into fp32 panels as each
                                product needs them (wblocks.h) */
    CLEF_CPU_WQDOT,          /* the model's block types repacked, bits
                                unchanged, for int8 products at the fast
                                precision (wqdot.h, qdot.h) */
    CLEF_CPU_WFORMAT_COUNT
} clef_cpu_wformat;

typedef struct clef_cpu_wpack clef_cpu_wpack;
struct clef_cpu_bf16_native;

typedef struct {
    const char  *name;
    /* bytes a rows x cols weight takes */
    size_t     (*bytes)(int64_t rows, int64_t cols);
    /* rows [row, row + n) of W from fp32 values (row stride ld) */
    void       (*pack_f32)(clef_cpu_wpack *w, int64_t row, int64_t n,
                           const float *src, int64_t ld);
    /* the same from values of type `raw` read in place (a checkpoint's own
     * bytes; ld in elements), exactly: no rounding on the way */
    clef_dtype    raw;
    void       (*pack_raw)(clef_cpu_wpack *w, int64_t row, int64_t n,
                           const void *src, int64_t ld);
    /* y[m][rows] = x[m][cols] . W^T + beta y (beta 0 or 1) over the pool:
     * the format's product (gemm.h's clef_cpu_linear_prec() calls it) */
    void       (*linear)(clef_cpu_pool *pool, const float *x, int64_t ldx,
                         int64_t m, const clef_cpu_wpack *w, float *y,
                         int64_t ldy, float beta, float *scratch,
                         clef_precision prec);
    /* a view of the model's tensors rather than a copy (NULL for the
     * others): rows [row, row + n) of W are rows [t_row, ..) and columns
     * [t_col, ..) of t, which outlives W; called once per range of rows,
     * with the pool any work on the rows may run on (NULL: the caller's
     * thread) */
    int        (*view)(clef_cpu_wpack *w, clef_cpu_pool *pool, int64_t row,
                       const clef_tensor *t, int64_t t_row, int64_t n,
                       int64_t t_col);
    /* fp32 panels of rows [j0, j0 + n) (n <= 2 CLEF_GEMM_NR) and columns
     * [k0, k0 + kc) of W, as a product packs them (gemm.h's
     * clef_cpu_filled_linear); NULL when the product reads W's own */
    void       (*fill)(const clef_cpu_wpack *w, int64_t j0, int64_t n,
                       int64_t k0, int64_t kc, float *panels);
    /* bytes of memory W stands for when they are not `bytes`' (a view:
     * the file's); NULL otherwise */
    size_t     (*held)(const clef_cpu_wpack *w);
    /* frees what W holds beside its data (NULL: nothing) */
    void       (*release)(clef_cpu_wpack *w);
} clef_cpu_wtraits;

struct clef_cpu_wpack {
    clef_cpu_wformat                    format;
    const clef_cpu_wtraits             *traits;
    void                               *data;    /* 64-byte aligned */
    int64_t                             rows, cols;
    const struct clef_cpu_bf16_native  *native;  /* CLEF_CPU_WBF16_ROWS:
                                                    the library */
};

/* The row of a format. */
const clef_cpu_wtraits *clef_cpu_wformat_traits(clef_cpu_wformat f);

/* The format a weight is kept in when it is filled from tensors stored in
 * the n types stored[] (a fused matrix has several) for products at prec:
 * at q8, the integer products' panels when every part is in a block type
 * they multiply; else the block view when a part is in a block type, or
 * in F16 at fp32 or q8 precision (exact, and never a copy); else, native
 * not NULL when bf16 products run on a native library, its rows; else
 * bf16 panels when every part is bf16 or the products are bf16 (which
 * round the activations, not the weights: a weight stored in f32 is
 * rounded once), else fp32 panels (exact). */
clef_cpu_wformat clef_cpu_wformat_for(const clef_dtype *stored, int n,
    clef_precision prec, const struct clef_cpu_bf16_native *native);

/* Allocates w (zeroed) for a rows x cols weight in format f; -1 when out
 * of memory.  clef_cpu_wpack_free() releases it. */
int    clef_cpu_wpack_alloc_format(clef_cpu_wpack *w, clef_cpu_wformat f,
    int64_t rows, int64_t cols);

/* The two panel formats by name (fp32, bf16). */
int    clef_cpu_wpack_alloc(clef_cpu_wpack *w, int64_t rows, int64_t cols);
int    clef_cpu_wpack_alloc_bf16(clef_cpu_wpack *w, int64_t rows, int64_t cols);
void   clef_cpu_wpack_free(clef_cpu_wpack *w);

/* Floats (or bf16 values) a rows x cols weight in panels takes. */
size_t clef_cpu_wpack_floats(int64_t rows, int64_t cols);

/* Bytes the packed weight holds in memory (0 when not allocated); for a
 * view, the bytes of the file it reads. */
size_t clef_cpu_wpack_bytes(const clef_cpu_wpack *w);

/* Packs rows [row, row + n) of W from fp32 src ([n][cols], row stride ld):
 * into a bf16 format each value rounded to bf16 (to nearest even). */
void   clef_cpu_wpack_rows(clef_cpu_wpack *w, int64_t row, int64_t n,
    const float *src, int64_t ld);

/* The same from bf16 values (a release checkpoint's own bytes, read in
 * place): copied into a bf16 format, widened (exactly) into fp32 panels. */
void   clef_cpu_wpack_rows_bf16(clef_cpu_wpack *w, int64_t row, int64_t n,
    const uint16_t *src, int64_t ld);

/* Rows [t_row, t_row + n) and columns [t_col, t_col + w->cols) of the 2-D
 * tensor t into rows [row, row + n) of w, whatever type t is stored in:
 * in place where the format reads that type (or t is fp32), else through
 * fp32 (the dtype table's conversion, exact); a view format records the
 * range instead (once per range: clef_cpu_wpack_is_view()).  -1 when out
 * of memory for the conversion. */
int    clef_cpu_wpack_from_tensor(clef_cpu_wpack *w, int64_t row,
    const clef_tensor *t, int64_t t_row, int64_t n, int64_t t_col);

/* The same for a view format, its work on the rows (q8's repacking of the
 * blocks) spread over pool. */
int    clef_cpu_wpack_view_tensor(clef_cpu_wpack *w, clef_cpu_pool *pool,
    int64_t row, const clef_tensor *t, int64_t t_row, int64_t n,
    int64_t t_col);

/* 1 when w's format views the model's tensors (nothing to copy, and their
 * pages stay mapped). */
int    clef_cpu_wpack_is_view(const clef_cpu_wpack *w);

#endif
