/*
 * The video processor's arithmetic (see video_sample.h).
 */
#include "media/video_sample.h"

#include <math.h>
#include <stdio.h>

#include "media/processor.h"
#include "media/video_decode.h"


/* The decoder's bounds live with the arithmetic, which links no codec:
 * the engine hands them to its decode process (decoder.h). */
void
clef_video_limits_default(clef_video_limits *lim)
{
    lim->max_seconds = CLEF_VIDEO_MAX_SECONDS;
    lim->max_frames = CLEF_VIDEO_MAX_FRAMES;
    lim->max_pixels = CLEF_VIDEO_MAX_PIXELS;
    lim->max_decode_pixels = CLEF_VIDEO_MAX_DECODE_PIXELS;
    lim->max_decode_seconds = CLEF_VIDEO_DECODE_SECONDS;
    lim->threads = CLEF_VIDEO_THREADS;
}


void
clef_video_config_default(clef_video_config *vc)
{
    int  c;

    vc->sampling = CLEF_VIDEO_SPREAD;
    vc->max_frame_pixels = 256 * 32 * 32;
    vc->position_step = 1;
    vc->fps = 2.0;
    vc->min_frames = 4;
    vc->max_frames = 768;
    vc->min_pixels = 4096;
    vc->max_pixels = 25165824;
    vc->cap_pixels_per_frame = 0;
    vc->max_video_tokens = 768;
    vc->patch_size = 16;
    vc->temporal_patch_size = 2;
    vc->merge_size = 2;
    vc->rescale_factor = 1.0 / 255.0;
    for (c = 0; c < 3; c++) {
        vc->mean[c] = 0.5;
        vc->std[c] = 0.5;
    }
}


void
clef_video_config_omni(clef_video_config *vc, int position_id_per_seconds)
{
    float  step;

    vc->sampling = CLEF_VIDEO_TIMED;
    vc->max_frame_pixels = 256 * 32 * 32;
    vc->fps = 2.0;
    vc->min_pixels = 128 * 32 * 32;
    vc->max_pixels = 768 * 32 * 32;
    vc->cap_pixels_per_frame = 0;
    /* torch: arange(t) * float32(temporal / fps) * position_id_per_seconds */
    step = (float) (vc->temporal_patch_size / vc->fps)
           * (float) position_id_per_seconds;
    vc->position_step = (int32_t) step;
}


int32_t
clef_video_sample_count(int64_t total, double video_fps,
    const clef_video_config *vc)
{
    double   x = (double) total / video_fps * vc->fps;
    int64_t  n;

    /* Python's int(): toward zero; a count past any clamp stays past it */
    n = x >= 9e18 ? INT64_MAX : (int64_t) x;
    if (n < vc->min_frames) {
        n = vc->min_frames;
    }
    if (n > vc->max_frames) {
        n = vc->max_frames;
    }
    if (n > total) {
        n = total;
    }
    return (int32_t) n;
}


void
clef_video_sample_indices(int64_t total, int32_t n, int64_t *idx)
{
    double   step;
    int32_t  i;

    if (n <= 0) {
        return;
    }
    if (n == 1) {
        idx[0] = 0;
        return;
    }
    /* numpy: y = arange(n) * step (or / div * delta when step is 0),
     * the last one set to stop; rint is round half to even */
    step = (double) (total - 1) / (double) (n - 1);
    for (i = 0; i < n - 1; i++) {
        idx[i] = step == 0.0 ? 0 : (int64_t) nearbyint((double) i * step);
    }
    idx[n - 1] = total - 1;
}


int
clef_video_smart_resize(int64_t n, int64_t h, int64_t w,
    const clef_video_config *vc, int64_t *oh, int64_t *ow, const char **why)
{
    int64_t  f = (int64_t) vc->patch_size * vc->merge_size;
    int64_t  tf = vc->temporal_patch_size, maxpx = vc->max_pixels, ppf;
    double   scale, hb, wb, tb, beta, fd = (double) f;

    if (n < tf) {
        *why = "has one frame only: a video needs two to make a temporal "
               "patch";
        return -1;
    }
    if (h <= 0 || w <= 0) {
        *why = "has no pixels";
        return -1;
    }
    if (vc->cap_pixels_per_frame) {
        ppf = maxpx / n;
        if (ppf > vc->max_video_tokens * f * f) {
            ppf = vc->max_video_tokens * f * f;
        }
        if (ppf < (int64_t) ((double) vc->min_pixels * 1.05)) {
            ppf = (int64_t) ((double) vc->min_pixels * 1.05);
        }
        maxpx = ppf * n;
    }
    if (h < f || w < f) {
        scale = fmax(fd / (double) h, fd / (double) w);
        h = (int64_t) ((double) h * scale);
        w = (int64_t) ((double) w * scale);
    }
    if ((double) (h > w ? h : w) / (double) (h < w ? h : w) > 200) {
        *why = "has an aspect ratio over 200";
        return -1;
    }
    hb = nearbyint((double) h / fd) * fd;
    wb = nearbyint((double) w / fd) * fd;
    tb = nearbyint((double) n / (double) tf) * (double) tf;
    if (tb * hb * wb > (double) maxpx) {
        beta = sqrt((double) (n * h * w) / (double) maxpx);
        hb = fmax(fd, floor((double) h / beta / fd) * fd);
        wb = fmax(fd, floor((double) w / beta / fd) * fd);
    } else if (tb * hb * wb < (double) vc->min_pixels) {
        beta = sqrt((double) vc->min_pixels / (double) (n * h * w));
        hb = ceil((double) h * beta / fd) * fd;
        wb = ceil((double) w * beta / fd) * fd;
    }
    if (hb < fd || wb < fd || hb > 65536 || wb > 65536) {
        *why = "resizes to no valid size";
        return -1;
    }
    *oh = (int64_t) hb;
    *ow = (int64_t) wb;
    return 0;
}


int32_t
clef_video_grid_t(int32_t n, const clef_video_config *vc)
{
    return (n + vc->temporal_patch_size - 1) / vc->temporal_patch_size;
}


void
clef_video_pair_times(const int64_t *idx, int32_t n, double video_fps,
    const clef_video_config *vc, double *t)
{
    int32_t  j, a, b, tp = vc->temporal_patch_size;
    int32_t  g = clef_video_grid_t(n, vc);

    /* the index list padded with its last to whole pairs, each index /
     * fps, then (first + last of the pair) / 2 */
    for (j = 0; j < g; j++) {
        a = j * tp;
        b = a + tp - 1 < n ? a + tp - 1 : n - 1;
        t[j] = ((double) idx[a] / video_fps + (double) idx[b] / video_fps)
               / 2;
    }
}


int
clef_video_time_text(double t, char *buf, size_t size)
{
    /* glibc rounds the exact binary value half to even, as Python's
     * format(t, ".1f") does */
    return snprintf(buf, size, "<%.1f seconds>", t);
}


int
clef_video_shape_of(int64_t total, double video_fps, int64_t h, int64_t w,
    const clef_video_config *vc, clef_video_shape *s, const char **why)
{
    s->n_frames = clef_video_sample_count(total, video_fps, vc);
    if (clef_video_smart_resize(s->n_frames, h, w, vc, &s->height,
                                &s->width, why) != 0)
    {
        return -1;
    }
    s->grid_t = clef_video_grid_t(s->n_frames, vc);
    s->grid_h = (int32_t) (s->height / vc->patch_size);
    s->grid_w = (int32_t) (s->width / vc->patch_size);
    return 0;
}


void
clef_video_norm(const clef_video_config *vc, float mean[3], float std[3])
{
    float  inv = (float) (1.0 / vc->rescale_factor);
    int    c;

    /* torch.tensor(mean) * (1.0 / rescale_factor), as for images */
    for (c = 0; c < 3; c++) {
        mean[c] = (float) vc->mean[c] * inv;
        std[c] = (float) vc->std[c] * inv;
    }
}


int64_t
clef_video_pad_tokens(int64_t total, double video_fps, int64_t h, int64_t w,
    const clef_video_config *vc)
{
    clef_video_shape  s;
    const char       *why;

    if (clef_video_shape_of(total, video_fps, h, w, vc, &s, &why) != 0) {
        return -1;
    }
    return (int64_t) s.grid_t * s.grid_h * s.grid_w
           / (vc->merge_size * vc->merge_size);
}


void
clef_video_timed_size(int64_t w, int64_t h, const clef_video_config *vc,
    int32_t *ow, int32_t *oh)
{
    double  scale, x;

    /* min(1.0, math.sqrt(MAX / (w * h))); round() half to even */
    scale = sqrt((double) vc->max_frame_pixels / (double) (w * h));
    if (scale > 1.0) {
        scale = 1.0;
    }
    x = nearbyint((double) w * scale / 2) * 2;
    *ow = x < 2 ? 2 : (int32_t) x;
    x = nearbyint((double) h * scale / 2) * 2;
    *oh = x < 2 ? 2 : (int32_t) x;
}


int
clef_video_timed_shape(int64_t kept, int64_t w, int64_t h,
    const clef_video_config *vc, clef_video_shape *s, const char **why)
{
    int32_t  sw, sh;

    if (kept < 1 || w < 1 || h < 1) {
        *why = "has no decodable frames";
        return -1;
    }
    clef_video_timed_size(w, h, vc, &sw, &sh);
    s->n_frames = (int32_t) (kept + (vc->temporal_patch_size
                                     - kept % vc->temporal_patch_size)
                                    % vc->temporal_patch_size);
    if (clef_smart_resize(sh, sw, vc->patch_size * vc->merge_size,
                          vc->min_pixels, vc->max_pixels, &s->height,
                          &s->width, why) != 0)
    {
        return -1;
    }
    s->grid_t = clef_video_grid_t(s->n_frames, vc);
    s->grid_h = (int32_t) (s->height / vc->patch_size);
    s->grid_w = (int32_t) (s->width / vc->patch_size);
    return 0;
}
