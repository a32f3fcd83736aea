/*
 * The reference video processor's arithmetic (transformers 5.x,
 * Qwen3VLVideoProcessor with the video_preprocessor_config.json of a Clef
 * release, and Qwen3VLProcessor's timestamps), with no codec: what a
 * video's frames, size and tokens are, given what the decoder's scan says
 * (video_decode.h).  Python's float arithmetic in double throughout.
 *
 *   count     int(total / video_fps * fps), clamped to min_frames ..
 *             max_frames and to total;
 *   indices   numpy.linspace(0, total - 1, count) rounded half to even;
 *   resize    the video smart_resize: sides to multiples of 32, the frame
 *             count (rounded to pairs, half to even) in the pixel budget;
 *             fewer than 2 frames cannot make a temporal patch (the
 *             reference raises: a one-frame video is refused);
 *   pairs     an odd count repeats the last frame; pair j is shown at the
 *             mean of its two frames' times (index / video_fps), written
 *             "<%.1f seconds>".
 */
#ifndef CLEF_VIDEO_SAMPLE_H
#define CLEF_VIDEO_SAMPLE_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    double   fps;                   /* 2 */
    int32_t  min_frames;            /* 4 */
    int32_t  max_frames;            /* 768 */
    int64_t  min_pixels;            /* size.shortest_edge, 4096 */
    int64_t  max_pixels;            /* size.longest_edge, 25165824 */
    int      cap_pixels_per_frame;  /* off (transformers' default today) */
    int64_t  max_video_tokens;      /* 768, with the cap only */
    int      patch_size;            /* 16 */
    int      temporal_patch_size;   /* 2 */
    int      merge_size;            /* 2 */
    double   rescale_factor;        /* 1 / 255 */
    double   mean[3], std[3];       /* 0.5 */
} clef_video_config;

void clef_video_config_default(clef_video_config *vc);

/* Frames sampled from a video of total frames at video_fps. */
int32_t clef_video_sample_count(int64_t total, double video_fps,
    const clef_video_config *vc);

/* idx[0..n): numpy.linspace(0, total - 1, n).round().astype(int). */
void clef_video_sample_indices(int64_t total, int32_t n, int64_t *idx);

/*
 * The video smart_resize of n frames of h x w; -1 with *why when n is
 * below the temporal patch, the aspect ratio is over 200, or no size
 * fits.
 */
int clef_video_smart_resize(int64_t n, int64_t h, int64_t w,
    const clef_video_config *vc, int64_t *oh, int64_t *ow, const char **why);

/* What the processor makes of a video of total frames at video_fps, h x w
 * upright: the count sampled, the resized size and the grid. */
typedef struct {
    int32_t  n_frames;
    int64_t  height, width;
    int32_t  grid_t, grid_h, grid_w;
} clef_video_shape;

/* -1 with *why as clef_video_smart_resize()'s (s->n_frames is set: below
 * the temporal patch, the video has one frame only). */
int clef_video_shape_of(int64_t total, double video_fps, int64_t h,
    int64_t w, const clef_video_config *vc, clef_video_shape *s,
    const char **why);

/* The fused normalisation constants, as for images (processor.h):
 * float(mean) * float(1 / rescale_factor), the same for std. */
void clef_video_norm(const clef_video_config *vc, float mean[3],
    float std[3]);

/* Temporal patches (frame pairs) of n frames. */
int32_t clef_video_grid_t(int32_t n, const clef_video_config *vc);

/* t[0..grid_t): each pair's time in seconds. */
void clef_video_pair_times(const int64_t *idx, int32_t n, double video_fps,
    const clef_video_config *vc, double *t);

/* "<1.5 seconds>" into buf; the length, as snprintf. */
int clef_video_time_text(double t, char *buf, size_t size);

/*
 * The <|video_pad|> tokens of a video of total frames at video_fps, h x w
 * upright: grid_t x (grid_h grid_w / merge^2); -1 when it is refused.
 */
int64_t clef_video_pad_tokens(int64_t total, double video_fps, int64_t h,
    int64_t w, const clef_video_config *vc);

#endif
