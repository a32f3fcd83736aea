/*
 * Clef Omni end to end from the raw request body against its reference
 * (t/fixtures/e2e/omni1_audio.jsonl, written by t/reference/
 * gen_omni_e2e_fixtures.py from Cloudflare's Omni joint_schema_model.py on
 * transformers 5.10.2 and PyAV, fp32): text, images, audio clips in every
 * container, silent videos, and a silent video beside one with sound, on
 * the checkpoint t/fixtures/models/omni1.json that `clef mkmodel` writes
 * again here.  Each body is built as a client sends it (data URLs of the
 * committed files) and taken as the engine takes it: parsed, its media
 * read by the worker's code, decoded by build/clef-decoder (the sandboxed
 * decode process), 16 kHz samples, log-mel features per record, the
 * towers, placement, the CPU backend.
 *
 *   - input ids identical to the reference's (so input_tokens), and each
 *     clip's feature frames;
 *   - per question the reference's argmax, and every probability within
 *     BASE_TOL + step_effect of the reference's.  BASE_TOL is the bound
 *     the model meets when fed the reference's own features and pixels
 *     (test_audio_tower, test_omni_video: 1e-5, float32 summation order);
 *     step_effect is the request's own measured effect of the one-step
 *     input change its features are allowed: the reference's probabilities
 *     moved by every feature value moved 1e-4 (up, down, a drawn sign
 *     each), the bound test_audio asserts our features within (the
 *     reference's own float32 STFT is that far from exact; lossy codecs'
 *     samples differ in the last bits from PyAV's newer FFmpeg);
 *   - every record packed into one batch: the logits of each alone;
 *   - the requests the reference raises on (omni1_refusals.jsonl, the same
 *     generator: a damaged track, also beside a silent video, a damaged
 *     clip, clips and tracks shorter than its STFT takes): each refused
 *     with the fixture's status, type and loc.
 *
 * Under the sanitizers: four requests of at most 300 tokens.
 */
#include <jansson.h>
#include <unistd.h>

#include "backend/backend.h"
#include "check.h"
#include "model/model.h"
#include "protocol/encode_media.h"
#include "protocol/request.h"
#include "shell.h"
#include "vision_cases.h"
#include "e2e_cases.h"

#define MAX_CASES  64
#define BASE_TOL   1e-5

#if defined(__SANITIZE_ADDRESS__)
#define RUN_CASES   4
#define RUN_TOKENS  300
#else
#define RUN_CASES   MAX_CASES
#define RUN_TOKENS  (1 << 30)
#endif

static char  tmp[] = "/tmp/clef_omni_e2e_XXXXXX";


/* The body parsed, its media read and checked, encoded with its media, as
 * the engine does. */
static int
encode_request(const clef_model *m, json_t *c, clef_record *rec,
    clef_error *err)
{
    char  *body = body_of(c);
    int    rc;

    rc = e2e_encode(m, body, CLEF_MEDIA_BIT(CLEF_MEDIA_IMAGE)
                             | CLEF_MEDIA_BIT(CLEF_MEDIA_AUDIO)
                             | CLEF_MEDIA_BIT(CLEF_MEDIA_VIDEO), rec, err);
    free(body);
    return rc;
}


/* Each audio clip's feature frames (its items' grid_w), in order. */
static int
clips_equal(json_t *frames, const clef_record *rec)
{
    size_t  n = 0;
    int     k, ok = 1;

    for (k = 0; k < rec->n_media; k++) {
        if (rec->media[k].kind != CLEF_MEDIA_AUDIO) {
            continue;
        }
        ok &= n < json_array_size(frames)
              && json_integer_value(json_array_get(frames, n))
                 == rec->media[k].grid_w;
        n++;
    }
    return ok && n == json_array_size(frames);
}


/* max |p - reference| over every option (e2e_compare on the reference's
 * questions[].probabilities); *argmax_ok 0 when a question has another
 * argmax than the reference's (or another option count). */
static double
compare(json_t *c, const clef_record *rec, const float *lg, int *argmax_ok)
{
    json_t  *probs = json_array(), *q, *ref;
    size_t   i;
    double   d;

    json_array_foreach(json_object_get(c, "questions"), i, q) {
        json_array_append(probs, json_object_get(q, "probabilities"));
    }
    ref = json_pack("{s:o}", "probabilities", probs);
    d = e2e_compare(ref, "probabilities", rec, lg, argmax_ok);
    json_decref(ref);
    return d;
}


/* The requests the reference raises on (t/fixtures/e2e/
 * omni1_refusals.jsonl: a damaged track, beside a silent video too, a
 * damaged clip, clips and tracks too short for its STFT): each refused
 * with the status, type and loc of the fixture, nothing left allocated. */
static void
refusals(const clef_model *m)
{
    json_t       *cases = e2e_cases("e2e/omni1_refusals.jsonl"), *c;
    clef_record   rec;
    clef_error    err;
    const char   *name;
    char         *loc;
    size_t        i;
    int           rc;

    CHECK(json_array_size(cases) >= 6, "%zu requests the reference raises "
          "on", json_array_size(cases));
    json_array_foreach(cases, i, c) {
        name = json_string_value(json_object_get(c, "name"));
        loc = json_dumps(json_object_get(c, "loc"), JSON_COMPACT);
        memset(&err, 0, sizeof(err));
        rc = encode_request(m, c, &rec, &err);
        CHECK(rc != 0 && err.status == json_integer_value(
                  json_object_get(c, "status"))
              && strcmp(err.type, json_string_value(
                  json_object_get(c, "type"))) == 0
              && loc != NULL && strcmp(err.loc, loc) == 0,
              "%s: refused %d %s %s (%s), as the reference raises (%s)",
              name, err.status, err.type, err.loc, err.message,
              json_string_value(json_object_get(c, "reference")));
        if (rc == 0) {
            clef_record_free(&rec);
        }
        free(loc);
    }
    json_decref(cases);
}


int
main(void)
{
    const clef_backend_ops  *ops;
    clef_backend            *b = NULL;
    clef_model              *m;
    clef_error               err;
    clef_record              recs[MAX_CASES];
    json_t                  *cases, *c;
    char                     dir[1100];
    float                   *alone[MAX_CASES], lg[256];
    double                   d, bound, effect, worst = 0, worst_effect = 0;
    double                   worst_audio = 0;
    size_t                   i;
    int                      n = 0, ok, argmax = 0, kinds;
    int                      with_audio = 0, clips = 0;

    if (e2e_start(tmp, 1) != 0) {
        return 0;
    }
    e2e_mkmodel(tmp, "omni1", "tokenizer/qwen3-omni", 21, dir, sizeof(dir));

    cases = e2e_cases("e2e/omni1_audio.jsonl");
    CHECK(json_array_size(cases) >= 30 && json_array_size(cases) <= MAX_CASES,
          "%zu Clef Omni requests from their raw bodies",
          json_array_size(cases));

    /* what the fixture mixes: text alone, images, audio, videos, and
     * every container among the clips */
    kinds = 0;
    json_array_foreach(cases, i, c) {
        json_t  *body = json_object_get(c, "body"), *a;
        size_t   j;

        kinds |= json_object_get(body, "images") ? 1 : 0;
        kinds |= json_object_get(body, "videos") ? 2 : 0;
        kinds |= json_object_size(body) == 3 ? 4 : 0;
        json_array_foreach(json_object_get(body, "audio"), j, a) {
            const char  *ext = strrchr(json_string_value(a), '.');

            kinds |= strcmp(ext, ".wav") == 0 ? 8
                     : strcmp(ext, ".flac") == 0 ? 16
                     : strcmp(ext, ".mp3") == 0 ? 32
                     : strcmp(ext, ".opus") == 0 ? 64
                     : strcmp(ext, ".ogg") == 0 ? 128
                     : strcmp(ext, ".m4a") == 0 ? 256 : 0;
        }
    }
    CHECK(kinds == 511, "text alone, images, videos, and clips in WAV, "
          "FLAC, MP3, Ogg/Opus, Ogg/Vorbis and M4A/AAC (%#x)", kinds);

    if (e2e_open(dir, "omni1", &m, &ops, &b) != 0) {
        return check_done();
    }
    refusals(m);

    json_array_foreach(cases, i, c) {
        const char   *name = json_string_value(json_object_get(c, "name"));
        clef_record  *rec = &recs[n];
        json_t       *ids = json_object_get(c, "input_ids");
        json_t       *fr = json_object_get(c, "clips");

        if (n >= RUN_CASES || json_array_size(ids) > RUN_TOKENS) {
            continue;
        }
        if (encode_request(m, c, rec, &err) != 0) {
            CHECK(0, "%s: encoded (%s)", name, err.message);
            continue;
        }
        CHECK(e2e_ids_equal(ids, rec)
              && (json_int_t) rec->ids.n
                 == json_integer_value(json_object_get(c, "input_tokens")),
              "%s: %zu input ids identical to the reference's", name,
              rec->ids.n);
        CHECK(clips_equal(fr, rec), "%s: %zu clips, each the reference's "
              "feature frames", name, json_array_size(fr));
        with_audio += json_array_size(fr) > 0;
        clips += (int) json_array_size(fr);

        effect = json_number_value(json_object_get(c, "step_effect"));
        bound = BASE_TOL + effect;
        ok = forward(ops, b, (const clef_record *const []) { rec }, 1, lg)
             == 0;
        d = ok ? compare(c, rec, lg, &argmax) : 1;
        worst = d > worst ? d : worst;
        worst_effect = effect > worst_effect ? effect : worst_effect;
        if (json_array_size(fr) > 0 && d > worst_audio) {
            worst_audio = d;
        }
        CHECK(ok && argmax && d <= bound, "%s: the reference's argmax, "
              "probabilities within %.3g (%g + the 1e-4 feature step's "
              "%.3g): max %.3g", name, bound, BASE_TOL, effect, d);
        alone[n] = malloc(sizeof(float) * (size_t) rec->n_options);
        memcpy(alone[n], lg, sizeof(float) * (size_t) rec->n_options);
        n++;
    }

    /* one packed batch of every record (text, images, clips, videos):
     * the very logits of each alone */
    CHECK(e2e_packed(m, ops, b, NULL, recs, n, alone),
          "%d records packed into one batch: every logit bit-identical to "
          "the record alone", n);

    printf("# omni e2e: %d requests (%d with %d clips), max |p - reference| "
           "%.3g (with audio %.3g); largest 1e-4 feature-step effect %.3g\n",
           n, with_audio, clips, worst, worst_audio, worst_effect);
    return e2e_done(tmp, m, ops, b, cases, recs, alone, n);
}
