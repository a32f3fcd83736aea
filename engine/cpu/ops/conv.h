/*
 * The Gated DeltaNet's causal depthwise convolution followed by SiLU
 * (spec §3.1 step 2), over a packed batch:
 *     y[t][c] = silu( sum_i w[c][i] * x[t - (K-1) + i][c] )
 * with x taken as zero before the first token of t's own record, so that no
 * record sees another one.  Tap K-1 multiplies the current token; there is
 * no bias.  x and y must not overlap.
 */
#ifndef CLEF_CPU_CONV_H
#define CLEF_CPU_CONV_H

#include <stdint.h>

#include "cpu/parallel/pool.h"

/* x: [tokens][ldx] (channels used), y: [tokens][ldy]; w: [kernel][channels],
 * tap-major (the transpose of conv1d.weight [channels][1][kernel], so that
 * the inner loop runs over contiguous channels);
 * cu_seqlens: [n_records + 1], tokens = cu_seqlens[n_records]. */
void clef_cpu_conv_silu(clef_cpu_pool *pool, const float *x, int64_t ldx,
    float *y, int64_t ldy, int channels, const float *w, int kernel,
    const int32_t *cu_seqlens, int n_records);

/* The same where a record may continue one run before (chunked prefill):
 * tails[r], when tails is not NULL and it is not NULL, holds the (kernel -
 * 1) input rows (channels floats each, oldest first) that came before
 * record r's first token here, and takes their place as the taps before
 * it; the sums are those of the record run whole, to the bit. */
void clef_cpu_conv_silu_tails(clef_cpu_pool *pool, const float *x,
    int64_t ldx, float *y, int64_t ldy, int channels, const float *w,
    int kernel, const int32_t *cu_seqlens, int n_records,
    const float *const *tails);

#endif
