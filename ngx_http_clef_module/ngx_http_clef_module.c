/*
 * Directives, configuration, the shared zone, and the module's process
 * hooks.
 *
 *   http:     clef_model NAME PATH [mmproj=FILE] [backend=cpu|cuda]
 *                        [threads=N] [precision=fp32|bf16|q8]
 *                        [devices=LIST] [tp=N] [gpu_memory=SIZE]
 *                        [max_length=N] [truncate=reject|state];
 *             clef_engine zone=NAME:SIZE [max_batch_tokens=N]
 *                         [chunk_tokens=N|off] [max_queue=N]
 *                         [timeout=TIME] [watchdog=TIME|off]
 *                         [decoders=N];
 *   location: clef_systemone [envelope=systemone|cloudflare];
 *             clef_models; clef_status;
 *   http, server, location:
 *             clef_max_questions N; clef_max_images N; clef_max_videos N;
 *             clef_max_audio N;
 *             clef_max_tokens N;
 *             clef_api_key KEY... | off; clef_json_errors on | off;
 */
#include "ngx_http_clef_module.h"

#include <malloc.h>
#include <stdlib.h>
#include <sys/random.h>
#include <time.h>


static void *ngx_http_clef_create_main_conf(ngx_conf_t *cf);
static char *ngx_http_clef_init_main_conf(ngx_conf_t *cf, void *conf);
static ngx_int_t ngx_http_clef_check_memory(ngx_conf_t *cf,
    ngx_http_clef_model_t *m, ngx_int_t max_batch_tokens);
static void *ngx_http_clef_create_loc_conf(ngx_conf_t *cf);
static char *ngx_http_clef_merge_loc_conf(ngx_conf_t *cf, void *parent,
    void *child);
static ngx_int_t ngx_http_clef_preconfiguration(ngx_conf_t *cf);
static ngx_int_t ngx_http_clef_postconfiguration(ngx_conf_t *cf);
static char *ngx_http_clef_model(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_clef_engine(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static char *ngx_http_clef_location(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static ngx_int_t ngx_http_clef_content_handler(ngx_http_request_t *r);
static char *ngx_http_clef_api_key(ngx_conf_t *cf, ngx_command_t *cmd,
    void *conf);
static ngx_int_t ngx_http_clef_add_zone(ngx_conf_t *cf,
    ngx_http_clef_main_conf_t *mcf, ngx_str_t *name, ssize_t size);
static ngx_int_t ngx_http_clef_init_zone(ngx_shm_zone_t *shm_zone,
    void *data);
static ngx_int_t ngx_http_clef_log_handler(ngx_http_request_t *r);
static ngx_int_t ngx_http_clef_init_module(ngx_cycle_t *cycle);
static ngx_int_t ngx_http_clef_init_process(ngx_cycle_t *cycle);
static void ngx_http_clef_exit_process(ngx_cycle_t *cycle);


/* The directives below (at most NGX_HTTP_CLEF_COMMANDS), then one per
 * media kind that sets its max_items[kind] (clef_max_images,
 * clef_max_videos, clef_max_audio), named from the kind's row in
 * media/kinds.c by ngx_http_clef_preconfiguration; the zeroed row after
 * them ends the table. */
#define NGX_HTTP_CLEF_COMMANDS  9

static ngx_command_t  ngx_http_clef_commands[NGX_HTTP_CLEF_COMMANDS
                                             + CLEF_MEDIA_KINDS] = {

    { ngx_string("clef_model"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_2MORE,
      ngx_http_clef_model,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("clef_engine"),
      NGX_HTTP_MAIN_CONF|NGX_CONF_1MORE,
      ngx_http_clef_engine,
      NGX_HTTP_MAIN_CONF_OFFSET,
      0,
      NULL },

    { ngx_string("clef_systemone"),
      NGX_HTTP_LOC_CONF|NGX_CONF_NOARGS|NGX_CONF_TAKE1,
      ngx_http_clef_location,
      NGX_HTTP_LOC_CONF_OFFSET,
      NGX_HTTP_CLEF_SYSTEMONE,
      NULL },

    { ngx_string("clef_models"),
      NGX_HTTP_LOC_CONF|NGX_CONF_NOARGS,
      ngx_http_clef_location,
      NGX_HTTP_LOC_CONF_OFFSET,
      NGX_HTTP_CLEF_MODELS,
      NULL },

    { ngx_string("clef_status"),
      NGX_HTTP_LOC_CONF|NGX_CONF_NOARGS,
      ngx_http_clef_location,
      NGX_HTTP_LOC_CONF_OFFSET,
      NGX_HTTP_CLEF_STATUS,
      NULL },

    { ngx_string("clef_max_questions"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_num_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_clef_loc_conf_t, max_questions),
      NULL },

    { ngx_string("clef_json_errors"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_FLAG,
      ngx_conf_set_flag_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_clef_loc_conf_t, json_errors),
      NULL },

    { ngx_string("clef_max_tokens"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_TAKE1,
      ngx_conf_set_num_slot,
      NGX_HTTP_LOC_CONF_OFFSET,
      offsetof(ngx_http_clef_loc_conf_t, max_tokens),
      NULL },

    { ngx_string("clef_api_key"),
      NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF|NGX_CONF_1MORE,
      ngx_http_clef_api_key,
      NGX_HTTP_LOC_CONF_OFFSET,
      0,
      NULL }
};


static ngx_http_module_t  ngx_http_clef_module_ctx = {
    ngx_http_clef_preconfiguration,        /* preconfiguration */
    ngx_http_clef_postconfiguration,       /* postconfiguration */

    ngx_http_clef_create_main_conf,        /* create main configuration */
    ngx_http_clef_init_main_conf,          /* init main configuration */

    NULL,                                  /* create server configuration */
    NULL,                                  /* merge server configuration */

    ngx_http_clef_create_loc_conf,         /* create location configuration */
    ngx_http_clef_merge_loc_conf           /* merge location configuration */
};


ngx_module_t  ngx_http_clef_module = {
    NGX_MODULE_V1,
    &ngx_http_clef_module_ctx,             /* module context */
    ngx_http_clef_commands,                /* module directives */
    NGX_HTTP_MODULE,                       /* module type */
    NULL,                                  /* init master */
    ngx_http_clef_init_module,             /* init module */
    ngx_http_clef_init_process,            /* init process */
    NULL,                                  /* init thread */
    NULL,                                  /* exit thread */
    ngx_http_clef_exit_process,            /* exit process */
    ngx_http_clef_engine_stop,             /* exit master */
    NGX_MODULE_V1_PADDING
};


static void *
ngx_http_clef_create_main_conf(ngx_conf_t *cf)
{
    ngx_http_clef_main_conf_t  *mcf;

    mcf = ngx_pcalloc(cf->pool, sizeof(ngx_http_clef_main_conf_t));
    if (mcf == NULL) {
        return NULL;
    }

    mcf->max_batch_tokens = NGX_CONF_UNSET;
    mcf->decoders = NGX_CONF_UNSET;
    mcf->chunk_tokens = NGX_CONF_UNSET;
    mcf->max_queue = NGX_CONF_UNSET_UINT;
    mcf->timeout = NGX_CONF_UNSET_MSEC;
    mcf->watchdog = NGX_CONF_UNSET_MSEC;
    mcf->request_id_index = NGX_ERROR;

    return mcf;
}


static char *
ngx_http_clef_init_main_conf(ngx_conf_t *cf, void *conf)
{
    ngx_http_clef_main_conf_t *mcf = conf;
    ngx_str_t                  name = ngx_string("clef");

    ngx_conf_init_value(mcf->max_batch_tokens, 16384);
    ngx_conf_init_value(mcf->decoders, 0);
    /* chunked prefill: a short request waits for at most one part of a
     * long record; a CPU forward runs about as many tokens a second on 256
     * tokens as on 2048 or 8192 (docs/benchmarks.md), so parts of
     * 2048 cost a long record little and bound the wait to one of them */
    ngx_conf_init_value(mcf->chunk_tokens, 2048);
    ngx_conf_init_uint_value(mcf->max_queue, 1024);
    ngx_conf_init_msec_value(mcf->timeout, 30000);
    ngx_conf_init_msec_value(mcf->watchdog, 60000);

    if (mcf->model != NULL && mcf->zone == NULL) {
        /* clef_model without clef_engine: a default zone */
        if (ngx_http_clef_add_zone(cf, mcf, &name,
                                   NGX_HTTP_CLEF_DEFAULT_ZONE_SIZE)
            != NGX_OK)
        {
            return NGX_CONF_ERROR;
        }
    }

    if (mcf->zone != NULL && mcf->model == NULL) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"clef_engine\" needs a \"clef_model\"");
        return NGX_CONF_ERROR;
    }

    if (mcf->model != NULL
        && ngx_http_clef_check_memory(cf, mcf->model, mcf->max_batch_tokens)
           != NGX_OK)
    {
        return NGX_CONF_ERROR;
    }

    if (mcf->zone != NULL
        && mcf->max_queue > clef_zone_slots(mcf->zone->shm.size))
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "clef_engine max_queue=%ui needs more slots than a "
                           "zone of %uz bytes has (%ui); make the zone bigger",
                           mcf->max_queue, mcf->zone->shm.size,
                           (ngx_uint_t) clef_zone_slots(mcf->zone->shm.size));
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;
}


static void *
ngx_http_clef_create_loc_conf(ngx_conf_t *cf)
{
    ngx_http_clef_loc_conf_t  *llcf;
    ngx_uint_t                 k;

    llcf = ngx_pcalloc(cf->pool, sizeof(ngx_http_clef_loc_conf_t));
    if (llcf == NULL) {
        return NULL;
    }

    llcf->max_questions = NGX_CONF_UNSET;
    for (k = 0; k < CLEF_MEDIA_KINDS; k++) {
        llcf->max_items[k] = NGX_CONF_UNSET;
    }
    llcf->max_tokens = NGX_CONF_UNSET;
    llcf->api_keys = NGX_CONF_UNSET_PTR;
    llcf->json_errors = NGX_CONF_UNSET;

    return llcf;
}


static char *
ngx_http_clef_merge_loc_conf(ngx_conf_t *cf, void *parent, void *child)
{
    ngx_http_clef_loc_conf_t  *prev = parent;
    ngx_http_clef_loc_conf_t  *conf = child;
    ngx_http_clef_main_conf_t *mcf;
    clef_media_limits          lim;
    ngx_uint_t                 k;
    ngx_int_t                  least = 0;

    ngx_conf_merge_value(conf->max_questions, prev->max_questions, 64);
    for (k = 1; k < CLEF_MEDIA_KINDS; k++) {
        clef_media_limits_default((clef_media_kind) k, &lim);
        ngx_conf_merge_value(conf->max_items[k], prev->max_items[k],
                             lim.max_items);
        least = ngx_min(least, conf->max_items[k]);
    }
    ngx_conf_merge_value(conf->max_tokens, prev->max_tokens,
                         CLEF_DEFAULT_MAX_LENGTH);
    ngx_conf_merge_ptr_value(conf->api_keys, prev->api_keys, NULL);
    ngx_conf_merge_value(conf->json_errors, prev->json_errors, 0);

    if (conf->max_questions < 1 || least < 0 || conf->max_tokens < 1) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "clef_max_questions and clef_max_tokens must be "
                           "at least 1, clef_max_images, clef_max_videos "
                           "and clef_max_audio at least 0");
        return NGX_CONF_ERROR;
    }

    if (conf->handler == NGX_HTTP_CLEF_SYSTEMONE
        || conf->handler == NGX_HTTP_CLEF_MODELS)
    {
        mcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_clef_module);
        if (mcf->model == NULL) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "\"clef_systemone\" and \"clef_models\" need "
                               "a \"clef_model\" at the http level");
            return NGX_CONF_ERROR;
        }
    }

    return NGX_CONF_OK;
}


/* Names the per-kind limit directives (see ngx_http_clef_commands) from
 * the kinds' rows: nginx looks a directive up by name when it meets it in
 * the http block, which it parses after this; the table keeps the names
 * from the first http block on (a reload finds them there). */
static ngx_int_t
ngx_http_clef_preconfiguration(ngx_conf_t *cf)
{
    static ngx_uint_t            named;
    ngx_command_t               *cmd;
    const clef_media_kind_info  *kind;
    ngx_uint_t                   k;

    if (named) {
        return NGX_OK;
    }

    /* after the last row written out; the array has room for one per
     * kind and the zeroed row that ends it */
    for (cmd = ngx_http_clef_commands; cmd->name.len != 0; cmd++) {
        /* void */
    }

    for (k = 1; k < CLEF_MEDIA_KINDS; k++, cmd++) {
        kind = clef_media_kind_of((int) k);
        cmd->name.data = (u_char *) kind->directive;
        cmd->name.len = ngx_strlen(kind->directive);
        cmd->type = NGX_HTTP_MAIN_CONF|NGX_HTTP_SRV_CONF|NGX_HTTP_LOC_CONF
                    |NGX_CONF_TAKE1;
        cmd->set = ngx_conf_set_num_slot;
        cmd->conf = NGX_HTTP_LOC_CONF_OFFSET;
        cmd->offset = offsetof(ngx_http_clef_loc_conf_t, max_items)
                      + k * sizeof(ngx_int_t);
        cmd->post = NULL;
    }
    named = 1;

    return NGX_OK;
}


static ngx_int_t
ngx_http_clef_postconfiguration(ngx_conf_t *cf)
{
    ngx_http_handler_pt        *h;
    ngx_http_core_main_conf_t  *cmcf;
    ngx_http_clef_main_conf_t  *mcf;
    ngx_str_t                   request_id = ngx_string("request_id");

    if (ngx_http_clef_add_variables(cf) != NGX_OK) {
        return NGX_ERROR;
    }

    mcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_clef_module);
    mcf->request_id_index = ngx_http_get_variable_index(cf, &request_id);
    if (mcf->request_id_index == NGX_ERROR) {
        return NGX_ERROR;
    }

    cmcf = ngx_http_conf_get_module_main_conf(cf, ngx_http_core_module);
    h = ngx_array_push(&cmcf->phases[NGX_HTTP_LOG_PHASE].handlers);
    if (h == NULL) {
        return NGX_ERROR;
    }
    *h = ngx_http_clef_log_handler;

    return ngx_http_clef_filter_init(cf);
}


/* ---- clef_model ---------------------------------------------------------- */

/* The CUDA backend's memory plan (backend/device_plan.h) at the largest
 * batch, against gpu_memory=: a model that cannot fit is refused here,
 * naming the numbers, and with the weights fitting, the max_batch_tokens
 * that would; `nginx -t` says the plan.  The engine's start checks the
 * same plan against the device's free memory as well (cuda/memcheck.c). */
static ngx_int_t
ngx_http_clef_check_memory(ngx_conf_t *cf, ngx_http_clef_model_t *m,
    ngx_int_t max_batch_tokens)
{
    const clef_backend_entry  *be;
    clef_devplan               plan;
    char                       against[96], why[400], cap[32];

    be = clef_backend_lookup((char *) m->backend.data, m->backend.len);
    if (be == NULL || !be->uses_devices) {
        return NGX_OK;
    }
    clef_devplan_of(&m->gpu_rank, m->gpu_weights, max_batch_tokens,
                    NGX_HTTP_CLEF_MAX_BATCH_RECORDS, &plan);
    if (m->gpu_memory > 0) {
        snprintf(against, sizeof(against), "gpu_memory=%.*s (%s)",
                 (int) m->gpu_memory_text.len, m->gpu_memory_text.data,
                 clef_devplan_size_text(m->gpu_memory, cap, sizeof(cap)));
        if (clef_devplan_refusal(&m->gpu_rank, m->gpu_weights,
                                 NGX_HTTP_CLEF_MAX_BATCH_RECORDS, &plan,
                                 m->gpu_memory, against, why, sizeof(why))
            != NULL)
        {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "clef_model \"%V\": %s",
                               &m->name, why);
            return NGX_ERROR;
        }
    }
    if (ngx_test_config) {
        ngx_conf_log_error(NGX_LOG_NOTICE, cf, 0, "clef_model \"%V\": the "
                           "cuda backend plans %s", &m->name,
                           clef_devplan_describe(&plan, why, sizeof(why)));
    }
    return NGX_OK;
}


static ngx_int_t
ngx_http_clef_param_int(ngx_conf_t *cf, ngx_str_t *v, size_t skip,
    ngx_int_t min, ngx_int_t *out)
{
    ngx_int_t  n;

    n = ngx_atoi(v->data + skip, v->len - skip);
    if (n == NGX_ERROR || n < min) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "invalid parameter \"%V\"",
                           v);
        return NGX_ERROR;
    }
    *out = n;
    return NGX_OK;
}


/* devices=0 | 0-7 | 0,2,4-5: CUDA ordinals, each once, in order. */
static ngx_int_t
ngx_http_clef_parse_devices(ngx_conf_t *cf, ngx_str_t *v,
    ngx_http_clef_model_t *m)
{
    u_char     *p = v->data + 8, *last = v->data + v->len, *comma, *dash;
    ngx_int_t   lo, hi, d;
    int         k;

    m->n_devices = 0;
    while (p < last) {
        comma = ngx_strlchr(p, last, ',');
        if (comma == NULL) {
            comma = last;
        }
        dash = ngx_strlchr(p, comma, '-');
        lo = ngx_atoi(p, (dash ? dash : comma) - p);
        hi = dash ? ngx_atoi(dash + 1, comma - dash - 1) : lo;
        if (lo == NGX_ERROR || hi == NGX_ERROR || hi < lo) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "invalid \"%V\": a list "
                               "of device numbers and ranges such as 0-7 or "
                               "0,2,4-5", v);
            return NGX_ERROR;
        }
        for (d = lo; d <= hi; d++) {
            for (k = 0; k < m->n_devices; k++) {
                if (m->devices[k] == d) {
                    ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "\"%V\" names "
                                       "device %i twice", v, d);
                    return NGX_ERROR;
                }
            }
            if (m->n_devices == CLEF_MAX_DEVICES) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "\"%V\": at most %d "
                                   "devices", v, CLEF_MAX_DEVICES);
                return NGX_ERROR;
            }
            m->devices[m->n_devices++] = (int) d;
        }
        p = comma + 1;
    }
    if (m->n_devices == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "\"%V\" names no device", v);
        return NGX_ERROR;
    }
    m->device = m->devices[0];
    m->devices_text.data = v->data + 8;
    m->devices_text.len = v->len - 8;
    return NGX_OK;
}


/* What devices= and tp= can mean for the chosen backend: devices= only
 * where a backend has devices; tp= where it shards (the CPU backend runs
 * tp rank threads, the CUDA backend tp devices per replica, so there tp
 * must divide the devices into replicas).  Whether the model splits by tp
 * is checked once its headers are read (clef_shard_check); whether the
 * devices exist is the engine's to find out: it reports a load error. */
static ngx_int_t
ngx_http_clef_check_layout(ngx_conf_t *cf, ngx_http_clef_model_t *m)
{
    const clef_backend_entry  *be;
    char                       why[160];

    be = clef_backend_lookup((char *) m->backend.data, m->backend.len);
    if (be != NULL && !be->uses_devices && m->n_devices > 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "clef_model \"%V\": devices= "
                           "applies to a backend with devices (cuda), not to "
                           "backend=%V", &m->name, &m->backend);
        return NGX_ERROR;
    }
    if (be != NULL && !be->uses_devices && m->gpu_memory > 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "clef_model \"%V\": "
                           "gpu_memory= applies to a backend with devices "
                           "(cuda), not to backend=%V", &m->name, &m->backend);
        return NGX_ERROR;
    }
    if (be != NULL && !be->tensor_parallel && m->tp > 1) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "clef_model \"%V\": backend=%V "
                           "has no tensor parallelism; use tp=1", &m->name,
                           &m->backend);
        return NGX_ERROR;
    }
    /* a precision the backend does not compute in (its row in
     * backend/registry.c): refuse here rather than fail the engine's
     * start */
    if (clef_backend_precision_refusal((char *) m->backend.data,
                                       m->backend.len, m->precision, why,
                                       sizeof(why))
        != NULL)
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "clef_model \"%V\": %s",
                           &m->name, why);
        return NGX_ERROR;
    }
    if (be != NULL && be->uses_devices && m->tp > 1 && m->n_devices == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "clef_model \"%V\": tp=%i "
                           "needs devices= naming the GPUs to split over "
                           "(e.g. devices=0-%i)", &m->name, m->tp, m->tp - 1);
        return NGX_ERROR;
    }
    if (be != NULL && be->uses_devices && m->tp > 1
        && m->n_devices % m->tp != 0)
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "clef_model \"%V\": tp=%i "
                           "must divide the %d devices of devices= into "
                           "replicas", &m->name, m->tp, m->n_devices);
        return NGX_ERROR;
    }
    return NGX_OK;
}


/* *path made absolute (relative to the prefix) and resolved, in the
 * configuration's pool: the file must exist. */
static ngx_int_t
ngx_http_clef_real_path(ngx_conf_t *cf, ngx_http_clef_model_t *m,
    ngx_str_t *path)
{
    ngx_str_t   full;
    char       *real;

    full = *path;
    if (ngx_conf_full_name(cf->cycle, &full, 0) != NGX_OK) {
        return NGX_ERROR;
    }
    real = realpath((char *) full.data, NULL);
    if (real == NULL) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, ngx_errno,
                           "clef_model \"%V\": cannot open \"%V\"",
                           &m->name, &full);
        return NGX_ERROR;
    }
    path->len = ngx_strlen(real);
    path->data = ngx_pnalloc(cf->pool, path->len + 1);
    if (path->data == NULL) {
        free(real);
        return NGX_ERROR;
    }
    ngx_memcpy(path->data, real, path->len + 1);
    free(real);
    return NGX_OK;
}


/* clef_model's parameters after NAME PATH, into m. */
static ngx_int_t
ngx_http_clef_model_params(ngx_conf_t *cf, ngx_http_clef_model_t *m,
    ngx_str_t *value, ngx_uint_t n)
{
    ngx_uint_t       i;
    clef_precision   precision;

    for (i = 3; i < n; i++) {

        if (ngx_strncmp(value[i].data, "backend=", 8) == 0) {
            m->backend.data = value[i].data + 8;
            m->backend.len = value[i].len - 8;
            if (clef_backend_lookup((char *) m->backend.data, m->backend.len)
                != NULL)
            {
                continue;
            }
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                               "unknown backend \"%V\" (known: %s)",
                               &m->backend, clef_backend_names());
            return NGX_ERROR;
        }

        if (ngx_strncmp(value[i].data, "tp=", 3) == 0) {
            if (ngx_http_clef_param_int(cf, &value[i], 3, 1, &m->tp)
                != NGX_OK)
            {
                return NGX_ERROR;
            }
            continue;
        }

        if (ngx_strncmp(value[i].data, "threads=", 8) == 0) {
            if (ngx_http_clef_param_int(cf, &value[i], 8, 0, &m->threads)
                != NGX_OK)
            {
                return NGX_ERROR;
            }
            continue;
        }

        if (ngx_strncmp(value[i].data, "precision=", 10) == 0) {
            if (clef_precision_parse((char *) value[i].data + 10,
                                     value[i].len - 10, &precision)
                != 0)
            {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "invalid \"%V\": precision is fp32, bf16 or q8",
                                   &value[i]);
                return NGX_ERROR;
            }
            m->precision = precision;
            continue;
        }

        if (ngx_strncmp(value[i].data, "devices=", 8) == 0) {
            if (ngx_http_clef_parse_devices(cf, &value[i], m) != NGX_OK) {
                return NGX_ERROR;
            }
            continue;
        }

        if (ngx_strncmp(value[i].data, "gpu_memory=", 11) == 0) {
            m->gpu_memory_text.data = value[i].data + 11;
            m->gpu_memory_text.len = value[i].len - 11;
            m->gpu_memory = ngx_parse_offset(&m->gpu_memory_text);
            if (m->gpu_memory == NGX_ERROR || m->gpu_memory == 0) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "invalid \"%V\": "
                                   "a size such as 16g or 24000m", &value[i]);
                return NGX_ERROR;
            }
            continue;
        }

        if (ngx_strncmp(value[i].data, "max_length=", 11) == 0) {
            if (ngx_http_clef_param_int(cf, &value[i], 11, 1, &m->max_length)
                != NGX_OK)
            {
                return NGX_ERROR;
            }
            continue;
        }

        if (ngx_strncmp(value[i].data, "mmproj=", 7) == 0) {
            m->mmproj.data = value[i].data + 7;
            m->mmproj.len = value[i].len - 7;
            if (ngx_http_clef_real_path(cf, m, &m->mmproj) != NGX_OK) {
                return NGX_ERROR;
            }
            continue;
        }

        if (ngx_strcmp(value[i].data, "truncate=reject") == 0) {
            m->truncate = CLEF_TRUNCATE_REJECT;
            continue;
        }

        if (ngx_strcmp(value[i].data, "truncate=state") == 0) {
            m->truncate = CLEF_TRUNCATE_STATE;
            continue;
        }

        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "invalid parameter \"%V\"",
                           &value[i]);
        return NGX_ERROR;
    }

    return NGX_OK;
}


/* The model's path, relative to the prefix: it must exist, a release
 * directory or a GGUF file; *fi is its information. */
static ngx_int_t
ngx_http_clef_model_path(ngx_conf_t *cf, ngx_http_clef_model_t *m,
    ngx_str_t *path, ngx_file_info_t *fi)
{
    m->path = *path;
    if (ngx_http_clef_real_path(cf, m, &m->path) != NGX_OK) {
        return NGX_ERROR;
    }
    if (ngx_file_info(m->path.data, fi) == NGX_FILE_ERROR
        || (!ngx_is_dir(fi) && !ngx_is_file(fi)))
    {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "clef_model \"%V\": \"%V\" is neither a release"
                           " directory nor a GGUF file", &m->name, &m->path);
        return NGX_ERROR;
    }
    return NGX_OK;
}


/* Why the model computes at m->computes_in, for `nginx -t`, into
 * buf. */
static const char *
ngx_http_clef_precision_why(const ngx_http_clef_model_t *m,
    const clef_model_info *info, char *buf, size_t size)
{
    double  unit;

    if (m->precision != CLEF_PRECISION_DEFAULT) {
        return "precision= in the configuration";
    }
    if (m->computes_in == CLEF_PRECISION_Q8) {
        return "the default for block-quantized weights: integer products, "
               "within 5e-2 of the exact ones; precision=fp32 computes "
               "exactly";
    }
    if (m->computes_in == CLEF_PRECISION_FP32
        && info->kind == CLEF_WEIGHTS_BLOCKS_EXPANDED)
    {
        /* GB, or MB for a small (test) model, decimal as disks count */
        unit = info->q8_bytes >= 1000000000 ? 1e9 : 1e6;
        (void) snprintf(buf, size, "the default for block types q8 "
                        "expands: its integer products would keep the "
                        "matrices in %.2f %s against the file's %.2f %s; "
                        "precision=q8 multiplies faster",
                        (double) info->q8_bytes / unit, unit > 1e6 ? "GB" : "MB",
                        (double) info->bytes / unit, unit > 1e6 ? "GB" : "MB");
        return buf;
    }
    if (m->computes_in == CLEF_PRECISION_FP32) {
        return "the default for float weights: exact";
    }
    return "the backend's default";
}


/* Validates the release without loading a weight (nginx -t does this):
 * its lengths, weights and media into m, the rest into *info. */
static ngx_int_t
ngx_http_clef_model_inspect(ngx_conf_t *cf, ngx_http_clef_model_t *m,
    clef_model_info *info)
{
    clef_error  err;
    int         rc;
    char        why[256];

    /* tp must divide every sharded count of this model (nginx -t says
     * which one it does not) */
    clef_error_clear(&err);
    rc = clef_model_inspect((char *) m->path.data,
                            m->mmproj.len ? (char *) m->mmproj.data : NULL,
                            (int) m->tp, info, &err);
    if (rc == CLEF_INSPECT_OPEN) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "clef_model \"%V\" in \"%V\": %s", &m->name,
                           &m->path, err.message);
        return NGX_ERROR;
    }
    if (rc != 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "clef_model \"%V\": %s",
                           &m->name, err.message);
        return NGX_ERROR;
    }
    m->max_token_bytes = info->max_token_bytes;
    if (m->max_length == 0) {
        m->max_length = info->max_length;
    }
    m->gpu_rank = info->gpu_rank;
    m->gpu_weights = info->gpu_weights;
    m->weights.len = ngx_strlen(info->weights);
    m->weights.data = ngx_pnalloc(cf->pool, m->weights.len + 1);
    if (m->weights.data == NULL) {
        return NGX_ERROR;
    }
    ngx_memcpy(m->weights.data, info->weights, m->weights.len + 1);

    /* images and videos need the vision tower, audio clips the audio
     * tower, and the backend an encoder for them at this tp (its row in
     * backend/registry.c says which) */
    m->media = info->media;
    m->media.accepts &= clef_backend_media((char *) m->backend.data,
                                           m->backend.len, (int) m->tp);

    /* the precision it runs at: a block-quantized file gets the CPU's
     * integer products unless precision= says otherwise; `nginx -t`
     * says which, and why, since the two differ in speed and exactness */
    m->computes_in = clef_backend_precision((char *) m->backend.data,
                                            m->backend.len, m->precision,
                                            info->kind);
    if (ngx_test_config) {
        ngx_conf_log_error(NGX_LOG_NOTICE, cf, 0, "clef_model \"%V\": %V "
                           "weights, backend=%V computes at precision %s "
                           "(%s)", &m->name, &m->weights, &m->backend,
                           clef_precision_name(m->computes_in),
                           ngx_http_clef_precision_why(m, info, why,
                                                       sizeof(why)));
    }
    return ngx_http_clef_weight_types(cf, m, info);
}


/* The one line /v1/models and /status give of the model. */
static ngx_int_t
ngx_http_clef_model_describe(ngx_conf_t *cf, ngx_http_clef_model_t *m,
    const clef_model_info *info)
{
    u_char  *p;
    char     inputs[192];

    m->description.data = ngx_pnalloc(cf->pool, 384);
    if (m->description.data == NULL) {
        return NGX_ERROR;
    }
    ngx_http_clef_inputs_text(m, info->omni, inputs, sizeof(inputs));
    p = ngx_snprintf(m->description.data, 384,
                     "Clef %sdecision model %V: %d layers, hidden size %d, "
                     "%V weights, %V backend; %s", info->omni ? "Omni " : "",
                     &m->name, info->layers, info->hidden_size, &m->weights,
                     &m->backend, inputs);
    m->description.len = p - m->description.data;
    return NGX_OK;
}


/* The release date of a checkpoint directory: its config.json's date; of
 * a GGUF file, the file's.  *fi is the path's information. */
static ngx_int_t
ngx_http_clef_release_date(ngx_conf_t *cf, ngx_http_clef_model_t *m,
    ngx_file_info_t *fi)
{
    struct tm   tm;
    time_t      mtime;
    u_char      cfg[NGX_MAX_PATH];

    if (ngx_is_dir(fi)) {
        ngx_snprintf(cfg, sizeof(cfg) - 1, "%V/config.json%Z", &m->path);
    } else {
        ngx_snprintf(cfg, sizeof(cfg) - 1, "%V%Z", &m->path);
    }
    mtime = ngx_file_info((char *) cfg, fi) == NGX_FILE_ERROR
            ? ngx_time() : ngx_file_mtime(fi);
    gmtime_r(&mtime, &tm);
    m->release_date.data = ngx_pnalloc(cf->pool, sizeof("YYYY-MM-DD"));
    if (m->release_date.data == NULL) {
        return NGX_ERROR;
    }
    m->release_date.len = strftime((char *) m->release_date.data,
                                   sizeof("YYYY-MM-DD"), "%Y-%m-%d", &tm);
    return NGX_OK;
}


/* What an engine is kept running across reloads for while it stays the
 * same. */
static ngx_int_t
ngx_http_clef_fingerprint(ngx_conf_t *cf, ngx_http_clef_model_t *m)
{
    u_char  *p;

    m->fingerprint.data = ngx_pnalloc(cf->pool, m->path.len + m->mmproj.len
                                      + m->devices_text.len + 128);
    if (m->fingerprint.data == NULL) {
        return NGX_ERROR;
    }
    p = ngx_sprintf(m->fingerprint.data, "%V|%V|%V|%i|%V|%i|%i|%i|%i|%O",
                    &m->path, &m->mmproj, &m->backend, m->threads,
                    &m->devices_text, m->tp, m->max_length, m->truncate,
                    (ngx_int_t) m->precision, m->gpu_memory);
    m->fingerprint.len = p - m->fingerprint.data;
    return NGX_OK;
}


static char *
ngx_http_clef_model(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_clef_main_conf_t *mcf = conf;

    ngx_str_t               *value;
    ngx_http_clef_model_t   *m;
    clef_model_info          info;
    char                     why[512];
    ngx_file_info_t          fi;

    if (mcf->model != NULL) {
        return "is duplicate: one model per http block";
    }

    value = cf->args->elts;

    m = ngx_pcalloc(cf->pool, sizeof(ngx_http_clef_model_t));
    if (m == NULL) {
        return NGX_CONF_ERROR;
    }
    m->name = value[1];
    ngx_str_set(&m->backend, "cpu");
    m->tp = 1;
    m->max_length = 0;               /* the model's default, once read */
    m->truncate = CLEF_TRUNCATE_REJECT;

    if (ngx_http_clef_model_params(cf, m, value, cf->args->nelts) != NGX_OK
        || ngx_http_clef_model_path(cf, m, &value[2], &fi) != NGX_OK
        || ngx_http_clef_check_layout(cf, m) != NGX_OK)
    {
        return NGX_CONF_ERROR;
    }

    /* the engine runs from libclef_engine.so beside this module: a missing
     * one would fail every engine start after nginx came up */
    if (clef_engine_library_check(why, sizeof(why)) != 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "clef_model \"%V\": %s",
                           &m->name, why);
        return NGX_CONF_ERROR;
    }

    if (ngx_http_clef_model_inspect(cf, m, &info) != NGX_OK
        || ngx_http_clef_model_describe(cf, m, &info) != NGX_OK)
    {
        return NGX_CONF_ERROR;
    }

    /* checking the release read its tokenizer: give that memory back
     * before the master forks workers that would all carry it */
    (void) malloc_trim(0);

    if (ngx_http_clef_release_date(cf, m, &fi) != NGX_OK
        || ngx_http_clef_fingerprint(cf, m) != NGX_OK)
    {
        return NGX_CONF_ERROR;
    }

    mcf->model = m;

    return NGX_CONF_OK;
}


/* ---- clef_engine ----------------------------------------------------------- */

static char *
ngx_http_clef_engine(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_clef_main_conf_t *mcf = conf;

    ngx_str_t   *value, name, s;
    ngx_uint_t   i;
    ssize_t      size;
    u_char      *p;
    ngx_int_t    n;

    if (mcf->zone != NULL) {
        return "is duplicate";
    }

    value = cf->args->elts;
    name.len = 0;
    size = 0;

    for (i = 1; i < cf->args->nelts; i++) {

        if (ngx_strncmp(value[i].data, "zone=", 5) == 0) {
            name.data = value[i].data + 5;
            p = (u_char *) ngx_strchr(name.data, ':');
            if (p == NULL) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "invalid zone size \"%V\"", &value[i]);
                return NGX_CONF_ERROR;
            }
            name.len = p - name.data;
            s.data = p + 1;
            s.len = value[i].data + value[i].len - s.data;
            size = ngx_parse_size(&s);
            if (size == NGX_ERROR || name.len == 0) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "invalid zone \"%V\"", &value[i]);
                return NGX_CONF_ERROR;
            }
            if (size < CLEF_QUEUE_MIN_SIZE) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "zone \"%V\" is too small: at least 1m",
                                   &value[i]);
                return NGX_CONF_ERROR;
            }
            continue;
        }

        if (ngx_strncmp(value[i].data, "max_batch_tokens=", 17) == 0) {
            n = ngx_atoi(value[i].data + 17, value[i].len - 17);
            if (n == NGX_ERROR || n < 1) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "invalid parameter \"%V\"", &value[i]);
                return NGX_CONF_ERROR;
            }
            mcf->max_batch_tokens = n;
            continue;
        }

        /* media workers, each with a decode process (the engine's
         * serve/media_workers.h); default: from the cores */
        if (ngx_strncmp(value[i].data, "decoders=", 9) == 0) {
            n = ngx_atoi(value[i].data + 9, value[i].len - 9);
            if (n == NGX_ERROR || n < 1 || n > 64) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "invalid parameter \"%V\": decoders "
                                   "takes 1 to 64", &value[i]);
                return NGX_CONF_ERROR;
            }
            mcf->decoders = n;
            continue;
        }

        if (ngx_strncmp(value[i].data, "chunk_tokens=", 13) == 0) {
            s.data = value[i].data + 13;
            s.len = value[i].len - 13;
            if (s.len == 3 && ngx_strncmp(s.data, "off", 3) == 0) {
                mcf->chunk_tokens = 0;
                continue;
            }
            n = ngx_atoi(s.data, s.len);
            if (n == NGX_ERROR || n < 1 || n % CLEF_PART_ALIGN != 0) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "invalid parameter \"%V\": a part of a "
                                   "record is a positive multiple of %d "
                                   "tokens, or off", &value[i],
                                   CLEF_PART_ALIGN);
                return NGX_CONF_ERROR;
            }
            mcf->chunk_tokens = n;
            continue;
        }

        if (ngx_strncmp(value[i].data, "max_queue=", 10) == 0) {
            n = ngx_atoi(value[i].data + 10, value[i].len - 10);
            if (n == NGX_ERROR || n < 1) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "invalid parameter \"%V\"", &value[i]);
                return NGX_CONF_ERROR;
            }
            mcf->max_queue = (ngx_uint_t) n;
            continue;
        }

        if (ngx_strncmp(value[i].data, "timeout=", 8) == 0) {
            s.data = value[i].data + 8;
            s.len = value[i].len - 8;
            mcf->timeout = ngx_parse_time(&s, 0);
            if (mcf->timeout == (ngx_msec_t) NGX_ERROR || mcf->timeout == 0) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "invalid parameter \"%V\"", &value[i]);
                return NGX_CONF_ERROR;
            }
            continue;
        }

        if (ngx_strncmp(value[i].data, "watchdog=", 9) == 0) {
            s.data = value[i].data + 9;
            s.len = value[i].len - 9;
            if (s.len == 3 && ngx_strncmp(s.data, "off", 3) == 0) {
                mcf->watchdog = 0;
                continue;
            }
            mcf->watchdog = ngx_parse_time(&s, 0);
            if (mcf->watchdog == (ngx_msec_t) NGX_ERROR || mcf->watchdog == 0) {
                ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                                   "invalid parameter \"%V\"", &value[i]);
                return NGX_CONF_ERROR;
            }
            continue;
        }

        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "invalid parameter \"%V\"",
                           &value[i]);
        return NGX_CONF_ERROR;
    }

    if (name.len == 0) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "\"%V\" must have \"zone=NAME:SIZE\"", &cmd->name);
        return NGX_CONF_ERROR;
    }

    if (ngx_http_clef_add_zone(cf, mcf, &name, size) != NGX_OK) {
        return NGX_CONF_ERROR;
    }

    return NGX_CONF_OK;
}


static ngx_int_t
ngx_http_clef_add_zone(ngx_conf_t *cf, ngx_http_clef_main_conf_t *mcf,
    ngx_str_t *name, ssize_t size)
{
    ngx_shm_zone_t  *zone;

    zone = ngx_shared_memory_add(cf, name, size, &ngx_http_clef_module);
    if (zone == NULL) {
        return NGX_ERROR;
    }
    if (zone->data) {
        ngx_conf_log_error(NGX_LOG_EMERG, cf, 0,
                           "clef_engine zone \"%V\" is already used", name);
        return NGX_ERROR;
    }
    zone->init = ngx_http_clef_init_zone;
    zone->data = mcf;
    mcf->zone = zone;

    return NGX_OK;
}


/* A reload with the same zone name and size keeps the mapping, so the
 * queue, its records in flight and its counters survive (as limit_req's
 * zones do); a fresh zone gets a fresh queue. */
static ngx_int_t
ngx_http_clef_init_zone(ngx_shm_zone_t *shm_zone, void *data)
{
    ngx_http_clef_main_conf_t  *mcf = shm_zone->data;
    ngx_slab_pool_t            *shpool;
    void                       *mem;
    size_t                      size;
    uint64_t                    zone_id;
    clef_error                  err;

    shpool = (ngx_slab_pool_t *) shm_zone->shm.addr;

    if (data != NULL || shm_zone->shm.exists) {
        if (shpool->data == NULL
            || clef_zone_attach(&mcf->queue, shpool->data) != 0)
        {
            ngx_log_error(NGX_LOG_EMERG, shm_zone->shm.log, 0,
                          "clef_engine zone \"%V\" holds no clef queue",
                          &shm_zone->shm.name);
            return NGX_ERROR;
        }
        mcf->queue_ready = 1;
        return NGX_OK;
    }

    /* the queue takes every free page of the slab pool, in one piece */
    size = shpool->pfree * ngx_pagesize;
    mem = ngx_slab_alloc(shpool, size);
    if (mem == NULL) {
        ngx_log_error(NGX_LOG_EMERG, shm_zone->shm.log, 0,
                      "clef_engine zone \"%V\": cannot allocate %uz bytes",
                      &shm_zone->shm.name, size);
        return NGX_ERROR;
    }

    if (getrandom(&zone_id, sizeof(zone_id), 0) != sizeof(zone_id)) {
        zone_id = ((uint64_t) ngx_pid << 32) ^ (uint64_t) ngx_time()
                  ^ (uint64_t) (uintptr_t) mem;
    }

    clef_error_clear(&err);
    if (clef_zone_init(&mcf->queue, mem, size,
                       clef_zone_slots(shm_zone->shm.size), zone_id, &err)
        != 0)
    {
        ngx_log_error(NGX_LOG_EMERG, shm_zone->shm.log, 0,
                      "clef_engine zone \"%V\": %s", &shm_zone->shm.name,
                      err.message);
        return NGX_ERROR;
    }
    shpool->data = mem;
    mcf->queue_ready = 1;

    return NGX_OK;
}


/* ---- location directives ------------------------------------------------------- */

static char *
ngx_http_clef_location(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_clef_loc_conf_t *llcf = conf;

    ngx_http_core_loc_conf_t  *clcf;

    ngx_str_t                 *value = cf->args->elts;

    if (llcf->handler != NGX_HTTP_CLEF_NONE) {
        return "is duplicate";
    }
    llcf->handler = cmd->offset;

    if (cf->args->nelts == 2) {
        if (ngx_strcmp(value[1].data, "envelope=cloudflare") == 0) {
            llcf->envelope = NGX_HTTP_CLEF_ENVELOPE_CLOUDFLARE;
        } else if (ngx_strcmp(value[1].data, "envelope=systemone") != 0) {
            ngx_conf_log_error(NGX_LOG_EMERG, cf, 0, "invalid parameter "
                               "\"%V\": envelope=systemone or "
                               "envelope=cloudflare", &value[1]);
            return NGX_CONF_ERROR;
        }
    }

    clcf = ngx_http_conf_get_module_loc_conf(cf, ngx_http_core_module);
    clcf->handler = ngx_http_clef_content_handler;

    return NGX_CONF_OK;
}


/* Every clef location's handler, with libclef allocating from the
 * request's pool meanwhile (mem.h). */
static ngx_int_t
ngx_http_clef_content_handler(ngx_http_request_t *r)
{
    ngx_http_clef_loc_conf_t  *llcf;
    clef_mem_pool              mp;
    const clef_mem_pool       *prev;
    ngx_int_t                  rc;

    llcf = ngx_http_get_module_loc_conf(r, ngx_http_clef_module);
    prev = ngx_http_clef_mem_begin(r, &mp);
    switch (llcf->handler) {
    case NGX_HTTP_CLEF_SYSTEMONE:
        rc = llcf->envelope == NGX_HTTP_CLEF_ENVELOPE_CLOUDFLARE
             ? ngx_http_clef_envelope_check(r) : NGX_DECLINED;
        if (rc == NGX_DECLINED) {
            rc = ngx_http_clef_systemone_handler(r);
        }
        break;
    case NGX_HTTP_CLEF_MODELS:
        rc = ngx_http_clef_models_handler(r);
        break;
    default:
        rc = ngx_http_clef_status_handler(r);
        break;
    }
    clef_mem_use(prev);
    return rc;
}


static char *
ngx_http_clef_api_key(ngx_conf_t *cf, ngx_command_t *cmd, void *conf)
{
    ngx_http_clef_loc_conf_t *llcf = conf;

    ngx_str_t   *value, *key;
    ngx_uint_t   i;

    if (llcf->api_keys != NGX_CONF_UNSET_PTR) {
        return "is duplicate";
    }

    value = cf->args->elts;
    llcf->api_keys = ngx_array_create(cf->pool, cf->args->nelts, sizeof(ngx_str_t));
    if (llcf->api_keys == NULL) {
        return NGX_CONF_ERROR;
    }

    if (cf->args->nelts == 2 && ngx_strcmp(value[1].data, "off") == 0) {
        /* an empty list: no check here, whatever the outer level says */
        return NGX_CONF_OK;
    }

    for (i = 1; i < cf->args->nelts; i++) {
        if (value[i].len == 0) {
            return "has an empty key";
        }
        key = ngx_array_push(llcf->api_keys);
        if (key == NULL) {
            return NGX_CONF_ERROR;
        }
        *key = value[i];
    }

    return NGX_CONF_OK;
}


/* ---- counting every response of a clef location -------------------------------- */

static ngx_int_t
ngx_http_clef_log_handler(ngx_http_request_t *r)
{
    ngx_http_clef_loc_conf_t   *llcf;
    ngx_http_clef_main_conf_t  *mcf;
    ngx_http_clef_ctx_t        *ctx;
    ngx_uint_t                  status;

    llcf = ngx_http_get_module_loc_conf(r, ngx_http_clef_module);
    if (llcf->handler != NGX_HTTP_CLEF_SYSTEMONE) {
        return NGX_OK;
    }
    mcf = ngx_http_get_module_main_conf(r, ngx_http_clef_module);
    if (!mcf->queue_ready) {
        return NGX_OK;
    }

    status = r->err_status ? r->err_status : r->headers_out.status;
    if (r->connection->error || status == 0) {
        status = NGX_HTTP_CLIENT_CLOSED_REQUEST;
    }
    ctx = ngx_http_get_module_ctx(r, ngx_http_clef_module);
    clef_count_response(&mcf->queue, (int) status,
                        ctx ? clef_now_ns() - ctx->start_ns : -1);

    return NGX_OK;
}


/* ---- processes ---------------------------------------------------------------- */

static ngx_int_t
ngx_http_clef_init_module(ngx_cycle_t *cycle)
{
    ngx_http_clef_main_conf_t  *mcf;

    mcf = ngx_http_cycle_get_module_main_conf(cycle, ngx_http_clef_module);
    if (mcf == NULL || mcf->model == NULL) {
        /* no model any more: the previous engine, if any, drains when the
         * old cycle goes */
        return NGX_OK;
    }

    if (!mcf->queue_ready
        || ngx_http_clef_model_readable(cycle, mcf) != NGX_OK)
    {
        return NGX_ERROR;
    }
    if (ngx_test_config) {
        /* nginx -t validated the model (headers only); start nothing */
        return NGX_OK;
    }

    /* these apply to the running engine and keeper on every reload */
    clef_zone_configure(&mcf->queue, mcf->max_batch_tokens,
                        mcf->chunk_tokens, (int64_t) mcf->watchdog);

    return ngx_http_clef_engine_start(cycle, mcf);
}


static ngx_int_t
ngx_http_clef_init_process(ngx_cycle_t *cycle)
{
    ngx_http_clef_main_conf_t  *mcf;

    if (ngx_process != NGX_PROCESS_SINGLE) {
        /* only the master may hold the keeper's control pipe open */
        ngx_http_clef_engine_forget();
    }

    if (ngx_process != NGX_PROCESS_WORKER && ngx_process != NGX_PROCESS_SINGLE)
    {
        return NGX_OK;
    }

    mcf = ngx_http_cycle_get_module_main_conf(cycle, ngx_http_clef_module);
    if (mcf == NULL || mcf->model == NULL || !mcf->queue_ready) {
        return NGX_OK;
    }

    return ngx_http_clef_wake_init(cycle, mcf);
}


static void
ngx_http_clef_exit_process(ngx_cycle_t *cycle)
{
    ngx_http_clef_wake_close(cycle);
}
