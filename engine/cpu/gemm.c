#include "gemm.h"

#include <cblas.h>

/* Slices of W are multiples of this many rows, so that every slice starts
 * on a boundary of OpenBLAS's register tiles. */
#define SLICE_ALIGN  64
#define SLICE_MIN_N  1024

typedef struct {
    const float  *x;
    int64_t       ldx, m, k;
    const float  *w;
    int64_t       n;
    float        *y;
    int64_t       ldy;
    float         beta;
    int64_t       slice;      /* rows of W per task */
    int           split_m;    /* 1: slices of x's rows instead */
} linear_job;

static void
linear_task(void *ctx, int64_t begin, int64_t end, int worker)
{
    const linear_job  *j = ctx;
    int64_t            i, lo, hi;

    for (i = begin; i < end; i++) {
        lo = i * j->slice;
        if (j->split_m) {
            hi = lo + j->slice < j->m ? lo + j->slice : j->m;
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans,
                        (blasint) (hi - lo), (blasint) j->n, (blasint) j->k,
                        1.0f, j->x + lo * j->ldx, (blasint) j->ldx,
                        j->w, (blasint) j->k, j->beta,
                        j->y + lo * j->ldy, (blasint) j->ldy);
        } else {
            hi = lo + j->slice < j->n ? lo + j->slice : j->n;
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans,
                        (blasint) j->m, (blasint) (hi - lo), (blasint) j->k,
                        1.0f, j->x, (blasint) j->ldx,
                        j->w + lo * j->k, (blasint) j->k, j->beta,
                        j->y + lo, (blasint) j->ldy);
        }
    }
}

void
clef_cpu_linear(clef_cpu_pool *pool, const float *x, int64_t ldx, int64_t m,
    int64_t k, const float *w, int64_t n, float *y, int64_t ldy, float beta)
{
    linear_job  j;
    int64_t     parts, slice, tasks;
    int         threads = clef_cpu_pool_size(pool);

    if (m <= 0 || n <= 0) {
        return;
    }

    j.x = x;
    j.ldx = ldx;
    j.m = m;
    j.k = k;
    j.w = w;
    j.n = n;
    j.y = y;
    j.ldy = ldy;
    j.beta = beta;

    /* One slice per thread.  W's rows are split while each slice stays wide
     * enough for OpenBLAS's blocking; otherwise (the N = hidden projections
     * of a long batch) x's rows are.  Tiny products run on the calling
     * thread. */
    parts = threads == 1 || m * n * k < (1 << 20) ? 1 : threads;
    if (parts == 1 || n >= parts * SLICE_MIN_N || m < parts * 32) {
        slice = (n + parts - 1) / parts;
        slice = (slice + SLICE_ALIGN - 1) / SLICE_ALIGN * SLICE_ALIGN;
        tasks = (n + slice - 1) / slice;
        j.split_m = 0;
    } else {
        slice = (m + parts - 1) / parts;
        tasks = (m + slice - 1) / slice;
        j.split_m = 1;
    }
    j.slice = slice;

    clef_cpu_pool_for(pool, tasks, 1, linear_task, &j);
}
