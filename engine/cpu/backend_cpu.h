/*
 * The "cpu" backend (engine/backend/backend.h): the backbone (backbone.h) on a
 * thread pool of opts->threads workers, then the joint head (head.h, fp32)
 * per record.  opts->precision chooses how the backbone's linear layers
 * multiply: fp32 (the default: exact against the fp32 reference) or bf16.
 *
 * opts->tp > 1: tensor parallelism on one machine, as the CUDA backend
 * shards over devices.  tp rank threads (the calling thread is rank 0)
 * each hold only their shard of the backbone (shard.h) and a pool of their
 * share of opts->threads (at least one each), and all-reduce the
 * row-parallel products through shared memory (comm_cpu.h).  The vision
 * tower and the joint head are not sharded and run once, on rank 0's
 * thread.  A rank that fails releases the others: the forward returns its
 * error, never hangs.  tp 1 is the unsharded backend, to the bit.
 *
 * Deterministic: a record's logits and hidden states are bit-identical
 * whatever it is batched with, wherever it sits in the batch, at any thread
 * count and before or after any other call.  Every matrix product is our own
 * GEMM (gemm.h, no BLAS and no process-wide state), and every other op works
 * on one token, or on one record from its first token (backbone.h).
 */
#ifndef CLEF_CPU_BACKEND_CPU_H
#define CLEF_CPU_BACKEND_CPU_H

#include "backend/backend.h"
#include "cpu/model/backbone.h"

extern const clef_backend_ops  clef_cpu_backend_ops;

/* For `clef bench` on this backend: the backbone (its per-op profile) and
 * the seconds the last forward spent in the backbone and in the head. */
clef_cpu_backbone *clef_cpu_backend_backbone(clef_backend *b);
void               clef_cpu_backend_last_times(const clef_backend *b,
    double *backbone_s, double *head_s);

/* Tensor parallelism, for `clef bench` and tests: the ranks; the seconds
 * all ranks together spent inside all_reduce_sum (waiting included) since
 * the last reset; the bytes of rank's weights; and a fault injected into
 * rank's later forwards at layer `layer` (-1: none). */
int                clef_cpu_backend_tp(const clef_backend *b);
double             clef_cpu_backend_allreduce_seconds(const clef_backend *b);
void               clef_cpu_backend_allreduce_reset(clef_backend *b);
size_t             clef_cpu_backend_rank_weight_bytes(const clef_backend *b,
    int rank);
void               clef_cpu_backend_fail_at(clef_backend *b, int rank,
    int layer);

/* One line for logs: threads, the GEMM path, and the OpenBLAS build linked
 * into the process (which this backend does not call). */
const char        *clef_cpu_backend_describe(const clef_backend *b);

#endif
