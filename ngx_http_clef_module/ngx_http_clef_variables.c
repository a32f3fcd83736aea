/*
 * Variables for access logs and headers, and the Server-Timing header:
 *   $clef_model         the model that answered
 *   $clef_input_tokens  tokens of the encoded record
 *   $clef_queue_ms      submit -> taken by the engine
 *   $clef_engine_ms     taken -> answered (parse, encode, forward)
 */
#include "ngx_http_clef_module.h"

enum {
    NGX_HTTP_CLEF_VAR_MODEL = 0,
    NGX_HTTP_CLEF_VAR_INPUT_TOKENS,
    NGX_HTTP_CLEF_VAR_QUEUE_MS,
    NGX_HTTP_CLEF_VAR_ENGINE_MS
};

static ngx_int_t ngx_http_clef_variable(ngx_http_request_t *r,
    ngx_http_variable_value_t *v, uintptr_t data);

static ngx_http_variable_t  ngx_http_clef_vars[] = {

    { ngx_string("clef_model"), NULL, ngx_http_clef_variable,
      NGX_HTTP_CLEF_VAR_MODEL, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("clef_input_tokens"), NULL, ngx_http_clef_variable,
      NGX_HTTP_CLEF_VAR_INPUT_TOKENS, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("clef_queue_ms"), NULL, ngx_http_clef_variable,
      NGX_HTTP_CLEF_VAR_QUEUE_MS, NGX_HTTP_VAR_NOCACHEABLE, 0 },

    { ngx_string("clef_engine_ms"), NULL, ngx_http_clef_variable,
      NGX_HTTP_CLEF_VAR_ENGINE_MS, NGX_HTTP_VAR_NOCACHEABLE, 0 },

      ngx_http_null_variable
};


ngx_int_t
ngx_http_clef_add_variables(ngx_conf_t *cf)
{
    ngx_http_variable_t  *var, *v;

    for (v = ngx_http_clef_vars; v->name.len; v++) {
        var = ngx_http_add_variable(cf, &v->name, v->flags);
        if (var == NULL) {
            return NGX_ERROR;
        }
        var->get_handler = v->get_handler;
        var->data = v->data;
    }
    return NGX_OK;
}


/* milliseconds with three decimals */
static u_char *
ngx_http_clef_ms(u_char *p, int64_t ns)
{
    return ngx_sprintf(p, "%L.%03L", ns / 1000000, (ns / 1000) % 1000);
}


static ngx_int_t
ngx_http_clef_variable(ngx_http_request_t *r, ngx_http_variable_value_t *v,
    uintptr_t data)
{
    ngx_http_clef_main_conf_t  *mcf;
    ngx_http_clef_ctx_t        *ctx;
    u_char                     *p;
    int64_t                     ns;

    ctx = ngx_http_get_module_ctx(r, ngx_http_clef_module);
    mcf = ngx_http_get_module_main_conf(r, ngx_http_clef_module);

    if (data == NGX_HTTP_CLEF_VAR_MODEL) {
        if (mcf->model == NULL || ctx == NULL) {
            v->not_found = 1;
            return NGX_OK;
        }
        v->data = mcf->model->name.data;
        v->len = mcf->model->name.len;
        v->valid = 1;
        v->no_cacheable = 1;
        v->not_found = 0;
        return NGX_OK;
    }

    if (ctx == NULL) {
        v->not_found = 1;
        return NGX_OK;
    }

    p = ngx_pnalloc(r->pool, NGX_INT64_LEN + 5);
    if (p == NULL) {
        return NGX_ERROR;
    }
    v->data = p;

    switch (data) {
    case NGX_HTTP_CLEF_VAR_INPUT_TOKENS:
        if (ctx->input_tokens < 0) {
            v->not_found = 1;
            return NGX_OK;
        }
        p = ngx_sprintf(p, "%i", ctx->input_tokens);
        break;
    default:
        ns = data == NGX_HTTP_CLEF_VAR_QUEUE_MS ? ctx->queue_ns : ctx->engine_ns;
        if (ns < 0) {
            v->not_found = 1;
            return NGX_OK;
        }
        p = ngx_http_clef_ms(p, ns);
        break;
    }

    v->len = p - v->data;
    v->valid = 1;
    v->no_cacheable = 1;
    v->not_found = 0;
    return NGX_OK;
}


ngx_int_t
ngx_http_clef_server_timing(ngx_http_request_t *r, ngx_http_clef_ctx_t *ctx)
{
    ngx_table_elt_t  *h;
    u_char           *p, *start;

    start = ngx_pnalloc(r->pool, 3 * (NGX_INT64_LEN + 16) + 32);
    if (start == NULL) {
        return NGX_ERROR;
    }
    p = start;
    if (ctx->queue_ns >= 0) {
        p = ngx_http_clef_ms(ngx_cpymem(p, "queue;dur=", 10), ctx->queue_ns);
        p = ngx_http_clef_ms(ngx_cpymem(p, ", engine;dur=", 13),
                             ctx->engine_ns);
        p = ngx_cpymem(p, ", ", 2);
    }
    p = ngx_http_clef_ms(ngx_cpymem(p, "total;dur=", 10),
                         clef_now_ns() - ctx->start_ns);

    h = ngx_list_push(&r->headers_out.headers);
    if (h == NULL) {
        return NGX_ERROR;
    }
    h->hash = 1;
    ngx_str_set(&h->key, "Server-Timing");
    h->value.data = start;
    h->value.len = p - start;
    return NGX_OK;
}
