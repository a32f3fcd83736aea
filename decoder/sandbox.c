/*
 * The decode child's sandbox (see sandbox.h).
 */
#include "sandbox.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "media/decoder_wire.h"

#define CPU_GRACE  5          /* seconds from SIGXCPU to SIGKILL */

/* glibc's SIGSETXID (its __SIGRTMIN + 1, below the SIGRTMIN programs
 * see): the first pthread_create() of a process installs its handler */
#define GLIBC_SIGSETXID  33

/* libseccomp's API level that has listeners (5) and kernels that take
 * them with the filter's other flags (6: Linux 5.7, which also answers
 * SECCOMP_USER_NOTIF_FLAG_CONTINUE, 5.5) */
#define NOTIFY_API  6

/* how often a parent without a pidfd (before Linux 5.3) looks whether
 * its child has ended, in milliseconds */
#define WATCH_MS  100

/* what a decode needs, on what it already holds */
static const int  allowed[] = {
    SCMP_SYS(read), SCMP_SYS(readv), SCMP_SYS(write), SCMP_SYS(writev),
    SCMP_SYS(close), SCMP_SYS(fstat), SCMP_SYS(munmap), SCMP_SYS(mremap),
    SCMP_SYS(brk), SCMP_SYS(madvise), SCMP_SYS(futex),
    SCMP_SYS(set_robust_list), SCMP_SYS(rseq), SCMP_SYS(rt_sigprocmask),
    SCMP_SYS(rt_sigreturn), SCMP_SYS(sched_yield),
    SCMP_SYS(sched_getaffinity), SCMP_SYS(getpid), SCMP_SYS(gettid),
    SCMP_SYS(clock_gettime), SCMP_SYS(clock_getres), SCMP_SYS(gettimeofday),
    SCMP_SYS(clock_nanosleep), SCMP_SYS(nanosleep), SCMP_SYS(getrandom),
    SCMP_SYS(exit), SCMP_SYS(exit_group),
};

/* what a library may try and must see fail, with the errno it gets */
static const struct {
    int  nr;
    int  errno_value;
}                 failing[] = {
    { SCMP_SYS(open), EACCES }, { SCMP_SYS(openat), EACCES },
    { SCMP_SYS(stat), EACCES }, { SCMP_SYS(lstat), EACCES },
    { SCMP_SYS(newfstatat), EACCES }, { SCMP_SYS(statx), EACCES },
    { SCMP_SYS(access), EACCES }, { SCMP_SYS(faccessat), EACCES },
    { SCMP_SYS(readlink), EACCES }, { SCMP_SYS(readlinkat), EACCES },
    { SCMP_SYS(ioctl), ENOTTY }, { SCMP_SYS(clone3), ENOSYS },
    /* glibc's qsort() asks the memory size before it sorts a large
     * array (a long clip's timestamps), and copes with a refusal */
    { SCMP_SYS(sysinfo), EPERM },
};


static int
limit(int resource, rlim_t soft, rlim_t hard)
{
    struct rlimit  r;

    r.rlim_cur = soft;
    r.rlim_max = hard;
    return setrlimit(resource, &r);
}


static int
build(scmp_filter_ctx f, int notify)
{
    size_t  i;
    int     rc = 0;

    for (i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++) {
        rc |= seccomp_rule_add(f, SCMP_ACT_ALLOW, allowed[i], 0);
    }
    for (i = 0; i < sizeof(failing) / sizeof(failing[0]); i++) {
        rc |= seccomp_rule_add(f, SCMP_ACT_ERRNO(failing[i].errno_value),
                               failing[i].nr, 0);
    }
    /* memory, never executable: no code can be brought in */
    rc |= seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(mmap), 1,
                           SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0));
    rc |= seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(mprotect), 1,
                           SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0));
    /* threads of this process (the decoders'), never another process,
     * each one asked of the parent (clef_sandbox_watch); CONTINUE is safe
     * here: the flags the filter checked are a register, not memory the
     * child could change after the check */
    rc |= seccomp_rule_add(f, SCMP_ACT_NOTIFY, SCMP_SYS(clone), 1,
                           SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD,
                                   CLONE_THREAD));
    /* what glibc's first thread start installs */
    rc |= seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(rt_sigaction), 1,
                           SCMP_A0(SCMP_CMP_EQ, GLIBC_SIGSETXID));
    /* the listener's one way out, on the one descriptor it takes */
    rc |= seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(sendmsg), 1,
                           SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t) notify));
    /* a thread's name; abort() signals its own process only */
    rc |= seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(prctl), 1,
                           SCMP_A0(SCMP_CMP_EQ, PR_SET_NAME));
    rc |= seccomp_rule_add(f, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(prctl), 1,
                           SCMP_A0(SCMP_CMP_NE, PR_SET_NAME));
    rc |= seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(tgkill), 1,
                           SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t) getpid()));
    return rc;
}


int
clef_sandbox_pair(int pair[2])
{
    return socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair);
}


/* Everything but the filter: a child that fails here must not decode. */
static int
limits(uint64_t max_as, double cpu_seconds)
{
    rlim_t  cpu = (rlim_t) cpu_seconds + 1;

    /* a decoder writes no file: a write to one (stderr redirected to a
     * file included) fails with EFBIG rather than killing the child */
    if (signal(SIGXFSZ, SIG_IGN) == SIG_ERR) {
        return -1;
    }
    return (max_as > 0 && limit(RLIMIT_AS, max_as, max_as) != 0)
           || limit(RLIMIT_CPU, cpu, cpu + CPU_GRACE) != 0
           || limit(RLIMIT_CORE, 0, 0) != 0
           || limit(RLIMIT_FSIZE, 0, 0) != 0
           || limit(RLIMIT_NOFILE, CLEF_SANDBOX_NOFILE,
                    CLEF_SANDBOX_NOFILE) != 0
           || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
           || prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0 ? -1 : 0;
}


int
clef_sandbox_enter(uint64_t max_as, double cpu_seconds, int notify,
    char *why, size_t size)
{
    scmp_filter_ctx  f;
    int              rc, fd = -1, hold;

    if (limits(max_as, cpu_seconds) != 0) {
        snprintf(why, size, "limits: %s", strerror(errno));
        close(notify);
        return -1;
    }
    /* without a listener its threads could not be bounded */
    if (seccomp_api_get() < NOTIFY_API) {
        snprintf(why, size, "seccomp: this kernel gives no listener to "
                 "bound the decoder's threads (Linux 5.7 or later is "
                 "needed)");
        close(notify);
        return -1;
    }
    f = seccomp_init(SCMP_ACT_KILL_PROCESS);
    if (f == NULL) {
        snprintf(why, size, "seccomp_init failed");
        close(notify);
        return -1;
    }
    /* libseccomp takes a listener at descriptor 0 for none (a decode
     * child has no stdin): 0 is held while the filter loads */
    hold = dup(notify);
    rc = build(f, notify);
    if (rc == 0) {
        rc = seccomp_load(f);
    }
    if (hold >= 0) {
        close(hold);
    }
    if (rc == 0) {
        fd = seccomp_notify_fd(f);
        rc = fd >= 0 ? 0 : fd;
    }
    seccomp_release(f);
    if (rc != 0) {
        snprintf(why, size, "seccomp: %s", strerror(-rc));
        close(notify);
        return -1;
    }
    /* the filter holds from here: the listener goes to the parent, and
     * neither it nor its way out stays in the child */
    rc = clef_dec_send_fd(notify, "L", 1, fd);
    if (rc != 0) {
        snprintf(why, size, "seccomp: its listener cannot reach the "
                 "parent: %s", strerror(errno));
    }
    close(fd);
    close(notify);
    return rc;
}


/* The listener the child sent on notify; -1 when it ended without. */
static int
take_listener(int notify)
{
    char  one;
    int   fd;

    return clef_dec_recv_fd(notify, &one, 1, MSG_DONTWAIT, &fd) == 1
           ? fd : -1;
}


/* One thread creation of the child answered: it goes on while the child
 * has made fewer than CLEF_SANDBOX_THREADS, else fails with EAGAIN.  -1
 * when listener is not one (the child then gets ENOSYS once it is
 * closed: bounded all the same). */
static int
answer(int listener, struct seccomp_notif *req,
    struct seccomp_notif_resp *resp, unsigned *made)
{
    /* the kernel takes only a zeroed buffer */
    memset(req, 0, sizeof(*req));
    if (seccomp_notify_receive(listener, req) != 0) {
        /* ENOENT: the thread that asked was killed meanwhile */
        return errno == ENOENT ? 0 : -1;
    }
    memset(resp, 0, sizeof(*resp));
    resp->id = req->id;
    if (req->data.nr == SCMP_SYS(clone) && *made < CLEF_SANDBOX_THREADS) {
        (*made)++;
        resp->flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
    } else {
        resp->error = -EAGAIN;
    }
    if (seccomp_notify_respond(listener, resp) != 0) {
        return errno == ENOENT ? 0 : -1;
    }
    return 0;
}


/* 1 once child pid has ended (not reaped yet), else 0. */
static int
ended(pid_t pid)
{
    siginfo_t  si;

    memset(&si, 0, sizeof(si));
    if (waitid(P_PID, (id_t) pid, &si, WEXITED | WNOHANG | WNOWAIT) != 0) {
        return errno != EINTR;
    }
    return si.si_pid == pid;
}


int
clef_sandbox_watch(pid_t pid, int notify, int *status, struct rusage *ru)
{
    struct seccomp_notif       *req = NULL;
    struct seccomp_notif_resp  *resp = NULL;
    struct pollfd               p[2];
    unsigned                    made = 0;
    int                         fd = notify, listener = -1, pidfd, rc;

    pidfd = (int) syscall(SYS_pidfd_open, pid, 0);
    if (seccomp_notify_alloc(&req, &resp) != 0) {
        /* the child's threads get ENOSYS once notify is closed */
        close(fd);
        fd = -1;
    }
    /* fd: the socket until the listener comes, then the listener */
    while (!ended(pid)) {
        p[0].fd = fd;
        p[0].events = POLLIN;
        p[0].revents = 0;
        p[1].fd = pidfd;
        p[1].events = POLLIN;
        p[1].revents = 0;
        rc = poll(p, 2, pidfd >= 0 ? -1 : WATCH_MS);
        if (rc <= 0 || p[0].revents == 0) {
            continue;
        }
        if (listener < 0) {
            listener = take_listener(fd);
            close(fd);
            fd = listener;
        } else if (answer(listener, req, resp, &made) != 0) {
            close(listener);
            fd = -1;
        }
    }
    if (fd >= 0) {
        close(fd);
    }
    if (pidfd >= 0) {
        close(pidfd);
    }
    seccomp_notify_free(req, resp);
    while (wait4(pid, status, 0, ru) < 0) {
        if (errno != EINTR) {
            return -1;
        }
    }
    return 0;
}
