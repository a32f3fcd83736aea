/*
 * Which rows or columns of a checkpoint tensor a tensor-parallel rank of
 * the CUDA backend uploads (engine/model/shard.h says which heads and
 * columns a rank holds; this says where they sit in each tensor), and the
 * host copies that cut them out.  Pure host C without the CUDA runtime, so
 * that t/unit/test_cuda_shard_slice.c checks it on every build.
 *
 * Row-split (column-parallel) tensors keep the rank's rows, in checkpoint
 * order, stacked as today's weights.c stacks the whole tensors:
 *
 *   q_proj        rows of the rank's query heads, each head's query and
 *                 (with the output gate) gate rows together: one range
 *   k_proj/v_proj rows of its KV heads: one range
 *   in_proj_qkv   its key heads' q rows | its key heads' k rows | its
 *   (and conv1d   value heads' v rows: three ranges, so that the rank's
 *    channels)    conv channels keep the q | k | v order the kernels read
 *   in_proj_z     rows of its value heads
 *   in_proj_b/a,  its value heads (one row, one value each)
 *   A_log, dt_bias
 *   gate/up_proj  its intermediate rows
 *
 * Column-split (row-parallel) tensors keep the rank's columns of every row:
 *   o_proj (its query heads' hd columns), out_proj (its value heads' dv
 *   columns), down_proj (its intermediate columns).
 */
#ifndef CLEF_CUDA_SHARD_SLICE_H
#define CLEF_CUDA_SHARD_SLICE_H

#include <stddef.h>
#include <stdint.h>

#include "model/model.h"
#include "model/shard.h"

#define CUDA_SLICE_MAX  3

typedef struct {
    int64_t  start, count;           /* rows (or columns) [start, +count) */
} cuda_range;

typedef enum {
    CUDA_SLICE_Q_PROJ = 0,
    CUDA_SLICE_KV_PROJ,
    CUDA_SLICE_O_PROJ,               /* columns */
    CUDA_SLICE_GDN_QKV,              /* in_proj_qkv rows, conv1d channels */
    CUDA_SLICE_GDN_Z,
    CUDA_SLICE_GDN_HEAD,             /* in_proj_b, in_proj_a, A_log, dt_bias */
    CUDA_SLICE_GDN_OUT,              /* columns */
    CUDA_SLICE_MLP_IN,               /* gate_proj, up_proj */
    CUDA_SLICE_MLP_DOWN              /* columns */
} cuda_slice_kind;

/* The ranges of kind k that rank s holds, in the order it stacks them;
 * returns how many (1 or 3).  At s->size == 1: the whole tensor. */
int      cuda_slice_ranges(const clef_text_config *c, const clef_shard *s,
    cuda_slice_kind k, cuda_range r[CUDA_SLICE_MAX]);

/* 1 for the kinds that split columns (o_proj, out_proj, down_proj). */
int      cuda_slice_columns(cuda_slice_kind k);

/* The sum of the ranges' counts. */
int64_t  cuda_slice_total(const cuda_range *r, int n);

/* Where each of n stacked parts (kinds[i]'s rows, one part after another,
 * as weights.c stacks gdn_in = qkv | z | b | a, attn_in = q | k | v and
 * mlp_gu = gate | up) starts in the rank's stacked matrix: off[i] rows;
 * returns the rows used. */
int64_t  cuda_slice_stack(const clef_text_config *c, const clef_shard *s,
    const cuda_slice_kind *kinds, int n, int64_t *off);

/* dst = the ranges' rows of src [.][cols], one after another (elements of
 * esz bytes). */
void     cuda_slice_rows(const void *src, int64_t cols, size_t esz,
    const cuda_range *r, int n, void *dst);

/* dst [rows][total] = the ranges' columns of every row of src [rows][cols]. */
void     cuda_slice_cols(const void *src, int64_t rows, int64_t cols,
    size_t esz, const cuda_range *r, int n, void *dst);

#endif
