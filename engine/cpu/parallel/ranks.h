/*
 * The rank threads of a tensor-parallel CPU backend: SPMD, one thread per
 * rank, each running the same function with its own rank number.  The
 * calling thread is rank 0 (so the engine's watchdog, which counts the
 * progress rank 0 reports from the executor's thread, sees it), ranks
 * 1 .. size - 1 are threads of their own that sleep between runs: a crew
 * (crew.h), as the pool's workers are, whose threads block every signal.
 *
 * One run at a time; clef_cpu_ranks_run() returns when every rank's
 * function has returned.  The function must not wait for a rank that
 * failed: the CPU backend's ranks abort their communicator on an error
 * (comm_cpu.h), which releases the others.
 */
#ifndef CLEF_CPU_RANKS_H
#define CLEF_CPU_RANKS_H

#include "base/error.h"

typedef struct clef_cpu_ranks clef_cpu_ranks;

/* fn's return: 0 or -1 (then err filled, err being the rank's own). */
typedef int (*clef_cpu_rank_fn)(void *ctx, int rank, clef_error *err);

clef_cpu_ranks *clef_cpu_ranks_create(int size, clef_error *err);

/* Runs fn(ctx, r, ...) on every rank r; 0 when every rank returned 0, else
 * -1 with err the error of the lowest failing rank. */
int             clef_cpu_ranks_run(clef_cpu_ranks *r, clef_cpu_rank_fn fn,
    void *ctx, clef_error *err);

void            clef_cpu_ranks_destroy(clef_cpu_ranks *r);

#endif
