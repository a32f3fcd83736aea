#include "cpu/parallel/rowpar.h"

#include <string.h>

#include "base/clock.h"

typedef struct {
    float        *x;
    const float  *part;         /* [segs][rows][n] */
    int64_t       ldx, rows, n;
    int           segs;
} sum_job;

/* Rows [begin, end): P_0 += P_1, += P_2, ... in segment order, then x +=
 * P_0.  In place in P_0 so that each step is a plain vector loop; with
 * -ffp-contract=off nothing fuses, so the order is the one written. */
static void
sum_task(void *ctx, int64_t begin, int64_t end, int worker)
{
    const sum_job  *j = ctx;
    float          *acc, *x;
    const float    *p;
    int64_t         t, h, seg = j->rows * j->n;
    int             s;

    for (t = begin; t < end; t++) {
        acc = (float *) j->part + t * j->n;
        for (s = 1; s < j->segs; s++) {
            p = j->part + s * seg + t * j->n;
            for (h = 0; h < j->n; h++) {
                acc[h] += p[h];
            }
        }
        x = j->x + t * j->ldx;
        for (h = 0; h < j->n; h++) {
            x[h] += acc[h];
        }
    }
}

/* Every rank ends with every segment: its own are at part + rank * count
 * (seg0 = rank * nseg). */
static int
exchange(const clef_cpu_rowpar *rp, float *part, size_t count, clef_error *err)
{
    clef_comm  *c = rp->comm;
    int         r;

    if (c->ops->all_gather != NULL) {
        return c->ops->all_gather(c, rp->rank, part, count, CLEF_COMM_F32, NULL,
                                  err);
    }
    /* other slots zero: the sum in rank order adds 0 to each value */
    for (r = 0; r < c->size; r++) {
        if (r != rp->rank) {
            memset(part + (size_t) r * count, 0, sizeof(float) * count);
        }
    }
    return c->ops->all_reduce_sum(c, rp->rank, part, count * (size_t) c->size,
                                  CLEF_COMM_F32, NULL, err);
}

size_t
clef_cpu_rowpar_floats(const clef_cpu_rowpar *rp, int64_t m, int64_t n)
{
    int64_t  tile = m < CLEF_CPU_ROWPAR_TILE ? m : CLEF_CPU_ROWPAR_TILE;

    return (size_t) rp->segs * (size_t) (tile * n);
}

int
clef_cpu_rowpar_add(clef_cpu_pool *pool, const clef_cpu_rowpar *rp,
    const float *in, int64_t ldin, int64_t m, const clef_cpu_wpack *w,
    float *x, int64_t ldx, float *part, float *gemm, double *exchange_seconds,
    clef_error *err)
{
    sum_job   sj;
    int64_t   t0, rows, n = w[0].rows, k = w[0].cols;
    double    t;
    int       j, rc;

    for (t0 = 0; t0 < m; t0 += CLEF_CPU_ROWPAR_TILE) {
        rows = m - t0 < CLEF_CPU_ROWPAR_TILE ? m - t0 : CLEF_CPU_ROWPAR_TILE;
        for (j = 0; j < rp->nseg; j++) {
            clef_cpu_linear_prec(pool, in + t0 * ldin + j * k, ldin, rows, &w[j],
                                 part + (rp->seg0 + j) * rows * n, n, 0.0f,
                                 gemm, rp->prec);
        }
        if (rp->comm != NULL) {
            t = clef_clock_seconds();
            rc = exchange(rp, part, (size_t) (rp->nseg * rows * n), err);
            *exchange_seconds += clef_clock_seconds() - t;
            if (rc != 0) {
                return -1;
            }
        }
        sj.x = x + t0 * ldx;
        sj.part = part;
        sj.ldx = ldx;
        sj.rows = rows;
        sj.n = n;
        sj.segs = rp->segs;
        clef_cpu_pool_for(pool, rows, 16, sum_task, &sj);
    }
    return 0;
}
