/*
 * ngx_http_clef_module: serves Clef decision models over the System One
 * protocol from a shared-memory batching engine process.
 *
 * Only nginx glue lives here (directives, body reading, validation, submit
 * and wake-up, answers, /v1/models, status, variables); the queue, the
 * scheduler and the engine process are plain C in engine/.
 */
#ifndef NGX_HTTP_CLEF_MODULE_H
#define NGX_HTTP_CLEF_MODULE_H

#include <ngx_config.h>
#include <ngx_core.h>
#include <ngx_http.h>

#include "clef.h"

#ifndef NGX_HTTP_UNPROCESSABLE_ENTITY
#define NGX_HTTP_UNPROCESSABLE_ENTITY     422
#endif

#define NGX_HTTP_CLEF_DEFAULT_ZONE_SIZE   (64 * 1024 * 1024)
#define NGX_HTTP_CLEF_MAX_BATCH_RECORDS   256

/* the shape of a clef_systemone location's responses */
enum {
    NGX_HTTP_CLEF_ENVELOPE_SYSTEMONE = 0,  /* /v1/systemone's own */
    NGX_HTTP_CLEF_ENVELOPE_CLOUDFLARE      /* Workers AI's REST API */
};

enum {
    NGX_HTTP_CLEF_NONE = 0,
    NGX_HTTP_CLEF_SYSTEMONE,
    NGX_HTTP_CLEF_MODELS,
    NGX_HTTP_CLEF_STATUS
};

typedef struct {
    ngx_str_t                  name;          /* clef_model NAME */
    ngx_str_t                  path;          /* absolute, NUL-terminated:
                                                 a release directory or a
                                                 GGUF file */
    ngx_str_t                  mmproj;        /* mmproj=: a GGUF model's
                                                 vision tower, absolute;
                                                 len 0: none */
    ngx_str_t                  weights;       /* how they are stored:
                                                 "BF16", "Q4_K_M" */
    ngx_str_t                  backend;       /* "cpu" or "cuda" */
    ngx_int_t                  threads;
    clef_precision             precision;     /* precision=, or DEFAULT */
    clef_precision             computes_in;   /* what the backend runs it
                                                 at: precision=, or its
                                                 default for these weights
                                                 (registry.h) */
    ngx_str_t                  weight_types;  /* /v1/models' JSON array */
    ngx_int_t                  device;        /* devices[0], or 0 */
    int                        devices[CLEF_MAX_DEVICES];
    int                        n_devices;     /* 0: devices= not given */
    ngx_int_t                  tp;            /* devices per replica */
    off_t                      gpu_memory;    /* gpu_memory=: bytes the
                                                 backend may use on each
                                                 device; 0: not given */
    ngx_str_t                  gpu_memory_text;  /* as written */
    clef_devplan_rank          gpu_rank;      /* the CUDA backend's memory
                                                 plan (device_plan.h): rank
                                                 0's sizes and */
    int64_t                    gpu_weights;   /* weights, bytes */
    ngx_str_t                  devices_text;  /* as written, for the
                                                 fingerprint */
    ngx_int_t                  max_length;
    ngx_int_t                  truncate;      /* clef_truncate */
    ngx_str_t                  description;
    ngx_str_t                  release_date;  /* YYYY-MM-DD */
    ngx_str_t                  fingerprint;   /* what an engine restart
                                                 depends on */
    size_t                     max_token_bytes;  /* of its tokenizer: the
                                                 worker's cheap bound */
    clef_media_conf            media;         /* the media kinds the model
                                                 and its backend run (a
                                                 vision tower: "images"),
                                                 and their processors: the
                                                 items' tokens from their
                                                 headers */
} ngx_http_clef_model_t;

#define ngx_http_clef_takes(m, kind)                                        \
    (((m)->media.accepts & CLEF_MEDIA_BIT(kind)) != 0)

/* What the model reads, for its /v1/models description: "text only",
 * "text and images (PNG, JPEG, WebP)", ... */
ngx_int_t ngx_http_clef_weight_types(ngx_conf_t *cf,
    ngx_http_clef_model_t *m, const clef_model_info *info);
void ngx_http_clef_inputs_text(const ngx_http_clef_model_t *m, int omni,
    char *out, size_t cap);

typedef struct {
    ngx_http_clef_model_t     *model;         /* NULL: no clef_model */
    ngx_shm_zone_t            *zone;
    ngx_int_t                  max_batch_tokens;
    ngx_int_t                  decoders;      /* 0: from the cores */
    ngx_int_t                  chunk_tokens;  /* 0: off */
    ngx_uint_t                 max_queue;
    ngx_msec_t                 timeout;
    ngx_msec_t                 watchdog;      /* 0: off */
    clef_queue                 queue;         /* set by the zone init */
    ngx_flag_t                 queue_ready;
    uint32_t                   gen;           /* configuration generation */
    ngx_int_t                  request_id_index;
    ngx_int_t                  engine_line;   /* "clef_engine" line, for
                                                 error messages */
} ngx_http_clef_main_conf_t;

typedef struct {
    ngx_uint_t                 handler;       /* NGX_HTTP_CLEF_* */
    ngx_int_t                  max_questions;
    ngx_int_t                  max_items[CLEF_MEDIA_KINDS];
                                              /* by kind: clef_max_images,
                                                 ... (media/kinds.c) */
    ngx_int_t                  max_tokens;
    ngx_array_t               *api_keys;      /* of ngx_str_t; NULL unset,
                                                 empty: off */
    ngx_flag_t                 json_errors;   /* clef_json_errors */
    ngx_uint_t                 envelope;      /* NGX_HTTP_CLEF_ENVELOPE_* */
} ngx_http_clef_loc_conf_t;

typedef struct {
    ngx_http_request_t        *request;
    ngx_queue_t                link;          /* in the worker's pending list */
    clef_request               req;
    ngx_event_t                deadline;
    clef_ticket                ticket;
    int64_t                    start_ns;
    int64_t                    queue_ns;      /* -1 until known */
    int64_t                    engine_ns;
    ngx_int_t                  input_tokens;  /* -1 until known */
    int                        n_options;     /* logits the answer reads */
    ngx_str_t                  error_body;    /* for the error filter */

    unsigned                   parsed:1;
    unsigned                   submitted:1;
    unsigned                   running_logged:1;
    unsigned                   pending:1;
    unsigned                   finished:1;
    unsigned                   own_response:1;
    unsigned                   replace_body:1;
    unsigned                   body_sent:1;
} ngx_http_clef_ctx_t;

extern ngx_module_t  ngx_http_clef_module;

/* ngx_http_clef_systemone.c */
ngx_int_t ngx_http_clef_systemone_handler(ngx_http_request_t *r);
ngx_int_t ngx_http_clef_wake_init(ngx_cycle_t *cycle,
    ngx_http_clef_main_conf_t *mcf);
void ngx_http_clef_wake_close(ngx_cycle_t *cycle);

/* ngx_http_clef_reply.c */
/* libclef allocates from r's pool until clef_mem_use(returned value) */
const clef_mem_pool *ngx_http_clef_mem_begin(ngx_http_request_t *r,
    clef_mem_pool *mp);
ngx_http_clef_ctx_t *ngx_http_clef_get_ctx(ngx_http_request_t *r);
ngx_int_t ngx_http_clef_send(ngx_http_request_t *r, ngx_uint_t status,
    ngx_str_t *content_type, u_char *body, size_t len);
ngx_int_t ngx_http_clef_send_detail(ngx_http_request_t *r, ngx_uint_t status,
    const char *message);
ngx_int_t ngx_http_clef_send_typed(ngx_http_request_t *r, ngx_uint_t status,
    const char *error_type, const char *message);
ngx_int_t ngx_http_clef_send_error(ngx_http_request_t *r,
    const clef_error *err, const u_char *body, size_t len);
ngx_int_t ngx_http_clef_send_not_allowed(ngx_http_request_t *r,
    const char *allow);
/* b's bytes with status (content_type NULL: JSON), b freed; a 500 when
 * !ok (b could not be written) or memory runs out */
ngx_int_t ngx_http_clef_send_buf(ngx_http_request_t *r, ngx_uint_t status,
    ngx_str_t *content_type, clef_buf *b, int ok);
/* The start of a GET or HEAD handler (clef_models, clef_status): its
 * context, and a 405 to another method.  NGX_DECLINED: go on; anything
 * else: return it */
ngx_int_t ngx_http_clef_get_only(ngx_http_request_t *r);
/* NGX_DECLINED: go on; anything else: a 401/403 was sent, return it */
ngx_int_t ngx_http_clef_check_api_key(ngx_http_request_t *r,
    ngx_http_clef_loc_conf_t *llcf);
ngx_int_t ngx_http_clef_set_retry_after(ngx_http_request_t *r,
    ngx_msec_t ms);
ngx_int_t ngx_http_clef_filter_init(ngx_conf_t *cf);

/* ngx_http_clef_envelope.c: the Cloudflare REST form */
/* NGX_DECLINED: the path names the model served; anything else was sent */
ngx_int_t ngx_http_clef_envelope_check(ngx_http_request_t *r);
/* *body becomes the enveloped body, in r's pool */
ngx_int_t ngx_http_clef_envelope_wrap(ngx_http_request_t *r,
    ngx_uint_t status, u_char **body, size_t *len);

/* ngx_http_clef_models.c, ngx_http_clef_status.c */
ngx_int_t ngx_http_clef_models_handler(ngx_http_request_t *r);
ngx_int_t ngx_http_clef_status_handler(ngx_http_request_t *r);

/* ngx_http_clef_variables.c */
ngx_int_t ngx_http_clef_add_variables(ngx_conf_t *cf);
ngx_int_t ngx_http_clef_server_timing(ngx_http_request_t *r,
    ngx_http_clef_ctx_t *ctx);

/* ngx_http_clef_access.c: every file of the model opens as the user the
 * engine runs as (nginx -t, start, reload); logs why not */
ngx_int_t ngx_http_clef_model_readable(ngx_cycle_t *cycle,
    ngx_http_clef_main_conf_t *mcf);

/* ngx_http_clef_engine.c (master side) */
ngx_int_t ngx_http_clef_engine_start(ngx_cycle_t *cycle,
    ngx_http_clef_main_conf_t *mcf);
void ngx_http_clef_engine_forget(void);
/* exit_master: every keeper drains and exits before nginx does */
void ngx_http_clef_engine_stop(ngx_cycle_t *cycle);

/* ngx_http_clef_keeper_log.c: where the keeper and the engine write */
typedef struct ngx_http_clef_log_page_s  ngx_http_clef_log_page_t;
/* master: a page shared with a keeper to be forked, naming log's file */
ngx_http_clef_log_page_t *ngx_http_clef_log_page_new(ngx_log_t *log);
/* master: an adopted keeper writes to this cycle's log from now on */
void ngx_http_clef_log_page_set(ngx_http_clef_log_page_t *page,
    ngx_log_t *log);
void ngx_http_clef_log_page_free(ngx_http_clef_log_page_t *page);
/* keeper, just forked: stdio off the terminal, the log followed */
void ngx_http_clef_log_detach(ngx_cycle_t *cycle,
    ngx_http_clef_log_page_t *page);
/* clef_engine_conf.log of the keeper and the engine */
void ngx_http_clef_engine_log(int level, const char *msg);

#endif
