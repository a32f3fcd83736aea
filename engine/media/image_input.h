/*
 * The images of a request as they arrive (docs/spec/protocol.md §2,
 * "Media", Cloudflare's form): a top-level "images" array whose items are
 * data URLs, "data:image/png|jpeg|webp;base64,...", or objects
 * {"content_type": "image/png", "base64": "..."}.
 *
 * Reading them is the worker's part, before anything is queued: the wire
 * form, the limits, the base64, and the image's header (its format must be
 * the declared one; its dimensions are read before any pixel is decoded,
 * so a small file that claims a huge image is refused without allocating
 * it).  Pixels are decoded later, by the engine (image_decode.h).
 *
 * Every refusal names the image: loc ["body","images",I] (or a field of
 * it), and the message says which image and why.
 */
#ifndef CLEF_IMAGE_INPUT_H
#define CLEF_IMAGE_INPUT_H

#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "base/error.h"
#include "media/media.h"
#include "text/json.h"

typedef enum {
    CLEF_IMAGE_NONE = 0,
    CLEF_IMAGE_PNG = 1,
    CLEF_IMAGE_JPEG = 2,
    CLEF_IMAGE_WEBP = 3
} clef_image_format;

#define CLEF_IMAGE_MAX_BASE64   (4u << 20)      /* per image, as sent */
#define CLEF_IMAGE_MAX_BYTES    (8u << 20)      /* decoded, all images */
#define CLEF_IMAGE_MAX_PIXELS   (16 << 20)      /* per image (4096 x 4096,
                                                   the processor's max) */
#define CLEF_IMAGE_MAX_ASPECT   200             /* the processor refuses more */

#define CLEF_IMAGE_MAX_ITEMS    4               /* per request */

/* "png", "jpeg", "webp" */
const char *clef_image_format_name(clef_image_format f);

/* The format the first bytes say, CLEF_IMAGE_NONE when none of the three. */
clef_image_format clef_image_sniff(const uint8_t *p, size_t len);

/*
 * The dimensions a file's header states, reading no pixel: PNG's IHDR,
 * JPEG's frame header (SOFn), WebP's VP8/VP8L/VP8X header.  -1 with *why
 * set when the header cannot be read.
 */
int clef_image_probe(clef_image_format f, const uint8_t *p, size_t len,
    int32_t *width, int32_t *height, const char **why);

/*
 * Reads images (a JSON array) into n media inputs of the image kind
 * (media.h: format, bytes, width and height from the header, one frame),
 * allocated with their decoded bytes in a; lim NULL: the image kind's
 * defaults (kinds.h).  Returns 0, or -1 with err filled for the first
 * image refused.
 */
int clef_image_inputs_read(clef_arena *a, const clef_json *images,
    const clef_media_limits *lim, clef_media_input **out, clef_error *err);

#endif
