/*
 * Master side of the engine (DESIGN.md §2): init_module forks a keeper
 * (engine/serve/keeper.c), which forks the engine (engine/serve/engine.c).
 * The master holds the write end of the keeper's control pipe; that end is
 * the keeper's life line:
 *   - a reload with the same zone and the same model configuration adopts
 *     the running keeper: the new cycle takes the pipe over, the engine and
 *     its loaded weights stay;
 *   - any other reload starts a new keeper, whose engine waits for the old
 *     one to drain; the old cycle's pool cleanup closes the old pipe, and
 *     the old keeper drains its engine and exits;
 *   - nginx stop, quit, or the master's death close the pipe too.
 * Workers and every other process forked by the master close their copy
 * of the pipe (init_process), so only the master keeps a keeper alive.
 */
#include "ngx_http_clef_module.h"

#include <dirent.h>
#include <grp.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>

typedef struct {
    int            control_fd;    /* write end; -1 once closed */
    ngx_pid_t      keeper_pid;
    uint32_t       gen;
    clef_queue     queue;         /* the zone the keeper serves */
    ngx_str_t      fingerprint;   /* malloc'd */
    ngx_cycle_t   *cycle;         /* the cycle that owns the pipe now */
} ngx_http_clef_keeper_t;

/* the master's current keeper: process state, not cycle state, because a
 * reload may hand it from one cycle to the next */
static ngx_http_clef_keeper_t  *ngx_http_clef_keeper;
static ngx_log_t               *ngx_http_clef_engine_log_target;


static void
ngx_http_clef_keeper_free(ngx_http_clef_keeper_t *k)
{
    if (k->control_fd != -1) {
        (void) close(k->control_fd);
        k->control_fd = -1;
    }
    if (ngx_http_clef_keeper == k) {
        ngx_http_clef_keeper = NULL;
    }
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
    /* in a worker: drop the copy of the pipe, keep nothing else */
    if (ngx_http_clef_keeper != NULL && ngx_http_clef_keeper->control_fd != -1)
    {
        (void) close(ngx_http_clef_keeper->control_fd);
        ngx_http_clef_keeper->control_fd = -1;
    }
}


static void
ngx_http_clef_engine_log(int level, const char *msg)
{
    ngx_uint_t  lv;

    switch (level) {
    case CLEF_LOG_ERR:
        lv = NGX_LOG_ERR;
        break;
    case CLEF_LOG_WARN:
        lv = NGX_LOG_WARN;
        break;
    case CLEF_LOG_NOTICE:
        lv = NGX_LOG_NOTICE;
        break;
    default:
        lv = NGX_LOG_INFO;
        break;
    }

    /* the keeper and the engine are forks of the master: keep the log's
     * pid and time right */
    ngx_pid = ngx_getpid();
    ngx_time_update();
    ngx_log_error(lv, ngx_http_clef_engine_log_target, 0, "%s", msg);
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
    int control_fd, uint32_t gen, ngx_pid_t predecessor)
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
    ngx_http_clef_engine_log_target = cycle->log;
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
    ec.max_length = (int) m->max_length;
    ec.truncate = (int) m->truncate;
    ec.max_batch_tokens = mcf->max_batch_tokens;
    ec.max_batch_records = NGX_HTTP_CLEF_MAX_BATCH_RECORDS;
    ec.drain_timeout_ms = (int64_t) mcf->timeout + 10000;
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

    if (pipe2(fds, O_CLOEXEC) == -1) {
        ngx_log_error(NGX_LOG_EMERG, cycle->log, ngx_errno,
                      "clef: pipe2() failed");
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
        ngx_http_clef_keeper_main(cycle, mcf, fds[0], gen, predecessor);
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
