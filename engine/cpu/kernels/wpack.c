#include "cpu/kernels/wpack.h"

#include <stdlib.h>
#include <string.h>

#include "cpu/kernels/gemm.h"
#include "cpu/kernels/gemm_bf16.h"
#include "cpu/kernels/wblocks.h"
#include "cpu/kernels/wqdot.h"

#define NR  CLEF_GEMM_NR

/* ---- fp32 and bf16 panels ----------------------------------------------- */

size_t
clef_cpu_wpack_floats(int64_t rows, int64_t cols)
{
    return (size_t) ((rows + NR - 1) / NR) * NR * (size_t) cols;
}

static size_t
f32_bytes(int64_t rows, int64_t cols)
{
    return clef_cpu_wpack_floats(rows, cols) * sizeof(float);
}

static size_t
bf16_bytes(int64_t rows, int64_t cols)
{
    return clef_cpu_wpack_floats(rows, cols) * sizeof(uint16_t);
}

/* ---- packing rows, into any of the three formats ---------------------- */

/* Where weight row n's step 0 goes in w, how far apart its steps are, and
 * whether w holds bf16: in panels, its panel, then its column of the
 * panel (interleaved in bf16, gemm_kernel.h); in rows, its row. */
static void *
row_slot(const clef_cpu_wpack *w, int64_t n, int64_t *step, int *bf16)
{
    int64_t  c = n % NR;

    *step = NR;
    *bf16 = 1;
    switch (w->format) {
    case CLEF_CPU_WF32:
        *bf16 = 0;
        return (float *) w->data + n / NR * w->cols * NR + c;
    case CLEF_CPU_WBF16:
        return (uint16_t *) w->data + n / NR * w->cols * NR
               + (c < NR / 2 ? 2 * c : 2 * (c - NR / 2) + 1);
    default:
        *step = 1;
        return (uint16_t *) w->data + n * w->cols;
    }
}

/* Rows [row, row + n) of W from src (fp32, or bf16 when src_bf16; row
 * stride ld): copied, widened exactly, or rounded to bf16 (to nearest
 * even) as the format and the source call for. */
static void
pack_rows(clef_cpu_wpack *w, int64_t row, int64_t n, const void *src,
    int src_bf16, int64_t ld)
{
    const float     *sf;
    const uint16_t  *sh;
    float           *df;
    uint16_t        *dh;
    int64_t          r, k, step;
    int              bf16;

    for (r = 0; r < n; r++) {
        sf = (const float *) src + r * ld;
        sh = (const uint16_t *) src + r * ld;
        df = row_slot(w, row + r, &step, &bf16);
        dh = (uint16_t *) df;
        if (bf16 && src_bf16 && step == 1) {
            memcpy(dh, sh, sizeof(uint16_t) * (size_t) w->cols);
        } else if (bf16 && src_bf16) {
            for (k = 0; k < w->cols; k++) {
                dh[k * step] = sh[k];
            }
        } else if (bf16) {
            for (k = 0; k < w->cols; k++) {
                dh[k * step] = clef_f32_to_bf16(sf[k]);
            }
        } else if (src_bf16) {
            for (k = 0; k < w->cols; k++) {
                df[k * step] = clef_bf16_to_f32(sh[k]);
            }
        } else {
            for (k = 0; k < w->cols; k++) {
                df[k * step] = sf[k];
            }
        }
    }
}

static void
pack_f32(clef_cpu_wpack *w, int64_t row, int64_t n, const float *src,
    int64_t ld)
{
    pack_rows(w, row, n, src, 0, ld);
}

static void
pack_bf16(clef_cpu_wpack *w, int64_t row, int64_t n, const void *src,
    int64_t ld)
{
    pack_rows(w, row, n, src, 1, ld);
}

/* ---- bf16 rows of a native library -------------------------------------- */

int64_t
clef_cpu_wpack_native_rows(int64_t n)
{
    return (n + CLEF_GEMM_NATIVE_NB - 1) / CLEF_GEMM_NATIVE_NB
           * CLEF_GEMM_NATIVE_NB;
}

static size_t
rows_bytes(int64_t rows, int64_t cols)
{
    return (size_t) clef_cpu_wpack_native_rows(rows) * (size_t) cols
           * sizeof(uint16_t);
}

static void
rows_linear(clef_cpu_pool *pool, const float *x, int64_t ldx, int64_t m,
    const clef_cpu_wpack *w, float *y, int64_t ldy, float beta, float *scratch,
    clef_precision prec)
{
    /* always bf16: the library's products are */
    clef_cpu_bf16_native_linear(pool, x, ldx, m, w, y, ldy, beta, scratch);
}

/* ---- the table ----------------------------------------------------------- */

static const clef_cpu_wtraits  formats[CLEF_CPU_WFORMAT_COUNT] = {
    [CLEF_CPU_WF32] = {
        .name = "fp32 panels", .bytes = f32_bytes, .pack_f32 = pack_f32,
        .raw = CLEF_DTYPE_BF16, .pack_raw = pack_bf16,
        .linear = clef_cpu_panels_linear
    },
    [CLEF_CPU_WBF16] = {
        .name = "bf16 panels", .bytes = bf16_bytes, .pack_f32 = pack_f32,
        .raw = CLEF_DTYPE_BF16, .pack_raw = pack_bf16,
        .linear = clef_cpu_panels_linear
    },
    [CLEF_CPU_WBF16_ROWS] = {
        .name = "bf16 rows (native)", .bytes = rows_bytes,
        .pack_f32 = pack_f32, .raw = CLEF_DTYPE_BF16, .pack_raw = pack_bf16,
        .linear = rows_linear
    },
    [CLEF_CPU_WBLOCKS] = {
        .name = "stored blocks, dequantized into fp32 panels",
        .bytes = clef_cpu_wblocks_bytes, .raw = CLEF_DTYPE_COUNT,
        .linear = clef_cpu_filled_linear, .view = clef_cpu_wblocks_add,
        .fill = clef_cpu_wblocks_fill, .held = clef_cpu_wblocks_held
    },
    [CLEF_CPU_WQDOT] = {
        .name = "stored blocks repacked for int8 products",
        .bytes = clef_cpu_wqdot_bytes, .raw = CLEF_DTYPE_COUNT,
        .linear = clef_cpu_wqdot_linear, .view = clef_cpu_wqdot_add,
        .held = clef_cpu_wqdot_held, .release = clef_cpu_wqdot_release
    },
};

const clef_cpu_wtraits *
clef_cpu_wformat_traits(clef_cpu_wformat f)
{
    return (unsigned) f < CLEF_CPU_WFORMAT_COUNT ? &formats[f] : NULL;
}

clef_cpu_wformat
clef_cpu_wformat_for(const clef_dtype *stored, int n, clef_precision prec,
    const struct clef_cpu_bf16_native *native)
{
    int  i;

    for (i = 0; i < n && prec == CLEF_PRECISION_Q8; i++) {
        if (!clef_cpu_wqdot_takes(stored[i])) {
            break;
        }
    }
    if (n > 0 && i == n) {
        return CLEF_CPU_WQDOT;
    }
    for (i = 0; i < n; i++) {
        if (clef_dtype_is_block(stored[i])
            || (stored[i] == CLEF_DTYPE_F16 && prec != CLEF_PRECISION_BF16))
        {
            return CLEF_CPU_WBLOCKS;
        }
    }
    if (native != NULL) {
        return CLEF_CPU_WBF16_ROWS;
    }
    for (i = 0; i < n && prec != CLEF_PRECISION_BF16; i++) {
        if (stored[i] != CLEF_DTYPE_BF16) {
            return CLEF_CPU_WF32;
        }
    }
    return CLEF_CPU_WBF16;
}

/* ---- any format ---------------------------------------------------------- */

int
clef_cpu_wpack_alloc_format(clef_cpu_wpack *w, clef_cpu_wformat f,
    int64_t rows, int64_t cols)
{
    size_t  bytes;

    w->format = f;
    w->traits = clef_cpu_wformat_traits(f);
    w->rows = rows;
    w->cols = cols;
    w->native = NULL;
    w->data = NULL;
    if (w->traits == NULL) {
        return -1;
    }
    bytes = (w->traits->bytes(rows, cols) + 63) / 64 * 64;
    w->data = aligned_alloc(64, bytes > 0 ? bytes : 64);
    if (w->data == NULL) {
        return -1;
    }
    memset(w->data, 0, bytes);
    return 0;
}

int
clef_cpu_wpack_alloc(clef_cpu_wpack *w, int64_t rows, int64_t cols)
{
    return clef_cpu_wpack_alloc_format(w, CLEF_CPU_WF32, rows, cols);
}

int
clef_cpu_wpack_alloc_bf16(clef_cpu_wpack *w, int64_t rows, int64_t cols)
{
    return clef_cpu_wpack_alloc_format(w, CLEF_CPU_WBF16, rows, cols);
}

void
clef_cpu_wpack_free(clef_cpu_wpack *w)
{
    if (w->traits != NULL && w->traits->release != NULL && w->data != NULL) {
        w->traits->release(w);
    }
    free(w->data);
    w->data = NULL;
    w->native = NULL;
}

size_t
clef_cpu_wpack_bytes(const clef_cpu_wpack *w)
{
    if (w->data == NULL || w->traits == NULL) {
        return 0;
    }
    return w->traits->held != NULL ? w->traits->held(w)
                                   : w->traits->bytes(w->rows, w->cols);
}

int
clef_cpu_wpack_view_tensor(clef_cpu_wpack *w, clef_cpu_pool *pool,
    int64_t row, const clef_tensor *t, int64_t t_row, int64_t n,
    int64_t t_col)
{
    return w->traits->view(w, pool, row, t, t_row, n, t_col);
}

int
clef_cpu_wpack_is_view(const clef_cpu_wpack *w)
{
    return w->traits != NULL && w->traits->view != NULL;
}

void
clef_cpu_wpack_rows(clef_cpu_wpack *w, int64_t row, int64_t n,
    const float *src, int64_t ld)
{
    w->traits->pack_f32(w, row, n, src, ld);
}

void
clef_cpu_wpack_rows_bf16(clef_cpu_wpack *w, int64_t row, int64_t n,
    const uint16_t *src, int64_t ld)
{
    /* every format today reads bf16 in place */
    w->traits->pack_raw(w, row, n, src, ld);
}

int
clef_cpu_wpack_from_tensor(clef_cpu_wpack *w, int64_t row,
    const clef_tensor *t, int64_t t_row, int64_t n, int64_t t_col)
{
    int64_t  cols = t->numel / t->shape[0];
    int64_t  at = clef_dtype_bytes(t->dtype, t_row * cols + t_col);
    int64_t  r;
    float   *f;

    if (w->traits->view != NULL) {
        return w->traits->view(w, NULL, row, t, t_row, n, t_col);
    }
    if (!clef_tensor_is_plain(t)) {
        /* rows stored apart or columns elsewhere: row by row through fp32 */
        f = malloc(sizeof(float) * (size_t) w->cols);
        if (f == NULL) {
            return -1;
        }
        for (r = 0; r < n; r++) {
            clef_tensor_row_to_f32(t, t_row + r, t_col, w->cols, f);
            w->traits->pack_f32(w, row + r, 1, f, w->cols);
        }
        free(f);
        return 0;
    }
    if (t->dtype == w->traits->raw && at >= 0) {
        w->traits->pack_raw(w, row, n, (const char *) t->data + at, cols);
        return 0;
    }
    if (t->dtype == CLEF_DTYPE_F32) {
        w->traits->pack_f32(w, row, n, (const float *) t->data
                            + t_row * cols + t_col, cols);
        return 0;
    }
    f = malloc(sizeof(float) * (size_t) (n * cols));
    if (f == NULL) {
        return -1;
    }
    clef_tensor_rows_to_f32(t, t_row, n, f);
    w->traits->pack_f32(w, row, n, f + t_col, cols);
    free(f);
    return 0;
}
