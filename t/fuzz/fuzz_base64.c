/*
 * The images of a request as the worker reads them (image_input.h): the
 * input is one "images" item, a data URL or the base64 of an object's
 * "base64" field.  Whatever it is, reading never crashes or leaks and either
 * refuses with a complete error naming image 0, or gives a file of a known
 * format whose header dimensions are within the limits.  Raw base64
 * decoding is checked against a re-encoding of what it returned.
 */
#include <stdint.h>

#include "fuzz_common.h"
#include "media/base64.h"
#include "media/image_input.h"
#include "media/kinds.h"

static const char  alpha[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static void
check_decode(const uint8_t *data, size_t size)
{
    uint8_t     *out = malloc(clef_base64_max_decoded(size) + 1);
    size_t       bad = 0, i, j = 0;
    const char  *why = NULL;
    int64_t      n;
    uint32_t     v;
    char         c[4];

    n = clef_base64_decode((const char *) data, size, out, &bad, &why);
    if (n < 0) {
        if (why == NULL || bad > size) {
            fuzz_fail("base64 refusal without a reason or offset");
        }
        free(out);
        return;
    }
    if ((size_t) n > clef_base64_max_decoded(size)) {
        fuzz_fail("base64 decoded past its bound");
    }
    /* every decoded byte comes back from the text's alphabet characters */
    for (i = 0; i + 3 <= (size_t) n; i += 3) {
        v = (uint32_t) out[i] << 16 | (uint32_t) out[i + 1] << 8 | out[i + 2];
        c[0] = alpha[v >> 18];
        c[1] = alpha[(v >> 12) & 63];
        c[2] = alpha[(v >> 6) & 63];
        c[3] = alpha[v & 63];
        for (v = 0; v < 4; v++) {
            while (j < size && (data[j] == ' ' || data[j] == '\t'
                                || data[j] == '\r' || data[j] == '\n'))
            {
                j++;
            }
            if (j >= size || data[j] != (uint8_t) c[v]) {
                fuzz_fail("base64 decoding does not re-encode to its input");
            }
            j++;
        }
    }
    free(out);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    clef_arena          a;
    clef_error          err;
    clef_media_input   *in;
    clef_buf            b = { 0 };
    clef_json          *images;
    clef_media_limits   lim;
    int                 rc, object = size > 0 && (data[0] & 1);

    check_decode(data, size);

    /* as a data URL string, or as an object's base64 (first bit) */
    clef_buf_printf(&b, object ? "[{\"content_type\":\"image/png\",\"base64\":"
                               : "[");
    clef_render_string(&b, (const char *) data, size);
    clef_buf_printf(&b, object ? "}]" : "]");
    clef_arena_init(&a, 4096);
    images = clef_json_parse(&a, b.data, b.len, &err);
    if (images != NULL) {
        clef_media_limits_default(CLEF_MEDIA_IMAGE, &lim);
        rc = clef_image_inputs_read(&a, images, &lim, &in, &err);
        if (rc != 0) {
            if (err.status < 400 || err.type[0] == '\0' || err.message[0] == '\0'
                || strncmp(err.loc, "[\"body\",\"images\",0", 18) != 0)
            {
                fuzz_fail("incomplete refusal: %d %s %s", err.status, err.type,
                          err.loc);
            }
        } else if (in == NULL || in[0].format == CLEF_IMAGE_NONE
                   || in[0].width <= 0 || in[0].height <= 0
                   || (int64_t) in[0].width * in[0].height > lim.max_pixels)
        {
            fuzz_fail("accepted an image outside the limits");
        }
    }
    clef_arena_free(&a);
    clef_buf_free(&b);
    return 0;
}
