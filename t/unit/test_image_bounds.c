/*
 * The cost bounds of decoding (image_decode.h) that the corpus cannot
 * show: a progressive JPEG with more scans than CLEF_JPEG_MAX_SCANS is
 * refused (each scan re-reads the whole coefficient buffer, so a small
 * file with thousands of scans is a CPU bomb), while the same pixels with
 * an ordinary progression decode; and a decode that is past its deadline
 * stops with the reason, for JPEG (progressive and baseline) and PNG.
 * The files are made here with libjpeg's own encoder and a scan script.
 */
#include "check.h"
#include "slurp.h"

#include <jpeglib.h>

#include "base/clock.h"
#include "media/image_decode.h"

#define W  16
#define H  16

/* 2 DC scans, then every AC coefficient of every component alone, first
 * at Al=1 and then refined to Al=0: 2 + 3 x 63 x 2 = 380 scans, each one
 * valid by the progressive rules (ITU T.81 G.1.1.1). */
#define MANY_SCANS  (2 + 3 * 63 * 2)

static jpeg_scan_info  many[MANY_SCANS];


static void
many_scans_script(void)
{
    int  n = 0, c, k;

    many[n].comps_in_scan = 3;
    for (c = 0; c < 3; c++) {
        many[n].component_index[c] = c;
    }
    many[n].Ss = 0; many[n].Se = 0; many[n].Ah = 0; many[n].Al = 1;
    n++;
    many[n] = many[n - 1];
    many[n].Ah = 1; many[n].Al = 0;
    n++;
    for (c = 0; c < 3; c++) {
        for (k = 1; k <= 63; k++) {
            many[n].comps_in_scan = 1;
            many[n].component_index[0] = c;
            many[n].Ss = k; many[n].Se = k; many[n].Ah = 0; many[n].Al = 1;
            n++;
            many[n] = many[n - 1];
            many[n].Ah = 1; many[n].Al = 0;
            n++;
        }
    }
}


/* mode: 0 baseline, 1 libjpeg's simple progression, 2 the 380-scan
 * script.  Returns a malloc'ed JPEG of a W x H gradient. */
static unsigned char *
encode(int mode, unsigned long *len)
{
    struct jpeg_compress_struct  c;
    struct jpeg_error_mgr        e;
    unsigned char                row[W * 3], *out = NULL;
    JSAMPROW                     rp = row;
    int                          x;

    c.err = jpeg_std_error(&e);
    jpeg_create_compress(&c);
    jpeg_mem_dest(&c, &out, len);
    c.image_width = W;
    c.image_height = H;
    c.input_components = 3;
    c.in_color_space = JCS_RGB;
    jpeg_set_defaults(&c);
    jpeg_set_quality(&c, 95, TRUE);
    if (mode == 1) {
        jpeg_simple_progression(&c);
    } else if (mode == 2) {
        many_scans_script();
        c.scan_info = many;
        c.num_scans = MANY_SCANS;
    }
    jpeg_start_compress(&c, TRUE);
    while (c.next_scanline < H) {
        for (x = 0; x < W; x++) {
            row[3 * x] = (unsigned char) (x * 16);
            row[3 * x + 1] = (unsigned char) (c.next_scanline * 16);
            row[3 * x + 2] = (unsigned char) ((x + c.next_scanline) * 8);
        }
        jpeg_write_scanlines(&c, &rp, 1);
    }
    jpeg_finish_compress(&c);
    jpeg_destroy_compress(&c);
    return out;
}



static int
decode_jpeg(const unsigned char *p, unsigned long len, double deadline,
    clef_rgb_image *im, char *msg)
{
    int  orientation = 1;

    memset(im, 0, sizeof(*im));
    msg[0] = '\0';
    return clef_decode_jpeg(p, len, 16 << 20, deadline, im, &orientation,
                            msg);
}


int
main(void)
{
    unsigned char   *base, *prog, *bomb, *png;
    unsigned long    base_len, prog_len, bomb_len;
    size_t           png_len;
    clef_rgb_image   im;
    char             msg[256];
    double           later = clef_clock_seconds() + 60, past;
    int              orientation, rc;

    base = encode(0, &base_len);
    prog = encode(1, &prog_len);
    bomb = encode(2, &bomb_len);

    rc = decode_jpeg(prog, prog_len, later, &im, msg);
    CHECK(rc == 0 && im.width == W && im.height == H,
          "a progressive JPEG of libjpeg's usual 10 scans decodes");
    clef_rgb_image_free(&im);

    rc = decode_jpeg(bomb, bomb_len, later, &im, msg);
    CHECK(rc != 0, "a %d-scan progressive JPEG (%lu bytes) is refused",
          MANY_SCANS, bomb_len);
    CHECK_STR(msg, "JPEG: more than 256 progressive scans",
              "the refusal names the scan limit");
    CHECK(im.rgb == NULL, "nothing is left allocated for the refused one");

    past = clef_clock_seconds() - 1;
    rc = decode_jpeg(prog, prog_len, past, &im, msg);
    CHECK(rc != 0, "a progressive JPEG past its deadline stops");
    CHECK_STR(msg, "JPEG: decoding took too long",
              "the refusal says it took too long");

    rc = decode_jpeg(base, base_len, past, &im, msg);
    CHECK(rc != 0, "a baseline JPEG past its deadline stops");
    CHECK_STR(msg, "JPEG: decoding took too long",
              "the refusal says it took too long");
    rc = decode_jpeg(base, base_len, later, &im, msg);
    CHECK(rc == 0 && im.width == W, "the same baseline JPEG in time decodes");
    clef_rgb_image_free(&im);

    png = (unsigned char *) slurp("t/fixtures/images/corpus/png_rgb_64x48.png", &png_len);
    CHECK(png != NULL, "the corpus' 64x48 RGB PNG is there");
    if (png != NULL) {
        memset(&im, 0, sizeof(im));
        orientation = 1;
        rc = clef_decode_png(png, png_len, 16 << 20, past, &im, &orientation,
                             msg);
        CHECK(rc != 0, "a PNG past its deadline stops");
        CHECK_STR(msg, "PNG: decoding took too long",
                  "the refusal says it took too long");
        memset(&im, 0, sizeof(im));
        rc = clef_decode_png(png, png_len, 16 << 20, later, &im,
                             &orientation, msg);
        CHECK(rc == 0 && im.width == 64 && im.height == 48,
              "the same PNG in time decodes");
        clef_rgb_image_free(&im);
    }

    free(base);
    free(prog);
    free(bomb);
    free(png);
    return check_done();
}
