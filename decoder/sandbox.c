/*
 * The decode child's sandbox (see sandbox.h).
 */
#include "sandbox.h"

#include <errno.h>
#include <sched.h>
#include <seccomp.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#define CPU_GRACE  5          /* seconds from SIGXCPU to SIGKILL */

/* what a decode needs, on what it already holds */
static const int  allowed[] = {
    SCMP_SYS(read), SCMP_SYS(readv), SCMP_SYS(write), SCMP_SYS(writev),
    SCMP_SYS(close), SCMP_SYS(fstat), SCMP_SYS(munmap), SCMP_SYS(mremap),
    SCMP_SYS(brk), SCMP_SYS(madvise), SCMP_SYS(futex),
    SCMP_SYS(set_robust_list), SCMP_SYS(rseq), SCMP_SYS(rt_sigprocmask),
    SCMP_SYS(rt_sigreturn), SCMP_SYS(rt_sigaction), SCMP_SYS(sched_yield),
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
build(scmp_filter_ctx f)
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
    /* threads of this process (the decoders'), never another process */
    rc |= seccomp_rule_add(f, SCMP_ACT_ALLOW, SCMP_SYS(clone), 1,
                           SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD,
                                   CLONE_THREAD));
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
clef_sandbox_enter(uint64_t max_as, double cpu_seconds, char *why,
    size_t size)
{
    scmp_filter_ctx  f;
    rlim_t           cpu = (rlim_t) cpu_seconds + 1;
    int              rc;

    if ((max_as > 0 && limit(RLIMIT_AS, max_as, max_as) != 0)
        || limit(RLIMIT_CPU, cpu, cpu + CPU_GRACE) != 0
        || limit(RLIMIT_CORE, 0, 0) != 0
        || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
        || prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0)
    {
        snprintf(why, size, "limits: %s", strerror(errno));
        return -1;
    }
    f = seccomp_init(SCMP_ACT_KILL_PROCESS);
    if (f == NULL) {
        snprintf(why, size, "seccomp_init failed");
        return -1;
    }
    rc = build(f);
    if (rc == 0) {
        rc = seccomp_load(f);
    }
    seccomp_release(f);
    if (rc != 0) {
        snprintf(why, size, "seccomp: %s", strerror(-rc));
        return -1;
    }
    return 0;
}
