#include "cpu/kernels/wqdot.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define QK  CLEF_QDOT_QK

int
clef_cpu_wqdot_takes(clef_dtype dt)
{
    const clef_dtype_traits  *t = clef_dtype_traits_of(dt);

    /* 256 columns: a whole number of blocks of every type */
    return t != NULL && t->ggml >= 0 && clef_qdot_type_ok(t->ggml, 256);
}

size_t
clef_cpu_wqdot_bytes(int64_t rows, int64_t cols)
{
    return sizeof(clef_cpu_wqdot);
}

size_t
clef_cpu_wqdot_held(const clef_cpu_wpack *w)
{
    const clef_cpu_wqdot  *v = w->data;

    return v->q.bytes + v->file_bytes;
}

/* The stored column of t's column c (spans followed); -1 past the row. */
static int64_t
stored_col(const clef_tensor *t, int64_t c)
{
    int  i;

    for (i = 0; i < t->n_spans; i++) {
        if (c >= t->spans[i].col && c < t->spans[i].col + t->spans[i].n) {
            return t->spans[i].from + (c - t->spans[i].col);
        }
    }
    return t->n_spans == 0 ? c : -1;
}

/*
 * Where the file keeps W's columns (t's [t_col, t_col + cols)) for blocks
 * of bv values: gather[k] the stored block of W's block k when each is one
 * stored block (the common case, in order, with no spans); else, with
 * spans that cut the type's blocks (a K type's 256 values over value
 * heads of 64), the columns must fill one stored range of whole blocks,
 * from stored block *first, and amap[] (W's columns in blocks of QK)
 * says in which order.  -1 when neither holds.
 */
static int
plan_columns(const clef_tensor *t, int64_t t_col, int64_t cols, int64_t bv,
    int64_t *gather, int32_t *amap, int64_t *first)
{
    int64_t  j, c, s, lo = INT64_MAX, nq = cols / QK;
    int      ok = 1;

    for (j = 0; j < cols / bv; j++) {
        s = stored_col(t, t_col + j * bv);
        gather[j] = s / bv;
        ok &= s >= 0 && s % bv == 0;
        for (c = QK; ok && c < bv; c += QK) {
            /* the block's every run of QK values (spans are whole runs)
             * where the block's first puts them */
            ok &= stored_col(t, t_col + j * bv + c) == s + c;
        }
    }
    if (ok) {
        *first = -1;
        return 0;
    }
    for (j = 0; j < nq; j++) {
        s = stored_col(t, t_col + j * QK);
        if (s < 0 || s % QK != 0
            || stored_col(t, t_col + j * QK + QK - 1) != s + QK - 1)
        {
            return -1;
        }
        lo = s < lo ? s : lo;
    }
    if (lo % bv != 0) {
        return -1;
    }
    for (j = 0; j < nq; j++) {
        amap[j] = -1;
    }
    for (j = 0; j < nq; j++) {
        s = (stored_col(t, t_col + j * QK) - lo) / QK;
        if (s >= nq || amap[s] != -1) {
            return -1;
        }
        amap[s] = (int32_t) j;
    }
    *first = lo / bv;
    return 0;
}

/* The activations' order the range needs (amap, or NULL for x's), which
 * every range of one matrix must share. */
static int
set_order(clef_cpu_wqdot *v, const int32_t *amap, int64_t nq)
{
    int  want = amap != NULL ? 2 : 1;

    if (v->order != 0) {
        return v->order != want
               || (amap != NULL
                   && memcmp(amap, v->amap, sizeof(int32_t) * (size_t) nq)
                      != 0)
               ? -1 : 0;
    }
    if (amap != NULL) {
        v->amap = malloc(sizeof(int32_t) * (size_t) nq);
        if (v->amap == NULL) {
            return -1;
        }
        memcpy(v->amap, amap, sizeof(int32_t) * (size_t) nq);
        v->q.amap = v->amap;
    }
    v->order = want;
    return 0;
}

int
clef_cpu_wqdot_cuts(const clef_tensor *t, int64_t t_col, int64_t cols)
{
    const clef_dtype_traits  *tr;
    clef_dtype                types[4];
    int64_t                   first, *gather;
    int32_t                  *amap;
    int                       k, n = clef_tensor_types(t, types, 4), ok;

    for (k = 0; k < n; k++) {
        if (!clef_cpu_wqdot_takes(types[k])) {
            return 1;
        }
    }
    gather = malloc(sizeof(int64_t) * (size_t) (cols / QK + 1));
    amap = malloc(sizeof(int32_t) * (size_t) (cols / QK + 1));
    ok = gather != NULL && amap != NULL && cols % QK == 0;
    for (k = 0; ok && k < n; k++) {
        tr = clef_dtype_traits_of(types[k]);
        ok = cols % tr->block == 0
             && plan_columns(t, t_col, cols, tr->block, gather, amap, &first)
                == 0;
    }
    free(amap);
    free(gather);
    return ok;
}

/* The rows of one run as pack_run() planned them, for the pool. */
typedef struct {
    clef_cpu_wqdot      *v;
    const clef_tensor   *t;
    int64_t              row;      /* W's row of the run's first */
    int64_t              t_row;    /* t's row of the run's first */
    const int64_t       *gather;   /* W's block k is the stored row's
                                      gather[k] (first < 0) */
    int64_t              first;    /* >= 0: W's blocks start at the stored
                                      row's block first, in order */
    int64_t              nb;       /* blocks in one of W's rows */
    int64_t              bb;       /* bytes of a block */
    int                  in_order;
    atomic_int           failed;
} pack_job;

/* Rows [begin, end) of the run: each row's blocks go to their own bytes of
 * its panel (qpack.c), so any split of the rows gives the same panels. */
static void
pack_task(void *ctx, int64_t begin, int64_t end, int worker)
{
    pack_job       *j = ctx;
    const uint8_t  *src;
    uint8_t        *tmp = NULL;
    clef_dtype      dt;
    int64_t         r, k;

    (void) worker;
    if (!j->in_order) {
        tmp = malloc((size_t) (j->nb * j->bb));
        if (tmp == NULL) {
            atomic_store(&j->failed, 1);
            return;
        }
    }
    for (r = begin; r < end; r++) {
        src = clef_tensor_row(j->t, j->t_row + r, &dt);
        if (j->first >= 0) {
            src += j->first * j->bb;
        } else if (j->in_order) {
            src += j->gather[0] * j->bb;
        } else {
            /* W's blocks gathered from the stored row, in W's order */
            for (k = 0; k < j->nb; k++) {
                memcpy(tmp + k * j->bb, src + j->gather[k] * j->bb,
                       (size_t) j->bb);
            }
            src = tmp;
        }
        clef_qdot_pack_rows(&j->v->q, j->row + r, 1, src, 0);
    }
    free(tmp);
}

/* Rows [r, e) of the range, all of type dt, into group at row + r, the
 * rows repacked over the pool (a 27B file's blocks take minutes on one
 * thread). */
static int
pack_run(clef_cpu_wqdot *v, clef_cpu_pool *pool, int64_t row,
    const clef_tensor *t, int64_t t_row, int64_t r, int64_t e, int64_t t_col,
    clef_dtype dt)
{
    const clef_dtype_traits  *tr = clef_dtype_traits_of(dt);
    int64_t                   bv = tr->block, k, nq = v->q.cols / QK;
    int64_t                  *gather;
    int32_t                  *amap;
    pack_job                  j;
    int                       rc = -1;

    if (!clef_cpu_wqdot_takes(dt) || v->q.cols % bv != 0) {
        return -1;
    }
    j.nb = v->q.cols / bv;
    j.bb = (int64_t) tr->block_bytes;
    gather = malloc(sizeof(int64_t) * (size_t) j.nb);
    amap = malloc(sizeof(int32_t) * (size_t) nq);
    if (gather == NULL || amap == NULL
        || plan_columns(t, t_col, v->q.cols, bv, gather, amap, &j.first) != 0
        || set_order(v, j.first >= 0 ? amap : NULL, nq) != 0
        || clef_qdot_mat_add(&v->q, (uint32_t) tr->ggml, row + r, e - r) != 0)
    {
        goto done;
    }
    j.in_order = 1;
    for (k = 1; j.first < 0 && k < j.nb; k++) {
        j.in_order &= gather[k] == gather[0] + k;
    }
    j.v = v;
    j.t = t;
    j.row = row + r;
    j.t_row = t_row + r;
    j.gather = gather;
    atomic_init(&j.failed, 0);
    if (pool != NULL) {
        clef_cpu_pool_for(pool, e - r, CLEF_QDOT_PANEL, pack_task, &j);
    } else {
        pack_task(&j, 0, e - r, 0);
    }
    rc = atomic_load(&j.failed) ? -1 : 0;
done:
    free(amap);
    free(gather);
    return rc;
}

void
clef_cpu_wqdot_in_place(clef_cpu_wpack *w)
{
    if (w->format == CLEF_CPU_WQDOT && w->data != NULL) {
        ((clef_cpu_wqdot *) w->data)->in_place = 1;
    }
}

/* A plain range of one type, columns from the first, as a group read in
 * place; 1 when the range is not such (it is packed then). */
static int
add_in_place(clef_cpu_wqdot *v, int64_t row, const clef_tensor *t,
    int64_t t_row, int64_t n, int64_t t_col)
{
    const clef_dtype_traits  *tr = clef_dtype_traits_of(t->dtype);
    size_t                    stride;

    if (!clef_tensor_is_plain(t) || t_col != 0 || t->ndim != 2
        || t->shape[1] != v->q.cols || !clef_cpu_wqdot_takes(t->dtype)
        || v->q.cols % tr->block != 0)
    {
        return 1;
    }
    stride = (size_t) clef_dtype_bytes(t->dtype, v->q.cols);
    if (set_order(v, NULL, v->q.cols / QK) != 0
        || clef_qdot_mat_add_src(&v->q, (uint32_t) tr->ggml, row, n,
                                 (const char *) t->data
                                 + (size_t) t_row * stride, stride) != 0)
    {
        return -1;
    }
    v->file_bytes += (size_t) n * stride;
    return 0;
}

int
clef_cpu_wqdot_add(clef_cpu_wpack *w, clef_cpu_pool *pool, int64_t row,
    const clef_tensor *t, int64_t t_row, int64_t n, int64_t t_col)
{
    clef_cpu_wqdot  *v = w->data;
    clef_dtype       dt, first;
    int64_t          r, e;

    if (n <= 0) {
        return 0;
    }
    v->q.rows = w->rows;
    v->q.cols = w->cols;
    if (v->in_place) {
        e = add_in_place(v, row, t, t_row, n, t_col);
        if (e <= 0) {
            return (int) e;
        }
    }
    for (r = 0; r < n; r = e) {
        /* a run of rows of one type is one group */
        (void) clef_tensor_row(t, t_row + r, &first);
        for (e = r + 1; e < n; e++) {
            (void) clef_tensor_row(t, t_row + e, &dt);
            if (dt != first) {
                break;
            }
        }
        if (pack_run(v, pool, row, t, t_row, r, e, t_col, first) != 0) {
            return -1;
        }
    }
    /* packed: the file's pages of it leave the process (a view's too: a
     * GGUF's q, k, v parts and reordered value heads, a third of a 27B
     * file's delta-rule matrices) */
    clef_tensor_release(t);
    return 0;
}

void
clef_cpu_wqdot_linear(clef_cpu_pool *pool, const float *x, int64_t ldx,
    int64_t m, const clef_cpu_wpack *w, float *y, int64_t ldy, float beta,
    float *scratch, clef_precision prec)
{
    const clef_cpu_wqdot  *v = w->data;

    clef_qdot_linear(pool, x, ldx, m, &v->q, y, ldy, beta, scratch);
}

void
clef_cpu_wqdot_release(clef_cpu_wpack *w)
{
    clef_cpu_wqdot  *v = w->data;

    if (v != NULL) {
        clef_qdot_mat_free(&v->q);
        free(v->amap);
    }
}
