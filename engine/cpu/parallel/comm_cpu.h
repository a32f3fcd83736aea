/*
 * The CPU backend's communicator (comm.h): rank threads of one process
 * all-reduce through shared memory.
 *
 * all_reduce_sum waits until every rank has arrived with its buffer, then
 * each rank adds one slice of the elements, reading the buffers of ranks
 * 0, 1, ..., size - 1 in that order, and writes the sum into every rank's
 * buffer; a second barrier keeps the buffers alive until every slice is
 * written.  The order of the additions is fixed whatever thread comes
 * first and whichever rank sums which slice, so every rank ends with the
 * same bits on every run.  all_gather, likewise between two barriers,
 * has each rank copy the other ranks' slots out of their buffers.
 *
 * Progress: a rank that fails outside a collective (out of memory, a bad
 * batch) calls clef_comm_cpu_abort(); every rank waiting, and every rank
 * that arrives later, returns -1 at once instead of waiting for a rank
 * that will never come.  The driver clears the abort with
 * clef_comm_cpu_reset() once no rank is inside the communicator (between
 * forwards).
 */
#ifndef CLEF_CPU_COMM_CPU_H
#define CLEF_CPU_COMM_CPU_H

#include "base/comm.h"
#include "base/error.h"

/* A communicator for size ranks; NULL (err filled) when out of memory. */
clef_comm *clef_comm_cpu_create(int size, clef_error *err);

/* Releases every rank waiting in, or later arriving at, a collective with
 * an error.  Any thread may call it, any number of times. */
void       clef_comm_cpu_abort(clef_comm *c);

/* Clears an abort and any half-finished round; only while no rank is
 * inside a collective. */
void       clef_comm_cpu_reset(clef_comm *c);

/* Seconds rank spent inside all_reduce_sum and all_gather, waiting included, since the
 * last clef_comm_cpu_reset_time(). */
double     clef_comm_cpu_seconds(const clef_comm *c, int rank);
void       clef_comm_cpu_reset_time(clef_comm *c);

#endif
