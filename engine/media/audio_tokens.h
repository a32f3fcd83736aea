/*
 * How many tokens an audio clip becomes: the length of Clef Omni's audio
 * tower output for a clip of `frames` log-mel frames (transformers
 * 5.10.2's Qwen3-Omni _get_feat_extract_output_lengths).  The tower cuts a
 * clip into chunks of 100 frames and downsamples each by three stride-2
 * convolutions (100 -> 50 -> 25 -> 13), so a full chunk gives 13 tokens
 * and the tail of L frames ceil(ceil(ceil(L / 2) / 2) / 2): about 13
 * tokens a second.  The reference states it with 100 and 13 written out,
 * whatever the config's n_window; so does this.
 */
#ifndef CLEF_MEDIA_AUDIO_TOKENS_H
#define CLEF_MEDIA_AUDIO_TOKENS_H

#include <stdint.h>

/* 0 for 0 frames (and for a negative count). */
int64_t clef_audio_output_tokens(int64_t frames);

#endif
