/*
 * Patch layout of a batch's images for a vision tower (see
 * vision_layout.h).  The CPU tower (engine/cpu/model/vision.c) takes its patch
 * order, position taps and inverse frequencies from here, so an
 * accelerator's tower gets them from the same code; the M-RoPE tables
 * follow engine/cpu/model/backbone.c's mrope_tables step for step.
 */
#include "backend/vision_layout.h"

#include <math.h>


void
clef_vision_patch_rc(const clef_media_item *im, int64_t p, int32_t *r,
    int32_t *c)
{
    int64_t  m = im->merge, bw = im->grid_w / m, block = p / (m * m);
    int64_t  in = p % (m * m);

    *r = (int32_t) (block / bw * m + in / m);
    *c = (int32_t) (block % bw * m + in % m);
}


/* One axis: the source coordinate i (side - 1) / (size - 1) and its two
 * taps, clamped, with the triangle weights of torch's align_corners
 * bilinear. */
static void
axis_taps(int64_t i, int64_t size, int side, int *t, float *w)
{
    float  src = (float) (i * (side - 1)) / (float) (size - 1 > 1 ? size - 1 : 1);
    float  f = floorf(src), d;
    int    o, tap;

    for (o = 0; o < 2; o++) {
        tap = (int) f + o;
        t[o] = tap < 0 ? 0 : tap > side - 1 ? side - 1 : tap;
        d = fabsf(src - f - (float) o);
        w[o] = 1.0f - d > 0.0f ? 1.0f - d : 0.0f;
    }
}


void
clef_vision_pos_taps(int64_t r, int64_t c, int64_t gh, int64_t gw, int side,
    int32_t tap[4], float w[4])
{
    int    th[2], tw[2], a, b;
    float  wh[2], ww[2];

    axis_taps(r, gh, side, th, wh);
    axis_taps(c, gw, side, tw, ww);
    for (a = 0; a < 2; a++) {
        for (b = 0; b < 2; b++) {
            tap[a * 2 + b] = th[a] * side + tw[b];
            w[a * 2 + b] = wh[a] * ww[b];
        }
    }
}


void
clef_vision_inv_freq(int hd, double theta, float *inv_freq)
{
    int  sd = hd / 2, i;

    for (i = 0; i < sd / 2; i++) {
        inv_freq[i] = 1.0f / powf((float) theta, (float) (2 * i) / (float) sd);
    }
}


void
clef_vision_rotary_table(int hd, double theta, int positions, float *cos,
    float *sin)
{
    int    quarter = hd / 4, sd = hd / 2, p, i;
    float  inv;

    for (i = 0; i < quarter; i++) {
        /* clef_vision_inv_freq()'s steps */
        inv = 1.0f / powf((float) theta, (float) (2 * i) / (float) sd);
        for (p = 0; p < positions; p++) {
            cos[(int64_t) p * quarter + i] = cosf((float) p * inv);
            sin[(int64_t) p * quarter + i] = sinf((float) p * inv);
        }
    }
}


int64_t
clef_vision_attn_tiles(const int64_t *cu, int n, int tile, int32_t *out)
{
    int64_t  nt = 0, q, len;
    int      k;

    for (k = 0; k < n; k++) {
        len = cu[k + 1] - cu[k];
        for (q = 0; q < len; q += tile, nt++) {
            if (out != NULL) {
                out[3 * nt] = (int32_t) cu[k];
                out[3 * nt + 1] = (int32_t) len;
                out[3 * nt + 2] = (int32_t) q;
            }
        }
    }
    return nt;
}


int
clef_vision_scatter_rows(const clef_batch *b, int32_t *dst, int64_t rows,
    const char **why)
{
    const clef_media_span  *s;
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
        /* audio clips have a tower of their own (audio_layout.h) */
        if (clef_batch_item(b, s->item)->kind == CLEF_MEDIA_AUDIO) {
            continue;
        }
        first = 0;
        for (m = 0; m < s->item; m++) {
            if (clef_batch_item(b, m)->kind != CLEF_MEDIA_AUDIO) {
                first += clef_batch_item(b, m)->tokens;
            }
        }
        if ((int64_t) s->row + s->len > clef_batch_item(b, s->item)->tokens
            || first + s->row + s->len > rows)
        {
            *why = "a media span reads past its item's merged tokens";
            return -1;
        }
        for (i = 0; i < s->len; i++) {
            dst[first + s->row + i] = s->start + (int32_t) i;
        }
    }
    return 0;
}


int
clef_mrope_axis(const int section[3], int j)
{
    /* transformers' interleaved M-RoPE: pairs offset, offset + 3, ... below
     * 3 section[axis] take that axis, the rest the temporal one */
    return j % 3 == 1 && j < 3 * section[1] ? 1
           : j % 3 == 2 && j < 3 * section[2] ? 2 : 0;
}
