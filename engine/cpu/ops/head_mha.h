/*
 * nn.MultiheadAttention (batch_first, bias, no mask, no dropout) in fp32, the
 * layout the joint schema head stores (docs/spec/encoder-and-head.md §5):
 *   in_proj_weight [3W][W]: rows 0..W-1 Wq, W..2W-1 Wk, 2W..3W-1 Wv
 *   in_proj_bias   [3W]:    split the same way
 *   head i uses columns [i*d, (i+1)*d) of q, k and v, d = W/heads;
 *   scores q.k/sqrt(d), softmax over the keys, heads concatenated, out_proj.
 *
 * Keys are taken in chunks with an online softmax, so the scratch memory is
 * O(queries x chunk + chunk x W) whatever the number of keys.
 */
#ifndef CLEF_CPU_HEAD_MHA_H
#define CLEF_CPU_HEAD_MHA_H

#include <stddef.h>

#include "base/error.h"
#include "cpu/ops/head_ops.h"

#define CLEF_HEAD_MHA_CHUNK  512

typedef struct {
    int           width;      /* W */
    int           heads;
    const float  *in_weight;  /* [3W][W] */
    const float  *in_bias;    /* [3W] */
    const float  *out_weight; /* [W][W] */
    const float  *out_bias;   /* [W] */
} clef_head_mha;

/* The same attention with its projections as linears: q is rows 0..W-1 of
 * in_proj, kv rows W..3W-1 (K then V), out the out_proj.  The head packs
 * them once when it opens (head_load.c). */
typedef struct {
    int               width;
    int               heads;
    clef_head_linear  q;
    clef_head_linear  kv;
    clef_head_linear  out;
} clef_head_attn;

/* out[nq][W] = MHA(q, kv', kv') with kv' = kv_norm(kv) row by row, or kv
 * itself when kv_norm is NULL.  out must not alias q or kv.  Returns 0, or
 * -1 with err filled when memory runs out. */
int clef_head_mha_forward(const clef_head_mha *a, const float *q, size_t nq,
    const float *kv, size_t nkv, const clef_head_ln *kv_norm, float *out,
    clef_error *err);

int clef_head_attn_forward(const clef_head_attn *a, const float *q, size_t nq,
    const float *kv, size_t nkv, const clef_head_ln *kv_norm, float *out,
    clef_error *err);

#endif
