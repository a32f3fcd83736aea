/*
 * Reading a request's images in the worker (see image_input.h): wire form,
 * limits, base64, format and header dimensions.  No pixel is decoded here.
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
#include <strings.h>

#include "media/base64.h"
#include "media/kinds.h"

typedef struct {
    const char         *name;      /* as a content type, lower case */
    clef_image_format   format;
} image_type;

static const image_type  image_types[] = {
    { "image/png", CLEF_IMAGE_PNG },
    { "image/jpeg", CLEF_IMAGE_JPEG },
    { "image/webp", CLEF_IMAGE_WEBP },
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


/* The content type t[0..n) (case-insensitive, as RFC 2045 types are), or
 * CLEF_IMAGE_NONE. */
static clef_image_format
type_format(const char *t, size_t n)
{
    size_t  i;

    for (i = 0; i < sizeof(image_types) / sizeof(image_types[0]); i++) {
        if (strlen(image_types[i].name) == n
            && strncasecmp(image_types[i].name, t, n) == 0)
        {
            return image_types[i].format;
        }
    }
    return CLEF_IMAGE_NONE;
}


/* Writes at most max bytes of s into dst for a message: printable ASCII
 * kept, anything else as '?', "..." when cut. */
static void
quote(char *dst, size_t cap, const char *s, size_t len, size_t max)
{
    size_t  i, n = 0;

    if (max > cap - 4) {
        max = cap - 4;
    }
    for (i = 0; i < len && n < max; i++) {
        dst[n++] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
    }
    if (i < len) {
        memcpy(dst + n, "...", 3);
        n += 3;
    }
    dst[n] = '\0';
}


static void
image_loc(char *loc, size_t cap, size_t i, const char *field)
{
    if (field != NULL) {
        snprintf(loc, cap, "[\"body\",\"images\",%zu,\"%s\"]", i, field);
    } else {
        snprintf(loc, cap, "[\"body\",\"images\",%zu]", i);
    }
}


static int
unsupported_type(clef_error *err, const char *loc, size_t i, const char *t,
    size_t n)
{
    char  shown[80];

    quote(shown, sizeof(shown), t, n, 64);
    return clef_error_set(err, 400, "image_type_unsupported", loc,
        "Image %zu has type '%s': only image/png, image/jpeg and image/webp "
        "are accepted.", i, shown);
}


/*
 * A data URL, "data:<type>[;<param>]*;base64,<data>" (RFC 2397): the type
 * and the base64 text.
 */
static int
parse_data_url(const clef_json *v, size_t i, const char *loc,
    clef_image_format *fmt, const char **b64, size_t *b64_len,
    clef_error *err)
{
    const char  *s = v->str, *end = v->str + v->len, *comma, *semi, *p;
    char         shown[80];

    if ((v->len >= 7 && strncasecmp(s, "http://", 7) == 0)
        || (v->len >= 8 && strncasecmp(s, "https://", 8) == 0))
    {
        return clef_error_set(err, 400, "image_url_unsupported", loc,
            "Image %zu is a remote URL: images are not fetched; send the "
            "image itself as a data URL (data:image/png;base64,...).", i);
    }
    if (v->len < 5 || strncasecmp(s, "data:", 5) != 0) {
        quote(shown, sizeof(shown), s, v->len, 32);
        return clef_error_set(err, 400, "image_data_url_invalid", loc,
            "Image %zu is not a data URL: expected "
            "data:image/png|jpeg|webp;base64,..., got '%s'.", i, shown);
    }

    comma = memchr(s, ',', v->len);
    if (comma == NULL) {
        return clef_error_set(err, 400, "image_data_url_invalid", loc,
            "Image %zu is a data URL without the ',' before its data.", i);
    }

    /* the type runs to the first ';' (or the comma) */
    p = s + 5;
    semi = memchr(p, ';', (size_t) (comma - p));
    *fmt = type_format(p, (size_t) ((semi ? semi : comma) - p));
    if (*fmt == CLEF_IMAGE_NONE) {
        return unsupported_type(err, loc, i, p,
                                (size_t) ((semi ? semi : comma) - p));
    }

    /* the last parameter must be base64 */
    if (comma - s < 12 || strncasecmp(comma - 7, ";base64", 7) != 0) {
        return clef_error_set(err, 400, "image_data_url_invalid", loc,
            "Image %zu is a data URL that is not base64-encoded: expected "
            "data:image/%s;base64,...", i, clef_image_format_name(*fmt));
    }

    *b64 = comma + 1;
    *b64_len = (size_t) (end - *b64);
    return 0;
}


static int
parse_object(const clef_json *v, size_t i, const char *loc,
    clef_image_format *fmt, const char **b64, size_t *b64_len,
    clef_error *err)
{
    const clef_json  *ct, *data;
    char              floc[96];

    ct = clef_json_get(v, "content_type");
    data = clef_json_get(v, "base64");
    if (ct == NULL || data == NULL) {
        image_loc(floc, sizeof(floc), i, ct == NULL ? "content_type" : "base64");
        return clef_error_set(err, 422, "missing", floc, "Field required");
    }
    if (ct->type != CLEF_JSON_STRING || data->type != CLEF_JSON_STRING) {
        image_loc(floc, sizeof(floc), i,
                  ct->type != CLEF_JSON_STRING ? "content_type" : "base64");
        return clef_error_set(err, 422, "string_type", floc,
                              "Input should be a valid string");
    }

    *fmt = type_format(ct->str, ct->len);
    if (*fmt == CLEF_IMAGE_NONE) {
        return unsupported_type(err, loc, i, ct->str, ct->len);
    }
    *b64 = data->str;
    *b64_len = data->len;
    return 0;
}


static int
read_one(clef_arena *a, const clef_json *v, size_t i,
    const clef_media_limits *lim, size_t *total, clef_media_input *in,
    clef_error *err)
{
    clef_image_format   declared = CLEF_IMAGE_NONE, actual;
    const char         *b64 = NULL, *why;
    size_t              b64_len = 0, bad;
    int64_t             n;
    uint8_t            *bytes;
    char                loc[64];
    double              aspect;

    image_loc(loc, sizeof(loc), i, NULL);

    if (v->type == CLEF_JSON_STRING) {
        if (parse_data_url(v, i, loc, &declared, &b64, &b64_len, err) != 0) {
            return -1;
        }
    } else if (v->type == CLEF_JSON_OBJECT) {
        if (parse_object(v, i, loc, &declared, &b64, &b64_len, err) != 0) {
            return -1;
        }
    } else {
        return clef_error_set(err, 422, "image_type", loc,
            "Input should be a data URL string or an object with "
            "\"content_type\" and \"base64\"");
    }

    if (b64_len > lim->max_base64) {
        return clef_error_set(err, 413, "image_too_large", loc,
            "Image %zu is %zu bytes of base64; the limit is %zu bytes per "
            "image.", i, b64_len, lim->max_base64);
    }

    bytes = clef_arena_alloc(a, clef_base64_max_decoded(b64_len));
    if (bytes == NULL) {
        return clef_error_set(err, 500, "internal_error", "", "Out of memory.");
    }
    n = clef_base64_decode(b64, b64_len, bytes, &bad, &why);
    if (n < 0) {
        return clef_error_set(err, 400, "image_base64_invalid", loc,
            "Image %zu is not valid base64: %s at offset %zu of its data.",
            i, why, bad);
    }
    if (n == 0) {
        return clef_error_set(err, 400, "image_invalid", loc,
                              "Image %zu is empty.", i);
    }

    *total += (size_t) n;
    if (*total > lim->max_bytes) {
        return clef_error_set(err, 413, "images_too_large", loc,
            "Images 0 to %zu decode to %zu bytes; the limit is %zu bytes "
            "for all images of a request.", i, *total, lim->max_bytes);
    }

    actual = clef_image_sniff(bytes, (size_t) n);
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
    in->len = (size_t) n;
    in->frames = 1;
    in->duration_us = 0;
    if (clef_image_probe(actual, bytes, (size_t) n, &in->width, &in->height,
                         &why) != 0)
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
