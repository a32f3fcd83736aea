/*
 * The image processor (see processor.h): the pixels.  The sizes alone,
 * which an nginx worker reads from image headers, are image_size.c's.
 */
#include "media/processor.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "media/resize.h"


int
clef_image_row_size(const clef_media_item *im)
{
    return 3 * im->temporal * im->patch * im->patch;
}


int
clef_image_preprocess(const clef_rgb_image *in, int index,
    const clef_processor_config *pc, clef_media_item *out, clef_error *err)
{
    const char  *why;
    char         loc[64];
    int64_t      oh, ow;
    float        inv;
    int          c;

    memset(out, 0, sizeof(*out));
    snprintf(loc, sizeof(loc), "[\"body\",\"images\",%d]", index);
    if (clef_smart_resize(in->height, in->width,
                          pc->patch_size * pc->merge_size, pc->min_pixels,
                          pc->max_pixels, &oh, &ow, &why) != 0)
    {
        return clef_error_set(err, 400, "image_invalid", loc,
            "Image %d (%dx%d) cannot be processed: %s.", index,
            (int) in->width, (int) in->height, why);
    }

    out->bytes = malloc((size_t) (oh * ow * 3));
    if (out->bytes == NULL
        || clef_resize_bicubic_aa(in->rgb, in->width, in->height, out->bytes,
                                  (int) ow, (int) oh) != 0)
    {
        clef_media_item_free(out);
        return clef_error_set(err, 500, "internal_error", loc,
                              "Out of memory for image %d.", index);
    }
    out->kind = CLEF_MEDIA_IMAGE;
    out->frames = 1;
    out->grid_t = 1;
    out->grid_h = (int32_t) (oh / pc->patch_size);
    out->grid_w = (int32_t) (ow / pc->patch_size);
    out->patch = pc->patch_size;
    out->temporal = pc->temporal_patch_size;
    out->merge = pc->merge_size;
    out->tokens = (int64_t) out->grid_h * out->grid_w
                  / (out->merge * out->merge);

    /* torch.tensor(mean) * (1.0 / rescale_factor): a float32 tensor times
     * a Python float, which torch rounds to float32 first */
    inv = (float) (1.0 / pc->rescale_factor);
    for (c = 0; c < 3; c++) {
        out->mean[c] = (float) pc->mean[c] * inv;
        out->std[c] = (float) pc->std[c] * inv;
    }
    return 0;
}


void
clef_image_patch_row(const clef_media_item *im, int64_t p, float *row)
{
    int64_t         bw = im->grid_w / im->merge, block, in, r, col, y, x;
    int64_t         W = (int64_t) im->grid_w * im->patch, ps = im->patch;
    int64_t         plane = ps * ps, n = clef_image_row_size(im);
    int64_t         per = (int64_t) im->grid_h * im->grid_w, group, fr;
    size_t          frame = (size_t) (per * plane * 3);
    const uint8_t  *px;
    int             c, t;

    if (im->values != NULL) {
        memcpy(row, im->values + p * n, sizeof(float) * (size_t) n);
        return;
    }

    /* p = (temporal group, block row, block col, in-block row, in-block
     * col); the group's slot t shows frame group * temporal + t, the last
     * frame where there is none (an image's one frame, an odd count's
     * last pair) */
    group = p / per;
    p %= per;
    block = p / (im->merge * im->merge);
    in = p % (im->merge * im->merge);
    r = block / bw * im->merge + in / im->merge;
    col = block % bw * im->merge + in % im->merge;

    for (c = 0; c < 3; c++) {
        for (t = 0; t < im->temporal; t++) {
            fr = group * im->temporal + t;
            fr = fr < im->frames ? fr : im->frames > 1 ? im->frames - 1 : 0;
            for (y = 0; y < ps; y++) {
                px = im->bytes + (size_t) fr * frame
                     + ((r * ps + y) * W + col * ps) * 3 + c;
                for (x = 0; x < ps; x++) {
                    row[(c * im->temporal + t) * plane + y * ps + x] =
                        ((float) px[3 * x] - im->mean[c]) / im->std[c];
                }
            }
        }
    }
}


/* Here, not in image_decode.c: the engine frees the images the decode
 * process made without linking any codec (decoder.h). */
void
clef_rgb_image_free(clef_rgb_image *im)
{
    free(im->rgb);
    memset(im, 0, sizeof(*im));
}
