/*
 * How Clef Omni's audio tower (transformers 5.10.2's
 * Qwen3OmniMoeAudioEncoder) cuts a batch's clips, for every backend's
 * tower: pure host logic, tested without a device.
 *
 * The reference runs the clips of one record together: each clip is cut
 * into chunks of 2 n_window frames (its last chunk shorter), every chunk is
 * zero-padded on the right to the longest chunk among the record's clips
 * and downsampled by the convolutions over that padded width, and the
 * first clef_audio_output_tokens(frames) time steps of a chunk are kept.
 * The padding shows: the convolutions' GELU makes the padded columns
 * nonzero, and a chunk's last kept steps read them.  So a chunk's width is
 * its record's (its group's), never the batch's: a clip's rows depend on
 * its record alone.  The kept rows of a clip then attend within windows of
 * f(width) * (n_window_infer / (2 n_window)) rows, f = the output length,
 * cut from the clip's start (104 rows when the widest chunk is full).
 */
#ifndef CLEF_AUDIO_LAYOUT_H
#define CLEF_AUDIO_LAYOUT_H

#include <stdint.h>

#include "backend/backend.h"
#include "media/media.h"
#include "model/model.h"

typedef struct {
    int32_t  item;       /* its clip: an index into the items */
    int32_t  width;      /* frames after padding (its group's longest
                            chunk) */
    int64_t  first;      /* its first frame in the clip */
    int64_t  frames;     /* its own frames */
    int64_t  rows;       /* the output rows it keeps */
    int64_t  row;        /* the first of them among the batch's rows */
} clef_audio_chunk;

typedef struct {
    int                n_chunks;
    clef_audio_chunk  *chunks;
    int                n_windows;
    int64_t           *cu;         /* [n_windows + 1]: row offsets of the
                                      attention windows */
    int64_t            rows;       /* all clips' rows: the sum of their
                                      tokens */
    int64_t            longest;    /* rows of the longest window */
    int32_t            widest;     /* the widest chunk, padded */
} clef_audio_layout;

/* The layout of n clips of the audio kind (media.h: values [mels][frames],
 * tokens = clef_audio_output_tokens(frames)); group[k]: the record of
 * clip k (clips of one group are padded alike), NULL: each clip a group of
 * its own.  -1 with *why for a clip not prepared for this tower (or none
 * of its frames) and out of memory ("out of memory"). */
int  clef_audio_layout_build(const clef_audio_tower_config *a,
    const clef_media_item *const *items, const int32_t *group, int n,
    clef_audio_layout *l, const char **why);
void clef_audio_layout_free(clef_audio_layout *l);

/* dst[row] for every row of the audio tower's output over the batch's
 * audio clips (clef_batch_item() order, the audio items alone, each
 * clip's rows after those of the clips before it): the packed token whose
 * embedding the row replaces, -1 where no span does.  rows: the sum of
 * the clips' tokens.  -1 with *why when a span leaves the batch or its
 * clip. */
int  clef_audio_scatter_rows(const clef_batch *b, int32_t *dst, int64_t rows,
    const char **why);

/* Why the tower cannot run with config a (the reference's own limits), or
 * NULL: chunks of 100 frames (its output-length formula states 100), and
 * windows of at least one chunk. */
const char *clef_audio_config_refusal(const clef_audio_tower_config *a);

/* The sinusoidal positions of the tower: pos[t][i] for t < n, d columns,
 * sin in the first d / 2 and cos in the next, at the reference's fp32
 * steps (inverse timescales exp(-i log(10^4) / (d/2 - 1))). */
void clef_audio_positions(int d, int n, float *pos);

#endif
