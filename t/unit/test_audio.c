/*
 * Audio clips, from a file's bytes to the audio tower's input, against
 * Clef Omni's reference on the clips of t/fixtures/audio
 * (t/reference/gen_audio_fixtures.py: PyAV's decode and AudioResampler,
 * transformers 5.10.2's WhisperFeatureExtractor as Qwen3OmniMoeProcessor
 * calls it):
 *
 *   samples   every clip (and the sound of two videos, as the reference
 *             decodes a video's track) decodes to the reference's count
 *             of 16 kHz samples; WAV, FLAC and MP3 bit for bit (the same
 *             resampling graph on the same decoders), AAC, Opus and Vorbis
 *             within
 *             SAMPLE_TOL (PyAV carries FFmpeg 8.1, this build the
 *             system's 5.1: their float decoders round differently)
 *   features  every record of 1 to 4 clips padded together: each clip's
 *             valid frames and tokens exactly, its values within
 *             FEATURE_TOL (the reference's own float32 STFT is ~1e-4 from
 *             a float64 one near the max - 8 floor; ours computes in
 *             double), its row sums likewise per frame
 *   tokens    clef_audio_output_tokens() against transformers for frames
 *             1..3000
 *   refusals  no audio stream, truncated, not audio, too long (limits
 *             lowered), too short a record, in the process and through
 *             the sandboxed decode process; the request side (wire form,
 *             family, WAV and FLAC headers, the least ids); the engine's
 *             prepare and finish steps as the contract says
 *
 * The largest differences met are printed as diagnostics.
 */
#include "check.h"
#include "jsonl.h"
#include "shell.h"
#include "slurp.h"

#include <jansson.h>

#include "base/arena.h"
#include "media/audio_decode.h"
#include "media/audio_features.h"
#include "media/audio_input.h"
#include "media/decoder.h"
#include "media/kinds.h"
#include "media/prepare.h"
#include "model/model.h"
#include "model/model_media.h"
#include "protocol/encode.h"
#include "protocol/encode_media.h"
#include "protocol/plan.h"
#include "protocol/request.h"
#include "text/json.h"

#define DIR          "t/fixtures/audio/"
#define SAMPLE_TOL   5e-7
#define FEATURE_TOL  1e-4
#define MAX_CLIPS    32

typedef struct {
    char      name[64];
    char      file[64];
    char      type[32];
    float    *samples;
    int64_t   n;
} clip;

static clip  clips[MAX_CLIPS];
static int   n_clips;


static clip *
clip_named(const char *name)
{
    int  i;

    for (i = 0; i < n_clips; i++) {
        if (strcmp(clips[i].name, name) == 0) {
            return &clips[i];
        }
    }
    return NULL;
}


/* The generator's weighted sum of the samples' bit patterns: equal sums,
 * equal samples (any one changed bit changes it). */
static uint64_t
wsum(const float *x, int64_t n)
{
    uint64_t  s = 0;
    uint32_t  u;
    int64_t   i;

    for (i = 0; i < n; i++) {
        memcpy(&u, &x[i], sizeof(u));
        s += (uint64_t) u * (((uint64_t) i * 0x9E3779B97F4A7C15ull) | 1);
    }
    return s;
}


static uint8_t *
read_clip(const char *file, size_t *len)
{
    char  path[256];

    snprintf(path, sizeof(path), DIR "clips/%s", file);
    return (uint8_t *) slurp(path, len);
}


/* Each clip decoded in this process against the reference's samples. */
static void
test_samples(void)
{
    json_t             *lines = read_jsonl(DIR "samples.jsonl"), *c, *at;
    clef_audio_limits   lim;
    clef_audio_info     info;
    clef_error          err;
    const char         *file, *ext;
    uint8_t            *data;
    size_t              i, j, len;
    double              d, worst = 0;
    float               want;
    int64_t             k;
    int                 exact, lossless;

    clef_audio_limits_default(&lim);
    CHECK(json_array_size(lines) >= 21, "%zu clips and video tracks in "
          "samples.jsonl",
          json_array_size(lines));
    json_array_foreach(lines, i, c) {
        clip  *cl = &clips[n_clips];

        if (n_clips == MAX_CLIPS) {
            break;
        }
        file = json_string_value(json_object_get(c, "file"));
        snprintf(cl->name, sizeof(cl->name), "%s",
                 json_string_value(json_object_get(c, "name")));
        snprintf(cl->file, sizeof(cl->file), "%s", file);
        snprintf(cl->type, sizeof(cl->type), "%s",
                 json_string_value(json_object_get(c, "type")));
        data = read_clip(file, &len);
        if (data == NULL
            || clef_audio_decode(data, len, 0, &lim, &cl->samples, &cl->n,
                                 &info, &err) != 0)
        {
            CHECK(0, "%s decodes (%s)", file, data ? err.message : "no file");
            free(data);
            continue;
        }
        /* the same bytes as the engine decodes them: a child of the
         * sandboxed decode process, its answer rechecked */
        {
            float    *sb = NULL;
            int64_t   sn = 0;
            int       src = clef_decoder_audio(data, len, 0, &lim, NULL, NULL,
                                               &sb, &sn, &err);

            CHECK(src == 0 && sn == cl->n
                  && memcmp(sb, cl->samples, sizeof(float) * (size_t) sn)
                     == 0,
                  "%s through the sandboxed decode process: the same "
                  "samples (%s)", file, src == 0 ? "ok" : err.message);
            free(sb);
        }
        free(data);
        n_clips++;
        CHECK_INT(cl->n, json_integer_value(json_object_get(c, "n")),
                  "%s: the reference's sample count", file);
        if (cl->n != json_integer_value(json_object_get(c, "n"))) {
            continue;
        }
        at = json_object_get(c, "at");
        exact = 1;
        d = 0;
        json_array_foreach(at, j, c) {
            k = json_integer_value(json_array_get(c, 0));
            want = (float) strtod(json_string_value(json_array_get(c, 1)),
                                  NULL);
            exact &= cl->samples[k] == want;
            d = fabs((double) cl->samples[k] - want) > d
                ? fabs((double) cl->samples[k] - want) : d;
        }
        c = json_array_get(lines, i);
        exact &= wsum(cl->samples, cl->n)
                 == strtoull(json_string_value(json_object_get(c, "wsum")),
                             NULL, 16);
        ext = strrchr(file, '.');
        lossless = strcmp(ext, ".wav") == 0 || strcmp(ext, ".flac") == 0
                   || strcmp(ext, ".mp3") == 0;
        worst = d > worst ? d : worst;
        if (lossless) {
            CHECK(exact, "%s (%s, %s, %d ch at %d Hz): bit-identical to the "
                  "reference (every sample: the weighted sum of their bits)",
                  file, info.container, info.codec, (int) info.channels,
                  (int) info.rate);
        } else {
            CHECK(d <= SAMPLE_TOL, "%s (%s, %d ch at %d Hz): within %g of "
                  "the reference (max %.3g)", file, info.codec,
                  (int) info.channels, (int) info.rate, SAMPLE_TOL, d);
        }
    }
    printf("# samples: largest difference %.3g (AAC, Opus, Vorbis; WAV, "
           "FLAC and MP3 bit-identical)\n", worst);
    json_decref(lines);
}


/* One record's features against the reference's. */
static double
check_record(json_t *rec, int *ok_out)
{
    json_t             *names = json_object_get(rec, "names");
    json_t             *want, *cols, *col, *v;
    clef_audio_config   ac;
    clef_error          err;
    const float        *s[4];
    int64_t             n[4];
    float              *out[4];
    int32_t             frames[4];
    const char         *key;
    double              d, worst = 0, rs;
    size_t              k, j, m;
    int32_t             t, f;
    int                 count = (int) json_array_size(names), ok = 1;

    clef_audio_config_default(&ac);
    for (k = 0; k < (size_t) count; k++) {
        clip  *cl = clip_named(json_string_value(json_array_get(names, k)));

        if (cl == NULL || count > 4) {
            *ok_out = 0;
            return 0;
        }
        s[k] = cl->samples;
        n[k] = cl->n;
    }
    if (clef_audio_record_features(&ac, s, n, count, out, frames, &err)
        != 0)
    {
        *ok_out = 0;
        return 0;
    }
    for (k = 0; k < (size_t) count; k++) {
        want = json_array_get(json_object_get(rec, "clips"), k);
        f = (int32_t) json_integer_value(json_object_get(want, "frames"));
        ok &= frames[k] == f
              && clef_audio_output_tokens(frames[k])
                 == json_integer_value(json_object_get(want, "tokens"));
        if (frames[k] != f) {
            continue;
        }
        /* row sums: each value within the tolerance */
        json_array_foreach(json_object_get(want, "row_sum"), m, v) {
            for (t = 0, rs = 0; t < f; t++) {
                rs += out[k][m * (size_t) f + (size_t) t];
            }
            d = fabs(rs - strtod(json_string_value(v), NULL)) / f;
            ok &= d <= FEATURE_TOL;
        }
        cols = json_object_get(want, "cols");
        json_object_foreach(cols, key, col) {
            t = (int32_t) atoi(key);
            json_array_foreach(col, m, v) {
                d = fabs(out[k][m * (size_t) f + (size_t) t]
                         - json_real_value(v));
                worst = d > worst ? d : worst;
            }
        }
        json_array_foreach(json_object_get(want, "at"), j, v) {
            m = (size_t) json_integer_value(json_array_get(v, 0));
            t = (int32_t) json_integer_value(json_array_get(v, 1));
            d = fabs(out[k][m * (size_t) f + (size_t) t]
                     - json_number_value(json_array_get(v, 2)));
            worst = d > worst ? d : worst;
        }
    }
    for (k = 0; k < (size_t) count; k++) {
        free(out[k]);
    }
    *ok_out = ok && worst <= FEATURE_TOL;
    return worst;
}


static void
test_features(void)
{
    json_t  *lines = read_jsonl(DIR "features.jsonl"), *rec, *names;
    double   d, worst = 0;
    size_t   i, k;
    char     label[256];
    int      ok, w;

    CHECK(json_array_size(lines) >= 30, "%zu records in features.jsonl",
          json_array_size(lines));
    json_array_foreach(lines, i, rec) {
        names = json_object_get(rec, "names");
        for (k = 0, w = 0; k < json_array_size(names) && w < 200; k++) {
            w += snprintf(label + w, sizeof(label) - (size_t) w, "%s%s",
                          k ? " + " : "",
                          json_string_value(json_array_get(names, k)));
        }
        d = check_record(rec, &ok);
        worst = d > worst ? d : worst;
        CHECK(ok, "features of [%s]: frames, tokens, values within %g (max "
              "%.3g)", label, FEATURE_TOL, d);
    }
    printf("# features: largest difference %.3g\n", worst);
    json_decref(lines);
}


/* The padding couples a record's clips: a clip's last frames beside a
 * longer clip are not those it has alone, its first ones are. */
static void
test_coupling(void)
{
    clip               *a = clip_named("short16k"), *b = clip_named("tone16k");
    clef_audio_config   ac;
    clef_error          err;
    const float        *s[2];
    int64_t             n[2];
    float              *out[2], *alone;
    int32_t             frames[2], fa;
    int                 rc;

    if (a == NULL || b == NULL) {
        CHECK(0, "the coupling's clips decoded");
        return;
    }
    clef_audio_config_default(&ac);
    s[0] = a->samples;
    s[1] = b->samples;
    n[0] = a->n;
    n[1] = b->n;
    rc = clef_audio_record_features(&ac, s, n, 2, out, frames, &err);
    CHECK(rc == 0 && clef_audio_clip_features(&ac, a->samples, a->n, a->n,
                                              &alone, &fa, &err) == 0
          && fa == frames[0] && fa == 10,
          "a 0.1 s clip: 10 frames alone and beside a 1 s one");
    if (rc == 0) {
        CHECK(alone[0] == out[0][0] && alone[9] != out[0][9],
              "its first frame the same, its last not (zeros, not its own "
              "reflection, after its end)");
        free(out[0]);
        free(out[1]);
        free(alone);
    }
}


static void
test_tokens(void)
{
    json_t             *lines = read_jsonl(DIR "lengths.jsonl"), *tok, *v;
    clef_audio_config   ac;
    size_t              i;
    int                 same = 1, bad = -1;

    tok = json_object_get(json_array_get(lines, 0), "tokens");
    CHECK_INT(json_array_size(tok), 3000, "3000 lengths from transformers");
    json_array_foreach(tok, i, v) {
        if (clef_audio_output_tokens((int64_t) i + 1)
            != json_integer_value(v))
        {
            same = 0;
            bad = bad < 0 ? (int) i + 1 : bad;
        }
    }
    CHECK(same, "clef_audio_output_tokens(1..3000) is transformers' "
          "_get_feat_extract_output_lengths (first difference: %d)", bad);
    CHECK(clef_audio_output_tokens(0) == 0
          && clef_audio_output_tokens(100) == 13
          && clef_audio_output_tokens(101) == 14
          && clef_audio_output_tokens(60000) == 7800,
          "0 frames 0, 100 frames 13, 101 frames 14, 10 minutes 7800");
    json_decref(lines);

    clef_audio_config_default(&ac);
    CHECK(clef_audio_valid_frames(&ac, 1600, 1600) == 10
          && clef_audio_valid_frames(&ac, 1601, 1601) == 10
          && clef_audio_valid_frames(&ac, 1601, 16000) == 11
          && clef_audio_valid_frames(&ac, 1, 16000) == 1
          && clef_audio_min_samples(&ac) == 201,
          "valid frames: the mask's ceil(n / 160), at most padded / 160; "
          "201 samples the least");
}


static void
refused(const char *what, int rc, const clef_error *err, int status,
    const char *type, const char *loc)
{
    CHECK(rc == -1 && err->status == status && strcmp(err->type, type) == 0
          && strcmp(err->loc, loc) == 0 && err->message[0] != '\0',
          "%s: %d %s at %s (%s)", what, status, type, loc, err->message);
}


static void
test_refusals(void)
{
    json_t             *lines = read_jsonl(DIR "refused.jsonl"), *c;
    clef_audio_limits   lim;
    clef_audio_config   ac;
    clef_error          err;
    const float        *s[1];
    float              *samples, *out[1], quiet[200];
    int64_t             n, len1[1];
    int32_t             frames[1];
    uint8_t            *data;
    size_t              i, len;
    char                what[128], type[64];
    int                 rc, sandboxed;

    clef_audio_limits_default(&lim);
    CHECK(lim.max_seconds == 600.0, "the limit: 10 minutes a clip");
    for (sandboxed = 0; sandboxed < 2; sandboxed++) {
        json_array_foreach(lines, i, c) {
            data = read_clip(json_string_value(json_object_get(c, "file")),
                             &len);
            snprintf(type, sizeof(type), "audio_%s",
                     json_string_value(json_object_get(c, "refusal")));
            rc = data == NULL ? 0
                 : sandboxed ? clef_decoder_audio(data, len, 2, &lim, NULL,
                                                  NULL, &samples, &n, &err)
                 : clef_audio_decode(data, len, 2, &lim, &samples, &n, NULL,
                                     &err);
            snprintf(what, sizeof(what), "%s%s (the reference: %s)",
                     json_string_value(json_object_get(c, "file")),
                     sandboxed ? ", sandboxed" : "",
                     json_string_value(json_object_get(c, "reference")));
            refused(what, rc, &err, 400, type, "[\"body\",\"audio\",2]");
            free(data);
        }
    }
    json_decref(lines);

    data = read_clip("tone16k.wav", &len);
    lim.max_seconds = 0.5;
    rc = clef_audio_decode(data, len, 1, &lim, &samples, &n, NULL, &err);
    refused("1 s with a 0.5 s limit", rc, &err, 400, "audio_too_long",
            "[\"body\",\"audio\",1]");
    rc = clef_decoder_audio(data, len, 1, &lim, NULL, NULL, &samples, &n,
                            &err);
    refused("1 s with a 0.5 s limit, sandboxed", rc, &err, 400,
            "audio_too_long", "[\"body\",\"audio\",1]");
    clef_audio_limits_default(&lim);
    rc = clef_decoder_audio(data, len, 0, &lim, NULL, NULL, &samples, &n,
                            &err);
    CHECK(rc == 0 && n == clip_named("tone16k")->n
          && memcmp(samples, clip_named("tone16k")->samples,
                    sizeof(float) * (size_t) n) == 0,
          "through the decode process: the same samples, bit for bit");
    free(samples);
    free(data);

    /* a float WAV holding an infinity: refused, never NaN features */
    {
        uint8_t   wav[44 + 4 * 1000];
        uint32_t  v;
        float     x;
        int       k;

        memcpy(wav, "RIFF", 4);
        v = 36 + 4000;
        memcpy(wav + 4, &v, 4);
        memcpy(wav + 8, "WAVEfmt ", 8);
        v = 16;
        memcpy(wav + 16, &v, 4);
        memcpy(wav + 20, "\x03\x00\x01\x00\x80\x3e\x00\x00\x00\xfa\x00\x00"
               "\x04\x00\x20\x00", 16);
        memcpy(wav + 36, "data", 4);
        v = 4000;
        memcpy(wav + 40, &v, 4);
        for (k = 0; k < 1000; k++) {
            x = k == 700 ? INFINITY : 0.25f;
            memcpy(wav + 44 + 4 * k, &x, 4);
        }
        rc = clef_audio_decode(wav, sizeof(wav), 3, &lim, &samples, &n, NULL,
                               &err);
        refused("a float WAV with an infinite sample", rc, &err, 400,
                "audio_invalid", "[\"body\",\"audio\",3]");
        x = 0.25f;
        memcpy(wav + 44 + 4 * 700, &x, 4);
        rc = clef_audio_decode(wav, sizeof(wav), 3, &lim, &samples, &n, NULL,
                               &err);
        CHECK(rc == 0 && n == 1000 && samples[999] == 0.25f,
              "the same WAV without it: 1000 samples of 0.25");
        if (rc == 0) {
            free(samples);
        }
    }

    clef_audio_config_default(&ac);
    memset(quiet, 0, sizeof(quiet));
    s[0] = quiet;
    len1[0] = 200;
    rc = clef_audio_record_features(&ac, s, len1, 1, out, frames, &err);
    refused("a record whose longest clip has 200 samples", rc, &err, 400,
            "audio_too_short", "[\"body\",\"audio\",0]");
}


/* The request's side: wire form, family, the header's length. */
static void
test_inputs(void)
{
    clef_media_limits   lim;
    clef_media_input   *in;
    clef_media_conf     mc;
    clef_audio_header   h;
    clef_arena          a;
    clef_error          err;
    clef_json          *arr;
    json_t             *lines = read_jsonl(DIR "samples.jsonl"), *c;
    uint8_t            *data, flac[64];
    char               *b64, *body;
    size_t              i, len, n;
    int64_t             ids, tokens;
    int                 rc, bound = 1;

    clef_media_conf_default(&mc);
    clef_media_limits_default(CLEF_MEDIA_AUDIO, &lim);
    json_array_foreach(lines, i, c) {
        const char  *file = json_string_value(json_object_get(c, "file"));
        clip        *cl = clip_named(json_string_value(json_object_get(c,
                                                                "name")));

        if (strncmp(cl != NULL ? cl->type : "", "video/", 6) == 0) {
            continue;           /* a video's sound track */
        }
        data = read_clip(file, &len);
        if (data == NULL || cl == NULL) {
            free(data);
            continue;
        }
        b64 = malloc(len * 2 + 8);
        body = malloc(len * 2 + 128);
        n = 0;
        {
            static const char  t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklm"
                                     "nopqrstuvwxyz0123456789+/";
            size_t             k;
            uint32_t           v;

            for (k = 0; k + 2 < len; k += 3) {
                v = (uint32_t) data[k] << 16 | data[k + 1] << 8 | data[k + 2];
                b64[n++] = t[v >> 18];
                b64[n++] = t[(v >> 12) & 63];
                b64[n++] = t[(v >> 6) & 63];
                b64[n++] = t[v & 63];
            }
            if (k < len) {
                v = (uint32_t) data[k] << 16
                    | (k + 1 < len ? data[k + 1] << 8 : 0);
                b64[n++] = t[v >> 18];
                b64[n++] = t[(v >> 12) & 63];
                b64[n++] = k + 1 < len ? t[(v >> 6) & 63] : '=';
                b64[n++] = '=';
            }
            b64[n] = '\0';
        }
        snprintf(body, len * 2 + 128, "[{\"content_type\":\"%s\","
                 "\"base64\":\"%s\"}]", cl->type, b64);
        clef_arena_init(&a, 0);
        arr = clef_json_parse(&a, body, strlen(body), &err);
        rc = arr != NULL ? clef_audio_inputs_read(&a, arr, &lim, &in, &err)
                         : -1;
        CHECK(rc == 0 && in[0].kind == CLEF_MEDIA_AUDIO && in[0].len == len,
              "%s read as %s (%s)", file, cl->type, rc ? err.message : "ok");
        if (rc == 0) {
            /* the least ids from the header never exceed the clip's */
            ids = clef_media_kind_of(CLEF_MEDIA_AUDIO)->header_ids(&in[0],
                                                                   &mc);
            tokens = clef_audio_output_tokens(clef_audio_valid_frames(
                         &CLEF_MC_AUDIO(&mc), cl->n, cl->n)) + 2;
            bound &= ids >= 3 && ids <= tokens;
            if (strstr(file, ".wav") != NULL && cl->n >= 16000) {
                CHECK(ids >= tokens - 1, "%s: its WAV header gives %lld of "
                      "its %lld ids", file, (long long) ids,
                      (long long) tokens);
            }
        }
        clef_arena_free(&a);
        free(b64);
        free(body);
        free(data);
    }
    CHECK(bound, "every clip's least ids from its header: at most its ids");
    json_decref(lines);

    /* a FLAC header that states an hour: refused before any decoding */
    memset(flac, 0, sizeof(flac));
    memcpy(flac, "fLaC", 4);
    flac[4] = 0x80;                  /* last block, STREAMINFO */
    flac[7] = 34;
    /* 16000 Hz, 1 channel, 16 bits, 57,600,000 samples */
    flac[8 + 10] = 0x03;
    flac[8 + 11] = 0xe8;
    flac[8 + 12] = 0x00 | (0 << 1) | 0;
    flac[8 + 13] = 0xf0;
    flac[8 + 14] = 0x03;
    flac[8 + 15] = 0x6e;
    flac[8 + 16] = 0xe8;
    flac[8 + 17] = 0x00;
    clef_audio_probe(CLEF_AUDIO_FLAC, flac, sizeof(flac), &h);
    CHECK(h.rate == 16000 && h.channels == 1 && h.frames == 57600000,
          "FLAC STREAMINFO: rate, channels, total samples");
    clef_arena_init(&a, 0);
    body = "[\"data:audio/flac;base64,ZkxhQ4AAACIAAAAAAAAAAAAAA+gA8ANu6AAAAAAA"
           "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA==\"]";
    arr = clef_json_parse(&a, body, strlen(body), &err);
    rc = arr != NULL ? clef_audio_inputs_read(&a, arr, &lim, &in, &err) : -1;
    refused("a FLAC header stating an hour", rc, &err, 400, "audio_too_long",
            "[\"body\",\"audio\",0]");
    body = "[\"data:audio/ogg;base64,AAAAAAAA\"]";
    arr = clef_json_parse(&a, body, strlen(body), &err);
    rc = arr != NULL ? clef_audio_inputs_read(&a, arr, &lim, &in, &err) : -1;
    refused("zeros declared Ogg", rc, &err, 400, "audio_invalid",
            "[\"body\",\"audio\",0]");
    body = "[\"data:audio/x-aiff;base64,AAAAAAAA\"]";
    arr = clef_json_parse(&a, body, strlen(body), &err);
    rc = arr != NULL ? clef_audio_inputs_read(&a, arr, &lim, &in, &err) : -1;
    refused("audio/x-aiff", rc, &err, 400, "audio_type_unsupported",
            "[\"body\",\"audio\",0]");
    clef_arena_free(&a);

    CHECK(clef_audio_sniff((const uint8_t *) "\xff\xf1\x50\x80", 4)
          == CLEF_AUDIO_AAC
          && clef_audio_sniff((const uint8_t *) "\xff\xfb\x90\x64", 4)
             == CLEF_AUDIO_MP3
          && clef_audio_sniff((const uint8_t *) "\x1a\x45\xdf\xa3", 4)
             == CLEF_AUDIO_WEBM
          && clef_audio_sniff((const uint8_t *) "\xff\xf9", 1)
             == CLEF_AUDIO_NONE,
          "sniffing: ADTS, MPEG audio, WebM, too short");
}


/* The engine's steps: prepare (the decode process) each clip, then finish
 * the record; the items as the tower's contract says. */
static void
test_prepare(void)
{
    const clef_media_prep  *prep = clef_media_prep_of(CLEF_MEDIA_AUDIO);
    json_t                 *lines = read_jsonl(DIR "features.jsonl");
    json_t                 *rec = NULL, *want;
    clef_media_input        in[4];
    clef_media_item         it[4];
    clef_media_conf         mc;
    clef_error              err;
    uint8_t                *data[4];
    size_t                  i, len;
    int                     k, n = 0, rc = 0, ok = 1;

    clef_media_conf_default(&mc);
    /* the record of four clips: speech22k, tone48k_51, speech44k_st,
     * long12s */
    for (i = 0; i < json_array_size(lines); i++) {
        rec = json_array_get(lines, i);
        if (json_array_size(json_object_get(rec, "names")) == 4) {
            break;
        }
        rec = NULL;
    }
    memset(in, 0, sizeof(in));
    memset(it, 0, sizeof(it));
    for (k = 0; k < 4 && rec != NULL; k++) {
        clip  *cl = clip_named(json_string_value(json_array_get(
                        json_object_get(rec, "names"), (size_t) k)));

        data[k] = cl != NULL ? read_clip(cl->file, &len) : NULL;
        in[k].kind = CLEF_MEDIA_AUDIO;
        in[k].format = 1;
        in[k].data = data[k];
        in[k].len = len;
        if (data[k] == NULL
            || prep->prepare(&in[k], k, &mc, NULL, &it[k], &err) != 0)
        {
            rc = -1;
            break;
        }
        ok &= it[k].samples == cl->n;
        n++;
    }
    CHECK(rc == 0 && ok, "prepare: four clips decoded by the decode process "
          "(%s)", rc ? err.message : "samples as in this process");
    rc = rc == 0 ? prep->finish(it, n, &mc, &err) : -1;
    for (k = 0; k < n && rc == 0; k++) {
        want = json_array_get(json_object_get(rec, "clips"), (size_t) k);
        ok &= it[k].kind == CLEF_MEDIA_AUDIO && it[k].grid_t == 1
              && it[k].grid_h == 128
              && it[k].grid_w == json_integer_value(json_object_get(want,
                                                                "frames"))
              && it[k].tokens == json_integer_value(json_object_get(want,
                                                                "tokens"))
              && it[k].samples == 0 && it[k].bytes == NULL
              && it[k].timestamps == NULL && it[k].values != NULL
              && fabs(it[k].values[0] - json_real_value(json_array_get(
                      json_object_get(json_object_get(want, "cols"), "0"),
                      0))) <= FEATURE_TOL;
    }
    CHECK(rc == 0 && ok, "finish: the record's features, [128][frames] "
          "each, grid 1 x 128 x frames, the tower's tokens, no bytes, no "
          "times (%s)", rc ? err.message : "as the reference");
    for (k = 0; k < 4; k++) {
        clef_media_item_free(&it[k]);
        free(k < n || rc ? data[k] : NULL);
    }
    json_decref(lines);

    /* a model with an audio tower takes audio only on a backend with an
     * audio encoder: cpu and cuda have one, a name the registry does not
     * know has none */
    clef_media_conf_default(&mc);
    mc.accepts = CLEF_MEDIA_BIT(CLEF_MEDIA_IMAGE)
                 | CLEF_MEDIA_BIT(CLEF_MEDIA_AUDIO);
    clef_media_conf_backend(&mc, "cpu");
    CHECK(mc.accepts == (CLEF_MEDIA_BIT(CLEF_MEDIA_IMAGE)
                         | CLEF_MEDIA_BIT(CLEF_MEDIA_AUDIO)),
          "the cpu backend: images and audio kept (its audio tower)");
    clef_media_conf_backend(&mc, "tpu");
    CHECK(mc.accepts == 0, "a backend the registry does not know: nothing");
    mc.accepts = CLEF_MEDIA_BIT(CLEF_MEDIA_AUDIO);
    clef_media_conf_backend(&mc, "nope");
    CHECK(mc.accepts == 0, "an unknown backend: nothing");
}


/* A request with audio through the worker's checks and the engine's
 * preparation (protocol/encode_media.h), as a model taking audio would:
 * the record's items are its clips' features, padded together. */
static void
test_request(void)
{
    static const char   b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqr"
                                "stuvwxyz0123456789+/";
    const char         *files[2] = { "short16k.wav", "tone16k.wav" };
    clef_media_conf     mc;
    clef_encode_opts    o;
    clef_request        req;
    clef_error          err;
    clef_plan           plan;
    clef_buf            body = { NULL, 0, 0 }, blob = { NULL, 0, 0 };
    uint8_t            *data;
    uint32_t            v;
    size_t              len, i;
    int                 k, rc;

    clef_buf_printf(&body, "{\"model\":\"m\",\"state\":\"s\",\"questions\":"
                    "{\"q\":{\"type\":\"noul\"}},\"audio\":[");
    for (k = 0; k < 2; k++) {
        data = read_clip(files[k], &len);
        clef_buf_printf(&body, "%s\"data:audio/wav;base64,", k ? "," : "");
        for (i = 0; data != NULL && i < len; i += 3) {
            v = (uint32_t) data[i] << 16
                | (i + 1 < len ? (uint32_t) data[i + 1] << 8 : 0)
                | (i + 2 < len ? data[i + 2] : 0);
            clef_buf_printf(&body, "%c%c%c%c", b64[v >> 18],
                            b64[(v >> 12) & 63],
                            i + 1 < len ? b64[(v >> 6) & 63] : '=',
                            i + 2 < len ? b64[v & 63] : '=');
        }
        clef_buf_printf(&body, "\"");
        free(data);
    }
    clef_buf_printf(&body, "]}");

    clef_media_conf_default(&mc);
    mc.accepts = CLEF_MEDIA_BIT(CLEF_MEDIA_AUDIO);
    clef_encode_opts_default(&o);
    rc = clef_request_parse(&req, body.data, body.len, NULL, &err);
    rc = rc == 0 ? clef_request_check_media(&req, mc.accepts, &err) : rc;
    rc = rc == 0 ? clef_plan_build(&req, &blob, &err) : rc;
    rc = rc == 0 ? clef_plan_view(&plan, blob.data, blob.len, &err) : rc;
    CHECK(rc == 0 && plan.n_media == 2
          && plan.media[1].duration_us == 1000000,
          "two WAV clips read by the worker, their lengths from their "
          "headers (%s)", rc ? err.message : "ok");
    if (rc == 0) {
        CHECK(clef_plan_media_ids(&plan, &mc) == 2 + 2 + 13 + 2,
              "the least ids from the headers: 0.1 s less the margin, 9 "
              "frames, 2 tokens; 1 s, 99 frames, 13 tokens; and each "
              "clip's start and end");
        rc = clef_encode_media_prepare(&mc, &plan, &o, &err);
        if (clef_media_prep_of(CLEF_MEDIA_AUDIO)->expand == NULL) {
            /* no placement yet (the audio tower's work): refused before
             * anything is decoded */
            CHECK(rc == -1 && err.status == 400
                  && strcmp(err.type, "audio_unsupported") == 0
                  && o.media == NULL,
                  "the engine without the audio kind's placement: 400 "
                  "audio_unsupported, nothing decoded (%s)", err.message);
        } else {
            CHECK(rc == 0 && o.n_media == 2 && o.media[0].grid_w == 10
                  && o.media[0].tokens == 2 && o.media[1].grid_w == 100
                  && o.media[1].tokens == 13 && o.media[0].samples == 0,
                  "the engine's preparation: 10 and 100 frames of "
                  "features, 2 and 13 tokens (%s)",
                  rc ? err.message : "ok");
        }
        if (rc == 0) {
            clef_encode_media_release(&o);
        }
        clef_plan_free(&plan);
    }
    if (req.root != NULL || rc == 0) {
        clef_request_free(&req);
    }
    clef_buf_free(&body);
    clef_buf_free(&blob);
}


/* `clef audio` (the CLI the bench and compare_audio.py use): two files as
 * one record, one line each. */
static void
test_cli(void)
{
    FILE  *f = popen("build/clef audio " DIR "clips/short16k.wav "
                     DIR "clips/video_only.m4a " DIR "clips/tone16k.wav "
                     "2>&1", "r");
    char   line[1024];
    int    n = 0, ok = 1;

    while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
        n++;
        ok &= n == 1 ? strstr(line, "\"samples\": 1600,") != NULL
                       && strstr(line, "\"frames\": 10, \"tokens\": 2,")
                          != NULL
              : n == 2 ? strstr(line, "\"type\": \"audio_no_stream\"") != NULL
              : strstr(line, "\"frames\": 100, \"tokens\": 13,") != NULL
                && strstr(line, "\"codec\": \"pcm_s16le\"") != NULL;
    }
    CHECK(f != NULL && pclose(f) == 0 && n == 3 && ok,
          "clef audio: a clip, a refusal, a clip (%d lines)", n);
}


/* Clef Omni's tiny checkpoint: what it takes of audio, from its config
 * and its preprocessor_config.json, and what of that a backend keeps. */
static void
test_model(void)
{
    clef_media_conf   mc;
    clef_model       *m;
    clef_error        err;
    char              dir[] = "/tmp/clef-test-audio-XXXXXX", path[64];
    int               rc;

    if (mkdtemp(dir) == NULL) {
        CHECK(0, "a scratch directory");
        return;
    }
    snprintf(path, sizeof(path), "%s/m", dir);
    rc = sh("build/clef mkmodel --config t/fixtures/models/omni1.json "
            "--tokenizer t/fixtures/tokenizer/qwen3-omni --seed 21 --out "
            "'%s/m' > /dev/null", dir);
    CHECK_INT(rc, 0, "mkmodel omni1.json (run from the repository root)");
    m = rc == 0 ? clef_model_open(path, CLEF_MODEL_HEADERS_ONLY, &err) : NULL;
    CHECK(m != NULL, "the checkpoint opens (%s)", m ? "ok" : err.message);
    if (m != NULL) {
        clef_model_media_conf(m, &mc);
        CHECK((mc.accepts & CLEF_MEDIA_BIT(CLEF_MEDIA_AUDIO))
              && mc.kind[CLEF_MEDIA_AUDIO].tokens.start == 151669
              && mc.kind[CLEF_MEDIA_AUDIO].tokens.pad == 151675
              && mc.kind[CLEF_MEDIA_AUDIO].tokens.end == 151670
              && CLEF_MC_AUDIO(&mc).sampling_rate == 16000
              && CLEF_MC_AUDIO(&mc).n_fft == 400
              && CLEF_MC_AUDIO(&mc).hop_length == 160
              && CLEF_MC_AUDIO(&mc).n_mels == 128,
              "Clef Omni with its audio tower: audio, its three tokens, the "
              "feature extractor's settings from preprocessor_config.json");
        clef_media_conf_backend(&mc, "cpu");
        CHECK((mc.accepts & CLEF_MEDIA_BIT(CLEF_MEDIA_AUDIO))
              && (mc.accepts & CLEF_MEDIA_BIT(CLEF_MEDIA_IMAGE)),
              "on the cpu backend: images and audio");
        clef_model_close(m);
    }
    /* settings the engine does not compute the same way: refused by name */
    rc = sh("cd '%s/m' && sed -i 's/\"dither\": 0.0/\"dither\": 0.5/' "
            "preprocessor_config.json && grep -q '\"dither\": 0.5' "
            "preprocessor_config.json", dir);
    m = rc == 0 ? clef_model_open(path, CLEF_MODEL_HEADERS_ONLY, &err) : NULL;
    CHECK(rc == 0 && m == NULL && strstr(err.message, "dither") != NULL,
          "preprocessor_config.json with dither 0.5: refused (%s)",
          m == NULL ? err.message : "opened");
    clef_model_close(m);
    sh("rm -rf '%s'", dir);
}


int
main(void)
{
    char  path[4096];
    int   i;

    /* the decode process beside the test binaries is build/clef-decoder */
    if (getenv("CLEF_DECODER") == NULL
        && realpath("build/clef-decoder", path) != NULL)
    {
        setenv("CLEF_DECODER", path, 1);
    }
    test_tokens();
    test_samples();
    test_features();
    test_coupling();
    test_refusals();
    test_inputs();
    test_prepare();
    test_model();
    test_request();
    test_cli();
    clef_decoder_stop();
    for (i = 0; i < n_clips; i++) {
        free(clips[i].samples);
    }
    return check_done();
}
