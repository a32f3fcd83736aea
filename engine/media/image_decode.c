/*
 * Image decoding (see image_decode.h): the format's decoder, then the
 * EXIF orientation the reference applies (PNG and JPEG only).
 */
#include "media/image_decode.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"


int
clef_image_decode(const clef_media_input *in, int index, int64_t max_pixels,
    clef_rgb_image *out, clef_error *err)
{
    return clef_image_decode_exif(in, index, max_pixels, 1, out, err);
}


int
clef_image_decode_exif(const clef_media_input *in, int index,
    int64_t max_pixels, int exif, clef_rgb_image *out, clef_error *err)
{
    char    msg[256], loc[64];
    double  deadline = clef_clock_seconds() + CLEF_IMAGE_DECODE_SECONDS;
    int     rc, orientation = -1;

    memset(out, 0, sizeof(*out));
    snprintf(loc, sizeof(loc), "[\"body\",\"images\",%d]", index);
    msg[0] = '\0';

    if ((int) clef_image_sniff(in->data, in->len) != in->format) {
        return clef_error_set(err, 400, "image_type_mismatch", loc,
            "Image %d is not the %s file it was declared as.", index,
            clef_image_format_name(in->format));
    }
    switch (in->format) {
    case CLEF_IMAGE_PNG:
        rc = clef_decode_png(in->data, in->len, max_pixels, deadline, out,
                             &orientation, msg);
        break;
    case CLEF_IMAGE_JPEG:
        rc = clef_decode_jpeg(in->data, in->len, max_pixels, deadline, out,
                              &orientation, msg);
        break;
    default:
        rc = clef_decode_webp(in->data, in->len, max_pixels, out, msg);
        break;
    }
    if (rc != 0) {
        memset(out, 0, sizeof(*out));
        return clef_error_set(err, 400, "image_invalid", loc,
            "Image %d cannot be decoded: %s.", index, msg);
    }
    if (exif && clef_exif_apply(out, orientation) != 0) {
        clef_rgb_image_free(out);
        return clef_error_set(err, 500, "internal_error", loc,
                              "Out of memory.");
    }
    return 0;
}
