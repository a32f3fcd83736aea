/*
 * WebP to RGB with libwebp (see image_decode.h for what matches the
 * reference and why).  A still image decodes with WebPDecodeRGB as in the
 * reference; an animation, which the reference refuses, gives its first
 * frame as WebPAnimDecoder composes it on the canvas.
 */
#include "media/image_decode.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <webp/decode.h>
#include <webp/demux.h>


static int
first_frame(const uint8_t *p, size_t len, clef_rgb_image *out, char *msg)
{
    WebPAnimDecoderOptions  o;
    WebPAnimDecoder        *dec;
    WebPAnimInfo            info;
    WebPData                data = { p, len };
    uint8_t                *rgba, *rgb;
    int                     ts;
    int64_t                 i, n;

    if (!WebPAnimDecoderOptionsInit(&o)) {
        snprintf(msg, 200, "WebP: libwebp version mismatch");
        return -1;
    }
    o.color_mode = MODE_RGBA;
    o.use_threads = 0;
    dec = WebPAnimDecoderNew(&data, &o);
    if (dec == NULL) {
        snprintf(msg, 200, "WebP: the animation cannot be read");
        return -1;
    }
    if (!WebPAnimDecoderGetInfo(dec, &info)
        || !WebPAnimDecoderGetNext(dec, &rgba, &ts))
    {
        WebPAnimDecoderDelete(dec);
        snprintf(msg, 200, "WebP: the first frame cannot be decoded");
        return -1;
    }
    n = (int64_t) info.canvas_width * info.canvas_height;
    rgb = malloc((size_t) n * 3);
    if (rgb == NULL) {
        WebPAnimDecoderDelete(dec);
        snprintf(msg, 200, "out of memory");
        return -1;
    }
    for (i = 0; i < n; i++) {
        memcpy(rgb + 3 * i, rgba + 4 * i, 3);
    }
    WebPAnimDecoderDelete(dec);
    out->width = (int32_t) info.canvas_width;
    out->height = (int32_t) info.canvas_height;
    out->rgb = rgb;
    return 0;
}


int
clef_decode_webp(const uint8_t *p, size_t len, int64_t max_pixels,
    clef_rgb_image *out, char *msg)
{
    WebPBitstreamFeatures  f;
    uint8_t               *px, *rgb;
    int                    w, h;
    size_t                 n;

    if (WebPGetFeatures(p, len, &f) != VP8_STATUS_OK) {
        snprintf(msg, 200, "WebP: the header cannot be read");
        return -1;
    }
    if ((int64_t) f.width * f.height > max_pixels || f.width <= 0
        || f.height <= 0)
    {
        snprintf(msg, 200, "%dx%d is over %lld pixels", f.width, f.height,
                 (long long) max_pixels);
        return -1;
    }
    if (f.has_animation) {
        return first_frame(p, len, out, msg);
    }

    px = WebPDecodeRGB(p, len, &w, &h);
    if (px == NULL) {
        snprintf(msg, 200, "WebP: the image data cannot be decoded");
        return -1;
    }
    /* copied once so that everything decoded is freed with free() */
    n = (size_t) w * h * 3;
    rgb = malloc(n);
    if (rgb != NULL) {
        memcpy(rgb, px, n);
    }
    WebPFree(px);
    if (rgb == NULL) {
        snprintf(msg, 200, "out of memory");
        return -1;
    }
    out->width = w;
    out->height = h;
    out->rgb = rgb;
    return 0;
}
