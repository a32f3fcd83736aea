/*
 * The media kinds of a request (see kinds.h): one row each.
 */
#include "media/kinds.h"

#include <stdio.h>
#include <string.h>

#include "media/image_input.h"


/* An image's pads from its header's size (smart_resize is symmetric, so an
 * EXIF rotation does not change them), and its start and end tokens. */
static int64_t
image_header_ids(const clef_media_input *in, const clef_media_conf *mc)
{
    int64_t  n = clef_image_pad_tokens(in->height, in->width, &mc->processor);

    return n < 0 ? -1 : n + 2;
}


static const clef_media_kind_info  kinds[CLEF_MEDIA_KINDS] = {
    [CLEF_MEDIA_IMAGE] = {
        CLEF_MEDIA_IMAGE, "images", "image", "images", "Image",
        "images_unsupported", "too_many_images",
        { "image_url", "input_image", NULL },
        { CLEF_IMAGE_MAX_ITEMS, CLEF_IMAGE_MAX_BASE64, CLEF_IMAGE_MAX_BYTES,
          CLEF_IMAGE_MAX_PIXELS },
        clef_image_inputs_read, image_header_ids
    },
    /* Cloudflare's Clef takes up to 2 videos (issue 21) */
    [CLEF_MEDIA_VIDEO] = {
        CLEF_MEDIA_VIDEO, "videos", "video", "videos", "Video",
        "videos_unsupported", "too_many_videos",
        { "video_url", NULL },
        { 2, 0, 0, 0 },
        NULL, NULL
    },
    /* Clef Omni takes up to 4 audio clips (issue 22) */
    [CLEF_MEDIA_AUDIO] = {
        CLEF_MEDIA_AUDIO, "audio", "audio clip", "audio clips", "Audio",
        "audio_unsupported", "too_many_audio",
        { "input_audio", NULL },
        { 4, 0, 0, 0 },
        NULL, NULL
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
    clef_processor_config_default(&mc->processor);
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
