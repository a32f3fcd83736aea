/*
 * Where the keeper and the engine write: nginx's error log, followed as
 * nginx's own processes follow it.
 *
 * The keeper is forked in init_module, before nginx points its stderr at
 * the error log and before it daemonises, so it would keep the terminal
 * (or the pipe nginx was started from) open for as long as it lives.  From
 * the fork on, its stdin and stdout are /dev/null and its stderr is the
 * error log (what nginx makes of its own stderr), or /dev/null when the
 * log is not a file; nginx's habit of echoing errors to the console during
 * startup is turned off.  The engine, its child, inherits all of it.
 *
 * The log follows the file nginx writes, without a signal reaching the
 * keeper (it runs in a session of its own): before each line, the keeper
 * and the engine compare the file at the log's path with the one they
 * hold and open the path again when they differ, so after a logrotate
 * rename + `nginx -s reopen` their lines go where nginx's go.  A reload
 * that keeps the keeper may name another error log: the master writes the
 * new cycle's path into a page it shares with the keeper and the engine
 * (mapped before the keeper's fork), which they read before each line.
 * A file they cannot open (a new path that only root may write) is said
 * once in the old one, which they keep.
 */
#include "ngx_http_clef_module.h"

#include <sys/mman.h>

struct ngx_http_clef_log_page_s {
    ngx_atomic_uint_t   seq;           /* odd while the master writes */
    u_char              path[NGX_MAX_PATH];
};

/* in the keeper and the engine */
static ngx_http_clef_log_page_t  *ngx_http_clef_log_page;
static ngx_log_t                 *ngx_http_clef_log;
static ngx_open_file_t           *ngx_http_clef_log_fh;    /* its file */
static ngx_uint_t                 ngx_http_clef_log_seq;
static ngx_uint_t                 ngx_http_clef_log_said;  /* seq + 1 of a
                                                    failure said already */
static ngx_flag_t                 ngx_http_clef_log_stderr;  /* fd 2 is the
                                                                log too */


/* The error log nginx writes to a file: the first of the chain. */
static ngx_open_file_t *
ngx_http_clef_log_file(ngx_log_t *log)
{
    for ( /* void */ ; log != NULL; log = log->next) {
        if (log->writer == NULL && log->file != NULL
            && log->file->fd != NGX_INVALID_FILE && log->file->name.len > 0)
        {
            return log->file;
        }
    }
    return NULL;
}


ngx_http_clef_log_page_t *
ngx_http_clef_log_page_new(ngx_log_t *log)
{
    ngx_http_clef_log_page_t  *page;

    page = mmap(NULL, sizeof(ngx_http_clef_log_page_t),
                PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED) {
        ngx_log_error(NGX_LOG_EMERG, log, ngx_errno, "clef: mmap() failed");
        return NULL;
    }
    ngx_memzero(page, sizeof(ngx_http_clef_log_page_t));
    ngx_http_clef_log_page_set(page, log);
    return page;
}


void
ngx_http_clef_log_page_set(ngx_http_clef_log_page_t *page, ngx_log_t *log)
{
    ngx_open_file_t  *file = ngx_http_clef_log_file(log);
    size_t            len;

    (void) ngx_atomic_fetch_add(&page->seq, 1);
    ngx_memory_barrier();
    len = file != NULL ? ngx_min(file->name.len, NGX_MAX_PATH - 1) : 0;
    if (len) {
        ngx_memcpy(page->path, file->name.data, len);
    }
    page->path[len] = '\0';
    ngx_memory_barrier();
    (void) ngx_atomic_fetch_add(&page->seq, 1);
}


void
ngx_http_clef_log_page_free(ngx_http_clef_log_page_t *page)
{
    if (page != NULL) {
        (void) munmap(page, sizeof(ngx_http_clef_log_page_t));
    }
}


/* The path the master names now and its sequence number; 0: none. */
static ngx_uint_t
ngx_http_clef_log_path(u_char *path)
{
    ngx_http_clef_log_page_t  *page = ngx_http_clef_log_page;
    ngx_uint_t                 seq, i;

    for (i = 0; i < 100; i++) {
        seq = page->seq;
        ngx_memory_barrier();
        if (seq & 1) {
            continue;
        }
        ngx_memcpy(path, page->path, NGX_MAX_PATH);
        ngx_memory_barrier();
        if (page->seq == seq) {
            path[NGX_MAX_PATH - 1] = '\0';
            return seq;
        }
    }
    return 0;
}


/* Before a line: the log's file is the one at its path now. */
static void
ngx_http_clef_log_follow(void)
{
    ngx_open_file_t  *file;
    ngx_file_info_t   at, held;
    ngx_uint_t        seq;
    ngx_fd_t          fd;
    ngx_err_t         err;
    u_char            path[NGX_MAX_PATH];

    file = ngx_http_clef_log_fh;
    if (ngx_http_clef_log_page == NULL || file == NULL) {
        return;
    }
    seq = ngx_http_clef_log_path(path);
    if (seq == 0 || path[0] == '\0') {
        return;
    }

    /* renamed and not yet reopened by nginx: stay, as nginx does */
    if (ngx_file_info(path, &at) == NGX_FILE_ERROR) {
        return;
    }
    if (seq == ngx_http_clef_log_seq && ngx_fd_info(file->fd, &held) != -1
        && at.st_dev == held.st_dev && at.st_ino == held.st_ino)
    {
        return;
    }

    fd = open((char *) path, O_WRONLY | O_APPEND | O_CLOEXEC);
    if (fd == NGX_INVALID_FILE) {
        err = ngx_errno;
        if (ngx_http_clef_log_said != seq + 1) {
            ngx_http_clef_log_said = seq + 1;
            ngx_log_error(NGX_LOG_WARN, ngx_http_clef_log, err,
                          "clef: cannot open the error log \"%s\" as user "
                          "%d; the keeper and the engine keep writing here "
                          "until nginx restarts", path, (int) geteuid());
        }
        return;
    }
    (void) dup2(fd, file->fd);
    if (ngx_http_clef_log_stderr) {
        (void) dup2(fd, STDERR_FILENO);
    }
    (void) close(fd);
    ngx_http_clef_log_seq = seq;
}


void
ngx_http_clef_log_detach(ngx_cycle_t *cycle, ngx_http_clef_log_page_t *page)
{
    ngx_open_file_t  *file = ngx_http_clef_log_file(cycle->log);
    ngx_fd_t          null;

    ngx_http_clef_log = cycle->log;
    ngx_http_clef_log_fh = file;
    ngx_http_clef_log_page = page;
    ngx_http_clef_log_seq = page != NULL ? page->seq : 0;

    /* nginx echoes errors to the console until it has started; this
     * process outlives that */
    ngx_use_stderr = 0;

    null = open("/dev/null", O_RDWR);
    if (null == NGX_INVALID_FILE) {
        return;
    }
    (void) dup2(null, STDIN_FILENO);
    (void) dup2(null, STDOUT_FILENO);
    if (file != NULL && file->fd != STDERR_FILENO) {
        (void) dup2(file->fd, STDERR_FILENO);
        ngx_http_clef_log_stderr = 1;
    } else if (file == NULL) {
        /* syslog or memory: nothing for a library's stray line */
        (void) dup2(null, STDERR_FILENO);
    }
    /* else error_log stderr: stderr is the log nginx was told to use */
    if (null > STDERR_FILENO) {
        (void) close(null);
    }
    if (file == NULL) {
        ngx_http_clef_log_page = NULL;
    }
}


void
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
     * pid and time right, and its file the one nginx writes now */
    ngx_pid = ngx_getpid();
    ngx_time_update();
    ngx_http_clef_log_follow();
    ngx_log_error(lv, ngx_http_clef_log, 0, "%s", msg);
}
