/*
 * Clef Omni's audio tower on the CPU, fp32 (transformers 5.10.2's
 * Qwen3OmniMoeAudioEncoder; docs/spec/backbone.md §6): each clip's
 * log-mel features cut into chunks of 100 frames, each chunk through three
 * stride-2 convolutions with GELU and the linear conv_out, sinusoidal
 * positions restarting in every chunk, pre-LN layers of bidirectional
 * attention inside windows of the clip's rows and a GELU MLP, ln_post,
 * proj1, GELU, proj2 to the thinker's width.  The cuts are
 * backend/audio_layout.h's.
 *
 * A clip's rows depend on its record alone: the chunk padding is its
 * record's (audio_layout.h says why), attention never leaves the clip's
 * windows, every other op works on one row or one chunk, and the products
 * compute each row alike (gemm.h).
 */
#ifndef CLEF_CPU_AUDIO_H
#define CLEF_CPU_AUDIO_H

#include <stdint.h>

#include "base/error.h"
#include "cpu/parallel/pool.h"
#include "media/media.h"
#include "model/model.h"

typedef struct clef_cpu_audio clef_cpu_audio;

/* Converts and packs the tower's weights; *out is NULL (and 0 returned)
 * for a model without one.  The pool is borrowed. */
int  clef_cpu_audio_open(const clef_model *m, clef_cpu_pool *pool,
    clef_cpu_audio **out, clef_error *err);
void clef_cpu_audio_close(clef_cpu_audio *a);

/* fn(ctx) after every layer (the engine's watchdog). */
void clef_cpu_audio_set_progress(clef_cpu_audio *a, void (*fn)(void *ctx),
    void *ctx);

/* The tower over n clips (media.h's audio items); group[k]: clip k's
 * record (NULL: each clip its own); features: [sum of their tokens]
 * [output_dim], the clips' rows one clip after the other. */
int  clef_cpu_audio_forward(clef_cpu_audio *a,
    const clef_media_item *const *items, const int32_t *group, int n,
    float *features, clef_error *err);

#endif
