/*
 * M-RoPE positions of a record with media (see encode.h): the reference's
 * get_rope_index over the record's spans.
 */
#include "protocol/encode.h"


/* The positions of span sp of a visual item from p; its largest on any
 * axis. */
static int32_t
visual_span(const clef_media_item *it, const clef_media_span *sp, int32_t p,
    int32_t *T, int32_t *H, int32_t *W)
{
    int64_t  gh = it->grid_h / it->merge, gw = it->grid_w / it->merge;
    int64_t  per = gh * gw, step = it->t_step > 0 ? it->t_step : 1;
    int64_t  r, i, s, y, x;
    int32_t  most = p;

    for (i = 0; i < sp->len && per > 0; i++) {
        r = sp->row + i;
        s = r / per;
        y = r % per / gw;
        x = r % gw;
        T[sp->start + i] = p + (int32_t) (s * step);
        H[sp->start + i] = p + (int32_t) y;
        W[sp->start + i] = p + (int32_t) x;
        most = T[sp->start + i] > most ? T[sp->start + i] : most;
        most = H[sp->start + i] > most ? H[sp->start + i] : most;
        most = W[sp->start + i] > most ? W[sp->start + i] : most;
    }
    return most;
}


void
clef_mrope_positions(int64_t n, const clef_media_item *items,
    const clef_media_span *spans, int n_spans, int32_t *pos)
{
    const clef_media_item  *it;
    int32_t                *T = pos, *H = pos + n, *W = pos + 2 * n;
    int64_t                 t = 0, end, gh, gw, groups, most, step;
    int32_t                 cur = 0, last = 0, i;
    int                     k, v, a;

    for (k = 0; k <= n_spans; k++) {
        /* the text before span k (or after the last one) */
        end = k < n_spans ? spans[k].start : n;
        for (; t < end; t++, cur++) {
            T[t] = H[t] = W[t] = cur;
        }
        if (k == n_spans) {
            break;
        }
        it = &items[spans[k].item];
        /* a video heard with its sound (media.h): the runs of the video
         * and of its track share the video's start; the video's tokens
         * at (p + s t_step, p + i, p + j), the track's at p + a on every
         * axis; the text after them counts on past the largest position
         * of the last run (get_rope_index's "Audio in Video") */
        if ((it->kind == CLEF_MEDIA_VIDEO && it->sound > 0)
            || (it->kind == CLEF_MEDIA_AUDIO && it->sound_of > 0))
        {
            v = it->kind == CLEF_MEDIA_VIDEO ? spans[k].item : it->sound_of - 1;
            a = items[v].sound - 1;
            for (; k < n_spans && spans[k].start == t
                   && (spans[k].item == v || spans[k].item == a); k++)
            {
                if (spans[k].item == v) {
                    last = visual_span(&items[v], &spans[k], cur, T, H, W);
                } else {
                    for (i = 0; i < spans[k].len; i++) {
                        T[t + i] = H[t + i] = W[t + i]
                                 = cur + spans[k].row + i;
                    }
                    last = cur + spans[k].row + spans[k].len - 1;
                }
                t += spans[k].len;
            }
            k--;
            cur = last + 1;
            continue;
        }
        /* an audio clip's rows count on as text does, on every axis
         * (the reference's get_rope_index for audio alone) */
        if (it->kind == CLEF_MEDIA_AUDIO) {
            for (end = t + spans[k].len; t < end; t++, cur++) {
                T[t] = H[t] = W[t] = cur;
            }
            continue;
        }
        gh = it->grid_h / it->merge;
        gw = it->grid_w / it->merge;
        groups = gh * gw > 0 ? spans[k].len / (gh * gw) : 0;
        /* Clef Omni's videos: group s at time s x t_step (its seconds
         * per group x position_id_per_seconds) */
        step = it->t_step > 0 ? it->t_step : 1;
        (void) visual_span(it, &(clef_media_span) { (int32_t) t,
                               spans[k].len, spans[k].item, 0 },
                           cur, T, H, W);
        t += spans[k].len;
        /* the next text starts past the largest position of the span */
        most = gh > gw ? gh : gw;
        if (groups > 0 && (groups - 1) * step + 1 > most) {
            most = (groups - 1) * step + 1;
        }
        cur += (int32_t) most;
    }
}
