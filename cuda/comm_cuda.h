/*
 * The CUDA backend's communicators (engine/base/comm.h) for the ranks of
 * one replica, all driven by the replica's executor thread:
 *
 *   nccl         comm_nccl.c: one NCCL communicator per device from
 *                ncclCommInitAll; group_begin/end are ncclGroupStart/End
 *                and all_reduce_sum is an in-place ncclAllReduce on the
 *                rank's stream.  Devices must be distinct (NCCL refuses,
 *                or hangs on, two ranks of one device).
 *   same-device  comm_same.c: every rank's buffers on one device (ranks are
 *                logical shards of one GPU, for tests and the benchmark):
 *                group_end sums the ranks' buffers with one kernel in rank
 *                order, with events ordering the ranks' streams around it.
 *
 * Both accept only the one-thread convention of comm.h: several ranks'
 * calls bracketed by group_begin / group_end (one call per rank per
 * group); a lone rank (size 1) may also call outside a group.
 *
 * Errors met while enqueueing or running collectives leave the replica's
 * devices in an unknown state: they are reported as "device_fault" (503),
 * so that the engine closes and reopens this replica alone, like a sticky
 * CUDA error.
 */
#ifndef CLEF_CUDA_COMM_H
#define CLEF_CUDA_COMM_H

#include "base/comm.h"

typedef struct cuda_comm  cuda_comm;

struct cuda_comm {
    clef_comm     base;             /* first: a cuda_comm is a clef_comm */
    const char   *describe;         /* "NCCL 2.28.9", "same-device sum kernel" */

    /* An error a collective met after it was enqueued (NCCL's
     * asynchronous errors): -1 with err filled ("device_fault"), else 0.
     * The backend asks while it waits for the ranks' streams. */
    int         (*poll)(cuda_comm *c, clef_error *err);

    /* Stops collectives that can no longer complete (a rank's stream
     * faulted while another waits for its data), so that the other
     * streams drain; destroy() afterwards only frees. */
    void        (*abort)(cuda_comm *c);

    int           faulted;          /* set by an error: destroy() aborts */
};

/* NCCL over devices[0 .. n), rank r on devices[r]: distinct ordinals.
 * 500 "cuda" when NCCL cannot build the communicators (the message names
 * NCCL's reason), or when this library was built without NCCL. */
int  clef_cuda_comm_nccl(const int *devices, int n, cuda_comm **out,
    clef_error *err);

/* n ranks on one device (n <= CLEF_K_RANKS_MAX). */
int  clef_cuda_comm_same_device(int device, int n, cuda_comm **out,
    clef_error *err);

/* NCCL's version as "2.28.9" ("none" in a build without NCCL). */
const char *clef_cuda_nccl_version(void);

#endif
