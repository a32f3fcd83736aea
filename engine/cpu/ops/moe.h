/*
 * Routed experts (docs/spec/backbone.md §6, transformers'
 * Qwen3OmniMoeThinkerTextTopKRouter and ...TextExperts): each token's
 * router logits go through a softmax in fp32, its top k experts are kept
 * and their weights renormalised to sum to 1 (norm_topk_prob); the
 * layer's output for the token is the sum over those experts of weight x
 * expert(x), summed in increasing expert index (the order in which the
 * reference index_add_s its experts' outputs onto zeros).
 *
 * The experts run grouped: the tokens routed to expert e are gathered into
 * consecutive rows (in token order), so that each expert is one product
 * over its rows, never a loop over tokens; the products of one row do not
 * depend on the other rows (gemm.h), so a token's output is the same bits
 * whatever it is batched with.
 */
#ifndef CLEF_CPU_MOE_H
#define CLEF_CPU_MOE_H

#include <stdint.h>

#include "cpu/parallel/pool.h"

/* How T tokens are routed: allocated by clef_cpu_moe_route_alloc() for at
 * most T tokens. */
typedef struct {
    int       experts, k;
    int32_t  *expert;       /* [T][k]: token t's experts, increasing */
    float    *weight;       /* [T][k]: their weights */
    int32_t  *slot;         /* [T][k]: the grouped row of each */
    int32_t  *offset;       /* [E + 1]: expert e's rows are
                               [offset[e], offset[e + 1]) */
    int32_t  *row_token;    /* [T k]: the token of each grouped row */
} clef_cpu_moe_routing;

int  clef_cpu_moe_route_alloc(clef_cpu_moe_routing *r, int64_t tokens,
    int experts, int k);
void clef_cpu_moe_route_free(clef_cpu_moe_routing *r);

/* Routes T tokens from their router logits ([T][E], row stride ld):
 * softmax in fp32, the k largest probabilities (the lower index first on
 * a tie), renormalised when renorm; then groups them by expert. */
void clef_cpu_moe_route(clef_cpu_pool *pool, const float *logits,
    int64_t ld, int64_t T, int renorm, clef_cpu_moe_routing *r);

/* Grouped row i <- x[row_token[i]] (H floats; x at row stride ldx). */
void clef_cpu_moe_gather(clef_cpu_pool *pool, const clef_cpu_moe_routing *r,
    int64_t T, const float *x, int64_t ldx, int H, float *rows);

/* x[t] += sum over token t's experts, in increasing index, of weight x
 * out[slot] (out: the grouped rows' outputs, H floats each). */
void clef_cpu_moe_combine(clef_cpu_pool *pool, const clef_cpu_moe_routing *r,
    int64_t T, const float *out, int H, float *x, int64_t ldx);

#endif
