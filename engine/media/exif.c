/*
 * EXIF orientation, read and applied as the reference's decoders do
 * (torchvision/torchcodec, whose reader follows OpenCV's): the TIFF header
 * of the EXIF data, then IFD0's entries until tag 0x0112.  Their quirks are
 * part of what the reference computes, so they are kept:
 *   - a byte order mark other than "II" is read as big-endian;
 *   - a read past the end yields 0xFFFF (which ends the walk when read as
 *     a tag), offsets are 32-bit and wrap;
 *   - the value is the entry's first 16 bits whatever its stated type;
 *   - only 1-8 change the image.
 */
#include "media/image_decode.h"

#include <stdlib.h>
#include <string.h>

#define ORIENTATION_TAG  0x0112
#define NO_VALUE         0xffff


static uint32_t
get16(const uint8_t *p, size_t len, int intel, uint64_t at)
{
    if (at + 1 >= len) {
        return NO_VALUE;
    }
    return intel ? (uint32_t) p[at] | (uint32_t) p[at + 1] << 8
                 : (uint32_t) p[at] << 8 | p[at + 1];
}


static uint32_t
get32(const uint8_t *p, size_t len, int intel, uint64_t at)
{
    if (at + 3 >= len) {
        return NO_VALUE;
    }
    return intel ? (uint32_t) p[at] | (uint32_t) p[at + 1] << 8
                   | (uint32_t) p[at + 2] << 16 | (uint32_t) p[at + 3] << 24
                 : (uint32_t) p[at] << 24 | (uint32_t) p[at + 1] << 16
                   | (uint32_t) p[at + 2] << 8 | p[at + 3];
}


int
clef_exif_orientation(const uint8_t *p, size_t len)
{
    uint32_t  off, entries, i, tag;
    int       intel;

    intel = len >= 2 && p[0] == 'I' && p[1] == 'I';
    if (get16(p, len, intel, 2) != 0x2a) {
        return -1;
    }
    off = get32(p, len, intel, 4);
    entries = get16(p, len, intel, off);
    off += 2;
    for (i = 0; i < entries; i++) {
        tag = get16(p, len, intel, off);
        if (tag == NO_VALUE) {
            break;
        }
        if (tag == ORIENTATION_TAG) {
            return (int) get16(p, len, intel, (uint32_t) (off + 8));
        }
        off += 12;
    }
    return -1;
}


int
clef_exif_apply(clef_rgb_image *im, int o)
{
    int64_t   W = im->width, H = im->height, x, y, sx, sy, ow, oh;
    uint8_t  *out;
    const uint8_t  *src;

    if (o < 2 || o > 8) {
        return 0;
    }
    ow = o >= 5 ? H : W;
    oh = o >= 5 ? W : H;
    out = malloc((size_t) (ow * oh * 3));
    if (out == NULL) {
        return -1;
    }

    for (y = 0; y < oh; y++) {
        for (x = 0; x < ow; x++) {
            switch (o) {
            case 2:  sy = y;          sx = W - 1 - x;  break;   /* mirror */
            case 3:  sy = H - 1 - y;  sx = W - 1 - x;  break;   /* 180 */
            case 4:  sy = H - 1 - y;  sx = x;          break;   /* flip */
            case 5:  sy = x;          sx = y;          break;   /* transpose */
            case 6:  sy = H - 1 - x;  sx = y;          break;   /* 90 cw */
            case 7:  sy = H - 1 - x;  sx = W - 1 - y;  break;   /* transverse */
            default: sy = x;          sx = W - 1 - y;  break;   /* 90 ccw */
            }
            src = im->rgb + (sy * W + sx) * 3;
            memcpy(out + (y * ow + x) * 3, src, 3);
        }
    }
    free(im->rgb);
    im->rgb = out;
    im->width = (int32_t) ow;
    im->height = (int32_t) oh;
    return 0;
}
