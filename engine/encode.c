/*
 * The record encoder: encode_record of the reference, piece by piece
 * (spec/clef-encoder-and-head.md §3.3-§3.4).
 *
 * Every piece is tokenized on its own, so a piece that occurs many times
 * ("\n", "OPTION 7: ", "END FIELD\n", ...) has the same ids every time: those
 * are tokenized once per request and copied.  Everything else is linear in
 * the size of the request.
 */
#include "encode.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render.h"

#define PREFIX                                                              \
    "<|im_start|>system\nRead the complete state and schema. Decide every " \
    "field jointly. Each answer must be exactly one of that field's "       \
    "allowed options.<|im_end|>\n<|im_start|>user\nSTATE:\n"
#define SUFFIX                                                              \
    "\n<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"          \
    "JOINT SCHEMA DECISIONS:"
#define SCHEMA_HEAD   "\n\nSCHEMA FIELDS:\n"
#define OPTIONS_HEAD  "\nALLOWED OPTIONS:\n"
#define OPTION_END    "\n"
#define FIELD_END     "END FIELD\n"

static const char *const  qtype_names[] = { "noul", "choice", "score" };

/* A span of a shared id vector: the ids of one repeated piece. */
typedef struct {
    size_t  start;
    size_t  len;
} piece;

typedef struct {
    const clef_tokenizer  *tk;
    clef_buf               text;      /* the piece being built */
    clef_ids               pool;      /* ids of the repeated pieces */
    piece                  options_head;
    piece                  option_end;
    piece                  field_end;
    piece                 *option_label;  /* [k]: "OPTION k: ", k >= 1 */
} encoder;


void
clef_encode_opts_default(clef_encode_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->max_length = CLEF_DEFAULT_MAX_LENGTH;
    o->truncate = CLEF_TRUNCATE_REJECT;
}


static int
tokenize(const encoder *e, const char *s, size_t len, clef_ids *out)
{
    return len ? clef_tokenizer_encode(e->tk, s, len, out) : 0;
}


static int
tokenize_text(const encoder *e, clef_ids *out)
{
    return tokenize(e, e->text.data, e->text.len, out);
}


static int
set_text(encoder *e, const char *s, size_t len)
{
    e->text.len = 0;
    return clef_buf_append(&e->text, s, len);
}


static int
make_piece(encoder *e, const char *s, size_t len, piece *p)
{
    p->start = e->pool.n;
    if (tokenize(e, s, len, &e->pool) != 0) {
        return -1;
    }
    p->len = e->pool.n - p->start;
    return 0;
}


static int
put_piece(const encoder *e, const piece *p, clef_ids *out)
{
    return clef_ids_append(out, e->pool.v + p->start, p->len);
}


static int
make_pieces(encoder *e, int max_options)
{
    char  label[32];
    int   k, n;

    if (make_piece(e, OPTIONS_HEAD, sizeof(OPTIONS_HEAD) - 1, &e->options_head) != 0
        || make_piece(e, OPTION_END, sizeof(OPTION_END) - 1, &e->option_end) != 0
        || make_piece(e, FIELD_END, sizeof(FIELD_END) - 1, &e->field_end) != 0)
    {
        return -1;
    }

    e->option_label = malloc(sizeof(piece) * ((size_t) max_options + 1));
    if (e->option_label == NULL) {
        return -1;
    }
    for (k = 1; k <= max_options; k++) {
        n = snprintf(label, sizeof(label), "OPTION %d: ", k);
        if (make_piece(e, label, (size_t) n, &e->option_label[k]) != 0) {
            return -1;
        }
    }
    return 0;
}


/* render({"option_id": id, "description": d}), d left out when NULL. */
static int
render_option(clef_buf *out, const clef_option *o)
{
    clef_json    obj, id;
    clef_json   *items[2];
    clef_str     keys[2];

    memset(&id, 0, sizeof(id));
    id.type = CLEF_JSON_STRING;
    id.str = o->id.s;
    id.len = o->id.len;

    memset(&obj, 0, sizeof(obj));
    obj.type = CLEF_JSON_OBJECT;
    obj.items = items;
    obj.keys = keys;

    if (o->description != NULL) {
        keys[obj.len] = (clef_str) { "description", 11 };
        items[obj.len++] = (clef_json *) o->description;
    }
    keys[obj.len] = (clef_str) { "option_id", 9 };
    items[obj.len++] = &id;

    return clef_render(out, &obj);
}


/* The schema ids with spans relative to its start. */
static int
encode_schema(encoder *e, const clef_request *req, clef_record *rec,
    clef_ids *schema)
{
    const clef_question  *q;
    const clef_json      *ins;
    clef_span            *os;
    int                   i, k;

    if (set_text(e, SCHEMA_HEAD, sizeof(SCHEMA_HEAD) - 1) != 0
        || tokenize_text(e, schema) != 0)
    {
        return -1;
    }

    os = rec->option_spans;
    for (i = 0; i < req->n_questions; i++) {
        q = &req->questions[i];

        e->text.len = 0;
        if (clef_buf_printf(&e->text, "\nFIELD %d\nID: ", i + 1) != 0
            || clef_buf_append(&e->text, q->id.s, q->id.len) != 0
            || clef_buf_printf(&e->text, "\nTYPE: %s\nINSTRUCTION: ",
                               qtype_names[q->type]) != 0
            || tokenize_text(e, schema) != 0)
        {
            return -1;
        }

        /* None and "" become the id; 0 and false stay what they are */
        ins = q->instructions;
        e->text.len = 0;
        if (ins == NULL || (ins->type == CLEF_JSON_STRING && ins->len == 0)) {
            if (clef_buf_append(&e->text, q->id.s, q->id.len) != 0) {
                return -1;
            }
        } else if (clef_render(&e->text, ins) != 0) {
            return -1;
        }
        rec->question_spans[i].start = (int32_t) schema->n;
        if (tokenize_text(e, schema) != 0) {
            return -1;
        }
        rec->question_spans[i].end = (int32_t) schema->n;
        rec->question_types[i] = q->type;

        if (put_piece(e, &e->options_head, schema) != 0) {
            return -1;
        }

        for (k = 0; k < q->n_options; k++) {
            e->text.len = 0;
            if (put_piece(e, &e->option_label[k + 1], schema) != 0
                || render_option(&e->text, &q->options[k]) != 0)
            {
                return -1;
            }
            os->start = (int32_t) schema->n;
            if (tokenize_text(e, schema) != 0) {
                return -1;
            }
            os->end = (int32_t) schema->n;
            os++;
            if (put_piece(e, &e->option_end, schema) != 0) {
                return -1;
            }
        }

        if (put_piece(e, &e->field_end, schema) != 0) {
            return -1;
        }
    }

    return 0;
}


static int
alloc_record(const clef_request *req, clef_record *rec, int *max_options)
{
    int  i, n;

    n = 0;
    *max_options = 0;
    for (i = 0; i < req->n_questions; i++) {
        n += req->questions[i].n_options;
        if (req->questions[i].n_options > *max_options) {
            *max_options = req->questions[i].n_options;
        }
    }

    rec->n_questions = req->n_questions;
    rec->n_options = n;
    rec->question_spans = calloc((size_t) req->n_questions + 1, sizeof(clef_span));
    rec->question_types = calloc((size_t) req->n_questions + 1, sizeof(clef_qtype));
    rec->option_offset = calloc((size_t) req->n_questions + 1, sizeof(int));
    rec->option_spans = calloc((size_t) n + 1, sizeof(clef_span));
    if (rec->question_spans == NULL || rec->question_types == NULL
        || rec->option_offset == NULL || rec->option_spans == NULL)
    {
        return -1;
    }

    n = 0;
    for (i = 0; i < req->n_questions; i++) {
        rec->option_offset[i] = n;
        n += req->questions[i].n_options;
    }
    rec->option_offset[i] = n;
    return 0;
}


int
clef_encode(const clef_tokenizer *tk, const clef_request *req,
    const clef_encode_opts *opts, clef_record *rec, clef_error *err)
{
    clef_encode_opts  defaults;
    encoder           e;
    clef_ids          prefix = { 0 }, suffix = { 0 }, state = { 0 },
                      schema = { 0 };
    size_t            fixed, total, kept, shift, max_length, n_media;
    int               i, max_options, rc;

    if (opts == NULL) {
        clef_encode_opts_default(&defaults);
        opts = &defaults;
    }
    /* a non-positive max_length means the default */
    max_length = opts->max_length > 0 ? (size_t) opts->max_length
                                      : CLEF_DEFAULT_MAX_LENGTH;

    n_media = opts->media_ids != NULL ? opts->n_media_ids : 0;

    memset(rec, 0, sizeof(*rec));
    memset(&e, 0, sizeof(e));
    e.tk = tk;
    rc = -1;

    if (req->n_images > 0 && opts->media_ids == NULL) {
        clef_error_set(err, 400, "images_unsupported", "",
            "This model does not accept images.");
        goto done;
    }

    if (alloc_record(req, rec, &max_options) != 0
        || make_pieces(&e, max_options) != 0
        || encode_schema(&e, req, rec, &schema) != 0
        || tokenize(&e, PREFIX, sizeof(PREFIX) - 1, &prefix) != 0
        || tokenize(&e, SUFFIX, sizeof(SUFFIX) - 1, &suffix) != 0)
    {
        goto nomem;
    }

    fixed = prefix.n + n_media + schema.n + suffix.n;
    if (fixed > max_length) {
        clef_error_set(err, 400, "max_tokens_exceeded", "",
            "Schema needs %zu tokens before the state; the limit is %zu.",
            fixed, max_length);
        goto done;
    }

    e.text.len = 0;
    if (clef_render(&e.text, req->state) != 0 || tokenize_text(&e, &state) != 0) {
        goto nomem;
    }

    total = fixed + state.n;
    kept = state.n;
    if (total > max_length) {
        if (opts->truncate == CLEF_TRUNCATE_REJECT) {
            clef_error_set(err, 400, "max_tokens_exceeded", "",
                "Request needs %zu tokens (state %zu, prompt and schema %zu); "
                "the limit is %zu.", total, state.n, fixed, max_length);
            goto done;
        }
        /* the reference keeps the state's first tokens */
        kept = max_length - fixed;
    }

    if (clef_ids_reserve(&rec->ids, fixed + kept) != 0
        || clef_ids_append(&rec->ids, prefix.v, prefix.n) != 0
        || clef_ids_append(&rec->ids, opts->media_ids, n_media) != 0
        || clef_ids_append(&rec->ids, state.v, kept) != 0
        || clef_ids_append(&rec->ids, schema.v, schema.n) != 0
        || clef_ids_append(&rec->ids, suffix.v, suffix.n) != 0)
    {
        goto nomem;
    }

    shift = prefix.n + n_media + kept;
    for (i = 0; i < rec->n_questions; i++) {
        rec->question_spans[i].start += (int32_t) shift;
        rec->question_spans[i].end += (int32_t) shift;
    }
    for (i = 0; i < rec->n_options; i++) {
        rec->option_spans[i].start += (int32_t) shift;
        rec->option_spans[i].end += (int32_t) shift;
    }
    rec->state_tokens = state.n;
    rec->state_kept = kept;
    rc = 0;
    goto done;

nomem:
    clef_error_set(err, 500, "internal_error", "", "Out of memory.");

done:
    if (rc != 0) {
        clef_record_free(rec);
    }
    clef_buf_free(&e.text);
    clef_ids_free(&e.pool);
    free(e.option_label);
    clef_ids_free(&prefix);
    clef_ids_free(&suffix);
    clef_ids_free(&state);
    clef_ids_free(&schema);
    return rc;
}


void
clef_record_free(clef_record *rec)
{
    clef_ids_free(&rec->ids);
    free(rec->question_spans);
    free(rec->question_types);
    free(rec->option_offset);
    free(rec->option_spans);
    memset(rec, 0, sizeof(*rec));
}
