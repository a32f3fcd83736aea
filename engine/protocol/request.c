/*
 * System One request: parse, validate, build the options of every question
 * in the reference encoder's order (question_options of the reference).
 *
 * Refusals, first match wins.  The 422 checks (the body's shape, as
 * pydantic would report it) all run before the 400 checks (the limits), as
 * in a FastAPI server where the schema is validated before the handler runs.
 * loc is JSON array text; 400 errors have loc "" and are answered as
 * {"detail": "<message>"}.
 *
 *  status type                  loc                                 message
 *  422    json_invalid          (from clef_json_parse, unchanged)
 *  422    dict_type             ["body"]                            Input should be a valid dictionary
 *  422    missing               ["body","model"]                    Field required
 *  422    string_type           ["body","model"]                    Input should be a valid string
 *  422    missing               ["body","state"]                    Field required
 *  422    missing               ["body","questions"]                Field required
 *  422    dict_type             ["body","questions"]                Input should be a valid dictionary
 *  422    list_type             ["body","images"]                   Input should be a valid list
 *  422    list_type             ["body","videos"], ["body","audio"] Input should be a valid list
 *  422    dict_type             ["body","media_kwargs"]             Input should be a valid dictionary
 *  422    dict_type             ["body","questions",ID]             Input should be a valid dictionary
 *  422    union_tag_not_found   ["body","questions",ID]             Unable to extract tag using discriminator 'type'
 *  422    union_tag_invalid     ["body","questions",ID]             Input tag 'T' found using 'type' does not match
 *                                                                   any of the expected tags: 'noul', 'choice', 'score'
 *  422    dict_type             ["body","questions",ID,"criteria"]  Input should be a valid dictionary   (noul, choice)
 *  422    missing               ["body","questions",ID,"criteria"]  Field required                      (choice, score)
 *  422    list_type             ["body","questions",ID,"criteria"]  Input should be a valid list        (score)
 *  422    level_type            ["body","questions",ID,"criteria",I]
 *                                                                   Score levels must be strings, objects or arrays
 *  400    too_few_questions     ""   Too few questions. Must have at least 1 question.
 *  400    too_many_questions    ""   Too many questions. Must have at most 64 questions.
 *  400    invalid_question_id   ""   Invalid question id 'ID': must be 1 to 100 characters of A-Z a-z 0-9 _ . -
 *  400    too_few_choices       ""   Too few choices. Must have at least 2 choices.
 *  400    too_many_choices      ""   Too many choices. Must have at most 255 choices.
 *  400    too_few_score_levels  ""   Too few score levels. Must have at least 1 level.
 *  400    too_many_score_levels ""   Too many score levels. Must have at most 10 levels.
 *  400    too_many_images       ""   Too many images. Must have at most 4 images.
 *                                    (each media kind this server reads:
 *                                    media/kinds.c)
 * (the numbers come from clef_limits; "question"/"choice"/"level"/"image"
 * take an "s" unless the number is 1)
 *
 * A score level must be a string, an object or an array: the official
 * Python SDK's strict response model cannot hold any other legend entry,
 * so a null (or a number) there would make the answer unreadable.
 *
 * Echoed ids and tags are cut at ECHO_MAX bytes (on a character boundary,
 * then "...") and their control characters written as \u00XX, so that a
 * hostile id cannot fill the error or the log with garbage.
 */
#include "protocol/request.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/render.h"

#define ECHO_MAX  96

#define MSG_DICT     "Input should be a valid dictionary"
#define MSG_LIST     "Input should be a valid list"
#define MSG_STRING   "Input should be a valid string"
#define MSG_MISSING  "Field required"

#define DESC_TRUE   "The proposition is true or the answer is yes."
#define DESC_FALSE  "The proposition is false or the answer is no."

static const clef_json  noul_true_default = {
    .type = CLEF_JSON_STRING, .len = sizeof(DESC_TRUE) - 1, .str = DESC_TRUE
};
static const clef_json  noul_false_default = {
    .type = CLEF_JSON_STRING, .len = sizeof(DESC_FALSE) - 1, .str = DESC_FALSE
};


void
clef_limits_default(clef_limits *lim)
{
    int  k;

    lim->max_questions = 64;
    lim->max_choices = 255;
    lim->min_choices = 2;
    lim->max_score_levels = 10;
    lim->min_score_levels = 1;
    lim->max_id_len = 100;
    for (k = 0; k < CLEF_MEDIA_KINDS; k++) {
        clef_media_limits_default((clef_media_kind) k, &lim->media[k]);
    }
}


/*
 * Writes s into dst (at most cap - 1 bytes plus a NUL), escaping '"' and
 * '\\' when json is set and control bytes always; text longer than max
 * bytes, or than what fits, is cut on a character boundary and ends in
 * "...".  The input is valid UTF-8 (the parser saw to it).
 */
static size_t
echo(char *dst, size_t cap, const char *s, size_t len, int json, size_t max)
{
    size_t          i, n, w, clen;
    unsigned char   c;
    char            tmp[8];

    n = 0;
    if (max > cap - 1) {
        max = cap - 1;
    }
    /* room for the "..." mark if we have to cut */
    max = max > 3 ? max - 3 : 0;

    for (i = 0; i < len; i += clen) {
        c = (unsigned char) s[i];
        clen = c < 0x80 ? 1 : c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
        if (clen > len - i) {
            clen = len - i;
        }

        if (c < 0x20 || c == 0x7f) {
            w = (size_t) snprintf(tmp, sizeof(tmp), "\\u%04x", c);
        } else if (json && (c == '"' || c == '\\')) {
            tmp[0] = '\\';
            tmp[1] = (char) c;
            w = 2;
        } else {
            w = 0;
        }

        if (n + (w ? w : clen) > max) {
            memcpy(dst + n, "...", 3);
            n += 3;
            break;
        }
        if (w) {
            memcpy(dst + n, tmp, w);
            n += w;
        } else {
            memcpy(dst + n, s + i, clen);
            n += clen;
        }
    }

    dst[n] = '\0';
    return n;
}


/* loc of a question: ["body","questions",ID(,"criteria"(,index))] */
static void
question_loc(char *loc, size_t cap, const clef_str *id, int criteria,
    int index)
{
    size_t  n;

    n = (size_t) snprintf(loc, cap, "[\"body\",\"questions\",\"");
    n += echo(loc + n, cap - n, id->s, id->len, 1, 200);
    n += (size_t) snprintf(loc + n, cap - n, "\"%s", criteria ? ",\"criteria\"" : "");
    if (index >= 0) {
        n += (size_t) snprintf(loc + n, cap - n, ",%d", index);
    }
    snprintf(loc + n, cap - n, "]");
}


/* str(tag) in Python terms, for the union_tag_invalid message. */
static void
tag_text(char *dst, size_t cap, const clef_json *tag)
{
    clef_buf  b = { 0 };

    switch (tag->type) {
    case CLEF_JSON_STRING:
        echo(dst, cap, tag->str, tag->len, 0, ECHO_MAX);
        return;
    case CLEF_JSON_NULL:
        snprintf(dst, cap, "None");
        return;
    case CLEF_JSON_TRUE:
        snprintf(dst, cap, "True");
        return;
    case CLEF_JSON_FALSE:
        snprintf(dst, cap, "False");
        return;
    default:
        break;
    }

    if (clef_render_json(&b, tag) == 0 && b.data != NULL) {
        echo(dst, cap, b.data, b.len, 0, ECHO_MAX);
    } else {
        snprintf(dst, cap, "%s", clef_json_type_name(tag));
    }
    clef_buf_free(&b);
}


static const char *
plural(int n)
{
    return n == 1 ? "" : "s";
}


/* ---- pass 1: the body's shape (422) -------------------------------- */

static int
check_question_shape(const clef_str *id, const clef_json *q, clef_error *err)
{
    const clef_json  *type, *criteria;
    char              loc[512], tag[128];
    size_t            i;

    if (q->type != CLEF_JSON_OBJECT) {
        question_loc(loc, sizeof(loc), id, 0, -1);
        return clef_error_set(err, 422, "dict_type", loc, MSG_DICT);
    }

    type = clef_json_get(q, "type");
    if (type == NULL) {
        question_loc(loc, sizeof(loc), id, 0, -1);
        return clef_error_set(err, 422, "union_tag_not_found", loc,
            "Unable to extract tag using discriminator 'type'");
    }

    if (type->type != CLEF_JSON_STRING
        || (strcmp(type->str, "noul") != 0 && strcmp(type->str, "choice") != 0
            && strcmp(type->str, "score") != 0)
        || strlen(type->str) != type->len)
    {
        question_loc(loc, sizeof(loc), id, 0, -1);
        tag_text(tag, sizeof(tag), type);
        return clef_error_set(err, 422, "union_tag_invalid", loc,
            "Input tag '%s' found using 'type' does not match any of the "
            "expected tags: 'noul', 'choice', 'score'", tag);
    }

    criteria = clef_json_get(q, "criteria");
    if (criteria != NULL && criteria->type == CLEF_JSON_NULL) {
        criteria = NULL;
    }

    if (type->str[0] == 'n') {
        if (criteria != NULL && criteria->type != CLEF_JSON_OBJECT) {
            question_loc(loc, sizeof(loc), id, 1, -1);
            return clef_error_set(err, 422, "dict_type", loc, MSG_DICT);
        }
        return 0;
    }

    if (criteria == NULL) {
        question_loc(loc, sizeof(loc), id, 1, -1);
        return clef_error_set(err, 422, "missing", loc, MSG_MISSING);
    }

    if (type->str[0] == 'c') {
        if (criteria->type != CLEF_JSON_OBJECT) {
            question_loc(loc, sizeof(loc), id, 1, -1);
            return clef_error_set(err, 422, "dict_type", loc, MSG_DICT);
        }
        return 0;
    }

    if (criteria->type != CLEF_JSON_ARRAY) {
        question_loc(loc, sizeof(loc), id, 1, -1);
        return clef_error_set(err, 422, "list_type", loc, MSG_LIST);
    }

    for (i = 0; i < criteria->len; i++) {
        switch (criteria->items[i]->type) {
        case CLEF_JSON_STRING:
        case CLEF_JSON_OBJECT:
        case CLEF_JSON_ARRAY:
            break;
        default:
            question_loc(loc, sizeof(loc), id, 1, (int) i);
            return clef_error_set(err, 422, "level_type", loc,
                "Score levels must be strings, objects or arrays");
        }
    }

    return 0;
}


static int
check_shape(const clef_json *root, clef_error *err)
{
    const clef_json  *v, *questions;
    const char       *field;
    char              loc[64];
    size_t            i;
    int               k;

    if (root->type != CLEF_JSON_OBJECT) {
        return clef_error_set(err, 422, "dict_type", "[\"body\"]", MSG_DICT);
    }

    v = clef_json_get(root, "model");
    if (v == NULL) {
        return clef_error_set(err, 422, "missing", "[\"body\",\"model\"]",
            MSG_MISSING);
    }
    if (v->type != CLEF_JSON_STRING) {
        return clef_error_set(err, 422, "string_type", "[\"body\",\"model\"]",
            MSG_STRING);
    }

    if (clef_json_get(root, "state") == NULL) {
        return clef_error_set(err, 422, "missing", "[\"body\",\"state\"]",
            MSG_MISSING);
    }

    questions = clef_json_get(root, "questions");
    if (questions == NULL) {
        return clef_error_set(err, 422, "missing", "[\"body\",\"questions\"]",
            MSG_MISSING);
    }
    if (questions->type != CLEF_JSON_OBJECT) {
        return clef_error_set(err, 422, "dict_type", "[\"body\",\"questions\"]",
            MSG_DICT);
    }

    for (k = 1; k < CLEF_MEDIA_KINDS; k++) {
        field = clef_media_kind_of(k)->field;
        v = clef_json_get(root, field);
        if (v != NULL && v->type != CLEF_JSON_NULL
            && v->type != CLEF_JSON_ARRAY)
        {
            snprintf(loc, sizeof(loc), "[\"body\",\"%s\"]", field);
            return clef_error_set(err, 422, "list_type", loc, MSG_LIST);
        }
    }

    /* the reference passes it to its processor as keyword arguments */
    v = clef_json_get(root, "media_kwargs");
    if (v != NULL && v->type != CLEF_JSON_NULL && v->type != CLEF_JSON_OBJECT) {
        return clef_error_set(err, 422, "dict_type",
            "[\"body\",\"media_kwargs\"]", MSG_DICT);
    }

    for (i = 0; i < questions->len; i++) {
        if (check_question_shape(&questions->keys[i], questions->items[i], err)
            != 0)
        {
            return -1;
        }
    }

    return 0;
}


/* ---- pass 2: the limits (400) -------------------------------------- */

static int
id_valid(const clef_str *id, int max_len)
{
    size_t         i;
    unsigned char  c;

    if (id->len == 0 || id->len > (size_t) max_len) {
        return 0;
    }
    for (i = 0; i < id->len; i++) {
        c = (unsigned char) id->s[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z')
              || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-'))
        {
            return 0;
        }
    }
    return 1;
}


static int
check_limits(const clef_json *root, const clef_limits *lim, clef_error *err)
{
    const clef_media_kind_info  *kind;
    const clef_json             *questions, *q, *criteria, *items;
    const clef_str              *id;
    char                         echoed[ECHO_MAX + 8];
    size_t                       i, n;
    int                          k, max;

    questions = clef_json_get(root, "questions");

    if (questions->len < 1) {
        return clef_error_set(err, 400, "too_few_questions", "",
            "Too few questions. Must have at least 1 question.");
    }
    if (questions->len > (size_t) lim->max_questions) {
        return clef_error_set(err, 400, "too_many_questions", "",
            "Too many questions. Must have at most %d question%s.",
            lim->max_questions, plural(lim->max_questions));
    }

    for (i = 0; i < questions->len; i++) {
        id = &questions->keys[i];
        q = questions->items[i];

        if (!id_valid(id, lim->max_id_len)) {
            echo(echoed, sizeof(echoed), id->s, id->len, 0, ECHO_MAX);
            return clef_error_set(err, 400, "invalid_question_id", "",
                "Invalid question id '%s': must be 1 to %d characters of "
                "A-Z a-z 0-9 _ . -", echoed, lim->max_id_len);
        }

        criteria = clef_json_get(q, "criteria");
        n = criteria != NULL ? criteria->len : 0;

        switch (clef_json_get(q, "type")->str[0]) {
        case 'c':
            if (n < (size_t) lim->min_choices) {
                return clef_error_set(err, 400, "too_few_choices", "",
                    "Too few choices. Must have at least %d choice%s.",
                    lim->min_choices, plural(lim->min_choices));
            }
            if (n > (size_t) lim->max_choices) {
                return clef_error_set(err, 400, "too_many_choices", "",
                    "Too many choices. Must have at most %d choice%s.",
                    lim->max_choices, plural(lim->max_choices));
            }
            break;
        case 's':
            if (n < (size_t) lim->min_score_levels) {
                return clef_error_set(err, 400, "too_few_score_levels", "",
                    "Too few score levels. Must have at least %d level%s.",
                    lim->min_score_levels, plural(lim->min_score_levels));
            }
            if (n > (size_t) lim->max_score_levels) {
                return clef_error_set(err, 400, "too_many_score_levels", "",
                    "Too many score levels. Must have at most %d level%s.",
                    lim->max_score_levels, plural(lim->max_score_levels));
            }
            break;
        default:
            break;
        }
    }

    /* a kind this server does not read yet is refused as such, whatever
     * its count (clef_request_check_media) */
    for (k = 1; k < CLEF_MEDIA_KINDS; k++) {
        kind = clef_media_kind_of(k);
        items = clef_json_get(root, kind->field);
        max = lim->media[k].max_items;
        if (kind->read != NULL && items != NULL
            && items->type == CLEF_JSON_ARRAY && items->len > (size_t) max)
        {
            return clef_error_set(err, 400, kind->too_many, "",
                "Too many %s. Must have at most %d %s.", kind->many, max,
                max == 1 ? kind->one : kind->many);
        }
    }

    return 0;
}


/* ---- building ------------------------------------------------------ */

/* Code-point order of UTF-8 strings is their byte order. */
static int
str_cmp(const clef_str *a, const clef_str *b)
{
    size_t  n = a->len < b->len ? a->len : b->len;
    int     c = n ? memcmp(a->s, b->s, n) : 0;

    if (c != 0) {
        return c;
    }
    return a->len < b->len ? -1 : a->len > b->len;
}


static int
option_cmp(const void *a, const void *b)
{
    return str_cmp(&((const clef_option *) a)->id,
                   &((const clef_option *) b)->id);
}


static int
build_question(clef_arena *a, clef_question *q, const clef_str *id,
    const clef_json *obj)
{
    const clef_json  *type, *crit, *d;
    clef_option      *o;
    char              num[24];
    int               i, n;

    type = clef_json_get(obj, "type");
    q->id = *id;
    q->type = type->str[0] == 'n' ? CLEF_QTYPE_NOUL
            : type->str[0] == 'c' ? CLEF_QTYPE_CHOICE : CLEF_QTYPE_SCORE;

    q->instructions = clef_json_get(obj, "instructions");
    if (q->instructions != NULL && q->instructions->type == CLEF_JSON_NULL) {
        q->instructions = NULL;
    }

    crit = clef_json_get(obj, "criteria");
    if (crit != NULL && crit->type == CLEF_JSON_NULL) {
        crit = NULL;
    }
    q->criteria = crit;

    n = q->type == CLEF_QTYPE_NOUL ? 2 : (int) crit->len;
    o = clef_arena_calloc(a, sizeof(clef_option) * (size_t) n);
    if (o == NULL) {
        return -1;
    }
    q->options = o;
    q->n_options = n;

    switch (q->type) {

    case CLEF_QTYPE_NOUL:
        /* the defaults, overridden by criteria; an explicit null leaves
         * the description out */
        o[0].id = (clef_str) { "true", 4 };
        o[1].id = (clef_str) { "false", 5 };
        o[0].description = &noul_true_default;
        o[1].description = &noul_false_default;
        for (i = 0; i < 2; i++) {
            o[i].request_index = i;
            d = crit != NULL ? clef_json_get(crit, o[i].id.s) : NULL;
            if (d != NULL) {
                o[i].description = d->type == CLEF_JSON_NULL ? NULL : d;
            }
        }
        break;

    case CLEF_QTYPE_CHOICE:
        for (i = 0; i < n; i++) {
            o[i].id = crit->keys[i];
            d = crit->items[i];
            o[i].description = d->type == CLEF_JSON_NULL ? NULL : d;
            o[i].request_index = i;
        }
        qsort(o, (size_t) n, sizeof(clef_option), option_cmp);
        break;

    case CLEF_QTYPE_SCORE:
        for (i = 0; i < n; i++) {
            snprintf(num, sizeof(num), "%d", i);
            o[i].id.len = strlen(num);
            o[i].id.s = clef_arena_strndup(a, num, o[i].id.len);
            if (o[i].id.s == NULL) {
                return -1;
            }
            o[i].description = crit->items[i];
            o[i].request_index = i;
        }
        break;
    }

    return 0;
}


int
clef_request_parse(clef_request *req, const char *body, size_t len,
    const clef_limits *lim, clef_error *err)
{
    clef_limits       defaults;
    const clef_json  *questions, *v;
    size_t            i;
    int               k;

    if (lim == NULL) {
        clef_limits_default(&defaults);
        lim = &defaults;
    }

    memset(req, 0, sizeof(*req));
    clef_arena_init(&req->arena, 64 * 1024);

    req->root = clef_json_parse(&req->arena, body, len, err);
    if (req->root == NULL) {
        goto failed;
    }

    if (check_shape(req->root, err) != 0 || check_limits(req->root, lim, err) != 0) {
        goto failed;
    }

    v = clef_json_get(req->root, "model");
    req->model = (clef_str) { v->str, v->len };
    req->state = clef_json_get(req->root, "state");

    for (k = 1; k < CLEF_MEDIA_KINDS; k++) {
        req->media[k].limits = lim->media[k];
        v = clef_json_get(req->root, clef_media_kind_of(k)->field);
        if (v != NULL && v->type == CLEF_JSON_ARRAY) {
            req->media[k].items = v;
            req->media[k].n = (int) v->len;
        }
    }

    questions = clef_json_get(req->root, "questions");
    req->questions = clef_arena_calloc(&req->arena,
        sizeof(clef_question) * questions->len);
    if (req->questions == NULL) {
        goto nomem;
    }
    req->n_questions = (int) questions->len;

    for (i = 0; i < questions->len; i++) {
        if (build_question(&req->arena, &req->questions[i], &questions->keys[i],
                questions->items[i]) != 0)
        {
            goto nomem;
        }
    }

    return 0;

nomem:
    clef_error_set(err, 500, "internal_error", "", "Out of memory.");

failed:
    clef_request_free(req);
    return -1;
}


/*
 * An array of a kind the model does not take, or that this server does
 * not read yet (audio), refused by name, never answered as if it were not
 * there; then "media_kwargs", read into req->kwargs.
 */
static int
check_unserved(clef_request *req, unsigned accepts, clef_error *err)
{
    const clef_media_kind_info  *kind;
    const clef_json             *v;
    clef_kw_verdict              verdict;
    const char                  *why = NULL;
    char                         loc[ECHO_MAX + 64], key[ECHO_MAX + 8];
    char                         words[128];
    size_t                       n, bad = 0;
    int                          k;

    clef_media_accepted_words(accepts, words, sizeof(words));
    for (k = 1; k < CLEF_MEDIA_KINDS; k++) {
        kind = clef_media_kind_of(k);
        if (req->media[k].n == 0
            || (kind->read != NULL && (accepts & CLEF_MEDIA_BIT(k))))
        {
            continue;
        }
        snprintf(loc, sizeof(loc), "[\"body\",\"%s\"]", kind->field);
        if (kind->read == NULL) {
            return clef_error_set(err, 400, kind->unsupported, loc,
                "This server does not take %s yet (%d given): remove "
                "\"%s\"; %s are supported.", kind->many, req->media[k].n,
                kind->field, words);
        }
        return clef_error_set(err, 400, kind->unsupported, loc,
            "This model does not accept %s (%d given): remove \"%s\"; %s "
            "are supported.", kind->many, req->media[k].n, kind->field,
            words);
    }

    /* the reference's processor arguments: those that change its output,
     * within bounds; every other key by name (media/media_kwargs.h) */
    v = clef_json_get(req->root, "media_kwargs");
    verdict = clef_media_kwargs_read(v, &req->kwargs, &bad, &why);
    if (verdict != CLEF_KW_OK) {
        n = (size_t) snprintf(loc, sizeof(loc),
                              "[\"body\",\"media_kwargs\",\"");
        n += echo(loc + n, sizeof(loc) - n, v->keys[bad].s, v->keys[bad].len,
                  1, ECHO_MAX);
        snprintf(loc + n, sizeof(loc) - n, "\"]");
        echo(key, sizeof(key), v->keys[bad].s, v->keys[bad].len, 0, ECHO_MAX);
        if (verdict == CLEF_KW_UNSUPPORTED) {
            return clef_error_set(err, 400, "media_kwargs_unsupported", loc,
                "The media_kwargs key \"%s\" is not supported: %s.", key,
                why);
        }
        return clef_error_set(err, 400, "media_kwargs_invalid", loc,
            "The media_kwargs key \"%s\" %s.", key, why);
    }
    return 0;
}


/* OpenRouter's and OpenAI's media parts in a state array (kinds.h): the
 * state is read as text or JSON, so they would reach the model as their
 * base64 */
static int
check_state_parts(const clef_request *req, unsigned accepts, clef_error *err)
{
    const clef_media_kind_info  *kind;
    const clef_json             *part, *type;
    const char                  *name;
    char                         loc[64], hint[96];
    size_t                       i, j;
    int                          k;

    if (req->state == NULL || req->state->type != CLEF_JSON_ARRAY) {
        return 0;
    }
    for (i = 0; i < req->state->len; i++) {
        part = req->state->items[i];
        type = part->type == CLEF_JSON_OBJECT ? clef_json_get(part, "type")
                                              : NULL;
        if (type == NULL || type->type != CLEF_JSON_STRING) {
            continue;
        }
        for (k = 1; k < CLEF_MEDIA_KINDS; k++) {
            kind = clef_media_kind_of(k);
            for (j = 0; (name = kind->parts[j]) != NULL; j++) {
                if (type->len != strlen(name)
                    || memcmp(type->str, name, type->len) != 0)
                {
                    continue;
                }
                hint[0] = '\0';
                if (kind->read != NULL && (accepts & CLEF_MEDIA_BIT(k))) {
                    snprintf(hint, sizeof(hint), ": send %s in a top-level "
                             "\"%s\" array", kind->many, kind->field);
                }
                snprintf(loc, sizeof(loc), "[\"body\",\"state\",%zu]", i);
                return clef_error_set(err, 400, kind->unsupported, loc,
                    "%s parts in the state (state[%zu] has type \"%s\") are "
                    "not supported%s; this server reads the state as text "
                    "or JSON.", kind->noun, i, type->str, hint);
            }
        }
    }
    return 0;
}


int
clef_request_check_media(clef_request *req, unsigned accepts,
    clef_error *err)
{
    const clef_media_kind_info  *kind;
    const clef_json             *assets;
    int                          k;

    assets = clef_json_get(req->root, "assets");
    if (assets != NULL && assets->type != CLEF_JSON_NULL
        && !(assets->type == CLEF_JSON_OBJECT && assets->len == 0))
    {
        return clef_error_set(err, 400, "assets_unsupported",
            "[\"body\",\"assets\"]",
            "\"assets\" (images uploaded as multipart parts and referenced "
            "from the request) are not supported by this server; send "
            "application/json with a text or JSON state%s.",
            accepts & CLEF_MEDIA_BIT(CLEF_MEDIA_IMAGE)
            ? " and images in a top-level \"images\" array of data URLs"
            : "");
    }

    if (check_unserved(req, accepts, err) != 0
        || check_state_parts(req, accepts, err) != 0)
    {
        return -1;
    }

    for (k = 1; k < CLEF_MEDIA_KINDS; k++) {
        kind = clef_media_kind_of(k);
        if (req->media[k].n > 0 && req->media[k].inputs == NULL
            && kind->read(&req->arena, req->media[k].items,
                          &req->media[k].limits, &req->media[k].inputs, err)
               != 0)
        {
            return -1;
        }
    }
    return 0;
}


int
clef_request_media_count(const clef_request *req)
{
    int  k, n = 0;

    for (k = 1; k < CLEF_MEDIA_KINDS; k++) {
        n += req->media[k].n;
    }
    return n;
}


void
clef_request_free(clef_request *req)
{
    clef_arena_free(&req->arena);
    memset(req, 0, sizeof(*req));
}


int
clef_question_option_by_request_index(const clef_question *q, int i)
{
    const clef_str  *key;
    int              lo, hi, mid, c;

    if (i < 0 || i >= q->n_options) {
        return -1;
    }
    if (q->type != CLEF_QTYPE_CHOICE) {
        return i;
    }

    /* the options are sorted by label: binary search the i-th key */
    key = &q->criteria->keys[i];
    lo = 0;
    hi = q->n_options - 1;
    while (lo <= hi) {
        mid = lo + (hi - lo) / 2;
        c = str_cmp(key, &q->options[mid].id);
        if (c == 0) {
            return mid;
        }
        if (c < 0) {
            hi = mid - 1;
        } else {
            lo = mid + 1;
        }
    }
    return -1;
}
