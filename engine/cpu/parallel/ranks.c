#include "cpu/parallel/ranks.h"

#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    clef_cpu_ranks  *ranks;
    int              rank;
} rank_thread;

struct clef_cpu_ranks {
    int               size;
    int               started;         /* threads running (ranks 1 ..) */
    pthread_t        *threads;
    rank_thread      *args;

    pthread_mutex_t   lock;
    pthread_cond_t    wake;            /* a new run (or shutdown) */
    pthread_cond_t    done;            /* the last rank thread finished */
    uint64_t          generation;
    int               busy;            /* rank threads still running */
    int               stop;

    clef_cpu_rank_fn  fn;
    void             *ctx;
    int              *rc;              /* [size] */
    clef_error       *err;             /* [size] */
};

static void *
rank_main(void *p)
{
    rank_thread     *t = p;
    clef_cpu_ranks  *r = t->ranks;
    uint64_t         seen = 0;
    int              rc;

    pthread_mutex_lock(&r->lock);
    for ( ;; ) {
        while (r->generation == seen && !r->stop) {
            pthread_cond_wait(&r->wake, &r->lock);
        }
        if (r->stop) {
            break;
        }
        seen = r->generation;
        pthread_mutex_unlock(&r->lock);

        clef_error_clear(&r->err[t->rank]);
        rc = r->fn(r->ctx, t->rank, &r->err[t->rank]);

        pthread_mutex_lock(&r->lock);
        r->rc[t->rank] = rc;
        if (--r->busy == 0) {
            pthread_cond_signal(&r->done);
        }
    }
    pthread_mutex_unlock(&r->lock);
    return NULL;
}

clef_cpu_ranks *
clef_cpu_ranks_create(int size, clef_error *err)
{
    clef_cpu_ranks  *r;
    sigset_t         all, old;
    int              i, rc = 0;

    r = calloc(1, sizeof(*r));
    if (r == NULL) {
        goto nomem;
    }
    r->size = size;
    r->threads = calloc((size_t) size, sizeof(*r->threads));
    r->args = calloc((size_t) size, sizeof(*r->args));
    r->rc = calloc((size_t) size, sizeof(*r->rc));
    r->err = calloc((size_t) size, sizeof(*r->err));
    if (r->threads == NULL || r->args == NULL || r->rc == NULL || r->err == NULL) {
        free(r->threads);
        free(r->args);
        free(r->rc);
        free(r->err);
        free(r);
        goto nomem;
    }
    pthread_mutex_init(&r->lock, NULL);
    pthread_cond_init(&r->wake, NULL);
    pthread_cond_init(&r->done, NULL);

    /* threads inherit the creator's signal mask */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    for (i = 1; i < size; i++) {
        r->args[i].ranks = r;
        r->args[i].rank = i;
        rc = pthread_create(&r->threads[i], NULL, rank_main, &r->args[i]);
        if (rc != 0) {
            break;
        }
        r->started++;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (r->started != size - 1) {
        clef_cpu_ranks_destroy(r);
        clef_error_fail(err, CLEF_E_INTERNAL, "cannot start %d rank "
                        "threads: %s", size - 1, strerror(rc));
        return NULL;
    }
    return r;

nomem:
    clef_error_fail(err, CLEF_E_NO_MEMORY,
                    "out of memory for the rank threads");
    return NULL;
}

int
clef_cpu_ranks_run(clef_cpu_ranks *r, clef_cpu_rank_fn fn, void *ctx,
    clef_error *err)
{
    int  i;

    pthread_mutex_lock(&r->lock);
    r->fn = fn;
    r->ctx = ctx;
    r->busy = r->size - 1;
    r->generation++;
    pthread_cond_broadcast(&r->wake);
    pthread_mutex_unlock(&r->lock);

    clef_error_clear(&r->err[0]);
    r->rc[0] = fn(ctx, 0, &r->err[0]);

    pthread_mutex_lock(&r->lock);
    while (r->busy > 0) {
        pthread_cond_wait(&r->done, &r->lock);
    }
    pthread_mutex_unlock(&r->lock);

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
    int  i;

    if (r == NULL) {
        return;
    }
    pthread_mutex_lock(&r->lock);
    r->stop = 1;
    pthread_cond_broadcast(&r->wake);
    pthread_mutex_unlock(&r->lock);
    for (i = 1; i <= r->started; i++) {
        pthread_join(r->threads[i], NULL);
    }
    pthread_mutex_destroy(&r->lock);
    pthread_cond_destroy(&r->wake);
    pthread_cond_destroy(&r->done);
    free(r->threads);
    free(r->args);
    free(r->rc);
    free(r->err);
    free(r);
}
