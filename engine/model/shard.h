/*
 * Tensor-parallel sharding of the text backbone, Megatron style, as vLLM
 * and SGLang shard Qwen3.5 (docs/spec/backbone.md).  One description of
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
 *   row-parallel (columns of W split; the partial products are summed
 *     over the ranks, by segments in a fixed order on the CPU, below):
 *     attention o_proj, DeltaNet out_proj, MLP down_proj.
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

#include "base/error.h"
#include "model/model.h"

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

/*
 * The row-parallel products' segments: one reduction order for every tp.
 *
 * A row-parallel product (o_proj, out_proj, down_proj) sums over its input
 * columns.  Summed whole when unsharded but per rank and then across the
 * ranks when sharded, it would round differently at each tp.  So every
 * backend that wants the same bits at every tp (the CPU one) cuts the
 * reduction into a count of segments fixed by the model, S, whatever the
 * tp: segment j covers the heads (intermediate columns) [j n/S,
 * (j+1) n/S), each segment's partial product is summed from zero over its
 * own columns, and the residual becomes x + (((P_0 + P_1) + P_2) + ...
 * + P_{S-1}).  At tp = N dividing S, rank r owns whole segments
 * [r S/N, (r+1) S/N) (they line up with its shard), computes those, and
 * the ranks exchange partials so that each sums all S in the same order:
 * the bits of tp = 1.
 *
 * clef_shard_segments_of_model(): S, the largest of 8, 4, 2, 1 that
 * clef_shard_check() accepts for the model -- a property of the model, so
 * every tp that divides it gives the same bits (8 covers tp = 1, 2, 4, 8,
 * more segments than that would only add products).
 *
 * clef_shard_segments(): the segments at a given tp: S when tp divides S,
 * else tp, one segment a rank (a tp that is not a power of two, e.g.
 * tp = 3 on heads that 3 divides, or tp = 16; a power of two up to 8 that
 * the model accepts divides S by its definition): the order of a plain all-reduce, within a few ulps of tp = 1 but not its bits.  Such a
 * tp is accepted rather than refused: it is a valid split of the model,
 * only not a bit-exact one, and docs/design/tensor-parallelism.md says so.
 */
#define CLEF_SHARD_SEGS_MAX  8

int  clef_shard_segments_of_model(const clef_text_config *c);
int  clef_shard_segments(const clef_text_config *c, int tp);

/* Rank rank's share of a model that clef_shard_check accepted for size. */
void clef_shard_of(const clef_text_config *c, int size, int rank,
    clef_shard *s);

#endif
