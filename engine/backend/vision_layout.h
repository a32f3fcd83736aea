/*
 * Where each patch of a batch's images sits and what it reads, for a vision
 * tower that runs outside the CPU backend (cuda/vision*.c): pure host logic,
 * built from the same definitions as the CPU tower (engine/cpu/model/vision.c,
 * docs/spec/backbone.md §5.2) so that it can be tested without a device.
 *
 *   - the (row, column) of a patch, whose rows come in merge-block order;
 *   - the four taps and weights of the bilinear, align_corners resampling
 *     of the learned position table to the image's grid;
 *   - the 2D rotary's cos / sin per position (rows and columns share them);
 *   - the query tiles of bidirectional attention inside each image;
 *   - which packed-batch token each merged row of the tower replaces;
 *   - the M-RoPE axis of each rotary pair of the backbone (§5.3).
 */
#ifndef CLEF_VISION_LAYOUT_H
#define CLEF_VISION_LAYOUT_H

#include <stdint.h>

#include "backend/backend.h"
#include "media/media.h"

/* (row, col) of local patch p of im (an item with pixels), its rows in
 * merge-block order. */
void    clef_vision_patch_rc(const clef_media_item *im, int64_t p, int32_t *r,
    int32_t *c);

/* The resampled position embedding of patch (r, c) of a gh x gw grid from
 * a side x side table is sum_k w[k] table[tap[k]] (tap: row of the table),
 * with the CPU tower's fp32 steps: w = wh[a] * ww[b], k = 2a + b. */
void    clef_vision_pos_taps(int64_t r, int64_t c, int64_t gh, int64_t gw,
    int side, int32_t tap[4], float w[4]);

/* inv_freq[i] = 1 / theta^(2i / (hd / 2)), i < hd / 4, in fp32 steps. */
void    clef_vision_inv_freq(int hd, double theta, float *inv_freq);

/* cos, sin: [positions][hd / 4], cos(pos * inv_freq[i]) in fp32.  Patch
 * (r, c) turns its pairs i < hd/4 by row r and the next hd/4 by column c. */
void    clef_vision_rotary_table(int hd, double theta, int positions,
    float *cos, float *sin);

/* Bidirectional attention tiles of `tile` query rows: (start, len, qbase)
 * per tile, the image's first patch and patch count, and the tile's first
 * query within the image; images in order (every tile of an image costs
 * the same).  cu: [n + 1] patch offsets.  Returns the tile count; out may
 * be NULL to count. */
int64_t clef_vision_attn_tiles(const int64_t *cu, int n, int tile,
    int32_t *out);

/* dst[row] for every merged row of the tower's output over the batch's
 * images and videos (item m's rows after those of the visual items before
 * it; audio clips, which have their own tower, left out): the packed token
 * whose embedding the row replaces, -1 where no span does.  rows: the sum
 * of the visual items' tokens.  -1 with *why when a span leaves the batch
 * or its item. */
int     clef_vision_scatter_rows(const clef_batch *b, int32_t *dst,
    int64_t rows, const char **why);

/* The axis (0 temporal, 1 height, 2 width) of rotary pair j of the
 * backbone under interleaved M-RoPE with these sections. */
int     clef_mrope_axis(const int section[3], int j);

#endif
