#include "cpu/parallel/pool.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "cpu/parallel/crew.h"

#define CLEF_POOL_MAX_THREADS  256

/* The pool is a crew (crew.h) whose members take chunks of the loop. */
struct clef_cpu_pool {
    clef_cpu_crew    *crew;
    int               size;

    /* the loop being run */
    clef_cpu_task     fn;
    void             *ctx;
    int64_t           n;
    int64_t           chunk;
    atomic_llong      next;
};

int
clef_cpu_count(void)
{
    cpu_set_t  set;
    int        n;

    if (sched_getaffinity(0, sizeof(set), &set) == 0) {
        n = CPU_COUNT(&set);
        if (n > 0) {
            return n;
        }
    }
    n = (int) sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? n : 1;
}

/* Takes chunks until the range is exhausted: what every member of the
 * crew runs. */
static void
run_chunks(void *ctx, int worker)
{
    clef_cpu_pool  *p = ctx;
    int64_t         begin, end;

    for ( ;; ) {
        begin = atomic_fetch_add(&p->next, p->chunk);
        if (begin >= p->n) {
            return;
        }
        end = begin + p->chunk < p->n ? begin + p->chunk : p->n;
        p->fn(p->ctx, begin, end, worker);
    }
}

clef_cpu_pool *
clef_cpu_pool_create(int threads, clef_error *err)
{
    clef_cpu_pool  *p;

    if (threads < 0) {
        clef_error_fail(err, CLEF_E_INTERNAL,
                        "thread count must be >= 0, not %d", threads);
        return NULL;
    }
    if (threads == 0) {
        threads = clef_cpu_count();
    }
    if (threads > CLEF_POOL_MAX_THREADS) {
        threads = CLEF_POOL_MAX_THREADS;
    }

    p = calloc(1, sizeof(*p));
    if (p == NULL) {
        clef_error_fail(err, CLEF_E_NO_MEMORY, "thread pool: out of memory");
        return NULL;
    }
    p->size = threads;
    atomic_init(&p->next, 0);
    p->crew = clef_cpu_crew_create(threads, "worker", err);
    if (p->crew == NULL) {
        free(p);
        return NULL;
    }
    return p;
}

int
clef_cpu_pool_size(const clef_cpu_pool *p)
{
    return p->size;
}

void
clef_cpu_pool_for(clef_cpu_pool *p, int64_t n, int64_t grain, clef_cpu_task fn,
    void *ctx)
{
    int64_t  chunk;

    if (n <= 0) {
        return;
    }
    if (grain < 1) {
        grain = 1;
    }
    /* About four chunks per worker: enough to balance uneven items, few
     * enough that taking a chunk costs nothing. */
    chunk = (n + 4 * p->size - 1) / (4 * p->size);
    if (chunk < grain) {
        chunk = grain;
    }
    if (p->size == 1 || chunk >= n) {
        fn(ctx, 0, n, 0);
        return;
    }

    p->fn = fn;
    p->ctx = ctx;
    p->n = n;
    p->chunk = chunk;
    atomic_store(&p->next, 0);
    clef_cpu_crew_run(p->crew, run_chunks, p);
}

void
clef_cpu_pool_destroy(clef_cpu_pool *p)
{
    if (p == NULL) {
        return;
    }
    clef_cpu_crew_destroy(p->crew);
    free(p);
}
