#include "cpu/ops/norm.h"

#include <stddef.h>

#include "cpu/kernels/act.h"
#include "cpu/kernels/vec.h"

void
clef_cpu_rmsnorm_row(const float *x, float *y, int dim, const float *m,
    float eps)
{
    float  r;
    int    i;

    r = 1.0f / sqrtf(clef_vec_sumsq(x, dim) / (float) dim + eps);
    for (i = 0; i < dim; i++) {
        y[i] = (x[i] * r) * m[i];
    }
}

void
clef_cpu_rmsnorm1p_row(const float *x, float *y, int dim, const float *w,
    float eps)
{
    float  r;
    int    i;

    r = 1.0f / sqrtf(clef_vec_sumsq(x, dim) / (float) dim + eps);
    for (i = 0; i < dim; i++) {
        y[i] = (x[i] * r) * (1.0f + w[i]);
    }
}

void
clef_cpu_rmsnorm_gated_row(const float *x, const float *z, float *y, int dim,
    const float *w, float eps)
{
    float  r;

    r = 1.0f / sqrtf(clef_vec_sumsq(x, dim) / (float) dim + eps);
    clef_cpu_scale_gate_silu(x, z, y, dim, w, r);
}

typedef struct {
    const float  *x, *z, *w;
    float        *y;
    int64_t       ldx, ldz, ldy;
    int           heads, dim;
    float         eps;
} norm_job;

static void
norm1p_task(void *ctx, int64_t begin, int64_t end, int worker)
{
    const norm_job  *j = ctx;
    int64_t          r;

    for (r = begin; r < end; r++) {
        clef_cpu_rmsnorm1p_row(j->x + r * j->ldx, j->y + r * j->ldy, j->dim,
                               j->w, j->eps);
    }
}

static void
norm_task(void *ctx, int64_t begin, int64_t end, int worker)
{
    const norm_job  *j = ctx;
    int64_t          r;

    for (r = begin; r < end; r++) {
        clef_cpu_rmsnorm_row(j->x + r * j->ldx, j->y + r * j->ldy, j->dim,
                             j->w, j->eps);
    }
}

static void
gated_task(void *ctx, int64_t begin, int64_t end, int worker)
{
    const norm_job  *j = ctx;
    int64_t          r, o;
    int              h;

    for (r = begin; r < end; r++) {
        for (h = 0; h < j->heads; h++) {
            o = (int64_t) h * j->dim;
            clef_cpu_rmsnorm_gated_row(j->x + r * j->ldx + o, j->z + r * j->ldz + o,
                                       j->y + r * j->ldy + o, j->dim, j->w, j->eps);
        }
    }
}

static int64_t
rows_per_chunk(int dim)
{
    /* about 16k floats of work per chunk */
    return dim >= 16384 ? 1 : 16384 / dim;
}

void
clef_cpu_rmsnorm(clef_cpu_pool *pool, const float *x, int64_t ldx, float *y,
    int64_t ldy, int64_t rows, int dim, const float *m, float eps)
{
    norm_job  j = { x, NULL, m, y, ldx, 0, ldy, 1, dim, eps };

    clef_cpu_pool_for(pool, rows, rows_per_chunk(dim), norm_task, &j);
}

void
clef_cpu_rmsnorm1p(clef_cpu_pool *pool, const float *x, int64_t ldx, float *y,
    int64_t ldy, int64_t rows, int dim, const float *w, float eps)
{
    norm_job  j = { x, NULL, w, y, ldx, 0, ldy, 1, dim, eps };

    clef_cpu_pool_for(pool, rows, rows_per_chunk(dim), norm1p_task, &j);
}

void
clef_cpu_rmsnorm_gated(clef_cpu_pool *pool, const float *x, int64_t ldx,
    const float *z, int64_t ldz, float *y, int64_t ldy, int64_t rows,
    int heads, int dim, const float *w, float eps)
{
    norm_job  j = { x, z, w, y, ldx, ldz, ldy, heads, dim, eps };

    clef_cpu_pool_for(pool, rows, rows_per_chunk(heads * dim), gated_task, &j);
}
