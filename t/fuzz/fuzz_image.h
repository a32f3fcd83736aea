/*
 * One decoder entry point on arbitrary bytes (fuzz_png.c, fuzz_jpeg.c,
 * fuzz_webp.c): the header probe the worker runs, then the engine's
 * decoding, EXIF orientation and preprocessing.  Never a crash or a leak;
 * an image decoded is within the pixel limit and has its pixels; a refusal
 * is a complete error naming image 0.  The pixel limit is lowered to 1 Mi
 * so that an input claiming a large image costs milliseconds, not seconds.
 */
#ifndef CLEF_FUZZ_IMAGE_H
#define CLEF_FUZZ_IMAGE_H

#include <stdint.h>

#include "fuzz_common.h"
#include "media/image_decode.h"
#include "media/image_input.h"
#include "media/processor.h"

#define FUZZ_MAX_PIXELS  (1 << 20)

static int
fuzz_image(clef_image_format fmt, const uint8_t *data, size_t size)
{
    clef_media_input       in;
    clef_rgb_image         rgb;
    clef_media_item        im;
    clef_processor_config  pc;
    clef_error             err;
    const char            *why;
    int32_t                w, h;

    if (clef_image_probe(fmt, data, size, &w, &h, &why) == 0
        && (w <= 0 || h <= 0))
    {
        fuzz_fail("probe accepted %dx%d", w, h);
    }
    memset(&in, 0, sizeof(in));
    in.kind = CLEF_MEDIA_IMAGE;
    in.format = fmt;
    in.data = data;
    in.len = size;
    in.width = 0;
    in.height = 0;
    if (clef_image_decode(&in, 0, FUZZ_MAX_PIXELS, &rgb, &err) != 0) {
        if (err.status < 400 || strcmp(err.loc, "[\"body\",\"images\",0]") != 0) {
            fuzz_fail("incomplete refusal: %d %s", err.status, err.loc);
        }
        return 0;
    }
    if (rgb.rgb == NULL || rgb.width <= 0 || rgb.height <= 0
        || (int64_t) rgb.width * rgb.height > FUZZ_MAX_PIXELS)
    {
        fuzz_fail("decoded %dx%d", rgb.width, rgb.height);
    }
    clef_processor_config_default(&pc);
    pc.max_pixels = 1 << 18;            /* keep the resize cheap */
    pc.min_pixels = 1 << 12;
    if (clef_image_preprocess(&rgb, 0, &pc, &im, &err) == 0) {
        if (im.bytes == NULL || im.grid_h < 2 || im.grid_w < 2
            || im.grid_h % 2 || im.grid_w % 2)
        {
            fuzz_fail("preprocessed to %dx%d", im.grid_h, im.grid_w);
        }
        clef_media_item_free(&im);
    }
    clef_rgb_image_free(&rgb);
    return 0;
}

#endif
