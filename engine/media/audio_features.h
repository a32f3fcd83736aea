/*
 * Log-mel features of 16 kHz mono samples, as Clef Omni's processor
 * computes them (transformers 5.10.2: Qwen3OmniMoeProcessor calls its
 * WhisperFeatureExtractor with padding "longest", no truncation and the
 * attention mask; with torch installed the extractor takes its torch
 * path, _torch_extract_fbank_features).  For the clips of one record:
 *
 *   pad      every clip is padded with zeros (padding_value) at its end
 *            to the record's longest, L samples;
 *   stft     torch.stft(n_fft 400, hop 160, periodic Hann window,
 *            center: L reflected by n_fft/2 at both ends), power |X|^2,
 *            the last of its 1 + L/hop frames dropped: F = L/hop frames;
 *   mel      128 triangular filters, Slaney scale and norm, 0 to 8 kHz
 *            over the 201 bins; log10 of max(mel, 1e-10);
 *   floor    max(v, m - 8) where m is the clip's largest value over all
 *            its F padded frames and all mels;
 *   scale    (v + 4) / 4;
 *   mask     feature_attention_mask: frame t is valid when t * hop < n
 *            (n: the clip's own samples), i.e. min(ceil(n / hop), F)
 *            frames; the model reads only those.
 *
 * Why a record's clips are coupled: a clip shorter than the record's
 * longest sees zeros after its end where the longest sees the
 * reflection of its own end, so its last valid frames (whose windows
 * reach past its end) differ from what it gives alone; and the floor's
 * maximum is taken over padded frames that still hold its tail.  The
 * features of a clip are therefore a function of the record, and are
 * computed once all its clips are decoded (prepare.h's finish step).
 * Audio tracks of videos join the same set (the reference appends them
 * to the record's audio list before the processor runs).
 *
 * Nothing here needs a codec: the samples come from audio_decode.h (in
 * the decode process) or any other source.
 */
#ifndef CLEF_AUDIO_FEATURES_H
#define CLEF_AUDIO_FEATURES_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

#define CLEF_AUDIO_RATE     16000     /* the samples' rate, Hz */

/* The feature extractor's settings (preprocessor_config.json). */
typedef struct {
    int32_t  sampling_rate;     /* 16000 */
    int32_t  n_fft;             /* 400 */
    int32_t  hop_length;        /* 160 */
    int32_t  n_mels;            /* feature_size: 128 */
} clef_audio_config;

/* Qwen3-Omni's values (its release's preprocessor_config.json). */
void clef_audio_config_default(clef_audio_config *ac);

/*
 * The audio tower's output length for a clip of `frames` valid feature
 * frames (transformers' Qwen3-Omni _get_feat_extract_output_lengths):
 * per full block of 100 frames 13 positions, and for the rest r three
 * stride-2 convolutions, ((((r - 1) / 2 + 1) - 1) / 2 + 1 - 1) / 2 + 1
 * (floor divisions: r = 0 gives 0, as the formula does).  Negative
 * frames: 0.
 */
int64_t clef_audio_output_tokens(int64_t frames);

/* The valid frames of a clip of n samples padded to padded samples. */
int64_t clef_audio_valid_frames(const clef_audio_config *ac, int64_t n,
    int64_t padded);

/* The fewest samples the longest clip of a record may have: the STFT's
 * reflection needs more than n_fft / 2. */
int64_t clef_audio_min_samples(const clef_audio_config *ac);

/*
 * The features of one clip, x[0..n), padded to `padded` samples (its
 * record's longest, >= n and >= clef_audio_min_samples()): *out is
 * malloc'ed [n_mels][*frames] row-major, *frames its valid frames.
 * -1 (500) when out of memory; the caller has checked the sizes.
 */
int clef_audio_clip_features(const clef_audio_config *ac, const float *x,
    int64_t n, int64_t padded, float **out, int32_t *frames,
    clef_error *err);

/*
 * The features of the count clips of one record, samples[k][0..n[k]),
 * padded together: out[k] and frames[k] as clef_audio_clip_features's.
 * On failure nothing is left allocated.  400 audio_too_short (loc
 * ["body","audio",0]) when the longest has fewer than
 * clef_audio_min_samples().
 */
int clef_audio_record_features(const clef_audio_config *ac,
    const float *const *samples, const int64_t *n, int count, float **out,
    int32_t *frames, clef_error *err);

/* The same, the clips named who ("The videos' audio tracks") at loc in
 * the refusal (NULL: "The audio clips", ["body","audio",0]). */
int clef_audio_record_features_of(const clef_audio_config *ac,
    const float *const *samples, const int64_t *n, int count,
    const char *who, const char *loc, float **out, int32_t *frames,
    clef_error *err);

#endif
