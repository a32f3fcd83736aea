/*
 * The keeper (see keeper.h).
 */
#include "serve/keeper.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/pid.h"
#include "serve/engine_library.h"

#define KEEPER_MAX_WAKE      256
#define KEEPER_TICK_MS       1000
#define KEEPER_BACKOFF_MIN   100
#define KEEPER_BACKOFF_MAX   5000
#define KEEPER_FATAL_RETRY   5000
#define KEEPER_STABLE_NS     (10 * 1000000000LL)

#define elog  clef_engine_log

/* why keeper_wait() returned */
enum {
    KEEPER_EXITED = 0,      /* the engine exited: *status is set */
    KEEPER_DRAIN,           /* the control pipe closed, or a stop signal */
    KEEPER_TIMEOUT,         /* the deadline passed */
    KEEPER_STALLED          /* the watchdog fired */
};

typedef struct {
    clef_queue               *q;
    const clef_engine_conf   *conf;
    int                       control_fd;
    int                       sig_fd;
    int                       wake_fd;

    /* the watchdog: the progress count last seen and since when it has
     * not moved while the engine owed answers */
    uint64_t                  seen_progress;
    int64_t                   still_since_ns;
} keeper;


static pid_t
keeper_spawn(keeper *k, const clef_engine_conf *conf, int restart)
{
    const clef_engine_library_t  *lib;
    pid_t                         pid, parent = getpid();
    sigset_t                      none;
    char                          why[1024];

    pid = fork();
    if (pid != 0) {
        return pid;
    }

    /* the engine: dies with its keeper, takes signals normally */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) {
        _exit(CLEF_ENGINE_EXIT_OK);
    }
    prctl(PR_SET_NAME, "clef-engine");
    if (conf->set_title != NULL) {
        conf->set_title("clef engine");
    }
    close(k->control_fd);
    close(k->sig_fd);
    close(k->wake_fd);
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);

    /* the engine's libraries (the backends, BLAS, the media decoders) are
     * mapped here, in this process alone (engine_library.h) */
    lib = clef_engine_library_load(why, sizeof(why));
    if (lib == NULL) {
        elog(conf, CLEF_LOG_ERR, "clef engine: cannot load %s: %s",
             CLEF_ENGINE_LIBRARY, why);
        _exit(CLEF_ENGINE_EXIT_FATAL);
    }
    _exit(lib->run(k->q, conf, restart));
}


/* Resets the watchdog: time without progress counts from now. */
static void
keeper_watch_reset(keeper *k)
{
    k->seen_progress = atomic_load(&k->q->h->progress);
    k->still_since_ns = clef_now_ns();
    atomic_store(&k->q->h->stalled_ms, 0);
}


/* 1 when the engine has owed answers without any progress for longer than
 * the stall timeout.  Only an engine that serves (ready or draining) is
 * watched: loading a model takes as long as it takes. */
static int
keeper_watch(keeper *k, pid_t engine)
{
    clef_queue_hdr  *h = k->q->h;
    uint64_t         p = atomic_load(&h->progress);
    uint32_t         st = atomic_load(&h->state);
    int64_t          now = clef_now_ns(), still_ms, limit;

    if (p != k->seen_progress || atomic_load(&h->engine_pid) != engine
        || (st != CLEF_ENGINE_READY && st != CLEF_ENGINE_DRAINING)
        || clef_queue_engine_work(k->q) == 0)
    {
        k->seen_progress = p;
        k->still_since_ns = now;
        atomic_store(&h->stalled_ms, 0);
        return 0;
    }
    still_ms = (now - k->still_since_ns) / 1000000;
    /* published for clef_status; below a tick it is just a busy moment */
    atomic_store(&h->stalled_ms, still_ms >= KEEPER_TICK_MS ? still_ms : 0);
    limit = atomic_load(&h->watchdog_ms);
    return limit > 0 && still_ms >= limit;
}


/*
 * Waits until deadline_ns (CLOCK_MONOTONIC; INT64_MAX: no deadline) for
 * the engine to exit.  With `serving`, the end of the control pipe or a
 * stop signal ends the wait (KEEPER_DRAIN) and the watchdog runs; without
 * it (draining already) both are ignored, so the wait ends only with the
 * engine or the deadline: a closed pipe polls readable for ever and would
 * otherwise spin.  Every tick reaps orphaned records.
 */
static int
keeper_wait(keeper *k, pid_t engine, int *status, int64_t deadline_ns,
    int serving)
{
    struct pollfd            pfd[2];
    struct signalfd_siginfo  si;
    int64_t                  left;
    char                     buf[16];
    ssize_t                  n;
    int                      nfd;

    for ( ;; ) {
        if (engine > 0 && waitpid(engine, status, WNOHANG) == engine) {
            return KEEPER_EXITED;
        }
        left = deadline_ns == INT64_MAX
               ? KEEPER_TICK_MS : (deadline_ns - clef_now_ns()) / 1000000;
        if (left <= 0) {
            return KEEPER_TIMEOUT;
        }
        if (left > KEEPER_TICK_MS) {
            left = KEEPER_TICK_MS;
        }

        pfd[0].fd = k->sig_fd;
        pfd[0].events = POLLIN;
        pfd[0].revents = 0;
        pfd[1].fd = k->control_fd;
        pfd[1].events = POLLIN;
        pfd[1].revents = 0;
        nfd = serving ? 2 : 1;

        if (poll(pfd, nfd, (int) left) <= 0) {
            clef_queue_reap_orphans(k->q);
            if (serving && engine > 0 && keeper_watch(k, engine)) {
                return KEEPER_STALLED;
            }
            continue;
        }
        if (pfd[0].revents & POLLIN) {
            while (read(k->sig_fd, &si, sizeof(si)) == sizeof(si)) {
                if (si.ssi_signo != SIGCHLD && serving) {
                    return KEEPER_DRAIN;
                }
            }
        }
        if (serving && (pfd[1].revents & (POLLIN | POLLHUP | POLLERR))) {
            n = read(k->control_fd, buf, sizeof(buf));
            if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
                return KEEPER_DRAIN;
            }
        }
    }
}


static void
keeper_fail_all(keeper *k, const char *message)
{
    clef_wake_note  wake[KEEPER_MAX_WAKE];
    int             n = 0;

    /* beyond KEEPER_MAX_WAKE records the workers rescan (wake_lost) */
    clef_queue_fail_all(k->q, k->conf->gen, 503, "engine_unavailable",
                        message, wake, &n, KEEPER_MAX_WAKE);
    clef_wake_send(k->wake_fd, k->q->h->zone_id, wake, n,
                   &k->q->h->wake_lost);
}


/* SIGKILL and reap: a stopped process dies of it too. */
static void
keeper_kill(pid_t engine, int *status)
{
    kill(engine, SIGKILL);
    while (waitpid(engine, status, 0) == -1 && errno == EINTR) {
        /* retry */
    }
}


/* Stops the engine within drain_timeout_ms: SIGTERM, wait, SIGKILL.  A
 * second stop request changes nothing; the deadline is fixed once. */
static void
keeper_drain(keeper *k, pid_t engine)
{
    clef_queue_hdr  *h = k->q->h;
    int              status;
    int32_t          expect;
    uint32_t         st;
    int64_t          deadline;

    if (engine > 0) {
        kill(engine, SIGTERM);
        deadline = clef_now_ns() + k->conf->drain_timeout_ms * 1000000;
        if (keeper_wait(k, engine, &status, deadline, 0) == KEEPER_TIMEOUT) {
            elog(k->conf, CLEF_LOG_WARN, "clef keeper: engine %d did not "
                 "drain in %lld ms, killing it", (int) engine,
                 (long long) k->conf->drain_timeout_ms);
            keeper_kill(engine, &status);
        }
    }

    /* leave the queue alone when a newer engine has claimed it already */
    expect = engine;
    if (atomic_load(&h->gen) == k->conf->gen
        && (engine == 0 || !clef_pid_alive(atomic_load(&h->engine_pid))
            || atomic_compare_exchange_strong(&h->engine_pid, &expect, 0)))
    {
        st = atomic_load(&h->state);
        if (st != CLEF_ENGINE_FAILED) {
            atomic_store(&h->state, CLEF_ENGINE_STOPPED);
        }
        keeper_fail_all(k, "the inference engine stopped");
    }
    expect = getpid();
    atomic_compare_exchange_strong(&h->keeper_pid, &expect, 0);
}


/* The watchdog fired: say why, kill the engine; the caller restarts it. */
static void
keeper_stalled(keeper *k, pid_t engine, int *status)
{
    clef_queue_hdr  *h = k->q->h;

    elog(k->conf, CLEF_LOG_ERR, "clef keeper: engine %d made no progress "
         "for %lld ms with %u records waiting (progress count %llu); "
         "killing it", (int) engine,
         (long long) atomic_load(&h->stalled_ms), clef_queue_engine_work(k->q),
         (unsigned long long) atomic_load(&h->progress));
    clef_queue_set_message(k->q, "engine %d stalled; restarting", (int) engine);
    atomic_store(&h->state, CLEF_ENGINE_STALLED);
    atomic_fetch_add(&h->stats.engine_stalls, 1);
    keeper_kill(engine, status);
}


int
clef_keeper_run(clef_queue *q, const clef_engine_conf *conf, int control_fd)
{
    keeper            k;
    clef_engine_conf  ec = *conf;
    clef_queue_hdr   *h = q->h;
    struct sigaction  sa;
    sigset_t          set;
    pid_t             engine;
    int               status, rc, restart = 0, backoff = 0, signo;
    int64_t           started;

    /* whatever handlers the forking process had, the keeper has none */
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = SIG_DFL;
    sigemptyset(&sa.sa_mask);
    for (signo = 1; signo < NSIG; signo++) {
        if (signo != SIGKILL && signo != SIGSTOP) {
            (void) sigaction(signo, &sa, NULL);
        }
    }
    sa.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);

    memset(&k, 0, sizeof(k));
    k.q = q;
    k.conf = conf;
    k.control_fd = control_fd;

    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGQUIT);
    /* these arrive through the signalfd; every other signal is unblocked
     * (a master forks the keeper with most signals blocked) */
    sigprocmask(SIG_SETMASK, &set, NULL);
    k.sig_fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    k.wake_fd = clef_wake_sender();
    if (k.sig_fd == -1 || k.wake_fd == -1) {
        elog(conf, CLEF_LOG_ERR, "clef keeper: cannot set up: %s",
             strerror(errno));
        return 1;
    }
    prctl(PR_SET_NAME, "clef-keeper");
    atomic_store(&h->keeper_pid, getpid());

    for ( ;; ) {
        started = clef_now_ns();
        engine = keeper_spawn(&k, &ec, restart);
        ec.predecessor = 0;
        if (engine < 0) {
            elog(conf, CLEF_LOG_ERR, "clef keeper: fork failed: %s",
                 strerror(errno));
            engine = 0;
        } else {
            elog(conf, CLEF_LOG_INFO, "clef keeper %d: started engine %d",
                 (int) getpid(), (int) engine);
            keeper_watch_reset(&k);
            rc = keeper_wait(&k, engine, &status, INT64_MAX, 1);
            if (rc == KEEPER_DRAIN) {
                keeper_drain(&k, engine);
                return 0;
            }
            if (rc == KEEPER_STALLED) {
                keeper_stalled(&k, engine, &status);
            }

            if (WIFEXITED(status)
                && WEXITSTATUS(status) == CLEF_ENGINE_EXIT_FATAL)
            {
                backoff = KEEPER_FATAL_RETRY;
                elog(conf, CLEF_LOG_ERR, "clef keeper: engine %d could not "
                     "load the model; retrying in %d ms", (int) engine,
                     backoff);
            } else {
                if (WIFSIGNALED(status)) {
                    elog(conf, CLEF_LOG_ERR, "clef keeper: engine %d killed by "
                         "signal %d; restarting", (int) engine,
                         WTERMSIG(status));
                } else {
                    elog(conf, CLEF_LOG_ERR, "clef keeper: engine %d exited "
                         "with code %d; restarting", (int) engine,
                         WEXITSTATUS(status));
                }
                if (atomic_load(&h->gen) == conf->gen) {
                    atomic_store(&h->state, CLEF_ENGINE_RESTARTING);
                }
                atomic_fetch_add(&h->stats.engine_restarts, 1);
                keeper_fail_all(&k, "the inference engine restarted; retry");

                /* a crash loop backs off; a crash after a good run does not */
                if (clef_now_ns() - started < KEEPER_STABLE_NS) {
                    backoff = backoff ? backoff * 2 : KEEPER_BACKOFF_MIN;
                    if (backoff > KEEPER_BACKOFF_MAX) {
                        backoff = KEEPER_BACKOFF_MAX;
                    }
                } else {
                    backoff = KEEPER_BACKOFF_MIN;
                }
            }
            restart = 1;
        }

        if (keeper_wait(&k, 0, &status, clef_now_ns()
                        + (int64_t) (backoff ? backoff : KEEPER_BACKOFF_MIN)
                          * 1000000, 1)
            == KEEPER_DRAIN)
        {
            keeper_drain(&k, 0);
            return 0;
        }
    }
}
