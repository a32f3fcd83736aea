/*
 * Decoding an audio file held in memory to 16 kHz mono float samples, the
 * way Clef Omni's reference does (joint_schema_model.py _decode_audio,
 * PyAV 18):
 *
 *   open     av.open on the bytes: libavformat probes the container,
 *            avformat_find_stream_info reads the streams;
 *   stream   the first stream of type audio (not av_find_best_stream),
 *            decoded by avcodec_find_decoder()'s decoder for its codec,
 *            every packet of it, then the decoder drained;
 *   resample av.AudioResampler(format="flt", layout="mono", rate=16000):
 *            PyAV builds the libavfilter graph abuffer (the first
 *            frame's rate, sample format, layout name and time base) ->
 *            aformat (sample_rates=16000, sample_fmts=flt,
 *            channel_layouts=mono) -> abuffersink, and libavfilter puts
 *            an aresample filter (libswresample with its defaults: the
 *            polyphase filter of 32 taps, Kaiser window, cutoff 0.97;
 *            its default rematrix, not normalised for float output: stereo
 *            is (L + R) / sqrt(2), not a mean; 5.1 is FC + (FL + FR) /
 *            sqrt(2) + (SL + SR) / 2, the LFE dropped) in front of
 *            aformat; every decoded frame is pushed, then EOF,
 *            which drains the resampler's tail.  A first frame already
 *            in flt, mono, 16 kHz passes through untouched (PyAV's
 *            shortcut; the graph would not change it either);
 *   refusal  a frame whose format, layout or rate differs from the
 *            first's fails, as PyAV's resampler raises; no audio stream,
 *            or no sample at all, is the reference's "no decodable audio
 *            stream".
 *
 * This code builds the same graph, so it gives the same samples as PyAV
 * on the same FFmpeg.  PyAV's wheels carry their own FFmpeg (8.1 for
 * PyAV 18.1), the engine uses the system's (Debian 12: 5.1); the fixtures
 * (t/fixtures/audio) measure the difference, t/unit/test_audio.c states
 * it.
 *
 * Safety, because the file comes from a request (as video_decode.h):
 * input from memory only through a custom AVIO context, io_open refused,
 * protocol_whitelist "", demuxers and decoders from short allow-lists,
 * at most 16 streams, a time budget (interrupt callback, read callback,
 * between packets), the output bounded by max_seconds as it grows; run
 * by the engine in the sandboxed decode process (decoder.h).
 */
#ifndef CLEF_AUDIO_DECODE_H
#define CLEF_AUDIO_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

#define CLEF_AUDIO_MAX_SECONDS        600.0     /* 10 minutes a clip */
#define CLEF_AUDIO_DECODE_SECONDS     30.0      /* per clip, whatever it is */
#define CLEF_AUDIO_MAX_CHANNELS       32
#define CLEF_AUDIO_MAX_RATE           768000    /* Hz, the source's */

typedef struct {
    double   max_seconds;           /* of 16 kHz output */
    double   max_decode_seconds;    /* wall clock */
    int32_t  track;                 /* 1: the clip is a video's sound
                                       (Clef Omni, media.h), index names
                                       the video: refusals say "Video i's
                                       sound", loc ["body","videos",i] */
    int32_t  pad;
} clef_audio_limits;

/* The bounds above (audio_input.c: no codec needed). */
void clef_audio_limits_default(clef_audio_limits *lim);

/* What the decoder found (for clef audio and the tests). */
typedef struct {
    char     container[24];     /* libavformat's name: "wav", "mp3" */
    char     codec[24];         /* the decoder's: "pcm_s16le", "mp3float" */
    int32_t  rate;              /* the stream's sample rate */
    int32_t  channels;
    char     layout[32];        /* "stereo", "5.1(side)" */
    int64_t  samples;           /* 16 kHz output samples */
} clef_audio_info;

/*
 * Decodes data[0..len) into *samples (malloc'ed, *n floats at 16 kHz,
 * mono; never empty on success) and info (may be NULL).  index names the
 * clip in refusals, 400 with loc ["body","audio",index]:
 *   audio_invalid    not a file of an allowed container, truncated,
 *                    undecodable, changing format mid-stream, or with a
 *                    sample that is NaN or infinite (a float WAV)
 *   audio_no_stream  no audio stream, or not a single sample decoded
 *   audio_codec_unsupported  a codec outside the allow-list
 *   audio_too_long   more than lim->max_seconds of audio
 *   audio_decode_budget  past lim->max_decode_seconds
 */
int clef_audio_decode(const uint8_t *data, size_t len, int index,
    const clef_audio_limits *lim, float **samples, int64_t *n,
    clef_audio_info *info, clef_error *err);

#endif
