/*
 * The vision tower's per-token ops, fp32 (docs/spec/backbone.md §5.2):
 * LayerNorm with bias, the two GELUs, bias adds, the 2D rotary, and
 * bidirectional softmax attention inside each image.  Each op splits rows
 * over the pool; nothing depends on how.
 */
#ifndef CLEF_CPU_VISION_OPS_H
#define CLEF_CPU_VISION_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "cpu/parallel/pool.h"

/* y = (x - mean) / sqrt(var + eps) * w + b per row of dim (x and y may be
 * the same rows), moments summed in double. */
void clef_cpu_layernorm(clef_cpu_pool *pool, const float *x, int64_t ldx,
    float *y, int64_t ldy, int64_t rows, int dim, const float *w,
    const float *b, float eps);

/* y[r][i] += b[i] */
void clef_cpu_add_bias(clef_cpu_pool *pool, float *y, int64_t ldy,
    int64_t rows, int dim, const float *b);

/* y[r][i] += x[r][i]: a residual, both rows ld floats apart */
void clef_cpu_add_rows(clef_cpu_pool *pool, float *y, const float *x,
    int64_t ld, int64_t rows, int dim);

/* y[r][i] = act(y[r][i] + b[i]): gelu with tanh (gelu_pytorch_tanh) or
 * with erf (nn.GELU()) */
void clef_cpu_bias_gelu(clef_cpu_pool *pool, float *y, int64_t ldy,
    int64_t rows, int dim, const float *b, int tanh_form);

/* Rotate-half over whole heads: head d pairs (d_i, d_{i + hd/2}) turn by
 * the patch's angle i (cos, sin: [rows][hd / 2]); q and k heads in place. */
void clef_cpu_vision_rotary(clef_cpu_pool *pool, float *qkv, int64_t ld,
    int64_t rows, int heads, int hd, int64_t k_offset, const float *cos,
    const float *sin);

/* Floats of scratch per pool worker for images of at most n patches. */
size_t clef_cpu_vision_attention_scratch(int64_t n, int hd);

/* o = softmax(q k^T * scale) v per image and head, every patch of an image
 * seeing every other (cu: [n_images + 1] patch offsets).  q at qkv, k at
 * qkv + H, v at qkv + 2 H (row stride ld), head h at h * hd.
 * blocks: n_images + 1 int64 of room. */
void clef_cpu_vision_attention(clef_cpu_pool *pool, const float *qkv,
    int64_t ld, float *o, int64_t ldo, const int64_t *cu, int n_images,
    int heads, int hd, float scale, float *scratch, size_t per_worker,
    int64_t *blocks);

#endif
