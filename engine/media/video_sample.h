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
 *
 * Clef Omni's reference samples its own way (its joint_schema_model.py's
 * load_video, then Qwen3OmniMoeProcessor with do_sample_frames False and
 * Qwen2VLVideoProcessor), the "timed" sampling:
 *
 *   frames    every decoded frame of the first video stream whose time
 *             (pts x time base, in double) is not before kept / fps
 *             (kept: the frames kept so far; 1e-6 of slack), as decoded,
 *             no rotation applied;
 *   scale     each to at most max_frame_pixels (256 x 32 x 32): scale =
 *             min(1, sqrt(max / (w h))), sides max(2, round(side x scale
 *             / 2) x 2) (Python round, half to even), by libswscale's
 *             bilinear scaler (PyAV's to_ndarray);
 *   count     an odd count repeats the last frame;
 *   resize    the image smart_resize of one frame (sides to multiples of
 *             32, the area within [min_pixels, max_pixels], which are the
 *             processor's own 128 x 32 x 32 and 768 x 32 x 32 whatever
 *             the release's configuration says), then the antialiased
 *             bicubic as for images;
 *   place     one <|vision_start|> <|video_pad|>... <|vision_end|> for the
 *             whole video, no time texts; frame pair j at M-RoPE time
 *             position j x position_step (temporal_patch_size / fps x
 *             position_id_per_seconds).
 */
#ifndef CLEF_VIDEO_SAMPLE_H
#define CLEF_VIDEO_SAMPLE_H

#include <stddef.h>
#include <stdint.h>

/* How a video's frames are chosen (clef_video_config.sampling). */
enum {
    CLEF_VIDEO_SPREAD = 0,          /* Clef: count frames spread over the
                                       clip, by index */
    CLEF_VIDEO_TIMED = 1            /* Clef Omni: every frame at or past
                                       each 1 / fps step, scaled first */
};

typedef struct {
    int      sampling;              /* CLEF_VIDEO_SPREAD */
    int64_t  max_frame_pixels;      /* timed: frames scaled to at most
                                       this as they are decoded (262144) */
    int32_t  position_step;         /* timed: M-RoPE time positions
                                       between frame pairs (13) */
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

/* Clef Omni's reference: its VIDEO_FPS (2.0) and MAX_VIDEO_FRAME_PIXELS
 * (256 x 32 x 32), its processor's video size (128 x 32 x 32 to 768 x 32
 * x 32 pixels a frame), and the positions a frame pair advances
 * (temporal_patch_size / fps x position_id_per_seconds, which the
 * reference computes in float32: whole for fps 2).  Patch, merge,
 * temporal patch and normalisation are left as vc has them. */
#define CLEF_OMNI_POSITIONS_PER_SECOND  13    /* the release's config */
void clef_video_config_omni(clef_video_config *vc,
    int position_id_per_seconds);

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

/* Timed sampling: the size a decoded w x h frame is scaled to. */
void clef_video_timed_size(int64_t w, int64_t h, const clef_video_config *vc,
    int32_t *ow, int32_t *oh);

/* Timed sampling: what the processor makes of kept frames decoded at
 * w x h (before the scale): the frames (kept rounded up to pairs), the
 * resized size and the grid; -1 with *why when smart_resize refuses it
 * or no frame was kept. */
int clef_video_timed_shape(int64_t kept, int64_t w, int64_t h,
    const clef_video_config *vc, clef_video_shape *s, const char **why);

/*
 * The <|video_pad|> tokens of a video of total frames at video_fps, h x w
 * upright: grid_t x (grid_h grid_w / merge^2); -1 when it is refused.
 */
int64_t clef_video_pad_tokens(int64_t total, double video_fps, int64_t h,
    int64_t w, const clef_video_config *vc);

#endif
