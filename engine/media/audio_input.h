/*
 * The audio clips of a request as they arrive (issue 22; Clef Omni takes
 * them): a top-level "audio" array, at most clef_max_audio (4) items, each
 * a data URL "data:audio/wav;base64,..." or an object
 * {"content_type": "audio/mpeg", "base64": "..."}, as images are sent.
 *
 *   family   content types                          decoded by
 *   WAV      audio/wav, audio/x-wav, audio/wave,    pcm (s16, s24, s32,
 *            audio/vnd.wave                         f32, f64, u8, A-law,
 *                                                   mu-law)
 *   FLAC     audio/flac, audio/x-flac               flac
 *   MP3      audio/mpeg, audio/mp3                  mp3
 *   Ogg      audio/ogg, audio/opus                  opus, vorbis, flac
 *   MP4      audio/mp4, audio/m4a, audio/x-m4a      aac, alac
 *   AAC      audio/aac, audio/aacp (ADTS)           aac
 *   WebM     audio/webm                             opus, vorbis
 *
 * Reading them is the worker's part, before anything is queued, with no
 * codec: the wire form (media_wire.h), the limits, the base64, and the
 * first bytes, which must be the declared family's (an MP3 may start
 * with an ID3 tag).  A WAV header (fmt and data chunks) and a FLAC
 * header (STREAMINFO) state the clip's length exactly: a clip over the
 * 10-minute limit is refused here, and its duration gives the least
 * tokens it becomes (kinds.c); the other containers are measured by the
 * decoder.  Samples are decoded later, by the engine's decode process
 * (decoder.h, audio_decode.h).
 *
 *  status type                     when
 *  413    audio_too_large          more than 16 MiB of base64
 *  413    audio_total_too_large    over 24 MiB decoded in all
 *  400    audio_invalid            none of the families' signatures
 *  400    audio_type_mismatch      the bytes are another family's
 *  400    audio_too_long           its header states over 600 s
 * (and media_wire.h's refusals with "audio"), each with loc
 * ["body","audio",I] naming the clip.  The engine's decode process adds
 * audio_invalid, audio_no_stream, audio_codec_unsupported,
 * audio_too_long and audio_decode_budget (audio_decode.h), and the
 * features audio_too_short (audio_features.h).
 */
#ifndef CLEF_AUDIO_INPUT_H
#define CLEF_AUDIO_INPUT_H

#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/error.h"
#include "media/media.h"
#include "text/json.h"

typedef enum {
    CLEF_AUDIO_NONE = 0,
    CLEF_AUDIO_WAV = 1,
    CLEF_AUDIO_FLAC = 2,
    CLEF_AUDIO_MP3 = 3,
    CLEF_AUDIO_OGG = 4,
    CLEF_AUDIO_MP4 = 5,
    CLEF_AUDIO_AAC = 6,
    CLEF_AUDIO_WEBM = 7
} clef_audio_format;

#define CLEF_AUDIO_MAX_ITEMS    4               /* Clef Omni's endpoint */
#define CLEF_AUDIO_MAX_BASE64   (16u << 20)     /* per clip, as sent */
#define CLEF_AUDIO_MAX_BYTES    (24u << 20)     /* decoded, all clips */

/* "WAV", "FLAC", ... for messages. */
const char *clef_audio_format_name(clef_audio_format f);

/* The family the first bytes say, CLEF_AUDIO_NONE when none. */
clef_audio_format clef_audio_sniff(const uint8_t *p, size_t len);

/* What a header states (audio_probe.c): the source's frames (samples per
 * channel) and rate, 0 when it does not say. */
typedef struct {
    int64_t  frames;
    int32_t  rate;
    int32_t  channels;
} clef_audio_header;

/* WAV's fmt and data chunks (data clamped to the bytes there are) and
 * FLAC's STREAMINFO; other families, and headers that do not parse, state
 * nothing (0). */
void clef_audio_probe(clef_audio_format f, const uint8_t *p, size_t len,
    clef_audio_header *h);

/*
 * Reads clips (a JSON array) into n media inputs of the audio kind
 * (media.h: format, bytes, duration_us where the header states it, else
 * 0), allocated with their bytes in a; lim NULL: the audio kind's
 * defaults (kinds.h).  Returns 0, or -1 with err filled for the first
 * clip refused.
 */
int clef_audio_inputs_read(clef_arena *a, const clef_json *clips,
    const clef_media_limits *lim, clef_media_input **out, clef_error *err);

#endif
