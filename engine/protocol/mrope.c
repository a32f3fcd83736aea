/*
 * M-RoPE positions of a record with media (see encode.h): the reference's
 * get_rope_index over the record's spans.
 */
#include "protocol/encode.h"


void
clef_mrope_positions(int64_t n, const clef_media_item *items,
    const clef_media_span *spans, int n_spans, int32_t *pos)
{
    const clef_media_item  *it;
    int32_t                *T = pos, *H = pos + n, *W = pos + 2 * n;
    int64_t                 t = 0, i, j, s, gh, gw, groups, end, most, step;
    int32_t                 cur = 0;
    int                     k;

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
        for (s = 0; s < groups; s++) {
            for (i = 0; i < gh; i++) {
                for (j = 0; j < gw; j++, t++) {
                    T[t] = cur + (int32_t) (s * step);
                    H[t] = cur + (int32_t) i;
                    W[t] = cur + (int32_t) j;
                }
            }
        }
        /* the next text starts past the largest position of the span */
        most = gh > gw ? gh : gw;
        if (groups > 0 && (groups - 1) * step + 1 > most) {
            most = (groups - 1) * step + 1;
        }
        cur += (int32_t) most;
    }
}
