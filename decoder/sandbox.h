/*
 * The sandbox a decode child enters before it reads its file (see
 * engine/media/decoder.h): resource limits, no_new_privs and a seccomp
 * filter (libseccomp) that allows what FFmpeg's demuxers, decoders and
 * their threads need on memory and descriptors already open, and nothing
 * that reaches outside the process:
 *
 *   allowed   read, readv, write, writev, close, fstat; mmap and mprotect
 *             without PROT_EXEC, munmap, mremap, brk, madvise; futex,
 *             set_robust_list, rseq, clone with CLONE_THREAD (threads,
 *             never a process), rt_sigprocmask, rt_sigreturn,
 *             sched_yield, sched_getaffinity, getpid, gettid, the clocks
 *             and sleeps, getrandom, prctl(PR_SET_NAME), tgkill of its
 *             own process (abort), exit, exit_group
 *   failing   open, openat, stat and the like (EACCES), ioctl (ENOTTY),
 *             clone3 (ENOSYS: glibc falls back to clone), other prctl
 *             and sysinfo (EPERM; glibc's qsort asks it): a library
 *             that probes the system sees a refusal
 *   killing   everything else: socket, connect, execve, ptrace, kill,
 *             a clone that would make a process, ...
 */
#ifndef CLEF_DECODER_SANDBOX_H
#define CLEF_DECODER_SANDBOX_H

#include <stddef.h>
#include <stdint.h>

/* Limits (address space max_as bytes, 0: none; cpu_seconds of CPU time,
 * then SIGXCPU; no core files), then the filter.  -1 with why filled when
 * the kernel refuses it: a child must then not decode. */
int clef_sandbox_enter(uint64_t max_as, double cpu_seconds, char *why,
    size_t size);

#endif
