/*
 * libclef_cuda.so: the CUDA backend (engine/backend/backend.h) for Hopper GPUs.
 *
 * The engine finds it by dlopen() + dlsym("clef_cuda_backend_ops").  One
 * forward at a time per opened backend (it owns one stream and one
 * workspace); open one backend per thread or per device otherwise.  A
 * forward returns option logits only: the per-question softmax is the
 * host's (clef_answer_softmax), as for every backend.  The extras below
 * are for programs that link the library directly (the CUDA tests and the
 * benchmark): control of CUDA-graph replay, per-layer-type timings from
 * CUDA events, and the GEMM algorithm counters behind determinism
 * (cuda/README.md).
 */
#ifndef CLEF_CUDA_H
#define CLEF_CUDA_H

#include "backend/backend.h"

extern const clef_backend_ops  clef_cuda_backend_ops;

/* graphs: 1 (default) captures a CUDA graph the second time a launch shape
 * (the counts of tokens, records, questions, options and work items; not
 * the lengths or spans themselves, cuda/graphs.c) is seen and replays it
 * afterwards; 0 always launches eagerly.  profile: 1 records CUDA events
 * around every layer (eager launches only; graphs are not used while
 * profiling). */
void clef_cuda_set_graphs(clef_backend *b, int graphs);
void clef_cuda_set_profile(clef_backend *b, int profile);

/* Graph replays and captures so far. */
void clef_cuda_graph_stats(const clef_backend *b, long *replays, long *captures);

/* GEMM shapes that could not use their shape's row-independent algorithm
 * and fell back to one chosen for their row count (each breaks batch
 * invariance for that shape; 0 is the contract), and heuristic queries;
 * summed over the ranks at tp > 1. */
void clef_cuda_gemm_stats(const clef_backend *b, long *fallbacks, long *heuristics);

typedef enum {
    CLEF_CUDA_PROF_EMBED = 0,    /* embedding gather */
    CLEF_CUDA_PROF_GDN,          /* input norm + gated delta-net mixer */
    CLEF_CUDA_PROF_ATTN,         /* input norm + gated attention mixer */
    CLEF_CUDA_PROF_MLP,          /* post norm + SwiGLU MLP */
    CLEF_CUDA_PROF_HEAD,         /* final norm + joint schema head */
    CLEF_CUDA_PROF_COMM,         /* tp > 1: the all-reduces, measured on
                                    rank 0's stream from the end of its own
                                    part to the sum (waiting for the slowest
                                    rank included) */
    CLEF_CUDA_PROF_COUNT
} clef_cuda_prof;

/* Opens the backend as clef_cuda_backend_ops.open does, with the
 * communicator named: "nccl" or "same-device" (every rank on o->device,
 * tp of them: the sharded forward on one GPU), or NULL for the default
 * (none at tp = 1; NCCL over distinct devices).  A communicator named at
 * tp = 1 runs the tensor-parallel path with one rank (its all-reduces sum
 * one buffer): how a single GPU exercises NCCL inside the forward. */
int  clef_cuda_open_tp(const clef_model *m, const clef_backend_opts *o,
    const char *comm, clef_backend **out, clef_error *err);

/* What rank `rank` of the replica holds on its device, in bytes: its
 * weights (the sum of their allocations) and its workspace at the
 * capacities it has grown to (0 before a forward).  The memory plan
 * (backend/device_plan.h) is to equal both. */
void clef_cuda_memory(const clef_backend *b, int rank, int64_t *weights,
    int64_t *workspace);

/* Ranks and the communicator's name ("none", "nccl", "same-device"). */
int         clef_cuda_tp(const clef_backend *b);
const char *clef_cuda_comm_name(const clef_backend *b);

/* Milliseconds per layer type summed over the profiled forwards since the
 * last reset, and their count.  Waits for the device. */
int  clef_cuda_profile_read(clef_backend *b, double ms[CLEF_CUDA_PROF_COUNT],
    int *forwards, clef_error *err);
void clef_cuda_profile_reset(clef_backend *b);

/* The vision tower alone over the batch's images (clef_batch_set_media'd):
 * features [sum of the images' tokens][out_hidden_size], the merged rows
 * of image 0, then 1, ..., as clef_cpu_vision_forward() gives them (bf16
 * GEMM outputs plus the fp32 last bias).  For the tests. */
int  clef_cuda_vision_features(clef_backend *b, const clef_batch *batch,
    float *features, clef_error *err);

/* The audio tower alone over the batch's audio clips (each record's
 * clips padded alike, backend/audio_layout.h): features [sum of the
 * clips' tokens][output_dim], clip after clip in batch order, as
 * clef_cpu_audio_forward() gives them (bf16 GEMM outputs plus the fp32
 * last bias).  400 audio_unsupported for a model without one.  For the
 * tests. */
int  clef_cuda_audio_features(clef_backend *b, const clef_batch *batch,
    float *features, clef_error *err);

#endif
