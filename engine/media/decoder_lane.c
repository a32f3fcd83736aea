/*
 * A decode lane: its process, its supervision, its stderr (see
 * decoder_lane.h).
 */
#include "media/decoder_lane.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/clock.h"
#include "media/decoder.h"
#include "media/decoder_wire.h"

#define HELLO_SECONDS   30.0     /* a cold start maps ~150 libraries */
#define STABLE_SECONDS  10.0     /* up this long: the back-off resets */
#define FIRST_BACKOFF    0.5

static clef_decoder_lane  *default_lane;
static pthread_once_t      default_once = PTHREAD_ONCE_INIT;


static void
say(clef_decoder_lane *l, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
say(clef_decoder_lane *l, int level, const char *fmt, ...)
{
    char     buf[CLEF_DECODER_LOG_LINE + 160];
    va_list  ap;

    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    if (l->ev != NULL && l->ev->log != NULL) {
        l->ev->log(l->ev->ctx, level, buf);
    } else {
        fprintf(stderr, "%s\n", buf);
    }
}


clef_decoder_lane *
clef_decoder_lane_new(int index, const clef_decoder_events *events)
{
    clef_decoder_lane  *l = calloc(1, sizeof(*l));

    if (l == NULL) {
        return NULL;
    }
    pthread_mutex_init(&l->mu, NULL);
    l->index = index;
    l->ev = events;
    l->pid = -1;
    l->ctl = -1;
    l->pidfd = -1;
    l->errfd = -1;
    l->tokens = 2 * CLEF_DECODER_LOG_RATE;
    return l;
}


static void
default_make(void)
{
    default_lane = clef_decoder_lane_new(0, NULL);
}


clef_decoder_lane *
clef_decoder_lane_default(void)
{
    pthread_once(&default_once, default_make);
    return default_lane;
}


static void
close_fd(int *fd)
{
    if (*fd >= 0) {
        close(*fd);
        *fd = -1;
    }
}


/* ---- stderr ----------------------------------------------------------- */

/* One complete line, if the rate allows. */
static void
relay_line(clef_decoder_lane *l)
{
    double  now = clef_clock_seconds();

    l->tokens += (now - l->tokens_at) * CLEF_DECODER_LOG_RATE;
    l->tokens_at = now;
    if (l->tokens > 2 * CLEF_DECODER_LOG_RATE) {
        l->tokens = 2 * CLEF_DECODER_LOG_RATE;
    }
    if (l->tokens < 1.0) {
        l->dropped++;
        return;
    }
    l->tokens -= 1.0;
    if (l->dropped > 0) {
        say(l, CLEF_DECODER_WARN, "clef decoder %d: %llu lines of its stderr "
            "dropped (more than %.0f a second)", l->index,
            (unsigned long long) l->dropped, CLEF_DECODER_LOG_RATE);
        l->dropped = 0;
    }
    say(l, CLEF_DECODER_WARN, "clef decoder %d (%s): %s%s", l->index,
        l->item[0] != '\0' ? l->item : "idle", l->line,
        l->line_cut ? " [cut]" : "");
}


static void
relay(clef_decoder_lane *l)
{
    char     buf[4096];
    ssize_t  n, i;
    char     c;

    for ( ;; ) {
        n = l->errfd >= 0 ? read(l->errfd, buf, sizeof(buf)) : 0;
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            if (n == 0) {
                close_fd(&l->errfd);
            }
            return;
        }
        for (i = 0; i < n; i++) {
            c = buf[i];
            if (c == '\n') {
                l->line[l->line_len] = '\0';
                relay_line(l);
                l->line_len = 0;
                l->line_cut = 0;
            } else if (l->line_len < CLEF_DECODER_LOG_LINE) {
                /* a control byte would garble the log line */
                l->line[l->line_len++] = (c >= 0x20 && c < 0x7f) ? c : '?';
            } else {
                l->line_cut = 1;
            }
        }
    }
}


void
clef_decoder_lane_relay(clef_decoder_lane *l)
{
    relay(l);
}


void
clef_decoder_lane_relay_end(clef_decoder_lane *l)
{
    relay(l);
    if (l->dropped > 0) {
        say(l, CLEF_DECODER_WARN, "clef decoder %d: %llu lines of its "
            "stderr dropped (more than %.0f a second)%s%s", l->index,
            (unsigned long long) l->dropped, CLEF_DECODER_LOG_RATE,
            l->item[0] != '\0' ? " decoding " : "", l->item);
        l->dropped = 0;
    }
}


/* ---- the process ------------------------------------------------------ */

static int
pidfd_of(pid_t pid)
{
#ifdef SYS_pidfd_open
    return (int) syscall(SYS_pidfd_open, pid, 0);
#else
    errno = ENOSYS;
    return -1;
#endif
}


/* Waits for fd until the deadline at *ctx (clef_clock_seconds()). */
static int
hello_wait(int fd, short events, void *ctx)
{
    double         left = *(double *) ctx - clef_clock_seconds();
    struct pollfd  p;

    if (left <= 0) {
        return 0;
    }
    p.fd = fd;
    p.events = events;
    if (poll(&p, 1, (int) (left * 1000) + 1) < 0 && errno != EINTR) {
        return -1;
    }
    return 1;
}


/* The hello within HELLO_SECONDS. */
static int
read_hello(int fd, clef_dec_hello *h)
{
    double       deadline = clef_clock_seconds() + HELLO_SECONDS;
    clef_dec_io  io = { hello_wait, &deadline, 0 };

    return clef_dec_read_all(fd, h, sizeof(*h), &io);
}


/* Its environment: fixed, not nginx's (decoder_lane.h). */
static void
environment(char **envp, char *ld, size_t size)
{
    const char  *e = getenv("LD_LIBRARY_PATH");
    int          n = 0;

    envp[n++] = (char *) "OPENBLAS_NUM_THREADS=1";
    envp[n++] = (char *) "OMP_NUM_THREADS=1";
    envp[n++] = (char *) "GOTO_NUM_THREADS=1";
    if (e != NULL && snprintf(ld, size, "LD_LIBRARY_PATH=%s", e)
                     < (int) size)
    {
        envp[n++] = ld;
    }
    envp[n] = NULL;
}


static int
spawn(clef_decoder_lane *l, const char *path, int ctl, int err_w)
{
    posix_spawn_file_actions_t  fa;
    posix_spawnattr_t           at;
    sigset_t                    none;
    char                        parent[32], ld[4096];
    char                       *argv[4], *envp[5];
    int                         rc;

    snprintf(parent, sizeof(parent), "%d", (int) getpid());
    argv[0] = (char *) path;
    argv[1] = (char *) "--serve";
    argv[2] = parent;
    argv[3] = NULL;
    environment(envp, ld, sizeof(ld));

    /* the spawning thread's blocked signals (the engine's threads block
     * them) must not reach the decoder: SIGXCPU ends a runaway child */
    sigemptyset(&none);
    posix_spawn_file_actions_init(&fa);
    posix_spawnattr_init(&at);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, ctl, CLEF_DEC_FD);
    posix_spawn_file_actions_adddup2(&fa, err_w, 2);
    rc = posix_spawn(&l->pid, path, &fa, &at, argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    return rc;
}


/* fd moved above CLEF_DEC_FD (dup2 onto itself would keep cloexec), and
 * away from 2 */
static int
above(int fd)
{
    int  to;

    if (fd > CLEF_DEC_FD || fd < 0) {
        return fd;
    }
    to = fcntl(fd, F_DUPFD_CLOEXEC, CLEF_DEC_FD + 1);
    close(fd);
    return to;
}


int
clef_decoder_lane_up(clef_decoder_lane *l, clef_error *err)
{
    clef_dec_hello  h;
    char            path[4096];
    int             sv[2], ep[2], rc;

    if (l->pid > 0) {
        return 0;
    }
    if (clef_decoder_path(path, sizeof(path)) != 0) {
        return clef_error_fail(err, CLEF_E_INTERNAL, "cannot name the "
                               "decode process (%s) beside this library",
                               CLEF_DECODER_NAME);
    }
    /* a build without FFmpeg (make FFMPEG=no) has no decode process:
     * media are then what it cannot decode, never a silent skip */
    if (access(path, F_OK) != 0 && errno == ENOENT) {
        return clef_error_fail(err, CLEF_E_UNSUPPORTED, "Videos and audio "
                               "clips cannot be decoded: this installation "
                               "has no decode process (%s; a build made "
                               "with FFMPEG=no has none).",
                               CLEF_DECODER_NAME);
    }
    if (access(path, X_OK) != 0) {
        return clef_error_fail(err, CLEF_E_INTERNAL, "the decode process %s "
                               "cannot be run: %s", path, strerror(errno));
    }
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
        return clef_error_fail(err, CLEF_E_INTERNAL, "socketpair: %s",
                               strerror(errno));
    }
    if (pipe2(ep, O_CLOEXEC) != 0) {
        close(sv[0]);
        close(sv[1]);
        return clef_error_fail(err, CLEF_E_INTERNAL, "pipe: %s",
                               strerror(errno));
    }
    sv[1] = above(sv[1]);
    ep[1] = above(ep[1]);
    rc = sv[1] >= 0 && ep[1] >= 0 ? spawn(l, path, sv[1], ep[1]) : errno;
    close_fd(&sv[1]);
    close_fd(&ep[1]);
    if (rc != 0) {
        close(sv[0]);
        close(ep[0]);
        l->pid = -1;
        return clef_error_fail(err, CLEF_E_INTERNAL, "cannot start the "
                               "decode process %s: %s", path, strerror(rc));
    }
    l->ctl = sv[0];
    l->errfd = ep[0];
    fcntl(l->errfd, F_SETFL, fcntl(l->errfd, F_GETFL) | O_NONBLOCK);
    l->pidfd = pidfd_of(l->pid);

    if (read_hello(l->ctl, &h) != 0) {
        relay(l);
        clef_decoder_lane_down(l);
        return clef_error_fail(err, CLEF_E_INTERNAL, "the decode process "
                               "%s did not start", path);
    }
    if (h.magic != CLEF_DEC_MAGIC || h.version != CLEF_DEC_VERSION
        || h.request_size != sizeof(clef_dec_request)
        || h.result_size != sizeof(clef_dec_result))
    {
        clef_decoder_lane_down(l);
        return clef_error_fail(err, CLEF_E_INTERNAL, "the decode process "
                               "%s is of another build than this engine",
                               path);
    }
    if (l->ev != NULL && l->ev->started != NULL) {
        l->ev->started(l->ev->ctx, l->index, l->started);
    }
    l->started = 1;
    l->up_since = clef_clock_seconds();
    l->restart_at = 0;
    return 0;
}


void
clef_decoder_lane_down(clef_decoder_lane *l)
{
    close_fd(&l->ctl);
    if (l->pid > 0) {
        /* it exits at the end of its control socket; never leave it */
        kill(l->pid, SIGKILL);
        while (waitpid(l->pid, NULL, 0) < 0 && errno == EINTR) {
        }
        l->pid = -1;
    }
    close_fd(&l->pidfd);
    relay(l);
    close_fd(&l->errfd);
}


void
clef_decoder_lane_free(clef_decoder_lane *l)
{
    if (l == NULL) {
        return;
    }
    pthread_mutex_lock(&l->mu);
    clef_decoder_lane_down(l);
    pthread_mutex_unlock(&l->mu);
    pthread_mutex_destroy(&l->mu);
    free(l);
}


/* ---- supervision ------------------------------------------------------ */

static void
describe_status(int status, char *buf, size_t size)
{
    if (WIFSIGNALED(status)) {
        snprintf(buf, size, "killed by signal %d (%s)", WTERMSIG(status),
                 strsignal(WTERMSIG(status)));
    } else {
        snprintf(buf, size, "exited with status %d",
                 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    }
}


int
clef_decoder_lane_reap(clef_decoder_lane *l, const char *during)
{
    char    why[96], cause[200];
    double  now = clef_clock_seconds();
    int     status;
    pid_t   pid = l->pid, r;

    if (pid <= 0) {
        return 1;
    }
    do {
        r = waitpid(pid, &status, WNOHANG);
    } while (r < 0 && errno == EINTR);
    if (r == 0) {
        return 0;
    }
    relay(l);
    l->pid = -1;
    close_fd(&l->ctl);
    close_fd(&l->pidfd);
    relay(l);
    close_fd(&l->errfd);
    if (r < 0) {
        snprintf(why, sizeof(why), "vanished (%s)", strerror(errno));
    } else {
        describe_status(status, why, sizeof(why));
    }
    /* dying soon after a start doubles the wait before the next one */
    l->backoff = now - l->up_since < STABLE_SECONDS
                 ? (l->backoff > 0 ? l->backoff * 2 : FIRST_BACKOFF) : 0;
    if (l->backoff > CLEF_DECODER_BACKOFF) {
        l->backoff = CLEF_DECODER_BACKOFF;
    }
    l->restart_at = now + l->backoff;
    snprintf(cause, sizeof(cause), "pid %d %s %s", (int) pid, why, during);
    say(l, CLEF_DECODER_ERR, "clef decoder %d: the decode process %s; "
        "restarting it %s", l->index, cause,
        l->backoff > 0 ? "after a back-off" : "now");
    if (l->ev != NULL && l->ev->died != NULL) {
        l->ev->died(l->ev->ctx, l->index, cause);
    }
    return 1;
}


int
clef_decoder_lane_pollfds(clef_decoder_lane *l, struct pollfd *p)
{
    int  n = 0;

    if (l->pidfd >= 0) {
        p[n].fd = l->pidfd;
        p[n].events = POLLIN;
        p[n++].revents = 0;
    }
    if (l->errfd >= 0) {
        p[n].fd = l->errfd;
        p[n].events = POLLIN;
        p[n++].revents = 0;
    }
    return n;
}


double
clef_decoder_lane_wake_at(clef_decoder_lane *l)
{
    return l->restart_at;
}


void
clef_decoder_lane_tend(clef_decoder_lane *l)
{
    clef_error  err;

    pthread_mutex_lock(&l->mu);
    relay(l);
    if (l->pid > 0) {
        clef_decoder_lane_reap(l, "while idle");
    }
    if (l->pid <= 0 && l->restart_at > 0
        && clef_clock_seconds() >= l->restart_at)
    {
        clef_error_clear(&err);
        if (clef_decoder_lane_up(l, &err) != 0) {
            l->backoff = l->backoff > 0 ? l->backoff * 2 : FIRST_BACKOFF;
            if (l->backoff > CLEF_DECODER_BACKOFF) {
                l->backoff = CLEF_DECODER_BACKOFF;
            }
            l->restart_at = clef_clock_seconds() + l->backoff;
            say(l, CLEF_DECODER_ERR, "clef decoder %d: cannot restart the "
                "decode process: %s; next try in %.1f s", l->index,
                err.message, l->backoff);
        } else {
            say(l, CLEF_DECODER_NOTICE, "clef decoder %d: the decode process "
                "restarted (pid %d)", l->index, (int) l->pid);
        }
    }
    pthread_mutex_unlock(&l->mu);
}
