/*
 * Image dimensions from the header alone (see image_input.h): the worker
 * reads them to refuse a decompression bomb before the engine allocates
 * anything, so this reads a few bytes and never a pixel, and links no
 * codec library (an nginx worker carries none: serve/engine_library.h).
 * The engine's decoders check everything else.
 */
#include "media/image_input.h"

#include <string.h>

#define MAX_SIDE  (1 << 24)


static uint32_t
be16(const uint8_t *p)
{
    return (uint32_t) p[0] << 8 | p[1];
}


static uint32_t
le16(const uint8_t *p)
{
    return (uint32_t) p[1] << 8 | p[0];
}


static uint32_t
le24(const uint8_t *p)
{
    return (uint32_t) p[2] << 16 | (uint32_t) p[1] << 8 | p[0];
}


static uint32_t
le32(const uint8_t *p)
{
    return (uint32_t) p[3] << 24 | le24(p);
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


/*
 * RIFF "WEBP", then the first chunk (the WebP container spec), as libwebp's
 * WebPGetFeatures() reads it:
 *   VP8X  the canvas: 24-bit width - 1 and height - 1 after 4 flag bytes;
 *   VP8   a lossy key frame: 3 tag bytes (bit 0 clear for a key frame),
 *         the start code 9d 01 2a, then 14-bit width and height;
 *   VP8L  lossless: signature 0x2f, then width - 1 and height - 1 in 14
 *         bits each and a version of 0 in the top 3 bits of 32.
 */
static int
probe_webp(const uint8_t *p, size_t len, int32_t *w, int32_t *h,
    const char **why)
{
    const uint8_t  *c = p + 12;
    uint32_t        size, bits, width, height;

    if (len < 12 + 8 || memcmp(p, "RIFF", 4) != 0
        || memcmp(p + 8, "WEBP", 4) != 0 || le32(p + 4) < 4 + 8)
    {
        *why = "the WebP header cannot be read";
        return -1;
    }
    size = le32(c + 4);
    c += 8;
    len -= 20;

    if (memcmp(c - 8, "VP8X", 4) == 0) {
        if (size != 10 || len < 10) {
            *why = "the WebP header cannot be read";
            return -1;
        }
        width = 1 + le24(c + 4);
        height = 1 + le24(c + 7);

    } else if (memcmp(c - 8, "VP8 ", 4) == 0) {
        bits = len >= 10 ? le24(c) : 1;
        if (len < 10 || (bits & 1) != 0 || c[3] != 0x9d || c[4] != 0x01
            || c[5] != 0x2a)
        {
            *why = "the WebP header cannot be read";
            return -1;
        }
        width = le16(c + 6) & 0x3fff;
        height = le16(c + 8) & 0x3fff;

    } else if (memcmp(c - 8, "VP8L", 4) == 0) {
        bits = len >= 5 ? le32(c + 1) : 0;
        if (len < 5 || c[0] != 0x2f || (bits >> 29) != 0) {
            *why = "the WebP header cannot be read";
            return -1;
        }
        width = 1 + (bits & 0x3fff);
        height = 1 + ((bits >> 14) & 0x3fff);

    } else {
        *why = "the WebP header cannot be read";
        return -1;
    }

    if (width == 0 || height == 0 || width >= MAX_SIDE || height >= MAX_SIDE) {
        *why = "the WebP header states an impossible size";
        return -1;
    }
    *w = (int32_t) width;
    *h = (int32_t) height;
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
