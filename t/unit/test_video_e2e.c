/*
 * Videos end to end against the reference (t/fixtures/vision/videos.jsonl,
 * written by t/reference/gen_video_e2e_fixtures.py from transformers'
 * Qwen3.5 with its vision tower, Qwen3VLProcessor + torchcodec and
 * Cloudflare's ClefModel, fp32), on the checkpoint t/fixtures/models/
 * v1.json that `clef mkmodel` writes again here, each request as the
 * engine takes it (data URLs read by the worker's code, videos decoded by
 * build/clef-decoder):
 *
 *   - the encoder: input ids (the "<t seconds>" texts included), question
 *     and option spans, one pad span per frame pair, the grids;
 *   - probabilities within max(1e-4, 3 x the effect of moving every frame
 *     sample one uint8 step), the reference's argmax wherever its top two
 *     differ by more than that;
 *   - every record packed into one batch with text-only records: the very
 *     logits of each record alone.
 *
 * Under the sanitizers: four requests of at most 400 tokens.
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

#define MAX_CASES  48

/* Under the sanitizers, four requests of at most 400 tokens (the tower
 * and the decode process's answers are the same code; minutes less) */
#if defined(__SANITIZE_ADDRESS__)
#define RUN_CASES   4
#define RUN_TOKENS  400
#else
#define RUN_CASES   MAX_CASES
#define RUN_TOKENS  (1 << 30)
#endif

static char  tmp[] = "/tmp/clef_video_XXXXXX";


/* |p - reference| over every option; *decided_ok 0 when a question whose
 * reference top two differ by more than tol has another argmax. */
static double
compare(json_t *c, const clef_record *rec, const float *lg, double tol,
    int *decided_ok)
{
    json_t  *rp = json_object_get(c, "probabilities"), *q;
    double   p[256], d = 0, ref, best, rbest, rsecond;
    int      qi, o, n, arg, rarg;

    *decided_ok = 1;
    for (qi = 0; qi < rec->n_questions; qi++) {
        q = json_array_get(rp, (size_t) qi);
        n = rec->option_offset[qi + 1] - rec->option_offset[qi];
        e2e_probs(lg + rec->option_offset[qi], n, p);
        arg = rarg = 0;
        best = rbest = rsecond = -1;
        for (o = 0; o < n; o++) {
            ref = json_number_value(json_array_get(q, (size_t) o));
            d = fabs(p[o] - ref) > d ? fabs(p[o] - ref) : d;
            if (p[o] > best) {
                best = p[o];
                arg = o;
            }
            if (ref > rbest) {
                rsecond = rbest;
                rbest = ref;
                rarg = o;
            } else if (ref > rsecond) {
                rsecond = ref;
            }
        }
        if (rbest - rsecond > tol && arg != rarg) {
            *decided_ok = 0;
        }
    }
    return d;
}


/* The items' grids are the reference's (images first, then videos, as the
 * kinds' order puts them), and every video pair has one span of its pads,
 * in token order, each starting right after a <|vision_start|>. */
static int
media_equal(json_t *c, const clef_record *rec, int32_t start_id)
{
    json_t  *ig = json_object_get(c, "image_grid_thw");
    json_t  *vg = json_object_get(c, "video_grid_thw"), *g;
    int      k, s = 0, j, ok = 1, n_img = (int) json_array_size(ig);

    if (rec->n_media != n_img + (int) json_array_size(vg)) {
        return 0;
    }
    for (k = 0; ok && k < rec->n_media; k++) {
        g = k < n_img ? json_array_get(ig, (size_t) k)
                      : json_array_get(vg, (size_t) (k - n_img));
        ok = json_integer_value(json_array_get(g, 0)) == rec->media[k].grid_t
             && json_integer_value(json_array_get(g, 1)) == rec->media[k].grid_h
             && json_integer_value(json_array_get(g, 2)) == rec->media[k].grid_w
             && rec->media[k].kind == (k < n_img ? CLEF_MEDIA_IMAGE
                                                 : CLEF_MEDIA_VIDEO);
        for (j = 0; ok && j < (k < n_img ? 1 : rec->media[k].grid_t); j++, s++) {
            ok = s < rec->n_spans && rec->spans[s].item == k
                 && rec->spans[s].len == rec->media[k].tokens
                                         / (k < n_img ? 1 : rec->media[k].grid_t)
                 && rec->spans[s].row == j * rec->spans[s].len
                 && rec->ids.v[rec->spans[s].start - 1] == start_id;
        }
    }
    return ok && s == rec->n_spans;
}


int
main(void)
{
    const clef_backend_ops  *ops;
    clef_backend            *b = NULL;
    const clef_vision_config *vc;
    clef_model              *m;
    clef_record              recs[MAX_CASES];
    json_t                  *cases, *c;
    char                     dir[1100];
    float                   *alone[MAX_CASES];
    double                   d, tol, worst = 0, worst_ratio = 0, effect;
    int                      n = 0, i, ok, decided;

    if (e2e_start(tmp, 1) != 0) {
        return 0;
    }
    e2e_mkmodel(tmp, "v1", "tokenizer/qwen3", 11, dir, sizeof(dir));

    cases = e2e_cases("vision/videos.jsonl");
    CHECK(json_array_size(cases) >= 30, "%zu requests with videos",
          json_array_size(cases));

    if (e2e_open(dir, "v1", &m, &ops, &b) != 0) {
        return check_done();
    }
    vc = clef_model_vision_config(m);

    json_array_foreach(cases, i, c) {
        const char  *name = json_string_value(json_object_get(c, "name"));
        clef_record *rec = &recs[n];
        float        lg[256];

        if (n >= RUN_CASES) {
            break;
        }
        if (json_array_size(json_object_get(c, "input_ids")) > RUN_TOKENS) {
            continue;
        }
        if (encode_case(m, c, rec) != 0) {
            CHECK(0, "%s: encoded", name);
            continue;
        }
        CHECK(e2e_ids_equal(json_object_get(c, "input_ids"), rec),
              "%s: %zu input ids identical (<t seconds> texts included)",
              name, rec->ids.n);
        CHECK(e2e_spans_equal(json_object_get(c, "questions"), rec),
              "%s: question and option spans identical", name);
        CHECK(media_equal(c, rec, vc->vision_start_token_id),
              "%s: grids identical, one pad span a frame pair", name);

        effect = json_number_value(json_object_get(c, "step_effect"));
        tol = 3 * effect > 1e-4 ? 3 * effect : 1e-4;
        ok = forward(ops, b, (const clef_record *const []) { rec }, 1, lg) == 0;
        d = ok ? compare(c, rec, lg, tol, &decided) : 1;
        worst = d > worst ? d : worst;
        worst_ratio = effect > 0 && d / effect > worst_ratio ? d / effect
                                                             : worst_ratio;
        CHECK(ok && d <= tol && decided, "%s: probabilities within %.3g "
              "(max(1e-4, 3 x one-step effect %.3g); max %.3g), the "
              "reference's decided argmax", name, tol, effect, d);
        alone[n] = malloc(sizeof(float) * (size_t) rec->n_options);
        memcpy(alone[n], lg, sizeof(float) * (size_t) rec->n_options);
        n++;
    }

    /* one packed batch: the records with videos between two without */
    CHECK(e2e_packed(m, ops, b, "no video here", recs, n, alone),
          "%d records with videos (and images) packed between two "
          "without: every logit bit-identical to the record alone", n);

    printf("# video e2e: %d requests, max |p - reference| %.3g, at most %.3g "
           "of the one-step effect\n", n, worst, worst_ratio);
    return e2e_done(tmp, m, ops, b, cases, recs, alone, n);
}
