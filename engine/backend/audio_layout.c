/*
 * The audio tower's chunks and windows (see audio_layout.h).
 */
#include "backend/audio_layout.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "media/audio_features.h"

#define CHUNK  100     /* frames: the reference's formula states it */


const char *
clef_audio_config_refusal(const clef_audio_tower_config *a)
{
    if (2 * a->n_window != CHUNK) {
        return "audio_config.n_window must be 50: the reference's output "
               "lengths assume chunks of 100 frames";
    }
    if (a->n_window_infer < CHUNK) {
        return "audio_config.n_window_infer must be at least 100 frames";
    }
    if (a->d_model % 2 != 0 || a->d_model < 4) {
        return "audio_config.d_model must be even (sin and cos positions)";
    }
    return NULL;
}


void
clef_audio_layout_free(clef_audio_layout *l)
{
    free(l->chunks);
    free(l->cu);
    memset(l, 0, sizeof(*l));
}


/* The longest chunk of each clip's group: clips with equal group share
 * it. */
static void
group_widths(const clef_media_item *const *items, const int32_t *group,
    int n, int32_t *width)
{
    int      k, j;
    int64_t  w;

    for (k = 0; k < n; k++) {
        w = 0;
        for (j = 0; j < n; j++) {
            if (j == k || (group != NULL && group[j] == group[k])) {
                w = items[j]->grid_w > w ? items[j]->grid_w : w;
            }
        }
        width[k] = (int32_t) (w < CHUNK ? w : CHUNK);
    }
}


int
clef_audio_layout_build(const clef_audio_tower_config *a,
    const clef_media_item *const *items, const int32_t *group, int n,
    clef_audio_layout *l, const char **why)
{
    const clef_media_item  *it;
    clef_audio_chunk       *c;
    int32_t                *width;
    int64_t                 chunks = 0, windows = 0, win, f, left, row = 0;
    int                     k, ratio = a->n_window_infer / CHUNK;

    memset(l, 0, sizeof(*l));
    for (k = 0; k < n; k++) {
        it = items[k];
        if (it->kind != CLEF_MEDIA_AUDIO || it->grid_t != 1
            || it->grid_h != a->num_mel_bins || it->grid_w < 1
            || it->grid_w > (int64_t) 1 << 30 || it->values == NULL
            || it->tokens != clef_audio_output_tokens(it->grid_w))
        {
            *why = "an audio clip was prepared for another tower";
            return -1;
        }
        chunks += (it->grid_w + CHUNK - 1) / CHUNK;
    }
    width = malloc(sizeof(int32_t) * ((size_t) n + 1));
    l->chunks = calloc((size_t) chunks + 1, sizeof(*l->chunks));
    if (width == NULL || l->chunks == NULL) {
        free(width);
        clef_audio_layout_free(l);
        *why = "out of memory";
        return -1;
    }
    group_widths(items, group, n, width);

    /* the windows: at most one per full window plus a remainder */
    for (k = 0; k < n; k++) {
        win = clef_audio_output_tokens(width[k]) * ratio;
        windows += items[k]->tokens / win + 1;
    }
    l->cu = malloc(sizeof(int64_t) * ((size_t) windows + 1));
    if (l->cu == NULL) {
        free(width);
        clef_audio_layout_free(l);
        *why = "out of memory";
        return -1;
    }
    l->cu[0] = 0;
    for (k = 0; k < n; k++) {
        it = items[k];
        for (f = 0; f < it->grid_w; f += CHUNK) {
            c = &l->chunks[l->n_chunks++];
            c->item = k;
            c->width = width[k];
            c->first = f;
            c->frames = it->grid_w - f < CHUNK ? it->grid_w - f : CHUNK;
            c->rows = clef_audio_output_tokens(c->frames);
            c->row = row;
            row += c->rows;
        }
        l->widest = width[k] > l->widest ? width[k] : l->widest;
        win = clef_audio_output_tokens(width[k]) * ratio;
        for (left = it->tokens; left > 0; left -= win) {
            f = left < win ? left : win;
            l->cu[l->n_windows + 1] = l->cu[l->n_windows] + f;
            l->n_windows++;
            l->longest = f > l->longest ? f : l->longest;
        }
    }
    l->rows = row;
    free(width);
    return 0;
}


int
clef_audio_scatter_rows(const clef_batch *b, int32_t *dst, int64_t rows,
    const char **why)
{
    const clef_media_span  *s;
    const clef_media_item  *it;
    int64_t                 first, T = clef_batch_tokens(b), i;
    int                     k, m;

    for (i = 0; i < rows; i++) {
        dst[i] = -1;
    }
    for (k = 0; k < b->n_spans; k++) {
        s = &b->spans[k];
        if (s->item < 0 || s->item >= b->n_items || s->start < 0 || s->len < 0
            || s->row < 0 || (int64_t) s->start + s->len > T)
        {
            *why = "a media span is outside the batch";
            return -1;
        }
        it = clef_batch_item(b, s->item);
        if (it->kind != CLEF_MEDIA_AUDIO) {
            continue;
        }
        first = 0;
        for (m = 0; m < s->item; m++) {
            if (clef_batch_item(b, m)->kind == CLEF_MEDIA_AUDIO) {
                first += clef_batch_item(b, m)->tokens;
            }
        }
        if ((int64_t) s->row + s->len > it->tokens
            || first + s->row + s->len > rows)
        {
            *why = "a media span reads past its clip's rows";
            return -1;
        }
        for (i = 0; i < s->len; i++) {
            dst[first + s->row + i] = s->start + (int32_t) i;
        }
    }
    return 0;
}


void
clef_audio_positions(int d, int n, float *pos)
{
    int     half = d / 2, t, i;
    float   inc, inv;

    /* log(10^4) / (d/2 - 1) in double, then every step in fp32 as the
     * reference's torch computes it */
    inc = (float) (log(10000.0) / (double) (half - 1));
    for (i = 0; i < half; i++) {
        inv = expf(-inc * (float) i);
        for (t = 0; t < n; t++) {
            pos[(int64_t) t * d + i] = sinf((float) t * inv);
            pos[(int64_t) t * d + half + i] = cosf((float) t * inv);
        }
    }
}
