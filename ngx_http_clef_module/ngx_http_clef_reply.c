/*
 * Responses of the clef locations: every one is JSON in one of the System
 * One error shapes (docs/spec/protocol.md §7):
 *   {"detail":"..."}                                   400 limits, 405, 413, 415
 *   {"detail":{"error_type":"...","message":"..."}}    401/403, 400
 *                                                      max_tokens_exceeded,
 *                                                      429, 5xx
 *   {"detail":[{"type","loc","msg","input"}]}          422
 * and carries x-typesafe-request-id.  A header and body filter gives
 * nginx's own error pages in these locations (413 from
 * client_max_body_size, 400 for a broken chunked body, ...) the same shape.
 */
#include "ngx_http_clef_module.h"


static ngx_str_t  ngx_http_clef_json_type = ngx_string("application/json");

static ngx_http_output_header_filter_pt  ngx_http_next_header_filter;
static ngx_http_output_body_filter_pt    ngx_http_next_body_filter;


ngx_http_clef_ctx_t *
ngx_http_clef_get_ctx(ngx_http_request_t *r)
{
    ngx_http_clef_ctx_t  *ctx;

    ctx = ngx_http_get_module_ctx(r, ngx_http_clef_module);
    if (ctx != NULL) {
        return ctx;
    }
    ctx = ngx_pcalloc(r->pool, sizeof(ngx_http_clef_ctx_t));
    if (ctx == NULL) {
        return NULL;
    }
    ctx->request = r;
    ctx->start_ns = clef_now_ns();
    ctx->queue_ns = -1;
    ctx->engine_ns = -1;
    ctx->input_tokens = -1;
    ngx_http_set_ctx(r, ctx, ngx_http_clef_module);
    return ctx;
}


static ngx_table_elt_t *
ngx_http_clef_add_header(ngx_http_request_t *r, const char *name,
    u_char *value, size_t len)
{
    ngx_table_elt_t  *h;

    h = ngx_list_push(&r->headers_out.headers);
    if (h == NULL) {
        return NULL;
    }
    h->hash = 1;
    h->key.data = (u_char *) name;
    h->key.len = ngx_strlen(name);
    h->value.data = value;
    h->value.len = len;
    return h;
}


/* x-typesafe-request-id: req_ + the request's $request_id; in the
 * Cloudflare form, cf-ray: $request_id */
static ngx_int_t
ngx_http_clef_request_id(ngx_http_request_t *r)
{
    ngx_http_clef_main_conf_t  *mcf;
    ngx_http_clef_loc_conf_t   *llcf;
    ngx_http_variable_value_t  *v;
    u_char                     *p;

    mcf = ngx_http_get_module_main_conf(r, ngx_http_clef_module);
    if (mcf->request_id_index == NGX_ERROR) {
        return NGX_OK;
    }
    v = ngx_http_get_indexed_variable(r, mcf->request_id_index);
    if (v == NULL || v->not_found) {
        return NGX_OK;
    }
    llcf = ngx_http_get_module_loc_conf(r, ngx_http_clef_module);
    if (llcf->envelope == NGX_HTTP_CLEF_ENVELOPE_CLOUDFLARE) {
        return ngx_http_clef_add_header(r, "cf-ray", v->data, v->len)
               ? NGX_OK : NGX_ERROR;
    }
    p = ngx_pnalloc(r->pool, 4 + v->len);
    if (p == NULL) {
        return NGX_ERROR;
    }
    ngx_memcpy(ngx_cpymem(p, "req_", 4), v->data, v->len);
    return ngx_http_clef_add_header(r, "x-typesafe-request-id", p, 4 + v->len)
           ? NGX_OK : NGX_ERROR;
}


static void *
ngx_http_clef_pool_alloc(void *ctx, size_t n)
{
    u_char  *p = ngx_palloc(ctx, n + 15);

    return p != NULL ? ngx_align_ptr(p, 16) : NULL;
}


const clef_mem_pool *
ngx_http_clef_mem_begin(ngx_http_request_t *r, clef_mem_pool *mp)
{
    mp->alloc = ngx_http_clef_pool_alloc;
    mp->ctx = r->pool;
    return clef_mem_use(mp);
}


ngx_int_t
ngx_http_clef_send(ngx_http_request_t *r, ngx_uint_t status,
    ngx_str_t *content_type, u_char *body, size_t len)
{
    ngx_http_clef_loc_conf_t  *llcf;
    ngx_http_clef_ctx_t       *ctx;
    ngx_buf_t                 *b;
    ngx_chain_t                out;
    ngx_int_t                  rc;

    ctx = ngx_http_clef_get_ctx(r);
    if (ctx == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }
    ctx->own_response = 1;

    llcf = ngx_http_get_module_loc_conf(r, ngx_http_clef_module);
    if (llcf->envelope == NGX_HTTP_CLEF_ENVELOPE_CLOUDFLARE
        && content_type == NULL
        && ngx_http_clef_envelope_wrap(r, status, &body, &len) != NGX_OK)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    r->headers_out.status = status;
    r->headers_out.content_type = content_type ? *content_type
                                               : ngx_http_clef_json_type;
    r->headers_out.content_type_len = r->headers_out.content_type.len;
    r->headers_out.content_type_lowcase = NULL;
    r->headers_out.content_length_n = len;

    if (ngx_http_clef_request_id(r) != NGX_OK
        || ngx_http_clef_server_timing(r, ctx) != NGX_OK)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    if (r->method == NGX_HTTP_HEAD || len == 0) {
        r->header_only = 1;
    }

    rc = ngx_http_send_header(r);
    if (rc == NGX_ERROR || rc > NGX_OK || r->header_only) {
        return rc;
    }

    b = ngx_calloc_buf(r->pool);
    if (b == NULL) {
        return NGX_ERROR;
    }
    b->pos = body;
    b->last = body + len;
    b->memory = 1;
    b->last_buf = (r == r->main) ? 1 : 0;
    b->last_in_chain = 1;

    out.buf = b;
    out.next = NULL;

    return ngx_http_output_filter(r, &out);
}


/* Copies a clef_buf into the request pool and frees it. */
static u_char *
ngx_http_clef_pool_copy(ngx_http_request_t *r, clef_buf *b)
{
    u_char  *p;

    p = ngx_pnalloc(r->pool, b->len ? b->len : 1);
    if (p != NULL) {
        ngx_memcpy(p, b->data, b->len);
    }
    return p;
}


ngx_int_t
ngx_http_clef_send_buf(ngx_http_request_t *r, ngx_uint_t status,
    ngx_str_t *content_type, clef_buf *b, int ok)
{
    u_char  *p;
    size_t   len = b->len;

    p = ok ? ngx_http_clef_pool_copy(r, b) : NULL;
    clef_buf_free(b);
    if (p == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }
    return ngx_http_clef_send(r, status, content_type, p, len);
}


static int
ngx_http_clef_render_detail(clef_buf *b, const char *message)
{
    return clef_buf_append(b, "{\"detail\":", 10) == 0
           && clef_render_string(b, message, strlen(message)) == 0
           && clef_buf_putc(b, '}') == 0;
}


static int
ngx_http_clef_render_typed(clef_buf *b, const char *error_type,
    const char *message)
{
    return clef_buf_append(b, "{\"detail\":{\"error_type\":", 24) == 0
           && clef_render_string(b, error_type, strlen(error_type)) == 0
           && clef_buf_append(b, ",\"message\":", 11) == 0
           && clef_render_string(b, message, strlen(message)) == 0
           && clef_buf_append(b, "}}", 2) == 0;
}


ngx_int_t
ngx_http_clef_send_detail(ngx_http_request_t *r, ngx_uint_t status,
    const char *message)
{
    clef_buf  b = { NULL, 0, 0 };

    return ngx_http_clef_send_buf(r, status, NULL, &b,
                                  ngx_http_clef_render_detail(&b, message));
}


ngx_int_t
ngx_http_clef_send_typed(ngx_http_request_t *r, ngx_uint_t status,
    const char *error_type, const char *message)
{
    clef_buf  b = { NULL, 0, 0 };

    return ngx_http_clef_send_buf(r, status, NULL, &b,
                                  ngx_http_clef_render_typed(&b, error_type,
                                                             message));
}


/* The "input" of a 422 entry, as pydantic reports it: the object a missing
 * field belongs to, the offending value otherwise ({} for unparseable
 * JSON).  Found by walking loc through the body. */
static int
ngx_http_clef_render_input(clef_buf *out, const clef_error *err,
    const u_char *body, size_t len)
{
    clef_arena        arena;
    clef_error        e2;
    const clef_json  *root, *loc, *v, *step;
    size_t            i, n, at;
    int               rc;

    if (ngx_strcmp(err->type, "json_invalid") == 0 || body == NULL) {
        return clef_buf_append(out, "{}", 2);
    }

    clef_arena_init(&arena, 4096);
    root = clef_json_parse(&arena, (const char *) body, len, &e2);
    loc = err->loc[0]
          ? clef_json_parse(&arena, err->loc, strlen(err->loc), &e2) : NULL;
    v = root;

    if (root != NULL && loc != NULL && loc->type == CLEF_JSON_ARRAY) {
        n = loc->len;
        if (ngx_strcmp(err->type, "missing") == 0 && n > 0) {
            n--;
        }
        /* loc[0] is "body" */
        for (i = 1; i < n && v != NULL; i++) {
            step = loc->items[i];
            if (step->type == CLEF_JSON_STRING && v->type == CLEF_JSON_OBJECT) {
                v = clef_json_get(v, step->str);
            } else if (step->type == CLEF_JSON_INT
                       && v->type == CLEF_JSON_ARRAY)
            {
                long k = strtol(step->str, NULL, 10);
                v = (k >= 0 && (size_t) k < v->len) ? v->items[k] : NULL;
            } else {
                v = NULL;
            }
        }
    }

    at = out->len;
    rc = v != NULL ? clef_render_json(out, v) : clef_buf_append(out, "null", 4);
    /* an image is megabytes of base64: its entry says how big it was
     * instead of echoing it */
    if (rc == 0 && out->len - at > 512
        && ngx_strncmp(err->loc, "[\"body\",\"images\"", 17) == 0)
    {
        n = out->len - at;
        out->len = at;
        rc = clef_buf_printf(out, "\"(%zu bytes, not echoed)\"", n);
    }
    clef_arena_free(&arena);
    return rc;
}


/* The errors of a media item or a media field, answered with their loc:
 * image_*, images_too_large, video*, audio* and media_kwargs_*
 * ("images_unsupported" keeps the plain typed form it always had). */
static ngx_int_t
ngx_http_clef_media_typed(const char *type)
{
    static const char *const  prefixes[] = {
        "image_", "images_too_large", "video", "audio", "media_kwargs"
    };
    ngx_uint_t                i;

    for (i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
        if (ngx_strncmp(type, prefixes[i], ngx_strlen(prefixes[i])) == 0) {
            return 1;
        }
    }
    return 0;
}


ngx_int_t
ngx_http_clef_send_error(ngx_http_request_t *r, const clef_error *err,
    const u_char *body, size_t len)
{
    clef_buf     b = { NULL, 0, 0 };
    int          ok;
    ngx_uint_t   status = err->status >= 400 ? (ngx_uint_t) err->status : 500;
    const char  *type;

    if (status == NGX_HTTP_UNPROCESSABLE_ENTITY) {
        ok = clef_buf_append(&b, "{\"detail\":[{\"type\":", 19) == 0
             && clef_render_string(&b, err->type, strlen(err->type)) == 0
             && clef_buf_append(&b, ",\"loc\":", 7) == 0
             && (err->loc[0]
                 ? clef_buf_append(&b, err->loc, strlen(err->loc))
                 : clef_buf_append(&b, "[\"body\"]", 8)) == 0
             && clef_buf_append(&b, ",\"msg\":", 7) == 0
             && clef_render_string(&b, err->message, strlen(err->message)) == 0
             && clef_buf_append(&b, ",\"input\":", 9) == 0
             && ngx_http_clef_render_input(&b, err, body, len) == 0
             && clef_buf_append(&b, "}]}", 3) == 0;
        return ngx_http_clef_send_buf(r, status, NULL, &b, ok);
    }

    /* an image refused says which one, a media field not served says
     * which: the typed form with its loc */
    if ((status == NGX_HTTP_BAD_REQUEST
         || status == NGX_HTTP_REQUEST_ENTITY_TOO_LARGE)
        && ngx_http_clef_media_typed(err->type) && err->loc[0])
    {
        ok = clef_buf_append(&b, "{\"detail\":{\"error_type\":", 24) == 0
             && clef_render_string(&b, err->type, strlen(err->type)) == 0
             && clef_buf_append(&b, ",\"message\":", 11) == 0
             && clef_render_string(&b, err->message, strlen(err->message)) == 0
             && clef_buf_append(&b, ",\"loc\":", 7) == 0
             && clef_buf_append(&b, err->loc, strlen(err->loc)) == 0
             && clef_buf_append(&b, "}}", 2) == 0;
        return ngx_http_clef_send_buf(r, status, NULL, &b, ok);
    }

    /* the limits of the protocol are plain details; what this server
     * cannot serve says its type, as Workers AI's refusals do */
    if (status == NGX_HTTP_BAD_REQUEST
        && err->code != CLEF_E_TOO_LARGE && err->code != CLEF_E_UNSUPPORTED)
    {
        return ngx_http_clef_send_detail(r, status, err->message);
    }

    type = err->type[0] ? err->type : "internal_error";
    if (ngx_strcmp(type, "timeout") == 0) {
        type = "timeout_error";
    }
    if (status == NGX_HTTP_SERVICE_UNAVAILABLE
        && ngx_http_clef_set_retry_after(r, 1000) != NGX_OK)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }
    return ngx_http_clef_send_typed(r, status, type, err->message);
}


ngx_int_t
ngx_http_clef_send_not_allowed(ngx_http_request_t *r, const char *allow)
{
    if (ngx_http_discard_request_body(r) != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }
    if (ngx_http_clef_add_header(r, "Allow", (u_char *) allow,
                                 ngx_strlen(allow))
        == NULL)
    {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }
    return ngx_http_clef_send_detail(r, NGX_HTTP_NOT_ALLOWED,
                                     "Method Not Allowed");
}


ngx_int_t
ngx_http_clef_get_only(ngx_http_request_t *r)
{
    if (ngx_http_clef_get_ctx(r) == NULL) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }
    if (!(r->method & (NGX_HTTP_GET | NGX_HTTP_HEAD))) {
        return ngx_http_clef_send_not_allowed(r, "GET, HEAD");
    }
    return NGX_DECLINED;
}


ngx_int_t
ngx_http_clef_set_retry_after(ngx_http_request_t *r, ngx_msec_t ms)
{
    u_char  *p, *e;

    /* Retry-After in whole seconds (rounded up), retry-after-ms exactly;
     * the SDKs prefer the latter */
    p = ngx_pnalloc(r->pool, 2 * NGX_INT_T_LEN);
    if (p == NULL) {
        return NGX_ERROR;
    }
    e = ngx_sprintf(p, "%M", (ms + 999) / 1000);
    if (ngx_http_clef_add_header(r, "Retry-After", p, e - p) == NULL) {
        return NGX_ERROR;
    }
    p = e;
    e = ngx_sprintf(p, "%M", ms);
    if (ngx_http_clef_add_header(r, "retry-after-ms", p, e - p) == NULL) {
        return NGX_ERROR;
    }
    return NGX_OK;
}


/* ---- API keys ------------------------------------------------------------------- */

static ngx_int_t
ngx_http_clef_key_equal(ngx_str_t *a, u_char *b, size_t len)
{
    size_t  i;
    u_char  d;

    if (a->len != len) {
        return 0;
    }
    /* constant time in the key's length */
    d = 0;
    for (i = 0; i < len; i++) {
        d |= a->data[i] ^ b[i];
    }
    return d == 0;
}


ngx_int_t
ngx_http_clef_check_api_key(ngx_http_request_t *r,
    ngx_http_clef_loc_conf_t *llcf)
{
    ngx_table_elt_t  *h;
    ngx_str_t        *keys;
    ngx_uint_t        i;
    u_char           *p, *last;

    if (llcf->api_keys == NULL || llcf->api_keys->nelts == 0) {
        return NGX_DECLINED;
    }

    h = r->headers_in.authorization;
    p = NULL;
    last = NULL;
    if (h != NULL && h->value.len > 7
        && ngx_strncasecmp(h->value.data, (u_char *) "Bearer ", 7) == 0)
    {
        p = h->value.data + 7;
        last = h->value.data + h->value.len;
        while (p < last && *p == ' ') {
            p++;
        }
        while (last > p && last[-1] == ' ') {
            last--;
        }
    }

    if (p == NULL || p == last) {
        if (ngx_http_discard_request_body(r) != NGX_OK) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }
        return ngx_http_clef_send_typed(r, NGX_HTTP_FORBIDDEN,
                   "authentication_error",
                   "Must supply an API key! Check your request and try again.");
    }

    keys = llcf->api_keys->elts;
    for (i = 0; i < llcf->api_keys->nelts; i++) {
        if (ngx_http_clef_key_equal(&keys[i], p, last - p)) {
            return NGX_DECLINED;
        }
    }

    if (ngx_http_discard_request_body(r) != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }
    return ngx_http_clef_send_typed(r, NGX_HTTP_UNAUTHORIZED,
               "authentication_error",
               "Cannot authenticate with the server. Please check your API "
               "key and try again.");
}


/* ---- nginx's own error pages, as JSON ------------------------------------------ */

/* Reason phrases for the details nginx's own errors get (RFC 9110). */
static const char *
ngx_http_clef_reason(ngx_uint_t status)
{
    switch (status) {
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 406: return "Not Acceptable";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 410: return "Gone";
    case 411: return "Length Required";
    case 412: return "Precondition Failed";
    case 414: return "URI Too Long";
    case 415: return "Unsupported Media Type";
    case 416: return "Range Not Satisfiable";
    case 421: return "Misdirected Request";
    case 431:
    case 494: return "Request Header Fields Too Large";
    case 495: return "SSL Certificate Error";
    case 496: return "SSL Certificate Required";
    case 497: return "HTTP Request Sent to HTTPS Port";
    default:  return NULL;
    }
}


/* Errors nginx itself makes (a body too large for clef_systemone, an
 * unknown path, a malformed request line, limit_req's 429, an upstream's
 * 502) get a JSON body in the System One shapes, in clef locations always
 * and wherever clef_json_errors is on.  A response that is JSON already
 * (a proxied engine node's answer) is left alone. */
static ngx_int_t
ngx_http_clef_header_filter(ngx_http_request_t *r)
{
    ngx_http_clef_loc_conf_t  *llcf;
    ngx_http_core_loc_conf_t  *clcf;
    ngx_http_clef_ctx_t       *ctx;
    ngx_uint_t                 status = r->headers_out.status;
    clef_buf                   b = { NULL, 0, 0 };
    const char                *reason;
    char                       msg[128];
    int                        ok;

    if (r != r->main || status < NGX_HTTP_BAD_REQUEST) {
        return ngx_http_next_header_filter(r);
    }
    llcf = ngx_http_get_module_loc_conf(r, ngx_http_clef_module);
    if (llcf == NULL
        || (llcf->handler != NGX_HTTP_CLEF_SYSTEMONE
            && llcf->handler != NGX_HTTP_CLEF_MODELS
            && !llcf->json_errors))
    {
        return ngx_http_next_header_filter(r);
    }
    ctx = ngx_http_clef_get_ctx(r);
    if (ctx == NULL) {
        return NGX_ERROR;
    }
    if (ctx->own_response
        || (r->headers_out.content_type.len >= 16
            && ngx_strncasecmp(r->headers_out.content_type.data,
                               (u_char *) "application/json", 16) == 0))
    {
        return ngx_http_next_header_filter(r);
    }

    if (status == NGX_HTTP_REQUEST_ENTITY_TOO_LARGE) {
        clcf = ngx_http_get_module_loc_conf(r, ngx_http_core_module);
        ngx_sprintf((u_char *) msg, "Request body too large: the limit is "
                    "%O bytes%Z", clcf->client_max_body_size);
        ok = ngx_http_clef_render_detail(&b, msg);
    } else if (status == NGX_HTTP_TOO_MANY_REQUESTS) {
        /* limit_req in front of the engine: the shape the SDKs retry on */
        if (ngx_http_clef_set_retry_after(r, 1000) != NGX_OK) {
            return NGX_ERROR;
        }
        ok = ngx_http_clef_render_typed(&b, "rate_limit_error",
                                        "Too Many Requests");
    } else if (status == NGX_HTTP_SERVICE_UNAVAILABLE) {
        if (ngx_http_clef_set_retry_after(r, 1000) != NGX_OK) {
            return NGX_ERROR;
        }
        ok = ngx_http_clef_render_typed(&b, "service_unavailable",
                                        "Service Unavailable; retry");
    } else if (status >= NGX_HTTP_INTERNAL_SERVER_ERROR) {
        ngx_sprintf((u_char *) msg, "the server answered %ui%Z", status);
        ok = ngx_http_clef_render_typed(&b, "internal_error", msg);
    } else {
        reason = ngx_http_clef_reason(status);
        if (reason == NULL) {
            ngx_sprintf((u_char *) msg, "Client error (%ui)%Z", status);
            reason = msg;
        }
        ok = ngx_http_clef_render_detail(&b, reason);
    }
    ctx->error_body.data = ok ? ngx_http_clef_pool_copy(r, &b) : NULL;
    ctx->error_body.len = b.len;
    clef_buf_free(&b);
    if (ctx->error_body.data == NULL
        || (llcf->envelope == NGX_HTTP_CLEF_ENVELOPE_CLOUDFLARE
            && ngx_http_clef_envelope_wrap(r, status, &ctx->error_body.data,
                                           &ctx->error_body.len)
               != NGX_OK))
    {
        return NGX_ERROR;
    }

    ctx->replace_body = 1;
    r->headers_out.content_type = ngx_http_clef_json_type;
    r->headers_out.content_type_len = ngx_http_clef_json_type.len;
    r->headers_out.content_type_lowcase = NULL;
    r->headers_out.charset.len = 0;
    ngx_http_clear_content_length(r);
    ngx_http_clear_accept_ranges(r);
    ngx_http_clear_last_modified(r);
    ngx_http_clear_etag(r);
    r->headers_out.content_length_n = ctx->error_body.len;

    if (ngx_http_clef_request_id(r) != NGX_OK) {
        return NGX_ERROR;
    }

    return ngx_http_next_header_filter(r);
}


static ngx_int_t
ngx_http_clef_body_filter(ngx_http_request_t *r, ngx_chain_t *in)
{
    ngx_http_clef_ctx_t  *ctx;
    ngx_chain_t          *cl, out;
    ngx_buf_t            *b;

    ctx = ngx_http_get_module_ctx(r, ngx_http_clef_module);
    if (ctx == NULL || !ctx->replace_body) {
        return ngx_http_next_body_filter(r, in);
    }

    /* nginx's page is swallowed whole, ours goes out once */
    for (cl = in; cl; cl = cl->next) {
        cl->buf->pos = cl->buf->last;
        cl->buf->file_pos = cl->buf->file_last;
    }
    if (ctx->body_sent) {
        return NGX_OK;
    }
    ctx->body_sent = 1;

    b = ngx_calloc_buf(r->pool);
    if (b == NULL) {
        return NGX_ERROR;
    }
    b->pos = ctx->error_body.data;
    b->last = b->pos + ctx->error_body.len;
    b->memory = 1;
    b->last_buf = 1;
    b->last_in_chain = 1;
    out.buf = b;
    out.next = NULL;

    return ngx_http_next_body_filter(r, &out);
}


ngx_int_t
ngx_http_clef_filter_init(ngx_conf_t *cf)
{
    ngx_http_next_header_filter = ngx_http_top_header_filter;
    ngx_http_top_header_filter = ngx_http_clef_header_filter;

    ngx_http_next_body_filter = ngx_http_top_body_filter;
    ngx_http_top_body_filter = ngx_http_clef_body_filter;

    return NGX_OK;
}
