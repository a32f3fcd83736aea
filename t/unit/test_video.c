/*
 * Videos, from a clip's bytes to the vision tower's input, against the
 * reference processor on the clips of t/fixtures/video
 * (t/reference/gen_video_fixtures.py: transformers' Qwen3VLProcessor with
 * torchcodec on the same FFmpeg).  Every accepted clip must give exactly
 * the reference's frame count, fps (to the bit), indices, grid, "<t
 * seconds>" texts and token count, every sampled frame as decoded and as
 * resized must have the reference's bytes (a 64-bit weighted sum of each
 * frame, the generator's), and sampled patch values must be equal; every
 * refused clip is refused for its reason.  Then the limits, each alone on
 * a good clip, and damaged copies (cut, bytes overwritten), which must be
 * decoded or refused cleanly.
 */
#include "check.h"
#include "slurp.h"

#include <jansson.h>

#include "media/video_process.h"

#define CLIP_DIR  "t/fixtures/video/"

typedef struct {
    int32_t    n;
    uint64_t  *sums;
    size_t     frame;
} sums_ctx;


static uint64_t
wsum(const uint8_t *p, size_t n)
{
    uint64_t  s = 0;
    size_t    i;

    for (i = 0; i < n; i++) {
        s += (uint64_t) p[i] * (((uint64_t) i * 0x9E3779B97F4A7C15ull) | 1);
    }
    return s;
}


static int
sum_frame(void *ctx, int32_t k, const uint8_t *rgb, clef_error *err)
{
    sums_ctx  *c = ctx;

    c->sums[k] = wsum(rgb, c->frame);
    return 0;
}


static int
sums_equal(const uint64_t *got, json_t *want, int32_t n, int32_t *first)
{
    int32_t  i;
    int      same = (int32_t) json_array_size(want) == n;

    *first = -1;
    for (i = 0; same && i < n; i++) {
        if (got[i] != strtoull(json_string_value(json_array_get(want,
                                                   (size_t) i)), NULL, 16))
        {
            *first = i;
            same = 0;
        }
    }
    return same;
}


static void
accepted(const char *name, const uint8_t *data, size_t len, json_t *c,
    int *frames_checked)
{
    clef_video_limits       lim;
    clef_video_config       vc;
    clef_video_decoder     *d;
    const clef_video_info  *info;
    clef_video              v;
    clef_error              err;
    sums_ctx                s;
    json_t                 *jidx = json_object_get(c, "indices"), *j;
    json_t                 *grid = json_object_get(c, "grid");
    int64_t                *idx;
    int32_t                 n = (int32_t) json_array_size(jidx), i, first;
    float                  *row;
    char                    text[64];
    size_t                  k;
    int                     same, bad;

    clef_video_limits_default(&lim);
    clef_video_config_default(&vc);
    if (clef_video_open(data, len, 0, &lim, &d, &err) != 0) {
        CHECK(0, "%s: opens (%s: %s)", name, err.type, err.message);
        return;
    }
    info = clef_video_decoder_info(d);
    CHECK(info->n_frames == json_integer_value(json_object_get(c, "frames"))
          && info->fps == strtod(json_string_value(json_object_get(c, "fps")),
                                 NULL)
          && info->width == json_integer_value(json_array_get(
                                json_object_get(c, "size"), 0))
          && info->height == json_integer_value(json_array_get(
                                json_object_get(c, "size"), 1)),
          "%s: %lld frames at %a fps, %dx%d as the reference", name,
          (long long) info->n_frames, info->fps, (int) info->width,
          (int) info->height);

    idx = malloc(sizeof(int64_t) * (size_t) n);
    s.sums = calloc((size_t) n, sizeof(uint64_t));
    s.n = n;
    s.frame = (size_t) info->width * (size_t) info->height * 3;
    for (i = 0; i < n; i++) {
        idx[i] = json_integer_value(json_array_get(jidx, (size_t) i));
    }
    if (clef_video_decode_frames(d, idx, n, sum_frame, &s, &err) != 0) {
        CHECK(0, "%s: decodes (%s: %s)", name, err.type, err.message);
    } else {
        same = sums_equal(s.sums, json_object_get(c, "decoded"), n, &first);
        CHECK(same, "%s: %d decoded frames identical to torchcodec's",
              name, n);
        if (!same) {
            printf("#   frame %d (index %lld) differs\n", first,
                   first >= 0 ? (long long) idx[first] : -1LL);
        }
        *frames_checked += n;
    }
    clef_video_close(d);

    if (clef_video_load(data, len, 0, &lim, &vc, &v, &err) != 0) {
        CHECK(0, "%s: loads (%s: %s)", name, err.type, err.message);
        free(idx);
        free(s.sums);
        return;
    }
    bad = v.n_frames != n;
    for (i = 0; !bad && i < n; i++) {
        bad = v.indices[i] != idx[i];
    }
    CHECK(!bad, "%s: indices as the reference's", name);
    CHECK(v.grid_t == json_integer_value(json_array_get(grid, 0))
          && v.grid_h == json_integer_value(json_array_get(grid, 1))
          && v.grid_w == json_integer_value(json_array_get(grid, 2))
          && clef_video_tokens(&v)
             == json_integer_value(json_object_get(c, "tokens")),
          "%s: grid [%d, %d, %d], %lld tokens as the reference's", name,
          (int) v.grid_t, (int) v.grid_h, (int) v.grid_w,
          (long long) clef_video_tokens(&v));
    j = json_object_get(c, "times");
    bad = (int32_t) json_array_size(j) != v.grid_t;
    for (i = 0; !bad && i < v.grid_t; i++) {
        clef_video_time_text(v.times[i], text, sizeof(text));
        bad = strcmp(text, json_string_value(json_array_get(j, (size_t) i)));
        if (bad) {
            printf("#   pair %d: %s, want %s\n", i, text,
                   json_string_value(json_array_get(j, (size_t) i)));
        }
    }
    CHECK(!bad, "%s: pair times as the reference's", name);

    s.frame = (size_t) v.grid_h * v.patch * (size_t) v.grid_w * v.patch * 3;
    for (i = 0; i < n; i++) {
        s.sums[i] = wsum(v.rgb + (size_t) i * s.frame, s.frame);
    }
    same = sums_equal(s.sums, json_object_get(c, "resized"), n, &first);
    CHECK(same, "%s: %d resized frames identical to the processor's", name,
          n);
    if (!same) {
        printf("#   frame %d differs\n", first);
    }

    row = malloc(sizeof(float) * (size_t) clef_video_row_size(&v));
    j = json_object_get(c, "pixels");
    bad = 0;
    for (k = 0; k < json_array_size(j); k++) {
        json_t  *p = json_array_get(j, k);

        clef_video_patch_row(&v, json_integer_value(json_array_get(p, 0)),
                             row);
        bad += row[json_integer_value(json_array_get(p, 1))]
               != (float) strtod(json_string_value(json_array_get(p, 2)),
                                 NULL);
    }
    CHECK(!bad, "%s: %zu sampled patch values equal", name,
          json_array_size(j));
    free(row);
    clef_video_free(&v);
    free(idx);
    free(s.sums);
}


static void
refused(const char *name, const uint8_t *data, size_t len, json_t *c)
{
    clef_video_limits  lim;
    clef_video_config  vc;
    clef_video         v;
    clef_error         err;
    const char        *type = json_string_value(json_object_get(
                                  json_object_get(c, "error"), "type"));

    clef_video_limits_default(&lim);
    clef_video_config_default(&vc);
    if (clef_video_load(data, len, 0, &lim, &vc, &v, &err) == 0) {
        CHECK(0, "%s: refused as %s (it was accepted)", name, type);
        clef_video_free(&v);
        return;
    }
    CHECK(err.status == 400 && strcmp(err.type, type) == 0
          && strcmp(err.loc, "[\"body\",\"videos\",0]") == 0,
          "%s: refused as %s: %s", name, type, err.message);
    if (strcmp(err.type, type) != 0) {
        printf("#   got %d %s\n", err.status, err.type);
    }
}


/* one limit lowered at a time on a good clip (160x120, 90 frames, 3 s) */
static void
limits(const uint8_t *data, size_t len)
{
    static const struct {
        const char  *what;
        const char  *type;
    } cases[] = {
        { "max_seconds 2",              "video_too_long" },
        { "max_frames 50",              "video_too_many_frames" },
        { "max_pixels 160x120 - 1",     "video_too_many_pixels" },
        { "max_decode_pixels 89 frames", "video_decode_budget" },
        { "max_decode_seconds 0",       "video_decode_budget" },
    };
    clef_video_limits  lim;
    clef_video_config  vc;
    clef_video         v, ref;
    clef_error         err;
    size_t             i;
    int                rc;

    clef_video_config_default(&vc);
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        clef_video_limits_default(&lim);
        switch (i) {
        case 0: lim.max_seconds = 2; break;
        case 1: lim.max_frames = 50; break;
        case 2: lim.max_pixels = 160 * 120 - 1; break;
        case 3: lim.max_decode_pixels = 160 * 120 * 89; break;
        default: lim.max_decode_seconds = 0; break;
        }
        rc = clef_video_load(data, len, 3, &lim, &vc, &v, &err);
        CHECK(rc != 0 && err.status == 400
              && strcmp(err.type, cases[i].type) == 0
              && strcmp(err.loc, "[\"body\",\"videos\",3]") == 0,
              "%s: %s (%s)", cases[i].what, cases[i].type,
              rc ? err.message : "accepted");
        if (rc == 0) {
            clef_video_free(&v);
        }
    }

    /* the decoder's thread count changes nothing */
    clef_video_limits_default(&lim);
    lim.threads = 1;
    rc = clef_video_load(data, len, 0, &lim, &vc, &ref, &err);
    lim.threads = 4;
    rc |= clef_video_load(data, len, 0, &lim, &vc, &v, &err);
    CHECK(rc == 0 && ref.n_frames == v.n_frames
          && memcmp(ref.rgb, v.rgb, (size_t) v.n_frames * v.grid_h * v.grid_w
                    * v.patch * v.patch * 3) == 0,
          "1 and 4 decoder threads give the same frames");
    if (rc == 0) {
        clef_video_free(&ref);
        clef_video_free(&v);
    }
}


/* cut at every 1/32 of the file and bytes overwritten at 32 places: each
 * decoded or refused with a complete error, never a crash (the sanitized
 * run checks the memory) */
static void
damaged(const char *name, const uint8_t *data, size_t len)
{
    clef_video_limits  lim;
    clef_video_config  vc;
    clef_video         v;
    clef_error         err;
    uint8_t           *copy = malloc(len);
    size_t             cut, at, i;
    int                ok = 0, refusals = 0, incomplete = 0, part;

    clef_video_limits_default(&lim);
    clef_video_config_default(&vc);
    for (part = 1; part < 64; part++) {
        memcpy(copy, data, len);
        if (part < 32) {
            cut = len * (size_t) part / 32;
        } else {
            cut = len;
            at = len * (size_t) (part - 32) / 32;
            for (i = at; i < at + 64 && i < len; i++) {
                copy[i] ^= (uint8_t) (0x5a + i);
            }
        }
        if (clef_video_load(copy, cut, 0, &lim, &vc, &v, &err) == 0) {
            ok++;
            clef_video_free(&v);
        } else {
            refusals++;
            incomplete += err.status != 400 || err.message[0] == '\0'
                          || strcmp(err.loc, "[\"body\",\"videos\",0]") != 0;
        }
    }
    CHECK_INT(incomplete, 0, "%s damaged 63 ways: %d decoded, %d refused, "
              "every refusal a 400 naming the video", name, ok, refusals);
    free(copy);
}


int
main(void)
{
    json_error_t  jerr;
    json_t       *c;
    FILE         *f = fopen(CLIP_DIR "cases.jsonl", "r");
    char          line[1 << 17], path[512];
    uint8_t      *data;
    size_t        len;
    int           n_accepted = 0, n_refused = 0, frames = 0;
    const char   *name;

    CHECK(f != NULL, "cases.jsonl opens");
    if (f == NULL) {
        return check_done();
    }
    while (fgets(line, sizeof(line), f) != NULL) {
        c = json_loads(line, 0, &jerr);
        if (c == NULL) {
            CHECK(0, "cases.jsonl line parses: %s", jerr.text);
            break;
        }
        name = json_string_value(json_object_get(c, "name"));
        snprintf(path, sizeof(path), CLIP_DIR "%s",
                 json_string_value(json_object_get(c, "file")));
        data = (uint8_t *) slurp(path, &len);
        if (data == NULL) {
            CHECK(0, "%s reads", path);
        } else if (json_object_get(c, "error") != NULL) {
            refused(name, data, len, c);
            n_refused++;
        } else {
            accepted(name, data, len, c, &frames);
            n_accepted++;
        }
        if (data != NULL && strcmp(name, "h264_160x120_30fps") == 0) {
            limits(data, len);
        }
        if (data != NULL && (strcmp(name, "h264_aac") == 0
                             || strcmp(name, "vp9_opus") == 0
                             || strcmp(name, "hevc_192x108") == 0
                             || strcmp(name, "av1_150x100_webm") == 0))
        {
            damaged(name, data, len);
        }
        free(data);
        json_decref(c);
    }
    fclose(f);
    printf("# %d clips accepted (%d sampled frames compared), %d refused\n",
           n_accepted, frames, n_refused);
    CHECK(n_accepted >= 30 && n_refused >= 8, "the corpus is all there");
    return check_done();
}
