/*
 * The counts of audio features and of the audio tower's positions (see
 * audio_features.h): plain arithmetic, in the client part too (kinds.c's
 * least ids from a header).
 */
#include "media/audio_features.h"


void
clef_audio_config_default(clef_audio_config *ac)
{
    ac->sampling_rate = CLEF_AUDIO_RATE;
    ac->n_fft = 400;
    ac->hop_length = 160;
    ac->n_mels = 128;
}


int64_t
clef_audio_output_tokens(int64_t frames)
{
    int64_t  r, a;

    if (frames < 0) {
        return 0;
    }
    /* Python's floor division: (0 - 1) // 2 is -1 */
    r = frames % 100;
    a = r == 0 ? 0 : (r - 1) / 2 + 1;
    a = a == 0 ? 0 : (a - 1) / 2 + 1;
    a = a == 0 ? 0 : (a - 1) / 2 + 1;
    return a + frames / 100 * 13;
}


int64_t
clef_audio_valid_frames(const clef_audio_config *ac, int64_t n,
    int64_t padded)
{
    int64_t  f = padded / ac->hop_length;
    int64_t  v = (n + ac->hop_length - 1) / ac->hop_length;

    return v < f ? v : f;
}


int64_t
clef_audio_min_samples(const clef_audio_config *ac)
{
    return ac->n_fft / 2 + 1;
}
