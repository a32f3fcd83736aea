/*
 * A video as a media item (see video_item.h).
 */
#include "media/video_item.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* The processor's shape of what the decode process reports: from the
 * scan, or, for timed sampling, from the frames it kept (no more than one
 * a packet, as its decoder is held to) and the stream's size. */
static int
shape_of(const clef_video_info *info, const clef_video_config *vc,
    clef_video_shape *s, const char **why)
{
    if (vc->sampling == CLEF_VIDEO_TIMED) {
        if (info->kept < 1 || info->kept > info->n_frames + 16) {
            *why = "kept frames out of range";
            return -1;
        }
        return clef_video_timed_shape(info->kept, info->width, info->height,
                                      vc, s, why);
    }
    return clef_video_shape_of(info->n_frames, info->fps, info->height,
                               info->width, vc, s, why);
}


int64_t
clef_video_frames_bytes(const clef_video_info *info,
    const clef_video_config *vc)
{
    clef_video_shape  s;
    const char       *why;

    if (info->n_frames < 1 || info->width < 1 || info->height < 1
        || !(info->fps > 0) || shape_of(info, vc, &s, &why) != 0)
    {
        return -1;
    }
    return (int64_t) s.n_frames * s.height * s.width * 3;
}


static int
pair_times(const clef_video_info *info, const clef_video_config *vc,
    const clef_video_shape *s, clef_media_item *out)
{
    int64_t  *idx;

    idx = malloc(sizeof(int64_t) * (size_t) s->n_frames);
    out->timestamps = malloc(sizeof(double) * (size_t) s->grid_t);
    if (idx == NULL || out->timestamps == NULL) {
        free(idx);
        return -1;
    }
    clef_video_sample_indices(info->n_frames, s->n_frames, idx);
    clef_video_pair_times(idx, s->n_frames, info->fps, vc, out->timestamps);
    free(idx);
    return 0;
}


int
clef_video_item(const clef_video_info *info, const clef_video_config *vc,
    uint8_t *rgb, size_t rgb_len, int index, clef_media_item *out,
    clef_error *err)
{
    clef_video_shape  s;
    const char       *why;
    char              loc[64];

    memset(out, 0, sizeof(*out));
    snprintf(loc, sizeof(loc), "[\"body\",\"videos\",%d]", index);
    if (clef_video_frames_bytes(info, vc) != (int64_t) rgb_len
        || shape_of(info, vc, &s, &why) != 0)
    {
        free(rgb);
        return clef_error_set(err, 400, "video_invalid", loc,
            "Video %d cannot be decoded: the decoder's frames do not match "
            "its own scan.", index);
    }
    out->has_audio = info->has_audio != 0;
    /* timed sampling: one span, frame pairs position_step apart in time,
     * no time texts; else each pair's time */
    if (vc->sampling == CLEF_VIDEO_TIMED) {
        out->t_step = vc->position_step;
    } else if (pair_times(info, vc, &s, out) != 0) {
        free(rgb);
        clef_media_item_free(out);
        return clef_error_fail(err, CLEF_E_NO_MEMORY, "Out of memory.");
    }
    out->kind = CLEF_MEDIA_VIDEO;
    out->grid_t = s.grid_t;
    out->grid_h = s.grid_h;
    out->grid_w = s.grid_w;
    out->tokens = (int64_t) s.grid_t * s.grid_h * s.grid_w
                  / (vc->merge_size * vc->merge_size);
    out->bytes = rgb;
    out->frames = s.n_frames;
    out->patch = vc->patch_size;
    out->temporal = vc->temporal_patch_size;
    out->merge = vc->merge_size;
    clef_video_norm(vc, out->mean, out->std);
    return 0;
}
