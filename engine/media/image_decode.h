/*
 * Decoding an image file to 8-bit RGB, exactly as the reference's loading
 * path does.  The reference (transformers 5.x, Qwen2VLImageProcessor, a
 * TorchvisionBackend) loads a data URL with load_image_as_tensor():
 * torchvision.io.decode_image(bytes, mode=RGB, apply_exif_orientation=True)
 * (torchcodec's decoder instead where torchcodec >= 0.16 is installed; it
 * is the same code).  What that means, read in its source and checked
 * against it on t/fixtures/images:
 *
 *   PNG   libpng, no gamma or colour-profile correction; palette expanded;
 *         grey replicated to R, G, B; alpha (an alpha channel, a palette's
 *         tRNS) dropped, never composited; EXIF orientation from an eXIf
 *         chunk before the image data.  16-bit: the reference hands a
 *         uint16 tensor to a processor that divides by 255 (its pixel
 *         values reach 513): we keep the high byte, torchvision's own
 *         to_dtype(uint8, scale=True), and say so (docs/design/media.md).
 *   JPEG  libjpeg-turbo, default decoding (ISLOW DCT, fancy upsampling);
 *         grey and YCbCr to RGB by libjpeg; CMYK and YCCK decoded as CMYK
 *         and turned into RGB with k - k * (255 - c) / 255 (rounded as
 *         Pillow's MULDIV255), no Adobe inversion; EXIF orientation from
 *         the first APP1 marker; ICC profiles ignored.
 *   WebP  libwebp, WebPDecodeRGB: alpha dropped, EXIF ignored.  Animated
 *         WebP: the reference refuses it ("Animated webp files are not
 *         supported"); we decode the first frame on the animation's canvas
 *         (what Pillow shows), alpha dropped.
 *
 * Decoding runs in the engine's preparing thread, never in an nginx
 * worker.  Its cost is bounded by the pixel limit (checked again here from
 * the header before any allocation), a progressive JPEG's scan count, and
 * a deadline.
 */
#ifndef CLEF_IMAGE_DECODE_H
#define CLEF_IMAGE_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "media/image_input.h"

#define CLEF_IMAGE_DECODE_SECONDS  10.0   /* per image, whatever it is */
#define CLEF_JPEG_MAX_SCANS        256    /* progressive scans (64 real
                                             encoders never pass 30) */

typedef struct {
    int32_t   width;
    int32_t   height;
    uint8_t  *rgb;          /* [height][width][3], malloc'ed */
} clef_rgb_image;

void clef_rgb_image_free(clef_rgb_image *im);

/*
 * Decodes in (its format checked again) into out, upright (EXIF applied).
 * index names the image in errors: 400 image_invalid, loc
 * ["body","images",index], the decoder's reason in the message.
 */
int clef_image_decode(const clef_media_input *in, int index,
    int64_t max_pixels, clef_rgb_image *out, clef_error *err);

/* The same, the EXIF orientation applied only when exif is set (Clef
 * Omni's reference opens images with PIL, which does not turn them). */
int clef_image_decode_exif(const clef_media_input *in, int index,
    int64_t max_pixels, int exif, clef_rgb_image *out, clef_error *err);

/* ---- the parts, one file each ------------------------------------------ */

/* why: a static string, or msg (at least 200 bytes) filled. */
int clef_decode_png(const uint8_t *p, size_t len, int64_t max_pixels,
    double deadline, clef_rgb_image *out, int *orientation, char *msg);
int clef_decode_jpeg(const uint8_t *p, size_t len, int64_t max_pixels,
    double deadline, clef_rgb_image *out, int *orientation, char *msg);
int clef_decode_webp(const uint8_t *p, size_t len, int64_t max_pixels,
    clef_rgb_image *out, char *msg);

/* The orientation tag (1-8) of TIFF-structured EXIF data, -1 when none,
 * read the way the reference reads it (exif.c). */
int clef_exif_orientation(const uint8_t *p, size_t len);

/* Turns im upright for an EXIF orientation; 1 and unknown values change
 * nothing.  -1 when out of memory. */
int clef_exif_apply(clef_rgb_image *im, int orientation);

#endif
