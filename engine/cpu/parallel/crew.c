#include "cpu/parallel/crew.h"

#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    clef_cpu_crew  *crew;
    int             member;
} crew_member;

struct clef_cpu_crew {
    int                size;
    int                started;         /* pthreads running (members 1 ..) */
    pthread_t         *threads;
    crew_member       *members;

    pthread_mutex_t    lock;
    pthread_cond_t     wake;            /* a new run (or shutdown) */
    pthread_cond_t     done;            /* the last member left the run */
    uint64_t           generation;
    int                busy;            /* members still inside the run */
    int                stop;

    clef_cpu_crew_fn   fn;
    void              *ctx;
};

static void *
member_main(void *arg)
{
    crew_member    *m = arg;
    clef_cpu_crew  *c = m->crew;
    uint64_t        seen = 0;

    pthread_mutex_lock(&c->lock);
    for ( ;; ) {
        while (!c->stop && c->generation == seen) {
            pthread_cond_wait(&c->wake, &c->lock);
        }
        if (c->stop) {
            break;
        }
        seen = c->generation;
        pthread_mutex_unlock(&c->lock);

        c->fn(c->ctx, m->member);

        pthread_mutex_lock(&c->lock);
        if (--c->busy == 0) {
            pthread_cond_signal(&c->done);
        }
    }
    pthread_mutex_unlock(&c->lock);
    return NULL;
}

clef_cpu_crew *
clef_cpu_crew_create(int size, const char *what, clef_error *err)
{
    clef_cpu_crew  *c;
    sigset_t        all, old;
    int             i, rc = 0;

    c = calloc(1, sizeof(*c));
    if (c != NULL) {
        c->threads = calloc((size_t) size, sizeof(*c->threads));
        c->members = calloc((size_t) size, sizeof(*c->members));
    }
    if (c == NULL || c->threads == NULL || c->members == NULL) {
        if (c != NULL) {
            free(c->threads);
            free(c->members);
            free(c);
        }
        clef_error_fail(err, CLEF_E_NO_MEMORY,
                        "out of memory for %d %s threads", size, what);
        return NULL;
    }
    c->size = size;
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->wake, NULL);
    pthread_cond_init(&c->done, NULL);

    /* Threads inherit the creator's signal mask: block everything while
     * creating them, then restore the caller's mask. */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    for (i = 1; i < size; i++) {
        c->members[i].crew = c;
        c->members[i].member = i;
        rc = pthread_create(&c->threads[i], NULL, member_main, &c->members[i]);
        if (rc != 0) {
            break;
        }
        c->started++;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);

    if (c->started != size - 1) {
        clef_cpu_crew_destroy(c);
        clef_error_fail(err, CLEF_E_INTERNAL, "cannot start %d %s threads: %s",
                        size - 1, what, strerror(rc));
        return NULL;
    }
    return c;
}

int
clef_cpu_crew_size(const clef_cpu_crew *c)
{
    return c->size;
}

void
clef_cpu_crew_run(clef_cpu_crew *c, clef_cpu_crew_fn fn, void *ctx)
{
    pthread_mutex_lock(&c->lock);
    c->fn = fn;
    c->ctx = ctx;
    c->busy = c->started;
    c->generation++;
    pthread_cond_broadcast(&c->wake);
    pthread_mutex_unlock(&c->lock);

    fn(ctx, 0);

    pthread_mutex_lock(&c->lock);
    while (c->busy > 0) {
        pthread_cond_wait(&c->done, &c->lock);
    }
    pthread_mutex_unlock(&c->lock);
}

void
clef_cpu_crew_destroy(clef_cpu_crew *c)
{
    int  i;

    if (c == NULL) {
        return;
    }
    pthread_mutex_lock(&c->lock);
    c->stop = 1;
    pthread_cond_broadcast(&c->wake);
    pthread_mutex_unlock(&c->lock);
    for (i = 1; i <= c->started; i++) {
        pthread_join(c->threads[i], NULL);
    }
    pthread_mutex_destroy(&c->lock);
    pthread_cond_destroy(&c->wake);
    pthread_cond_destroy(&c->done);
    free(c->threads);
    free(c->members);
    free(c);
}
