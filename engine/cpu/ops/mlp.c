#include "cpu/ops/mlp.h"

#include "cpu/kernels/act.h"

typedef struct {
    float    *gu;
    int64_t   ld;
    int       inter;
} swiglu_job;

static void
swiglu_task(void *ctx, int64_t begin, int64_t end, int worker)
{
    const swiglu_job  *j = ctx;
    float             *g;
    int64_t            r;

    for (r = begin; r < end; r++) {
        g = j->gu + r * j->ld;
        clef_cpu_silu_mul(g, g + j->inter, j->inter);
    }
}

void
clef_cpu_swiglu(clef_cpu_pool *pool, float *gate_up, int64_t ld, int64_t rows,
    int inter)
{
    swiglu_job  j = { gate_up, ld, inter };

    clef_cpu_pool_for(pool, rows, 1, swiglu_task, &j);
}
