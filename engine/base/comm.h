/*
 * A communicator: the collectives tensor parallelism needs over the ranks
 * of a replica, an all-reduce (sum) and, optionally, an all-gather.  The CPU backend's rank
 * threads implement it with shared memory (engine/cpu/parallel/comm_cpu.c); the
 * CUDA backend implements it over NCCL (cuda/comm_nccl.c).  The engine and
 * the sharded forward see only this interface.
 *
 * Calling convention, which both kinds of driver satisfy:
 *   - SPMD: one thread per rank (the CPU backend) calls all_reduce with its
 *     own rank; the call returns when every rank's buffer holds the sum.
 *   - one thread driving every rank (the CUDA executor over its devices)
 *     brackets the ranks' calls in group_begin / group_end; the calls only
 *     enqueue work on each rank's stream, and the sum is there once each
 *     stream has run it.
 * Every rank ends with the same bits: the sum is taken in one fixed order
 * (the CPU communicator adds rank 0, 1, ... in that order whatever thread
 * arrives first), so a sharded forward is as deterministic as an unsharded
 * one.
 */
#ifndef CLEF_COMM_H
#define CLEF_COMM_H

#include <stddef.h>

#include "base/error.h"

typedef enum {
    CLEF_COMM_F32 = 0,
    CLEF_COMM_BF16
} clef_comm_dtype;

typedef struct clef_comm  clef_comm;

typedef struct {
    const char  *name;                       /* "cpu", "nccl" */

    /* In place: buf (n elements of dtype, on the rank's device) becomes the
     * element-wise sum of every rank's buf.  stream: the rank's CUDA
     * stream, NULL on the CPU. */
    int        (*all_reduce_sum)(clef_comm *c, int rank, void *buf, size_t n,
                                 clef_comm_dtype dtype, void *stream,
                                 clef_error *err);

    /* Around the calls of one thread that drives several ranks; NULL where
     * not needed. */
    int        (*group_begin)(clef_comm *c, clef_error *err);
    int        (*group_end)(clef_comm *c, clef_error *err);

    void       (*destroy)(clef_comm *c);

    /* In place: buf holds size * n elements of dtype, the rank's own n at
     * buf + rank * n; on return every rank's buf holds every rank's n
     * there, copied bit for bit.  The CPU backbone gathers the segment
     * partials of a row-parallel product with it, so that each rank sums
     * the same values in the same order (docs/design/precision.md); a
     * sum would do as well but for the sign of a zero.  NULL where not
     * implemented (the NCCL communicator): the caller then zeroes the
     * other slots and sums them with all_reduce_sum. */
    int        (*all_gather)(clef_comm *c, int rank, void *buf, size_t n,
                             clef_comm_dtype dtype, void *stream,
                             clef_error *err);
} clef_comm_ops;

struct clef_comm {
    const clef_comm_ops  *ops;
    int                   size;              /* ranks */
};

#endif
