/*
 * POST /v1/systemone in a worker (docs/architecture.md §3):
 *
 *   method, API key, content type -> read the body -> clef_request_parse
 *   with the location's limits, refuse what the engine cannot serve
 *   (images, assets) and what cannot fit by length alone (4xx here,
 *   nothing reaches the engine) -> render the record's texts
 *   (clef_plan_build) into a shared-memory slot, wake the engine -> NGX_DONE.
 *   The engine never parses a body: it tokenizes the plan.
 *
 * The engine wakes this worker through the worker's own abstract unix
 * datagram socket, registered in the worker's epoll loop (not ngx_notify,
 * which belongs to thread pools); each datagram names the finished record,
 * found through a table indexed by slot.  The wake handler answers it with
 * clef_answer_json() over the logits the engine wrote.  A client that goes
 * away cancels its record.  The deadline (clef_engine timeout) bounds the
 * wait until the engine starts the record's forward; a record whose
 * forward runs is waited for (the keeper's watchdog bounds a forward that
 * makes no progress).  Nothing here blocks or polls.
 */
#include "ngx_http_clef_module.h"

#include <stdlib.h>
#include <zstd.h>


/* this worker's wake socket, its requests waiting for the engine, and
 * those requests by slot (a slot is held by one record at a time) */
static ngx_connection_t      *ngx_http_clef_wake_conn;
static ngx_queue_t            ngx_http_clef_pending;
static ngx_http_clef_ctx_t  **ngx_http_clef_by_slot;
static uint32_t               ngx_http_clef_nslots;
static uint64_t               ngx_http_clef_lost_seen;

/* how often a deadline passed during a running forward looks again */
#define NGX_HTTP_CLEF_RUNNING_RECHECK  1000

static void ngx_http_clef_body_handler(ngx_http_request_t *r);
static void ngx_http_clef_process_body(ngx_http_request_t *r);
static void ngx_http_clef_wake_handler(ngx_event_t *rev);
static void ngx_http_clef_deadline_handler(ngx_event_t *ev);
static void ngx_http_clef_cleanup(void *data);
static void ngx_http_clef_finish(ngx_http_clef_ctx_t *ctx);


static ngx_int_t
ngx_http_clef_is_json(ngx_http_request_t *r)
{
    ngx_table_elt_t  *h = r->headers_in.content_type;
    u_char           *p, *last;

    if (h == NULL) {
        /* FastAPI reads a body without a type as JSON as well */
        return 1;
    }
    p = h->value.data;
    last = p + h->value.len;
    while (p < last && *p == ' ') {
        p++;
    }
    last = ngx_strlchr(p, last, ';') ? ngx_strlchr(p, last, ';') : last;
    while (last > p && last[-1] == ' ') {
        last--;
    }
    if (last - p == 16 && ngx_strncasecmp(p, (u_char *) "application/json", 16)
                          == 0)
    {
        return 1;
    }
    /* application/<anything>+json */
    return last - p > 17 && ngx_strncasecmp(p, (u_char *) "application/", 12) == 0
           && ngx_strncasecmp(last - 5, (u_char *) "+json", 5) == 0;
}


/* Content-Encoding of the request: 0 none (or identity), 1 zstd (the
 * Python SDK compresses bodies of 1 KiB and more when it can), -1 other. */
static ngx_int_t
ngx_http_clef_content_encoding(ngx_http_request_t *r, ngx_str_t *value)
{
    ngx_list_part_t  *part = &r->headers_in.headers.part;
    ngx_table_elt_t  *h = part->elts;
    ngx_uint_t        i;

    for (i = 0; /* void */ ; i++) {
        if (i >= part->nelts) {
            if (part->next == NULL) {
                return 0;
            }
            part = part->next;
            h = part->elts;
            i = 0;
        }
        if (h[i].key.len != sizeof("Content-Encoding") - 1
            || ngx_strncasecmp(h[i].key.data, (u_char *) "Content-Encoding",
                               h[i].key.len) != 0)
        {
            continue;
        }
        *value = h[i].value;
        if (value->len == 4
            && ngx_strncasecmp(value->data, (u_char *) "zstd", 4) == 0)
        {
            return 1;
        }
        if (value->len == 8
            && ngx_strncasecmp(value->data, (u_char *) "identity", 8) == 0)
        {
            return 0;
        }
        return -1;
    }
}


static void
ngx_http_clef_free(void *data)
{
    clef_mem_free(data);
}


/* A zstd body, decompressed into memory the request's pool frees; at most
 * limit bytes (*status 413 beyond, 400 for a broken stream). */
static u_char *
ngx_http_clef_unzstd(ngx_http_request_t *r, u_char *in, size_t in_len,
    size_t limit, size_t *out_len, ngx_uint_t *status, const char **why)
{
    ZSTD_DStream        *ds;
    ZSTD_inBuffer        ib;
    ZSTD_outBuffer       ob;
    ngx_pool_cleanup_t  *cln;
    unsigned long long   known;
    u_char              *buf, *nbuf;
    size_t               cap, rc;

    cln = ngx_pool_cleanup_add(r->pool, 0);
    ds = ZSTD_createDStream();
    if (cln == NULL || ds == NULL) {
        if (ds != NULL) {
            ZSTD_freeDStream(ds);
        }
        *status = NGX_HTTP_INTERNAL_SERVER_ERROR;
        *why = "out of memory";
        return NULL;
    }

    known = ZSTD_getFrameContentSize(in, in_len);
    cap = (known != ZSTD_CONTENTSIZE_UNKNOWN && known != ZSTD_CONTENTSIZE_ERROR
           && known <= limit) ? (size_t) known + 1 : in_len * 4 + 4096;
    if (cap > limit + 1) {
        cap = limit + 1;
    }
    buf = clef_mem_alloc(cap);
    cln->handler = ngx_http_clef_free;
    cln->data = buf;

    ib.src = in;
    ib.size = in_len;
    ib.pos = 0;
    ob.pos = 0;
    *status = 0;

    while (buf != NULL) {
        ob.dst = buf;
        ob.size = cap;
        rc = ZSTD_decompressStream(ds, &ob, &ib);
        if (ZSTD_isError(rc)) {
            *status = NGX_HTTP_BAD_REQUEST;
            *why = ZSTD_getErrorName(rc);
            break;
        }
        if (ob.pos > limit) {
            *status = NGX_HTTP_REQUEST_ENTITY_TOO_LARGE;
            break;
        }
        if (ib.pos == ib.size && ob.pos < ob.size) {
            if (rc != 0) {
                *status = NGX_HTTP_BAD_REQUEST;
                *why = "the zstd stream is truncated";
            }
            break;
        }
        if (ob.pos == ob.size) {
            cap = cap * 2 > limit + 1 ? limit + 1 : cap * 2;
            nbuf = clef_mem_realloc(buf, cap);
            if (nbuf == NULL) {
                break;
            }
            buf = nbuf;
            cln->data = buf;
        }
    }
    ZSTD_freeDStream(ds);

    if (buf == NULL && *status == 0) {
        *status = NGX_HTTP_INTERNAL_SERVER_ERROR;
        *why = "out of memory";
    }
    if (*status != 0) {
        return NULL;
    }
    *out_len = ob.pos;
    return buf;
}


ngx_int_t
ngx_http_clef_systemone_handler(ngx_http_request_t *r)
{
    ngx_http_clef_loc_conf_t  *llcf;
    ngx_http_clef_ctx_t       *ctx;
    ngx_int_t                  rc;
    ngx_str_t                  enc, *ct;
    u_char                     msg[256];

    ctx = ngx_http_clef_get_ctx(r);
    if (ctx == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (!(r->method & NGX_HTTP_POST)) {
        return ngx_http_clef_send_not_allowed(r, "POST");
    }

    llcf = ngx_http_get_module_loc_conf(r, ngx_http_clef_module);
    rc = ngx_http_clef_check_api_key(r, llcf);
    if (rc != NGX_DECLINED) {
        return rc;
    }

    if (ngx_http_clef_content_encoding(r, &enc) < 0) {
        if (ngx_http_discard_request_body(r) != NGX_OK) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }
        ngx_snprintf(msg, sizeof(msg), "Unsupported Content-Encoding: "
                     "\"%V\"; send zstd or no encoding%Z", &enc);
        return ngx_http_clef_send_detail(r, NGX_HTTP_UNSUPPORTED_MEDIA_TYPE,
                                         (char *) msg);
    }

    if (!ngx_http_clef_is_json(r)) {
        if (ngx_http_discard_request_body(r) != NGX_OK) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }
        ct = &r->headers_in.content_type->value;
        if (ct->len >= 10
            && ngx_strncasecmp(ct->data, (u_char *) "multipart/", 10) == 0)
        {
            /* the SDK's experimental image upload: say what does work */
            ngx_snprintf(msg, sizeof(msg), "Unsupported Media Type: "
                         "multipart bodies (image uploads with an \"assets\" "
                         "map) are not supported; send the request as "
                         "application/json with a text or JSON state%Z");
        } else {
            ngx_snprintf(msg, sizeof(msg), "Unsupported Media Type: \"%V\"; "
                         "send the body as application/json%Z", ct);
        }
        return ngx_http_clef_send_detail(r, NGX_HTTP_UNSUPPORTED_MEDIA_TYPE,
                                         (char *) msg);
    }

    rc = ngx_http_read_client_request_body(r, ngx_http_clef_body_handler);
    if (rc >= NGX_HTTP_SPECIAL_RESPONSE) {
        return rc;
    }
    return NGX_DONE;
}


/* The body in one piece: in memory as nginx read it, or read back from the
 * temporary file a large body was spooled to. */
static u_char *
ngx_http_clef_collect_body(ngx_http_request_t *r, size_t *len)
{
    ngx_chain_t  *cl;
    ngx_buf_t    *b;
    size_t        n = 0;
    ssize_t       got;
    u_char       *body, *p;

    if (r->request_body == NULL || r->request_body->bufs == NULL) {
        *len = 0;
        return (u_char *) "";
    }

    cl = r->request_body->bufs;
    if (cl->next == NULL && !cl->buf->in_file) {
        /* an empty body comes as one buffer with no memory at all */
        *len = cl->buf->last - cl->buf->pos;
        return *len ? cl->buf->pos : (u_char *) "";
    }

    for (cl = r->request_body->bufs; cl; cl = cl->next) {
        b = cl->buf;
        n += b->in_file ? (size_t) (b->file_last - b->file_pos)
                        : (size_t) (b->last - b->pos);
    }
    body = ngx_pnalloc(r->pool, n + 1);
    if (body == NULL) {
        return NULL;
    }
    p = body;
    for (cl = r->request_body->bufs; cl; cl = cl->next) {
        b = cl->buf;
        if (b->in_file) {
            got = ngx_read_file(b->file, p, b->file_last - b->file_pos,
                                b->file_pos);
            if (got != b->file_last - b->file_pos) {
                return NULL;
            }
            p += got;
        } else {
            p = ngx_cpymem(p, b->pos, b->last - b->pos);
        }
    }
    *len = p - body;
    return body;
}


/*
 * The record's texts, rendered into the request's pool (plan.h), and the
 * cheap refusal: when even a lower bound of its tokens (each token stands
 * for max_token_bytes bytes at most) exceeds the limit, the request gets
 * 400 max_tokens_exceeded here, without costing the engine anything.
 * NGX_DECLINED with err set for a refusal.
 */
static ngx_int_t
ngx_http_clef_make_plan(ngx_http_request_t *r, ngx_http_clef_ctx_t *ctx,
    ngx_http_clef_main_conf_t *mcf, ngx_int_t max_length, ngx_str_t *out,
    clef_error *err)
{
    clef_buf    b = { NULL, 0, 0 };
    clef_plan   plan;
    size_t      min_all, min_schema;
    int64_t     media;
    ngx_int_t   rc = NGX_OK;
    int         q;

    if (clef_plan_build(&ctx->req, &b, err) != 0
        || clef_plan_view(&plan, b.data, b.len, err) != 0)
    {
        clef_buf_free(&b);
        return NGX_ERROR;
    }

    ctx->n_options = 0;
    for (q = 0; q < ctx->req.n_questions; q++) {
        ctx->n_options += ctx->req.questions[q].n_options;
    }

    min_all = clef_plan_min_ids(&plan, mcf->model->max_token_bytes, 0);
    min_schema = min_all - clef_plan_min_ids(&plan,
                                             mcf->model->max_token_bytes, 1);
    /* media count with the schema (the reference never cuts them); too
     * many of their tokens is a 413, as Workers AI answers it, before the
     * engine decodes a pixel */
    media = clef_plan_media_ids(&plan, &mcf->model->media);
    if (media > 0 && min_schema + (size_t) media > (size_t) max_length) {
        clef_error_set(err, 413, "max_tokens_exceeded", "",
            "Request needs more than %zu tokens (its %d %s alone are "
            "%lld); the limit is %d.", min_schema + (size_t) media,
            plan.n_media, clef_plan_media_noun(&plan), (long long) media,
            (int) max_length);
        rc = NGX_DECLINED;
    } else if (min_schema > (size_t) max_length
        || (mcf->model->truncate == CLEF_TRUNCATE_REJECT
            && min_all > (size_t) max_length))
    {
        clef_error_set(err, 400, "max_tokens_exceeded", "",
            "Request needs more than %zu tokens (%s alone is %zu bytes); "
            "the limit is %d.", min_schema > (size_t) max_length
            ? min_schema : min_all,
            min_schema > (size_t) max_length ? "the schema" : "the state",
            min_schema > (size_t) max_length ? b.len - plan.state.len
                                             : plan.state.len,
            (int) max_length);
        rc = NGX_DECLINED;
    }
    clef_plan_free(&plan);

    if (rc == NGX_OK) {
        out->data = ngx_pnalloc(r->pool, b.len);
        if (out->data == NULL) {
            rc = NGX_ERROR;
        } else {
            ngx_memcpy(out->data, b.data, b.len);
            out->len = b.len;
        }
    }
    clef_buf_free(&b);
    return rc;
}


/* The body, parsed, validated, rendered and queued, with every allocation
 * of libclef in the request's pool (mem.h). */
static void
ngx_http_clef_body_handler(ngx_http_request_t *r)
{
    clef_mem_pool         mp;
    const clef_mem_pool  *prev;

    prev = ngx_http_clef_mem_begin(r, &mp);
    ngx_http_clef_process_body(r);
    clef_mem_use(prev);
}


/* The request's body, decompressed when it came in zstd; NULL when the
 * request was finalized instead.  *len is its length. */
static u_char *
ngx_http_clef_read_body(ngx_http_request_t *r, ngx_http_clef_main_conf_t *mcf,
    size_t *len)
{
    ngx_http_core_loc_conf_t  *clcf;
    ngx_str_t                  enc;
    ngx_uint_t                 status;
    size_t                     limit;
    const char                *why;
    u_char                    *body, msg[256];

    body = ngx_http_clef_collect_body(r, len);
    if (body == NULL) {
        ngx_http_finalize_request(r, NGX_HTTP_INTERNAL_SERVER_ERROR);
        return NULL;
    }

    if (ngx_http_clef_content_encoding(r, &enc) != 1) {
        return body;
    }

    /* the decoded body obeys client_max_body_size too */
    clcf = ngx_http_get_module_loc_conf(r, ngx_http_core_module);
    limit = clcf->client_max_body_size > 0
            ? (size_t) clcf->client_max_body_size
            : clef_zone_data_size(&mcf->queue);
    body = ngx_http_clef_unzstd(r, body, *len, limit, len, &status, &why);
    if (body == NULL) {
        if (status == NGX_HTTP_REQUEST_ENTITY_TOO_LARGE) {
            ngx_snprintf(msg, sizeof(msg), "Request body too large: the "
                         "limit is %uz bytes once decompressed%Z", limit);
        } else {
            ngx_snprintf(msg, sizeof(msg), "Cannot decompress the zstd "
                         "body: %s%Z", why);
        }
        ngx_http_finalize_request(r,
            ngx_http_clef_send_detail(r, status, (char *) msg));
    }
    return body;
}


/* Parses and validates the body with the location's limits; NGX_DONE
 * when the request was answered instead.  Validation happens here, in the
 * worker: a bad request never costs the engine anything. */
static ngx_int_t
ngx_http_clef_validate(ngx_http_request_t *r, ngx_http_clef_ctx_t *ctx,
    ngx_http_clef_main_conf_t *mcf, u_char *body, size_t len)
{
    ngx_http_clef_loc_conf_t  *llcf;
    clef_limits                lim;
    clef_error                 err;
    const char                *why;
    ngx_uint_t                 k;

    llcf = ngx_http_get_module_loc_conf(r, ngx_http_clef_module);
    clef_limits_default(&lim);
    lim.max_questions = (int) llcf->max_questions;
    for (k = 1; k < CLEF_MEDIA_KINDS; k++) {
        lim.media[k].max_items = (int) llcf->max_items[k];
    }
    clef_error_clear(&err);
    if (clef_request_parse(&ctx->req, (const char *) body, len, &lim, &err)
        != 0)
    {
        ngx_http_finalize_request(r, ngx_http_clef_send_error(r, &err, body,
                                                              len));
        return NGX_DONE;
    }
    ctx->parsed = 1;

    /* media: wire form, limits, base64 and headers, here in the worker;
     * their pixels are decoded by the engine's preparing thread */
    if (clef_request_check_media(&ctx->req, mcf->model->media.accepts, &err)
        != 0)
    {
        ngx_http_finalize_request(r, ngx_http_clef_send_error(r, &err, body,
                                                              len));
        return NGX_DONE;
    }

    why = clef_refusal(&mcf->queue, mcf->gen);
    if (why != NULL) {
        if (ngx_http_clef_set_retry_after(r, 1000) != NGX_OK) {
            ngx_http_finalize_request(r, NGX_HTTP_INTERNAL_SERVER_ERROR);
            return NGX_DONE;
        }
        ngx_http_finalize_request(r,
            ngx_http_clef_send_typed(r, NGX_HTTP_SERVICE_UNAVAILABLE,
                                     "engine_unavailable", why));
        return NGX_DONE;
    }
    return NGX_OK;
}


/* Renders the request's plan and queues it; NGX_DONE when the request
 * was answered instead (len: the body's, for a 413). */
static ngx_int_t
ngx_http_clef_queue_plan(ngx_http_request_t *r, ngx_http_clef_ctx_t *ctx,
    ngx_http_clef_main_conf_t *mcf, size_t len)
{
    ngx_http_clef_loc_conf_t  *llcf;
    clef_error                 err;
    clef_submission            sub;
    ngx_str_t                  plan;
    u_char                     msg[256];
    ngx_int_t                  max_length;
    int                        rc;
    ngx_msec_t                 ms;

    llcf = ngx_http_get_module_loc_conf(r, ngx_http_clef_module);
    max_length = ngx_min(llcf->max_tokens, mcf->model->max_length);
    rc = ngx_http_clef_make_plan(r, ctx, mcf, max_length, &plan, &err);
    if (rc == NGX_DECLINED) {
        ngx_http_finalize_request(r, ngx_http_clef_send_error(r, &err, NULL,
                                                              0));
        return NGX_DONE;
    }
    if (rc != NGX_OK) {
        ngx_http_finalize_request(r, NGX_HTTP_INTERNAL_SERVER_ERROR);
        return NGX_DONE;
    }

    ngx_memzero(&sub, sizeof(sub));
    sub.body = plan.data;
    sub.body_len = plan.len;
    sub.n_options = (uint32_t) ctx->n_options;
    sub.max_length = (int32_t) max_length;
    sub.truncate = (int32_t) mcf->model->truncate;
    sub.gen = mcf->gen;
    sub.owner_pid = ngx_pid;
    sub.deadline_ns = ctx->start_ns + (int64_t) mcf->timeout * 1000000;
    sub.max_queue = (uint32_t) mcf->max_queue;

    rc = clef_submit(&mcf->queue, &sub, &ctx->ticket);
    switch (rc) {

    case CLEF_Q_OK:
        return NGX_OK;

    case CLEF_Q_TOO_BIG:
        ngx_snprintf(msg, sizeof(msg), "Request body too large for the "
                     "clef_engine zone (%uz bytes)%Z", len);
        ngx_http_finalize_request(r,
            ngx_http_clef_send_detail(r, NGX_HTTP_REQUEST_ENTITY_TOO_LARGE,
                                      (char *) msg));
        return NGX_DONE;

    default:
        ms = clef_retry_after_ms(&mcf->queue);
        if (ngx_http_clef_set_retry_after(r, ms) != NGX_OK) {
            ngx_http_finalize_request(r, NGX_HTTP_INTERNAL_SERVER_ERROR);
            return NGX_DONE;
        }
        ngx_snprintf(msg, sizeof(msg), "the queue is full; retry after "
                     "%M ms%Z", ms);
        ngx_http_finalize_request(r,
            ngx_http_clef_send_typed(r, NGX_HTTP_TOO_MANY_REQUESTS,
                                     "rate_limit_error", (char *) msg));
        return NGX_DONE;
    }
}


static void
ngx_http_clef_process_body(ngx_http_request_t *r)
{
    ngx_http_clef_main_conf_t  *mcf;
    ngx_http_clef_ctx_t        *ctx;
    ngx_pool_cleanup_t         *cln;
    u_char                     *body;
    size_t                      len;

    mcf = ngx_http_get_module_main_conf(r, ngx_http_clef_module);
    ctx = ngx_http_clef_get_ctx(r);
    if (ctx == NULL) {
        ngx_http_finalize_request(r, NGX_HTTP_INTERNAL_SERVER_ERROR);
        return;
    }

    body = ngx_http_clef_read_body(r, mcf, &len);
    if (body == NULL) {
        return;
    }

    cln = ngx_pool_cleanup_add(r->pool, 0);
    if (cln == NULL) {
        ngx_http_finalize_request(r, NGX_HTTP_INTERNAL_SERVER_ERROR);
        return;
    }
    cln->handler = ngx_http_clef_cleanup;
    cln->data = ctx;

    if (ngx_http_clef_validate(r, ctx, mcf, body, len) != NGX_OK
        || ngx_http_clef_queue_plan(r, ctx, mcf, len) != NGX_OK)
    {
        return;
    }

    ctx->submitted = 1;
    ctx->pending = 1;
    ngx_queue_insert_tail(&ngx_http_clef_pending, &ctx->link);
    if (ctx->ticket.slot < ngx_http_clef_nslots) {
        ngx_http_clef_by_slot[ctx->ticket.slot] = ctx;
    }

    /* not cancelable: a worker that shuts down gracefully after a reload
     * keeps its requests in flight until they are answered */
    ctx->deadline.handler = ngx_http_clef_deadline_handler;
    ctx->deadline.data = ctx;
    ctx->deadline.log = r->connection->log;
    ngx_add_timer(&ctx->deadline, mcf->timeout);

    /* a client that closes its connection cancels its record */
    r->read_event_handler = ngx_http_test_reading;
    r->write_event_handler = ngx_http_request_empty_handler;

    /* the record may have been answered between submit and here (an
     * engine error), but then a wake-up is on its way: nothing to do */
}


/* ---- the engine's answer -------------------------------------------------------- */

static ngx_int_t
ngx_http_clef_answer(ngx_http_request_t *r, ngx_http_clef_ctx_t *ctx,
    ngx_http_clef_main_conf_t *mcf, const clef_result *res)
{
    clef_request       *req = &ctx->req;
    clef_record         rec;
    clef_answer_opts    opts;
    clef_buf            out = { NULL, 0, 0 };
    clef_qtype         *types;
    int                *offsets;
    int                 q, off;
    u_char             *body, name[256];
    size_t              len;

    /* the record as the answer needs it: question types and option
     * offsets from the request, token counts from the engine */
    types = ngx_palloc(r->pool, (req->n_questions + 1) * sizeof(clef_qtype));
    offsets = ngx_palloc(r->pool, (req->n_questions + 1) * sizeof(int));
    if (types == NULL || offsets == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }
    off = 0;
    for (q = 0; q < req->n_questions; q++) {
        types[q] = req->questions[q].type;
        offsets[q] = off;
        off += req->questions[q].n_options;
    }
    offsets[q] = off;

    ngx_memzero(&rec, sizeof(rec));
    rec.ids.n = (size_t) res->n_tokens;
    rec.n_questions = req->n_questions;
    rec.question_types = types;
    rec.option_offset = offsets;
    rec.n_options = off;
    rec.state_tokens = (size_t) res->state_tokens;
    rec.state_kept = (size_t) res->state_kept;

    ngx_memzero(&opts, sizeof(opts));
    len = ngx_min(mcf->model->name.len, sizeof(name) - 1);
    ngx_memcpy(name, mcf->model->name.data, len);
    name[len] = '\0';
    opts.model = (const char *) name;

    if (clef_answer_json(&out, req, &rec, res->logits, &opts) != 0) {
        clef_buf_free(&out);
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }
    body = ngx_pnalloc(r->pool, out.len);
    if (body == NULL) {
        clef_buf_free(&out);
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }
    ngx_memcpy(body, out.data, out.len);
    len = out.len;
    clef_buf_free(&out);

    return ngx_http_clef_send(r, NGX_HTTP_OK, NULL, body, len);
}


/* The request leaves the worker's pending set. */
static void
ngx_http_clef_unlink(ngx_http_clef_ctx_t *ctx)
{
    if (ctx->pending) {
        ngx_queue_remove(&ctx->link);
        ctx->pending = 0;
        if (ctx->ticket.slot < ngx_http_clef_nslots
            && ngx_http_clef_by_slot[ctx->ticket.slot] == ctx)
        {
            ngx_http_clef_by_slot[ctx->ticket.slot] = NULL;
        }
    }
}


static void
ngx_http_clef_finish(ngx_http_clef_ctx_t *ctx)
{
    ngx_http_request_t         *r = ctx->request;
    ngx_connection_t           *c = r->connection;
    ngx_http_clef_main_conf_t  *mcf;
    clef_result                 res;
    clef_error                  err;
    ngx_int_t                   rc;
    clef_mem_pool               mp;
    const clef_mem_pool        *prev;

    mcf = ngx_http_get_module_main_conf(r, ngx_http_clef_module);

    ngx_http_clef_unlink(ctx);
    ctx->finished = 1;
    if (ctx->deadline.timer_set) {
        ngx_del_timer(&ctx->deadline);
    }

    prev = ngx_http_clef_mem_begin(r, &mp);
    if (clef_result_read(&mcf->queue, ctx->ticket, &res) != 0) {
        clef_error_fail(&err, CLEF_E_INTERNAL,
                        "the engine lost this request");
        rc = ngx_http_clef_send_error(r, &err, NULL, 0);
        goto finalize;
    }

    ctx->queue_ns = res.queue_ns;
    ctx->engine_ns = res.engine_ns;
    if (res.status == 0) {
        ctx->input_tokens = res.n_tokens;
        clef_count_answer(&mcf->queue, &res);
        rc = ngx_http_clef_answer(r, ctx, mcf, &res);
    } else {
        rc = ngx_http_clef_send_error(r, &res.error, NULL, 0);
    }

finalize:
    /* the answer is in the request's pool now: the slot can go */
    clef_release(&mcf->queue, ctx->ticket);
    clef_mem_use(prev);
    ngx_http_finalize_request(r, rc);
    ngx_http_run_posted_requests(c);
}


/* Finishes every pending request whose record is done (after lost
 * wake-ups). */
static void
ngx_http_clef_scan(ngx_http_clef_main_conf_t *mcf)
{
    ngx_queue_t          *q, *next;
    ngx_http_clef_ctx_t  *ctx;

    for (q = ngx_queue_head(&ngx_http_clef_pending);
         q != ngx_queue_sentinel(&ngx_http_clef_pending);
         q = next)
    {
        next = ngx_queue_next(q);
        ctx = ngx_queue_data(q, ngx_http_clef_ctx_t, link);
        if (clef_poll(&mcf->queue, ctx->ticket) == CLEF_RECORD_DONE) {
            ngx_http_clef_finish(ctx);
        }
    }
}


static void
ngx_http_clef_wake_handler(ngx_event_t *rev)
{
    ngx_connection_t           *c = rev->data;
    ngx_http_clef_main_conf_t  *mcf = c->data;
    ngx_http_clef_ctx_t        *ctx;
    clef_wake_note              notes[64];
    uint64_t                    lost;
    int                         i, n;

    do {
        n = clef_wake_recv(c->fd, notes, 64);
        for (i = 0; i < n; i++) {
            if (notes[i].slot >= ngx_http_clef_nslots) {
                continue;
            }
            ctx = ngx_http_clef_by_slot[notes[i].slot];
            /* a stale note (the slot was reused) names another seq */
            if (ctx != NULL && ctx->ticket.seq == notes[i].seq
                && clef_poll(&mcf->queue, ctx->ticket) == CLEF_RECORD_DONE)
            {
                ngx_http_clef_finish(ctx);
            }
        }
    } while (n == 64);

    /* a wake-up that found this socket full is counted, not sent: look at
     * every pending record once when the count moves */
    lost = clef_wake_lost(&mcf->queue);
    if (lost != ngx_http_clef_lost_seen) {
        ngx_http_clef_lost_seen = lost;
        ngx_http_clef_scan(mcf);
    }
}


static void
ngx_http_clef_deadline_handler(ngx_event_t *ev)
{
    ngx_http_clef_ctx_t        *ctx = ev->data;
    ngx_http_request_t         *r = ctx->request;
    ngx_connection_t           *c = r->connection;
    ngx_http_clef_main_conf_t  *mcf;
    clef_status_brief           brief;
    clef_mem_pool               mp;
    const clef_mem_pool        *prev;
    ngx_int_t                   rc;
    u_char                      msg[256];

    mcf = ngx_http_get_module_main_conf(r, ngx_http_clef_module);

    switch (clef_poll(&mcf->queue, ctx->ticket)) {

    case CLEF_RECORD_DONE:
        /* answered in time after all; its wake-up is still on its way */
        ngx_http_clef_finish(ctx);
        return;

    case CLEF_RECORD_RUNNING:
        /* the deadline bounds the wait for a forward to start; a running
         * one is waited for (the watchdog ends one that makes no
         * progress, and its record is then answered 503) */
        if (!ctx->running_logged) {
            ctx->running_logged = 1;
            ngx_log_error(NGX_LOG_INFO, c->log, 0, "clef: deadline passed "
                          "while the record's forward runs; waiting for it");
        }
        ngx_add_timer(&ctx->deadline, NGX_HTTP_CLEF_RUNNING_RECHECK);
        return;

    default:
        break;
    }

    ngx_http_clef_unlink(ctx);
    ctx->finished = 1;
    clef_cancel(&mcf->queue, ctx->ticket);
    clef_status_brief_read(&mcf->queue, &brief);
    prev = ngx_http_clef_mem_begin(r, &mp);

    ngx_log_error(NGX_LOG_WARN, c->log, 0,
                  "clef: the engine did not start this record within %M ms "
                  "(queue depth %uD, engine %s)", mcf->timeout,
                  brief.queued, clef_engine_state_name(brief.state));
    ngx_snprintf(msg, sizeof(msg), "the engine did not start this request "
                 "within %M ms (queue depth %uD, engine %s); retry later%Z",
                 mcf->timeout, brief.queued,
                 clef_engine_state_name(brief.state));
    rc = ngx_http_clef_send_typed(r, NGX_HTTP_GATEWAY_TIME_OUT,
                                  "timeout_error", (char *) msg);
    clef_mem_use(prev);
    ngx_http_finalize_request(r, rc);
    ngx_http_run_posted_requests(c);
}


/* The request is going (answered, or the client left): give the record
 * back, cancel it if it still waits, free the parsed request. */
static void
ngx_http_clef_cleanup(void *data)
{
    ngx_http_clef_ctx_t        *ctx = data;
    ngx_http_clef_main_conf_t  *mcf;

    mcf = ngx_http_get_module_main_conf(ctx->request, ngx_http_clef_module);

    if (ctx->deadline.timer_set) {
        ngx_del_timer(&ctx->deadline);
    }
    ngx_http_clef_unlink(ctx);
    if (ctx->submitted && !ctx->finished) {
        ctx->finished = 1;
        if (clef_cancel(&mcf->queue, ctx->ticket)) {
            ngx_log_error(NGX_LOG_INFO, ctx->request->connection->log, 0,
                          "clef: client went away, record cancelled");
        }
    }
    if (ctx->parsed) {
        clef_request_free(&ctx->req);
        ctx->parsed = 0;
    }
}


/* ---- the worker's wake socket ----------------------------------------------------- */

ngx_int_t
ngx_http_clef_wake_init(ngx_cycle_t *cycle, ngx_http_clef_main_conf_t *mcf)
{
    ngx_connection_t  *c;
    clef_status        st;
    int                fd;

    ngx_queue_init(&ngx_http_clef_pending);

    /* requests by slot, for the wake handler (once per worker) */
    clef_status_read(&mcf->queue, &st);
    ngx_http_clef_nslots = st.usage.nslots;
    ngx_http_clef_by_slot = ngx_pcalloc(cycle->pool, ngx_http_clef_nslots
                                        * sizeof(ngx_http_clef_ctx_t *));
    if (ngx_http_clef_by_slot == NULL) {
        return NGX_ERROR;
    }
    ngx_http_clef_lost_seen = clef_wake_lost(&mcf->queue);

    fd = clef_wake_listen(clef_zone_id(&mcf->queue), ngx_pid);
    if (fd == -1) {
        ngx_log_error(NGX_LOG_EMERG, cycle->log, ngx_socket_errno,
                      "clef: cannot bind the wake-up socket");
        return NGX_ERROR;
    }

    c = ngx_get_connection(fd, cycle->log);
    if (c == NULL) {
        (void) close(fd);
        return NGX_ERROR;
    }
    c->data = mcf;
    c->log = cycle->log;
    c->read->log = cycle->log;
    c->write->log = cycle->log;
    c->read->handler = ngx_http_clef_wake_handler;

    /* level-triggered: a datagram left unread wakes us again */
    if (ngx_add_event(c->read, NGX_READ_EVENT, 0) != NGX_OK) {
        ngx_free_connection(c);
        (void) close(fd);
        return NGX_ERROR;
    }

    ngx_http_clef_wake_conn = c;
    return NGX_OK;
}


void
ngx_http_clef_wake_close(ngx_cycle_t *cycle)
{
    if (ngx_http_clef_wake_conn != NULL) {
        /* registered with ngx_get_connection: closed with it (recipe 6.5) */
        ngx_close_connection(ngx_http_clef_wake_conn);
        ngx_http_clef_wake_conn = NULL;
    }
}
