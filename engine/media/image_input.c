/*
 * Reading a request's images in the worker (see image_input.h): wire form
 * (media_wire.h: data URL or object, base64, per-image limit), then the
 * images' limits, format and header dimensions.  No pixel is decoded here.
 *
 *  status type                      loc                          when
 *  422    image_type                ["body","images",I]          neither a string nor an object
 *  422    missing / string_type     ["body","images",I,FIELD]    object without content_type / base64
 *  400    image_url_unsupported     ["body","images",I]          http:// or https:// (nothing is fetched)
 *  400    image_data_url_invalid    ["body","images",I]          not data:<type>;base64,<data>
 *  400    image_type_unsupported    ["body","images",I]          a type other than image/png, jpeg, webp
 *  413    image_too_large           ["body","images",I]          more than 4 MiB of base64
 *  400    image_base64_invalid      ["body","images",I]          bad base64 (offset named)
 *  413    images_too_large          ["body","images",I]          over 8 MiB decoded in all
 *  400    image_type_mismatch       ["body","images",I]          the bytes are another format
 *  400    image_invalid             ["body","images",I]          no readable header
 *  400    image_too_many_pixels     ["body","images",I]          more than 16 Mi pixels
 *  400    image_aspect_ratio        ["body","images",I]          longer side over 200 x the shorter
 */
#include "media/image_input.h"

#include <stdio.h>
#include <string.h>

#include "media/kinds.h"
#include "media/media_wire.h"

static const clef_media_type  image_types[] = {
    { "image/png", CLEF_IMAGE_PNG },
    { "image/jpeg", CLEF_IMAGE_JPEG },
    { "image/webp", CLEF_IMAGE_WEBP },
};

static const clef_media_wire  image_wire = {
    "image", "images", "Image", "images", "image/png", "image/png|jpeg|webp",
    "image/png, image/jpeg and image/webp", image_types,
    sizeof(image_types) / sizeof(image_types[0])
};


const char *
clef_image_format_name(clef_image_format f)
{
    switch (f) {
    case CLEF_IMAGE_PNG:
        return "png";
    case CLEF_IMAGE_JPEG:
        return "jpeg";
    case CLEF_IMAGE_WEBP:
        return "webp";
    default:
        return "unknown";
    }
}


clef_image_format
clef_image_sniff(const uint8_t *p, size_t len)
{
    if (len >= 8 && memcmp(p, "\x89PNG\r\n\x1a\n", 8) == 0) {
        return CLEF_IMAGE_PNG;
    }
    if (len >= 3 && p[0] == 0xff && p[1] == 0xd8 && p[2] == 0xff) {
        return CLEF_IMAGE_JPEG;
    }
    if (len >= 12 && memcmp(p, "RIFF", 4) == 0 && memcmp(p + 8, "WEBP", 4) == 0) {
        return CLEF_IMAGE_WEBP;
    }
    return CLEF_IMAGE_NONE;
}


static int
read_one(clef_arena *a, const clef_json *v, size_t i,
    const clef_media_limits *lim, size_t *total, clef_media_input *in,
    clef_error *err)
{
    const clef_media_type  *type;
    clef_image_format       declared, actual;
    const char             *why;
    uint8_t                *bytes;
    size_t                  n;
    char                    loc[64];
    double                  aspect;

    if (clef_media_wire_read(a, v, i, &image_wire, lim->max_base64, &type,
                             &bytes, &n, err) != 0)
    {
        return -1;
    }
    declared = (clef_image_format) type->format;
    clef_media_wire_loc(&image_wire, i, NULL, loc, sizeof(loc));

    *total += n;
    if (*total > lim->max_bytes) {
        return clef_error_set(err, 413, "images_too_large", loc,
            "Images 0 to %zu decode to %zu bytes; the limit is %zu bytes "
            "for all images of a request.", i, *total, lim->max_bytes);
    }

    actual = clef_image_sniff(bytes, n);
    if (actual == CLEF_IMAGE_NONE) {
        return clef_error_set(err, 400, "image_invalid", loc,
            "Image %zu is not a PNG, JPEG or WebP file (its first bytes are "
            "none of their signatures).", i);
    }
    if (actual != declared) {
        return clef_error_set(err, 400, "image_type_mismatch", loc,
            "Image %zu is declared image/%s but its bytes are a %s file.",
            i, clef_image_format_name(declared),
            actual == CLEF_IMAGE_PNG ? "PNG"
            : actual == CLEF_IMAGE_JPEG ? "JPEG" : "WebP");
    }

    in->kind = CLEF_MEDIA_IMAGE;
    in->format = actual;
    in->data = bytes;
    in->len = n;
    in->frames = 1;
    in->duration_us = 0;
    if (clef_image_probe(actual, bytes, n, &in->width, &in->height, &why)
        != 0)
    {
        return clef_error_set(err, 400, "image_invalid", loc,
            "Image %zu cannot be read: %s.", i, why);
    }

    if ((int64_t) in->width * in->height > lim->max_pixels) {
        return clef_error_set(err, 400, "image_too_many_pixels", loc,
            "Image %zu is %dx%d (%lld pixels); the limit is %lld pixels.",
            i, (int) in->width, (int) in->height,
            (long long) in->width * in->height, (long long) lim->max_pixels);
    }
    aspect = in->width > in->height ? (double) in->width / in->height
                                    : (double) in->height / in->width;
    if (aspect > CLEF_IMAGE_MAX_ASPECT) {
        return clef_error_set(err, 400, "image_aspect_ratio", loc,
            "Image %zu is %dx%d: its aspect ratio %.1f is over the "
            "processor's limit of %d.", i, (int) in->width, (int) in->height,
            aspect, CLEF_IMAGE_MAX_ASPECT);
    }
    return 0;
}


int
clef_image_inputs_read(clef_arena *a, const clef_json *images,
    const clef_media_limits *lim, clef_media_input **out, clef_error *err)
{
    clef_media_limits   defaults;
    clef_media_input   *in;
    size_t              i, total = 0;

    *out = NULL;
    if (images == NULL || images->type != CLEF_JSON_ARRAY || images->len == 0) {
        return 0;
    }
    if (lim == NULL) {
        clef_media_limits_default(CLEF_MEDIA_IMAGE, &defaults);
        lim = &defaults;
    }
    in = clef_arena_calloc(a, sizeof(*in) * images->len);
    if (in == NULL) {
        return clef_error_set(err, 500, "internal_error", "", "Out of memory.");
    }
    for (i = 0; i < images->len; i++) {
        if (read_one(a, images->items[i], i, lim, &total, &in[i], err) != 0) {
            return -1;
        }
    }
    *out = in;
    return 0;
}
