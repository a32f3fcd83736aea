/*
 * Media items whatever their kind (media/media.h): the kinds' table, the
 * plan's CLP4 items with their kind byte and its media_kwargs (CLP2 and
 * CLP3 blobs refused by name), and an item nobody read refused by the
 * engine's path.  (The M-RoPE positions of spans: test_image_input.)
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
/* the media_kwargs at the blob's end: set, fps, four sizes, cap, tokens */
#define KW    (4 + 8 + 4 * 8 + 1 + 8)


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
    CHECK(k != NULL && strcmp(k->field, "videos") == 0 && k->read != NULL
          && k->header_ids != NULL && k->limits.max_items == 2
          && k->limits.max_base64 == 13u << 20
          && k->limits.max_bytes == 10u << 20
          && k->limits.max_pixels == 16 << 20
          && strcmp(k->parts[0], "video_url") == 0,
          "videos: a reader, 2 a request, 13 MiB of base64 each, 10 MiB "
          "decoded in all, 16 Mi pixels a frame");
    k = clef_media_kind_of(CLEF_MEDIA_AUDIO);
    CHECK(k != NULL && strcmp(k->field, "audio") == 0 && k->read != NULL
          && k->header_ids != NULL && k->limits.max_items == 4
          && k->limits.max_base64 == 16u << 20
          && k->limits.max_bytes == 24u << 20
          && strcmp(k->many, "audio clips") == 0,
          "audio: a reader, 4 a request, 16 MiB of base64 each, 24 MiB "
          "decoded in all");
    CHECK(clef_media_prep_of(CLEF_MEDIA_IMAGE) != NULL
          && clef_media_prep_of(CLEF_MEDIA_VIDEO) != NULL
          && clef_media_prep_of(CLEF_MEDIA_AUDIO) != NULL
          && clef_media_prep_of(CLEF_MEDIA_AUDIO)->finish != NULL
          && clef_media_prep_of(CLEF_MEDIA_IMAGE)->finish == NULL
          && clef_media_prep_of(CLEF_MEDIA_AUDIO)->expand != NULL
          && clef_media_prep_of(0) == NULL,
          "the engine prepares images, videos and audio (a finish step for "
          "audio alone) and places each");

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
    at = blob.len - KW - HEAD - req.media[CLEF_MEDIA_IMAGE].inputs[0].len;
    CHECK(memcmp(blob.data, "CLP4", 4) == 0 && b[at] == CLEF_MEDIA_IMAGE
          && b[at + 1] == CLEF_IMAGE_PNG, "CLP4: the item's kind and format "
          "bytes");
    ok = clef_plan_view(&plan, blob.data, blob.len, &err) == 0;
    CHECK(ok && plan.n_media == 1 && plan.media[0].kind == CLEF_MEDIA_IMAGE
          && plan.media[0].format == CLEF_IMAGE_PNG
          && plan.media[0].width == 1 && plan.media[0].height == 1
          && plan.media[0].frames == 1 && plan.media[0].duration_us == 0
          && plan.media[0].len == req.media[CLEF_MEDIA_IMAGE].inputs[0].len,
          "CLP4: the item read back");
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
              "version CLP2; this engine reads CLP4 (a worker and an engine "
              "of different builds).", "a CLP2 blob: both versions named");
    memcpy(blob.data, "CLP3", 4);
    CHECK(clef_plan_view(&plan, blob.data, blob.len, &err) == -1
          && err.status == 500 && strstr(err.message, "version CLP3; this "
                                         "engine reads CLP4") != NULL,
          "a CLP3 blob (no media_kwargs): both versions named");
    clef_request_free(&req);

    /* media_kwargs: carried, and checked again when read back */
    body.len = 0;
    clef_buf_printf(&body, Q "\"media_kwargs\":{\"fps\":0.5,\"size\":"
                    "{\"shortest_edge\":1024,\"longest_edge\":200000},"
                    "\"max_pixels\":70000,\"cap_pixels_per_frame\":true,"
                    "\"max_video_tokens\":99}}");
    ok = plan_of(body.data, 1, &req, &blob, &err) == 0
         && clef_plan_view(&plan, blob.data, blob.len, &err) == 0;
    CHECK(ok && plan.kwargs.set == (CLEF_KW_FPS | CLEF_KW_SIZE
                                    | CLEF_KW_MAX_PIXELS | CLEF_KW_CAP
                                    | CLEF_KW_VIDEO_TOKENS)
          && plan.kwargs.fps == 0.5 && plan.kwargs.size_shortest == 1024
          && plan.kwargs.size_longest == 200000
          && plan.kwargs.max_pixels == 70000
          && plan.kwargs.cap_pixels_per_frame == 1
          && plan.kwargs.max_video_tokens == 99, "media_kwargs read back");
    if (ok) {
        clef_plan_free(&plan);
        b = (uint8_t *) blob.data;
        memset(b + blob.len - KW + 4, 0, 8);            /* fps 0 */
        CHECK(clef_plan_view(&plan, blob.data, blob.len, &err) == -1
              && strcmp(err.type, "plan_invalid") == 0,
              "a media_kwargs fps out of bounds in a blob: refused");
        clef_request_free(&req);
    }

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
        b[blob.len - KW - 2 * HEAD] = CLEF_MEDIA_VIDEO;
        b[blob.len - KW - HEAD] = CLEF_MEDIA_IMAGE;
        CHECK(clef_plan_view(&plan, blob.data, blob.len, &err) == -1
              && strcmp(err.type, "plan_invalid") == 0,
              "items out of kind order: refused");
        clef_request_free(&req);
    }

done:
    clef_buf_free(&blob);
    clef_buf_free(&body);
}


/* An item the worker never read (format 0: no bytes) is refused by the
 * engine's path by name, whatever its kind. */
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
          && opts.media == NULL, "prepare: a video nobody read is refused");
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
