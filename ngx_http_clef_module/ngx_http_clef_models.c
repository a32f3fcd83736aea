/*
 * GET /v1/models: {"models":[{"name","description","release_date"}]}
 * (docs/spec/protocol.md §6; the Python SDK wants all three strings),
 * with extensions the SDKs ignore: what a request may carry, how the
 * weights are stored and the precision the backend multiplies them in.
 */
#include "ngx_http_clef_module.h"

#include <stdio.h>


/* /v1/models' "weight_types": what the matrices are stored as, the
 * largest share first, with what they take in memory at precision=q8:
 * [{"type":"Q4_K","matrices":N,"bytes":B,"bytes_q8":Q}, ...]
 * (lm_head left out: a decision model never reads it).  Made once, when
 * the configuration is read. */
ngx_int_t
ngx_http_clef_weight_types(ngx_conf_t *cf, ngx_http_clef_model_t *m,
    const clef_model_info *info)
{
    const clef_weight_type  *t;
    u_char                  *p, *last;
    int                      i;

    m->weight_types.data = ngx_pnalloc(cf->pool, 2 + 112 * info->n_types);
    if (m->weight_types.data == NULL) {
        return NGX_ERROR;
    }
    p = m->weight_types.data;
    last = p + 1 + 112 * info->n_types;    /* room for the ']' */
    *p++ = '[';
    for (i = 0; i < info->n_types; i++) {
        t = &info->types[i];
        p = ngx_slprintf(p, last, "%s{\"type\":\"%s\",\"matrices\":%d,"
                         "\"bytes\":%L,\"bytes_q8\":%L}", i ? "," : "",
                         clef_dtype_name(t->dtype), t->tensors,
                         (int64_t) t->bytes, (int64_t) t->q8_bytes);
    }
    *p++ = ']';
    m->weight_types.len = p - m->weight_types.data;
    return NGX_OK;
}


void
ngx_http_clef_inputs_text(const ngx_http_clef_model_t *m, int omni,
    char *out, size_t cap)
{
    const char  *list[4];
    size_t       n = 0, i, w = 0;

    list[n++] = "text";
    if (ngx_http_clef_takes(m, CLEF_MEDIA_IMAGE)) {
        list[n++] = "images (PNG, JPEG, WebP)";
    }
    if (ngx_http_clef_takes(m, CLEF_MEDIA_AUDIO)) {
        list[n++] = "audio (WAV, FLAC, MP3, Ogg, M4A/AAC, WebM)";
    }
    if (ngx_http_clef_takes(m, CLEF_MEDIA_VIDEO)) {
        /* Clef Omni hears a video's sound where it has an audio tower
         * (audio in video: a record whose every video has sound) */
        list[n++] = !omni ? "videos (MP4, MOV, Matroska, WebM)"
                    : ngx_http_clef_takes(m, CLEF_MEDIA_AUDIO)
                    ? "videos with their sound (MP4, Matroska, WebM)"
                    : "videos without sound (MP4, Matroska, WebM)";
    }
    if (n == 1) {
        (void) snprintf(out, cap, "text only");
        return;
    }
    /* "a and b", "a, b and c" */
    out[0] = '\0';
    for (i = 0; i < n && w < cap; i++) {
        w += (size_t) snprintf(out + w, cap - w, "%s%s",
                               i == 0 ? "" : i == n - 1 ? " and " : ", ",
                               list[i]);
    }
}


/* What a request may carry (an extension the SDKs ignore): the media
 * kinds the model takes, each with its location's count. */
static int
capabilities(clef_buf *b, const ngx_http_clef_model_t *m,
    const ngx_http_clef_loc_conf_t *llcf)
{
    int  img = ngx_http_clef_takes(m, CLEF_MEDIA_IMAGE);
    int  vid = ngx_http_clef_takes(m, CLEF_MEDIA_VIDEO);
    int  aud = ngx_http_clef_takes(m, CLEF_MEDIA_AUDIO);

    if (clef_buf_printf(b, ",\"capabilities\":[\"systemone\"%s%s%s]",
                        img ? ",\"images\"" : "", vid ? ",\"videos\"" : "",
                        aud ? ",\"audio\"" : "")
        != 0)
    {
        return -1;
    }
    if (img && clef_buf_printf(b, ",\"max_images\":%d",
                               (int) llcf->max_items[CLEF_MEDIA_IMAGE]) != 0)
    {
        return -1;
    }
    if (vid && clef_buf_printf(b, ",\"max_videos\":%d",
                               (int) llcf->max_items[CLEF_MEDIA_VIDEO]) != 0)
    {
        return -1;
    }
    return aud ? clef_buf_printf(b, ",\"max_audio\":%d",
                                 (int) llcf->max_items[CLEF_MEDIA_AUDIO])
               : 0;
}


ngx_int_t
ngx_http_clef_models_handler(ngx_http_request_t *r)
{
    ngx_http_clef_main_conf_t  *mcf;
    ngx_http_clef_loc_conf_t   *llcf;
    ngx_http_clef_model_t      *m;
    clef_buf                    b = { NULL, 0, 0 };
    ngx_int_t                   rc;
    int                         ok;

    rc = ngx_http_clef_get_only(r);
    if (rc != NGX_DECLINED) {
        return rc;
    }

    llcf = ngx_http_get_module_loc_conf(r, ngx_http_clef_module);
    rc = ngx_http_clef_check_api_key(r, llcf);
    if (rc != NGX_DECLINED) {
        return rc;
    }
    if (ngx_http_discard_request_body(r) != NGX_OK) {
        return NGX_HTTP_INTERNAL_SERVER_ERROR;
    }

    mcf = ngx_http_get_module_main_conf(r, ngx_http_clef_module);
    m = mcf->model;

    ok = clef_buf_append(&b, "{\"models\":[{\"name\":", 19) == 0
         && clef_render_string(&b, (char *) m->name.data, m->name.len) == 0
         && clef_buf_append(&b, ",\"description\":", 15) == 0
         && clef_render_string(&b, (char *) m->description.data,
                               m->description.len) == 0
         && clef_buf_append(&b, ",\"release_date\":", 16) == 0
         && clef_render_string(&b, (char *) m->release_date.data,
                               m->release_date.len) == 0
         && clef_buf_append(&b, ",\"weights\":", 11) == 0
         && clef_render_string(&b, (char *) m->weights.data,
                               m->weights.len) == 0
         && clef_buf_append(&b, ",\"weight_types\":", 16) == 0
         && clef_buf_append(&b, (char *) m->weight_types.data,
                            m->weight_types.len) == 0
         && clef_buf_printf(&b, ",\"precision\":\"%s\"",
                            clef_precision_name(m->computes_in)) == 0
         && clef_buf_printf(&b, ",\"precision_default\":%s",
                            m->precision == CLEF_PRECISION_DEFAULT
                            ? "true" : "false") == 0
         /* an extension the SDKs ignore: what a request may carry */
         && capabilities(&b, m, llcf) == 0
         && clef_buf_append(&b, "}]}", 3) == 0;

    return ngx_http_clef_send_buf(r, NGX_HTTP_OK, NULL, &b, ok);
}
