/*
 * The engine's media-preparing threads (see media_workers.h).
 */
#include "serve/media_workers.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "base/clock.h"

#define MAX_WORKERS     64
#define IDLE_MS         1000     /* an idle worker's longest sleep */
#define BACKLOG_MS      50       /* a backlogged one's */

typedef struct {
    clef_media_workers  *w;
    clef_decoder_lane   *lane;
    pthread_t            thread;
    int                  started;
} worker;

struct clef_media_workers {
    clef_media_workers_conf  conf;
    int                      efd;        /* a count of records handed
                                            over (EFD_SEMAPHORE) */
    pthread_mutex_t          mu;
    uint32_t                *ring;       /* handed-over slots, FIFO */
    int                      head, n, cap;
    int                      busy;       /* being prepared */
    int                      stop;
    int                      n_workers;
    worker                   workers[MAX_WORKERS];
};


int
clef_media_workers_default(int ncpu)
{
    int  n = ncpu / 2;

    return n < 2 ? 2 : n > 8 ? 8 : n;
}


/* The oldest record handed over, if the count said one is there. */
static int
take(clef_media_workers *w, uint32_t *slot)
{
    uint64_t  one;
    int       got = 0;

    if (read(w->efd, &one, sizeof(one)) != (ssize_t) sizeof(one)) {
        return 0;
    }
    pthread_mutex_lock(&w->mu);
    if (w->n > 0) {
        *slot = w->ring[w->head];
        w->head = (w->head + 1) % w->cap;
        w->n--;
        w->busy++;
        got = 1;
    }
    pthread_mutex_unlock(&w->mu);
    return got;
}


static void
prepare_one(worker *k, uint32_t slot)
{
    clef_media_workers  *w = k->w;
    clef_sched_item      it;

    memset(&it, 0, sizeof(it));
    it.slot = slot;
    if (w->conf.prepare(w->conf.ctx, slot, k->lane, &it) == 0) {
        w->conf.ready(w->conf.ctx, &it);
    }
    pthread_mutex_lock(&w->mu);
    w->busy--;
    pthread_mutex_unlock(&w->mu);
}


/* How long an idle worker may sleep: until its lane's restart is due. */
static int
sleep_ms(clef_decoder_lane *lane, int backlogged)
{
    double  at = clef_decoder_lane_wake_at(lane), left;
    int     ms = backlogged ? BACKLOG_MS : IDLE_MS;

    if (at > 0) {
        left = (at - clef_clock_seconds()) * 1000;
        if (left < ms) {
            ms = left > 0 ? (int) left + 1 : 0;
        }
    }
    return ms;
}


static void *
worker_main(void *arg)
{
    worker              *k = arg;
    clef_media_workers  *w = k->w;
    struct pollfd        p[3];
    uint32_t             slot;
    int                  n, backlogged, stop;

    for ( ;; ) {
        pthread_mutex_lock(&w->mu);
        stop = w->stop;
        pthread_mutex_unlock(&w->mu);
        if (stop) {
            break;
        }
        backlogged = w->conf.backlogged != NULL
                     && w->conf.backlogged(w->conf.ctx);
        n = 0;
        if (!backlogged) {
            p[n].fd = w->efd;
            p[n].events = POLLIN;
            p[n++].revents = 0;
        }
        n += clef_decoder_lane_pollfds(k->lane, p + n);
        if (poll(p, (nfds_t) n, sleep_ms(k->lane, backlogged)) < 0
            && errno != EINTR)
        {
            usleep(BACKLOG_MS * 1000);
        }
        /* its decode process, dead or talking, and a restart due */
        clef_decoder_lane_tend(k->lane);
        if (!backlogged && p[0].revents != 0 && take(w, &slot)) {
            prepare_one(k, slot);
        }
    }
    return NULL;
}


clef_media_workers *
clef_media_workers_start(int n, const clef_media_workers_conf *conf,
    clef_error *err)
{
    clef_media_workers  *w;
    sigset_t             all, old;
    int                  i;

    if (n < 1 || n > MAX_WORKERS) {
        clef_error_fail(err, CLEF_E_INTERNAL, "decoders=%d: 1 to %d", n,
                        MAX_WORKERS);
        return NULL;
    }
    w = calloc(1, sizeof(*w));
    if (w == NULL) {
        clef_error_fail(err, CLEF_E_NO_MEMORY, "out of memory");
        return NULL;
    }
    w->conf = *conf;
    w->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK | EFD_SEMAPHORE);
    pthread_mutex_init(&w->mu, NULL);
    if (w->efd < 0) {
        clef_error_fail(err, CLEF_E_INTERNAL, "eventfd: %s", strerror(errno));
        clef_media_workers_stop(w);
        return NULL;
    }
    /* the workers must never take a signal meant for the main thread */
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    for (i = 0; i < n; i++) {
        w->workers[i].w = w;
        w->workers[i].lane = clef_decoder_lane_new(i, &w->conf.events);
        w->n_workers = i + 1;
        if (w->workers[i].lane == NULL
            || pthread_create(&w->workers[i].thread, NULL, worker_main,
                              &w->workers[i]) != 0)
        {
            break;
        }
        w->workers[i].started = 1;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (i < n) {
        clef_error_fail(err, CLEF_E_INTERNAL, "cannot start media worker "
                        "%d", i);
        clef_media_workers_stop(w);
        return NULL;
    }
    return w;
}


int
clef_media_workers_push(clef_media_workers *w, uint32_t slot)
{
    uint32_t  *ring;
    uint64_t   one = 1;
    int        i, cap;

    pthread_mutex_lock(&w->mu);
    if (w->n == w->cap) {
        cap = w->cap > 0 ? 2 * w->cap : 64;
        ring = malloc(sizeof(*ring) * (size_t) cap);
        if (ring == NULL) {
            pthread_mutex_unlock(&w->mu);
            return -1;
        }
        for (i = 0; i < w->n; i++) {
            ring[i] = w->ring[(w->head + i) % w->cap];
        }
        free(w->ring);
        w->ring = ring;
        w->head = 0;
        w->cap = cap;
    }
    w->ring[(w->head + w->n) % w->cap] = slot;
    w->n++;
    pthread_mutex_unlock(&w->mu);
    return write(w->efd, &one, sizeof(one)) == (ssize_t) sizeof(one)
           ? 0 : -1;
}


int
clef_media_workers_pending(clef_media_workers *w)
{
    int  n;

    if (w == NULL) {
        return 0;
    }
    pthread_mutex_lock(&w->mu);
    n = w->n + w->busy;
    pthread_mutex_unlock(&w->mu);
    return n;
}


void
clef_media_workers_stop(clef_media_workers *w)
{
    uint64_t  many;
    int       i;

    if (w == NULL) {
        return;
    }
    pthread_mutex_lock(&w->mu);
    w->stop = 1;
    pthread_mutex_unlock(&w->mu);
    if (w->efd >= 0) {
        /* wakes every worker; the ring is empty, so none takes anything */
        many = (uint64_t) w->n_workers + 1;
        if (write(w->efd, &many, sizeof(many)) < 0) {
            /* they wake within IDLE_MS all the same */
        }
    }
    for (i = 0; i < w->n_workers; i++) {
        if (w->workers[i].started) {
            pthread_join(w->workers[i].thread, NULL);
        }
        clef_decoder_lane_free(w->workers[i].lane);
    }
    if (w->efd >= 0) {
        close(w->efd);
    }
    pthread_mutex_destroy(&w->mu);
    free(w->ring);
    free(w);
}
