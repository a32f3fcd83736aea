/*
 * The worker's header probe (media/image_probe.c) reads WebP sizes without
 * libwebp (an nginx worker links no codec): on every WebP of the corpus,
 * on each of its prefixes and on every one-byte change of its first 40
 * bytes, whenever libwebp's own WebPGetFeatures() reads a size, the probe
 * reads the same one.  The probe may accept what libwebp refuses (a VP8X
 * canvas cut short before its image): the engine's decoder refuses those.
 */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include <webp/decode.h>

#include "check.h"
#include "media/image_input.h"
#include "slurp.h"

static int  compared, disagreed;

static void
compare(const uint8_t *p, size_t len)
{
    WebPBitstreamFeatures  f;
    int32_t                w = 0, h = 0;
    const char            *why;

    if (WebPGetFeatures(p, len, &f) != VP8_STATUS_OK) {
        return;
    }
    compared++;
    if (clef_image_probe(CLEF_IMAGE_WEBP, p, len, &w, &h, &why) != 0
        || w != f.width || h != f.height)
    {
        disagreed++;
    }
}

static void
probe_file(const char *path, int32_t want_w, int32_t want_h)
{
    size_t         len, i, n;
    uint8_t       *p = (uint8_t *) slurp(path, &len), *q;
    int32_t        w = 0, h = 0;
    const char    *why = "";
    int            b, rc;

    CHECK(p != NULL, "%s: read", path);
    if (p == NULL) {
        return;
    }
    rc = clef_image_probe(CLEF_IMAGE_WEBP, p, len, &w, &h, &why);
    CHECK(rc == 0 && w == want_w && h == want_h, "%s: %dx%d (%s)", path, w, h,
          rc == 0 ? "read" : why);
    for (n = 1; n <= len && n < 4096; n++) {
        compare(p, n);
    }
    q = malloc(len);
    for (i = 0; q != NULL && i < 40 && i < len; i++) {
        for (b = 0; b < 256; b += 7) {
            memcpy(q, p, len);
            q[i] = (uint8_t) b;
            compare(q, len);
        }
    }
    free(q);
    free(p);
}

int
main(void)
{
    static const struct {
        const char  *name;
        int32_t      w, h;
    } files[] = {
        { "odd_17x3333.webp", 17, 3333 },
        { "webp_alpha_lossy_100x70.webp", 100, 70 },
        { "webp_animated_64x48.webp", 64, 48 },
        { "webp_lossless_96x96.webp", 96, 96 },
        { "webp_lossy_180x120.webp", 180, 120 },
    };
    char        path[512];
    const char *why = "";
    int32_t     w, h;
    size_t      i;
    int         rc;

    for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        snprintf(path, sizeof(path), "t/fixtures/images/corpus/%s",
                 files[i].name);
        probe_file(path, files[i].w, files[i].h);
    }
    CHECK(compared > 1000 && disagreed == 0,
          "the probe reads libwebp's size wherever libwebp reads one "
          "(%d compared, %d differ)", compared, disagreed);

    /* a lossy frame that is not a key frame, and a lossless one of
     * another version: refused, as libwebp refuses them */
    {
        uint8_t  vp8[30] = "RIFF\x16\0\0\0WEBPVP8 \x0a\0\0\0\x01\0\0\x9d\x01\x2a"
                           "\x10\0\x10\0";
        uint8_t  vp8l[25] = "RIFF\x11\0\0\0WEBPVP8L\x05\0\0\0\x2f\0\0\0\x20";

        rc = clef_image_probe(CLEF_IMAGE_WEBP, vp8, sizeof(vp8), &w, &h, &why);
        CHECK(rc != 0, "VP8 without a key frame: refused (%s)", why);
        vp8[20] = 0;
        CHECK(clef_image_probe(CLEF_IMAGE_WEBP, vp8, sizeof(vp8), &w, &h, &why)
              == 0 && w == 16 && h == 16, "the same as a key frame: 16x16");
        rc = clef_image_probe(CLEF_IMAGE_WEBP, vp8l, sizeof(vp8l), &w, &h, &why);
        CHECK(rc != 0, "VP8L of version 1: refused (%s)", why);
        vp8l[24] = 0;
        CHECK(clef_image_probe(CLEF_IMAGE_WEBP, vp8l, sizeof(vp8l), &w, &h, &why)
              == 0 && w == 1 && h == 1, "the same of version 0: 1x1");
    }
    return check_done();
}
