/*
 * What decoding images in the decode process costs (t/bench/image-sandbox.sh
 * runs it): for records of 1 and of 4 images, the same files decoded in
 * this process (clef_image_decode_exif, as the engine did before) and
 * through the decode process (clef_decoder_images_run: one child, one
 * round trip a record, as the engine does now), rounds alternating, the
 * best round of each kept; per image, in ms, and the difference.
 *
 *     image-sandbox ROUNDS SECONDS FILE...
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "media/decoder.h"
#include "media/image_decode.h"
#include "media/image_input.h"


static int
load(const char *path, clef_media_input *in)
{
    FILE     *f = fopen(path, "rb");
    uint8_t  *p;
    long      n;

    if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) <= 0
        || fseek(f, 0, SEEK_SET) != 0)
    {
        return -1;
    }
    p = malloc((size_t) n);
    if (p == NULL || fread(p, 1, (size_t) n, f) != (size_t) n) {
        return -1;
    }
    fclose(f);
    memset(in, 0, sizeof(*in));
    in->kind = CLEF_MEDIA_IMAGE;
    in->format = clef_image_sniff(p, (size_t) n);
    in->data = p;
    in->len = (size_t) n;
    return in->format == CLEF_IMAGE_NONE ? -1 : 0;
}


/* Records of n images from files, for about seconds: ms per image. */
static double
in_process(const clef_media_input *files, int n_files, int n, double seconds)
{
    clef_rgb_image  rgb;
    clef_error      err;
    double          t0 = clef_clock_seconds();
    long            images = 0;
    int             k;

    do {
        for (k = 0; k < n; k++) {
            if (clef_image_decode_exif(&files[(images + k) % n_files], k,
                                       CLEF_IMAGE_MAX_PIXELS, 1, &rgb, &err)
                != 0)
            {
                fprintf(stderr, "decode: %s\n", err.message);
                exit(1);
            }
            clef_rgb_image_free(&rgb);
        }
        images += n;
    } while (clef_clock_seconds() - t0 < seconds);
    return (clef_clock_seconds() - t0) * 1000 / (double) images;
}


static double
sandboxed(const clef_media_input *files, int n_files, int n, double seconds)
{
    clef_media_input  rec[CLEF_IMAGE_MAX_ITEMS];
    clef_rgb_image    rgb[CLEF_IMAGE_MAX_ITEMS];
    clef_error        err;
    double            t0 = clef_clock_seconds();
    long              images = 0;
    int               k, got;

    do {
        for (k = 0; k < n; k++) {
            rec[k] = files[(images + k) % n_files];
        }
        if (clef_decoder_images_run(NULL, rec, n, 0, CLEF_IMAGE_MAX_PIXELS,
                                    1, rgb, &got, &err) != 0)
        {
            fprintf(stderr, "decode process: %s\n", err.message);
            exit(1);
        }
        for (k = 0; k < got; k++) {
            clef_rgb_image_free(&rgb[k]);
        }
        images += n;
    } while (clef_clock_seconds() - t0 < seconds);
    return (clef_clock_seconds() - t0) * 1000 / (double) images;
}


int
main(int argc, char **argv)
{
    clef_media_input  files[64];
    double            a, b, best_a, best_b, seconds;
    int               rounds, n_files = 0, r, n;

    if (argc < 4) {
        fprintf(stderr, "usage: image-sandbox ROUNDS SECONDS FILE...\n");
        return 2;
    }
    rounds = atoi(argv[1]);
    seconds = atof(argv[2]);
    for (r = 3; r < argc && n_files < 64; r++) {
        if (load(argv[r], &files[n_files]) != 0) {
            fprintf(stderr, "%s: not an image\n", argv[r]);
            return 1;
        }
        n_files++;
    }
    /* the decode process started before the clock runs, as the engine's
     * stays up */
    sandboxed(files, n_files, 1, 0);
    for (n = 1; n <= CLEF_IMAGE_MAX_ITEMS; n += CLEF_IMAGE_MAX_ITEMS - 1) {
        best_a = best_b = 1e30;
        for (r = 0; r < rounds; r++) {
            a = in_process(files, n_files, n, seconds);
            b = sandboxed(files, n_files, n, seconds);
            best_a = a < best_a ? a : best_a;
            best_b = b < best_b ? b : best_b;
        }
        printf("records of %d image%s: in the engine %.3f ms an image, "
               "through the decode process %.3f ms: +%.3f ms an image "
               "(x%.2f)\n", n, n > 1 ? "s" : "", best_a, best_b,
               best_b - best_a, best_b / best_a);
    }
    clef_decoder_stop();
    return 0;
}
