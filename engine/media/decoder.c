/*
 * The engine's side of the decode process (see decoder.h).
 */
#include "media/decoder.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/dl.h"
#include "media/audio_features.h"
#include "media/decoder_wire.h"
#include "media/video_item.h"

#define HELLO_SECONDS   30.0     /* a cold start maps ~150 libraries */
#define STATUS_SECONDS  10.0
#define MAX_FRAMES_BYTES  (INT64_C(1) << 30)

extern char **environ;

static pthread_mutex_t  lock = PTHREAD_MUTEX_INITIALIZER;
static pid_t            zpid = -1;       /* the decode process */
static int              zfd = -1;        /* its control socket */

typedef struct {
    int          index;
    const char  *kind;          /* "video", "audio": refusals' types */
    const char  *noun;          /* "Video", "Audio clip" */
    double       deadline;
    void       (*progress)(void *ctx);
    void        *ctx;
    char         loc[64];
} job;


int
clef_decoder_path(char *path, size_t size)
{
    const char  *env = getenv("CLEF_DECODER");

    if (env != NULL && env[0] != '\0') {
        return snprintf(path, size, "%s", env) < (int) size ? 0 : -1;
    }
    return clef_path_beside((const void *) clef_decoder_path,
                            CLEF_DECODER_NAME, path, size);
}


static void
stop_locked(void)
{
    if (zfd >= 0) {
        close(zfd);
        zfd = -1;
    }
    if (zpid > 0) {
        /* it exits at the end of its control socket; never leave it */
        kill(zpid, SIGKILL);
        while (waitpid(zpid, NULL, 0) < 0 && errno == EINTR) {
        }
        zpid = -1;
    }
}


void
clef_decoder_stop(void)
{
    pthread_mutex_lock(&lock);
    stop_locked();
    pthread_mutex_unlock(&lock);
}


/* Waits until fd is ready for events or the deadline; calls progress about
 * once a second.  1 ready, 0 past the deadline, -1 on an error. */
static int
wait_fd(int fd, short events, const job *j)
{
    struct pollfd  p;
    double         left;
    int            rc;

    for ( ;; ) {
        left = j->deadline - clef_clock_seconds();
        if (left <= 0) {
            return 0;
        }
        p.fd = fd;
        p.events = events;
        p.revents = 0;
        rc = poll(&p, 1, left > 1.0 ? 1000 : (int) (left * 1000) + 1);
        if (rc > 0) {
            return 1;
        }
        if (rc < 0 && errno != EINTR) {
            return -1;
        }
        if (j->progress != NULL) {
            j->progress(j->ctx);
        }
    }
}


/* read_all() against the deadline. */
static int
read_until(int fd, void *buf, size_t len, const job *j)
{
    char     *p = buf;
    ssize_t   n;

    while (len > 0) {
        if (wait_fd(fd, POLLIN, j) != 1) {
            return -1;
        }
        n = read(fd, p, len);
        if (n < 0 && (errno == EINTR || errno == EAGAIN)) {
            continue;
        }
        if (n <= 0) {
            return -1;
        }
        p += n;
        len -= (size_t) n;
    }
    return 0;
}


static int
start_locked(clef_error *err)
{
    posix_spawn_file_actions_t  fa;
    posix_spawnattr_t           at;
    clef_dec_hello              h;
    sigset_t                    none;
    job                         j;
    char                        path[4096], parent[32];
    char                       *argv[4];
    int                         sv[2], rc;

    if (clef_decoder_path(path, sizeof(path)) != 0) {
        return clef_error_fail(err, CLEF_E_INTERNAL, "cannot name the video "
                               "decoder (%s) beside this library",
                               CLEF_DECODER_NAME);
    }
    /* a build without FFmpeg (make FFMPEG=no) has no decode process:
     * videos are then media it cannot decode, never a silent skip */
    if (access(path, F_OK) != 0 && errno == ENOENT) {
        return clef_error_fail(err, CLEF_E_UNSUPPORTED, "Videos and audio "
                               "clips cannot be decoded: this installation "
                               "has no decode process (%s; a build made "
                               "with FFMPEG=no has none).",
                               CLEF_DECODER_NAME);
    }
    if (access(path, X_OK) != 0) {
        return clef_error_fail(err, CLEF_E_INTERNAL, "the video decoder %s "
                               "cannot be run: %s", path, strerror(errno));
    }
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
        return clef_error_fail(err, CLEF_E_INTERNAL, "socketpair: %s",
                               strerror(errno));
    }
    /* dup2 onto itself would keep close-on-exec */
    if (sv[1] == CLEF_DEC_FD) {
        rc = fcntl(sv[1], F_DUPFD_CLOEXEC, CLEF_DEC_FD + 1);
        close(sv[1]);
        sv[1] = rc;
    }
    snprintf(parent, sizeof(parent), "%d", (int) getpid());
    argv[0] = path;
    argv[1] = (char *) "--serve";
    argv[2] = parent;
    argv[3] = NULL;

    /* the spawning thread's blocked signals (the engine's threads block
     * them) must not reach the decoder: SIGXCPU ends a runaway child */
    sigemptyset(&none);
    posix_spawn_file_actions_init(&fa);
    posix_spawnattr_init(&at);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, sv[1], CLEF_DEC_FD);
    rc = sv[1] >= 0 ? posix_spawn(&zpid, path, &fa, &at, argv, environ)
                    : errno;
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    if (sv[1] >= 0) {
        close(sv[1]);
    }
    if (rc != 0) {
        close(sv[0]);
        zpid = -1;
        return clef_error_fail(err, CLEF_E_INTERNAL, "cannot start the "
                               "video decoder %s: %s", path, strerror(rc));
    }
    zfd = sv[0];

    memset(&j, 0, sizeof(j));
    j.deadline = clef_clock_seconds() + HELLO_SECONDS;
    if (read_until(zfd, &h, sizeof(h), &j) != 0) {
        stop_locked();
        return clef_error_fail(err, CLEF_E_INTERNAL, "the video decoder %s "
                               "did not start", path);
    }
    if (h.magic != CLEF_DEC_MAGIC || h.version != CLEF_DEC_VERSION
        || h.request_size != sizeof(clef_dec_request)
        || h.result_size != sizeof(clef_dec_result))
    {
        stop_locked();
        return clef_error_fail(err, CLEF_E_INTERNAL, "the video decoder %s "
                               "is of another build than this engine", path);
    }
    return 0;
}


/* The request with the item's socket as SCM_RIGHTS. */
static int
send_request(const clef_dec_request *rq, int item)
{
    struct msghdr    m;
    struct iovec     iov;
    struct cmsghdr  *c;
    union {
        char            buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr  align;
    }                u;
    ssize_t          n;

    memset(&m, 0, sizeof(m));
    memset(&u, 0, sizeof(u));
    iov.iov_base = (void *) rq;
    iov.iov_len = sizeof(*rq);
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = u.buf;
    m.msg_controllen = sizeof(u.buf);
    c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &item, sizeof(int));
    do {
        n = sendmsg(zfd, &m, MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    return n == (ssize_t) sizeof(*rq) ? 0 : -1;
}


static int
read_status(uint32_t what, pid_t pid, clef_dec_status *st)
{
    job  j;

    memset(&j, 0, sizeof(j));
    j.deadline = clef_clock_seconds() + STATUS_SECONDS;
    if (read_until(zfd, st, sizeof(*st), &j) != 0
        || st->magic != CLEF_DEC_MAGIC || st->what != what
        || (pid > 0 && st->pid != pid))
    {
        return -1;
    }
    return 0;
}


/* The file down the item's socket, then its end: the child reads all of
 * it before it decodes. */
static int
send_file(int fd, const uint8_t *data, size_t len, const job *j)
{
    ssize_t  n;

    while (len > 0) {
        if (wait_fd(fd, POLLOUT, j) != 1) {
            return -1;
        }
        n = send(fd, data, len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0 && (errno == EINTR || errno == EAGAIN)) {
            continue;
        }
        if (n <= 0) {
            return -1;
        }
        data += n;
        len -= (size_t) n;
    }
    return shutdown(fd, SHUT_WR);
}


/* A refusal the child sent, kept only in the shapes it may take: its
 * kind's 4xx or a failure of the server, at this item's place. */
static int
child_error(clef_dec_result *r, const job *j, clef_error *err)
{
    size_t  k = strlen(j->kind);
    char    type[32];

    r->err.type[sizeof(r->err.type) - 1] = '\0';
    r->err.message[sizeof(r->err.message) - 1] = '\0';
    snprintf(type, sizeof(type), "%s_invalid", j->kind);
    if (r->err.status >= 400 && r->err.status < 500
        && strncmp(r->err.type, j->kind, k) == 0 && r->err.type[k] == '_')
    {
        return clef_error_set(err, r->err.status, r->err.type, j->loc, "%s",
                              r->err.message);
    }
    if (r->err.code == CLEF_E_NO_MEMORY) {
        return clef_error_fail(err, CLEF_E_NO_MEMORY, "Out of memory "
                               "decoding %s %d.", j->kind, j->index);
    }
    return clef_error_set(err, 400, type, j->loc, "%s %d cannot be "
                          "decoded: the decoder failed on it.", j->noun,
                          j->index);
}


/* How the child ended, when it did not answer; killed: this side ended it
 * (its answer was short or malformed, or its time was up). */
static int
child_fate(int status, int killed, int timed_out, double budget,
    const job *j, clef_error *err)
{
    int   sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    char  invalid[32], over[32];

    snprintf(invalid, sizeof(invalid), "%s_invalid", j->kind);
    snprintf(over, sizeof(over), "%s_decode_budget", j->kind);
    if (timed_out) {
        return clef_error_set(err, 400, over, j->loc,
            "%s %d took longer than %.0f s to decode; the limit is %.0f "
            "s.", j->noun, j->index, budget + CLEF_DECODER_GRACE, budget);
    }
    if (sig == SIGSYS) {
        return clef_error_set(err, 400, invalid, j->loc,
            "%s %d cannot be decoded: the decoder made a system call its "
            "sandbox forbids and was stopped.", j->noun, j->index);
    }
    if (killed && sig == SIGKILL) {
        return clef_error_set(err, 400, invalid, j->loc,
            "%s %d cannot be decoded: the decoder's answer was cut short "
            "or malformed.", j->noun, j->index);
    }
    if (sig == SIGXCPU || sig == SIGKILL) {
        return clef_error_set(err, 400, over, j->loc,
            "%s %d cannot be decoded: the decoder ran out of its CPU or "
            "memory budget (signal %d).", j->noun, j->index, sig);
    }
    if (sig != 0) {
        return clef_error_set(err, 400, invalid, j->loc,
            "%s %d cannot be decoded: the decoder crashed on it (signal "
            "%d, %s).", j->noun, j->index, sig, strsignal(sig));
    }
    return clef_error_set(err, 400, invalid, j->loc,
        "%s %d cannot be decoded: the decoder ended (exit %d) without "
        "an answer.", j->noun, j->index,
        WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}


/* What a child's answer is turned into: a video's media item, or an
 * audio clip's samples. */
typedef struct {
    clef_media_item  *item;
    float           **samples;
    int64_t          *n;
} dec_out;


/* The child's samples are untrusted like its pixels: a NaN or an infinity
 * would make every feature NaN (the child refuses them; one that did not
 * answered against its code). */
static int
check_samples(const float *x, int64_t n, const job *j, clef_error *err)
{
    int64_t  i;

    for (i = 0; i < n; i++) {
        if (!isfinite(x[i])) {
            return clef_error_set(err, 400, "audio_invalid", j->loc,
                "Audio clip %d cannot be decoded: the decoder answered a "
                "sample that is not a finite number.", j->index);
        }
    }
    return 0;
}


/* The payload's size an answer r may have, from what it says; -1 when it
 * says something impossible. */
static int64_t
payload_bytes(const clef_dec_request *rq, clef_dec_result *r)
{
    int64_t  max;

    if (rq->kind == CLEF_MEDIA_AUDIO) {
        max = (int64_t) (rq->audio.max_seconds * CLEF_AUDIO_RATE);
        return r->audio.samples > 0 && r->audio.samples <= max
               && r->rgb_len == (uint64_t) r->audio.samples * sizeof(float)
               ? (int64_t) r->rgb_len : -1;
    }
    r->info.codec[sizeof(r->info.codec) - 1] = '\0';
    max = clef_video_frames_bytes(&r->info, &rq->video);
    return max > 0 && max <= MAX_FRAMES_BYTES && r->rgb_len == (uint64_t) max
           ? max : -1;
}


/* One video through a fresh child; the lock is held.  -1 with err; *dead
 * when the decode process itself must be restarted. */
static int
decode_locked(const uint8_t *data, size_t len, const clef_dec_request *rq,
    job *j, const dec_out *out, int *dead, clef_error *err)
{
    clef_dec_status   st;
    clef_dec_result   r;
    uint8_t          *rgb = NULL;
    int64_t           want;
    char              end;
    int               sp[2], answered = 0, timed_out = 0, rc = -1;
    pid_t             pid;

    *dead = 1;
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) != 0) {
        *dead = 0;
        return clef_error_fail(err, CLEF_E_INTERNAL, "socketpair: %s",
                               strerror(errno));
    }
    if (send_request(rq, sp[1]) != 0) {
        close(sp[0]);
        close(sp[1]);
        return clef_error_fail(err, CLEF_E_INTERNAL, "the video decoder "
                               "does not take requests");
    }
    close(sp[1]);
    if (read_status(CLEF_DEC_FORKED, 0, &st) != 0) {
        close(sp[0]);
        return clef_error_fail(err, CLEF_E_INTERNAL, "the decoder did not "
                               "start a process for %s %d", j->kind,
                               j->index);
    }
    pid = st.pid;
    if (pid <= 0) {
        close(sp[0]);
        *dead = 0;
        return clef_error_fail(err, CLEF_E_INTERNAL, "the video decoder "
                               "cannot fork: %s", strerror(st.wait_status));
    }

    if (send_file(sp[0], data, len, j) == 0
        && read_until(sp[0], &r, sizeof(r), j) == 0
        && r.magic == CLEF_DEC_MAGIC && (r.ok == 0 || r.ok == 1))
    {
        if (r.ok == 0) {
            answered = 1;
        } else {
            want = payload_bytes(rq, &r);
            if (want > 0) {
                rgb = malloc((size_t) want);
                answered = rgb != NULL
                           && read_until(sp[0], rgb, (size_t) want, j) == 0
                           && read_until(sp[0], &end, 1, j) != 0;
            }
        }
    }
    timed_out = clef_clock_seconds() >= j->deadline;
    /* a child that has not answered is done, whatever it was doing */
    if (!answered) {
        kill(pid, SIGKILL);
    }
    close(sp[0]);
    if (read_status(CLEF_DEC_EXITED, pid, &st) != 0) {
        free(rgb);
        return clef_error_fail(err, CLEF_E_INTERNAL, "the decoder lost "
                               "%s %d's process", j->kind, j->index);
    }
    *dead = 0;
    /* an answer counts only from a child that then exited by itself */
    if (answered && WIFEXITED(st.wait_status)
        && WEXITSTATUS(st.wait_status) == 0)
    {
        if (r.ok == 0) {
            rc = child_error(&r, j, err);
        } else if (rq->kind == CLEF_MEDIA_AUDIO) {
            rc = check_samples((const float *) rgb, r.audio.samples, j, err);
            if (rc == 0) {
                *out->samples = (float *) rgb;
                *out->n = r.audio.samples;
                rgb = NULL;
            }
        } else {
            rc = clef_video_item(&r.info, &rq->video, rgb, (size_t) r.rgb_len,
                                 j->index, out->item, err);
            rgb = NULL;
        }
    } else {
        rc = child_fate(st.wait_status, !answered, timed_out,
                        rq->kind == CLEF_MEDIA_AUDIO
                        ? rq->audio.max_decode_seconds
                        : rq->limits.max_decode_seconds, j, err);
    }
    free(rgb);
    return rc;
}


/* One item through a child of the decode process, which is started when
 * none runs. */
static int
run(const uint8_t *data, size_t len, clef_dec_request *rq, job *j,
    double budget, const dec_out *out, clef_error *err)
{
    int  rc, dead = 0;

    if (len > CLEF_DEC_MAX_FILE) {
        return clef_error_set(err, 413, rq->kind == CLEF_MEDIA_AUDIO
                              ? "audio_too_large" : "video_too_large",
                              j->loc, "%s %d is %zu bytes; the decoder "
                              "takes at most %u.", j->noun, j->index, len,
                              CLEF_DEC_MAX_FILE);
    }
    rq->magic = CLEF_DEC_MAGIC;
    rq->index = j->index;
    rq->len = len;

    pthread_mutex_lock(&lock);
    if (zfd < 0 && start_locked(err) != 0) {
        pthread_mutex_unlock(&lock);
        return -1;
    }
    j->deadline = clef_clock_seconds() + budget + CLEF_DECODER_GRACE;
    rc = decode_locked(data, len, rq, j, out, &dead, err);
    if (dead) {
        /* the next item starts a new decode process */
        stop_locked();
    }
    pthread_mutex_unlock(&lock);
    return rc;
}


int
clef_decoder_video(const uint8_t *data, size_t len, int index,
    const clef_video_limits *lim, const clef_video_config *vc,
    void (*progress)(void *ctx), void *ctx, clef_media_item *out,
    clef_error *err)
{
    clef_dec_request  rq;
    dec_out           o = { out, NULL, NULL };
    job               j;

    memset(out, 0, sizeof(*out));
    memset(&j, 0, sizeof(j));
    j.index = index;
    j.kind = "video";
    j.noun = "Video";
    j.progress = progress;
    j.ctx = ctx;
    snprintf(j.loc, sizeof(j.loc), "[\"body\",\"videos\",%d]", index);
    memset(&rq, 0, sizeof(rq));
    rq.kind = CLEF_MEDIA_VIDEO;
    rq.limits = *lim;
    rq.video = *vc;
    clef_audio_limits_default(&rq.audio);
    return run(data, len, &rq, &j, lim->max_decode_seconds, &o, err);
}


int
clef_decoder_audio(const uint8_t *data, size_t len, int index,
    const clef_audio_limits *lim, void (*progress)(void *ctx), void *ctx,
    float **samples, int64_t *n, clef_error *err)
{
    clef_dec_request  rq;
    dec_out           o = { NULL, samples, n };
    job               j;

    *samples = NULL;
    *n = 0;
    memset(&j, 0, sizeof(j));
    j.index = index;
    j.kind = "audio";
    j.noun = "Audio clip";
    j.progress = progress;
    j.ctx = ctx;
    snprintf(j.loc, sizeof(j.loc), "[\"body\",\"audio\",%d]", index);
    memset(&rq, 0, sizeof(rq));
    rq.kind = CLEF_MEDIA_AUDIO;
    clef_video_limits_default(&rq.limits);
    clef_video_config_default(&rq.video);
    rq.audio = *lim;
    return run(data, len, &rq, &j, lim->max_decode_seconds, &o, err);
}
