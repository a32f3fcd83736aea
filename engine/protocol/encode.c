/*
 * The record encoder: encode_record of the reference, piece by piece
 * (docs/spec/encoder-and-head.md §3.3-§3.4), over a rendered plan
 * (plan.h).
 *
 * Every piece is tokenized on its own, so a piece that occurs many times
 * ("\n", "OPTION 7: ", "END FIELD\n", ...) has the same ids every time: those
 * are tokenized once per record and copied.  Everything else is linear in
 * the size of the request, and bounded by the token limit: the schema and
 * the state are counted up to COUNT_CAP(max_length) ids (so that a refusal
 * says exactly how far over a record is in all but absurd cases) and
 * tokenization stops there.
 */
#include "protocol/encode.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "media/kinds.h"
#include "media/prepare.h"
#include "protocol/plan.h"

#define PREFIX                                                              \
    "<|im_start|>system\nRead the complete state and schema. Decide every " \
    "field jointly. Each answer must be exactly one of that field's "       \
    "allowed options.<|im_end|>\n<|im_start|>user\nSTATE:\n"
#define SUFFIX                                                              \
    "\n<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"          \
    "JOINT SCHEMA DECISIONS:"
/* ids counted at most before a record is known not to fit: a 64 x 255
 * option schema (282k ids, the largest a valid request makes) still gets
 * an exact count at the default limit, and the work stays a few times
 * that of the largest record that fits */
#define COUNT_CAP(max_length)  (4 * (size_t) (max_length) + 65536)

#define SCHEMA_HEAD   "\n\nSCHEMA FIELDS:\n"
#define OPTIONS_HEAD  "\nALLOWED OPTIONS:\n"
#define OPTION_END    "\n"
#define FIELD_END     "END FIELD\n"

/* A span of a shared id vector: the ids of one repeated piece. */
typedef struct {
    size_t  start;
    size_t  len;
} piece;

typedef struct {
    const clef_tokenizer  *tk;
    clef_ids               pool;      /* ids of the repeated pieces */
    size_t                 cap;       /* counting stops beyond this many
                                         ids of one piece list */
    size_t                 fit;       /* more than this many cannot fit */
    int                    over;      /* a tokenization stopped */
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


/* Tokenizes t into out unless out holds more than cap ids already; stops
 * there (e->over) without needing exact ids. */
static int
tokenize_capped(encoder *e, clef_text t, clef_ids *out)
{
    clef_tk_limit  lim;
    int            rc;

    if (out->n > e->cap) {
        e->over = 1;
        return 0;
    }
    if (t.len == 0) {
        return 0;
    }
    lim.max_ids = e->cap - out->n;
    lim.hopeless_ids = e->fit > out->n ? e->fit - out->n : 0;
    rc = clef_tokenizer_encode_max(e->tk, t.s, t.len, &lim, out);
    e->over |= rc == 1;
    return rc < 0 ? -1 : 0;
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


/* The schema ids with spans relative to its start; stops early (e->over)
 * once it holds more than e->cap ids. */
static int
encode_schema(encoder *e, const clef_plan *plan, clef_record *rec,
    clef_ids *schema)
{
    const clef_plan_question  *q;
    clef_span                 *os;
    int                        i, k;

    if (tokenize(e, SCHEMA_HEAD, sizeof(SCHEMA_HEAD) - 1, schema) != 0) {
        return -1;
    }

    os = rec->option_spans;
    for (i = 0; i < plan->n_questions && !e->over; i++) {
        q = &plan->questions[i];

        if (tokenize_capped(e, q->header, schema) != 0) {
            return -1;
        }
        rec->question_spans[i].start = (int32_t) schema->n;
        if (tokenize_capped(e, q->instruction, schema) != 0) {
            return -1;
        }
        rec->question_spans[i].end = (int32_t) schema->n;
        rec->question_types[i] = q->type;

        if (put_piece(e, &e->options_head, schema) != 0) {
            return -1;
        }

        for (k = 0; k < q->n_options && !e->over; k++) {
            if (put_piece(e, &e->option_label[k + 1], schema) != 0) {
                return -1;
            }
            os->start = (int32_t) schema->n;
            if (tokenize_capped(e, q->options[k], schema) != 0) {
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
    e->over |= schema->n > e->cap;
    return 0;
}


static int
alloc_record(const clef_plan *plan, clef_record *rec, int *max_options)
{
    int  i, n;

    *max_options = 0;
    for (i = 0; i < plan->n_questions; i++) {
        if (plan->questions[i].n_options > *max_options) {
            *max_options = plan->questions[i].n_options;
        }
    }

    rec->n_questions = plan->n_questions;
    rec->n_options = plan->n_options;
    n = plan->n_questions + 1;
    rec->question_spans = calloc((size_t) n, sizeof(clef_span));
    rec->question_types = calloc((size_t) n, sizeof(clef_qtype));
    rec->option_offset = calloc((size_t) n, sizeof(int));
    rec->option_spans = calloc((size_t) plan->n_options + 1, sizeof(clef_span));
    if (rec->question_spans == NULL || rec->question_types == NULL
        || rec->option_offset == NULL || rec->option_spans == NULL)
    {
        return -1;
    }

    n = 0;
    for (i = 0; i < plan->n_questions; i++) {
        rec->option_offset[i] = n;
        n += plan->questions[i].n_options;
    }
    rec->option_offset[i] = n;
    return 0;
}


/* The processor's expansion of the media text: each item as its kind
 * makes it (media/prepare.h; an image: <|vision_start|>, its pads,
 * <|vision_end|>), then "\n" tokenized on its own (special tokens split the
 * text, so nothing merges across them): once after all of them, or (Clef
 * Omni's placeholders) after each.  The spans' starts count from the
 * media's first token. */
static int
media_ids(const clef_tokenizer *tk, const clef_encode_opts *opts,
    clef_ids *media, clef_media_span **spans, int *n_spans)
{
    const clef_media_item  *it;
    const clef_media_prep  *prep;
    size_t                  room = 0;
    int                     k, n;

    for (k = 0; k < opts->n_media; k++) {
        room += (size_t) clef_media_spans_max(&opts->media[k]);
    }
    *spans = malloc(sizeof(clef_media_span) * room);
    if (*spans == NULL) {
        return -1;
    }
    for (k = 0; k < opts->n_media; k++) {
        it = &opts->media[k];
        if (it->sound_of > 0) {
            /* a video's track: placed with its video (media.h) */
            continue;
        }
        prep = clef_media_prep_of(it->kind);
        n = prep != NULL && prep->expand != NULL
            ? prep->expand(opts->media, k, opts->tokens, tk, media,
                           *spans + *n_spans)
            : -1;
        if (n < 0
            || (opts->newline_each
                && clef_tokenizer_encode(tk, "\n", 1, media) != 0))
        {
            return -1;
        }
        *n_spans += n;
    }
    return opts->newline_each ? 0 : clef_tokenizer_encode(tk, "\n", 1, media);
}


/* The record takes the media items: their data, spans and positions. */
static int
attach_media(const clef_encode_opts *opts, size_t at, clef_media_span *spans,
    int n_spans, clef_record *rec)
{
    clef_media_item  *it;
    int               k;

    rec->media = calloc((size_t) opts->n_media, sizeof(clef_media_item));
    rec->positions = malloc(sizeof(int32_t) * 3 * rec->ids.n);
    if (rec->media == NULL || rec->positions == NULL) {
        return -1;
    }
    for (k = 0; k < n_spans; k++) {
        spans[k].start += (int32_t) at;
    }
    clef_mrope_positions((int64_t) rec->ids.n, opts->media, spans, n_spans,
                         rec->positions);
    /* moved last: nothing can fail after it */
    rec->spans = spans;
    rec->n_spans = n_spans;
    for (k = 0; k < opts->n_media; k++) {
        it = &opts->media[k];
        rec->media[k] = *it;
        it->bytes = NULL;
        it->values = NULL;
        it->timestamps = NULL;
    }
    rec->n_media = opts->n_media;
    return 0;
}


/* The record's media ids: the plan's items, and the videos' tracks after
 * them (media.h), given (opts->media_ids) or tokenized here with their
 * spans.  -1 with err set when the model takes none or memory ran out. */
static int
encode_media(const clef_tokenizer *tk, const clef_plan *plan,
    const clef_encode_opts *opts, clef_ids *media, clef_media_span **spans,
    int *n_spans, clef_error *err)
{
    const clef_media_kind_info  *kind;
    int                          rc = 0;

    if (plan->n_media > 0 && opts->media_ids == NULL
        && (opts->media == NULL || opts->n_media < plan->n_media))
    {
        kind = clef_media_kind_of(plan->media[0].kind);
        clef_error_set(err, 400, kind->unsupported, "",
            "This model does not accept %s.", kind->many);
        return -1;
    }
    if (opts->media_ids != NULL) {
        rc = clef_ids_append(media, opts->media_ids, opts->n_media_ids);
    } else if (opts->media != NULL && opts->n_media > 0) {
        rc = media_ids(tk, opts, media, spans, n_spans);
    }
    if (rc != 0) {
        clef_error_set(err, 500, "internal_error", "", "Out of memory.");
        return -1;
    }
    return 0;
}


/* The state's ids beside fixed others within max_length: *kept of them
 * go in the record, all of them, or the first ones where the request
 * truncates.  1 with err set when the request is refused, -1 out of
 * memory. */
static int
encode_state(const clef_tokenizer *tk, const clef_plan *plan,
    const clef_encode_opts *opts, size_t fixed, size_t max_length,
    clef_ids *state, size_t *kept, clef_error *err)
{
    clef_tk_limit  lim;
    size_t         total;
    int            stop;

    /* a refusal needs no more than the proof; truncation needs the
     * state's first ids exactly */
    lim.max_ids = COUNT_CAP(max_length) - fixed;
    lim.hopeless_ids = opts->truncate == CLEF_TRUNCATE_REJECT
                       ? max_length - fixed : SIZE_MAX;
    stop = clef_tokenizer_encode_max(tk, plan->state.s, plan->state.len, &lim,
                                     state);
    if (stop < 0) {
        return -1;
    }

    total = fixed + state->n;
    *kept = state->n;
    if (total <= max_length && !stop) {
        return 0;
    }
    if (opts->truncate != CLEF_TRUNCATE_REJECT) {
        /* the reference keeps the state's first tokens */
        *kept = max_length - fixed;
        return 0;
    }
    if (stop) {
        /* counted up to the cap, or proven hopeless earlier */
        *kept = state->n > lim.hopeless_ids ? state->n - 1
                                            : lim.hopeless_ids;
        clef_error_set(err, 400, "max_tokens_exceeded", "",
            "Request needs more than %zu tokens (state more than "
            "%zu, prompt and schema %zu); the limit is %zu.",
            fixed + *kept, *kept, fixed, max_length);
    } else {
        clef_error_set(err, 400, "max_tokens_exceeded", "",
            "Request needs %zu tokens (state %zu, prompt and schema "
            "%zu); the limit is %zu.", total, state->n, fixed,
            max_length);
    }
    return 1;
}


int
clef_encode_plan(const clef_tokenizer *tk, const clef_plan *plan,
    const clef_encode_opts *opts, clef_record *rec, clef_error *err)
{
    clef_encode_opts             defaults;
    encoder                      e;
    clef_ids                     prefix = { 0 }, suffix = { 0 },
                                 state = { 0 }, schema = { 0 },
                                 media = { 0 };
    clef_media_span             *spans = NULL;
    size_t                       fixed, kept, shift, max_length;
    size_t                       n_media;
    int                          i, max_options, rc, n_spans = 0;

    if (opts == NULL) {
        clef_encode_opts_default(&defaults);
        opts = &defaults;
    }
    /* a non-positive max_length means the default */
    max_length = opts->max_length > 0 ? (size_t) opts->max_length
                                      : CLEF_DEFAULT_MAX_LENGTH;

    memset(rec, 0, sizeof(*rec));
    memset(&e, 0, sizeof(e));
    e.tk = tk;
    rc = -1;

    if (encode_media(tk, plan, opts, &media, &spans, &n_spans, err) != 0) {
        goto done;
    }
    n_media = media.n;

    if (alloc_record(plan, rec, &max_options) != 0
        || make_pieces(&e, max_options) != 0
        || tokenize(&e, PREFIX, sizeof(PREFIX) - 1, &prefix) != 0
        || tokenize(&e, SUFFIX, sizeof(SUFFIX) - 1, &suffix) != 0)
    {
        goto nomem;
    }

    fixed = prefix.n + n_media + suffix.n;
    e.cap = COUNT_CAP(max_length) - fixed;
    e.fit = max_length > fixed ? max_length - fixed : 0;
    if (encode_schema(&e, plan, rec, &schema) != 0) {
        goto nomem;
    }
    fixed += schema.n;
    if (e.over) {
        clef_error_set(err, 400, "max_tokens_exceeded", "",
            "Schema needs more than %zu tokens before the state; the limit "
            "is %zu.", schema.n > e.fit ? fixed - 1 : max_length, max_length);
        goto done;
    }
    if (fixed > max_length) {
        clef_error_set(err, 400, "max_tokens_exceeded", "",
            "Schema needs %zu tokens before the state; the limit is %zu.",
            fixed, max_length);
        goto done;
    }

    switch (encode_state(tk, plan, opts, fixed, max_length, &state, &kept,
                         err))
    {
    case 0:
        break;
    case 1:
        goto done;
    default:
        goto nomem;
    }
    if (clef_ids_reserve(&rec->ids, fixed + kept) != 0
        || clef_ids_append(&rec->ids, prefix.v, prefix.n) != 0
        || clef_ids_append(&rec->ids, media.v, n_media) != 0
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
    if (spans != NULL && attach_media(opts, prefix.n, spans, n_spans, rec)
                         != 0)
    {
        goto nomem;
    }
    spans = NULL;
    rc = 0;
    goto done;

nomem:
    clef_error_set(err, 500, "internal_error", "", "Out of memory.");

done:
    if (rc != 0) {
        clef_record_free(rec);
    }
    clef_ids_free(&e.pool);
    free(e.option_label);
    clef_ids_free(&prefix);
    clef_ids_free(&suffix);
    clef_ids_free(&state);
    clef_ids_free(&schema);
    clef_ids_free(&media);
    free(spans);
    return rc;
}


int
clef_encode(const clef_tokenizer *tk, const clef_request *req,
    const clef_encode_opts *opts, clef_record *rec, clef_error *err)
{
    clef_buf   blob = { NULL, 0, 0 };
    clef_plan  plan;
    int        rc;

    memset(rec, 0, sizeof(*rec));
    if (clef_plan_build(req, &blob, err) != 0
        || clef_plan_view(&plan, blob.data, blob.len, err) != 0)
    {
        clef_buf_free(&blob);
        return -1;
    }
    rc = clef_encode_plan(tk, &plan, opts, rec, err);
    clef_plan_free(&plan);
    clef_buf_free(&blob);
    return rc;
}


void
clef_record_free(clef_record *rec)
{
    int  k;

    for (k = 0; k < rec->n_media; k++) {
        clef_media_item_free(&rec->media[k]);
    }
    free(rec->media);
    free(rec->spans);
    free(rec->positions);
    clef_ids_free(&rec->ids);
    free(rec->question_spans);
    free(rec->question_types);
    free(rec->option_offset);
    free(rec->option_spans);
    memset(rec, 0, sizeof(*rec));
}
