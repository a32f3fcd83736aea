/*
 * Clef Omni's videos (no sound heard) end to end against its reference
 * (t/fixtures/vision/omni_videos.jsonl, written by t/reference/
 * gen_omni_video_fixtures.py from Cloudflare's Omni joint_schema_model.py
 * on transformers 5.10.2 and PyAV, fp32), on the checkpoint
 * t/fixtures/models/omni1.json that `clef mkmodel` writes again here, each
 * request as the engine takes it (data URLs read by the worker's code,
 * videos decoded by build/clef-decoder):
 *
 *   - the frames: each frame the timed sampling keeps, as scaled before
 *     the processor, byte-identical to the reference's load_video (the
 *     odd count's repeated last included), and each resized frame
 *     byte-identical to its pixel_values_videos;
 *   - the encoder: input ids, question and option spans, one pad span per
 *     video (no time texts), the grids;
 *   - probabilities within 1e-5 of the reference, its argmax;
 *   - every record packed into one batch with text-only records: the very
 *     logits of each record alone;
 *   - the refusal of media_kwargs beside videos (a record whose every
 *     video has an audio track is heard: test_omni_avideo.c).
 *
 * Under the sanitizers: four requests of at most 700 tokens.
 */
#include <jansson.h>
#include <unistd.h>

#include "backend/backend.h"
#include "check.h"
#include "media/video_decode.h"
#include "model/model.h"
#include "model/model_media.h"
#include "protocol/encode_media.h"
#include "protocol/request.h"
#include "shell.h"
#include "vision_cases.h"
#include "e2e_cases.h"

#define MAX_CASES  32
#define TOLERANCE  1e-5

#if defined(__SANITIZE_ADDRESS__)
#define RUN_CASES   4
#define RUN_TOKENS  700
#else
#define RUN_CASES   MAX_CASES
#define RUN_TOKENS  (1 << 30)
#endif

static char  tmp[] = "/tmp/clef_omni_video_XXXXXX";

typedef struct {
    json_t  *want;
    size_t   frame;
    int      same;
    uint8_t *last;
    int32_t  kept;
} frames_ctx;


/* t/reference/gen_video_fixtures.py's weighted byte sum */
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
hash_is(json_t *want, size_t k, uint64_t got)
{
    char  hex[24];

    snprintf(hex, sizeof(hex), "%016llx", (unsigned long long) got);
    return k < json_array_size(want)
           && strcmp(json_string_value(json_array_get(want, k)), hex) == 0;
}


static int
check_frame(void *ctx, int32_t k, const uint8_t *rgb, clef_error *err)
{
    frames_ctx  *c = ctx;

    c->same &= hash_is(c->want, (size_t) k, wsum(rgb, c->frame));
    memcpy(c->last, rgb, c->frame);
    c->kept = k + 1;
    return 0;
}


/* Each video of a case decoded here as the decode process does: its kept
 * frames' sums, and the repeated last of an odd count. */
static int
frames_equal(json_t *c, const clef_video_config *vc)
{
    json_t              *names = json_object_get(json_object_get(c, "body"),
                                                 "videos");
    json_t              *want = json_object_get(c, "frames");
    clef_video_limits    lim;
    clef_video_decoder  *d;
    clef_error           err;
    frames_ctx           fc;
    const char          *name;
    char                 path[1024], *data;
    size_t               i, len;
    int32_t              w, h;
    int                  ok = json_array_size(names) == json_array_size(want);

    clef_video_limits_default(&lim);
    for (i = 0; ok && i < json_array_size(names); i++) {
        name = strchr(json_string_value(json_array_get(names, i)), ':') + 1;
        snprintf(path, sizeof(path), "%s/video/clips/%s", check_fixtures(),
                 name);
        data = slurp(path, &len);
        ok = data != NULL
             && clef_video_open_timed((uint8_t *) data, len, 0, &lim, vc, &d,
                                      &err) == 0;
        if (!ok) {
            free(data);
            break;
        }
        clef_video_timed_size(clef_video_decoder_info(d)->width,
                              clef_video_decoder_info(d)->height, vc, &w, &h);
        memset(&fc, 0, sizeof(fc));
        fc.want = json_array_get(want, i);
        fc.frame = (size_t) w * (size_t) h * 3;
        fc.same = 1;
        fc.last = malloc(fc.frame);
        ok = fc.last != NULL && clef_video_decode_timed(d, check_frame, &fc,
                                                        &err) == 0;
        if (ok && fc.kept % 2) {
            fc.same &= hash_is(fc.want, (size_t) fc.kept,
                               wsum(fc.last, fc.frame));
            fc.kept++;
        }
        ok = ok && fc.same
             && (size_t) fc.kept == json_array_size(fc.want);
        free(fc.last);
        clef_video_close(d);
        free(data);
    }
    return ok;
}


/* The grids are the reference's (images first, then videos), each item
 * (a whole video too) one span of its pads right after a
 * <|vision_start|>, and each video's resized frames are the reference's
 * pixel_values_videos. */
static int
media_equal(json_t *c, const clef_record *rec, int32_t start_id)
{
    json_t                 *ig = json_object_get(c, "image_grid_thw");
    json_t                 *vg = json_object_get(c, "video_grid_thw");
    json_t                 *rs = json_object_get(c, "resized"), *g;
    const clef_media_item  *it;
    size_t                  frame;
    int                     k, f, ok, n_img = (int) json_array_size(ig);

    ok = rec->n_media == n_img + (int) json_array_size(vg)
         && rec->n_spans == rec->n_media;
    for (k = 0; ok && k < rec->n_media; k++) {
        it = &rec->media[k];
        g = k < n_img ? json_array_get(ig, (size_t) k)
                      : json_array_get(vg, (size_t) (k - n_img));
        ok = json_integer_value(json_array_get(g, 0)) == it->grid_t
             && json_integer_value(json_array_get(g, 1)) == it->grid_h
             && json_integer_value(json_array_get(g, 2)) == it->grid_w
             && it->kind == (k < n_img ? CLEF_MEDIA_IMAGE : CLEF_MEDIA_VIDEO)
             && rec->spans[k].item == k && rec->spans[k].row == 0
             && rec->spans[k].len == it->tokens
             && rec->ids.v[rec->spans[k].start - 1] == start_id;
        if (!ok || k < n_img) {
            continue;
        }
        g = json_array_get(rs, (size_t) (k - n_img));
        frame = (size_t) it->grid_h * it->patch * (size_t) it->grid_w
                * it->patch * 3;
        ok = (int) json_array_size(g) == it->frames;
        for (f = 0; ok && f < it->frames; f++) {
            ok = hash_is(g, (size_t) f, wsum(it->bytes + f * frame, frame));
        }
    }
    return ok;
}


/* A body encoded as the engine does; the refusal in err. */
static int
encode_err(const clef_model *m, json_t *c, clef_record *rec, clef_error *err)
{
    char  *body = body_of(c);
    int    rc;

    rc = e2e_encode(m, body, CLEF_MEDIA_BIT(CLEF_MEDIA_IMAGE)
                             | CLEF_MEDIA_BIT(CLEF_MEDIA_VIDEO), rec, err);
    free(body);
    return rc;
}


int
main(void)
{
    const clef_backend_ops  *ops;
    const clef_vision_config *vc;
    clef_backend            *b = NULL;
    clef_media_conf          mc;
    clef_model              *m;
    clef_error               err;
    clef_record              recs[MAX_CASES];
    json_t                  *cases, *c;
    char                     dir[1100];
    float                   *alone[MAX_CASES];
    double                   d, worst = 0, worst_ratio = 0, effect;
    int                      n = 0, i, ok, argmax = 0, refusals = 0;

    if (e2e_start(tmp, 1) != 0) {
        return 0;
    }
    e2e_mkmodel(tmp, "omni1", "tokenizer/qwen3-omni", 21, dir, sizeof(dir));

    cases = e2e_cases("vision/omni_videos.jsonl");
    CHECK(json_array_size(cases) >= 12, "%zu Clef Omni requests with videos",
          json_array_size(cases));

    if (e2e_open(dir, "omni1", &m, &ops, &b) != 0) {
        return check_done();
    }
    vc = clef_model_vision_config(m);
    clef_model_media_conf(m, &mc);
    CHECK(CLEF_MC_VIDEO(&mc).sampling == CLEF_VIDEO_TIMED
          && CLEF_MC_VIDEO(&mc).position_step == 13
          && mc.videos_with_sound == CLEF_VIDEO_SOUND_HEARD
          && (mc.accepts & CLEF_MEDIA_BIT(CLEF_MEDIA_VIDEO)),
          "Clef Omni takes videos: timed sampling, pairs 13 positions "
          "apart, videos with sound heard");

    json_array_foreach(cases, i, c) {
        const char  *name = json_string_value(json_object_get(c, "name"));
        const char  *refusal = json_string_value(json_object_get(c, "error"));
        clef_record *rec = &recs[n];
        float        lg[256];

        if (refusal != NULL) {
            clef_record  r;

            ok = encode_err(m, c, &r, &err) != 0;
            if (!ok) {
                clef_record_free(&r);
            }
            CHECK(ok && err.status == 400 && strcmp(err.type, refusal) == 0
                  && strstr(err.loc, strcmp(refusal, "media_kwargs_"
                                            "unsupported") == 0
                                     ? "media_kwargs" : "videos") != NULL,
                  "%s: 400 %s naming the field (%s)", name, refusal,
                  err.message);
            refusals++;
            continue;
        }
        if (n >= RUN_CASES
            || json_array_size(json_object_get(c, "input_ids")) > RUN_TOKENS)
        {
            continue;
        }
        CHECK(frames_equal(c, &CLEF_MC_VIDEO(&mc)),
              "%s: every frame kept, scaled, "
              "byte-identical to the reference's load_video", name);
        if (encode_err(m, c, rec, &err) != 0) {
            CHECK(0, "%s: encoded (%s)", name, err.message);
            continue;
        }
        CHECK(e2e_ids_equal(json_object_get(c, "input_ids"), rec),
              "%s: %zu input ids identical", name, rec->ids.n);
        CHECK(e2e_spans_equal(json_object_get(c, "questions"), rec),
              "%s: question and option spans identical", name);
        CHECK(media_equal(c, rec, vc->vision_start_token_id),
              "%s: grids identical, one pad span a video, resized frames "
              "byte-identical to pixel_values_videos", name);

        effect = json_number_value(json_object_get(c, "step_effect"));
        ok = forward(ops, b, (const clef_record *const []) { rec }, 1, lg) == 0;
        d = ok ? e2e_compare(c, "probabilities", rec, lg, &argmax) : 1;
        worst = d > worst ? d : worst;
        worst_ratio = effect > 0 && d / effect > worst_ratio ? d / effect
                                                             : worst_ratio;
        CHECK(ok && d <= TOLERANCE && argmax, "%s: probabilities within "
              "%g of the reference (max %.3g; one uint8 step of every "
              "frame moves them %.3g), its argmax", name, TOLERANCE, d,
              effect);
        alone[n] = malloc(sizeof(float) * (size_t) rec->n_options);
        memcpy(alone[n], lg, sizeof(float) * (size_t) rec->n_options);
        n++;
    }
    CHECK(refusals >= 1, "%d refusals checked", refusals);

    /* one packed batch: the records with videos between two without */
    CHECK(e2e_packed(m, ops, b, "no video here", recs, n, alone),
          "%d Clef Omni records with videos (and images) packed "
          "between two without: every logit bit-identical to the "
          "record alone", n);

    printf("# omni video e2e: %d requests, max |p - reference| %.3g, at most "
           "%.3g of the one-step effect\n", n, worst, worst_ratio);
    return e2e_done(tmp, m, ops, b, cases, recs, alone, n);
}
