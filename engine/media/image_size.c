/*
 * The image processor's sizes (processor.h): its configuration and
 * smart_resize, without a pixel.  Part of the client library: an nginx
 * worker counts an image's tokens from its header before it queues a
 * request, and `nginx -t` reads the processor's configuration.
 */
#include <math.h>

#include "media/processor.h"


void
clef_processor_config_default(clef_processor_config *pc)
{
    int  c;

    pc->patch_size = 16;
    pc->temporal_patch_size = 2;
    pc->merge_size = 2;
    pc->min_pixels = 65536;
    pc->max_pixels = 16777216;
    pc->rescale_factor = 1.0 / 255.0;
    pc->exif_orientation = 1;
    for (c = 0; c < 3; c++) {
        pc->mean[c] = 0.5;
        pc->std[c] = 0.5;
    }
}


/* Python's round() of a float: half to even, which nearbyint() does in the
 * default rounding mode */
static double
py_round(double x)
{
    return nearbyint(x);
}


int
clef_smart_resize(int64_t h, int64_t w, int factor, int64_t min_pixels,
    int64_t max_pixels, int64_t *oh, int64_t *ow, const char **why)
{
    double  hb, wb, beta, f = factor;

    if (h <= 0 || w <= 0) {
        *why = "it has no pixels";
        return -1;
    }
    if ((double) (h > w ? h : w) / (double) (h < w ? h : w) > 200) {
        *why = "its aspect ratio is over 200";
        return -1;
    }
    hb = py_round((double) h / f) * f;
    wb = py_round((double) w / f) * f;
    if (hb * wb > (double) max_pixels) {
        beta = sqrt((double) (h * w) / (double) max_pixels);
        hb = fmax(f, floor((double) h / beta / f) * f);
        wb = fmax(f, floor((double) w / beta / f) * f);
    } else if (hb * wb < (double) min_pixels) {
        beta = sqrt((double) min_pixels / (double) (h * w));
        hb = ceil((double) h * beta / f) * f;
        wb = ceil((double) w * beta / f) * f;
    }
    /* a 200:1 strip of the largest area stays far below this */
    if (hb < f || wb < f || hb > 65536 || wb > 65536) {
        *why = "it resizes to no valid size";
        return -1;
    }
    *oh = (int64_t) hb;
    *ow = (int64_t) wb;
    return 0;
}


int64_t
clef_image_pad_tokens(int64_t h, int64_t w, const clef_processor_config *pc)
{
    const char  *why;
    int64_t      oh, ow, f = (int64_t) pc->patch_size * pc->merge_size;

    if (clef_smart_resize(h, w, (int) f, pc->min_pixels, pc->max_pixels, &oh,
                          &ow, &why) != 0)
    {
        return -1;
    }
    return (oh / f) * (ow / f);
}
