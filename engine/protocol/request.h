/*
 * A System One request (docs/spec/protocol.md §2) parsed and validated
 * into typed structures.  Everything points into the request's arena.
 *
 * Errors, as data (clef_error), with the status the server answers with:
 *   422 json_invalid        body is not acceptable JSON (see json.h)
 *   422 missing             a required field is absent: loc names it,
 *                           msg "Field required"
 *   422 <type>_type         a field has the wrong JSON type (pydantic-style
 *                           "string_type", "dict_type", "list_type", ...)
 *   422 union_tag_invalid   a question type other than noul/choice/score
 *   422 list_type           "images", "videos" or "audio" not a list;
 *       dict_type           "media_kwargs" not an object
 *   400 (string detail)     limits: question count, id syntax, choice and
 *                           score sizes, media counts, with the protocol's
 *                           exact messages where one exists, e.g.
 *                           "Too many choices. Must have at most 255 choices."
 */
#ifndef CLEF_REQUEST_H
#define CLEF_REQUEST_H

#include <stddef.h>

#include "base/arena.h"
#include "base/error.h"
#include "media/kinds.h"
#include "media/media.h"
#include "media/media_kwargs.h"
#include "text/json.h"

typedef enum {
    CLEF_QTYPE_NOUL = 0,     /* the ids are type_embedding rows */
    CLEF_QTYPE_CHOICE = 1,
    CLEF_QTYPE_SCORE = 2
} clef_qtype;

typedef struct {
    int  max_questions;      /* default 64 */
    int  max_choices;        /* default 255 */
    int  min_choices;        /* default 2 */
    int  max_score_levels;   /* default 10 */
    int  min_score_levels;   /* default 1 */
    int  max_id_len;         /* default 100 */
    /* per media kind, its row's defaults (media/kinds.c): images 4 a
     * request, 4 MiB of base64 each, 8 MiB decoded in all, 16 Mi pixels
     * each (image_input.h) */
    clef_media_limits  media[CLEF_MEDIA_KINDS];
} clef_limits;

void clef_limits_default(clef_limits *lim);

typedef struct {
    clef_str          id;            /* "true"/"false", the choice label, "0".."n-1" */
    const clef_json  *description;   /* NULL: the key is left out of the option JSON */
    int               request_index; /* position in the request's criteria order */
} clef_option;

typedef struct {
    clef_str          id;
    clef_qtype        type;
    const clef_json  *instructions;  /* NULL when missing or null */
    const clef_json  *criteria;      /* NULL when missing or null (noul only) */
    clef_option      *options;       /* encoder order (choice: sorted by label) */
    int               n_options;
} clef_question;

typedef struct {
    clef_arena        arena;         /* owns everything below */
    const clef_json  *root;
    clef_str          model;
    const clef_json  *state;
    clef_question    *questions;     /* request (insertion) order */
    int               n_questions;
    /* per media kind (media/kinds.h): the request's array ("images"), or
     * NULL, and its length; the limits from the clef_limits parsed with;
     * [n] inputs once read by clef_request_check_media(), else NULL */
    struct {
        const clef_json    *items;
        int                 n;
        clef_media_limits   limits;
        clef_media_input   *inputs;
    }                 media[CLEF_MEDIA_KINDS];
    clef_media_kwargs  kwargs;       /* "media_kwargs", once read by
                                        clef_request_check_media() */
} clef_request;

/* Items of every kind. */
int  clef_request_media_count(const clef_request *req);

/* Parses and validates body.  On success returns 0 and req owns its arena;
 * on refusal returns -1 with err filled (req is freed already).  lim may be
 * NULL for the defaults. */
int  clef_request_parse(clef_request *req, const char *body, size_t len,
    const clef_limits *lim, clef_error *err);
void clef_request_free(clef_request *req);

/* Refuses, with a precise 400, media the serving model cannot take;
 * accepts: the kinds it takes (CLEF_MEDIA_BIT, clef_media_conf.accepts;
 * 1 is images):
 *   assets_unsupported  an "assets" map (TypeSafe's experimental
 *                       multipart images); loc ["body","assets"]
 *   images_unsupported  a non-empty array of a kind ("images", "videos",
 *   videos_unsupported  "audio") the model does not take, or that this
 *   audio_unsupported   server does not read yet (videos, audio); loc
 *                       ["body",FIELD]
 *   media_kwargs_unsupported
 *                       a "media_kwargs" key other than those that change
 *                       the reference's processors, naming it; loc
 *                       ["body","media_kwargs",KEY] (media/media_kwargs.h)
 *   media_kwargs_invalid
 *                       one of those whose value has the wrong type or is
 *                       out of its bounds
 *   images_unsupported  OpenRouter-style {"type": "image_url"} parts in a
 *   videos_unsupported  state array ("input_image" too; "video_url",
 *   audio_unsupported   "input_audio"); loc ["body","state",I]
 *   (accepted)          every item read by its kind's reader (kinds.h;
 *                       images: clef_image_inputs_read(), wire form,
 *                       limits, base64, format and header); its refusals
 *                       name the item, and req->media[kind].inputs holds
 *                       the decoded bytes
 * so that no request is answered as if its media were not there. */
int  clef_request_check_media(clef_request *req, unsigned accepts,
    clef_error *err);

/* Encoder-order option index of the request-order criteria entry i. */
int  clef_question_option_by_request_index(const clef_question *q, int i);

#endif
