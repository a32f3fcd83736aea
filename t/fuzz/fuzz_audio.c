/*
 * The audio path on arbitrary bytes: the in-memory demuxers (WAV, FLAC,
 * MP3, Ogg, MP4/M4A, ADTS, WebM only), the decoders (PCM, FLAC, MP3, Opus,
 * Vorbis, AAC, ALAC), PyAV's resampling graph (audio_decode.h), then the
 * log-mel features of what decoded (audio_features.h), as the engine's
 * decode process and finish step run them; also the worker's sniffing and
 * header probe (audio_input.h) on the same bytes.  Never a crash or a
 * leak; decoded samples are finite (a float WAV may hold any value, NaN
 * and infinity are refused), their features finite and the
 * tower's count of them positive; a refusal is a complete 400 naming clip
 * 0, or a 500.  The limits are lowered (30 s of audio, 2 s of decoding)
 * so that an input claiming hours costs milliseconds.
 */
#include <math.h>
#include <stdint.h>

#include "fuzz_common.h"
#include "media/audio_decode.h"
#include "media/audio_features.h"
#include "media/audio_input.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    clef_audio_limits   lim;
    clef_audio_config   ac;
    clef_audio_header   h;
    clef_error          err;
    const float        *s[1];
    float              *samples, *out[1];
    int64_t             n, len[1], i;
    int32_t             frames[1];

    clef_audio_probe(clef_audio_sniff(data, size), data, size, &h);
    if (h.frames < 0 || h.rate < 0 || h.channels < 0) {
        fuzz_fail("header: %lld frames at %d Hz", (long long) h.frames,
                  (int) h.rate);
    }

    clef_audio_limits_default(&lim);
    lim.max_seconds = 30.0;
    lim.max_decode_seconds = 2.0;
    if (clef_audio_decode(data, size, 0, &lim, &samples, &n, NULL, &err)
        != 0)
    {
        if (err.status != 400 && err.status != 500) {
            fuzz_fail("refusal with status %d", err.status);
        }
        if (err.status == 400
            && (strcmp(err.loc, "[\"body\",\"audio\",0]") != 0
                || strncmp(err.type, "audio_", 6) != 0
                || err.message[0] == '\0'))
        {
            fuzz_fail("refusal without its clip: %s %s", err.type, err.loc);
        }
        return 0;
    }
    if (samples == NULL || n < 1 || n > 30 * CLEF_AUDIO_RATE) {
        fuzz_fail("decoded %lld samples", (long long) n);
    }
    for (i = 0; i < n; i++) {
        if (!isfinite(samples[i])) {
            fuzz_fail("sample %lld is %g", (long long) i, samples[i]);
        }
    }
    clef_audio_config_default(&ac);
    s[0] = samples;
    len[0] = n;
    if (clef_audio_record_features(&ac, s, len, 1, out, frames, &err) == 0) {
        if (frames[0] < 1 || clef_audio_output_tokens(frames[0]) < 1) {
            fuzz_fail("%d frames", (int) frames[0]);
        }
        for (i = 0; i < (int64_t) ac.n_mels * frames[0]; i++) {
            if (!isfinite(out[0][i])) {
                fuzz_fail("feature %lld is %g", (long long) i, out[0][i]);
            }
        }
        free(out[0]);
    } else if (strcmp(err.type, "audio_too_short") != 0) {
        fuzz_fail("features refused: %s", err.type);
    }
    free(samples);
    return 0;
}
