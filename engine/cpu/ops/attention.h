/*
 * Gated full attention (spec §3.2), fp32: per-head q/k RMSNorm (1 + w) and
 * partial RoPE, causal GQA softmax attention inside each record, and the
 * sigmoid output gate.
 *
 * The softmax is computed blockwise (64 queries of each of the Hq / Hkv
 * query heads that share a kv head x 512 keys at a time, with a running
 * maximum and sum per query, as FlashAttention does): no matrix of scores
 * larger than one block exists, so memory does not grow with the square of
 * a record's length.  Query head i reads key/value head i / (Hq / Hkv).
 */
#ifndef CLEF_CPU_ATTENTION_H
#define CLEF_CPU_ATTENTION_H

#include <stddef.h>
#include <stdint.h>

#include "cpu/parallel/pool.h"

#define CLEF_ATTN_BLOCK_Q  64
#define CLEF_ATTN_BLOCK_K  512

typedef struct {
    float        *q;            /* head h at + h * q_head_stride */
    int64_t       ldq, q_head_stride;
    float        *k;            /* head h at + h * hd */
    int64_t       ldk;
    const float  *v;            /* head h at + h * hd */
    int64_t       ldv;
    float        *o;            /* head h at + h * hd */
    int64_t       ldo;
    int           hq, hkv, hd;
    float         scale;        /* hd^-1/2 */
} clef_attn_args;

/* In place on every token: q and k heads <- RMSNorm(., q_norm / k_norm)
 * (their multipliers, norm.h),
 * then RoPE on their first rot dims at the token's position in its record.
 * cos, sin: clef_cpu_rope_table() rows for positions 0 .. longest record. */
void clef_cpu_attention_prepare(clef_cpu_pool *pool, const clef_attn_args *a,
    const float *q_norm, const float *k_norm, float eps, int rot,
    const float *cos, const float *sin, const int32_t *cu_seqlens,
    int n_records);

/* The same where record r's first token here is token offsets[r] of the
 * record (chunked prefill; offsets NULL: 0 for every record): its RoPE
 * positions count from there. */
void clef_cpu_attention_prepare_at(clef_cpu_pool *pool,
    const clef_attn_args *a, const float *q_norm, const float *k_norm,
    float eps, int rot, const float *cos, const float *sin,
    const int32_t *cu_seqlens, const int64_t *offsets, int n_records);

/* Floats of scratch per pool worker, for group = Hq / Hkv query heads per
 * kv head of head_dim hd. */
size_t clef_cpu_attention_scratch_floats(int group, int hd);

/* o = causal softmax(q k^T * scale) v per record and head.  scratch holds
 * clef_cpu_attention_scratch_floats() floats per pool worker.  Returns -1
 * only when out of memory. */
int clef_cpu_attention(clef_cpu_pool *pool, const clef_attn_args *a,
    const int32_t *cu_seqlens, int n_records, float *scratch);

/* A record that is a part of a longer one (chunked prefill): its queries
 * here are tokens [offset, offset + len) of the record, and they attend
 * to the keys and values of tokens [0, offset + len) of the record, kept
 * at k and v (row t at + t ld, head h at + h hd; the part's own rows
 * already there).  Query and key blocks are counted from the record's
 * first token, so with offset a multiple of CLEF_ATTN_BLOCK_Q every query
 * block meets the key blocks it meets in the record run whole, in the same
 * order: the same bits. */
typedef struct {
    const float  *k, *v;        /* NULL: the record whole, in a->k, a->v */
    int64_t       ld;
    int64_t       offset;
} clef_attn_past;

/* clef_cpu_attention() with past[r] for record r (past NULL: none). */
int clef_cpu_attention_parts(clef_cpu_pool *pool, const clef_attn_args *a,
    const int32_t *cu_seqlens, const clef_attn_past *past, int n_records,
    float *scratch);

/* o[t][i] *= sigmoid(gate[t][i]) with gate head h at gate + h * gate_stride. */
void clef_cpu_attention_gate(clef_cpu_pool *pool, float *o, int64_t ldo,
    const float *gate, int64_t ldgate, int64_t gate_head_stride, int64_t tokens,
    int hq, int hd);

#endif
