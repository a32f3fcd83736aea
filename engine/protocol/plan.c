/*
 * The encoding plan (see plan.h): rendering a request's texts, and reading
 * them back from the blob.
 */
#include "protocol/plan.h"

#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "text/render.h"

#define PLAN_MAGIC     0x34504c43u   /* "CLP4" */
#define PLAN_MAGIC_V2  0x32504c43u   /* "CLP2": images without a kind */
#define PLAN_MAGIC_V3  0x33504c43u   /* "CLP3": no media_kwargs */
/* the bytes of a media item without its file */
#define MEDIA_HEAD     (2 + 3 * 4 + 8 + 4)

static const char *const  qtype_names[] = { "noul", "choice", "score" };


static int
put_u32(clef_buf *out, uint32_t v)
{
    return clef_buf_append(out, &v, sizeof(v));
}


/* A media item: its kind and header, then its file (none when the worker
 * never read it: in NULL). */
static int
put_media(clef_buf *out, clef_media_kind kind, const clef_media_input *in)
{
    uint8_t   head[2] = { (uint8_t) kind, 0 };
    uint64_t  duration = 0;

    if (in != NULL && (in->len > UINT32_MAX || in->format <= 0
                       || in->format > UINT8_MAX))
    {
        return -1;
    }
    if (in != NULL) {
        head[1] = (uint8_t) in->format;
        duration = (uint64_t) in->duration_us;
    }
    return clef_buf_append(out, head, sizeof(head)) != 0
           || put_u32(out, in != NULL ? (uint32_t) in->width : 0) != 0
           || put_u32(out, in != NULL ? (uint32_t) in->height : 0) != 0
           || put_u32(out, in != NULL ? (uint32_t) in->frames : 0) != 0
           || clef_buf_append(out, &duration, sizeof(duration)) != 0
           || put_u32(out, in != NULL ? (uint32_t) in->len : 0) != 0
           || (in != NULL && clef_buf_append(out, in->data, in->len) != 0)
           ? -1 : 0;
}


static int
put_u64(clef_buf *out, uint64_t v)
{
    return clef_buf_append(out, &v, sizeof(v));
}


/* The request's media_kwargs, every field whether set or not. */
static int
put_kwargs(clef_buf *out, const clef_media_kwargs *kw)
{
    uint8_t  cap = (uint8_t) kw->cap_pixels_per_frame;

    return put_u32(out, kw->set) != 0
           || clef_buf_append(out, &kw->fps, sizeof(kw->fps)) != 0
           || put_u64(out, (uint64_t) kw->size_shortest) != 0
           || put_u64(out, (uint64_t) kw->size_longest) != 0
           || put_u64(out, (uint64_t) kw->min_pixels) != 0
           || put_u64(out, (uint64_t) kw->max_pixels) != 0
           || clef_buf_append(out, &cap, 1) != 0
           || put_u64(out, (uint64_t) kw->max_video_tokens) != 0 ? -1 : 0;
}


/* Appends a text as { length, bytes }, rendering it with fill(): the
 * length is patched in once the bytes are there. */
static int
text_begin(clef_buf *out, size_t *at)
{
    *at = out->len;
    return put_u32(out, 0);
}


static int
text_end(clef_buf *out, size_t at)
{
    uint32_t  len;

    if (out->len - at - sizeof(len) > UINT32_MAX) {
        return -1;
    }
    len = (uint32_t) (out->len - at - sizeof(len));
    memcpy(out->data + at, &len, sizeof(len));
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


static int
build_question(const clef_question *q, int index, clef_buf *out)
{
    const clef_json  *ins = q->instructions;
    size_t            at;
    int               k;

    if (text_begin(out, &at) != 0
        || clef_buf_printf(out, "\nFIELD %d\nID: ", index + 1) != 0
        || clef_buf_append(out, q->id.s, q->id.len) != 0
        || clef_buf_printf(out, "\nTYPE: %s\nINSTRUCTION: ",
                           qtype_names[q->type]) != 0
        || text_end(out, at) != 0)
    {
        return -1;
    }

    /* None and "" become the id; 0 and false stay what they are */
    if (text_begin(out, &at) != 0) {
        return -1;
    }
    if (ins == NULL || (ins->type == CLEF_JSON_STRING && ins->len == 0)) {
        if (clef_buf_append(out, q->id.s, q->id.len) != 0) {
            return -1;
        }
    } else if (clef_render(out, ins) != 0) {
        return -1;
    }
    if (text_end(out, at) != 0) {
        return -1;
    }

    for (k = 0; k < q->n_options; k++) {
        if (text_begin(out, &at) != 0
            || render_option(out, &q->options[k]) != 0
            || text_end(out, at) != 0)
        {
            return -1;
        }
    }
    return 0;
}


int
clef_plan_build(const clef_request *req, clef_buf *out, clef_error *err)
{
    const clef_media_input  *in;
    size_t                   at;
    int                      i, k, n_options = 0;

    for (i = 0; i < req->n_questions; i++) {
        n_options += req->questions[i].n_options;
    }
    if (put_u32(out, PLAN_MAGIC) != 0
        || put_u32(out, (uint32_t) req->n_questions) != 0
        || put_u32(out, (uint32_t) n_options) != 0
        || put_u32(out, (uint32_t) clef_request_media_count(req)) != 0)
    {
        goto nomem;
    }
    for (i = 0; i < req->n_questions; i++) {
        if (put_u32(out, (uint32_t) req->questions[i].type) != 0
            || put_u32(out, (uint32_t) req->questions[i].n_options) != 0)
        {
            goto nomem;
        }
    }
    if (text_begin(out, &at) != 0 || clef_render(out, req->state) != 0
        || text_end(out, at) != 0)
    {
        goto nomem;
    }
    for (i = 0; i < req->n_questions; i++) {
        if (build_question(&req->questions[i], i, out) != 0) {
            goto nomem;
        }
    }
    for (k = 1; k < CLEF_MEDIA_KINDS; k++) {
        for (i = 0; i < req->media[k].n; i++) {
            in = req->media[k].inputs != NULL ? &req->media[k].inputs[i]
                                              : NULL;
            if (put_media(out, (clef_media_kind) k, in) != 0) {
                goto nomem;
            }
        }
    }
    if (put_kwargs(out, &req->kwargs) != 0) {
        goto nomem;
    }
    return 0;

nomem:
    return clef_error_set(err, 500, "internal_error", "", "Out of memory.");
}


/* ---- reading a blob ------------------------------------------------------ */

typedef struct {
    const unsigned char  *p;
    size_t                left;
    int                   bad;
} reader;


static uint32_t
get_u32(reader *r)
{
    uint32_t  v = 0;

    if (r->left < sizeof(v)) {
        r->bad = 1;
        return 0;
    }
    memcpy(&v, r->p, sizeof(v));
    r->p += sizeof(v);
    r->left -= sizeof(v);
    return v;
}


static uint8_t
get_u8(reader *r)
{
    uint8_t  v = 0;

    if (r->left < 1) {
        r->bad = 1;
        return 0;
    }
    v = *r->p++;
    r->left--;
    return v;
}


static uint64_t
get_u64(reader *r)
{
    uint64_t  lo = get_u32(r), hi = get_u32(r);

    return lo | hi << 32;
}


static int
pixels_in_bounds(int64_t v)
{
    return v >= 0 && v <= CLEF_KW_PIXELS_LIMIT;
}


/* The media_kwargs as put_kwargs() wrote them, checked as a worker reads
 * them (a blob is the worker's, but the engine trusts no size in it). */
static int
get_kwargs(reader *r, clef_media_kwargs *kw)
{
    uint32_t  set = get_u32(r);
    uint64_t  fps = get_u64(r);

    memcpy(&kw->fps, &fps, sizeof(fps));
    kw->set = set;
    kw->size_shortest = (int64_t) get_u64(r);
    kw->size_longest = (int64_t) get_u64(r);
    kw->min_pixels = (int64_t) get_u64(r);
    kw->max_pixels = (int64_t) get_u64(r);
    kw->cap_pixels_per_frame = get_u8(r);
    kw->max_video_tokens = (int64_t) get_u64(r);
    return r->bad || (set & ~(unsigned) CLEF_KW_ALL)
           || kw->cap_pixels_per_frame > 1
           || ((set & CLEF_KW_FPS)
               && !(kw->fps > 0 && kw->fps <= CLEF_KW_FPS_LIMIT))
           || !pixels_in_bounds(kw->size_shortest)
           || !pixels_in_bounds(kw->size_longest)
           || !pixels_in_bounds(kw->min_pixels)
           || !pixels_in_bounds(kw->max_pixels)
           || kw->max_video_tokens < 0
           || kw->max_video_tokens > CLEF_KW_TOKENS_LIMIT ? -1 : 0;
}


static clef_text
get_text(reader *r)
{
    clef_text  t = { "", 0 };
    uint32_t   len = get_u32(r);

    if (r->bad || len > r->left) {
        r->bad = 1;
        return t;
    }
    t.s = (const char *) r->p;
    t.len = len;
    r->p += len;
    r->left -= len;
    return t;
}


int
clef_plan_view(clef_plan *p, const void *blob, size_t len, clef_error *err)
{
    reader             r = { blob, len, 0 };
    clef_media_input  *in;
    clef_text          t;
    uint32_t           type, n, magic;
    uint8_t            kind;
    int                i, k, off;

    memset(p, 0, sizeof(*p));
    magic = get_u32(&r);
    if (magic == PLAN_MAGIC_V2 || magic == PLAN_MAGIC_V3) {
        return clef_error_set(err, 500, "plan_invalid", "",
            "The record handed to the engine is a plan of version CLP%c; this "
            "engine reads CLP4 (a worker and an engine of different "
            "builds).", magic == PLAN_MAGIC_V2 ? '2' : '3');
    }
    if (magic != PLAN_MAGIC) {
        goto bad;
    }
    p->n_questions = (int) get_u32(&r);
    p->n_options = (int) get_u32(&r);
    p->n_media = (int) get_u32(&r);
    /* each count needs bytes of its own further on: bounded by len */
    if (r.bad || p->n_questions < 0 || p->n_options < 0 || p->n_media < 0
        || (size_t) p->n_questions > len / 8 || (size_t) p->n_options > len / 4
        || (size_t) p->n_media > len / MEDIA_HEAD)
    {
        goto bad;
    }

    p->questions = clef_mem_calloc(((size_t) p->n_questions + 1)
                                   * sizeof(*p->questions));
    p->options = clef_mem_calloc(((size_t) p->n_options + 1)
                                 * sizeof(*p->options));
    p->media = clef_mem_calloc(((size_t) p->n_media + 1) * sizeof(*p->media));
    if (p->questions == NULL || p->options == NULL || p->media == NULL) {
        clef_plan_free(p);
        return clef_error_set(err, 500, "internal_error", "", "Out of memory.");
    }

    off = 0;
    for (i = 0; i < p->n_questions; i++) {
        type = get_u32(&r);
        n = get_u32(&r);
        if (r.bad || type > CLEF_QTYPE_SCORE
            || n > (uint32_t) (p->n_options - off))
        {
            goto bad;
        }
        p->questions[i].type = (clef_qtype) type;
        p->questions[i].n_options = (int) n;
        p->questions[i].options = p->options + off;
        off += (int) n;
    }
    if (off != p->n_options) {
        goto bad;
    }

    p->state = get_text(&r);
    for (i = 0; i < p->n_questions; i++) {
        p->questions[i].header = get_text(&r);
        p->questions[i].instruction = get_text(&r);
        for (k = 0; k < p->questions[i].n_options; k++) {
            p->questions[i].options[k] = get_text(&r);
        }
    }
    for (i = 0; i < p->n_media; i++) {
        in = &p->media[i];
        kind = get_u8(&r);
        in->format = get_u8(&r);
        in->width = (int32_t) get_u32(&r);
        in->height = (int32_t) get_u32(&r);
        in->frames = (int32_t) get_u32(&r);
        in->duration_us = (int64_t) get_u64(&r);
        t = get_text(&r);
        in->data = (const uint8_t *) t.s;
        in->len = t.len;
        /* kinds in their order; an item never read has no bytes */
        if (clef_media_kind_of(kind) == NULL
            || (i > 0 && kind < (uint8_t) p->media[i - 1].kind)
            || (in->format == 0 && t.len != 0))
        {
            goto bad;
        }
        in->kind = (clef_media_kind) kind;
    }
    if (get_kwargs(&r, &p->kwargs) != 0 || r.bad || r.left != 0) {
        goto bad;
    }
    return 0;

bad:
    clef_plan_free(p);
    return clef_error_set(err, 500, "plan_invalid", "",
                          "The record handed to the engine is malformed.");
}


void
clef_plan_free(clef_plan *p)
{
    clef_mem_free(p->questions);
    clef_mem_free(p->options);
    clef_mem_free(p->media);
    p->questions = NULL;
    p->options = NULL;
    p->media = NULL;
}


/* ---- the worker's cheap bound -------------------------------------------- */

static size_t
text_min_bytes(clef_text t)
{
    size_t  i, ascii = 0;

    for (i = 0; i < t.len; i++) {
        ascii += (unsigned char) t.s[i] < 0x80;
    }
    /* NFC keeps ASCII and shrinks the rest to a third at most */
    return ascii + (t.len - ascii) / 3;
}


size_t
clef_plan_min_ids(const clef_plan *p, size_t max_token_bytes, int state_only)
{
    size_t  bytes, ids;
    int     i, k;

    if (max_token_bytes == 0 || max_token_bytes == SIZE_MAX) {
        return 0;
    }
    /* each text is tokenized on its own: bound each, then add */
    bytes = text_min_bytes(p->state);
    ids = (bytes + max_token_bytes - 1) / max_token_bytes;
    if (state_only) {
        return ids;
    }
    for (i = 0; i < p->n_questions; i++) {
        bytes = text_min_bytes(p->questions[i].header);
        ids += (bytes + max_token_bytes - 1) / max_token_bytes;
        bytes = text_min_bytes(p->questions[i].instruction);
        ids += (bytes + max_token_bytes - 1) / max_token_bytes;
        for (k = 0; k < p->questions[i].n_options; k++) {
            bytes = text_min_bytes(p->questions[i].options[k]);
            ids += (bytes + max_token_bytes - 1) / max_token_bytes;
        }
    }
    return ids;
}


int64_t
clef_plan_media_ids(const clef_plan *p, const clef_media_conf *mc)
{
    const clef_media_kind_info  *kind;
    clef_media_conf              c = *mc;
    int64_t                      ids = 0, n;
    int                          k;

    clef_media_conf_apply_kwargs(&c, &p->kwargs);
    for (k = 0; k < p->n_media; k++) {
        kind = clef_media_kind_of(p->media[k].kind);
        if (p->media[k].format == 0 || kind == NULL
            || kind->header_ids == NULL)
        {
            continue;
        }
        n = kind->header_ids(&p->media[k], &c);
        if (n < 0) {
            return -1;
        }
        ids += n;
    }
    return ids;
}


const char *
clef_plan_media_noun(const clef_plan *p)
{
    int  k;

    for (k = 1; k < p->n_media; k++) {
        if (p->media[k].kind != p->media[0].kind) {
            return "media items";
        }
    }
    return p->n_media > 0 ? clef_media_kind_of(p->media[0].kind)->many
                          : "media items";
}
