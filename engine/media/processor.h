/*
 * The reference's image processor (Qwen2VLImageProcessor, the torchvision
 * backend that Clef's preprocessor_config.json selects through
 * Qwen3VLProcessor; docs/spec/backbone.md §5.1), from decoded RGB to the
 * vision tower's input:
 *
 *   1. smart_resize: both sides to multiples of patch x merge (32), the
 *      area kept within [min_pixels, max_pixels] = [256^2, 4096^2], Python
 *      float arithmetic (round half to even, sqrt, floor, ceil) in double;
 *   2. the antialiased bicubic resize of resize.h, to uint8;
 *   3. normalisation fused as the reference fuses it: x = (v - m) / s in
 *      fp32 with m = float(mean) * float(1 / rescale_factor) (127.5), the
 *      same for s;
 *   4. patches: one row of 3 x 2 x 16 x 16 = 1536 values per 16 x 16 patch,
 *      (channel, temporal, y, x), the frame repeated in both temporal
 *      slots, rows in merge-block order (grid_h / 2, grid_w / 2, 2, 2).
 *
 * An image becomes a media item of the image kind (media.h), kept as its
 * resized uint8 pixels (3 bytes a pixel instead of 4 x 2 floats), and a row
 * is made when the vision tower reads it.  Tests may give the reference's
 * own pixel values instead.
 */
#ifndef CLEF_PROCESSOR_H
#define CLEF_PROCESSOR_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "media/image_decode.h"
#include "media/media.h"

typedef struct {
    int      patch_size;            /* 16 */
    int      temporal_patch_size;   /* 2 */
    int      merge_size;            /* 2 */
    int64_t  min_pixels;            /* size.shortest_edge, 65536 */
    int64_t  max_pixels;            /* size.longest_edge, 16777216 */
    double   rescale_factor;        /* 1 / 255 */
    double   mean[3], std[3];       /* 0.5 */
    int      exif_orientation;      /* 1: applied as the image is decoded
                                       (Clef's torchvision decode_image);
                                       0: not (Clef Omni's PIL open) */
} clef_processor_config;

void clef_processor_config_default(clef_processor_config *pc);

/* Floats of one patch row of an item with pixels: 3 x temporal x
 * patch^2. */
int     clef_image_row_size(const clef_media_item *im);

/* smart_resize of the reference; -1 with *why for an aspect ratio over
 * 200 or a size it cannot make. */
int clef_smart_resize(int64_t h, int64_t w, int factor, int64_t min_pixels,
    int64_t max_pixels, int64_t *oh, int64_t *ow, const char **why);

/* The <|image_pad|> tokens an image of h x w pixels becomes, from its
 * header's size alone (smart_resize is symmetric, so an EXIF rotation does
 * not change it); -1 when smart_resize refuses the size. */
int64_t clef_image_pad_tokens(int64_t h, int64_t w,
    const clef_processor_config *pc);

/* Steps 1-3 (the normalisation constants): in to out, an item of the
 * image kind: grid 1 x grid_h x grid_w, its pads grid_h grid_w / merge^2,
 * its RGB bytes.  400 image_invalid naming image index when smart_resize
 * refuses it. */
int clef_image_preprocess(const clef_rgb_image *in, int index,
    const clef_processor_config *pc, clef_media_item *out, clef_error *err);

/* Step 4 for patch row p of an item with pixels into row: rows in
 * (temporal group, merge-block) order, each group's temporal slots its
 * frames (an image: its one frame in every slot; a video: a frame pair,
 * an odd count's last pair repeating its last frame). */
void clef_image_patch_row(const clef_media_item *im, int64_t p, float *row);

#endif
