/*
 * clef-decoder: the engine's decode process (engine/media/decoder.h says
 * why it exists and what the engine does with it).  The only program of
 * ngx_clef that links FFmpeg besides the CLI and the tests; it decodes
 * videos (video_process.h) and audio clips (audio_decode.h).
 *
 *   clef-decoder --serve PARENT_PID    what the engine runs: fd 3 is the
 *                                      control socket (decoder_wire.h)
 *   clef-decoder --sandbox-check       enters the sandbox in a child per
 *                                      probe and prints what each system
 *                                      call met (t/unit/test_decoder.c)
 *
 * The serving process handles no untrusted byte: it reads fixed-size
 * requests from the engine, forks, and reports how its children end.  A
 * child drops every descriptor but its item's socket and stderr, enters
 * the sandbox (sandbox.h), and only then reads the file and decodes it.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "media/audio_decode.h"
#include "media/decoder.h"
#include "media/decoder_wire.h"
#include "media/video_process.h"
#include "sandbox.h"


/* All of buf to fd with write() alone: the only way out of a sandboxed
 * child (SIGPIPE is ignored there). */
static int
put(int fd, const void *buf, size_t len)
{
    const char  *p = buf;
    ssize_t      n;

    while (len > 0) {
        n = write(fd, p, len);
        if (n < 0 && errno == EINTR) {
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


/* A decode child: never returns. */
static void
child(const clef_dec_request *rq, int item)
{
    clef_dec_result   r;
    clef_video        v;
    uint8_t          *data;
    float            *samples = NULL;
    const void       *payload = NULL;
    int64_t           n = 0;
    char              why[160];
    int               rc;

    /* the item's socket takes the control socket's place; nothing else
     * but stderr stays open */
    if (dup2(item, CLEF_DEC_FD) < 0) {
        _exit(3);
    }
    close_range(CLEF_DEC_FD + 1, ~0u, 0);
    close(0);
    close(1);
    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    signal(SIGPIPE, SIG_IGN);

    memset(&r, 0, sizeof(r));
    r.magic = CLEF_DEC_MAGIC;
    /* CPU time: twice the item's decoding budget */
    if (clef_sandbox_enter(CLEF_DECODER_MAX_AS, 2 * (rq->kind
                           == CLEF_MEDIA_AUDIO ? rq->audio.max_decode_seconds
                                               : rq->limits.max_decode_seconds),
                           why, sizeof(why)) != 0)
    {
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
    if (clef_dec_read_all(CLEF_DEC_FD, data, (size_t) rq->len) != 0) {
        _exit(5);
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


/* One request and the item's socket from the engine; 0 at the end of the
 * control socket, -1 on a broken one. */
static int
take(clef_dec_request *rq, int *item)
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
    iov.iov_base = rq;
    iov.iov_len = sizeof(*rq);
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = u.buf;
    m.msg_controllen = sizeof(u.buf);
    do {
        n = recvmsg(CLEF_DEC_FD, &m, MSG_CMSG_CLOEXEC | MSG_WAITALL);
    } while (n < 0 && errno == EINTR);
    if (n == 0) {
        return 0;
    }
    c = CMSG_FIRSTHDR(&m);
    if (n != (ssize_t) sizeof(*rq) || c == NULL || c->cmsg_type != SCM_RIGHTS
        || c->cmsg_len != CMSG_LEN(sizeof(int)))
    {
        return -1;
    }
    memcpy(item, CMSG_DATA(c), sizeof(int));
    return rq->magic == CLEF_DEC_MAGIC
           && (rq->kind == CLEF_MEDIA_VIDEO || rq->kind == CLEF_MEDIA_AUDIO)
           && rq->len <= CLEF_DEC_MAX_FILE ? 1 : -1;
}


static int
report(uint32_t what, pid_t pid, int status, const struct rusage *ru)
{
    clef_dec_status  st = { CLEF_DEC_MAGIC, what, (int32_t) pid, status,
                            0, 0 };

    if (ru != NULL) {
        st.cpu_ms = (uint32_t) (ru->ru_utime.tv_sec * 1000
                                + ru->ru_utime.tv_usec / 1000
                                + ru->ru_stime.tv_sec * 1000
                                + ru->ru_stime.tv_usec / 1000);
        st.max_rss_kb = (uint32_t) ru->ru_maxrss;
    }

    return clef_dec_write_all(CLEF_DEC_FD, &st, sizeof(st));
}


static int
serve(pid_t parent)
{
    clef_dec_hello    h = { CLEF_DEC_MAGIC, CLEF_DEC_VERSION,
                            sizeof(clef_dec_request),
                            sizeof(clef_dec_result) };
    clef_dec_request  rq;
    struct rusage     ru;
    pid_t             pid;
    int               item, status, rc;

    /* gone with the engine's thread that started it, and never holding
     * what the engine had open (its sockets, the zone) */
    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    if (getppid() != parent) {
        return 0;
    }
    close_range(CLEF_DEC_FD + 1, ~0u, 0);
    signal(SIGPIPE, SIG_IGN);
    if (clef_dec_write_all(CLEF_DEC_FD, &h, sizeof(h)) != 0) {
        return 1;
    }
    for ( ;; ) {
        rc = take(&rq, &item);
        if (rc <= 0) {
            return rc == 0 ? 0 : 1;
        }
        pid = fork();
        if (pid == 0) {
            child(&rq, item);
        }
        close(item);
        if (report(CLEF_DEC_FORKED, pid < 0 ? 0 : pid, pid < 0 ? errno : 0,
                   NULL) != 0)
        {
            return 1;
        }
        if (pid < 0) {
            continue;
        }
        while (wait4(pid, &status, 0, &ru) < 0) {
            if (errno != EINTR) {
                return 1;
            }
        }
        if (report(CLEF_DEC_EXITED, pid, status, &ru) != 0) {
            return 1;
        }
    }
}


/* ---- --sandbox-check --------------------------------------------------- */

static void *
thread_main(void *arg)
{
    return arg;
}


/* What one probe meets inside the sandbox, as a line. */
static void
probe(const char *name)
{
    char   why[160];
    pid_t  pid;
    int    status, rc = 0;
    void  *p, *ret;
    pthread_t  t;

    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        if (clef_sandbox_enter(CLEF_DECODER_MAX_AS, 10, why,
                               sizeof(why)) != 0)
        {
            _exit(100);
        }
        errno = 0;
        if (strcmp(name, "open") == 0) {
            rc = (int) (fopen("/etc/hostname", "r") != NULL);
        } else if (strcmp(name, "socket") == 0) {
            rc = socket(AF_INET, SOCK_STREAM, 0) >= 0;
        } else if (strcmp(name, "execve") == 0) {
            rc = execl("/bin/true", "true", (char *) NULL) == 0;
        } else if (strcmp(name, "fork") == 0) {
            rc = fork() >= 0;
        } else if (strcmp(name, "kill") == 0) {
            rc = kill(getppid(), 0) == 0;
        } else if (strcmp(name, "mmap-exec") == 0) {
            p = mmap(NULL, 4096, PROT_READ | PROT_EXEC,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            rc = p != MAP_FAILED;
        } else if (strcmp(name, "thread") == 0) {
            rc = pthread_create(&t, NULL, thread_main, &status) == 0
                 && pthread_join(t, &ret) == 0 && ret == &status;
        } else if (strcmp(name, "memory") == 0) {
            p = malloc(64 << 20);
            rc = p != NULL;
            if (p != NULL) {
                memset(p, 1, 64 << 20);
            }
        }
        /* exit code: 1 it worked, 0 it failed (errno), by its number */
        _exit(rc ? 1 : 10 + (errno < 90 ? errno : 90));
    }
    if (pid < 0 || waitpid(pid, &status, 0) < 0) {
        printf("%s: cannot fork\n", name);
        return;
    }
    if (WIFSIGNALED(status)) {
        printf("%s: killed by %s\n", name, WTERMSIG(status) == SIGSYS
               ? "SIGSYS" : strsignal(WTERMSIG(status)));
    } else if (WEXITSTATUS(status) == 1) {
        printf("%s: allowed\n", name);
    } else if (WEXITSTATUS(status) == 100) {
        printf("%s: the sandbox could not be entered\n", name);
    } else {
        printf("%s: failed with %s\n", name,
               strerrorname_np(WEXITSTATUS(status) - 10) != NULL
               ? strerrorname_np(WEXITSTATUS(status) - 10) : "?");
    }
}


int
main(int argc, char **argv)
{
    static const char *const  probes[] = {
        "thread", "memory", "open", "socket", "execve", "fork", "kill",
        "mmap-exec"
    };
    size_t                    i;

    if (argc == 3 && strcmp(argv[1], "--serve") == 0) {
        return serve((pid_t) strtol(argv[2], NULL, 10));
    }
    if (argc == 2 && strcmp(argv[1], "--sandbox-check") == 0) {
        for (i = 0; i < sizeof(probes) / sizeof(probes[0]); i++) {
            probe(probes[i]);
        }
        return 0;
    }
    fprintf(stderr, "usage: clef-decoder --serve PARENT_PID | "
            "--sandbox-check\n(the engine runs it: it decodes videos and "
            "audio in a sandbox, see README \"Video\")\n");
    return 2;
}
