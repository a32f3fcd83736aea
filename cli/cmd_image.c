/*
 * clef image [--model DIR] [--bench SECONDS] FILE...
 *
 * What the engine makes of image files: each is read as a request's image
 * (format from its bytes, header, limits), decoded and preprocessed as the
 * engine's preparing thread does, and described in one JSON line:
 *   {"file", "format", "width", "height" (as stored, before EXIF
 *    orientation), "grid": [1, h, w],
 *    "tokens", "digest" (FNV-1a) of the resized RGB bytes}
 * or {"file", "error": {status, type, message}}.
 * --bench S: repeats decode + preprocess over all files for about S seconds
 * and prints {"images_per_s"}; with --model DIR, also runs the model's
 * vision tower (CPU backend, -t threads) over each file's image and prints
 * {"patches_per_s"}.  t/bench/images.sh compares both with the reference.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "commands.h"
#include "cpu/model/vision.h"
#include "cpu/parallel/pool.h"
#include "media/image_input.h"
#include "media/prepare.h"
#include "model/model.h"
#include "text/render.h"

typedef struct {
    char               *path;
    uint8_t            *bytes;
    size_t              len;
    clef_media_input    in;
} image_file;


static void
usage(FILE *f)
{
    fprintf(f, "usage: clef image [--model DIR] [--bench SECONDS] [-t N] FILE...\n");
}


static int
load(image_file *f, clef_error *err)
{
    FILE        *fp = fopen(f->path, "rb");
    long         n;
    const char  *why;

    if (fp == NULL) {
        return clef_error_set(err, 400, "io", "", "cannot open %s", f->path);
    }
    fseek(fp, 0, SEEK_END);
    n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    f->bytes = malloc((size_t) n + 1);
    f->len = (size_t) n;
    if (f->bytes == NULL || fread(f->bytes, 1, f->len, fp) != f->len) {
        fclose(fp);
        return clef_error_set(err, 400, "io", "", "cannot read %s", f->path);
    }
    fclose(fp);
    f->in.kind = CLEF_MEDIA_IMAGE;
    f->in.frames = 1;
    f->in.data = f->bytes;
    f->in.len = f->len;
    f->in.format = clef_image_sniff(f->bytes, f->len);
    if (clef_image_probe(f->in.format, f->bytes, f->len, &f->in.width,
                         &f->in.height, &why) != 0)
    {
        return clef_error_set(err, 400, "image_invalid", "", "%s", why);
    }
    return 0;
}


/* The engine's own preparation of an image (media/prepare.h): decoding,
 * EXIF, smart_resize, the resize and the normalisation constants. */
static int
prepare(const image_file *f, const clef_media_conf *mc, clef_media_item *im,
    clef_error *err)
{
    return clef_media_prep_of(CLEF_MEDIA_IMAGE)->prepare(&f->in, 0, mc, NULL,
                                                         im, err);
}


/* FNV-1a of the resized bytes: enough to tell two runs apart */
static uint64_t
digest(const clef_media_item *im)
{
    uint64_t  h = 1469598103934665603ULL;
    size_t    i, n = (size_t) im->grid_h * im->grid_w * im->patch * im->patch * 3;

    for (i = 0; i < n; i++) {
        h = (h ^ im->bytes[i]) * 1099511628211ULL;
    }
    return h;
}


int
clef_cmd_image(int argc, char **argv)
{
    static const struct option  opts[] = {
        { "model", required_argument, NULL, 'm' },
        { "bench", required_argument, NULL, 'b' },
        { "threads", required_argument, NULL, 't' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 }
    };
    const char             *model_dir = NULL;
    double                  seconds = 0, t0, dt;
    clef_media_conf         mc;
    clef_model             *m = NULL;
    clef_cpu_pool          *pool = NULL;
    clef_cpu_vision        *v = NULL;
    image_file             *files;
    clef_media_item         im;
    clef_error              err;
    clef_buf                out = { NULL, 0, 0 };
    int64_t                 done, patches;
    float                  *feat;
    const clef_media_item  *one[1];
    int                     c, i, n, threads = 0, rc = 0;

    optind = 1;
    while ((c = getopt_long(argc, argv, "t:", opts, NULL)) != -1) {
        switch (c) {
        case 'm': model_dir = optarg; break;
        case 'b': seconds = atof(optarg); break;
        case 't': threads = atoi(optarg); break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    n = argc - optind;
    if (n < 1) {
        usage(stderr);
        return 2;
    }
    clef_media_conf_default(&mc);
    if (model_dir != NULL) {
        m = clef_model_open(model_dir, 0, &err);
        if (m == NULL || clef_model_vision_config(m) == NULL) {
            fprintf(stderr, "clef image: %s: %s\n", model_dir,
                    m == NULL ? err.message : "no vision tower");
            clef_model_close(m);
            return 1;
        }
        CLEF_MC_IMAGE(&mc) = clef_model_vision_config(m)->processor;
        pool = clef_cpu_pool_create(threads, &err);
        if (pool == NULL || clef_cpu_vision_open(m, pool, &v, &err) != 0) {
            fprintf(stderr, "clef image: %s\n", err.message);
            clef_cpu_pool_destroy(pool);
            clef_model_close(m);
            return 1;
        }
    }

    files = calloc((size_t) n, sizeof(*files));
    for (i = 0; i < n; i++) {
        files[i].path = argv[optind + i];
        out.len = 0;
        clef_buf_printf(&out, "{\"file\":");
        clef_render_string(&out, files[i].path, strlen(files[i].path));
        if (load(&files[i], &err) == 0 && prepare(&files[i], &mc, &im, &err) == 0) {
            clef_buf_printf(&out, ",\"format\":\"%s\",\"width\":%d,\"height\":%d,"
                            "\"grid\":[%d,%d,%d],\"tokens\":%lld,\"digest\":\"%016llx\"}",
                            clef_image_format_name(files[i].in.format),
                            (int) files[i].in.width, (int) files[i].in.height,
                            im.grid_t, im.grid_h, im.grid_w,
                            (long long) im.tokens,
                            (unsigned long long) digest(&im));
            clef_media_item_free(&im);
        } else {
            files[i].in.format = CLEF_IMAGE_NONE;
            clef_buf_printf(&out, ",\"error\":{\"status\":%d,\"type\":", err.status);
            clef_render_string(&out, err.type, strlen(err.type));
            clef_buf_printf(&out, ",\"message\":");
            clef_render_string(&out, err.message, strlen(err.message));
            clef_buf_printf(&out, "}}");
            rc = 1;
        }
        puts(out.data);
    }

    if (seconds > 0) {
        done = 0;
        t0 = clef_clock_seconds();
        do {
            for (i = 0; i < n; i++) {
                if (files[i].in.format != CLEF_IMAGE_NONE
                    && prepare(&files[i], &mc, &im, &err) == 0)
                {
                    clef_media_item_free(&im);
                    done++;
                }
            }
            dt = clef_clock_seconds() - t0;
        } while (dt < seconds);
        printf("{\"images\":%lld,\"seconds\":%.3f,\"images_per_s\":%.3f}\n",
               (long long) done, dt, done / dt);

        if (v != NULL) {
            patches = 0;
            t0 = clef_clock_seconds();
            do {
                for (i = 0; i < n; i++) {
                    if (files[i].in.format == CLEF_IMAGE_NONE
                        || prepare(&files[i], &mc, &im, &err) != 0)
                    {
                        continue;
                    }
                    feat = malloc(sizeof(float) * (size_t) im.tokens
                                  * (size_t) clef_model_text_config(m)->hidden_size);
                    one[0] = &im;
                    dt = clef_clock_seconds();
                    if (feat != NULL
                        && clef_cpu_vision_forward(v, one, 1, feat, &err) == 0)
                    {
                        patches += (int64_t) im.grid_h * im.grid_w;
                    }
                    free(feat);
                    clef_media_item_free(&im);
                }
                dt = clef_clock_seconds() - t0;
            } while (dt < seconds);
            printf("{\"patches\":%lld,\"seconds\":%.3f,\"patches_per_s\":%.1f}\n",
                   (long long) patches, dt, patches / dt);
        }
    }

    for (i = 0; i < n; i++) {
        free(files[i].bytes);
    }
    free(files);
    clef_buf_free(&out);
    clef_cpu_vision_close(v);
    clef_cpu_pool_destroy(pool);
    clef_model_close(m);
    return rc;
}
