/*
 * Master side of the engine (docs/architecture.md §1): init_module forks a keeper
 * (engine/serve/keeper.c), which forks the engine (engine/serve/engine.c).
 * The master holds one end of the keeper's control socket; the end of its
 * writing is the keeper's life line:
 *   - a reload with the same zone and the same model configuration adopts
 *     the running keeper: the new cycle takes the socket over, the engine
 *     and its loaded weights stay;
 *   - any other reload starts a new keeper, whose engine waits for the old
 *     one to drain; the old cycle's pool cleanup shuts the old socket down,
 *     and the old keeper drains its engine and exits;
 *   - nginx stop and quit shut the socket down too, and the master waits
 *     (exit_master) until every keeper it started has drained its engine
 *     and exited, or its drain deadline has passed: the end of the socket
 *     the keeper holds says so.  A supervisor that takes nginx's exit for
 *     "stopped" stops nothing half-way, and the engine's last lines are in
 *     the error log before the master is gone;
 *   - the master's death closes the socket: the keeper drains on its own.
 * Workers and every other process forked by the master close their copy
 * of the socket (init_process), so only the master keeps a keeper alive.
 * The keeper's and the engine's log: ngx_http_clef_keeper_log.c.
 */
#include "ngx_http_clef_module.h"

#include <dirent.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/socket.h>

#define NGX_HTTP_CLEF_MAX_DRAINING  16

typedef struct {
    int            control_fd;    /* the master's end; -1 once closed */
    ngx_pid_t      keeper_pid;
    uint32_t       gen;
    clef_queue     queue;         /* the zone the keeper serves */
    ngx_str_t      fingerprint;   /* malloc'd */
    ngx_cycle_t   *cycle;         /* the cycle that owns the socket now */
    ngx_msec_t     drain_ms;      /* the keeper's drain deadline */
    ngx_http_clef_log_page_t  *log_page;   /* its error log's path */
} ngx_http_clef_keeper_t;

/* the master's current keeper: process state, not cycle state, because a
 * reload may hand it from one cycle to the next */
static ngx_http_clef_keeper_t  *ngx_http_clef_keeper;

/* keepers let go by a reload, draining: their sockets, shut down, read
 * end of file once they have exited */
static int         ngx_http_clef_draining[NGX_HTTP_CLEF_MAX_DRAINING];
static ngx_msec_t  ngx_http_clef_draining_ms;
static ngx_uint_t  ngx_http_clef_ndraining;


/* Forgets the draining keepers that have exited. */
static void
ngx_http_clef_draining_prune(void)
{
    struct pollfd  pfd;
    ngx_uint_t     i;
    char           buf[16];

    for (i = 0; i < ngx_http_clef_ndraining; /* void */ ) {
        pfd.fd = ngx_http_clef_draining[i];
        pfd.events = POLLIN;
        pfd.revents = 0;
        if (poll(&pfd, 1, 0) == 1 && read(pfd.fd, buf, sizeof(buf)) <= 0) {
            (void) close(pfd.fd);
            ngx_http_clef_draining[i] =
                ngx_http_clef_draining[--ngx_http_clef_ndraining];
            continue;
        }
        i++;
    }
}


/* Lets the keeper go: it reads end of file and drains; its exit is
 * watched (ngx_http_clef_engine_stop). */
static void
ngx_http_clef_keeper_release(ngx_http_clef_keeper_t *k)
{
    if (k->control_fd != -1) {
        (void) shutdown(k->control_fd, SHUT_WR);
        ngx_http_clef_draining_prune();
        if (ngx_process != NGX_PROCESS_WORKER
            && ngx_http_clef_ndraining < NGX_HTTP_CLEF_MAX_DRAINING)
        {
            ngx_http_clef_draining[ngx_http_clef_ndraining++] = k->control_fd;
            ngx_http_clef_draining_ms = ngx_max(ngx_http_clef_draining_ms,
                                                k->drain_ms);
        } else {
            (void) close(k->control_fd);
        }
        k->control_fd = -1;
    }
}


static void
ngx_http_clef_keeper_free(ngx_http_clef_keeper_t *k)
{
    ngx_http_clef_keeper_release(k);
    if (ngx_http_clef_keeper == k) {
        ngx_http_clef_keeper = NULL;
    }
    ngx_http_clef_log_page_free(k->log_page);
    free(k->fingerprint.data);
    free(k);
}


/* One per cycle that owned a keeper. */
typedef struct {
    ngx_http_clef_keeper_t  *keeper;
    ngx_cycle_t             *cycle;
} ngx_http_clef_keeper_ref_t;


/* Runs when a cycle's pool goes: a keeper that no later cycle adopted
 * loses its pipe, drains its engine and exits. */
static void
ngx_http_clef_keeper_cleanup(void *data)
{
    ngx_http_clef_keeper_ref_t  *ref = data;

    if (ref->keeper->cycle == ref->cycle) {
        ngx_http_clef_keeper_free(ref->keeper);
    }
}


static ngx_int_t
ngx_http_clef_keeper_own(ngx_cycle_t *cycle, ngx_http_clef_keeper_t *k)
{
    ngx_pool_cleanup_t          *cln;
    ngx_http_clef_keeper_ref_t  *ref;

    cln = ngx_pool_cleanup_add(cycle->pool, sizeof(ngx_http_clef_keeper_ref_t));
    if (cln == NULL) {
        return NGX_ERROR;
    }
    ref = cln->data;
    ref->keeper = k;
    ref->cycle = cycle;
    k->cycle = cycle;
    cln->handler = ngx_http_clef_keeper_cleanup;
    return NGX_OK;
}


void
ngx_http_clef_engine_forget(void)
{
    ngx_uint_t  i;

    /* in a worker: drop the copies of the sockets, keep nothing else (a
     * close, not a shutdown: the socket stays the master's) */
    if (ngx_http_clef_keeper != NULL && ngx_http_clef_keeper->control_fd != -1)
    {
        (void) close(ngx_http_clef_keeper->control_fd);
        ngx_http_clef_keeper->control_fd = -1;
    }
    for (i = 0; i < ngx_http_clef_ndraining; i++) {
        (void) close(ngx_http_clef_draining[i]);
    }
    ngx_http_clef_ndraining = 0;
}


void
ngx_http_clef_engine_stop(ngx_cycle_t *cycle)
{
    struct pollfd  pfd[NGX_HTTP_CLEF_MAX_DRAINING];
    ngx_msec_t     wait_ms;
    ngx_uint_t     i;
    ngx_msec_t     start;
    ngx_int_t      left;
    char           buf[16];

    /* the current keeper drains too (its cycle's pool frees it later) */
    if (ngx_http_clef_keeper != NULL) {
        ngx_http_clef_keeper_release(ngx_http_clef_keeper);
    }
    if (ngx_http_clef_ndraining == 0) {
        return;
    }

    /* each keeper kills its engine at its deadline: past it (and a margin
     * for the kill), something else is wrong, and nginx goes anyway */
    wait_ms = ngx_http_clef_draining_ms + 5000;
    ngx_log_error(NGX_LOG_NOTICE, cycle->log, 0,
                  "clef: waiting for %ui engine%s to drain (at most %M ms)",
                  ngx_http_clef_ndraining,
                  ngx_http_clef_ndraining > 1 ? "s" : "", wait_ms);

    ngx_time_update();
    start = ngx_current_msec;
    while (ngx_http_clef_ndraining > 0) {
        left = (ngx_int_t) wait_ms - (ngx_int_t) (ngx_current_msec - start);
        if (left <= 0) {
            ngx_log_error(NGX_LOG_ALERT, cycle->log, 0,
                          "clef: %ui keeper%s did not exit in %M ms; "
                          "exiting without them", ngx_http_clef_ndraining,
                          ngx_http_clef_ndraining > 1 ? "s" : "", wait_ms);
            break;
        }
        for (i = 0; i < ngx_http_clef_ndraining; i++) {
            pfd[i].fd = ngx_http_clef_draining[i];
            pfd[i].events = POLLIN;
            pfd[i].revents = 0;
        }
        if (poll(pfd, ngx_http_clef_ndraining, (int) left) == -1
            && ngx_errno != NGX_EINTR)
        {
            break;
        }
        for (i = ngx_http_clef_ndraining; i-- > 0; /* void */ ) {
            if (pfd[i].revents && read(pfd[i].fd, buf, sizeof(buf)) <= 0) {
                (void) close(pfd[i].fd);
                ngx_http_clef_draining[i] =
                    ngx_http_clef_draining[--ngx_http_clef_ndraining];
            }
        }
        ngx_time_update();
    }
}


static void
ngx_http_clef_set_title(const char *title)
{
    ngx_setproctitle((char *) title);
}


static ngx_int_t
ngx_http_clef_fd_kept(int fd, int control_fd, ngx_log_t *log)
{
    ngx_log_t  *l;

    if (fd <= 2 || fd == control_fd) {
        return 1;
    }
    for (l = log; l; l = l->next) {
        if (l->file != NULL && l->file->fd == fd) {
            return 1;
        }
    }
    return 0;
}


/* In the keeper: the master's listening sockets, other keepers' pipes and
 * everything else it inherited must not stay open in a long-lived child. */
static void
ngx_http_clef_close_inherited(int control_fd, ngx_log_t *log)
{
    DIR            *d;
    struct dirent  *de;
    int             fd, dfd, n = 0, fds[1024];

    d = opendir("/proc/self/fd");
    if (d == NULL) {
        return;
    }
    dfd = dirfd(d);
    while ((de = readdir(d)) != NULL && n < 1024) {
        if (de->d_name[0] < '0' || de->d_name[0] > '9') {
            continue;
        }
        fd = atoi(de->d_name);
        if (fd != dfd && !ngx_http_clef_fd_kept(fd, control_fd, log)) {
            fds[n++] = fd;
        }
    }
    closedir(d);
    while (n--) {
        (void) close(fds[n]);
    }
}


/* In the keeper, when the master runs as root: the user of the workers. */
static void
ngx_http_clef_drop_privileges(ngx_cycle_t *cycle)
{
    ngx_core_conf_t  *ccf;

    ccf = (ngx_core_conf_t *) ngx_get_conf(cycle->conf_ctx, ngx_core_module);
    if (geteuid() != 0 || ccf->user == (ngx_uid_t) NGX_CONF_UNSET_UINT) {
        return;
    }
    if (setgid(ccf->group) == -1
        || initgroups(ccf->username, ccf->group) == -1
        || setuid(ccf->user) == -1)
    {
        ngx_log_error(NGX_LOG_EMERG, cycle->log, ngx_errno,
                      "clef keeper: cannot switch to user \"%s\"",
                      ccf->username);
        _exit(2);
    }
}


static void
ngx_http_clef_keeper_main(ngx_cycle_t *cycle, ngx_http_clef_main_conf_t *mcf,
    int control_fd, uint32_t gen, ngx_pid_t predecessor,
    ngx_http_clef_log_page_t *log_page)
{
    ngx_http_clef_model_t  *m = mcf->model;
    clef_engine_conf        ec;

    ngx_pid = ngx_getpid();
    ngx_process = NGX_PROCESS_HELPER;

    /* a session of its own: a terminal hang-up or Ctrl-C reaches the
     * master, which closes the pipe; nothing reaches the keeper directly.
     * Started before nginx daemonizes, the keeper must not depend on the
     * process that exits then either. */
    (void) setsid();
    ngx_http_clef_log_detach(cycle, log_page);
    ngx_http_clef_close_inherited(control_fd, cycle->log);
    ngx_http_clef_drop_privileges(cycle);

    ngx_memzero(&ec, sizeof(ec));
    ec.model_path = (const char *) m->path.data;
    ec.model_mmproj = m->mmproj.len ? (const char *) m->mmproj.data : NULL;
    ec.backend = (const char *) m->backend.data;
    ec.threads = (int) m->threads;
    ec.precision = m->precision;
    ec.device = (int) m->device;
    ec.n_devices = m->n_devices;
    ngx_memcpy(ec.devices, m->devices, sizeof(ec.devices));
    ec.tp = (int) m->tp;
    ec.gpu_memory = (int64_t) m->gpu_memory;
    ec.max_length = (int) m->max_length;
    ec.truncate = (int) m->truncate;
    ec.max_batch_tokens = mcf->max_batch_tokens;
    ec.max_batch_records = NGX_HTTP_CLEF_MAX_BATCH_RECORDS;
    ec.decoders = (int) mcf->decoders;
    ec.chunk_tokens = mcf->chunk_tokens;
    ec.drain_timeout_ms = (int64_t) mcf->timeout + 10000;   /* drain_ms */
    ec.gen = gen;
    ec.predecessor = predecessor;
    ec.log = ngx_http_clef_engine_log;
    ec.set_title = ngx_http_clef_set_title;

    ngx_setproctitle("clef keeper");

    _exit(clef_keeper_run(&mcf->queue, &ec, control_fd));
}


ngx_int_t
ngx_http_clef_engine_start(ngx_cycle_t *cycle, ngx_http_clef_main_conf_t *mcf)
{
    ngx_http_clef_keeper_t  *k, *old = ngx_http_clef_keeper;
    clef_queue              *q = &mcf->queue;
    ngx_str_t               *fp = &mcf->model->fingerprint;
    ngx_pid_t                pid, predecessor = 0, epid;
    uint32_t                 gen;
    int                      fds[2];

    /* same zone, same model configuration, keeper alive: keep it all */
    if (old != NULL && old->control_fd != -1 && clef_zone_same(&old->queue, q)
        && old->fingerprint.len == fp->len
        && ngx_memcmp(old->fingerprint.data, fp->data, fp->len) == 0
        && kill(old->keeper_pid, 0) == 0
        && clef_zone_keeper_pid(q) == old->keeper_pid)
    {
        if (ngx_http_clef_keeper_own(cycle, old) != NGX_OK) {
            return NGX_ERROR;
        }
        /* this cycle's error log, which may be another file */
        ngx_http_clef_log_page_set(old->log_page, cycle->log);
        mcf->gen = old->gen;
        ngx_log_error(NGX_LOG_NOTICE, cycle->log, 0,
                      "clef: model \"%V\" unchanged, engine %P (keeper %P) "
                      "keeps serving generation %uD", &mcf->model->name,
                      (ngx_pid_t) clef_zone_engine_pid(q), old->keeper_pid,
                      old->gen);
        return NGX_OK;
    }

    /* a new engine must wait for whichever engine holds a model now */
    epid = clef_zone_engine_pid(q);
    if (epid > 0 && kill(epid, 0) == 0) {
        predecessor = epid;
    } else if (old != NULL && !clef_zone_same(&old->queue, q)) {
        epid = clef_zone_engine_pid(&old->queue);
        if (epid > 0 && kill(epid, 0) == 0) {
            predecessor = epid;
        }
    }

    gen = clef_zone_next_gen(q);
    mcf->gen = gen;

    k = calloc(1, sizeof(ngx_http_clef_keeper_t));
    if (k == NULL) {
        return NGX_ERROR;
    }
    k->fingerprint.data = malloc(fp->len);
    if (k->fingerprint.data == NULL) {
        free(k);
        return NGX_ERROR;
    }
    ngx_memcpy(k->fingerprint.data, fp->data, fp->len);
    k->fingerprint.len = fp->len;
    k->queue = mcf->queue;
    k->gen = gen;
    k->control_fd = -1;
    k->drain_ms = mcf->timeout + 10000;

    k->log_page = ngx_http_clef_log_page_new(cycle->log);
    if (k->log_page == NULL) {
        ngx_http_clef_keeper_free(k);
        return NGX_ERROR;
    }

    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == -1) {
        ngx_log_error(NGX_LOG_EMERG, cycle->log, ngx_errno,
                      "clef: socketpair() failed");
        ngx_http_clef_keeper_free(k);
        return NGX_ERROR;
    }

    pid = fork();
    if (pid == -1) {
        ngx_log_error(NGX_LOG_EMERG, cycle->log, ngx_errno,
                      "clef: fork() of the keeper failed");
        close(fds[0]);
        close(fds[1]);
        ngx_http_clef_keeper_free(k);
        return NGX_ERROR;
    }
    if (pid == 0) {
        ngx_http_clef_keeper_main(cycle, mcf, fds[0], gen, predecessor,
                                  k->log_page);
    }

    close(fds[0]);
    k->control_fd = fds[1];
    k->keeper_pid = pid;
    ngx_http_clef_keeper = k;

    if (ngx_http_clef_keeper_own(cycle, k) != NGX_OK) {
        return NGX_ERROR;
    }

    ngx_log_error(NGX_LOG_NOTICE, cycle->log, 0,
                  "clef: started keeper %P for model \"%V\" (generation %uD%s)",
                  pid, &mcf->model->name, gen,
                  predecessor ? ", after the previous engine drains" : "");

    return NGX_OK;
}
