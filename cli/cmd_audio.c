/*
 * clef audio [--alone] [--dump DIR] [--bench SECONDS] FILE...
 *
 * What the engine makes of audio files (engine/media/audio_decode.h,
 * audio_features.h): each is decoded to 16 kHz mono as a request's clip,
 * then the files' features are computed as ONE record's clips (padded
 * together, as the processor pads a request's "audio"; --alone: each file
 * a record of its own), and each file is described in one JSON line:
 *   {"file", "container", "codec", "rate", "channels", "layout",
 *    "samples" (16 kHz), "seconds", "sum" and "sumsq" of the samples
 *    (C99 hex floats, exact), "frames" (valid feature frames), "tokens"
 *    (the audio tower's positions), "min", "max", "mean" of the features}
 * or {"file", "error": {status, type, message}}.
 * --dump DIR: also writes DIR/NAME.f32 (the samples, float32 LE) and
 * DIR/NAME.mel (the features, float32 LE [n_mels][frames]).
 * --bench S: decodes once, then computes the record's features for about
 * S seconds and prints {"audio_seconds", "seconds"} (seconds per run of
 * the features step, all files together); t/bench/audio-features.sh
 * compares it with the reference's feature extractor.
 * --sandboxed: decodes as the engine does, in a child of the decode
 * process (media/decoder.h).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "commands.h"
#include "media_file.h"
#include "media/audio_decode.h"
#include "media/audio_features.h"
#include "media/decoder.h"

typedef struct {
    const char       *path;
    float            *samples;
    int64_t           n;
    clef_audio_info   info;
    float            *mel;
    int32_t           frames;
    clef_error        err;
    int               failed;
} clip;


static void
usage(FILE *f)
{
    fprintf(f, "usage: clef audio [--alone] [--dump DIR] [--bench SECONDS] "
            "[--sandboxed] FILE...\n");
}


static void
print_clip(const clip *c, const clef_audio_config *ac)
{
    double   sum = 0, sumsq = 0, lo = 0, hi = 0, mean = 0;
    int64_t  i, m = (int64_t) ac->n_mels * c->frames;

    for (i = 0; i < c->n; i++) {
        sum += c->samples[i];
        sumsq += (double) c->samples[i] * c->samples[i];
    }
    for (i = 0; i < m; i++) {
        lo = i == 0 || c->mel[i] < lo ? c->mel[i] : lo;
        hi = i == 0 || c->mel[i] > hi ? c->mel[i] : hi;
        mean += c->mel[i];
    }
    fputs("{\"file\": ", stdout);
    clef_cli_print_string(c->path);
    printf(", \"container\": \"%s\", \"codec\": \"%s\", \"rate\": %d, "
           "\"channels\": %d, \"layout\": ", c->info.container,
           c->info.codec, (int) c->info.rate, (int) c->info.channels);
    clef_cli_print_string(c->info.layout);
    printf(", \"samples\": %lld, \"seconds\": %.6f, \"sum\": \"%a\", "
           "\"sumsq\": \"%a\", \"frames\": %d, \"tokens\": %lld, "
           "\"min\": %.6f, \"max\": %.6f, \"mean\": %.6f}\n",
           (long long) c->n, (double) c->n / CLEF_AUDIO_RATE, sum, sumsq,
           (int) c->frames, (long long) clef_audio_output_tokens(c->frames),
           lo, hi, m > 0 ? mean / (double) m : 0.0);
}


static int
write_file(const char *dir, const char *path, const char *ext,
    const float *v, size_t n)
{
    const char  *base = strrchr(path, '/');
    char         out[4096];
    FILE        *f;
    int          ok;

    base = base ? base + 1 : path;
    snprintf(out, sizeof(out), "%s/%s.%s", dir, base, ext);
    f = fopen(out, "wb");
    if (f == NULL) {
        return -1;
    }
    ok = fwrite(v, sizeof(float), n, f) == n;
    return fclose(f) == 0 && ok ? 0 : -1;
}


static int
decode(clip *c, const uint8_t *data, size_t len, int index,
    const clef_audio_limits *lim, int sandboxed)
{
    memset(&c->info, 0, sizeof(c->info));
    if (sandboxed) {
        return clef_decoder_audio(data, len, index, lim, NULL, NULL,
                                  &c->samples, &c->n, &c->err);
    }
    return clef_audio_decode(data, len, index, lim, &c->samples, &c->n,
                             &c->info, &c->err);
}


/* The features of clips[0..n) that decoded, as one record. */
static int
features(clip *clips, int n, const clef_audio_config *ac, clef_error *err)
{
    const float  **s = calloc((size_t) n + 1, sizeof(*s));
    int64_t       *len = calloc((size_t) n + 1, sizeof(*len));
    float        **out = calloc((size_t) n + 1, sizeof(*out));
    int32_t       *frames = calloc((size_t) n + 1, sizeof(*frames));
    int            k, m = 0, rc = -1;

    if (s != NULL && len != NULL && out != NULL && frames != NULL) {
        for (k = 0; k < n; k++) {
            if (!clips[k].failed) {
                s[m] = clips[k].samples;
                len[m++] = clips[k].n;
            }
        }
        rc = clef_audio_record_features(ac, s, len, m, out, frames, err);
        for (k = 0, m = 0; rc == 0 && k < n; k++) {
            if (!clips[k].failed) {
                free(clips[k].mel);
                clips[k].mel = out[m];
                clips[k].frames = frames[m++];
            }
        }
    } else {
        clef_error_fail(err, CLEF_E_NO_MEMORY, "Out of memory.");
    }
    free(s);
    free(len);
    free(out);
    free(frames);
    return rc;
}


int
clef_cmd_audio(int argc, char **argv)
{
    static const struct option  opts[] = {
        { "alone", no_argument, NULL, 'a' },
        { "dump", required_argument, NULL, 'd' },
        { "bench", required_argument, NULL, 'b' },
        { "sandboxed", no_argument, NULL, 's' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 }
    };
    clef_audio_limits  lim;
    clef_audio_config  ac;
    clef_error         err;
    const char        *dir = NULL;
    clip              *clips;
    uint8_t           *data;
    size_t             len = 0;
    double             bench = 0, t0, t = 0, secs = 0;
    long               runs = 0;
    int                c, i, n, status = 0, alone = 0, sandboxed = 0;

    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'a':
            alone = 1;
            break;
        case 'd':
            dir = optarg;
            break;
        case 'b':
            bench = atof(optarg);
            break;
        case 's':
            sandboxed = 1;
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
    clef_audio_limits_default(&lim);
    clef_audio_config_default(&ac);
    n = argc - optind;
    clips = calloc((size_t) n, sizeof(*clips));
    if (clips == NULL) {
        return 1;
    }
    for (i = 0; i < n; i++) {
        clips[i].path = argv[optind + i];
        data = clef_cli_slurp(clips[i].path, &len);
        if (data == NULL) {
            fprintf(stderr, "clef audio: cannot read %s\n", clips[i].path);
            return 1;
        }
        clips[i].failed = decode(&clips[i], data, len, i, &lim, sandboxed)
                          != 0;
        secs += (double) clips[i].n / CLEF_AUDIO_RATE;
        free(data);
    }

    clef_error_clear(&err);
    if (alone) {
        for (i = 0; i < n; i++) {
            if (!clips[i].failed && features(&clips[i], 1, &ac, &clips[i].err)
                                    != 0)
            {
                clips[i].failed = 1;
            }
        }
    } else if (features(clips, n, &ac, &err) != 0) {
        clef_cli_print_error("(record)", &err);
        status = 1;
    }
    if (bench > 0 && status == 0) {
        t0 = clef_clock_seconds();
        do {
            if (features(clips, n, &ac, &err) != 0) {
                break;
            }
            runs++;
            t = clef_clock_seconds() - t0;
        } while (t < bench);
        printf("{\"files\": %d, \"audio_seconds\": %.6f, \"seconds\": %.9f}"
               "\n", n, secs, t / (double) (runs ? runs : 1));
    }
    for (i = 0; i < n && bench <= 0; i++) {
        if (clips[i].failed) {
            clef_cli_print_error(clips[i].path, &clips[i].err);
            continue;
        }
        if (clips[i].mel == NULL) {
            continue;
        }
        print_clip(&clips[i], &ac);
        if (dir != NULL
            && (write_file(dir, clips[i].path, "f32", clips[i].samples,
                           (size_t) clips[i].n) != 0
                || write_file(dir, clips[i].path, "mel", clips[i].mel,
                              (size_t) ac.n_mels * clips[i].frames) != 0))
        {
            fprintf(stderr, "clef audio: cannot write into %s\n", dir);
            status = 1;
        }
    }
    for (i = 0; i < n; i++) {
        free(clips[i].samples);
        free(clips[i].mel);
    }
    free(clips);
    fflush(stdout);
    return status;
}
