/*
 * Image dimensions from the header alone (see image_input.h): the worker
 * reads them to refuse a decompression bomb before the engine allocates
 * anything, so this reads a few bytes and never a pixel.
 */
#include "media/image_input.h"

#include <string.h>

#include <webp/decode.h>

#define MAX_SIDE  (1 << 24)


static uint32_t
be16(const uint8_t *p)
{
    return (uint32_t) p[0] << 8 | p[1];
}


static uint32_t
be32(const uint8_t *p)
{
    return (uint32_t) p[0] << 24 | (uint32_t) p[1] << 16 | (uint32_t) p[2] << 8
           | p[3];
}


/* The signature, then IHDR first of all chunks (the PNG spec requires it):
 * length 13, "IHDR", width, height, ... */
static int
probe_png(const uint8_t *p, size_t len, int32_t *w, int32_t *h,
    const char **why)
{
    uint32_t  width, height;

    if (len < 8 + 8 + 13 || be32(p + 8) != 13 || memcmp(p + 12, "IHDR", 4) != 0) {
        *why = "the PNG has no IHDR chunk where the format puts it";
        return -1;
    }
    width = be32(p + 16);
    height = be32(p + 20);
    if (width == 0 || height == 0 || width >= MAX_SIDE || height >= MAX_SIDE) {
        *why = "the PNG header states an impossible size";
        return -1;
    }
    *w = (int32_t) width;
    *h = (int32_t) height;
    return 0;
}


/* Markers after SOI up to the frame header (SOF0..SOF15 but DHT, JPG and
 * DAC, which share the range): precision, height, width.  A scan or the
 * end before it means no frame. */
static int
probe_jpeg(const uint8_t *p, size_t len, int32_t *w, int32_t *h,
    const char **why)
{
    size_t   i = 2, seg;
    uint8_t  m;

    for ( ;; ) {
        /* a marker is 0xFF, any number of fill 0xFF, then its code */
        if (i >= len || p[i] != 0xff) {
            *why = "the JPEG has no frame header before its data";
            return -1;
        }
        while (i < len && p[i] == 0xff) {
            i++;
        }
        if (i >= len) {
            *why = "the JPEG ends before its frame header";
            return -1;
        }
        m = p[i++];

        if (m == 0x01 || (m >= 0xd0 && m <= 0xd8)) {
            continue;                   /* no length: TEM, RSTn, SOI */
        }
        if (m == 0xd9 || m == 0xda) {
            *why = "the JPEG has no frame header before its data";
            return -1;
        }
        if (i + 2 > len || be16(p + i) < 2) {
            *why = "the JPEG ends inside a marker";
            return -1;
        }
        seg = be16(p + i);

        if (m >= 0xc0 && m <= 0xcf && m != 0xc4 && m != 0xc8 && m != 0xcc) {
            if (seg < 8 || i + 7 > len) {
                *why = "the JPEG frame header is cut short";
                return -1;
            }
            *h = (int32_t) be16(p + i + 3);
            *w = (int32_t) be16(p + i + 5);
            if (*h == 0 || *w == 0) {
                /* a height given later by a DNL marker: no reader we
                 * know of produces it, and it cannot be checked here */
                *why = "the JPEG frame header states no height or width";
                return -1;
            }
            return 0;
        }
        i += seg;
    }
}


static int
probe_webp(const uint8_t *p, size_t len, int32_t *w, int32_t *h,
    const char **why)
{
    WebPBitstreamFeatures  f;

    if (WebPGetFeatures(p, len, &f) != VP8_STATUS_OK) {
        *why = "the WebP header cannot be read";
        return -1;
    }
    if (f.width <= 0 || f.height <= 0) {
        *why = "the WebP header states an impossible size";
        return -1;
    }
    *w = f.width;
    *h = f.height;
    return 0;
}


int
clef_image_probe(clef_image_format f, const uint8_t *p, size_t len,
    int32_t *width, int32_t *height, const char **why)
{
    switch (f) {
    case CLEF_IMAGE_PNG:
        return probe_png(p, len, width, height, why);
    case CLEF_IMAGE_JPEG:
        return probe_jpeg(p, len, width, height, why);
    case CLEF_IMAGE_WEBP:
        return probe_webp(p, len, width, height, why);
    default:
        *why = "not a PNG, JPEG or WebP file";
        return -1;
    }
}
