/*
 * The same-device communicator (comm_cuda.h): tensor parallelism's ranks
 * as logical shards of one GPU, which is how a single H200 proves the
 * sharded forward for tp = 2 and 4 (NCCL refuses two ranks on one device).
 *
 * group_begin opens a group; each rank's all_reduce_sum only records its
 * buffer and stream; group_end, once every rank has called:
 *   1. each other rank's stream records an event that rank 0's stream
 *      waits for: the sum starts after every rank's partial is written;
 *   2. one kernel on rank 0's stream sums the buffers in rank order in fp32
 *      and writes the sum into every buffer (kernels.h, clef_k_sum_ranks);
 *   3. rank 0's stream records an event the other streams wait for: no
 *      rank reads or overwrites its buffer before the sum is there.
 * Nothing waits on the host, so the forward stays asynchronous.  The sum
 * order is fixed, so the result is the same bits every run and every batch.
 */
#include <stdlib.h>

#include <cuda_runtime_api.h>

#include "comm_cuda.h"
#include "kernels.h"

typedef struct {
    cuda_comm       c;
    int             device;
    int             in_group, calls;
    size_t          n;
    clef_comm_dtype dtype;
    clef_k_rank_bufs bufs;
    cudaStream_t    streams[CLEF_K_RANKS_MAX];
    cudaEvent_t     ev[CLEF_K_RANKS_MAX];
} same_comm;

static int
fault(same_comm *s, cudaError_t e, const char *what, clef_error *err)
{
    s->c.faulted = 1;
    return clef_error_fail(err, CLEF_E_DEVICE_FAULT,
        "same-device all-reduce: %s: %s", what, cudaGetErrorString(e));
}

static int
same_group_begin(clef_comm *c, clef_error *err)
{
    same_comm  *s = (same_comm *) c;
    int         r;

    if (s->in_group) {
        return clef_error_fail(err, CLEF_E_INTERNAL,
            "same-device all-reduce: group_begin inside a group");
    }
    s->in_group = 1;
    s->calls = 0;
    for (r = 0; r < c->size; r++) {
        s->bufs.buf[r] = NULL;
    }
    return 0;
}

static int
same_all_reduce(clef_comm *c, int rank, void *buf, size_t n,
    clef_comm_dtype dtype, void *stream, clef_error *err)
{
    same_comm  *s = (same_comm *) c;

    if (rank < 0 || rank >= c->size) {
        return clef_error_fail(err, CLEF_E_INTERNAL,
            "same-device all-reduce: rank %d of %d", rank, c->size);
    }
    if (!s->in_group) {
        /* one rank holds the sum already; more need group_end */
        if (c->size == 1) {
            return 0;
        }
        return clef_error_fail(err, CLEF_E_INTERNAL,
            "same-device all-reduce: %d ranks driven by one thread: call it "
            "between group_begin and group_end", c->size);
    }
    if (s->bufs.buf[rank] != NULL) {
        return clef_error_fail(err, CLEF_E_INTERNAL,
            "same-device all-reduce: rank %d called twice in one group", rank);
    }
    if (s->calls > 0 && (n != s->n || dtype != s->dtype)) {
        return clef_error_fail(err, CLEF_E_INTERNAL,
            "same-device all-reduce: rank %d gives %zu elements of type %d, "
            "rank 0's group has %zu of type %d", rank, n, (int) dtype, s->n,
            (int) s->dtype);
    }
    s->n = n;
    s->dtype = dtype;
    s->bufs.buf[rank] = buf;
    s->streams[rank] = (cudaStream_t) stream;
    s->calls++;
    return 0;
}

static int
same_group_end(clef_comm *c, clef_error *err)
{
    same_comm    *s = (same_comm *) c;
    cudaStream_t  s0 = s->streams[0];
    cudaError_t   e;
    int           r;

    if (!s->in_group) {
        return clef_error_fail(err, CLEF_E_INTERNAL,
            "same-device all-reduce: group_end without group_begin");
    }
    s->in_group = 0;
    if (s->calls == 0) {
        return 0;
    }
    if (s->calls != c->size) {
        return clef_error_fail(err, CLEF_E_INTERNAL,
            "same-device all-reduce: %d of %d ranks called in the group",
            s->calls, c->size);
    }
    e = cudaSetDevice(s->device);
    if (e != cudaSuccess) {
        return fault(s, e, "cudaSetDevice", err);
    }
    for (r = 1; r < c->size; r++) {
        if (s->streams[r] == s0) {
            continue;
        }
        e = cudaEventRecord(s->ev[r], s->streams[r]);
        if (e == cudaSuccess) {
            e = cudaStreamWaitEvent(s0, s->ev[r], 0);
        }
        if (e != cudaSuccess) {
            return fault(s, e, "ordering rank 0 after the others", err);
        }
    }
    e = clef_k_sum_ranks(&s->bufs, c->size, (int64_t) s->n,
                         s->dtype == CLEF_COMM_BF16, s0);
    if (e != cudaSuccess) {
        return fault(s, e, "sum kernel", err);
    }
    e = cudaEventRecord(s->ev[0], s0);
    for (r = 1; e == cudaSuccess && r < c->size; r++) {
        if (s->streams[r] != s0) {
            e = cudaStreamWaitEvent(s->streams[r], s->ev[0], 0);
        }
    }
    if (e != cudaSuccess) {
        return fault(s, e, "ordering the others after the sum", err);
    }
    return 0;
}

/* Everything runs on the ranks' streams: their errors are the backend's
 * stream errors, nothing is pending inside the communicator. */
static int
same_poll(cuda_comm *c, clef_error *err)
{
    return 0;
}

static void
same_abort(cuda_comm *c)
{
}

static void
same_destroy(clef_comm *c)
{
    same_comm  *s = (same_comm *) c;
    int         r;

    if (s == NULL) {
        return;
    }
    cudaSetDevice(s->device);
    for (r = 0; r < CLEF_K_RANKS_MAX; r++) {
        if (s->ev[r] != NULL) {
            cudaEventDestroy(s->ev[r]);
        }
    }
    free(s);
}

static const clef_comm_ops  same_ops = {
    "same-device",
    same_all_reduce,
    same_group_begin,
    same_group_end,
    same_destroy,
    NULL                        /* all_gather: the sum serves (comm.h) */
};

int
clef_cuda_comm_same_device(int device, int n, cuda_comm **out, clef_error *err)
{
    same_comm    *s;
    cudaError_t   e;
    int           r;

    *out = NULL;
    if (n < 1 || n > CLEF_K_RANKS_MAX) {
        return clef_error_fail(err, CLEF_E_INTERNAL,
            "same-device all-reduce: %d ranks (1 to %d)", n, CLEF_K_RANKS_MAX);
    }
    s = calloc(1, sizeof(*s));
    if (s == NULL) {
        return clef_error_fail(err, CLEF_E_NO_MEMORY, "out of memory");
    }
    s->c.base.ops = &same_ops;
    s->c.base.size = n;
    s->c.describe = "same-device sum kernel";
    s->c.poll = same_poll;
    s->c.abort = same_abort;
    s->device = device;
    e = cudaSetDevice(device);
    for (r = 0; e == cudaSuccess && r < n; r++) {
        /* ordering only: no timing, the cheapest kind */
        e = cudaEventCreateWithFlags(&s->ev[r], cudaEventDisableTiming);
        if (e != cudaSuccess) {
            s->ev[r] = NULL;
        }
    }
    if (e != cudaSuccess) {
        same_destroy(&s->c.base);
        return clef_error_fail(err, CLEF_E_INTERNAL,
            "same-device all-reduce on device %d: %s", device, cudaGetErrorString(e));
    }
    *out = &s->c;
    return 0;
}
