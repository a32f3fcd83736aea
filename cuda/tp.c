/*
 * Tensor parallelism of the CUDA backend: which devices a replica's ranks
 * run on, the communicator between them, the all-reduce of the residual
 * stream and the wait for every rank.
 *
 * One executor thread drives every rank of its replica: a forward enqueues
 * each layer's mixer on every rank's stream (its device current), then one
 * grouped all-reduce, then the MLP on every rank, then another (forward.c).
 * Stream order alone orders each rank's work around its collectives:
 * the row-parallel GEMM writes hid, the all-reduce on the same stream sums
 * it in place, the next norm on that stream reads the sum.  Nothing here
 * waits on the host but cuda_tp_wait, once per forward.
 */
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "cuda_backend.h"

int
cuda_tp_devices(const clef_backend_opts *o, int *devices, int *tp,
    clef_error *err)
{
    cudaError_t  e;
    int          n = 0, r, want, first;

    want = o != NULL && o->tp > 1 ? o->tp : 1;
    first = o != NULL ? o->device : 0;
    if (want > CUDA_TP_MAX) {
        return clef_error_fail(err, CLEF_E_MODEL,
            "tp=%d: the CUDA backend drives at most %d devices per replica", want,
            CUDA_TP_MAX);
    }
    if (o != NULL && o->n_devices > 0) {
        if (o->devices == NULL || o->n_devices != want) {
            return clef_error_fail(err, CLEF_E_MODEL,
                "tp=%d with %d devices for the replica: one device per rank", want,
                o->n_devices);
        }
        for (r = 0; r < want; r++) {
            devices[r] = o->devices[r];
        }
    } else {
        /* no list: tp consecutive ordinals from `device` */
        for (r = 0; r < want; r++) {
            devices[r] = first + r;
        }
    }
    e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
        return clef_error_set(err, 503, "no_device", NULL, "no CUDA device: %s",
            e != cudaSuccess ? cudaGetErrorString(e) : "none found");
    }
    for (r = 0; r < want; r++) {
        if (devices[r] < 0 || devices[r] >= n) {
            return clef_error_set(err, 503, "no_device", NULL,
                "no CUDA device: ordinal %d asked for%s, %d present", devices[r],
                want > 1 ? " (a rank of the replica)" : "", n);
        }
    }
    *tp = want;
    return 0;
}

int
cuda_tp_comm(clef_backend *b, const int *devices, const char *comm,
    clef_error *err)
{
    int  r, same = 1, distinct = 1, i;

    for (r = 1; r < b->tp; r++) {
        same &= devices[r] == devices[0];
        for (i = 0; i < r; i++) {
            distinct &= devices[r] != devices[i];
        }
    }
    if (comm == NULL) {
        if (b->tp == 1) {
            return 0;                       /* today's path: no collective */
        }
        comm = distinct ? "nccl" : same ? "same-device" : NULL;
        if (comm == NULL) {
            return clef_error_fail(err, CLEF_E_MODEL,
                "tp=%d: the replica's devices repeat some ordinals but not all; "
                "give each rank its own device (NCCL), or every rank one device "
                "(the same-device communicator, for tests)", b->tp);
        }
    }
    if (strcmp(comm, "nccl") == 0) {
        return clef_cuda_comm_nccl(devices, b->tp, &b->comm, err);
    }
    if (strcmp(comm, "same-device") == 0) {
        if (!same) {
            return clef_error_fail(err, CLEF_E_MODEL,
                "the same-device communicator needs every rank on one device");
        }
        return clef_cuda_comm_same_device(devices[0], b->tp, &b->comm, err);
    }
    return clef_error_fail(err, CLEF_E_MODEL,
        "unknown communicator \"%s\" (nccl, same-device)", comm);
}

int
cuda_rank_device(clef_backend *b, int r, int *cur, clef_error *err)
{
    int  dev = b->ranks[r]->device;

    if (*cur == dev) {
        return 0;
    }
    if (cuda_check(cudaSetDevice(dev), "cudaSetDevice", err) != 0) {
        return -1;
    }
    *cur = dev;
    return 0;
}

int
cuda_all_reduce(clef_backend *b, int T, clef_error *err)
{
    clef_comm      *c = &b->comm->base;
    clef_error      later;
    clef_backend   *k;
    size_t          n = (size_t) T * (size_t) b->H;
    int             r, rc = 0;

    if (b->comm->faulted) {
        return clef_error_fail(err, CLEF_E_DEVICE_FAULT,
            "the communicator failed earlier: the replica is reopened");
    }
    if (c->ops->group_begin != NULL && c->ops->group_begin(c, err) != 0) {
        b->comm->faulted = 1;
        return -1;
    }
    for (r = 0; r < b->tp && rc == 0; r++) {
        k = b->ranks[r];
        rc = c->ops->all_reduce_sum(c, r, k->ws.hid, n, CLEF_COMM_BF16, k->stream,
                                    err);
    }
    /* The group is closed whatever happened: NCCL's group state is per
     * thread and would swallow the next forward's calls. */
    if (c->ops->group_end != NULL) {
        memset(&later, 0, sizeof(later));
        if (c->ops->group_end(c, rc == 0 ? err : &later) != 0) {
            rc = -1;
        }
    }
    if (rc != 0) {
        /* some ranks may have enqueued their part and wait for the others */
        b->comm->faulted = 1;
        if (err->code != CLEF_E_DEVICE_FAULT) {
            char  m[sizeof(err->message)];

            snprintf(m, sizeof(m), "%s", err->message);
            clef_error_fail(err, CLEF_E_DEVICE_FAULT,
                "all-reduce over %d ranks: %s", b->tp, m);
        }
    }
    return rc;
}

/* Every stream polled until all are idle; the communicator's own errors
 * polled between.  On the first error the communicator is aborted, so
 * that a rank waiting inside a collective for a faulted peer drains, and
 * every stream is then waited for (the staging buffers are reused). */
int
cuda_tp_wait(clef_backend *b, clef_error *err)
{
    clef_backend  *k;
    cudaError_t    e;
    clef_error     first;
    int            r, busy, bad = 0;

    memset(&first, 0, sizeof(first));
    if (b->comm != NULL && b->comm->faulted) {
        clef_error_fail(&first, CLEF_E_DEVICE_FAULT,
            "a collective of the forward failed: the replica is reopened");
        bad = 1;
    }
    /* Polled rather than synchronized stream by stream: a stream waiting
     * inside a collective for a faulted peer would never return from
     * cudaStreamSynchronize. */
    while (!bad) {
        busy = 0;
        for (r = 0; r < b->tp && !bad; r++) {
            k = b->ranks[r];
            e = cudaSetDevice(k->device);
            if (e == cudaSuccess) {
                e = cudaStreamQuery(k->stream);
            }
            if (e == cudaErrorNotReady) {
                busy = 1;
            } else if (e != cudaSuccess) {
                char  what[48];

                snprintf(what, sizeof(what), "forward (rank %d, device %d)", r,
                         k->device);
                cuda_check(e, what, &first);
                bad = 1;
            }
        }
        if (!bad && b->comm != NULL && b->comm->poll(b->comm, &first) != 0) {
            bad = 1;
        }
        if (!busy || bad) {
            break;
        }
        sched_yield();
    }
    if (!bad) {
        return cuda_check(cudaSetDevice(b->device), "cudaSetDevice", err);
    }
    if (b->comm != NULL) {
        b->comm->faulted = 1;
        b->comm->abort(b->comm);
        if (first.code != CLEF_E_DEVICE_FAULT) {
            char  m[sizeof(first.message)];

            snprintf(m, sizeof(m), "%s", first.message);
            clef_error_fail(&first, CLEF_E_DEVICE_FAULT,
                "%s (the communicator was aborted: the replica is reopened)", m);
        }
    }
    for (r = 0; r < b->tp; r++) {
        cudaSetDevice(b->ranks[r]->device);
        cudaStreamSynchronize(b->ranks[r]->stream);
    }
    cudaSetDevice(b->device);
    *err = first;
    return -1;
}
