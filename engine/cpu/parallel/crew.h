/*
 * A crew: a fixed set of threads that sleep until they are given a job,
 * all run it, and sleep again.  The calling thread is member 0 and takes
 * part in every run, so a crew of N starts N - 1 pthreads.  Every member
 * blocks every signal: in the nginx engine process signals must reach the
 * thread that handles them, never a compute thread.
 *
 * The one thread primitive of the CPU backend: the pool (pool.h) runs its
 * parallel-for loops on a crew, each member taking chunks of the range;
 * the tensor-parallel ranks (ranks.h) run one SPMD function per member.
 *
 * One run at a time; clef_cpu_crew_run() returns when every member's call
 * has returned.  What the caller wrote before the run is visible to every
 * member inside it, and what members wrote is visible to the caller after
 * it (the run's mutex orders both).
 */
#ifndef CLEF_CPU_CREW_H
#define CLEF_CPU_CREW_H

#include "base/error.h"

typedef struct clef_cpu_crew clef_cpu_crew;

/* Runs on every member: 0 on the calling thread, 1 .. size - 1 on the
 * crew's own threads. */
typedef void (*clef_cpu_crew_fn)(void *ctx, int member);

/* size >= 1; `what` names the threads in an error ("worker", "rank"). */
clef_cpu_crew *clef_cpu_crew_create(int size, const char *what,
    clef_error *err);
int            clef_cpu_crew_size(const clef_cpu_crew *c);
void           clef_cpu_crew_run(clef_cpu_crew *c, clef_cpu_crew_fn fn,
    void *ctx);
void           clef_cpu_crew_destroy(clef_cpu_crew *c);

#endif
