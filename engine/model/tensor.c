#include "model/tensor.h"

#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* A block is at most this many values (the K types). */
#define MAX_BLOCK  256

int64_t
clef_tensor_cols(const clef_tensor *t)
{
    return t->ndim >= 2 && t->shape[0] > 0 ? t->numel / t->shape[0] : 1;
}

static const clef_tensor_run *
find_run(const clef_tensor *t, int64_t r)
{
    int  lo = 0, hi = t->n_runs - 1, mid;

    while (lo < hi) {
        mid = (lo + hi + 1) / 2;
        if (t->runs[mid].row <= r) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    return &t->runs[lo];
}

const void *
clef_tensor_row(const clef_tensor *t, int64_t r, clef_dtype *dt)
{
    const clef_tensor_run  *run;
    int64_t                 at;

    if (t->n_runs == 0) {
        *dt = t->dtype;
        at = clef_dtype_bytes(t->dtype, r * clef_tensor_cols(t));
        return (const char *) t->data + (at > 0 ? at : 0);
    }
    run = find_run(t, r);
    *dt = run->dtype;
    return (const char *) run->data + (size_t) (r - run->row) * run->stride;
}

int
clef_tensor_types(const clef_tensor *t, clef_dtype *out, int max)
{
    int  i, j, n = 0;

    if (t->n_runs == 0) {
        if (max > 0) {
            out[n++] = t->dtype;
        }
        return n;
    }
    for (i = 0; i < t->n_runs; i++) {
        for (j = 0; j < n && out[j] != t->runs[i].dtype; j++) {
            /* seen */
        }
        if (j == n && n < max) {
            out[n++] = t->runs[i].dtype;
        }
    }
    return n;
}

int
clef_tensor_is_plain(const clef_tensor *t)
{
    return t->n_runs == 0 && t->n_spans == 0;
}

void
clef_dtype_cols_to_f32(clef_dtype dt, const void *row, int64_t from,
    int64_t n, float *dst)
{
    const clef_dtype_traits  *tr = clef_dtype_traits_of(dt);
    float                     tmp[MAX_BLOCK];
    int64_t                   b, first, take, whole;

    if (tr == NULL || tr->to_f32 == NULL || tr->block > MAX_BLOCK) {
        memset(dst, 0, (size_t) n * sizeof(float));
        return;
    }
    while (n > 0) {
        b = from / tr->block;
        first = from - b * tr->block;
        if (first == 0 && n >= tr->block) {
            /* whole blocks straight into dst */
            whole = n / tr->block * tr->block;
            tr->to_f32((const char *) row + b * (int64_t) tr->block_bytes,
                       dst, whole);
            take = whole;
        } else {
            tr->to_f32((const char *) row + b * (int64_t) tr->block_bytes,
                       tmp, tr->block);
            take = tr->block - first < n ? tr->block - first : n;
            memcpy(dst, tmp + first, (size_t) take * sizeof(float));
        }
        from += take;
        dst += take;
        n -= take;
    }
}

void
clef_tensor_row_to_f32(const clef_tensor *t, int64_t r, int64_t c0,
    int64_t n, float *dst)
{
    const void              *row;
    const clef_tensor_span  *s;
    clef_dtype               dt;
    int64_t                  take, off;
    int                      i;

    row = clef_tensor_row(t, r, &dt);
    if (t->n_spans == 0) {
        clef_dtype_cols_to_f32(dt, row, c0, n, dst);
        return;
    }
    for (i = 0; i < t->n_spans && n > 0; i++) {
        s = &t->spans[i];
        if (c0 >= s->col + s->n) {
            continue;
        }
        off = c0 - s->col;
        take = s->n - off < n ? s->n - off : n;
        clef_dtype_cols_to_f32(dt, row, s->from + off, take, dst);
        c0 += take;
        dst += take;
        n -= take;
    }
}

void
clef_tensor_to_f32(const clef_tensor *t, float *dst)
{
    int64_t  rows = t->ndim >= 1 ? t->shape[0] : 1;

    if (t->ndim == 0) {
        clef_tensor_row_to_f32(t, 0, 0, 1, dst);
        return;
    }
    clef_tensor_rows_to_f32(t, 0, rows, dst);
}

void
clef_tensor_rows_to_f32(const clef_tensor *t, int64_t row, int64_t n,
    float *dst)
{
    int64_t  cols = clef_tensor_cols(t), r;

    if (clef_tensor_is_plain(t) && t->ndim >= 2) {
        clef_dtype_cols_to_f32(t->dtype, t->data, row * cols, n * cols, dst);
        return;
    }
    if (clef_tensor_is_plain(t)) {
        /* a vector: its elements are its rows */
        clef_dtype_cols_to_f32(t->dtype, t->data, row, n, dst);
        return;
    }
    for (r = 0; r < n; r++) {
        clef_tensor_row_to_f32(t, row + r, 0, cols, dst + r * cols);
    }
}

int
clef_tensor_has_shape(const clef_tensor *t, int ndim, const int64_t *shape)
{
    int  i;

    if (t->ndim != ndim) {
        return 0;
    }
    for (i = 0; i < ndim; i++) {
        if (t->shape[i] != shape[i]) {
            return 0;
        }
    }
    return 1;
}

/* The whole pages inside [p, p + n). */
static void
release_bytes(const void *p, size_t n)
{
    uintptr_t  page = (uintptr_t) sysconf(_SC_PAGESIZE);
    uintptr_t  begin, end;

    begin = ((uintptr_t) p + page - 1) & ~(page - 1);
    end = ((uintptr_t) p + n) & ~(page - 1);
    if (end > begin) {
        /* advice only: a failure leaves the pages where they were */
        (void) madvise((void *) begin, end - begin, MADV_DONTNEED);
    }
}

void
clef_tensor_release(const clef_tensor *t)
{
    const clef_tensor_run  *r;
    int                     i;

    if (t == NULL || t->data == NULL) {
        return;
    }
    if (t->n_runs == 0 && t->n_spans > 0) {
        /* its columns taken from elsewhere in each stored row (a GGUF's
         * reordered value heads): the stored rows, one after another */
        release_bytes(t->data, (size_t) (t->numel / clef_tensor_cols(t))
                               * (size_t) clef_dtype_bytes(t->dtype,
                                                           clef_tensor_cols(t)));
        return;
    }
    if (t->n_runs == 0) {
        release_bytes(t->data, t->nbytes);
        return;
    }
    /* a view's runs, each from its first row to the end of its last (a
     * GGUF's q, k and v parts, its reordered value heads): pages of the
     * same stored tensor only */
    for (i = 0; i < t->n_runs; i++) {
        r = &t->runs[i];
        if (r->n > 0) {
            release_bytes(r->data, (size_t) (r->n - 1) * r->stride
                          + (size_t) clef_dtype_bytes(r->dtype,
                                                      clef_tensor_cols(t)));
        }
    }
}
