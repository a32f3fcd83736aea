/*
 * A video to patches (see video_process.h).
 */
#include "media/video_process.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "media/processor.h"
#include "media/resize.h"

typedef struct {
    clef_video     *v;
    const int64_t  *indices;
    int32_t         sw, sh;         /* decoded frame */
    int32_t         dw, dh;         /* resized frame */
    int32_t         cap;            /* timed: frames rgb has room for */
    int32_t         most;           /* timed: at most this many */
} load_ctx;


void
clef_video_free(clef_video *v)
{
    free(v->indices);
    free(v->times);
    free(v->rgb);
    memset(v, 0, sizeof(*v));
}


int64_t
clef_video_pair_tokens(const clef_video *v)
{
    return (int64_t) v->grid_h * v->grid_w / (v->merge * v->merge);
}


int64_t
clef_video_tokens(const clef_video *v)
{
    return v->grid_t * clef_video_pair_tokens(v);
}


int
clef_video_row_size(const clef_video *v)
{
    return 3 * v->temporal * v->patch * v->patch;
}


static int
resize_frame(void *ctx, int32_t k, const uint8_t *rgb, clef_error *err)
{
    load_ctx  *c = ctx;
    size_t     frame = (size_t) c->dw * (size_t) c->dh * 3;

    if (clef_resize_bicubic_aa(rgb, c->sw, c->sh, c->v->rgb + (size_t) k
                               * frame, c->dw, c->dh) != 0)
    {
        return clef_error_fail(err, CLEF_E_NO_MEMORY, "Out of memory.");
    }
    return 0;
}


/* Timed sampling: frames come until the stream ends, so the room for
 * them grows, up to c->most frames. */
static int
room_for(load_ctx *c, int32_t k, clef_error *err)
{
    size_t    frame = (size_t) c->dw * (size_t) c->dh * 3;
    uint8_t  *grow;
    int32_t   cap;

    if (k < c->cap) {
        return 0;
    }
    cap = c->cap ? 2 * c->cap : 16;
    if (cap > c->most) {
        cap = c->most;
    }
    grow = k < cap ? realloc(c->v->rgb, (size_t) cap * frame) : NULL;
    if (grow == NULL) {
        return clef_error_fail(err, CLEF_E_NO_MEMORY, "Out of memory.");
    }
    c->v->rgb = grow;
    c->cap = cap;
    return 0;
}


static int
resize_timed(void *ctx, int32_t k, const uint8_t *rgb, clef_error *err)
{
    load_ctx  *c = ctx;

    if (room_for(c, k, err) != 0) {
        return -1;
    }
    return resize_frame(ctx, k, rgb, err);
}


/* Clef Omni's video (video_sample.h's timed sampling). */
static int
load_timed(const uint8_t *data, size_t len, int index,
    const clef_video_limits *lim, const clef_video_config *vc, clef_video *out,
    clef_error *err)
{
    clef_video_decoder  *d;
    clef_video_shape     sh;
    load_ctx             c;
    const char          *why;
    char                 loc[64];
    size_t               frame;
    int32_t              k;
    int                  rc;

    snprintf(loc, sizeof(loc), "[\"body\",\"videos\",%d]", index);
    if (clef_video_open_timed(data, len, index, lim, vc, &d, err) != 0) {
        return -1;
    }
    out->info = *clef_video_decoder_info(d);
    if (clef_video_timed_shape(1, out->info.width, out->info.height, vc, &sh,
                               &why) != 0)
    {
        clef_video_close(d);
        return clef_error_set(err, 400, "video_invalid", loc,
            "Video %d (%dx%d) %s.", index, (int) out->info.width,
            (int) out->info.height, why);
    }
    memset(&c, 0, sizeof(c));
    c.v = out;
    clef_video_timed_size(out->info.width, out->info.height, vc, &c.sw,
                          &c.sh);
    c.dw = (int32_t) sh.width;
    c.dh = (int32_t) sh.height;
    /* one per decoded frame at most, and one more to make a pair */
    c.most = (int32_t) (out->info.n_frames + 16 + 1);
    rc = clef_video_decode_timed(d, resize_timed, &c, err);
    out->info = *clef_video_decoder_info(d);
    clef_video_close(d);
    if (rc != 0) {
        clef_video_free(out);
        return -1;
    }
    if (clef_video_timed_shape(out->info.kept, out->info.width,
                               out->info.height, vc, &sh, &why) != 0)
    {
        clef_video_free(out);
        return clef_error_set(err, 400, "video_invalid", loc,
                              "Video %d %s.", index, why);
    }
    /* an odd count repeats its last frame, as the reference's list does */
    frame = (size_t) c.dw * (size_t) c.dh * 3;
    for (k = out->info.kept; k < sh.n_frames; k++) {
        if (room_for(&c, k, err) != 0) {
            clef_video_free(out);
            return -1;
        }
        memcpy(out->rgb + (size_t) k * frame, out->rgb + (size_t) (k - 1)
               * frame, frame);
    }
    out->n_frames = sh.n_frames;
    out->grid_t = sh.grid_t;
    out->grid_h = sh.grid_h;
    out->grid_w = sh.grid_w;
    out->patch = vc->patch_size;
    out->temporal = vc->temporal_patch_size;
    out->merge = vc->merge_size;
    clef_video_norm(vc, out->mean, out->std);
    return 0;
}


int
clef_video_load(const uint8_t *data, size_t len, int index,
    const clef_video_limits *lim, const clef_video_config *vc, clef_video *out,
    clef_error *err)
{
    clef_video_decoder  *d;
    clef_video_shape     sh;
    load_ctx             c;
    const char          *why;
    char                 loc[64];
    int32_t              n;
    int                  rc;

    memset(out, 0, sizeof(*out));
    if (vc->sampling == CLEF_VIDEO_TIMED) {
        return load_timed(data, len, index, lim, vc, out, err);
    }
    snprintf(loc, sizeof(loc), "[\"body\",\"videos\",%d]", index);
    if (clef_video_open(data, len, index, lim, &d, err) != 0) {
        return -1;
    }
    out->info = *clef_video_decoder_info(d);
    if (clef_video_shape_of(out->info.n_frames, out->info.fps,
                            out->info.height, out->info.width, vc, &sh, &why)
        != 0)
    {
        clef_video_close(d);
        return clef_error_set(err, 400,
            sh.n_frames < vc->temporal_patch_size ? "video_one_frame"
                                                  : "video_invalid",
            loc, "Video %d (%dx%d, %lld frame%s) %s.", index,
            (int) out->info.width, (int) out->info.height,
            (long long) out->info.n_frames,
            out->info.n_frames == 1 ? "" : "s", why);
    }

    n = sh.n_frames;
    out->n_frames = n;
    out->grid_t = sh.grid_t;
    out->grid_h = sh.grid_h;
    out->grid_w = sh.grid_w;
    out->patch = vc->patch_size;
    out->temporal = vc->temporal_patch_size;
    out->merge = vc->merge_size;
    out->indices = malloc(sizeof(int64_t) * (size_t) n);
    out->times = malloc(sizeof(double) * (size_t) out->grid_t);
    out->rgb = malloc((size_t) n * (size_t) (sh.height * sh.width * 3));
    if (out->indices == NULL || out->times == NULL || out->rgb == NULL) {
        clef_video_close(d);
        clef_video_free(out);
        return clef_error_fail(err, CLEF_E_NO_MEMORY, "Out of memory.");
    }
    clef_video_sample_indices(out->info.n_frames, n, out->indices);
    clef_video_pair_times(out->indices, n, out->info.fps, vc, out->times);

    c.v = out;
    c.indices = out->indices;
    c.sw = out->info.width;
    c.sh = out->info.height;
    c.dw = (int32_t) sh.width;
    c.dh = (int32_t) sh.height;
    rc = clef_video_decode_frames(d, out->indices, n, resize_frame, &c, err);
    clef_video_close(d);
    if (rc != 0) {
        clef_video_free(out);
        return -1;
    }
    clef_video_norm(vc, out->mean, out->std);
    return 0;
}


void
clef_video_patch_row(const clef_video *v, int64_t p, float *row)
{
    clef_media_item  it;

    /* the frames as a media item with pixels, whose rows processor.h
     * makes */
    memset(&it, 0, sizeof(it));
    it.kind = CLEF_MEDIA_VIDEO;
    it.grid_t = v->grid_t;
    it.grid_h = v->grid_h;
    it.grid_w = v->grid_w;
    it.bytes = v->rgb;
    it.frames = v->n_frames;
    it.patch = v->patch;
    it.temporal = v->temporal;
    it.merge = v->merge;
    memcpy(it.mean, v->mean, sizeof(it.mean));
    memcpy(it.std, v->std, sizeof(it.std));
    clef_image_patch_row(&it, p, row);
}
