#include "cpu/parallel/pool.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CLEF_POOL_MAX_THREADS  256

typedef struct {
    clef_cpu_pool  *pool;
    int             index;
} pool_worker;

struct clef_cpu_pool {
    int               size;
    int               started;         /* pthreads actually running */
    pthread_t        *threads;
    pool_worker      *workers;

    pthread_mutex_t   lock;
    pthread_cond_t    wake;            /* a new loop (or shutdown) */
    pthread_cond_t    done;            /* the last worker left the loop */
    uint64_t          generation;
    int               busy;            /* workers still inside the loop */
    int               stop;

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

/* Takes chunks until the range is exhausted. */
static void
run_chunks(clef_cpu_pool *p, int worker)
{
    int64_t  begin, end;

    for ( ;; ) {
        begin = atomic_fetch_add(&p->next, p->chunk);
        if (begin >= p->n) {
            return;
        }
        end = begin + p->chunk < p->n ? begin + p->chunk : p->n;
        p->fn(p->ctx, begin, end, worker);
    }
}

static void *
worker_main(void *arg)
{
    pool_worker    *w = arg;
    clef_cpu_pool  *p = w->pool;
    uint64_t        seen = 0;

    pthread_mutex_lock(&p->lock);
    for ( ;; ) {
        while (!p->stop && p->generation == seen) {
            pthread_cond_wait(&p->wake, &p->lock);
        }
        if (p->stop) {
            break;
        }
        seen = p->generation;
        pthread_mutex_unlock(&p->lock);

        run_chunks(p, w->index);

        pthread_mutex_lock(&p->lock);
        if (--p->busy == 0) {
            pthread_cond_signal(&p->done);
        }
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

clef_cpu_pool *
clef_cpu_pool_create(int threads, clef_error *err)
{
    clef_cpu_pool  *p;
    sigset_t        all, old;
    int             i, rc = 0;

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
    p->threads = calloc((size_t) threads, sizeof(*p->threads));
    p->workers = calloc((size_t) threads, sizeof(*p->workers));
    if (p->threads == NULL || p->workers == NULL) {
        free(p->threads);
        free(p->workers);
        free(p);
        clef_error_fail(err, CLEF_E_NO_MEMORY, "thread pool: out of memory");
        return NULL;
    }
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done, NULL);
    atomic_init(&p->next, 0);

    /* Threads inherit the creator's signal mask: block everything while
     * creating them, then restore the caller's mask. */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    for (i = 1; i < threads; i++) {
        p->workers[i].pool = p;
        p->workers[i].index = i;
        rc = pthread_create(&p->threads[i], NULL, worker_main, &p->workers[i]);
        if (rc != 0) {
            break;
        }
        p->started++;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);

    if (p->started != threads - 1) {
        clef_cpu_pool_destroy(p);
        clef_error_fail(err, CLEF_E_INTERNAL,
                        "cannot start %d worker threads: %s", threads - 1,
                        strerror(rc));
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

    pthread_mutex_lock(&p->lock);
    p->fn = fn;
    p->ctx = ctx;
    p->n = n;
    p->chunk = chunk;
    atomic_store(&p->next, 0);
    p->busy = p->started;
    p->generation++;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);

    run_chunks(p, 0);

    pthread_mutex_lock(&p->lock);
    while (p->busy > 0) {
        pthread_cond_wait(&p->done, &p->lock);
    }
    pthread_mutex_unlock(&p->lock);
}

void
clef_cpu_pool_destroy(clef_cpu_pool *p)
{
    int  i;

    if (p == NULL) {
        return;
    }
    pthread_mutex_lock(&p->lock);
    p->stop = 1;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
    for (i = 1; i <= p->started; i++) {
        pthread_join(p->threads[i], NULL);
    }
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->wake);
    pthread_cond_destroy(&p->done);
    free(p->threads);
    free(p->workers);
    free(p);
}
