/*
 * Clef Omni's videos heard with their sound (audio in video) end to end
 * against its reference (t/fixtures/vision/omni_avideos.jsonl, written by
 * t/reference/gen_omni_avideo_fixtures.py from Cloudflare's Omni
 * joint_schema_model.py on transformers 5.10.2, fp32), on the checkpoint
 * t/fixtures/models/omni1.json that `clef mkmodel` writes again here, each
 * request as the engine takes it (data URLs, videos and their tracks and
 * the audio clips decoded by build/clef-decoder):
 *
 *   - the record: input ids identical (the video's pads and its track's
 *     interleaved by time between <|vision_start|><|audio_start|> and
 *     <|audio_end|><|vision_end|>), the M-RoPE positions identical to the
 *     reference's get_rope_index, question and option spans identical;
 *   - the items: the images, the clips, the videos, then (heard) a track
 *     per video, each pointing at the other; every span's tokens the pads
 *     of its item's kind, each item's rows covered once in order, the
 *     audio items' tokens the reference's;
 *   - a record with a silent video: no track, the videos one span each;
 *   - probabilities within 1e-5 of the reference run on the engine's
 *     decoded samples, its argmax, and within 1e-5 plus the decode effect
 *     (PyAV's FFmpeg 8.1 against the system's) of the reference as it
 *     decodes;
 *   - every record packed into one batch with text-only records: the very
 *     logits of each record alone;
 *   - a backend without an audio tower refuses a record whose videos all
 *     have sound: 400 videos_with_sound_unsupported naming "videos".
 *
 * Under the sanitizers: four requests of at most 800 tokens.
 */
#include <jansson.h>
#include <unistd.h>

#include "backend/backend.h"
#include "check.h"
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
#define RUN_TOKENS  800
#else
#define RUN_CASES   MAX_CASES
#define RUN_TOKENS  (1 << 30)
#endif

static char  tmp[] = "/tmp/clef_omni_avideo_XXXXXX";


/* A body encoded as the engine does (mc: NULL, the model's media
 * configuration); the refusal in err. */
static int
encode_err(const clef_model *m, json_t *c, const clef_media_conf *mc,
    clef_record *rec, clef_error *err)
{
    clef_request      req;
    clef_encode_opts  eo;
    clef_buf          blob = { NULL, 0, 0 };
    clef_plan         plan;
    char             *body = body_of(c);
    int               rc;

    memset(err, 0, sizeof(*err));
    memset(rec, 0, sizeof(*rec));
    clef_encode_opts_default(&eo);
    rc = clef_request_parse(&req, body, strlen(body), NULL, err);
    if (rc == 0) {
        rc = clef_request_check_media(&req, CLEF_MEDIA_BIT(CLEF_MEDIA_IMAGE)
                                      | CLEF_MEDIA_BIT(CLEF_MEDIA_VIDEO)
                                      | CLEF_MEDIA_BIT(CLEF_MEDIA_AUDIO),
                                      err);
        if (rc == 0 && mc == NULL) {
            rc = clef_encode_with_media(m, &req, &eo, rec, err);
        } else if (rc == 0) {
            rc = clef_plan_build(&req, &blob, err) != 0
                 || clef_plan_view(&plan, blob.data, blob.len, err) != 0
                 ? -1 : clef_encode_media_prepare(mc, &plan, &eo, err);
            if (rc == 0) {
                rc = clef_encode_plan(clef_model_tokenizer(m), &plan, &eo,
                                      rec, err);
                clef_encode_media_release(&eo);
            }
            clef_plan_free(&plan);
            clef_buf_free(&blob);
        }
        clef_request_free(&req);
    }
    free(body);
    return rc;
}


static int
positions_equal(json_t *pos, const clef_record *rec)
{
    size_t  a, i, n = rec->ids.n;
    int     ok = json_array_size(pos) == 3 && rec->positions != NULL;

    for (a = 0; ok && a < 3; a++) {
        ok = json_array_size(json_array_get(pos, a)) == n;
        for (i = 0; ok && i < n; i++) {
            ok = json_integer_value(json_array_get(json_array_get(pos, a), i))
                 == rec->positions[a * n + i];
        }
    }
    return ok;
}


/* The items in the order media.h states, tracks pointing at their videos,
 * the audio items' tokens the reference's; every span on pads of its
 * item's kind, each item's rows covered once, in order; *runs: the spans
 * of the videos heard and their tracks. */
static int
items_equal(json_t *c, const clef_record *rec, const clef_media_conf *mc,
    int *runs)
{
    json_t                 *body = json_object_get(c, "body");
    json_t                 *at = json_object_get(c, "audio_tokens");
    int                     n_img = (int) json_array_size(
                                json_object_get(body, "images"));
    int                     n_aud = (int) json_array_size(
                                json_object_get(body, "audio"));
    int                     n_vid = (int) json_array_size(
                                json_object_get(body, "videos"));
    int                     heard = json_is_true(json_object_get(
                                c, "use_audio_in_video"));
    int                     k, s, a = 0, ok;
    int64_t                 next[64] = { 0 }, i;
    const clef_media_item  *it;
    const clef_media_span  *sp;

    *runs = 0;
    ok = rec->n_media == n_img + n_aud + n_vid * (heard ? 2 : 1)
         && rec->n_media <= 64;
    for (k = 0; ok && k < rec->n_media; k++) {
        it = &rec->media[k];
        if (k < n_img) {
            ok = it->kind == CLEF_MEDIA_IMAGE;
        } else if (k < n_img + n_aud) {
            ok = it->kind == CLEF_MEDIA_AUDIO && it->sound_of == 0;
        } else if (k < n_img + n_aud + n_vid) {
            ok = it->kind == CLEF_MEDIA_VIDEO
                 && (heard ? it->sound == k + n_vid + 1 : it->sound == 0);
        } else {
            ok = it->kind == CLEF_MEDIA_AUDIO && it->sound_of == k - n_vid + 1;
        }
        if (ok && it->kind == CLEF_MEDIA_AUDIO) {
            ok = json_integer_value(json_array_get(at, (size_t) a++))
                 == it->tokens;
        }
    }
    ok = ok && a == (int) json_array_size(at);
    for (s = 0; ok && s < rec->n_spans; s++) {
        sp = &rec->spans[s];
        it = &rec->media[sp->item];
        ok = sp->row == next[sp->item] && sp->len > 0;
        next[sp->item] += sp->len;
        for (i = 0; ok && i < sp->len; i++) {
            ok = rec->ids.v[sp->start + i] == mc->kind[it->kind].tokens.pad;
        }
        *runs += it->sound > 0 || it->sound_of > 0;
    }
    for (k = 0; ok && k < rec->n_media; k++) {
        ok = next[k] == rec->media[k].tokens;
    }
    return ok;
}


int
main(void)
{
    const clef_backend_ops  *ops;
    clef_backend            *b = NULL;
    clef_media_conf          mc, deaf;
    clef_model              *m;
    clef_error               err;
    clef_record              recs[MAX_CASES], r;
    json_t                  *cases, *c;
    char                     dir[1100];
    float                   *alone[MAX_CASES];
    double                   d, dp, worst = 0, worst_pyav = 0, effect;
    int                      n = 0, i, ok, argmax = 0, runs;
    int                      heard = 0, most_runs = 0, refused = 0;

    runs = 0;

    if (e2e_start(tmp, 1) != 0) {
        return 0;
    }
    e2e_mkmodel(tmp, "omni1", "tokenizer/qwen3-omni", 21, dir, sizeof(dir));

    cases = e2e_cases("vision/omni_avideos.jsonl");
    CHECK(json_array_size(cases) >= 10, "%zu Clef Omni requests with videos "
          "with sound", json_array_size(cases));

    if (e2e_open(dir, "omni1", &m, &ops, &b) != 0) {
        return check_done();
    }
    clef_model_media_conf(m, &mc);
    CHECK(mc.videos_with_sound == CLEF_VIDEO_SOUND_HEARD
          && (mc.accepts & CLEF_MEDIA_BIT(CLEF_MEDIA_AUDIO))
          && CLEF_MC_VIDEO(&mc).position_step == 13,
          "Clef Omni hears videos with sound; pairs 13 positions apart");

    json_array_foreach(cases, i, c) {
        const char  *name = json_string_value(json_object_get(c, "name"));
        clef_record *rec = &recs[n];
        float        lg[256];

        if (n >= RUN_CASES
            || json_array_size(json_object_get(c, "input_ids")) > RUN_TOKENS)
        {
            continue;
        }
        if (encode_err(m, c, NULL, rec, &err) != 0) {
            CHECK(0, "%s: encoded (%s)", name, err.message);
            continue;
        }
        CHECK(e2e_ids_equal(json_object_get(c, "input_ids"), rec),
              "%s: %zu input ids identical", name, rec->ids.n);
        CHECK(positions_equal(json_object_get(c, "positions"), rec),
              "%s: M-RoPE positions identical to get_rope_index's", name);
        CHECK(e2e_spans_equal(json_object_get(c, "questions"), rec),
              "%s: question and option spans identical", name);
        ok = items_equal(c, rec, &mc, &runs);
        CHECK(ok, "%s: items in order (%s), "
              "each span on its kind's pads, rows in order, %d runs of "
              "video and sound", name,
              json_is_true(json_object_get(c, "use_audio_in_video"))
              ? "tracks after the videos" : "no sound heard", runs);
        heard += json_is_true(json_object_get(c, "use_audio_in_video"));
        most_runs = runs > most_runs ? runs : most_runs;

        effect = json_number_value(json_object_get(c, "decode_effect"));
        ok = forward(ops, b, (const clef_record *const []) { rec }, 1, lg) == 0;
        d = ok ? e2e_compare(c, "probabilities", rec, lg, &argmax) : 1;
        worst = d > worst ? d : worst;
        CHECK(ok && d <= TOLERANCE && argmax, "%s: probabilities within "
              "%g of the reference on the same samples (max %.3g), its "
              "argmax", name, TOLERANCE, d);
        dp = ok ? e2e_compare(c, "probabilities_pyav", rec, lg, &argmax) : 1;
        worst_pyav = dp > worst_pyav ? dp : worst_pyav;
        CHECK(ok && dp <= TOLERANCE + effect, "%s: within %g + %.3g (PyAV's "
              "decode against the system's) of the reference as it "
              "decodes (max %.3g)", name, TOLERANCE, effect, dp);
        alone[n] = malloc(sizeof(float) * (size_t) rec->n_options);
        memcpy(alone[n], lg, sizeof(float) * (size_t) rec->n_options);
        n++;
    }
    CHECK(heard >= 4 && most_runs >= 5, "%d records heard, up to %d runs "
          "of video and sound in one", heard, most_runs);

    /* a backend without an audio tower cannot hear them */
    deaf = mc;
    deaf.accepts &= ~CLEF_MEDIA_BIT(CLEF_MEDIA_AUDIO);
    json_array_foreach(cases, i, c) {
        if (!json_is_true(json_object_get(c, "use_audio_in_video"))
            || json_object_get(json_object_get(c, "body"), "audio") != NULL)
        {
            continue;
        }
        ok = encode_err(m, c, &deaf, &r, &err) != 0;
        if (!ok) {
            clef_record_free(&r);
        }
        CHECK(ok && err.status == 400
              && strcmp(err.type, "videos_with_sound_unsupported") == 0
              && strstr(err.loc, "videos") != NULL,
              "%s without an audio tower: 400 videos_with_sound_unsupported "
              "naming videos (%s)",
              json_string_value(json_object_get(c, "name")), err.message);
        refused++;
        break;
    }
    CHECK(refused == 1, "the refusal without an audio tower checked");

    /* one packed batch: the records between two without media */
    CHECK(e2e_packed(m, ops, b, "no video here", recs, n, alone),
          "%d Clef Omni records with videos with sound packed "
          "between two without media: every logit bit-identical to "
          "the record alone", n);

    printf("# omni audio in video: %d requests, max |p - reference| %.3g "
           "(same samples), %.3g (PyAV's decode)\n", n, worst, worst_pyav);
    return e2e_done(tmp, m, ops, b, cases, recs, alone, n);
}
