/*
 * A video from its file to the vision tower's input, as the reference
 * processor makes it (Qwen3VLVideoProcessor; video_sample.h has the
 * arithmetic, video_decode.h the decoding):
 *
 *   1. decode and scan (video_decode.h): frame count and fps;
 *   2. sample: count, indices (video_sample.h); fewer than two frames is
 *      refused (400 video_one_frame);
 *   3. the video smart_resize, then every frame through the image path's
 *      antialiased bicubic (resize.h, byte-exact against torchvision's
 *      uint8 kernel) as soon as it is decoded, so only the resized frames
 *      are ever held;
 *   4. normalisation fused as for images (x - 127.5) / 127.5 in fp32;
 *   5. patches: temporal patch 2, an odd frame count repeating the last
 *      frame; rows (pair, merge-block row, merge-block col, 2, 2), each
 *      3 x 2 x 16 x 16 values (channel, frame of the pair, y, x).
 *
 * With vc's timed sampling (Clef Omni, video_sample.h), steps 1-3 are
 * its reference's instead: every frame at or past each 1 / fps step,
 * scaled as PyAV scales it (video_decode.h), an odd count repeating its
 * last, then one smart_resize for all frames.
 *
 * The result is plain data: the resized frames, the grid (t, h, w), the
 * sampled indices, the fps and each pair's time.  Placing it in a request
 * (pad tokens, "<t seconds>" texts, M-RoPE) is the caller's.
 */
#ifndef CLEF_VIDEO_PROCESS_H
#define CLEF_VIDEO_PROCESS_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "media/video_decode.h"
#include "media/video_sample.h"

typedef struct {
    clef_video_info  info;          /* the decoder's scan */
    int32_t   n_frames;             /* sampled, before the pair padding
                                       (timed sampling: after it) */
    int64_t  *indices;              /* [n_frames]; NULL when timed */
    double   *times;                /* [grid_t] seconds, each pair's mean;
                                       NULL when timed */
    int32_t   grid_t, grid_h, grid_w;
    uint8_t  *rgb;                  /* [n_frames][grid_h patch][grid_w
                                       patch][3], resized */
    float     mean[3], std[3];      /* the fused fp32 constants */
    int       patch, temporal, merge;
} clef_video;

void clef_video_free(clef_video *v);

/* Merged tokens (video pads) of the whole video, and of one pair. */
int64_t clef_video_tokens(const clef_video *v);
int64_t clef_video_pair_tokens(const clef_video *v);

/* Floats of one patch row: 3 x temporal x patch^2. */
int     clef_video_row_size(const clef_video *v);

/*
 * Decodes, samples and resizes the video in data; index names it in
 * errors (loc ["body","videos",index]): video_decode.h's, and 400
 * video_one_frame / video_invalid from the processor's own refusals.
 */
int clef_video_load(const uint8_t *data, size_t len, int index,
    const clef_video_limits *lim, const clef_video_config *vc, clef_video *out,
    clef_error *err);

/* Row p of the patches: pair p / (grid_h grid_w), then merge-block order
 * inside the pair, as the reference's patchify. */
void clef_video_patch_row(const clef_video *v, int64_t p, float *row);

#endif
