/*
 * Can the engine read its model?  The engine runs as the workers' user
 * (the keeper drops to it when the master is root), so a model directory
 * that root can read and that user cannot would pass every other check,
 * start nginx, and leave the engine failing to load for ever while
 * requests get 503.  So at configuration time (nginx -t, a start, a
 * reload) a child process takes that user's identity, as the keeper will,
 * and opens every file of the model directory; the first one it cannot
 * open fails the configuration with the file, the user and the fix.
 *
 * A model that becomes unreadable later (its files replaced, a mount
 * gone) is the engine's to report: it retries, and /status says why.
 */
#include "ngx_http_clef_module.h"

#include <dirent.h>
#include <grp.h>
#include <pwd.h>

#define NGX_HTTP_CLEF_ACCESS_REPORT  (PATH_MAX + 64)


/* In the child: writes "ERRNO PATH" for the first file that does not
 * open, nothing when all do. */
static void
ngx_http_clef_access_walk(const char *dir, int out)
{
    DIR            *d;
    struct dirent  *de;
    struct stat     st;
    char            report[NGX_HTTP_CLEF_ACCESS_REPORT];
    int             fd, n, err = 0;

    d = opendir(dir);
    if (d == NULL) {
        err = errno;
        n = snprintf(report, sizeof(report), "%d %s", err, dir);
        (void) !write(out, report, n);
        return;
    }
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.'
            && (de->d_name[1] == '\0'
                || (de->d_name[1] == '.' && de->d_name[2] == '\0')))
        {
            continue;
        }
        /* files and links to them: what the loader may open */
        if (fstatat(dirfd(d), de->d_name, &st, 0) == 0
            && S_ISDIR(st.st_mode))
        {
            continue;
        }
        fd = openat(dirfd(d), de->d_name, O_RDONLY | O_CLOEXEC);
        if (fd == -1) {
            err = errno;
            n = snprintf(report, sizeof(report), "%d %s/%s", err, dir,
                         de->d_name);
            (void) !write(out, report, n);
            break;
        }
        close(fd);
    }
    closedir(d);
}


ngx_int_t
ngx_http_clef_model_readable(ngx_cycle_t *cycle,
    ngx_http_clef_main_conf_t *mcf)
{
    ngx_http_clef_model_t  *m = mcf->model;
    ngx_core_conf_t        *ccf;
    struct passwd          *pw;
    const char             *user;
    char                    report[NGX_HTTP_CLEF_ACCESS_REPORT + 1], *path;
    ngx_pid_t               pid;
    ssize_t                 n, got = 0;
    int                     fds[2], err;
    uid_t                   uid;

    ccf = (ngx_core_conf_t *) ngx_get_conf(cycle->conf_ctx, ngx_core_module);

    /* who the engine will be (ngx_http_clef_engine.c drops the same way) */
    if (geteuid() == 0 && ccf->user != (ngx_uid_t) NGX_CONF_UNSET_UINT) {
        uid = ccf->user;
        user = ccf->username;
    } else {
        uid = geteuid();
        pw = getpwuid(uid);
        user = pw != NULL ? pw->pw_name : "(this user)";
    }

    if (pipe2(fds, O_CLOEXEC) == -1) {
        ngx_log_error(NGX_LOG_EMERG, cycle->log, ngx_errno,
                      "clef: pipe2() failed");
        return NGX_ERROR;
    }

    pid = fork();
    if (pid == -1) {
        ngx_log_error(NGX_LOG_EMERG, cycle->log, ngx_errno,
                      "clef: fork() failed");
        close(fds[0]);
        close(fds[1]);
        return NGX_ERROR;
    }

    if (pid == 0) {
        close(fds[0]);
        if (uid != geteuid()
            && (setgid(ccf->group) == -1
                || initgroups(ccf->username, ccf->group) == -1
                || setuid(uid) == -1))
        {
            err = errno;
            n = snprintf(report, sizeof(report), "-%d", err);
            (void) !write(fds[1], report, n);
            _exit(1);
        }
        ngx_http_clef_access_walk((const char *) m->path.data, fds[1]);
        _exit(0);
    }

    close(fds[1]);
    while ((n = read(fds[0], report + got, sizeof(report) - 1 - got)) > 0
           || (n == -1 && errno == EINTR))
    {
        got += n > 0 ? n : 0;
    }
    close(fds[0]);
    /* reaped here, or by the master's SIGCHLD handler: the pipe, not the
     * exit status, says what the child found */
    (void) waitpid(pid, NULL, 0);

    if (got == 0) {
        return NGX_OK;
    }
    report[got] = '\0';
    err = (int) strtol(report, &path, 10);

    if (err < 0) {
        ngx_log_error(NGX_LOG_EMERG, cycle->log, -err,
                      "clef_model \"%V\": cannot check the model as user "
                      "\"%s\", whom the engine runs as", &m->name, user);
        return NGX_ERROR;
    }

    ngx_log_error(NGX_LOG_EMERG, cycle->log, err,
                  "clef_model \"%V\": the engine runs as user \"%s\", who "
                  "cannot open \"%s\"; make the model readable by that user "
                  "(for instance chmod -R a+rX %V), or run nginx's workers "
                  "as a user who can read it (the \"user\" directive)",
                  &m->name, user, path + 1, &m->path);
    return NGX_ERROR;
}
