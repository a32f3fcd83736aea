/*
 * Media items whatever their kind (media/media.h): the kinds' table, the
 * plan's CLP3 items with their kind byte (and a CLP2 blob refused by
 * name), and a kind no model takes yet refused by the engine's path as it
 * is by the worker's.  (The M-RoPE positions of spans: test_image_input.)
 */
#include "check.h"

#include "base/buf.h"
#include "media/kinds.h"
#include "media/prepare.h"
#include "protocol/encode.h"
#include "protocol/encode_media.h"
#include "protocol/plan.h"
#include "protocol/request.h"

#define Q  "{\"model\":\"m\",\"state\":\"s\",\"questions\":{\"q\":{\"type\":\"noul\"}},"

/* A 1x1 RGB PNG */
static const char  png1[] =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGNgYGAAAAAEAAH2FzhVAAAAAElFTkSuQmCC";

/* the bytes of an item in the blob before its file: kind, format, width,
 * height, frames, duration_us, length (plan.h) */
#define HEAD  26


static void
test_kinds(void)
{
    const clef_media_kind_info  *k;
    char                         words[128];

    CHECK(clef_media_kind_of(0) == NULL
          && clef_media_kind_of(CLEF_MEDIA_KINDS) == NULL
          && clef_media_kind_of(-1) == NULL, "no row outside the kinds");
    k = clef_media_kind_of(CLEF_MEDIA_IMAGE);
    CHECK(k != NULL && k->kind == CLEF_MEDIA_IMAGE
          && strcmp(k->field, "images") == 0 && k->read != NULL
          && k->header_ids != NULL && k->limits.max_items == 4
          && strcmp(k->unsupported, "images_unsupported") == 0,
          "images: the field, a reader, 4 a request");
    k = clef_media_kind_of(CLEF_MEDIA_VIDEO);
    CHECK(k != NULL && strcmp(k->field, "videos") == 0 && k->read == NULL
          && strcmp(k->parts[0], "video_url") == 0,
          "videos: known, not read yet");
    k = clef_media_kind_of(CLEF_MEDIA_AUDIO);
    CHECK(k != NULL && strcmp(k->field, "audio") == 0 && k->read == NULL
          && strcmp(k->many, "audio clips") == 0, "audio: known, not read yet");
    CHECK(clef_media_prep_of(CLEF_MEDIA_IMAGE) != NULL
          && clef_media_prep_of(CLEF_MEDIA_VIDEO) == NULL
          && clef_media_prep_of(CLEF_MEDIA_AUDIO) == NULL
          && clef_media_prep_of(0) == NULL,
          "the engine prepares images only");

    clef_media_accepted_words(0, words, sizeof(words));
    CHECK_STR(words, "text and JSON states", "accepted: nothing");
    clef_media_accepted_words(CLEF_MEDIA_BIT(CLEF_MEDIA_IMAGE), words,
                              sizeof(words));
    CHECK_STR(words, "text, JSON states and images", "accepted: images");
    clef_media_accepted_words(CLEF_MEDIA_BIT(CLEF_MEDIA_IMAGE)
                              | CLEF_MEDIA_BIT(CLEF_MEDIA_AUDIO), words,
                              sizeof(words));
    CHECK_STR(words, "text, JSON states, images and audio clips",
              "accepted: images and audio");
}


/* A plan of body's request; with check_media(accepts) first when read. */
static int
plan_of(const char *body, int read, clef_request *req, clef_buf *blob,
    clef_error *err)
{
    blob->len = 0;
    if (clef_request_parse(req, body, strlen(body), NULL, err) != 0) {
        return -1;
    }
    if ((read && clef_request_check_media(req, 1, err) != 0)
        || clef_plan_build(req, blob, err) != 0)
    {
        clef_request_free(req);
        return -1;
    }
    return 0;
}


static void
test_plan(void)
{
    clef_request  req;
    clef_error    err;
    clef_buf      body = { NULL, 0, 0 }, blob = { NULL, 0, 0 };
    clef_plan     plan;
    uint8_t      *b;
    size_t        at;
    int           ok;

    /* an image read by the worker: its kind byte, format, header, file */
    clef_buf_printf(&body, Q "\"images\":[\"data:image/png;base64,%s\"]}",
                    png1);
    ok = plan_of(body.data, 1, &req, &blob, &err) == 0;
    CHECK(ok, "a plan with an image (%s)", ok ? "" : err.message);
    if (!ok) {
        goto done;
    }
    b = (uint8_t *) blob.data;
    at = blob.len - HEAD - req.media[CLEF_MEDIA_IMAGE].inputs[0].len;
    CHECK(memcmp(blob.data, "CLP3", 4) == 0 && b[at] == CLEF_MEDIA_IMAGE
          && b[at + 1] == CLEF_IMAGE_PNG, "CLP3: the item's kind and format "
          "bytes");
    ok = clef_plan_view(&plan, blob.data, blob.len, &err) == 0;
    CHECK(ok && plan.n_media == 1 && plan.media[0].kind == CLEF_MEDIA_IMAGE
          && plan.media[0].format == CLEF_IMAGE_PNG
          && plan.media[0].width == 1 && plan.media[0].height == 1
          && plan.media[0].frames == 1 && plan.media[0].duration_us == 0
          && plan.media[0].len == req.media[CLEF_MEDIA_IMAGE].inputs[0].len,
          "CLP3: the item read back");
    CHECK_STR(clef_plan_media_noun(&plan), "images", "one kind: its noun");
    if (ok) {
        clef_plan_free(&plan);
    }
    b[at] = CLEF_MEDIA_KINDS;
    CHECK(clef_plan_view(&plan, blob.data, blob.len, &err) == -1
          && strcmp(err.type, "plan_invalid") == 0, "a kind byte of no kind: "
          "refused");
    b[at] = CLEF_MEDIA_IMAGE;
    b[at + 1] = 0;
    CHECK(clef_plan_view(&plan, blob.data, blob.len, &err) == -1
          && strcmp(err.type, "plan_invalid") == 0, "an item never read "
          "(format 0) that has bytes: refused");

    /* a blob of the old version says so */
    memcpy(blob.data, "CLP2", 4);
    CHECK(clef_plan_view(&plan, blob.data, blob.len, &err) == -1
          && err.status == 500 && strcmp(err.type, "plan_invalid") == 0,
          "a CLP2 blob: 500 plan_invalid");
    CHECK_STR(err.message, "The record handed to the engine is a plan of "
              "version CLP2; this engine reads CLP3 (a worker and an engine "
              "of different builds).", "a CLP2 blob: both versions named");
    clef_request_free(&req);

    /* items never read: an image, then a video (kind order) */
    body.len = 0;
    clef_buf_printf(&body, Q "\"videos\":[\"v\"],\"images\":[\"i\"]}");
    ok = plan_of(body.data, 0, &req, &blob, &err) == 0
         && clef_plan_view(&plan, blob.data, blob.len, &err) == 0;
    CHECK(ok && plan.n_media == 2 && plan.media[0].kind == CLEF_MEDIA_IMAGE
          && plan.media[1].kind == CLEF_MEDIA_VIDEO
          && plan.media[0].format == 0 && plan.media[1].len == 0,
          "two items never read, in kind order");
    if (ok) {
        CHECK_STR(clef_plan_media_noun(&plan), "media items",
                  "two kinds: media items");
        clef_plan_free(&plan);
        b = (uint8_t *) blob.data;
        b[blob.len - 2 * HEAD] = CLEF_MEDIA_VIDEO;
        b[blob.len - HEAD] = CLEF_MEDIA_IMAGE;
        CHECK(clef_plan_view(&plan, blob.data, blob.len, &err) == -1
              && strcmp(err.type, "plan_invalid") == 0,
              "items out of kind order: refused");
        clef_request_free(&req);
    }

done:
    clef_buf_free(&blob);
    clef_buf_free(&body);
}


/* A video's prepared form has not been built yet, but the engine's path
 * refuses it by name whatever reaches it. */
static void
test_engine_refuses(void)
{
    clef_request      req;
    clef_error        err;
    clef_buf          blob = { NULL, 0, 0 };
    clef_plan         plan;
    clef_media_conf   mc;
    clef_encode_opts  opts;
    int               ok;

    ok = plan_of(Q "\"videos\":[\"data:video/mp4;base64,AAAA\"]}", 0, &req,
                 &blob, &err) == 0
         && clef_plan_view(&plan, blob.data, blob.len, &err) == 0;
    CHECK(ok, "a plan with a video nobody read");
    if (!ok) {
        clef_buf_free(&blob);
        return;
    }
    clef_media_conf_default(&mc);
    mc.accepts = CLEF_MEDIA_BIT(CLEF_MEDIA_IMAGE)
                 | CLEF_MEDIA_BIT(CLEF_MEDIA_VIDEO);
    clef_encode_opts_default(&opts);
    CHECK(clef_encode_media_prepare(&mc, &plan, &opts, &err) == -1
          && err.status == 400 && strcmp(err.type, "videos_unsupported") == 0
          && opts.media == NULL, "prepare: a video is refused (no reader, no "
          "processor)");
    CHECK_STR(err.message, "This model does not accept videos.",
              "prepare: the message names videos");
    clef_plan_free(&plan);
    clef_request_free(&req);
    clef_buf_free(&blob);
}


int
main(void)
{
    test_kinds();
    test_plan();
    test_engine_refuses();
    return check_done();
}
