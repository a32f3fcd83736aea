/*
 * PNG to RGB with libpng (see image_decode.h for what matches the
 * reference and why).  Errors longjmp back here; everything allocated
 * after the jump point is reachable from the context so it can be freed.
 */
#include "media/image_decode.h"

#include <png.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"

typedef struct {
    const uint8_t  *p;
    size_t          left;
    char           *msg;
    uint8_t        *rgb;
    png_bytep      *rows;
} png_ctx;


static void
png_read_mem(png_structp png, png_bytep out, png_size_t n)
{
    png_ctx  *c = png_get_io_ptr(png);

    if (n > c->left) {
        png_error(png, "the file is truncated");
    }
    memcpy(out, c->p, n);
    c->p += n;
    c->left -= n;
}


static void
png_fail(png_structp png, png_const_charp text)
{
    png_ctx  *c = png_get_error_ptr(png);

    snprintf(c->msg, 200, "PNG: %.180s", text);
    png_longjmp(png, 1);
}


static void
png_warn(png_structp png, png_const_charp text)
{
    (void) png;
    (void) text;        /* a CRC or an ancillary chunk: libpng goes on */
}


int
clef_decode_png(const uint8_t *p, size_t len, int64_t max_pixels,
    double deadline, clef_rgb_image *out, int *orientation, char *msg)
{
    png_structp    png;
    png_infop      info;
    png_ctx        c;
    png_uint_32    w, h, y, n_exif = 0;
    png_bytep      exif = NULL;
    int            depth, type, interlace, passes, pass;
    volatile int   rc = -1;

    memset(&c, 0, sizeof(c));
    c.p = p + 8;
    c.left = len - 8;
    c.msg = msg;
    *orientation = -1;

    png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &c, png_fail, png_warn);
    info = png != NULL ? png_create_info_struct(png) : NULL;
    if (info == NULL) {
        png_destroy_read_struct(&png, NULL, NULL);
        snprintf(msg, 200, "out of memory");
        return -1;
    }
    if (setjmp(png_jmpbuf(png)) != 0) {
        goto done;
    }

    png_set_sig_bytes(png, 8);
    png_set_read_fn(png, &c, png_read_mem);
    /* the pixel limit decides what may be allocated, not libpng's own */
    png_set_user_limits(png, 1u << 24, 1u << 24);
    png_read_info(png, info);
    png_get_IHDR(png, info, &w, &h, &depth, &type, &interlace, NULL, NULL);
    if ((int64_t) w * h > max_pixels) {
        snprintf(msg, 200, "%ux%u is over %lld pixels", (unsigned) w,
                 (unsigned) h, (long long) max_pixels);
        goto done;
    }

    /* to 8-bit RGB: the reference's mode=RGB transforms, and 16 bits to
     * their high byte (image_decode.h) */
    if (type == PNG_COLOR_TYPE_GRAY && depth < 8) {
        png_set_expand_gray_1_2_4_to_8(png);
    }
    if (type & PNG_COLOR_MASK_PALETTE) {
        png_set_palette_to_rgb(png);
        png_set_strip_alpha(png);
    } else {
        if (!(type & PNG_COLOR_MASK_COLOR)) {
            png_set_gray_to_rgb(png);
        }
        if (type & PNG_COLOR_MASK_ALPHA) {
            png_set_strip_alpha(png);
        }
    }
    if (depth == 16) {
        png_set_strip_16(png);
    }
    passes = interlace == PNG_INTERLACE_ADAM7
             ? png_set_interlace_handling(png) : 1;
    png_read_update_info(png, info);
    if (png_get_rowbytes(png, info) != (size_t) w * 3) {
        snprintf(msg, 200, "PNG: unexpected row layout");
        goto done;
    }

    if (png_get_valid(png, info, PNG_INFO_eXIf)) {
        png_get_eXIf_1(png, info, &n_exif, &exif);
        if (exif != NULL && n_exif > 0) {
            *orientation = clef_exif_orientation(exif, n_exif);
        }
    }

    c.rgb = malloc((size_t) w * h * 3);
    if (c.rgb == NULL) {
        snprintf(msg, 200, "out of memory for %ux%u pixels", (unsigned) w,
                 (unsigned) h);
        goto done;
    }
    for (pass = 0; pass < passes; pass++) {
        for (y = 0; y < h; y++) {
            png_read_row(png, c.rgb + (size_t) y * w * 3, NULL);
        }
        if (clef_clock_seconds() > deadline) {
            snprintf(msg, 200, "PNG: decoding took too long");
            goto done;
        }
    }

    out->width = (int32_t) w;
    out->height = (int32_t) h;
    out->rgb = c.rgb;
    c.rgb = NULL;
    rc = 0;

done:
    png_destroy_read_struct(&png, &info, NULL);
    free(c.rgb);
    return rc;
}
