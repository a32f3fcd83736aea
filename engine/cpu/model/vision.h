/*
 * The vision tower on the CPU, fp32 (docs/spec/backbone.md §5.2,
 * transformers' Qwen3_5VisionModel): patch embedding, the learned position
 * table resampled bilinearly (align_corners) to each image's grid, the 2D
 * rotary, pre-LN blocks of bidirectional attention inside each image and a
 * GELU MLP, and the merger of each 2 x 2 block into one token of the text
 * stack.  All images of a batch run through it together (and all videos,
 * frame pair by frame pair); an image's features depend on that image
 * alone (attention never crosses images or a video's pairs,
 * every other op works on one patch, and the products compute each row
 * alike, gemm.h), so a record's answer does not depend on its batch.
 */
#ifndef CLEF_CPU_VISION_H
#define CLEF_CPU_VISION_H

#include <stdint.h>

#include "base/error.h"
#include "cpu/parallel/pool.h"
#include "media/processor.h"
#include "model/model.h"

typedef struct clef_cpu_vision clef_cpu_vision;

/* Converts and packs the tower's weights; *out is NULL (and 0 returned)
 * for a model without a tower.  The pool is borrowed. */
int  clef_cpu_vision_open(const clef_model *m, clef_cpu_pool *pool,
    clef_cpu_vision **out, clef_error *err);
void clef_cpu_vision_close(clef_cpu_vision *v);

/* fn(ctx) after every block: a tower over large images takes long, and the
 * engine's watchdog must not take it for a hung forward. */
void clef_cpu_vision_set_progress(clef_cpu_vision *v, void (*fn)(void *ctx),
    void *ctx);

/* The CPU backend's encoder of the image and video kinds: items of either
 * (media/processor.h: pixels; an image one temporal group, a video one per
 * frame pair, each attending within itself as the reference's cu_seqlens
 * say); features: [sum of their tokens][out_hidden_size], the items'
 * merged tokens one item after the other, a video's pair after pair. */
int  clef_cpu_vision_forward(clef_cpu_vision *v,
    const clef_media_item *const *items, int n_items, float *features,
    clef_error *err);

/* DeepStack (Clef Omni, docs/spec/backbone.md §6): the number of
 * mergers that read the output of earlier tower blocks (0 without a tower
 * or for Clef's); clef_cpu_vision_forward_levels() writes the merger's
 * features at features and merger d's (the output of block
 * deepstack_visual_indexes[d] through its own post-shuffle merger) at
 * features + (d + 1) level_stride, each [tokens][out_hidden_size] as
 * above; the backbone adds level d + 1 after decoder layer d. */
int  clef_cpu_vision_deepstack(const clef_cpu_vision *v);
int  clef_cpu_vision_forward_levels(clef_cpu_vision *v,
    const clef_media_item *const *items, int n_items, float *features,
    int64_t level_stride, clef_error *err);

#endif
