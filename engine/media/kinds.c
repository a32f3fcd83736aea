/*
 * The media kinds of a request (see kinds.h): one row each.
 */
#include "media/kinds.h"

#include <stdio.h>
#include <string.h>

#include "media/audio_input.h"
#include "media/image_input.h"
#include "media/video_decode.h"
#include "media/video_input.h"


/* An image's pads from its header's size (smart_resize is symmetric, so an
 * EXIF rotation does not change them), and its start and end tokens. */
static int64_t
image_header_ids(const clef_media_input *in, const clef_media_conf *mc)
{
    int64_t  n = clef_image_pad_tokens(in->height, in->width,
                                       &CLEF_MC_IMAGE(mc));

    return n < 0 ? -1 : n + 2;
}


/* A video's least ids from its header: each pair's start, pads and end,
 * and at least one token of its "<t seconds>" text.  The header's frame
 * rate is not the decoder's (a scan of every packet: variable-rate clips,
 * edit lists), so the count is tried for any rate within 10% of it and
 * the least taken; a header that does not state frames and duration
 * (Matroska) gives the least any video makes, one pair of one pad.
 * Timed sampling (Clef Omni) counts one pair of the least area. */
static int64_t
video_header_ids(const clef_media_input *in, const clef_media_conf *mc)
{
    const clef_video_config  *vc = &CLEF_MC_VIDEO(mc);
    const char               *why;
    double                    fps, secs = (double) in->duration_us / 1e6;
    int64_t                   oh, ow, least = INT64_MAX, ids, pad, m;
    int32_t                   n, lo, hi;

    if (vc->sampling == CLEF_VIDEO_TIMED) {
        /* Clef Omni: at least one pair, which smart_resize gives at least
         * min_pixels, in one span */
        m = (int64_t) vc->patch_size * vc->merge_size;
        return vc->min_pixels / (m * m) + 2;
    }
    if (in->frames <= 0 || secs <= 0 || in->width <= 0 || in->height <= 0) {
        return 4;
    }
    fps = (double) in->frames / secs;
    lo = clef_video_sample_count(in->frames, fps * 1.1, vc);
    hi = clef_video_sample_count(in->frames, fps / 1.1, vc);
    m = (int64_t) vc->merge_size * vc->merge_size;
    for (n = lo; n <= hi; n++) {
        if (clef_video_smart_resize(n, in->height, in->width, vc, &oh, &ow,
                                    &why) != 0)
        {
            continue;
        }
        pad = (oh / vc->patch_size) * (ow / vc->patch_size) / m;
        ids = (int64_t) clef_video_grid_t(n, vc) * (pad + 3);
        least = ids < least ? ids : least;
    }
    return least == INT64_MAX ? 4 : least;
}


/* An audio clip's least ids from its header: <|audio_start|>, the tower's
 * positions for the frames its stated length gives, <|audio_end|>.  The
 * resampler's output may fall a few samples short of length x 16000 /
 * rate, hence the margin; a header that states no length (MP3, Ogg, MP4)
 * gives the least any clip makes, one position. */
static int64_t
audio_header_ids(const clef_media_input *in, const clef_media_conf *mc)
{
    const clef_audio_config  *ac = &CLEF_MC_AUDIO(mc);
    int64_t                   n, frames;

    n = in->duration_us * ac->sampling_rate / 1000000 - 64;
    frames = n > 0 ? n / ac->hop_length : 0;
    return clef_audio_output_tokens(frames > 1 ? frames : 1) + 2;
}


static const clef_media_kind_info  kinds[CLEF_MEDIA_KINDS] = {
    [CLEF_MEDIA_IMAGE] = {
        CLEF_MEDIA_IMAGE, "images", "image", "images", "Image",
        "images_unsupported", "too_many_images",
        { "image_url", "input_image", NULL },
        { CLEF_IMAGE_MAX_ITEMS, CLEF_IMAGE_MAX_BASE64, CLEF_IMAGE_MAX_BYTES,
          CLEF_IMAGE_MAX_PIXELS },
        "clef_max_images", clef_image_inputs_read, image_header_ids
    },
    /* Cloudflare's Clef takes up to 2 videos (video_input.h) */
    [CLEF_MEDIA_VIDEO] = {
        CLEF_MEDIA_VIDEO, "videos", "video", "videos", "Video",
        "videos_unsupported", "too_many_videos",
        { "video_url", NULL },
        { CLEF_VIDEO_MAX_ITEMS, CLEF_VIDEO_MAX_BASE64, CLEF_VIDEO_MAX_BYTES,
          CLEF_VIDEO_MAX_PIXELS },
        "clef_max_videos", clef_video_inputs_read, video_header_ids
    },
    /* Clef Omni takes up to 4 audio clips (issue 22) */
    [CLEF_MEDIA_AUDIO] = {
        CLEF_MEDIA_AUDIO, "audio", "audio clip", "audio clips", "Audio",
        "audio_unsupported", "too_many_audio",
        { "input_audio", NULL },
        { CLEF_AUDIO_MAX_ITEMS, CLEF_AUDIO_MAX_BASE64, CLEF_AUDIO_MAX_BYTES,
          0 },
        "clef_max_audio", clef_audio_inputs_read, audio_header_ids
    },
};


const clef_media_kind_info *
clef_media_kind_of(int kind)
{
    return kind > 0 && kind < CLEF_MEDIA_KINDS ? &kinds[kind] : NULL;
}


void
clef_media_limits_default(clef_media_kind kind, clef_media_limits *lim)
{
    const clef_media_kind_info  *k = clef_media_kind_of(kind);

    if (k != NULL) {
        *lim = k->limits;
    } else {
        memset(lim, 0, sizeof(*lim));
    }
}


void
clef_media_conf_default(clef_media_conf *mc)
{
    memset(mc, 0, sizeof(*mc));
    clef_processor_config_default(&CLEF_MC_IMAGE(mc));
    clef_video_config_default(&CLEF_MC_VIDEO(mc));
    clef_audio_config_default(&CLEF_MC_AUDIO(mc));
}


void
clef_media_accepted_words(unsigned accepts, char *out, size_t cap)
{
    const char  *list[CLEF_MEDIA_KINDS + 1];
    size_t       n = 0, i, w;

    list[n++] = "text";
    list[n++] = "JSON states";
    for (i = 1; i < CLEF_MEDIA_KINDS; i++) {
        if (accepts & CLEF_MEDIA_BIT(i)) {
            list[n++] = kinds[i].many;
        }
    }
    /* "a and b", "a, b and c" */
    for (i = 0, w = 0; i < n && w < cap; i++) {
        w += (size_t) snprintf(out + w, cap - w, "%s%s",
                               i == 0 ? "" : i == n - 1 ? " and " : ", ",
                               list[i]);
    }
}


void
clef_media_conf_tokens(const clef_media_conf *mc, clef_media_tokens *tokens)
{
    int  k;

    for (k = 0; k < CLEF_MEDIA_KINDS; k++) {
        tokens[k] = mc->kind[k].tokens;
    }
}
