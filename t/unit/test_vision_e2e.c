/*
 * Images end to end against the reference (t/fixtures/vision, written by
 * t/reference/gen_vision_fixtures.py from transformers' Qwen3.5 with its
 * vision tower and Cloudflare's ClefModel, fp32), on the checkpoint
 * t/fixtures/models/v1.json that `clef mkmodel` writes again here:
 *
 *   - the encoder: input ids, question and option spans and the image pad
 *     spans identical to the reference's processor + encode_record;
 *   - fed the reference's own pixel values (its resized images,
 *     t/fixtures/images/expect), CPU probabilities within 1e-5;
 *   - end to end from the files (the worker's checks, the engine's
 *     decoding and processing): the same bound and the same argmax;
 *   - every record packed into one batch with text-only records: the very
 *     logits of each record alone (the vision tower and M-RoPE do not
 *     depend on the batch).
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

#define PROB_TOL  1e-5

#if defined(__SANITIZE_ADDRESS__)
#define CASES  4
#else
#define CASES  1000
#endif

static char    tmp[] = "/tmp/clef_vision_XXXXXX";
static double  worst_pix, worst_bytes;


/* The reference's resized image k of case c, as the record's pixels. */
static int
reference_pixels(json_t *c, int k, clef_media_item *im)
{
    const char      *name = json_string_value(json_array_get(
                          json_object_get(json_object_get(c, "body"), "images"),
                          (size_t) k)) + 7;
    char             path[1024], base[256], msg[256], *bytes, *dot;
    size_t           len;
    clef_rgb_image   rgb;
    int              orient, rc;

    snprintf(base, sizeof(base), "%s", name);
    dot = strrchr(base, '.');
    *dot = '\0';
    snprintf(path, sizeof(path), "%s/images/expect/%s.png", check_fixtures(), base);
    bytes = slurp(path, &len);
    rc = bytes != NULL ? clef_decode_png((uint8_t *) bytes, len, 1 << 26, 1e300,
                                         &rgb, &orient, msg) : -1;
    free(bytes);
    if (rc != 0 || rgb.width != im->grid_w * 16 || rgb.height != im->grid_h * 16) {
        return -1;
    }
    free(im->bytes);
    im->bytes = rgb.rgb;
    return 0;
}


static void
check_encoding(json_t *c, const clef_record *rec, const char *name)
{
    json_t  *ids = json_object_get(c, "input_ids"), *qs = json_object_get(c, "questions");
    json_t  *starts = json_object_get(c, "image_start");
    size_t   i;
    int      ok;

    CHECK(e2e_ids_equal(ids, rec), "%s: %zu input ids identical", name,
          rec->ids.n);
    CHECK(e2e_spans_equal(qs, rec), "%s: question and option spans identical",
          name);
    ok = (int) json_array_size(starts) == rec->n_media
         && rec->n_spans == rec->n_media;
    for (i = 0; ok && i < (size_t) rec->n_media; i++) {
        ok = json_integer_value(json_array_get(starts, i)) == rec->spans[i].start
             && rec->spans[i].item == (int32_t) i
             && json_integer_value(json_array_get(json_array_get(
                    json_object_get(c, "image_grid_thw"), i), 1))
                == rec->media[i].grid_h
             && json_integer_value(json_array_get(json_array_get(
                    json_object_get(c, "image_grid_thw"), i), 2))
                == rec->media[i].grid_w;
    }
    CHECK(ok, "%s: %d images: pad spans and grids identical", name, rec->n_media);
}


int
main(void)
{
    const clef_backend_ops  *ops;
    clef_backend            *b = NULL;
    clef_model              *m;
    clef_error               err;
    clef_record              recs[40];
    json_t                  *cases, *c;
    char                     dir[1100];
    float                   *alone[40];
    double                   d;
    int                      n = 0, i, k, same, ok, o;

    if (e2e_start(tmp, 0) != 0) {
        return 0;
    }
    e2e_mkmodel(tmp, "v1", "tokenizer/qwen3", 11, dir, sizeof(dir));

    cases = e2e_cases("vision/cases.jsonl");
    CHECK(json_array_size(cases) >= 30, "%zu requests with images",
          json_array_size(cases));

    if (e2e_open(dir, "v1", &m, &ops, &b) != 0) {
        return check_done();
    }

    json_array_foreach(cases, i, c) {
        const char  *name = json_string_value(json_object_get(c, "name"));
        clef_record *rec = &recs[n];
        float        lg[256];

        if (n >= CASES || n >= 40) {
            break;
        }
        if (encode_case(m, c, rec) != 0) {
            CHECK(0, "%s: encoded", name);
            continue;
        }
        check_encoding(c, rec, name);

        /* end to end from the files */
        ok = forward(ops, b, (const clef_record *const []) { rec }, 1, lg) == 0;
        d = ok ? e2e_compare(c, "probabilities", rec, lg, &same) : 1;
        worst_bytes = d > worst_bytes ? d : worst_bytes;
        CHECK(ok && d <= PROB_TOL && same, "%s: from the files, probabilities "
              "within %g (max %.3g), the reference's argmax", name, PROB_TOL, d);
        alone[n] = malloc(sizeof(float) * (size_t) rec->n_options);
        memcpy(alone[n], lg, sizeof(float) * (size_t) rec->n_options);

        /* fed the reference's own pixels */
        for (k = 0, ok = 1; k < rec->n_media; k++) {
            ok &= reference_pixels(c, k, &rec->media[k]) == 0;
        }
        CHECK(ok, "%s: the reference's resized images read", name);
        ok = ok && forward(ops, b, (const clef_record *const []) { rec }, 1, lg) == 0;
        d = ok ? e2e_compare(c, "probabilities", rec, lg, &same) : 1;
        worst_pix = d > worst_pix ? d : worst_pix;
        CHECK(ok && d <= PROB_TOL && same, "%s: the reference's pixel values: "
              "probabilities within %g (max %.3g)", name, PROB_TOL, d);
        n++;
    }

    /* images that cannot fit are refused before they are decoded */
    {
        clef_request      req;
        clef_encode_opts  eo;
        clef_record       r;
        char             *body = body_of(json_array_get(cases, 7));

        clef_encode_opts_default(&eo);
        eo.max_length = 300;
        ok = clef_request_parse(&req, body, strlen(body), NULL, &err) == 0
             && clef_request_check_media(&req, 1, &err) == 0;
        CHECK(ok && clef_encode_with_media(m, &req, &eo, &r, &err) == -1
              && err.status == 413
              && strcmp(err.type, "max_tokens_exceeded") == 0
              && strcmp(err.message, "The 4 images need 452 tokens; the limit "
                        "is 300.") == 0, "images over the limit: 413 (%s)",
              err.message);
        clef_request_free(&req);
        free(body);
    }

    /* one packed batch: the records with images between two without */
    CHECK(e2e_packed(m, ops, b, "no image here", recs, n, alone),
          "%d records with images packed between two without: every "
          "logit bit-identical to the record alone", n);

    /* the first image relabelled: as a video of one frame pair whose two
     * frames are that image, the tower sees what it saw (bit for bit);
     * as an audio clip, on a model without an audio tower (v1 is Clef's),
     * it is refused by the audio kind's encoder before anything runs */
    if (n > 0) {
        clef_batch  batch;
        int32_t     cu[2];
        float       lg[256];

        recs[0].media[0].kind = CLEF_MEDIA_VIDEO;
        clef_batch_init(&batch, (const clef_record *const []) { &recs[0] }, 1,
                        cu);
        ok = clef_batch_set_media(&batch, &err) == 0
             && ops->forward(b, &batch, lg, &err) == 0;
        clef_batch_free_media(&batch);
        for (o = 0; ok && o < recs[0].n_options; o++) {
            ok &= lg[o] == alone[0][o];
        }
        CHECK(ok, "an image as a one-pair video of itself: the same logits");

        recs[0].media[0].kind = CLEF_MEDIA_AUDIO;
        clef_batch_init(&batch, (const clef_record *const []) { &recs[0] }, 1,
                        cu);
        ok = clef_batch_set_media(&batch, &err) == 0
             && ops->forward(b, &batch, lg, &err) == -1;
        clef_batch_free_media(&batch);
        recs[0].media[0].kind = CLEF_MEDIA_IMAGE;
        CHECK(ok && err.status == 400
              && strcmp(err.type, "audio_unsupported") == 0
              && strcmp(err.message, "This model does not accept audio "
                        "clips.") == 0,
              "an audio item on a model without an audio tower: 400 "
              "audio_unsupported (%s)",
              err.message);
    }

    printf("# vision e2e: max |p - reference| %.3g from the reference's pixel "
           "values, %.3g from the files\n", worst_pix, worst_bytes);
    return e2e_done(tmp, m, ops, b, cases, recs, alone, n);
}
