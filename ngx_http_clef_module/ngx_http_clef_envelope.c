/*
 * The Cloudflare REST form of /v1/systemone (`clef_systemone
 * envelope=cloudflare;`), for clients of Workers AI:
 *
 *   POST /client/v4/accounts/{account}/ai/run/@cf/cloudflare/{model}
 *
 * with the System One body.  The model is the path's last segment and
 * must be the one this http block serves (clef_model NAME); the body is
 * read as on /v1/systemone.  Every response keeps its HTTP status and has
 * Cloudflare's API shape:
 *
 *   200   {"result":<the System One answer>,"success":true,
 *          "errors":[],"messages":[]}
 *   4xx/5xx {"result":null,"success":false,
 *          "errors":[{"code":<status>,"message":"..."}],"messages":[]}
 *
 * A body sent as curl -d sends it (a form type) is read as JSON, as
 * Workers AI reads it.  The message of an error is the System One error's (a plain detail, a typed
 * detail's message, or a 422's entries as "loc: msg" joined by "; ", as
 * the SDKs print them).  The request id goes in cf-ray, where Cloudflare
 * puts its own.
 */
#include "ngx_http_clef_module.h"

#define NGX_HTTP_CLEF_RUN      "/ai/run/"
#define NGX_HTTP_CLEF_CF_ORG   "@cf/cloudflare/"
#define NGX_HTTP_CLEF_FORM     "application/x-www-form-urlencoded"


/* The message of a System One error body: see the header comment. */
static int
ngx_http_clef_envelope_message(clef_buf *out, const clef_json *body)
{
    const clef_json  *detail, *v, *e, *loc;
    size_t            i, j;
    int               rc = 0;

    detail = body != NULL && body->type == CLEF_JSON_OBJECT
             ? clef_json_get(body, "detail") : NULL;
    if (detail == NULL) {
        return clef_buf_append(out, "\"\"", 2);
    }

    switch (detail->type) {
    case CLEF_JSON_STRING:
        return clef_render_string(out, detail->str, detail->len);

    case CLEF_JSON_OBJECT:
        v = clef_json_get(detail, "message");
        if (v == NULL || v->type != CLEF_JSON_STRING) {
            v = clef_json_get(detail, "error_type");
        }
        return v != NULL && v->type == CLEF_JSON_STRING
               ? clef_render_string(out, v->str, v->len)
               : clef_buf_append(out, "\"\"", 2);

    case CLEF_JSON_ARRAY:
        /* one string: "questions.q1: Field required; ..." */
        {
            clef_buf  text = { NULL, 0, 0 };

            for (i = 0; rc == 0 && i < detail->len; i++) {
                e = detail->items[i];
                if (e->type != CLEF_JSON_OBJECT) {
                    continue;
                }
                if (text.len) {
                    rc = clef_buf_append(&text, "; ", 2);
                }
                loc = clef_json_get(e, "loc");
                for (j = 1; rc == 0 && loc != NULL
                            && loc->type == CLEF_JSON_ARRAY && j < loc->len;
                     j++)
                {
                    rc = (j > 1 ? clef_buf_putc(&text, '.') : 0)
                         || clef_buf_append(&text, loc->items[j]->str,
                                            loc->items[j]->len);
                }
                v = clef_json_get(e, "msg");
                if (rc == 0 && v != NULL && v->type == CLEF_JSON_STRING) {
                    rc = (loc != NULL && loc->len > 1
                          ? clef_buf_append(&text, ": ", 2) : 0)
                         || clef_buf_append(&text, v->str, v->len);
                }
            }
            rc = rc || clef_render_string(out, text.data ? text.data : "",
                                          text.len);
            clef_buf_free(&text);
            return rc;
        }

    default:
        return clef_buf_append(out, "\"\"", 2);
    }
}


ngx_int_t
ngx_http_clef_envelope_wrap(ngx_http_request_t *r, ngx_uint_t status,
    u_char **body, size_t *len)
{
    clef_buf          b = { NULL, 0, 0 };
    clef_arena        arena;
    clef_error        err;
    const clef_json  *root;
    u_char           *p;
    int               rc;

    if (status < NGX_HTTP_BAD_REQUEST) {
        rc = clef_buf_append(&b, "{\"result\":", 10)
             || clef_buf_append(&b, (char *) *body, *len)
             || clef_buf_append(&b, ",\"success\":true,\"errors\":[],"
                                "\"messages\":[]}", 42);
    } else {
        clef_arena_init(&arena, 4096);
        root = clef_json_parse(&arena, (const char *) *body, *len, &err);
        rc = clef_buf_printf(&b, "{\"result\":null,\"success\":false,"
                             "\"errors\":[{\"code\":%u,\"message\":",
                             (unsigned) status)
             || ngx_http_clef_envelope_message(&b, root)
             || clef_buf_append(&b, "}],\"messages\":[]}", 17);
        clef_arena_free(&arena);
    }

    p = rc == 0 ? ngx_pnalloc(r->pool, b.len) : NULL;
    if (p != NULL) {
        ngx_memcpy(p, b.data, b.len);
        *body = p;
        *len = b.len;
    }
    clef_buf_free(&b);
    return p != NULL ? NGX_OK : NGX_ERROR;
}


ngx_int_t
ngx_http_clef_envelope_check(ngx_http_request_t *r)
{
    ngx_http_clef_main_conf_t  *mcf;
    ngx_str_t                  *name;
    ngx_table_elt_t            *ct;
    u_char                     *run, *model, *last;
    size_t                      org = sizeof(NGX_HTTP_CLEF_CF_ORG) - 1;
    u_char                      msg[256];

    mcf = ngx_http_get_module_main_conf(r, ngx_http_clef_module);
    name = &mcf->model->name;
    last = r->uri.data + r->uri.len;

    run = ngx_strlcasestrn(r->uri.data, last, (u_char *) NGX_HTTP_CLEF_RUN,
                           sizeof(NGX_HTTP_CLEF_RUN) - 2);
    if (run == NULL) {
        if (ngx_http_discard_request_body(r) != NGX_OK) {
            return NGX_HTTP_INTERNAL_SERVER_ERROR;
        }
        return ngx_http_clef_send_detail(r, NGX_HTTP_NOT_FOUND,
                   "No route for that URI: the model is named by "
                   "/client/v4/accounts/{account}/ai/run/@cf/cloudflare/"
                   "{model}");
    }

    model = run + sizeof(NGX_HTTP_CLEF_RUN) - 1;
    if ((size_t) (last - model) == org + name->len
        && ngx_strncmp(model, NGX_HTTP_CLEF_CF_ORG, org) == 0
        && ngx_strncmp(model + org, name->data, name->len) == 0)
    {
        /* Workers AI's examples post with `curl -d`, whose form type
         * Workers AI reads as JSON: so does this form */
        ct = r->headers_in.content_type;
        if (ct != NULL && ct->value.len == sizeof(NGX_HTTP_CLEF_FORM) - 1
            && ngx_strncasecmp(ct->value.data, (u_char *) NGX_HTTP_CLEF_FORM,
                               ct->value.len) == 0)
        {
            r->headers_in.content_type = NULL;
        }
        return NGX_DECLINED;
    }

    if (ngx_http_discard_request_body(r) != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }
    ngx_snprintf(msg, sizeof(msg), "No such model: \"%*s\"; this server runs "
                 "@cf/cloudflare/%V%Z",
                 (size_t) ngx_min(last - model, 100), model, name);
    return ngx_http_clef_send_detail(r, NGX_HTTP_NOT_FOUND, (char *) msg);
}
