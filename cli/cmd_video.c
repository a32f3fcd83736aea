/*
 * clef video [--omni] [--dump DIR] [--bench SECONDS] FILE...
 *
 * What the engine makes of video files (engine/media/video_process.h):
 * each is decoded, sampled and resized as a request's video, and described
 * in one JSON line:
 *   {"file", "codec", "frames" (the scan's), "fps" (C99 hex float, exact),
 *    "duration", "width", "height" (upright), "rotation", "audio",
 *    "indices", "grid": [t, h, w], "times": ["<0.2 seconds>", ...],
 *    "tokens"}
 * or {"file", "error": {status, type, message}}.
 * --dump DIR: also writes DIR/NAME.decoded (the sampled frames as decoded,
 * rgb24, upright, one after the other) and DIR/NAME.resized (the resized
 * frames), for t/reference/compare_video.py.
 * --bench S: decodes + samples + resizes each file for about S seconds and
 * prints {"file", "video_seconds", "seconds"} (seconds per run);
 * t/bench/video.sh compares it with the reference processor.
 * --omni: Clef Omni's sampling and processor (video_sample.h's timed
 * sampling); "decoded" is then each frame kept, as scaled before the
 * processor, and "kept" and "n_frames" (with the pair padding) say how
 * many.
 * --sandboxed: with --bench, each run as the engine runs it, in a child of
 * the decode process (media/decoder.h: build/clef-decoder beside this
 * program, its sandbox, the frames sent back and rechecked), to price the
 * isolation.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "commands.h"
#include "media_file.h"
#include "media/decoder.h"
#include "media/video_process.h"

typedef struct {
    FILE    *f;
    size_t   frame;
} dump_ctx;


static void
usage(FILE *f)
{
    fprintf(f, "usage: clef video [--omni] [--dump DIR] [--bench SECONDS "
            "[--sandboxed]] FILE...\n");
}


static void
print_video(const char *path, const clef_video *v)
{
    char     text[64];
    int32_t  i;

    fputs("{\"file\": ", stdout);
    clef_cli_print_string(path);
    printf(", \"codec\": \"%s\", \"frames\": %lld, \"fps\": \"%a\", "
           "\"duration\": %.17g, \"width\": %d, \"height\": %d, "
           "\"rotation\": %d, \"audio\": %s, \"indices\": [",
           v->info.codec, (long long) v->info.n_frames, v->info.fps,
           v->info.duration, (int) v->info.width, (int) v->info.height,
           v->info.rotation, v->info.has_audio ? "true" : "false");
    for (i = 0; v->indices != NULL && i < v->n_frames; i++) {
        printf("%s%lld", i ? ", " : "", (long long) v->indices[i]);
    }
    printf("], \"grid\": [%d, %d, %d], \"times\": [", (int) v->grid_t,
           (int) v->grid_h, (int) v->grid_w);
    for (i = 0; v->times != NULL && i < v->grid_t; i++) {
        clef_video_time_text(v->times[i], text, sizeof(text));
        printf("%s\"%s\"", i ? ", " : "", text);
    }
    printf("], \"kept\": %d, \"n_frames\": %d, \"tokens\": %lld}\n",
           (int) v->info.kept, (int) v->n_frames,
           (long long) clef_video_tokens(v));
}


static int
dump_frame(void *ctx, int32_t k, const uint8_t *rgb, clef_error *err)
{
    dump_ctx  *c = ctx;

    if (fwrite(rgb, 1, c->frame, c->f) != c->frame) {
        return clef_error_fail(err, CLEF_E_INTERNAL, "write failed");
    }
    return 0;
}


/* the decoded sampled frames and the resized ones, to DIR/NAME.* */
static int
dump(const char *dir, const char *path, const uint8_t *data, size_t len,
    const clef_video_limits *lim, const clef_video_config *vc,
    const clef_video *v, clef_error *err)
{
    clef_video_decoder     *d;
    const clef_video_info  *info;
    const char             *base = strrchr(path, '/');
    char                    out[4096];
    dump_ctx                c;
    int32_t                 tw, th;
    int                     rc;

    base = base ? base + 1 : path;
    snprintf(out, sizeof(out), "%s/%s.decoded", dir, base);
    if ((vc->sampling == CLEF_VIDEO_TIMED
         ? clef_video_open_timed(data, len, 0, lim, vc, &d, err)
         : clef_video_open(data, len, 0, lim, &d, err)) != 0)
    {
        return -1;
    }
    info = clef_video_decoder_info(d);
    c.frame = (size_t) info->width * (size_t) info->height * 3;
    if (vc->sampling == CLEF_VIDEO_TIMED) {
        clef_video_timed_size(info->width, info->height, vc, &tw, &th);
        c.frame = (size_t) tw * (size_t) th * 3;
    }
    c.f = fopen(out, "wb");
    if (c.f == NULL) {
        clef_video_close(d);
        return clef_error_fail(err, CLEF_E_INTERNAL, "cannot write %s", out);
    }
    rc = vc->sampling == CLEF_VIDEO_TIMED
         ? clef_video_decode_timed(d, dump_frame, &c, err)
         : clef_video_decode_frames(d, v->indices, v->n_frames, dump_frame,
                                    &c, err);
    clef_video_close(d);
    fclose(c.f);
    if (rc != 0) {
        return -1;
    }
    snprintf(out, sizeof(out), "%s/%s.resized", dir, base);
    c.f = fopen(out, "wb");
    if (c.f == NULL) {
        return clef_error_fail(err, CLEF_E_INTERNAL, "cannot write %s", out);
    }
    c.frame = (size_t) v->n_frames * (size_t) v->grid_h * v->patch
              * (size_t) v->grid_w * v->patch * 3;
    rc = fwrite(v->rgb, 1, c.frame, c.f) == c.frame ? 0 : -1;
    fclose(c.f);
    return rc == 0 ? 0 : clef_error_fail(err, CLEF_E_INTERNAL, "write");
}


/* One run of --bench in this process: v is replaced by the new load. */
static int
bench_load(const uint8_t *data, size_t len, const clef_video_limits *lim,
    const clef_video_config *vc, clef_video *v, clef_error *err)
{
    clef_video_free(v);
    return clef_video_load(data, len, 0, lim, vc, v, err);
}


/* One run of --bench --sandboxed: as the engine decodes a request's
 * video, in a child of the decode process. */
static int
bench_sandboxed(const uint8_t *data, size_t len, const clef_video_limits *lim,
    const clef_video_config *vc, clef_error *err)
{
    clef_media_item  it;
    int              rc;

    memset(&it, 0, sizeof(it));
    rc = clef_decoder_video(data, len, 0, lim, vc, NULL, NULL, &it, err);
    clef_media_item_free(&it);
    return rc;
}


int
clef_cmd_video(int argc, char **argv)
{
    static const struct option  opts[] = {
        { "dump", required_argument, NULL, 'd' },
        { "bench", required_argument, NULL, 'b' },
        { "sandboxed", no_argument, NULL, 's' },
        { "omni", no_argument, NULL, 'o' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 }
    };
    clef_video_limits  lim;
    clef_video_config  vc;
    clef_video         v;
    clef_error         err;
    const char        *dir = NULL;
    uint8_t           *data;
    size_t             len = 0;
    double             bench = 0, t0, t = 0;
    long               runs;
    int                c, i, status = 0, sandboxed = 0, omni = 0;

    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'd':
            dir = optarg;
            break;
        case 'b':
            bench = atof(optarg);
            break;
        case 's':
            sandboxed = 1;
            break;
        case 'o':
            omni = 1;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind >= argc) {
        usage(stderr);
        return 2;
    }
    clef_video_limits_default(&lim);
    clef_video_config_default(&vc);
    if (omni) {
        clef_video_config_omni(&vc, CLEF_OMNI_POSITIONS_PER_SECOND);
    }

    for (i = optind; i < argc; i++) {
        data = clef_cli_slurp(argv[i], &len);
        if (data == NULL) {
            fprintf(stderr, "clef video: cannot read %s\n", argv[i]);
            return 1;
        }
        if (clef_video_load(data, len, 0, &lim, &vc, &v, &err) != 0) {
            clef_cli_print_error(argv[i], &err);
            free(data);
            continue;
        }
        if (bench > 0) {
            runs = 0;
            t0 = clef_clock_seconds();
            do {
                if (sandboxed ? bench_sandboxed(data, len, &lim, &vc, &err)
                              : bench_load(data, len, &lim, &vc, &v, &err))
                {
                    break;
                }
                runs++;
                t = clef_clock_seconds() - t0;
            } while (t < bench);
            fputs("{\"file\": ", stdout);
            clef_cli_print_string(argv[i]);
            printf(", \"video_seconds\": %.6f, \"seconds\": %.6f}\n",
                   v.info.duration, t / (double) runs);
        } else {
            print_video(argv[i], &v);
        }
        if (dir != NULL
            && dump(dir, argv[i], data, len, &lim, &vc, &v, &err) != 0)
        {
            clef_cli_print_error(argv[i], &err);
            status = 1;
        }
        clef_video_free(&v);
        free(data);
        fflush(stdout);
    }
    return status;
}
