/*
 * Reading a request's videos in the worker (see video_input.h).  No frame
 * is decoded here and no codec is linked.
 */
#include "media/video_input.h"

#include <stdio.h>
#include <string.h>

#include "media/kinds.h"
#include "media/media_wire.h"
#include "media/video_decode.h"

static const clef_media_type  video_types[] = {
    { "video/mp4", CLEF_VIDEO_MP4 },
    { "video/quicktime", CLEF_VIDEO_MP4 },
    { "video/webm", CLEF_VIDEO_MKV },
    { "video/x-matroska", CLEF_VIDEO_MKV },
};

static const clef_media_wire  video_wire = {
    "video", "videos", "Video", "videos", "video/mp4",
    "video/mp4|webm|quicktime",
    "video/mp4, video/webm, video/quicktime and video/x-matroska",
    video_types, sizeof(video_types) / sizeof(video_types[0])
};


static const char *
family(clef_video_format f)
{
    return f == CLEF_VIDEO_MP4 ? "an MP4 or QuickTime" : "a WebM or Matroska";
}


/* The header's statements against the decoder's bounds (video_decode.h). */
static int
check_header(const clef_video_header *h, size_t i, const clef_media_limits *lim,
    const char *loc, clef_error *err)
{
    clef_video_limits  vl;
    int64_t            px = (int64_t) h->width * h->height;
    double             secs = (double) h->duration_us / 1e6;

    clef_video_limits_default(&vl);
    if (h->complete && h->video_tracks == 0) {
        return clef_error_set(err, 400, "video_no_stream", loc,
            "Video %zu has no video stream (its header lists no video "
            "track).", i);
    }
    if (h->video_tracks > 0 && h->supported == 0) {
        return clef_error_set(err, 400, "video_codec_unsupported", loc,
            "Video %zu is in %s; this server decodes H.264, HEVC, VP8, VP9 "
            "and AV1.", i, h->codec[0] != '\0' ? h->codec : "an unnamed codec");
    }
    if (px > lim->max_pixels) {
        return clef_error_set(err, 400, "video_too_many_pixels", loc,
            "Video %zu has frames of %dx%d pixels; the limit is %lld pixels "
            "a frame.", i, (int) h->width, (int) h->height,
            (long long) lim->max_pixels);
    }
    if (secs > vl.max_seconds) {
        return clef_error_set(err, 400, "video_too_long", loc,
            "Video %zu lasts %.1f s; the limit is %.0f s.", i, secs,
            vl.max_seconds);
    }
    if (h->frames > vl.max_frames) {
        return clef_error_set(err, 400, "video_too_many_frames", loc,
            "Video %zu has %lld frames; the limit is %lld.", i,
            (long long) h->frames, (long long) vl.max_frames);
    }
    if (px > 0 && h->frames > vl.max_decode_pixels / px) {
        return clef_error_set(err, 400, "video_decode_budget", loc,
            "Video %zu needs %lld frames of %dx%d decoded; the limit is %lld "
            "pixels.", i, (long long) h->frames, (int) h->width,
            (int) h->height, (long long) vl.max_decode_pixels);
    }
    return 0;
}


static int
read_one(clef_arena *a, const clef_json *v, size_t i,
    const clef_media_limits *lim, size_t *total, clef_media_input *in,
    clef_error *err)
{
    const clef_media_type  *type;
    clef_video_format       actual;
    clef_video_header       h;
    uint8_t                *bytes;
    size_t                  n;
    char                    loc[64];

    if (clef_media_wire_read(a, v, i, &video_wire, lim->max_base64, &type,
                             &bytes, &n, err) != 0)
    {
        return -1;
    }
    clef_media_wire_loc(&video_wire, i, NULL, loc, sizeof(loc));

    *total += n;
    if (*total > lim->max_bytes) {
        return clef_error_set(err, 413, "videos_too_large", loc,
            "Videos 0 to %zu decode to %zu bytes; the limit is %zu bytes "
            "for all videos of a request.", i, *total, lim->max_bytes);
    }

    actual = clef_video_sniff(bytes, n);
    if (actual == CLEF_VIDEO_NONE) {
        return clef_error_set(err, 400, "video_invalid", loc,
            "Video %zu is not an MP4, QuickTime, WebM or Matroska file (its "
            "first bytes are none of their signatures).", i);
    }
    if (actual != (clef_video_format) type->format) {
        return clef_error_set(err, 400, "video_type_mismatch", loc,
            "Video %zu is declared %s but its bytes are %s file.", i,
            type->name, family(actual));
    }
    if (clef_video_probe(actual, bytes, n, &h) != 0) {
        return clef_error_set(err, 400, "video_invalid", loc,
            "Video %zu cannot be read: %s.", i, actual == CLEF_VIDEO_MP4
            ? "it has no moov box (the file is truncated, or its index was "
              "never written)"
            : "it has no Matroska segment");
    }
    if (check_header(&h, i, lim, loc, err) != 0) {
        return -1;
    }

    in->kind = CLEF_MEDIA_VIDEO;
    in->format = actual;
    in->data = bytes;
    in->len = n;
    in->width = h.width;
    in->height = h.height;
    in->frames = (int32_t) h.frames;
    in->duration_us = h.duration_us;
    return 0;
}


int
clef_video_inputs_read(clef_arena *a, const clef_json *videos,
    const clef_media_limits *lim, clef_media_input **out, clef_error *err)
{
    clef_media_limits   defaults;
    clef_media_input   *in;
    size_t              i, total = 0;

    *out = NULL;
    if (videos == NULL || videos->type != CLEF_JSON_ARRAY || videos->len == 0) {
        return 0;
    }
    if (lim == NULL) {
        clef_media_limits_default(CLEF_MEDIA_VIDEO, &defaults);
        lim = &defaults;
    }
    in = clef_arena_calloc(a, sizeof(*in) * videos->len);
    if (in == NULL) {
        return clef_error_set(err, 500, "internal_error", "", "Out of memory.");
    }
    for (i = 0; i < videos->len; i++) {
        if (read_one(a, videos->items[i], i, lim, &total, &in[i], err) != 0) {
            return -1;
        }
    }
    *out = in;
    return 0;
}
