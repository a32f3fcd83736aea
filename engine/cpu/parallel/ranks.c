#include "cpu/parallel/ranks.h"

#include <stdlib.h>

#include "cpu/parallel/crew.h"

/* The ranks are a crew (crew.h) whose members each run the function with
 * their own rank number and keep its result. */
struct clef_cpu_ranks {
    clef_cpu_crew     *crew;
    int                size;

    clef_cpu_rank_fn   fn;
    void              *ctx;
    int               *rc;              /* [size] */
    clef_error        *err;             /* [size] */
};

static void
run_rank(void *ctx, int rank)
{
    clef_cpu_ranks  *r = ctx;

    clef_error_clear(&r->err[rank]);
    r->rc[rank] = r->fn(r->ctx, rank, &r->err[rank]);
}

clef_cpu_ranks *
clef_cpu_ranks_create(int size, clef_error *err)
{
    clef_cpu_ranks  *r;

    r = calloc(1, sizeof(*r));
    if (r != NULL) {
        r->rc = calloc((size_t) size, sizeof(*r->rc));
        r->err = calloc((size_t) size, sizeof(*r->err));
    }
    if (r == NULL || r->rc == NULL || r->err == NULL) {
        clef_cpu_ranks_destroy(r);
        clef_error_fail(err, CLEF_E_NO_MEMORY,
                        "out of memory for the rank threads");
        return NULL;
    }
    r->size = size;
    r->crew = clef_cpu_crew_create(size, "rank", err);
    if (r->crew == NULL) {
        clef_cpu_ranks_destroy(r);
        return NULL;
    }
    return r;
}

int
clef_cpu_ranks_run(clef_cpu_ranks *r, clef_cpu_rank_fn fn, void *ctx,
    clef_error *err)
{
    int  i;

    r->fn = fn;
    r->ctx = ctx;
    clef_cpu_crew_run(r->crew, run_rank, r);

    for (i = 0; i < r->size; i++) {
        if (r->rc[i] != 0) {
            *err = r->err[i];
            return -1;
        }
    }
    return 0;
}

void
clef_cpu_ranks_destroy(clef_cpu_ranks *r)
{
    if (r == NULL) {
        return;
    }
    clef_cpu_crew_destroy(r->crew);
    free(r->rc);
    free(r->err);
    free(r);
}
