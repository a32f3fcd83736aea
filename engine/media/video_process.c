/*
 * A video to patches (see video_process.h).
 */
#include "media/video_process.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "media/resize.h"

typedef struct {
    clef_video     *v;
    const int64_t  *indices;
    int32_t         sw, sh;         /* decoded frame */
    int32_t         dw, dh;         /* resized frame */
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


int
clef_video_load(const uint8_t *data, size_t len, int index,
    const clef_video_limits *lim, const clef_video_config *vc, clef_video *out,
    clef_error *err)
{
    clef_video_decoder  *d;
    load_ctx             c;
    const char          *why;
    char                 loc[64];
    int64_t              oh, ow;
    int32_t              n;
    float                inv;
    int                  ch, rc;

    memset(out, 0, sizeof(*out));
    snprintf(loc, sizeof(loc), "[\"body\",\"videos\",%d]", index);
    if (clef_video_open(data, len, index, lim, &d, err) != 0) {
        return -1;
    }
    out->info = *clef_video_decoder_info(d);
    n = clef_video_sample_count(out->info.n_frames, out->info.fps, vc);
    if (clef_video_smart_resize(n, out->info.height, out->info.width, vc,
                                &oh, &ow, &why) != 0)
    {
        clef_video_close(d);
        return clef_error_set(err, 400,
            n < vc->temporal_patch_size ? "video_one_frame" : "video_invalid",
            loc, "Video %d (%dx%d, %lld frames) %s.", index,
            (int) out->info.width, (int) out->info.height,
            (long long) out->info.n_frames, why);
    }

    out->n_frames = n;
    out->grid_t = clef_video_grid_t(n, vc);
    out->grid_h = (int32_t) (oh / vc->patch_size);
    out->grid_w = (int32_t) (ow / vc->patch_size);
    out->patch = vc->patch_size;
    out->temporal = vc->temporal_patch_size;
    out->merge = vc->merge_size;
    out->indices = malloc(sizeof(int64_t) * (size_t) n);
    out->times = malloc(sizeof(double) * (size_t) out->grid_t);
    out->rgb = malloc((size_t) n * (size_t) (oh * ow * 3));
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
    c.dw = (int32_t) ow;
    c.dh = (int32_t) oh;
    rc = clef_video_decode_frames(d, out->indices, n, resize_frame, &c, err);
    clef_video_close(d);
    if (rc != 0) {
        clef_video_free(out);
        return -1;
    }

    /* torch.tensor(mean) * (1.0 / rescale_factor), as for images */
    inv = (float) (1.0 / vc->rescale_factor);
    for (ch = 0; ch < 3; ch++) {
        out->mean[ch] = (float) vc->mean[ch] * inv;
        out->std[ch] = (float) vc->std[ch] * inv;
    }
    return 0;
}


void
clef_video_patch_row(const clef_video *v, int64_t p, float *row)
{
    int64_t         per = (int64_t) v->grid_h * v->grid_w, pair, q, block;
    int64_t         in, r, col, y, x, bw = v->grid_w / v->merge;
    int64_t         ps = v->patch, W = (int64_t) v->grid_w * ps;
    int64_t         plane = ps * ps, frame_px = per * plane, fr;
    const uint8_t  *px;
    int             c, t;

    pair = p / per;
    q = p % per;
    block = q / (v->merge * v->merge);
    in = q % (v->merge * v->merge);
    r = block / bw * v->merge + in / v->merge;
    col = block % bw * v->merge + in % v->merge;

    for (c = 0; c < 3; c++) {
        for (t = 0; t < v->temporal; t++) {
            /* an odd count's last pair repeats the last frame */
            fr = pair * v->temporal + t;
            if (fr >= v->n_frames) {
                fr = v->n_frames - 1;
            }
            for (y = 0; y < ps; y++) {
                px = v->rgb + (size_t) (fr * frame_px * 3)
                     + ((r * ps + y) * W + col * ps) * 3 + c;
                for (x = 0; x < ps; x++) {
                    row[(c * v->temporal + t) * plane + y * ps + x] =
                        ((float) px[3 * x] - v->mean[c]) / v->std[c];
                }
            }
        }
    }
}
