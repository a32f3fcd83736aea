/*
 * The records of t/fixtures/audio (t/reference/gen_omni_audio_fixtures.py)
 * as the engine receives them, shared by the CPU (test_audio_tower) and
 * CUDA (test_cuda_audio) tests of the audio tower: a record's clips as
 * audio items of the reference's log-mel features (media/media.h), its
 * body parsed and planned as the engine does with its images decoded and
 * processed by the engine, the clips placed after them (the probabilities
 * are compared by e2e_cases.h).  Include after check.h and vision_cases.h.
 */
#ifndef CLEF_TEST_AUDIO_CASES_H
#define CLEF_TEST_AUDIO_CASES_H

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "media/audio_features.h"
#include "media/base64.h"
#include "model/model_media.h"
#include "protocol/encode_media.h"
#include "protocol/plan.h"
#include "protocol/request.h"

/* A base64 float32 array of the fixture: n floats (malloc'ed), NULL when
 * it does not decode to exactly n. */
static float * __attribute__((unused))
floats(json_t *v, int64_t n)
{
    const char  *s = json_string_value(v), *why;
    uint8_t     *buf;
    size_t       bad;
    int64_t      got;

    if (s == NULL) {
        return NULL;
    }
    buf = malloc(clef_base64_max_decoded(strlen(s)) + 4);
    got = buf != NULL ? clef_base64_decode(s, strlen(s), buf, &bad, &why) : -1;
    if (got != n * 4) {
        free(buf);
        return NULL;
    }
    return (float *) buf;
}


/* The case's clips as the audio kind's items (media.h), their features the
 * reference's. */
static int __attribute__((unused))
clip_items(json_t *c, clef_media_item *items)
{
    json_t  *a;
    size_t   k;

    json_array_foreach(json_object_get(c, "audio"), k, a) {
        clef_media_item  *it = &items[k];
        int64_t           frames, mels;

        frames = json_integer_value(json_object_get(a, "frames"));
        mels = json_integer_value(json_object_get(a, "mels"));
        memset(it, 0, sizeof(*it));
        it->kind = CLEF_MEDIA_AUDIO;
        it->grid_t = 1;
        it->grid_h = (int32_t) mels;
        it->grid_w = (int32_t) frames;
        it->frames = 1;
        it->tokens = clef_audio_output_tokens(frames);
        it->values = floats(json_object_get(a, "features"), mels * frames);
        if (it->values == NULL) {
            return -1;
        }
    }
    return (int) k;
}


/* The record of case c: its body parsed and planned as the engine does,
 * its images decoded and processed by the engine, then the clips (items,
 * moved into the record) after them, as the reference's text puts its
 * placeholders. */
static int __attribute__((unused))
encode_case_audio(const clef_model *m, json_t *c, clef_media_item *clips,
    int n_clips, clef_record *rec)
{
    clef_request       req;
    clef_error         err;
    clef_media_conf    mc;
    clef_encode_opts   eo;
    clef_buf           blob = { NULL, 0, 0 };
    clef_plan          plan;
    clef_media_input  *inputs = NULL, *saved;
    clef_media_item   *all = NULL;
    char              *body = body_of(c);
    int                rc = -1, k, n_img;

    memset(&err, 0, sizeof(err));
    memset(rec, 0, sizeof(*rec));
    clef_model_media_conf(m, &mc);
    clef_encode_opts_default(&eo);
    if (clef_request_parse(&req, body, strlen(body), NULL, &err) != 0) {
        free(body);
        printf("#   %s\n", err.message);
        return -1;
    }
    if (clef_request_check_media(&req, mc.accepts, &err) != 0
        || clef_plan_build(&req, &blob, &err) != 0
        || clef_plan_view(&plan, blob.data, blob.len, &err) != 0)
    {
        goto done;
    }
    n_img = plan.n_media;
    if (n_img > 0 && clef_encode_media_prepare(&mc, &plan, &eo, &err) != 0) {
        clef_plan_free(&plan);
        goto done;
    }
    inputs = calloc((size_t) (n_img + n_clips), sizeof(*inputs));
    all = calloc((size_t) (n_img + n_clips), sizeof(*all));
    if (inputs != NULL && all != NULL) {
        for (k = 0; k < n_img; k++) {
            inputs[k] = plan.media[k];
            all[k] = eo.media[k];
        }
        for (k = 0; k < n_clips; k++) {
            inputs[n_img + k].kind = CLEF_MEDIA_AUDIO;
            all[n_img + k] = clips[k];
        }
        free(eo.media);
        eo.media = all;
        eo.n_media = n_img + n_clips;
        all = NULL;
        clef_media_conf_tokens(&mc, eo.tokens);
        eo.newline_each = mc.newline_each;
        saved = plan.media;
        plan.media = inputs;
        plan.n_media = n_img + n_clips;
        rc = clef_encode_plan(clef_model_tokenizer(m), &plan, &eo, rec, &err);
        plan.media = saved;
        /* the record took the clips' features */
        for (k = 0; k < n_clips; k++) {
            clips[k].values = NULL;
        }
    }
    clef_encode_media_release(&eo);
    clef_plan_free(&plan);

done:
    if (rc != 0) {
        printf("#   %s\n", err.message);
    }
    free(inputs);
    free(all);
    clef_buf_free(&blob);
    clef_request_free(&req);
    free(body);
    return rc;
}


#endif
