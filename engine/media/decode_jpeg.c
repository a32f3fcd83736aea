/*
 * JPEG to RGB with libjpeg-turbo (see image_decode.h for what matches the
 * reference and why).  libjpeg reports errors by calling error_exit, which
 * longjmps back here.  A progress monitor bounds the work: a progressive
 * file may hold thousands of tiny scans, each a pass over the whole image.
 */
#include "media/image_decode.h"

#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>

#include "base/clock.h"

#define APP1  (JPEG_APP0 + 1)

typedef struct {
    struct jpeg_error_mgr       pub;     /* first: libjpeg sees this */
    struct jpeg_progress_mgr    progress;
    jmp_buf                     jump;
    char                       *msg;
    double                      deadline;
} jpeg_ctx;


static void
jpeg_fail(j_common_ptr cinfo)
{
    jpeg_ctx  *c = (jpeg_ctx *) cinfo->err;
    char       text[JMSG_LENGTH_MAX];

    cinfo->err->format_message(cinfo, text);
    snprintf(c->msg, 200, "JPEG: %.180s", text);
    longjmp(c->jump, 1);
}


static void
jpeg_quiet(j_common_ptr cinfo, int level)
{
    (void) cinfo;
    (void) level;       /* warnings (corrupt data, extraneous bytes) */
}


static void
jpeg_progress(j_common_ptr cinfo)
{
    j_decompress_ptr  d = (j_decompress_ptr) cinfo;
    jpeg_ctx         *c = (jpeg_ctx *) cinfo->err;

    if (d->input_scan_number > CLEF_JPEG_MAX_SCANS) {
        snprintf(c->msg, 200, "JPEG: more than %d progressive scans",
                 CLEF_JPEG_MAX_SCANS);
        longjmp(c->jump, 1);
    }
    if (clef_clock_seconds() > c->deadline) {
        snprintf(c->msg, 200, "JPEG: decoding took too long");
        longjmp(c->jump, 1);
    }
}


/* The whole file is in memory: running out of it means a truncated file,
 * an error, as in the reference (libjpeg's own memory source would make up
 * an end and decode grey for the rest). */
static void
src_init(j_decompress_ptr d)
{
    (void) d;
}


static boolean
src_fill(j_decompress_ptr d)
{
    jpeg_ctx  *c = (jpeg_ctx *) d->err;

    snprintf(c->msg, 200, "JPEG: the file is truncated");
    longjmp(c->jump, 1);
    return FALSE;
}


static void
src_skip(j_decompress_ptr d, long n)
{
    struct jpeg_source_mgr  *s = d->src;

    if (n <= 0) {
        return;
    }
    if ((size_t) n > s->bytes_in_buffer) {
        src_fill(d);
    }
    s->next_input_byte += n;
    s->bytes_in_buffer -= (size_t) n;
}


static void
src_term(j_decompress_ptr d)
{
    (void) d;
}


/* k - MULDIV255(k, 255 - c) clamped, the reference's CMYK to RGB */
static uint8_t
cmyk_channel(int k, int cmy)
{
    int  v = k * cmy + 128;

    v = ((v >> 8) + v) >> 8;
    v = k - v;
    return (uint8_t) (v < 0 ? 0 : v > 255 ? 255 : v);
}


/* The orientation in the first APP1 marker, read 6 bytes in (past
 * "Exif\0\0", which the reference does not check either). */
static int
jpeg_orientation(j_decompress_ptr d)
{
    jpeg_saved_marker_ptr  m;

    for (m = d->marker_list; m != NULL; m = m->next) {
        if (m->marker == APP1) {
            if (m->data_length <= 6) {
                return -1;
            }
            return clef_exif_orientation(m->data + 6, m->data_length - 6);
        }
    }
    return -1;
}


int
clef_decode_jpeg(const uint8_t *p, size_t len, int64_t max_pixels,
    double deadline, clef_rgb_image *out, int *orientation, char *msg)
{
    struct jpeg_decompress_struct  d;
    jpeg_ctx                       c;
    struct jpeg_source_mgr         src;
    uint8_t                *volatile rgb = NULL, *volatile line = NULL;
    volatile int                   rc = -1;
    JSAMPROW                       row;
    JDIMENSION                     w, h, x;
    int                            cmyk;
    uint8_t                       *o;

    memset(&c, 0, sizeof(c));
    c.msg = msg;
    c.deadline = deadline;
    *orientation = -1;

    d.err = jpeg_std_error(&c.pub);
    c.pub.error_exit = jpeg_fail;
    c.pub.emit_message = jpeg_quiet;
    if (setjmp(c.jump) != 0) {
        goto done;
    }

    jpeg_create_decompress(&d);
    c.progress.progress_monitor = jpeg_progress;
    d.progress = &c.progress;
    src.next_input_byte = p;
    src.bytes_in_buffer = len;
    src.init_source = src_init;
    src.fill_input_buffer = src_fill;
    src.skip_input_data = src_skip;
    src.resync_to_restart = jpeg_resync_to_restart;
    src.term_source = src_term;
    d.src = &src;
    jpeg_save_markers(&d, APP1, 0xffff);
    jpeg_read_header(&d, TRUE);

    if ((int64_t) d.image_width * d.image_height > max_pixels) {
        snprintf(msg, 200, "%ux%u is over %lld pixels",
                 (unsigned) d.image_width, (unsigned) d.image_height,
                 (long long) max_pixels);
        goto done;
    }

    cmyk = d.jpeg_color_space == JCS_CMYK || d.jpeg_color_space == JCS_YCCK;
    d.out_color_space = cmyk ? JCS_CMYK : JCS_RGB;
    jpeg_start_decompress(&d);
    w = d.output_width;
    h = d.output_height;

    rgb = malloc((size_t) w * h * 3);
    line = cmyk ? malloc((size_t) w * 4) : NULL;
    if (rgb == NULL || (cmyk && line == NULL)) {
        snprintf(msg, 200, "out of memory for %ux%u pixels", (unsigned) w,
                 (unsigned) h);
        goto done;
    }
    while (d.output_scanline < h) {
        o = rgb + (size_t) d.output_scanline * w * 3;
        row = cmyk ? line : o;
        jpeg_read_scanlines(&d, &row, 1);
        if (cmyk) {
            for (x = 0; x < w; x++) {
                o[3 * x] = cmyk_channel(line[4 * x + 3], 255 - line[4 * x]);
                o[3 * x + 1] = cmyk_channel(line[4 * x + 3], 255 - line[4 * x + 1]);
                o[3 * x + 2] = cmyk_channel(line[4 * x + 3], 255 - line[4 * x + 2]);
            }
        }
    }
    *orientation = jpeg_orientation(&d);
    jpeg_finish_decompress(&d);

    out->width = (int32_t) w;
    out->height = (int32_t) h;
    out->rgb = rgb;
    rgb = NULL;
    rc = 0;

done:
    jpeg_destroy_decompress(&d);
    free(rgb);
    free(line);
    return rc;
}
