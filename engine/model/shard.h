/*
 * Tensor-parallel sharding of the text backbone, Megatron style, as vLLM
 * and SGLang shard Qwen3.5 (spec/qwen35-backbone.md).  One description of
 * which rank holds which heads and columns, shared by every backend that
 * shards (the CPU backend's rank threads, the CUDA backend's devices), so
 * that they split the checkpoint the same way.
 *
 *   column-parallel (rows of W split, rank r keeps its heads' rows):
 *     attention q_proj (query and, with the output gate, gate rows of each
 *     of its heads), k_proj, v_proj (its KV heads); q_norm/k_norm are per
 *     head-dim and replicated;
 *     Gated DeltaNet in_proj_qkv (its key heads' q and k rows, its value
 *     heads' v rows), in_proj_z (its value heads), in_proj_b, in_proj_a,
 *     A_log, dt_bias (its value heads), the conv taps of its channels;
 *     the gated norm weight is per value-head-dim and replicated;
 *     MLP gate_proj and up_proj (its intermediate columns).
 *   row-parallel (columns of W split; the partial products are summed by
 *     one all-reduce): attention o_proj, DeltaNet out_proj, MLP down_proj.
 *   replicated: the embedding (a gather of a few rows per token; splitting
 *     it would cost an all-reduce of [T][H] to save memory the vocabulary
 *     rows do not need here), every RMSNorm, the final norm and the joint
 *     head (it reads a few hundred option rows per record, far less work
 *     than one layer, and runs after the last all-reduce on data every
 *     rank already holds).
 *
 * Contiguous ranges keep the grouped heads together: a query head i reads
 * KV head i / (Hq / Hkv) and a DeltaNet value head j reads key head
 * j / (Hv / Hk), so rank r's query heads [r Hq/tp, (r+1) Hq/tp) read
 * exactly its KV heads [r Hkv/tp, ...), and likewise for DeltaNet.
 */
#ifndef CLEF_SHARD_H
#define CLEF_SHARD_H

#include "error.h"
#include "model.h"

typedef struct {
    int  rank, size;            /* this rank of size; size 1: unsharded */
    int  q_head0, q_heads;      /* attention query heads [q_head0, +q_heads) */
    int  kv_head0, kv_heads;    /* attention KV heads */
    int  k_head0, k_heads;      /* DeltaNet key heads */
    int  v_head0, v_heads;      /* DeltaNet value heads */
    int  inter0, inter;         /* MLP intermediate columns */
} clef_shard;

/* Whether the model can be split over tp ranks: tp must divide the
 * attention heads, the KV heads, the DeltaNet key and value heads and the
 * intermediate size.  Refuses with a message naming the first count that
 * it does not divide ("tp=3 does not divide the 16 attention heads"). */
int  clef_shard_check(const clef_text_config *c, int tp, clef_error *err);

/* Rank rank's share of a model that clef_shard_check accepted for size. */
void clef_shard_of(const clef_text_config *c, int size, int rank,
    clef_shard *s);

#endif
