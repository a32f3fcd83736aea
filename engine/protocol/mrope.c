/*
 * M-RoPE positions of a record with images (see encode.h): the reference's
 * get_rope_index with one temporal slot per image.
 */
#include "protocol/encode.h"


void
clef_mrope_positions(int64_t n, const clef_image *images,
    const int32_t *image_start, int n_images, int32_t *pos)
{
    int32_t  *T = pos, *H = pos + n, *W = pos + 2 * n;
    int64_t   t = 0, i, j, gh, gw, end;
    int32_t   cur = 0;
    int       k;

    for (k = 0; k <= n_images; k++) {
        /* the text before image k (or after the last one) */
        end = k < n_images ? image_start[k] : n;
        for (; t < end; t++, cur++) {
            T[t] = H[t] = W[t] = cur;
        }
        if (k == n_images) {
            break;
        }
        gh = images[k].grid_h / images[k].merge;
        gw = images[k].grid_w / images[k].merge;
        for (i = 0; i < gh; i++) {
            for (j = 0; j < gw; j++, t++) {
                T[t] = cur;
                H[t] = cur + (int32_t) i;
                W[t] = cur + (int32_t) j;
            }
        }
        cur += (int32_t) (gh > gw ? gh : gw);
    }
}
