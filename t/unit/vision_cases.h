/*
 * The requests of t/fixtures/vision as the engine receives them, shared by
 * the CPU (test_vision_e2e, test_video_e2e) and CUDA (test_cuda_vision)
 * tests of the vision tower: a case's images read from the corpus and its
 * videos from the clips into data URLs, the request encoded with its media
 * (videos through build/clef-decoder, as the engine decodes them), a batch
 * of records run through a backend with its media.  Include after check.h.
 */
#ifndef CLEF_TEST_VISION_CASES_H
#define CLEF_TEST_VISION_CASES_H

#include <jansson.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "base/buf.h"
#include "model/model.h"
#include "protocol/encode_media.h"
#include "protocol/request.h"
#include "slurp.h"

static void __attribute__((unused))
b64(clef_buf *out, const unsigned char *p, size_t n)
{
    static const char  a[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t    i;
    uint32_t  v;

    for (i = 0; i + 2 < n; i += 3) {
        v = (uint32_t) p[i] << 16 | (uint32_t) p[i + 1] << 8 | p[i + 2];
        clef_buf_printf(out, "%c%c%c%c", a[v >> 18], a[(v >> 12) & 63],
                        a[(v >> 6) & 63], a[v & 63]);
    }
    if (n - i == 1) {
        v = (uint32_t) p[i] << 16;
        clef_buf_printf(out, "%c%c==", a[v >> 18], a[(v >> 12) & 63]);
    } else if (n - i == 2) {
        v = (uint32_t) p[i] << 16 | (uint32_t) p[i + 1] << 8;
        clef_buf_printf(out, "%c%c%c=", a[v >> 18], a[(v >> 12) & 63],
                        a[(v >> 6) & 63]);
    }
}


/* The data URLs of a body's media items, in place: "corpus:NAME" (an
 * image of t/fixtures/images/corpus), "clip:NAME" (a video of
 * t/fixtures/video/clips) or "audio:NAME" / "sound:NAME" (a clip of
 * t/fixtures/audio/clips), typed by the file's extension. */
static void
data_urls(json_t *items)
{
    static const char *const  types[][2] = {
        { "png", "image/png" }, { "jpg", "image/jpeg" },
        { "webp", "image/webp" }, { "mp4", "video/mp4" },
        { "mov", "video/quicktime" }, { "mkv", "video/x-matroska" },
        { "webm", "video/webm" }, { "wav", "audio/wav" },
        { "flac", "audio/flac" }, { "mp3", "audio/mpeg" },
        { "ogg", "audio/ogg" }, { "opus", "audio/ogg" },
        { "m4a", "audio/mp4" }, { "mka", "audio/webm" },
        { "weba", "audio/webm" },
    };
    json_t                   *v;
    clef_buf                  url = { NULL, 0, 0 };
    const char               *ref, *name, *ext, *type, *dir;
    char                      path[1024], *bytes;
    size_t                    i, k, len;

    json_array_foreach(items, i, v) {
        ref = json_string_value(v);
        name = strchr(ref, ':') + 1;
        ext = strrchr(name, '.') + 1;
        type = "";
        for (k = 0; k < sizeof(types) / sizeof(types[0]); k++) {
            type = strcmp(types[k][0], ext) == 0 ? types[k][1] : type;
        }
        dir = strncmp(ref, "audio:", 6) == 0
              || strncmp(ref, "sound:", 6) == 0 ? "audio/clips"
              : strncmp(ref, "clip:", 5) == 0 ? "video/clips"
              : "images/corpus";
        snprintf(path, sizeof(path), "%s/%s/%s", check_fixtures(), dir, name);
        bytes = slurp(path, &len);
        url.len = 0;
        clef_buf_printf(&url, "data:%s;base64,", type);
        if (bytes != NULL) {
            b64(&url, (unsigned char *) bytes, len);
        }
        json_array_set_new(items, i, json_string(url.data));
        free(bytes);
    }
    clef_buf_free(&url);
}


/* A case's body as a client sends it (its media as data URLs), compact
 * JSON text to free. */
static char * __attribute__((unused))
body_of(json_t *c)
{
    json_t  *body = json_deep_copy(json_object_get(c, "body"));
    char    *text;

    data_urls(json_object_get(body, "images"));
    data_urls(json_object_get(body, "audio"));
    data_urls(json_object_get(body, "videos"));
    text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    return text;
}


/* The engine runs the decode process from beside its library; a test
 * binary is elsewhere, so it names build/clef-decoder (tests run from the
 * repository's root). */
static void __attribute__((unused))
use_build_decoder(void)
{
    char  path[4096];

    if (getenv("CLEF_DECODER") == NULL
        && realpath("build/clef-decoder", path) != NULL)
    {
        setenv("CLEF_DECODER", path, 1);
    }
}


/* A request body encoded with its media, as the engine does. */
static int __attribute__((unused))
encode_body(const clef_model *m, const char *body, const clef_encode_opts *eo,
    clef_record *rec)
{
    clef_request      req;
    clef_error        err;
    int               rc;

    /* images go through the decode process too */
    use_build_decoder();
    memset(&err, 0, sizeof(err));
    rc = clef_request_parse(&req, body, strlen(body), NULL, &err);
    if (rc == 0) {
        rc = clef_request_check_media(&req, CLEF_MEDIA_BIT(CLEF_MEDIA_IMAGE)
                                      | CLEF_MEDIA_BIT(CLEF_MEDIA_VIDEO), &err);
        if (rc == 0) {
            rc = clef_encode_with_media(m, &req, eo, rec, &err);
        }
        clef_request_free(&req);
    }
    if (rc != 0) {
        printf("#   %s\n", err.message);
    }
    return rc;
}

static int __attribute__((unused))
encode_case(const clef_model *m, json_t *c, clef_record *rec)
{
    clef_encode_opts  eo;
    char             *body = body_of(c);
    int               rc;

    clef_encode_opts_default(&eo);
    rc = encode_body(m, body, &eo, rec);
    free(body);
    return rc;
}


static int __attribute__((unused))
forward(const clef_backend_ops *ops, clef_backend *b,
    const clef_record *const *recs, int n, float *lg)
{
    clef_batch  batch;
    clef_error  err;
    int32_t     cu[64];
    int         rc;

    memset(&err, 0, sizeof(err));
    clef_batch_init(&batch, recs, n, cu);
    rc = clef_batch_set_media(&batch, &err);
    if (rc == 0) {
        rc = ops->forward(b, &batch, lg, &err);
        clef_batch_free_media(&batch);
    }
    if (rc != 0) {
        printf("#   %s forward: %s\n", ops->name, err.message);
    }
    return rc;
}

#endif
