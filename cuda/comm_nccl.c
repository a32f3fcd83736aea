/*
 * The NCCL communicator (comm_cuda.h): the ranks of one replica, one
 * device each, in this process, driven by the replica's executor thread.
 *
 * Created once when the backend opens, with ncclCommInitAll (one process,
 * one thread, several devices: NCCL's "single process, single thread,
 * multiple devices" case, no unique id to exchange).  A forward brackets
 * the ranks' in-place ncclAllReduce calls in ncclGroupStart/End, which is
 * what lets one thread enqueue a collective on several devices without
 * deadlocking: inside a group the calls only record, and ncclGroupEnd
 * launches every rank's kernel on its stream.  Nothing waits on the host.
 *
 * Errors: a failed call is reported with NCCL's reason (ncclGetErrorString
 * plus ncclGetLastError's detail) as "device_fault": once a group failed,
 * some ranks may have enqueued their part and others not, and those
 * kernels wait forever for their peers; only aborting the communicators
 * and reopening the replica recovers, which is what the engine does for a
 * device_fault.  poll() reports ncclCommGetAsyncError's errors the same
 * way; abort() is ncclCommAbort on every rank.
 *
 * Built without NCCL (nccl.h or libnccl not found, Makefile), creation
 * fails with a message saying so and everything else stays usable.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime_api.h>

#include "comm_cuda.h"
#include "kernels.h"

#ifdef CLEF_HAVE_NCCL

#include <nccl.h>

/* Replicas open and close from their own executor threads; NCCL's
 * creation and destruction of communicators are not documented as safe
 * to run concurrently, so they take turns (a forward never takes it: the
 * collectives of replicas on disjoint devices may run in parallel). */
static pthread_mutex_t  nccl_setup = PTHREAD_MUTEX_INITIALIZER;

typedef struct {
    cuda_comm    c;
    ncclComm_t   comms[CLEF_K_RANKS_MAX];
    int          devices[CLEF_K_RANKS_MAX];
    int          in_group;
    char         describe[64];
} nccl_comm;

static int
nccl_fail(nccl_comm *n, ncclResult_t r, int rank, const char *what,
    clef_error *err)
{
    const char  *detail = ncclGetLastError(rank >= 0 ? n->comms[rank] : NULL);
    char         who[48] = "";

    n->c.faulted = 1;
    if (rank >= 0) {
        snprintf(who, sizeof(who), " (rank %d, device %d)", rank, n->devices[rank]);
    }
    return clef_error_fail(err, CLEF_E_DEVICE_FAULT, "NCCL %s%s: %s%s%s",
        what, who, ncclGetErrorString(r), detail != NULL && detail[0] ? ": " : "",
        detail != NULL ? detail : "");
}

static int
nccl_group_begin(clef_comm *c, clef_error *err)
{
    nccl_comm     *n = (nccl_comm *) c;
    ncclResult_t   r = ncclGroupStart();

    if (r != ncclSuccess) {
        return nccl_fail(n, r, -1, "ncclGroupStart", err);
    }
    n->in_group = 1;
    return 0;
}

static int
nccl_group_end(clef_comm *c, clef_error *err)
{
    nccl_comm     *n = (nccl_comm *) c;
    ncclResult_t   r;

    n->in_group = 0;
    r = ncclGroupEnd();
    if (r != ncclSuccess) {
        return nccl_fail(n, r, -1, "ncclGroupEnd", err);
    }
    return 0;
}

static int
nccl_all_reduce(clef_comm *c, int rank, void *buf, size_t count,
    clef_comm_dtype dtype, void *stream, clef_error *err)
{
    nccl_comm     *n = (nccl_comm *) c;
    ncclResult_t   r;

    if (rank < 0 || rank >= c->size) {
        return clef_error_fail(err, CLEF_E_INTERNAL,
            "NCCL all-reduce: rank %d of %d", rank, c->size);
    }
    if (!n->in_group && c->size > 1) {
        /* outside a group the first rank's call would wait for the others,
         * which this same thread has not called yet */
        return clef_error_fail(err, CLEF_E_INTERNAL,
            "NCCL all-reduce: %d ranks driven by one thread: call it between "
            "group_begin and group_end", c->size);
    }
    /* in place: sendbuff == recvbuff */
    r = ncclAllReduce(buf, buf, count,
                      dtype == CLEF_COMM_BF16 ? ncclBfloat16 : ncclFloat32,
                      ncclSum, n->comms[rank], (cudaStream_t) stream);
    if (r != ncclSuccess) {
        return nccl_fail(n, r, rank, "all-reduce", err);
    }
    return 0;
}

static int
nccl_poll(cuda_comm *c, clef_error *err)
{
    nccl_comm     *n = (nccl_comm *) c;
    ncclResult_t   r, a;
    int            i;

    for (i = 0; i < c->base.size; i++) {
        a = ncclSuccess;
        r = ncclCommGetAsyncError(n->comms[i], &a);
        if (r != ncclSuccess) {
            return nccl_fail(n, r, i, "ncclCommGetAsyncError", err);
        }
        if (a != ncclSuccess && a != ncclInProgress) {
            return nccl_fail(n, a, i, "asynchronous error", err);
        }
    }
    return 0;
}

static void
nccl_abort(cuda_comm *c)
{
    nccl_comm  *n = (nccl_comm *) c;
    int         i;

    for (i = 0; i < c->base.size; i++) {
        if (n->comms[i] != NULL) {
            ncclCommAbort(n->comms[i]);
            n->comms[i] = NULL;
        }
    }
}

static void
nccl_destroy(clef_comm *c)
{
    nccl_comm  *n = (nccl_comm *) c;
    int         i;

    if (n == NULL) {
        return;
    }
    pthread_mutex_lock(&nccl_setup);
    if (n->c.faulted) {
        nccl_abort(&n->c);
    }
    /* As NCCL's own example for the communicators of one thread: finalize
     * (flush) and destroy them one by one; the backend has waited for every
     * rank's stream before.  A finalize that fails leaves an abort. */
    for (i = 0; i < c->size; i++) {
        if (n->comms[i] == NULL) {
            continue;
        }
        if (ncclCommFinalize(n->comms[i]) == ncclSuccess) {
            ncclCommDestroy(n->comms[i]);
        } else {
            ncclCommAbort(n->comms[i]);
        }
        n->comms[i] = NULL;
    }
    pthread_mutex_unlock(&nccl_setup);
    free(n);
}

static const clef_comm_ops  nccl_ops = {
    "nccl",
    nccl_all_reduce,
    nccl_group_begin,
    nccl_group_end,
    nccl_destroy,
    NULL                        /* all_gather: the sum serves (comm.h) */
};

const char *
clef_cuda_nccl_version(void)
{
    static char  v[32];
    int          code = 0;

    if (ncclGetVersion(&code) != ncclSuccess) {
        return "unknown";
    }
    /* NCCL_VERSION(X, Y, Z) = X * 10000 + Y * 100 + Z since 2.9 */
    snprintf(v, sizeof(v), "%d.%d.%d", code / 10000, code / 100 % 100, code % 100);
    return v;
}

int
clef_cuda_comm_nccl(const int *devices, int count, cuda_comm **out,
    clef_error *err)
{
    nccl_comm     *n;
    ncclResult_t   r;
    int            i, j;

    *out = NULL;
    if (count < 1 || count > CLEF_K_RANKS_MAX) {
        return clef_error_fail(err, CLEF_E_MODEL,
            "NCCL: %d ranks (1 to %d)", count, CLEF_K_RANKS_MAX);
    }
    for (i = 0; i < count; i++) {
        for (j = 0; j < i; j++) {
            if (devices[i] == devices[j]) {
                return clef_error_fail(err, CLEF_E_MODEL,
                    "NCCL: device %d is given to ranks %d and %d; NCCL needs a "
                    "device per rank", devices[i], j, i);
            }
        }
    }
    n = calloc(1, sizeof(*n));
    if (n == NULL) {
        return clef_error_fail(err, CLEF_E_NO_MEMORY, "out of memory");
    }
    for (i = 0; i < count; i++) {
        n->devices[i] = devices[i];
    }
    pthread_mutex_lock(&nccl_setup);
    r = ncclCommInitAll(n->comms, count, n->devices);
    pthread_mutex_unlock(&nccl_setup);
    if (r != ncclSuccess) {
        const char  *detail = ncclGetLastError(NULL);

        free(n);
        return clef_error_fail(err, CLEF_E_INTERNAL,
            "NCCL: ncclCommInitAll over %d device%s: %s%s%s", count,
            count == 1 ? "" : "s", ncclGetErrorString(r),
            detail != NULL && detail[0] ? ": " : "", detail != NULL ? detail : "");
    }
    n->c.base.ops = &nccl_ops;
    n->c.base.size = count;
    snprintf(n->describe, sizeof(n->describe), "NCCL %s", clef_cuda_nccl_version());
    n->c.describe = n->describe;
    n->c.poll = nccl_poll;
    n->c.abort = nccl_abort;
    *out = &n->c;
    return 0;
}

#else /* !CLEF_HAVE_NCCL */

const char *
clef_cuda_nccl_version(void)
{
    return "none";
}

int
clef_cuda_comm_nccl(const int *devices, int count, cuda_comm **out,
    clef_error *err)
{
    *out = NULL;
    return clef_error_fail(err, CLEF_E_UNSUPPORTED,
        "this libclef_cuda.so was built without NCCL (nccl.h or libnccl.so not "
        "found under NCCL_HOME at build time): tp over several devices needs it");
}

#endif
