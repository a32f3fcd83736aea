/*
 * A request's media_kwargs (see media_kwargs.h).
 */
#include "media/media_kwargs.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    const char  *key;
    unsigned     bit;           /* 0: refused, with why */
    const char  *why;
} kw_key;

#define TAKEN  "this server takes fps, size, min_pixels, max_pixels, " \
               "cap_pixels_per_frame and max_video_tokens; remove it"

static const kw_key  keys[] = {
    { "fps", CLEF_KW_FPS, NULL },
    { "size", CLEF_KW_SIZE, NULL },
    { "min_pixels", CLEF_KW_MIN_PIXELS, NULL },
    { "max_pixels", CLEF_KW_MAX_PIXELS, NULL },
    { "cap_pixels_per_frame", CLEF_KW_CAP, NULL },
    { "max_video_tokens", CLEF_KW_VIDEO_TOKENS, NULL },
    { "min_frames", 0, "the reference's video processor reads it from its "
      "configuration only, so a request's changes nothing; remove it" },
    { "max_frames", 0, "the reference's video processor reads it from its "
      "configuration only, so a request's changes nothing; remove it" },
    { "num_frames", 0, "the reference's video processor refuses it beside "
      "its fps, which is always set; send fps instead" },
    { "patch_size", 0, "it is the vision tower's own; remove it" },
    { "temporal_patch_size", 0, "it is the vision tower's own; remove it" },
    { "merge_size", 0, "it is the vision tower's own; remove it" },
};


/* A JSON integer in [lo, hi] (its text: an integer too long for int64 is
 * out of range anyway). */
static int
int_in(const clef_json *v, int64_t lo, int64_t hi, int64_t *out)
{
    long long  x;
    char      *end;

    if (v->type != CLEF_JSON_INT || v->len > 18) {
        return -1;
    }
    x = strtoll(v->str, &end, 10);
    if (*end != '\0' || x < lo || x > hi) {
        return -1;
    }
    *out = (int64_t) x;
    return 0;
}


static int
number(const clef_json *v, double *out)
{
    if (v->type == CLEF_JSON_FLOAT) {
        *out = v->num;
        return 0;
    }
    if (v->type == CLEF_JSON_INT) {
        *out = strtod(v->str, NULL);
        return 0;
    }
    return -1;
}


/* size: an object of exactly shortest_edge and longest_edge (the
 * reference refuses one without both) */
static int
read_size(const clef_json *v, clef_media_kwargs *kw)
{
    const clef_json  *s = clef_json_get(v, "shortest_edge");
    const clef_json  *l = clef_json_get(v, "longest_edge");

    return v->type == CLEF_JSON_OBJECT && v->len == 2 && s != NULL
           && l != NULL
           && int_in(s, 1, CLEF_KW_PIXELS_LIMIT, &kw->size_shortest) == 0
           && int_in(l, 1, CLEF_KW_PIXELS_LIMIT, &kw->size_longest) == 0
           ? 0 : -1;
}


static const char *
read_value(unsigned bit, const clef_json *v, clef_media_kwargs *kw)
{
    switch (bit) {
    case CLEF_KW_FPS:
        if (number(v, &kw->fps) != 0 || !(kw->fps > 0)
            || kw->fps > CLEF_KW_FPS_LIMIT)
        {
            return "must be a number above 0 and at most 120";
        }
        return NULL;
    case CLEF_KW_SIZE:
        return read_size(v, kw) == 0 ? NULL
            : "must be an object of two integers, shortest_edge and "
              "longest_edge, each from 1 to 16777216";
    case CLEF_KW_MIN_PIXELS:
        return int_in(v, 1, CLEF_KW_PIXELS_LIMIT, &kw->min_pixels) == 0
               ? NULL : "must be an integer from 1 to 16777216";
    case CLEF_KW_MAX_PIXELS:
        return int_in(v, 1, CLEF_KW_PIXELS_LIMIT, &kw->max_pixels) == 0
               ? NULL : "must be an integer from 1 to 16777216";
    case CLEF_KW_CAP:
        if (v->type != CLEF_JSON_TRUE && v->type != CLEF_JSON_FALSE) {
            return "must be true or false";
        }
        kw->cap_pixels_per_frame = v->type == CLEF_JSON_TRUE;
        return NULL;
    default:
        return int_in(v, 1, CLEF_KW_TOKENS_LIMIT, &kw->max_video_tokens)
               == 0 ? NULL : "must be an integer from 1 to 24576";
    }
}


clef_kw_verdict
clef_media_kwargs_read(const clef_json *obj, clef_media_kwargs *kw,
    size_t *bad, const char **why)
{
    const clef_str  *name;
    size_t           i, k;

    memset(kw, 0, sizeof(*kw));
    if (obj == NULL || obj->type != CLEF_JSON_OBJECT) {
        return CLEF_KW_OK;
    }
    for (i = 0; i < obj->len; i++) {
        name = &obj->keys[i];
        *bad = i;
        for (k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
            if (strlen(keys[k].key) == name->len
                && memcmp(keys[k].key, name->s, name->len) == 0)
            {
                break;
            }
        }
        if (k == sizeof(keys) / sizeof(keys[0]) || keys[k].bit == 0) {
            *why = k < sizeof(keys) / sizeof(keys[0]) ? keys[k].why : TAKEN;
            return CLEF_KW_UNSUPPORTED;
        }
        *why = read_value(keys[k].bit, obj->items[i], kw);
        if (*why != NULL) {
            return CLEF_KW_INVALID;
        }
        kw->set |= keys[k].bit;
    }
    return CLEF_KW_OK;
}


void
clef_media_conf_apply_kwargs(clef_media_conf *mc, const clef_media_kwargs *kw)
{
    if (kw->set & CLEF_KW_FPS) {
        CLEF_MC_VIDEO(mc).fps = kw->fps;
    }
    if (kw->set & CLEF_KW_SIZE) {
        CLEF_MC_IMAGE(mc).min_pixels = kw->size_shortest;
        CLEF_MC_IMAGE(mc).max_pixels = kw->size_longest;
        CLEF_MC_VIDEO(mc).min_pixels = kw->size_shortest;
        CLEF_MC_VIDEO(mc).max_pixels = kw->size_longest;
    }
    /* the image processor's older names, over size (images only) */
    if (kw->set & CLEF_KW_MIN_PIXELS) {
        CLEF_MC_IMAGE(mc).min_pixels = kw->min_pixels;
    }
    if (kw->set & CLEF_KW_MAX_PIXELS) {
        CLEF_MC_IMAGE(mc).max_pixels = kw->max_pixels;
    }
    if (kw->set & CLEF_KW_CAP) {
        CLEF_MC_VIDEO(mc).cap_pixels_per_frame = kw->cap_pixels_per_frame;
    }
    if (kw->set & CLEF_KW_VIDEO_TOKENS) {
        CLEF_MC_VIDEO(mc).max_video_tokens = kw->max_video_tokens;
    }
}
