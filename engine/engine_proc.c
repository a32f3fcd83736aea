/*
 * The keeper and the engine process (see engine_proc.h).
 */
#include "engine_proc.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend.h"
#include "encode.h"
#include "model.h"
#include "request.h"
#include "scheduler.h"

#define ENGINE_MAX_WAKE      256
#define ENGINE_IDLE_MS       1000
#define KEEPER_TICK_MS       1000
#define KEEPER_BACKOFF_MIN   100
#define KEEPER_BACKOFF_MAX   5000
#define KEEPER_FATAL_RETRY   5000
#define KEEPER_STABLE_NS     (10 * 1000000000LL)


static void __attribute__((format(printf, 3, 4)))
elog(const clef_engine_conf *conf, int level, const char *fmt, ...)
{
    char     buf[1024];
    va_list  ap;

    if (conf->log == NULL) {
        return;
    }
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    conf->log(level, buf);
}


static int
pid_alive(pid_t pid)
{
    return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM);
}


static double
seconds_since(int64_t t0)
{
    return (double) (clef_now_ns() - t0) / 1e9;
}


/* ---- the engine ------------------------------------------------------------ */

typedef struct {
    clef_request  req;
    clef_record   rec;
} engine_rec;

typedef struct {
    clef_queue               *q;
    const clef_engine_conf   *conf;
    clef_model               *model;
    const clef_tokenizer     *tk;
    const clef_backend_ops   *ops;
    clef_backend             *backend;
    clef_limits               limits;
    int                       wake_fd;
    clef_sched                sched;

    /* hand-over between the preparing thread and the executor */
    pthread_mutex_t           mu;
    pthread_cond_t            cv;
    clef_sched_batch          pending;     /* being prepared */
    clef_sched_batch          mailbox;     /* handed over, not yet taken */
    clef_sched_batch          running;     /* owned by the executor */
    int                       mailbox_full;
    int                       busy;
    int                       stop;
    pthread_t                 exec;
} engine;

static volatile sig_atomic_t  engine_drain;
static clef_queue            *engine_signal_q;


static void
engine_on_term(int signo)
{
    (void) signo;
    engine_drain = 1;
    if (engine_signal_q != NULL) {
        /* async-signal-safe: an atomic add and a futex syscall */
        atomic_fetch_add(&engine_signal_q->h->futex, 1);
        syscall(SYS_futex, &engine_signal_q->h->futex, FUTEX_WAKE, INT32_MAX,
                NULL, NULL, 0);
    }
}


static void
engine_wake(void *ctx, const pid_t *pids, int n)
{
    engine  *e = ctx;

    clef_wake_all(e->wake_fd, e->q->h->zone_id, pids, n);
}


static void
engine_answer_error(engine *e, uint32_t slot, const clef_error *err)
{
    clef_slot  *s = clef_queue_slot_w(e->q, slot);
    pid_t       pid;

    *clef_queue_error_w(e->q, slot) = *err;
    s->status = err->status >= 400 ? err->status : 500;
    pid = clef_queue_complete(e->q, slot);
    if (pid > 0) {
        engine_wake(e, &pid, 1);
    }
}


static int
engine_prepare(void *ctx, uint32_t slot, clef_sched_item *it)
{
    engine            *e = ctx;
    clef_slot         *s = clef_queue_slot_w(e->q, slot);
    clef_encode_opts   opts;
    clef_error         err;
    engine_rec        *er;

    clef_error_clear(&err);
    er = calloc(1, sizeof(*er));
    if (er == NULL) {
        clef_error_set(&err, 500, "internal_error", NULL, "out of memory");
        engine_answer_error(e, slot, &err);
        return -1;
    }
    if (clef_request_parse(&er->req, clef_queue_body(e->q, slot), s->body_len,
                           &e->limits, &err) != 0)
    {
        free(er);
        engine_answer_error(e, slot, &err);
        return -1;
    }

    clef_encode_opts_default(&opts);
    opts.max_length = s->max_length > 0 ? s->max_length : e->conf->max_length;
    opts.truncate = (clef_truncate) s->truncate;
    if (clef_encode(e->tk, &er->req, &opts, &er->rec, &err) != 0) {
        clef_record_free(&er->rec);
        clef_request_free(&er->req);
        free(er);
        atomic_fetch_add(&e->q->h->stats.encode_errors, 1);
        engine_answer_error(e, slot, &err);
        return -1;
    }
    if (er->rec.n_options != (int) s->n_options) {
        clef_error_set(&err, 500, "internal_error", NULL,
                       "encoder made %d options, the worker expects %u",
                       er->rec.n_options, s->n_options);
        clef_record_free(&er->rec);
        clef_request_free(&er->req);
        free(er);
        engine_answer_error(e, slot, &err);
        return -1;
    }
    it->tokens = (int64_t) er->rec.ids.n;
    it->prep = er;
    return 0;
}


static void
engine_drop(void *ctx, clef_sched_item *it)
{
    engine_rec  *er = it->prep;

    (void) ctx;
    if (er != NULL) {
        clef_record_free(&er->rec);
        clef_request_free(&er->req);
        free(er);
        it->prep = NULL;
    }
}


static void
engine_run_batch(engine *e, clef_sched_batch *b)
{
    const clef_record  **records = NULL;
    int32_t             *cu = NULL;
    float               *logits = NULL;
    clef_batch           batch;
    clef_error           err;
    pid_t                wake[ENGINE_MAX_WAKE];
    int                  i, j, n, n_wake = 0, off, rc, total;
    int64_t              t0, ns;
    clef_slot           *s;
    engine_rec          *er;
    pid_t                pid;

    n = clef_sched_prune(&e->sched, b, clef_now_ns());
    if (n == 0) {
        return;
    }

    clef_error_clear(&err);
    records = malloc((size_t) n * sizeof(*records));
    cu = malloc((size_t) (n + 1) * sizeof(*cu));
    if (records == NULL || cu == NULL) {
        clef_error_set(&err, 500, "internal_error", NULL, "out of memory");
        rc = -1;
        goto answer;
    }
    for (i = 0; i < n; i++) {
        er = b->items[i].prep;
        records[i] = &er->rec;
    }
    clef_batch_init(&batch, records, n, cu);
    total = clef_batch_options(&batch);
    logits = malloc((size_t) (total > 0 ? total : 1) * sizeof(float));
    if (logits == NULL) {
        clef_error_set(&err, 500, "internal_error", NULL, "out of memory");
        rc = -1;
        goto answer;
    }

    t0 = clef_now_ns();
    rc = e->ops->forward(e->backend, &batch, logits, &err);
    ns = clef_now_ns() - t0;
    if (rc != 0) {
        elog(e->conf, CLEF_LOG_ERR, "clef engine: forward of %d records "
             "failed: %s", n, err.message);
    } else {
        clef_stats_batch(e->q, (uint32_t) n,
                         (uint64_t) clef_batch_tokens(&batch), (uint64_t) ns);
    }

answer:
    off = 0;
    for (i = 0; i < n; i++) {
        uint32_t slot = b->items[i].slot;

        er = b->items[i].prep;
        s = clef_queue_slot_w(e->q, slot);
        if (rc == 0) {
            memcpy(clef_queue_logits_w(e->q, slot), logits + off,
                   (size_t) er->rec.n_options * sizeof(float));
            s->status = 0;
            s->n_tokens = (int32_t) er->rec.ids.n;
            s->state_tokens = (int32_t) er->rec.state_tokens;
            s->state_kept = (int32_t) er->rec.state_kept;
            s->batch_records = (uint32_t) n;
        } else {
            *clef_queue_error_w(e->q, slot) = err;
            s->status = err.status >= 400 ? err.status : 500;
        }
        off += er->rec.n_options;

        pid = clef_queue_complete(e->q, slot);
        for (j = 0; j < n_wake && wake[j] != pid; j++) { /* search */ }
        if (pid > 0 && j == n_wake && n_wake < ENGINE_MAX_WAKE) {
            wake[n_wake++] = pid;
        }
    }
    engine_wake(e, wake, n_wake);

    free(logits);
    free(cu);
    free(records);
}


static void *
engine_exec_main(void *arg)
{
    engine            *e = arg;
    clef_sched_batch   tmp;

    pthread_mutex_lock(&e->mu);
    for ( ;; ) {
        while (!e->mailbox_full && !e->stop) {
            pthread_cond_wait(&e->cv, &e->mu);
        }
        if (!e->mailbox_full) {
            break;
        }
        tmp = e->running;
        e->running = e->mailbox;
        e->mailbox = tmp;
        e->mailbox_full = 0;
        e->busy = 1;
        pthread_mutex_unlock(&e->mu);

        engine_run_batch(e, &e->running);
        clef_sched_batch_clear(&e->sched, &e->running);

        pthread_mutex_lock(&e->mu);
        e->busy = 0;
        /* the preparing thread may hold a batch ready for us */
        clef_queue_wake_engine(e->q);
    }
    pthread_mutex_unlock(&e->mu);
    return NULL;
}


static int
engine_load(engine *e, clef_error *err)
{
    const clef_engine_conf  *conf = e->conf;
    const clef_text_config  *tc;
    clef_backend_opts        bo;
    int64_t                  t0 = clef_now_ns();

    elog(conf, CLEF_LOG_NOTICE, "clef engine %d: loading model \"%s\" "
         "(backend %s, generation %u)", (int) getpid(), conf->model_path,
         conf->backend, conf->gen);
    clef_queue_set_message(e->q, "loading model %s", conf->model_path);

    e->model = clef_model_open(conf->model_path, 0, err);
    if (e->model == NULL) {
        return -1;
    }
    tc = clef_model_text_config(e->model);
    elog(conf, CLEF_LOG_NOTICE, "clef engine %d: model opened in %.2f s "
         "(%d layers, hidden %d, vocab %d); opening the %s backend",
         (int) getpid(), seconds_since(t0), tc->num_hidden_layers,
         tc->hidden_size, tc->vocab_size, conf->backend);
    clef_queue_set_message(e->q, "opening the %s backend", conf->backend);

    e->tk = clef_model_tokenizer(e->model);
    e->ops = clef_backend_find(conf->backend, err);
    if (e->ops == NULL) {
        return -1;
    }
    memset(&bo, 0, sizeof(bo));
    bo.threads = conf->threads;
    bo.device = conf->device;
    if (e->ops->open(e->model, &bo, &e->backend, err) != 0) {
        e->backend = NULL;
        return -1;
    }
    atomic_fetch_add(&e->q->h->stats.weight_loads, 1);
    elog(conf, CLEF_LOG_NOTICE, "clef engine %d: ready in %.2f s",
         (int) getpid(), seconds_since(t0));
    clef_queue_set_message(e->q, "ready: %s", conf->model_path);
    return 0;
}


static void
engine_unload(engine *e)
{
    if (e->backend != NULL) {
        e->ops->close(e->backend);
        e->backend = NULL;
    }
    if (e->model != NULL) {
        clef_model_close(e->model);
        e->model = NULL;
    }
}


static void
engine_wait_predecessor(engine *e)
{
    clef_queue_hdr  *h = e->q->h;
    pid_t            pred = e->conf->predecessor;
    pid_t            cur;
    int64_t          t0 = clef_now_ns();
    int              logged = 0;

    for ( ;; ) {
        cur = atomic_load(&h->engine_pid);
        if (!(pid_alive(pred) && pred != getpid())
            && !(cur != getpid() && pid_alive(cur)
                 && atomic_load(&h->gen) < e->conf->gen))
        {
            break;
        }
        if (!logged) {
            elog(e->conf, CLEF_LOG_NOTICE, "clef engine %d: waiting for engine "
                 "%d of the previous configuration to drain", (int) getpid(),
                 (int) (pid_alive(pred) ? pred : cur));
            logged = 1;
        }
        if (engine_drain) {
            return;
        }
        usleep(20000);
    }
    if (logged) {
        elog(e->conf, CLEF_LOG_NOTICE, "clef engine %d: previous engine gone "
             "after %.2f s", (int) getpid(), seconds_since(t0));
    }
}


static void
engine_claim(engine *e, int restart)
{
    clef_queue_hdr  *h = e->q->h;

    atomic_store(&h->engine_pid, getpid());
    atomic_store(&h->gen, e->conf->gen);
    atomic_fetch_add(&h->epoch, 1);
    atomic_store(&h->state, restart ? CLEF_ENGINE_RESTARTING
                                    : CLEF_ENGINE_LOADING);
    atomic_fetch_add(&h->stats.engine_starts, 1);
}


static int
engine_owner(engine *e)
{
    return atomic_load(&e->q->h->engine_pid) == getpid();
}


static void
engine_loop(engine *e)
{
    clef_sched_batch  tmp;
    uint32_t          seen;
    int               added, other_gen, progressed, idle, draining = 0;

    for ( ;; ) {
        seen = clef_queue_futex(e->q);

        if (engine_drain && !draining) {
            draining = 1;
            if (engine_owner(e)) {
                atomic_store(&e->q->h->state, CLEF_ENGINE_DRAINING);
            }
            elog(e->conf, CLEF_LOG_NOTICE, "clef engine %d: draining",
                 (int) getpid());
        }

        /* clef_engine max_batch_tokens applies without a restart */
        if (atomic_load(&e->q->h->max_batch_tokens) > 0) {
            e->sched.max_batch_tokens = atomic_load(&e->q->h->max_batch_tokens);
        }
        progressed = 0;
        other_gen = 0;
        added = 0;
        if (!clef_sched_full(&e->sched, &e->pending)) {
            added = clef_sched_fill(&e->sched, &e->pending, &other_gen);
            progressed = added > 0;
        }

        pthread_mutex_lock(&e->mu);
        if (e->pending.n > 0 && !e->busy && !e->mailbox_full) {
            tmp = e->mailbox;
            e->mailbox = e->pending;
            e->pending = tmp;
            e->mailbox_full = 1;
            pthread_cond_signal(&e->cv);
            progressed = 1;
        }
        idle = !e->busy && !e->mailbox_full;
        pthread_mutex_unlock(&e->mu);

        if (draining && idle && !progressed && e->pending.n == 0
            && !clef_sched_has_carry(&e->sched))
        {
            break;
        }
        if (!progressed) {
            clef_queue_engine_wait(e->q, seen, ENGINE_IDLE_MS);
        }
    }
}


int
clef_engine_run(clef_queue *q, const clef_engine_conf *conf, int restart)
{
    engine            e;
    clef_error        err;
    struct sigaction  sa;
    sigset_t          all, old;
    int               rc = CLEF_ENGINE_EXIT_OK, n;
    pid_t             wake[ENGINE_MAX_WAKE];

    memset(&e, 0, sizeof(e));
    e.q = q;
    e.conf = conf;
    e.wake_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

    /* the worker validated the request against its location's limits;
     * the engine parses again only to encode, so it refuses nothing new */
    clef_limits_default(&e.limits);
    e.limits.max_questions = INT_MAX;
    e.limits.max_choices = INT_MAX;
    e.limits.max_score_levels = INT_MAX;
    e.limits.max_images = INT_MAX;
    e.limits.max_id_len = INT_MAX;

    engine_signal_q = q;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = engine_on_term;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGQUIT, &sa, NULL);
    sa.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);

    engine_wait_predecessor(&e);
    if (engine_drain) {
        close(e.wake_fd);
        return CLEF_ENGINE_EXIT_OK;
    }
    engine_claim(&e, restart);

    clef_error_clear(&err);
    if (engine_load(&e, &err) != 0) {
        elog(conf, CLEF_LOG_ERR, "clef engine %d: cannot load \"%s\": %s",
             (int) getpid(), conf->model_path, err.message);
        clef_queue_set_message(q, "cannot load the model: %s", err.message);
        atomic_store(&q->h->state, CLEF_ENGINE_FAILED);
        n = 0;
        clef_queue_fail_all(q, conf->gen, 503, "engine_unavailable",
                            "the model could not be loaded", wake, &n,
                            ENGINE_MAX_WAKE);
        engine_wake(&e, wake, n);
        engine_unload(&e);
        close(e.wake_fd);
        return CLEF_ENGINE_EXIT_FATAL;
    }

    e.sched.q = q;
    e.sched.gen = conf->gen;
    e.sched.max_batch_tokens = conf->max_batch_tokens;
    e.sched.max_records = conf->max_batch_records;
    e.sched.prepare = engine_prepare;
    e.sched.drop = engine_drop;
    e.sched.wake = engine_wake;
    e.sched.ctx = &e;

    if (clef_sched_batch_init(&e.pending, conf->max_batch_records) != 0
        || clef_sched_batch_init(&e.mailbox, conf->max_batch_records) != 0
        || clef_sched_batch_init(&e.running, conf->max_batch_records) != 0)
    {
        elog(conf, CLEF_LOG_ERR, "clef engine: out of memory");
        rc = CLEF_ENGINE_EXIT_FATAL;
        goto done;
    }
    pthread_mutex_init(&e.mu, NULL);
    pthread_cond_init(&e.cv, NULL);

    /* the executor must never take a signal meant for the main thread */
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    n = pthread_create(&e.exec, NULL, engine_exec_main, &e);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (n != 0) {
        elog(conf, CLEF_LOG_ERR, "clef engine: pthread_create failed");
        rc = CLEF_ENGINE_EXIT_FATAL;
        goto done;
    }

    if (engine_owner(&e)) {
        atomic_store(&q->h->state, CLEF_ENGINE_READY);
    }
    clef_queue_wake_engine(q);

    engine_loop(&e);

    pthread_mutex_lock(&e.mu);
    e.stop = 1;
    pthread_cond_signal(&e.cv);
    pthread_mutex_unlock(&e.mu);
    pthread_join(e.exec, NULL);
    elog(conf, CLEF_LOG_NOTICE, "clef engine %d: drained, exiting",
         (int) getpid());

done:
    clef_sched_drop_carry(&e.sched, 503, "the inference engine stopped");
    clef_sched_batch_clear(&e.sched, &e.pending);
    clef_sched_batch_free(&e.pending);
    clef_sched_batch_free(&e.mailbox);
    clef_sched_batch_free(&e.running);
    engine_unload(&e);
    close(e.wake_fd);
    return rc;
}


/* ---- the keeper --------------------------------------------------------------- */

enum {
    KEEPER_EXITED = 0,
    KEEPER_DRAIN,
    KEEPER_TIMEOUT
};

typedef struct {
    clef_queue               *q;
    const clef_engine_conf   *conf;
    int                       control_fd;
    int                       sig_fd;
    int                       wake_fd;
} keeper;


static pid_t
keeper_spawn(keeper *k, const clef_engine_conf *conf, int restart)
{
    pid_t     pid, parent = getpid();
    sigset_t  none;

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
    _exit(clef_engine_run(k->q, conf, restart));
}


/* Waits up to timeout_ms for the engine to exit or the control pipe to
 * close; reaps orphaned records on every tick. */
static int
keeper_wait(keeper *k, pid_t engine, int *status, int timeout_ms)
{
    struct pollfd            pfd[2];
    struct signalfd_siginfo  si;
    int64_t                  end = clef_now_ns() + (int64_t) timeout_ms * 1000000;
    int64_t                  left;
    char                     buf[16];
    ssize_t                  n;

    for ( ;; ) {
        if (engine > 0 && waitpid(engine, status, WNOHANG) == engine) {
            return KEEPER_EXITED;
        }
        left = (end - clef_now_ns()) / 1000000;
        if (left <= 0) {
            return KEEPER_TIMEOUT;
        }
        pfd[0].fd = k->control_fd;
        pfd[0].events = POLLIN;
        pfd[0].revents = 0;
        pfd[1].fd = k->sig_fd;
        pfd[1].events = POLLIN;
        pfd[1].revents = 0;
        if (poll(pfd, 2, left < KEEPER_TICK_MS ? (int) left : KEEPER_TICK_MS)
            == 0)
        {
            clef_queue_reap_orphans(k->q);
            continue;
        }
        if (pfd[1].revents & POLLIN) {
            while (read(k->sig_fd, &si, sizeof(si)) == sizeof(si)) {
                if (si.ssi_signo != SIGCHLD) {
                    return KEEPER_DRAIN;
                }
            }
        }
        if (pfd[0].revents & (POLLIN | POLLHUP | POLLERR)) {
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
    pid_t  wake[ENGINE_MAX_WAKE];
    int    n = 0;

    clef_queue_fail_all(k->q, k->conf->gen, 503, "engine_unavailable",
                        message, wake, &n, ENGINE_MAX_WAKE);
    clef_wake_all(k->wake_fd, k->q->h->zone_id, wake, n);
}


static void
keeper_drain(keeper *k, pid_t engine)
{
    clef_queue_hdr  *h = k->q->h;
    int              status, rc;
    int32_t          expect;
    uint32_t         st;

    if (engine > 0) {
        kill(engine, SIGTERM);
        rc = keeper_wait(k, engine, &status, (int) k->conf->drain_timeout_ms);
        while (rc == KEEPER_DRAIN) {
            /* a second request to stop changes nothing: keep waiting */
            rc = keeper_wait(k, engine, &status,
                             (int) k->conf->drain_timeout_ms);
        }
        if (rc == KEEPER_TIMEOUT) {
            elog(k->conf, CLEF_LOG_WARN, "clef keeper: engine %d did not "
                 "drain in %lld ms, killing it", (int) engine,
                 (long long) k->conf->drain_timeout_ms);
            kill(engine, SIGKILL);
            waitpid(engine, &status, 0);
        }
    }

    /* leave the queue alone when a newer engine has claimed it already */
    expect = engine;
    if (atomic_load(&h->gen) == k->conf->gen
        && (engine == 0 || !pid_alive(atomic_load(&h->engine_pid))
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
    k.wake_fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
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
            rc = keeper_wait(&k, engine, &status, INT_MAX);
            if (rc == KEEPER_DRAIN) {
                keeper_drain(&k, engine);
                return 0;
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

        if (keeper_wait(&k, 0, &status, backoff ? backoff : KEEPER_BACKOFF_MIN)
            == KEEPER_DRAIN)
        {
            keeper_drain(&k, 0);
            return 0;
        }
    }
}
