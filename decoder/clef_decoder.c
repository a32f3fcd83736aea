/*
 * clef-decoder: the engine's decode process (engine/media/decoder.h says
 * why it exists and what the engine does with it).  The only program of
 * ngx_clef that links FFmpeg besides the CLI and the tests; it decodes
 * videos (video_process.h) and audio clips (audio_decode.h).
 *
 *   clef-decoder --serve PARENT_PID    what the engine runs: fd 3 is the
 *                                      control socket (decoder_wire.h)
 *   clef-decoder --sandbox-check       enters the sandbox in a child per
 *                                      probe, as a decode child does, and
 *                                      prints what each system call met
 *                                      (t/unit/test_decoder_sandbox.c)
 *
 * The serving process handles no untrusted byte: it reads fixed-size
 * requests from the engine, forks, answers its children's thread
 * creations (sandbox.h) and reports how they end.  A child drops every
 * descriptor but its item's socket, the sandbox's and stderr, enters the
 * sandbox, and only then reads the file and decodes it.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "media/audio_decode.h"
#include "media/decoder.h"
#include "media/decoder_wire.h"
#include "media/image_decode.h"
#include "media/video_process.h"
#include "sandbox.h"

#define NOTIFY_FD      (CLEF_DEC_FD + 1)  /* a child's end of its
                                             clef_sandbox_pair() */
#define PROBE_THREADS  500
#define PROBE_SAID     2                  /* a probe's exit: its line is
                                             on its item socket */
#define PROBE_NO_FILE  101                /* write-file's exit: no file
                                             to write to */


/* All of buf to fd with write() alone: the only way out of a sandboxed
 * child (SIGPIPE is ignored there). */
static const clef_dec_io  child_io = { NULL, NULL, 1 };

static int
put(int fd, const void *buf, size_t len)
{
    return clef_dec_write_all(fd, buf, len, &child_io);
}


/* In a child: the item's socket at CLEF_DEC_FD, the sandbox's at
 * NOTIFY_FD and stderr stay open, nothing else (what the engine had open
 * never reaches a decoder). */
static void
settle(int item, int notify)
{
    int  a, b;

    /* above both numbers first: either may hold the other's place */
    a = fcntl(item, F_DUPFD, NOTIFY_FD + 1);
    b = fcntl(notify, F_DUPFD, NOTIFY_FD + 1);
    if (a < 0 || b < 0 || dup2(a, CLEF_DEC_FD) < 0 || dup2(b, NOTIFY_FD) < 0)
    {
        _exit(3);
    }
    close_range(NOTIFY_FD + 1, ~0u, 0);
    close(0);
    close(1);
    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    signal(SIGPIPE, SIG_IGN);
}


/* A record's images (the request's n_files), one answer each, in order,
 * up to the first refused: one decoded image held at a time. */
static int
images(const clef_dec_request *rq, const uint8_t *data)
{
    clef_media_input  in;
    clef_rgb_image    rgb;
    clef_dec_result   r;
    uint64_t          at = 0;
    uint32_t          k;
    int               rc;

    for (k = 0; k < rq->n_files; k++) {
        memset(&r, 0, sizeof(r));
        r.magic = CLEF_DEC_MAGIC;
        memset(&in, 0, sizeof(in));
        in.kind = CLEF_MEDIA_IMAGE;
        in.format = (int) rq->formats[k];
        in.data = data + at;
        in.len = (size_t) rq->lens[k];
        at += rq->lens[k];
        rc = clef_image_decode_exif(&in, rq->index + (int) k, rq->max_pixels,
                                    (int) rq->exif, &rgb, &r.err);
        r.ok = rc == 0;
        if (r.ok) {
            r.width = rgb.width;
            r.height = rgb.height;
            r.rgb_len = (uint64_t) rgb.width * (uint64_t) rgb.height * 3;
        }
        if (put(CLEF_DEC_FD, &r, sizeof(r)) != 0
            || (r.ok && put(CLEF_DEC_FD, rgb.rgb, (size_t) r.rgb_len) != 0))
        {
            return -1;
        }
        clef_rgb_image_free(&rgb);
        if (!r.ok) {
            break;
        }
    }
    return 0;
}


#ifdef CLEF_DECODER_HOSTILE
int clef_hostile_child(const clef_dec_request *rq, const uint8_t *data);
#endif


/* A decode child: never returns. */
static void
child(const clef_dec_request *rq, int item, int notify)
{
    clef_dec_result   r;
    clef_video        v;
    uint8_t          *data;
    float            *samples = NULL;
    const void       *payload = NULL;
    int64_t           n = 0;
    char              why[160];
    int               rc;

    /* the item's socket takes the control socket's place */
    settle(item, notify);

    memset(&r, 0, sizeof(r));
    r.magic = CLEF_DEC_MAGIC;
    /* CPU time: twice the item's decoding budget */
    if (clef_sandbox_enter(CLEF_DECODER_MAX_AS, 2 * (rq->kind
                           == CLEF_MEDIA_AUDIO ? rq->audio.max_decode_seconds
                                               : rq->limits.max_decode_seconds),
                           NOTIFY_FD, why, sizeof(why)) != 0)
    {
        /* the operator's to see too (a kernel without a listener) */
        fprintf(stderr, "clef-decoder: decoder sandbox: %s\n", why);
        clef_error_fail(&r.err, CLEF_E_INTERNAL, "decoder sandbox: %s", why);
        put(CLEF_DEC_FD, &r, sizeof(r));
        _exit(4);
    }

    data = malloc(rq->len > 0 ? (size_t) rq->len : 1);
    if (data == NULL) {
        clef_error_fail(&r.err, CLEF_E_NO_MEMORY, "Out of memory.");
        put(CLEF_DEC_FD, &r, sizeof(r));
        _exit(0);
    }
    if (clef_dec_read_all(CLEF_DEC_FD, data, (size_t) rq->len, NULL) != 0) {
        _exit(5);
    }
#ifdef CLEF_DECODER_HOSTILE
    /* the tests' hostile build (t/decoder/hostile.c) */
    clef_hostile_child(rq, data);
#endif
    if (rq->kind == CLEF_MEDIA_IMAGE) {
        _exit(images(rq, data) == 0 ? 0 : 6);
    }
    if (rq->kind == CLEF_MEDIA_AUDIO) {
        rc = clef_audio_decode(data, (size_t) rq->len, rq->index, &rq->audio,
                               &samples, &n, &r.audio, &r.err);
        payload = samples;
        if (rc == 0) {
            r.rgb_len = (uint64_t) n * sizeof(float);
        }
    } else {
        rc = clef_video_load(data, (size_t) rq->len, rq->index, &rq->limits,
                             &rq->video, &v, &r.err);
        if (rc == 0) {
            r.info = v.info;
            r.rgb_len = (uint64_t) v.n_frames * (uint64_t) v.grid_h * v.patch
                        * (uint64_t) v.grid_w * v.patch * 3;
            payload = v.rgb;
        }
    }
    free(data);
    r.ok = rc == 0;
    if (put(CLEF_DEC_FD, &r, sizeof(r)) != 0
        || (r.ok && put(CLEF_DEC_FD, payload, (size_t) r.rgb_len) != 0))
    {
        _exit(6);
    }
    _exit(0);
}


/* The files' lengths are the request's length. */
static int
files_add_up(const clef_dec_request *rq)
{
    uint64_t  sum = 0;
    uint32_t  k;

    for (k = 0; k < rq->n_files && k < CLEF_DEC_MAX_FILES; k++) {
        sum += rq->lens[k];
    }
    return sum == rq->len;
}


/* One request and the item's socket from the engine; 0 at the end of the
 * control socket, -1 on a broken one. */
static int
take(clef_dec_request *rq, int *item)
{
    ssize_t  n;

    n = clef_dec_recv_fd(CLEF_DEC_FD, rq, sizeof(*rq), MSG_WAITALL, item);
    if (n == 0) {
        return 0;
    }
    if (n != (ssize_t) sizeof(*rq)) {
        if (*item >= 0) {
            close(*item);
        }
        return -1;
    }
    return rq->magic == CLEF_DEC_MAGIC
           && (rq->kind == CLEF_MEDIA_VIDEO || rq->kind == CLEF_MEDIA_AUDIO
               || rq->kind == CLEF_MEDIA_IMAGE)
           && rq->n_files >= 1 && rq->n_files <= CLEF_DEC_MAX_FILES
           && (rq->kind == CLEF_MEDIA_IMAGE || rq->n_files == 1)
           && rq->len <= CLEF_DEC_MAX_FILE && files_add_up(rq) ? 1 : -1;
}


/* A child's news to the engine; ru: how the child ended (EXITED). */
static int
report(uint32_t what, pid_t pid, int status, const struct rusage *ru)
{
    clef_dec_status  st;
    uint64_t         ms = 0;

    memset(&st, 0, sizeof(st));
    st.magic = CLEF_DEC_MAGIC;
    st.what = what;
    st.pid = (int32_t) pid;
    st.wait_status = status;
    if (ru != NULL) {
        ms = (uint64_t) (ru->ru_utime.tv_sec + ru->ru_stime.tv_sec) * 1000
             + (uint64_t) (ru->ru_utime.tv_usec + ru->ru_stime.tv_usec)
               / 1000;
        st.cpu_ms = ms > UINT32_MAX ? UINT32_MAX : (uint32_t) ms;
        st.max_rss_kib = ru->ru_maxrss > 0 && ru->ru_maxrss <= UINT32_MAX
                         ? (uint32_t) ru->ru_maxrss : 0;
    }
    return clef_dec_write_all(CLEF_DEC_FD, &st, sizeof(st), NULL);
}


/* One item in a child of its own, watched until it ends; -1 when the
 * control socket is broken. */
static int
one(const clef_dec_request *rq, int item)
{
    struct rusage  ru;
    pid_t          pid = -1;
    int            nv[2], status, rc = 0;

    if (clef_sandbox_pair(nv) == 0) {
        pid = fork();
        rc = pid < 0 ? errno : 0;
        if (pid == 0) {
            close(nv[0]);
            child(rq, item, nv[1]);
        }
        close(nv[1]);
        if (pid < 0) {
            close(nv[0]);
        }
    } else {
        rc = errno;
    }
    close(item);
    if (report(CLEF_DEC_FORKED, pid < 0 ? 0 : pid, rc, NULL) != 0) {
        if (pid > 0) {
            close(nv[0]);
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
        }
        return -1;
    }
    if (pid < 0) {
        return 0;
    }
    if (clef_sandbox_watch(pid, nv[0], &status, &ru) != 0) {
        return -1;
    }
    return report(CLEF_DEC_EXITED, pid, status, &ru);
}


static int
serve(pid_t parent)
{
    clef_dec_hello    h = { CLEF_DEC_MAGIC, CLEF_DEC_VERSION,
                            sizeof(clef_dec_request),
                            sizeof(clef_dec_result) };
    clef_dec_request  rq;
    int               item, rc;

    /* gone with the engine's thread that started it, and never holding
     * what the engine had open (its sockets, the zone) */
    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    if (getppid() != parent) {
        return 0;
    }
    close_range(CLEF_DEC_FD + 1, ~0u, 0);
    signal(SIGPIPE, SIG_IGN);
    if (clef_dec_write_all(CLEF_DEC_FD, &h, sizeof(h), NULL) != 0) {
        return 1;
    }
    for ( ;; ) {
        rc = take(&rq, &item);
        if (rc <= 0) {
            return rc == 0 ? 0 : 1;
        }
        if (one(&rq, item) != 0) {
            return 1;
        }
    }
}


/* ---- --sandbox-check --------------------------------------------------- */

static pthread_mutex_t  held_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t   held_cond = PTHREAD_COND_INITIALIZER;
static int              held_go;


static void *
thread_main(void *arg)
{
    return arg;
}


/* A thread that lives until the probe lets them all go: the threads
 * probe has them all at once. */
static void *
held_main(void *arg)
{
    pthread_mutex_lock(&held_lock);
    while (!held_go) {
        pthread_cond_wait(&held_cond, &held_lock);
    }
    pthread_mutex_unlock(&held_lock);
    return arg;
}


/* A probe's line, when it is more than allowed / failed, to its parent
 * over the item's socket as a decode child's answer goes. */
static int
say(const char *line)
{
    return put(CLEF_DEC_FD, line, strlen(line)) == 0 ? PROBE_SAID : 0;
}


static int
probe_open(void)
{
    return fopen("/etc/hostname", "r") != NULL;
}


static int
probe_socket(void)
{
    return socket(AF_INET, SOCK_STREAM, 0) >= 0;
}


static int
probe_execve(void)
{
    return execl("/bin/true", "true", (char *) NULL) == 0;
}


static int
probe_fork(void)
{
    return fork() >= 0;
}


static int
probe_kill(void)
{
    return kill(getppid(), 0) == 0;
}


static int
probe_mmap_exec(void)
{
    return mmap(NULL, 4096, PROT_READ | PROT_EXEC,
                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) != MAP_FAILED;
}


static int
probe_thread(void)
{
    pthread_t  t;
    void      *ret;
    int        x;

    return pthread_create(&t, NULL, thread_main, &x) == 0
           && pthread_join(t, &ret) == 0 && ret == &x;
}


static int
probe_memory(void)
{
    void  *p = malloc(64 << 20);

    if (p != NULL) {
        memset(p, 1, 64 << 20);
    }
    return p != NULL;
}


/* PROBE_THREADS threads at once: CLEF_SANDBOX_THREADS of them start, the
 * rest fail with EAGAIN (the parent's answer). */
static int
probe_threads(void)
{
    static pthread_t  t[PROBE_THREADS];
    pthread_attr_t    at;
    char              line[160];
    int               i, rc, made = 0, again = 0, other = 0;

    pthread_attr_init(&at);
    pthread_attr_setstacksize(&at, 1 << 20);
    for (i = 0; i < PROBE_THREADS; i++) {
        rc = pthread_create(&t[made], &at, held_main, NULL);
        if (rc == 0) {
            made++;
        } else if (rc == EAGAIN) {
            again++;
        } else if (other == 0) {
            other = rc;
        }
    }
    pthread_mutex_lock(&held_lock);
    held_go = 1;
    pthread_cond_broadcast(&held_cond);
    pthread_mutex_unlock(&held_lock);
    for (i = 0; i < made; i++) {
        pthread_join(t[i], NULL);
    }
    snprintf(line, sizeof(line), "%d of %d created, %d failed with EAGAIN%s%s",
             made, PROBE_THREADS, again, other != 0 ? ", others with " : "",
             other != 0 ? strerrorname_np(other) : "");
    return say(line);
}


static int
probe_sigaction(void)
{
    struct sigaction  sa;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = SIG_IGN;
    return sigaction(SIGALRM, &sa, NULL) == 0;
}


/* stderr is a regular file here (probe()) */
static int
probe_write_file(void)
{
    return write(2, "x", 1) == 1;
}


static int
send_one(int fd)
{
    struct msghdr  m;
    struct iovec   iov;
    char           one = 'x';

    memset(&m, 0, sizeof(m));
    iov.iov_base = &one;
    iov.iov_len = 1;
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    return sendmsg(fd, &m, MSG_NOSIGNAL) == 1;
}


static int
probe_sendmsg_item(void)
{
    return send_one(CLEF_DEC_FD);
}


/* the listener's way out, closed once it has gone */
static int
probe_sendmsg_sandbox(void)
{
    return send_one(NOTIFY_FD);
}


static const struct {
    const char  *name;
    int        (*run)(void);    /* 1 it worked, 0 it failed (errno),
                                   PROBE_SAID */
}                probes[] = {
    { "thread", probe_thread }, { "memory", probe_memory },
    { "open", probe_open }, { "socket", probe_socket },
    { "execve", probe_execve }, { "fork", probe_fork },
    { "kill", probe_kill }, { "mmap-exec", probe_mmap_exec },
    { "threads", probe_threads }, { "sigaction", probe_sigaction },
    { "write-file", probe_write_file },
    { "sendmsg-item", probe_sendmsg_item },
    { "sendmsg-sandbox", probe_sendmsg_sandbox },
};


/* A probe's child: set up and sandboxed as a decode child is, then the
 * probe; its exit code says what it met: 1 it worked, PROBE_SAID, 10 +
 * errno it failed, 100 no sandbox, PROBE_NO_FILE.  Never returns. */
static void
probe_child(size_t i, int item, int notify)
{
    FILE  *f;
    char   why[160];
    int    rc;

    if (probes[i].run == probe_write_file) {
        f = tmpfile();
        if (f == NULL || dup2(fileno(f), 2) < 0) {
            _exit(PROBE_NO_FILE);
        }
    }
    settle(item, notify);
    if (clef_sandbox_enter(CLEF_DECODER_MAX_AS, 10, NOTIFY_FD, why,
                           sizeof(why)) != 0)
    {
        put(CLEF_DEC_FD, why, strlen(why));
        _exit(100);
    }
    errno = 0;
    rc = probes[i].run();
    _exit(rc != 0 ? rc : 10 + (errno < 90 ? errno : 90));
}


/* What probe i meets inside the sandbox, as a line. */
static void
probe(size_t i)
{
    const char    *name = probes[i].name;
    struct rusage  ru;
    ssize_t        n;
    pid_t          pid;
    char           said[256];
    int            sv[2], nv[2], status, code;

    fflush(stdout);
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
        printf("%s: cannot fork\n", name);
        return;
    }
    if (clef_sandbox_pair(nv) != 0) {
        printf("%s: cannot fork\n", name);
        close(sv[0]);
        close(sv[1]);
        return;
    }
    pid = fork();
    if (pid < 0) {
        printf("%s: cannot fork\n", name);
        close(sv[0]);
        close(sv[1]);
        close(nv[0]);
        close(nv[1]);
        return;
    }
    if (pid == 0) {
        close(sv[0]);
        close(nv[0]);
        probe_child(i, sv[1], nv[1]);
    }
    close(sv[1]);
    close(nv[1]);
    if (clef_sandbox_watch(pid, nv[0], &status, &ru) != 0) {
        printf("%s: cannot fork\n", name);
        close(sv[0]);
        return;
    }
    n = read(sv[0], said, sizeof(said) - 1);
    said[n > 0 ? n : 0] = '\0';
    close(sv[0]);
    code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    if (WIFSIGNALED(status)) {
        printf("%s: killed by %s\n", name, WTERMSIG(status) == SIGSYS
               ? "SIGSYS" : strsignal(WTERMSIG(status)));
    } else if (code == 1) {
        printf("%s: allowed\n", name);
    } else if (code == PROBE_SAID) {
        printf("%s: %s\n", name, said);
    } else if (code == 100) {
        printf("%s: the sandbox could not be entered (%s)\n", name, said);
    } else if (code == PROBE_NO_FILE) {
        printf("%s: cannot make its file\n", name);
    } else {
        printf("%s: failed with %s\n", name,
               code >= 10 && strerrorname_np(code - 10) != NULL
               ? strerrorname_np(code - 10) : "?");
    }
}


int
main(int argc, char **argv)
{
    size_t  i;

    if (argc == 3 && strcmp(argv[1], "--serve") == 0) {
        return serve((pid_t) strtol(argv[2], NULL, 10));
    }
    if (argc == 2 && strcmp(argv[1], "--sandbox-check") == 0) {
        for (i = 0; i < sizeof(probes) / sizeof(probes[0]); i++) {
            probe(i);
        }
        return 0;
    }
    fprintf(stderr, "usage: clef-decoder --serve PARENT_PID | "
            "--sandbox-check\n(the engine runs it: it decodes videos and "
            "audio in a sandbox, see README \"Video\")\n");
    return 2;
}
