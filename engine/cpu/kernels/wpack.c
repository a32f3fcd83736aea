#include "cpu/kernels/wpack.h"

#include <stdlib.h>
#include <string.h>

#include "cpu/kernels/gemm.h"
#include "cpu/kernels/gemm_bf16.h"

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

/* Where weight row n's step 0 goes: its panel, then its column of the
 * panel (interleaved in bf16, gemm_kernel.h). */
static float *
f32_slot(const clef_cpu_wpack *w, int64_t n)
{
    return (float *) w->data + n / NR * w->cols * NR + n % NR;
}

static uint16_t *
bf16_slot(const clef_cpu_wpack *w, int64_t n)
{
    int64_t  c = n % NR;

    return (uint16_t *) w->data + n / NR * w->cols * NR
           + (c < NR / 2 ? 2 * c : 2 * (c - NR / 2) + 1);
}

static void
f32_pack_f32(clef_cpu_wpack *w, int64_t row, int64_t n, const float *src,
    int64_t ld)
{
    const float  *s;
    float        *d;
    int64_t       r, k;

    for (r = 0; r < n; r++) {
        s = src + r * ld;
        d = f32_slot(w, row + r);
        for (k = 0; k < w->cols; k++) {
            d[k * NR] = s[k];
        }
    }
}

static void
f32_pack_bf16(clef_cpu_wpack *w, int64_t row, int64_t n, const void *src,
    int64_t ld)
{
    const uint16_t  *s;
    float           *d;
    int64_t          r, k;

    for (r = 0; r < n; r++) {
        s = (const uint16_t *) src + r * ld;
        d = f32_slot(w, row + r);
        for (k = 0; k < w->cols; k++) {
            d[k * NR] = clef_bf16_to_f32(s[k]);
        }
    }
}

static void
bf16_pack_f32(clef_cpu_wpack *w, int64_t row, int64_t n, const float *src,
    int64_t ld)
{
    const float  *s;
    uint16_t     *h;
    int64_t       r, k;

    for (r = 0; r < n; r++) {
        s = src + r * ld;
        h = bf16_slot(w, row + r);
        for (k = 0; k < w->cols; k++) {
            h[k * NR] = clef_f32_to_bf16(s[k]);
        }
    }
}

static void
bf16_pack_bf16(clef_cpu_wpack *w, int64_t row, int64_t n, const void *src,
    int64_t ld)
{
    const uint16_t  *s;
    uint16_t        *h;
    int64_t          r, k;

    for (r = 0; r < n; r++) {
        s = (const uint16_t *) src + r * ld;
        h = bf16_slot(w, row + r);
        for (k = 0; k < w->cols; k++) {
            h[k * NR] = s[k];
        }
    }
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
rows_pack_f32(clef_cpu_wpack *w, int64_t row, int64_t n, const float *src,
    int64_t ld)
{
    const float  *s;
    uint16_t     *h;
    int64_t       r, k;

    for (r = 0; r < n; r++) {
        s = src + r * ld;
        h = (uint16_t *) w->data + (row + r) * w->cols;
        for (k = 0; k < w->cols; k++) {
            h[k] = clef_f32_to_bf16(s[k]);
        }
    }
}

static void
rows_pack_bf16(clef_cpu_wpack *w, int64_t row, int64_t n, const void *src,
    int64_t ld)
{
    int64_t  r;

    for (r = 0; r < n; r++) {
        memcpy((uint16_t *) w->data + (row + r) * w->cols,
               (const uint16_t *) src + r * ld,
               sizeof(uint16_t) * (size_t) w->cols);
    }
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
        "fp32 panels", f32_bytes, f32_pack_f32,
        CLEF_DTYPE_BF16, f32_pack_bf16, clef_cpu_panels_linear
    },
    [CLEF_CPU_WBF16] = {
        "bf16 panels", bf16_bytes, bf16_pack_f32,
        CLEF_DTYPE_BF16, bf16_pack_bf16, clef_cpu_panels_linear
    },
    [CLEF_CPU_WBF16_ROWS] = {
        "bf16 rows (native)", rows_bytes, rows_pack_f32,
        CLEF_DTYPE_BF16, rows_pack_bf16, rows_linear
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
    free(w->data);
    w->data = NULL;
    w->native = NULL;
}

size_t
clef_cpu_wpack_bytes(const clef_cpu_wpack *w)
{
    return w->data != NULL && w->traits != NULL
           ? w->traits->bytes(w->rows, w->cols) : 0;
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
    float   *f;

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
