/*
 * The sandbox a decode child enters before it reads its file (see
 * engine/media/decoder.h): resource limits, no_new_privs and a seccomp
 * filter (libseccomp) that allows what FFmpeg's demuxers, decoders and
 * their threads need on memory and descriptors already open, and nothing
 * that reaches outside the process:
 *
 *   allowed   read, readv, write, writev, close, fstat; mmap and mprotect
 *             without PROT_EXEC, munmap, mremap, brk, madvise; futex,
 *             set_robust_list, rseq, rt_sigprocmask, rt_sigreturn,
 *             sched_yield, sched_getaffinity, getpid, gettid, the clocks
 *             and sleeps, getrandom, prctl(PR_SET_NAME), tgkill of its
 *             own process (abort), exit, exit_group;
 *             rt_sigaction of signal 33 only: glibc's SIGSETXID, whose
 *             handler its first pthread_create() in a process installs
 *             (a process whose libraries started no thread before the
 *             fork: OMP_NUM_THREADS=1, OPENBLAS_NUM_THREADS=1, one CPU);
 *             sendmsg on the one descriptor the listener goes out by
 *             (below), which the child then closes
 *   asked     clone with CLONE_THREAD (a thread, never a process): the
 *             filter returns SCMP_ACT_NOTIFY and the parent that waits
 *             for the child answers (clef_sandbox_watch): the clone goes
 *             on for the child's first CLEF_SANDBOX_THREADS, and fails
 *             with EAGAIN after, whoever the process runs as
 *   failing   open, openat, stat and the like (EACCES), ioctl (ENOTTY:
 *             the child cannot answer its own notifications either),
 *             clone3 (ENOSYS: glibc falls back to clone, whose flags the
 *             filter can see), other prctl and sysinfo (EPERM; glibc's
 *             qsort asks it): a library that probes the system sees a
 *             refusal
 *   killing   everything else: socket, connect, execve, ptrace, kill,
 *             another rt_sigaction, a clone that would make a process, ...
 *
 * Limits: address space (CLEF_DECODER_MAX_AS), CPU time (its decode
 * budget: SIGXCPU at the soft limit, SIGKILL at the hard one), no core
 * files, no file written (RLIMIT_FSIZE 0, SIGXFSZ ignored: a write to a
 * regular file, stderr redirected to one included, fails with EFBIG) and
 * CLEF_SANDBOX_NOFILE descriptors.
 *
 * Threads are counted by the parent, not by RLIMIT_NPROC: root ignores
 * that limit, and it counts every process of the uid.  The listener goes
 * to the parent over a socketpair made before the fork; the filter allows
 * sendmsg on that one descriptor, which the child closes at once, and no
 * call the filter allows makes a descriptor, so its number cannot come
 * back.  A kernel that gives no listener (before Linux 5.7, some container
 * runtimes) makes clef_sandbox_enter() fail: that child decodes nothing
 * and says why, rather than running unbounded.
 */
#ifndef CLEF_DECODER_SANDBOX_H
#define CLEF_DECODER_SANDBOX_H

#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>

/* Thread creations a child may make in its life.  A video's decoder
 * makes limits.threads (CLEF_VIDEO_THREADS, 2: an H.264 clip's child makes
 * 2 in all), a filter graph as many at most; an audio clip decodes on the
 * child's own thread (audio_decode.c: thread_count 1).  64 leaves room
 * for that many times over and stops a file that makes a decoder start
 * threads without end. */
#define CLEF_SANDBOX_THREADS  64

/* Descriptors: stderr, the item's socket, the sandbox's, the listener a
 * moment (sandbox.c) */
#define CLEF_SANDBOX_NOFILE   8

/* Before the fork: the socketpair the child's listener goes to its
 * parent by; pair[0] is the parent's, pair[1] the child's.  -1 with
 * errno. */
int  clef_sandbox_pair(int pair[2]);

/* In the child: limits (address space max_as bytes, 0: none; cpu_seconds
 * of CPU time, then SIGXCPU), then the filter, whose listener goes out on
 * notify (the child's end of the pair, closed here).  -1 with why filled
 * when the kernel refuses any of it: the child must then not decode. */
int  clef_sandbox_enter(uint64_t max_as, double cpu_seconds, int notify,
    char *why, size_t size);

/* In the parent: answers child pid's thread creations (its listener comes
 * on notify, the parent's end, closed here) until it ends, then reaps it
 * into *status and *ru as wait4() does.  -1 with errno when it cannot be
 * waited for. */
int  clef_sandbox_watch(pid_t pid, int notify, int *status,
    struct rusage *ru);

#endif
