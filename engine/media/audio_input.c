/*
 * Reading a request's audio clips in the worker (see audio_input.h).  No
 * sample is decoded here and no codec is linked.
 */
#include "media/audio_input.h"

#include <stdio.h>
#include <string.h>

#include "media/audio_decode.h"
#include "media/kinds.h"
#include "media/media_wire.h"

static const clef_media_type  audio_types[] = {
    { "audio/wav", CLEF_AUDIO_WAV },
    { "audio/x-wav", CLEF_AUDIO_WAV },
    { "audio/wave", CLEF_AUDIO_WAV },
    { "audio/vnd.wave", CLEF_AUDIO_WAV },
    { "audio/flac", CLEF_AUDIO_FLAC },
    { "audio/x-flac", CLEF_AUDIO_FLAC },
    { "audio/mpeg", CLEF_AUDIO_MP3 },
    { "audio/mp3", CLEF_AUDIO_MP3 },
    { "audio/ogg", CLEF_AUDIO_OGG },
    { "audio/opus", CLEF_AUDIO_OGG },
    { "audio/mp4", CLEF_AUDIO_MP4 },
    { "audio/m4a", CLEF_AUDIO_MP4 },
    { "audio/x-m4a", CLEF_AUDIO_MP4 },
    { "audio/aac", CLEF_AUDIO_AAC },
    { "audio/aacp", CLEF_AUDIO_AAC },
    { "audio/webm", CLEF_AUDIO_WEBM },
};

static const clef_media_wire  audio_wire = {
    "audio", "audio clips", "Audio clip", "audio", "audio/wav",
    "audio/wav|flac|mpeg|ogg|mp4|aac|webm",
    "audio/wav, audio/flac, audio/mpeg, audio/ogg, audio/mp4, audio/aac "
    "and audio/webm",
    audio_types, sizeof(audio_types) / sizeof(audio_types[0])
};


void
clef_audio_limits_default(clef_audio_limits *lim)
{
    memset(lim, 0, sizeof(*lim));
    lim->max_seconds = CLEF_AUDIO_MAX_SECONDS;
    lim->max_decode_seconds = CLEF_AUDIO_DECODE_SECONDS;
}


const char *
clef_audio_format_name(clef_audio_format f)
{
    static const char *const  names[] = {
        "an unknown", "a WAV", "a FLAC", "an MP3", "an Ogg", "an MP4/M4A",
        "an AAC (ADTS)", "a WebM"
    };

    return (unsigned) f < sizeof(names) / sizeof(names[0]) ? names[f]
                                                            : names[0];
}


static int
read_one(clef_arena *a, const clef_json *v, size_t i,
    const clef_media_limits *lim, size_t *total, clef_media_input *in,
    clef_error *err)
{
    const clef_media_type  *type;
    clef_audio_format       actual;
    clef_audio_header       h;
    uint8_t                *bytes;
    size_t                  n;
    double                  secs;
    char                    loc[64];

    if (clef_media_wire_read(a, v, i, &audio_wire, lim->max_base64, &type,
                             &bytes, &n, err) != 0)
    {
        return -1;
    }
    clef_media_wire_loc(&audio_wire, i, NULL, loc, sizeof(loc));

    *total += n;
    if (*total > lim->max_bytes) {
        return clef_error_set(err, 413, "audio_total_too_large", loc,
            "Audio clips 0 to %zu decode to %zu bytes; the limit is %zu "
            "bytes for all audio clips of a request.", i, *total,
            lim->max_bytes);
    }
    actual = clef_audio_sniff(bytes, n);
    if (actual == CLEF_AUDIO_NONE) {
        return clef_error_set(err, 400, "audio_invalid", loc,
            "Audio clip %zu is not a WAV, FLAC, MP3, Ogg, MP4/M4A, AAC or "
            "WebM file (its first bytes are none of their signatures).", i);
    }
    if (actual != (clef_audio_format) type->format) {
        return clef_error_set(err, 400, "audio_type_mismatch", loc,
            "Audio clip %zu is declared %s but its bytes are %s file.", i,
            type->name, clef_audio_format_name(actual));
    }
    clef_audio_probe(actual, bytes, n, &h);
    secs = h.rate > 0 ? (double) h.frames / h.rate : 0.0;
    if (secs > CLEF_AUDIO_MAX_SECONDS) {
        return clef_error_set(err, 400, "audio_too_long", loc,
            "Audio clip %zu lasts %.1f s; the limit is %.0f s.", i, secs,
            CLEF_AUDIO_MAX_SECONDS);
    }

    in->kind = CLEF_MEDIA_AUDIO;
    in->format = actual;
    in->data = bytes;
    in->len = n;
    in->duration_us = h.rate > 0 ? h.frames * 1000000 / h.rate : 0;
    return 0;
}


int
clef_audio_inputs_read(clef_arena *a, const clef_json *clips,
    const clef_media_limits *lim, clef_media_input **out, clef_error *err)
{
    clef_media_limits   defaults;
    clef_media_input   *in;
    size_t              i, total = 0;

    *out = NULL;
    if (clips == NULL || clips->type != CLEF_JSON_ARRAY || clips->len == 0) {
        return 0;
    }
    if (lim == NULL) {
        clef_media_limits_default(CLEF_MEDIA_AUDIO, &defaults);
        lim = &defaults;
    }
    in = clef_arena_calloc(a, sizeof(*in) * clips->len);
    if (in == NULL) {
        return clef_error_set(err, 500, "internal_error", "", "Out of memory.");
    }
    for (i = 0; i < clips->len; i++) {
        if (read_one(a, clips->items[i], i, lim, &total, &in[i], err) != 0) {
            return -1;
        }
    }
    *out = in;
    return 0;
}
