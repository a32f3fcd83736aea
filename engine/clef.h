/*
 * libclef's client API: the one header the nginx module includes.  It is
 * what a worker and the master need, and all of it is the client library
 * (libclef_client.a, linked into the module): parsing and validating a
 * request, rendering its plan, the zone, wake-ups, answers, status, the
 * backends' names, a model's summary for `nginx -t`, and the keeper that
 * starts the engine.  The engine itself (tokenizing, media, the backends)
 * is libclef_engine.so, loaded only in the engine process
 * (serve/engine_library.h).
 *
 *   master      clef_model_inspect (nginx -t), clef_zone_init / attach /
 *               configure, clef_keeper_run (keeper.h) in a forked child,
 *               clef_zone_next_gen
 *   worker      parse + validate (request.h), render the record
 *               (clef_plan_build, plan.h), check the cheap token bound,
 *               clef_submit -> wait for a wake-up (clef_wake_*) ->
 *               clef_result -> clef_answer_json (answer.h) ->
 *               clef_release; clef_cancel when the client goes or the
 *               deadline passes
 *   any         clef_status_read: a snapshot for /status and metrics
 *
 * The module includes this header and no other of the engine
 * (t/engine-split.t checks): what it needs besides, the JSON reader and
 * writer of the Cloudflare envelope (buf.h, json.h, render.h), the media
 * kinds' rows behind the clef_max_* directives (media/kinds.h, through
 * model_inspect.h) and the backends' rows (registry.h), comes through the
 * includes below.
 *
 * The CLI and the tests link all of libclef (build/libclef.a) and reach
 * further in; the queue underneath is queue.h.
 */
#ifndef CLEF_H
#define CLEF_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "backend/device_plan.h"
#include "backend/registry.h"
#include "base/buf.h"
#include "base/error.h"
#include "base/mem.h"
#include "model/model_inspect.h"
#include "protocol/answer.h"
#include "protocol/plan.h"
#include "protocol/request.h"
#include "serve/engine_conf.h"
#include "serve/engine_library.h"
#include "serve/keeper.h"
#include "serve/queue.h"
#include "serve/stats.h"
#include "serve/wake.h"
#include "text/json.h"
#include "text/render.h"

/* ---- the zone (master) ------------------------------------------------- */

/* Lays a fresh zone of nslots record slots (0: clef_zone_slots(size)) out
 * over mem[0..size); zone_id names its wake sockets. */
int      clef_zone_init(clef_queue *q, void *mem, size_t size,
    uint32_t nslots, uint64_t zone_id, clef_error *err);
/* Attaches to a zone laid out before (a reload keeps it); -1: not one. */
int      clef_zone_attach(clef_queue *q, void *mem);
/* Record slots a zone of this size has. */
uint32_t clef_zone_slots(size_t size);
/* Settings that apply to the running engine and keeper at once. */
void     clef_zone_configure(clef_queue *q, int64_t max_batch_tokens,
    int64_t chunk_tokens, int64_t watchdog_ms);
/* The generation a newly started keeper serves (above every one seen). */
uint32_t clef_zone_next_gen(clef_queue *q);
pid_t    clef_zone_engine_pid(const clef_queue *q);
pid_t    clef_zone_keeper_pid(const clef_queue *q);
uint64_t clef_zone_id(const clef_queue *q);
/* Bytes a zone can hold for records in flight. */
size_t   clef_zone_data_size(const clef_queue *q);
/* 1 when a and b are the same zone. */
int      clef_zone_same(const clef_queue *a, const clef_queue *b);

/* ---- records (worker) ---------------------------------------------------- */

typedef struct {
    uint32_t  slot;
    uint32_t  seq;
} clef_ticket;

/* Why the engine serving generation gen cannot take a record now (a 503
 * message), or NULL when it can (or is loading: records wait within their
 * deadline).  Checks the engine's and keeper's processes at most every
 * 250 ms per process, not per request. */
const char *clef_refusal(clef_queue *q, uint32_t gen);

/* Retry-After for a 429: the time the engine needs for the queue at the
 * rate it has been running (100 ms .. 60 s; 1 s before any batch ran). */
uint32_t clef_retry_after_ms(clef_queue *q);

/* Queues a rendered plan (sub->body is a clef_plan_build() blob).  CLEF_Q_*
 * of queue.h; *t names the record from then on. */
int      clef_submit(clef_queue *q, const clef_submission *sub,
    clef_ticket *t);

enum {
    CLEF_RECORD_LOST = -1,      /* the ticket names no record of ours */
    CLEF_RECORD_WAITING = 0,    /* queued or being prepared */
    CLEF_RECORD_RUNNING,        /* its forward has started */
    CLEF_RECORD_DONE            /* clef_result() may be read */
};

int      clef_poll(const clef_queue *q, clef_ticket t);

typedef struct {
    int                status;         /* 0: logits; else the HTTP status */
    const float       *logits;         /* one per option, valid until
                                          clef_release() */
    clef_error         error;          /* status != 0 */
    int32_t            n_tokens;
    int32_t            state_tokens;
    int32_t            state_kept;
    uint32_t           batch_records;
    int64_t            queue_ns;       /* submit -> taken; -1 unknown */
    int64_t            engine_ns;      /* taken -> done; -1 unknown */
} clef_result;

/* 0 with r filled when the record is DONE, -1 otherwise. */
int      clef_result_read(const clef_queue *q, clef_ticket t, clef_result *r);

/* The worker has read the result: the record's memory goes back. */
void     clef_release(clef_queue *q, clef_ticket t);

/* The worker gives up (client gone, deadline): 1 when a pending record was
 * cancelled. */
int      clef_cancel(clef_queue *q, clef_ticket t);

/* A response of a clef_systemone location went out. */
void     clef_count_response(clef_queue *q, int status, int64_t latency_ns);
/* A record was answered with logits: its queue and engine times count. */
void     clef_count_answer(clef_queue *q, const clef_result *r);

/* Wake-ups a worker's socket could not take so far: when it moves, the
 * worker scans all of its pending records once. */
uint64_t clef_wake_lost(const clef_queue *q);

/* ---- status -------------------------------------------------------------- */

typedef struct {
    uint32_t          state;           /* CLEF_ENGINE_* */
    pid_t             engine_pid;
    pid_t             keeper_pid;
    uint32_t          gen;
    uint32_t          epoch;
    char              message[256];
    clef_queue_usage  usage;
    int64_t           stalled_ms;
    uint64_t          progress;
    int64_t           watchdog_ms;
    uint64_t          wake_lost;
    uint32_t          n_replicas;
    uint64_t          replicas_up;     /* bit r: replica r serves */
    uint32_t          n_decoders;      /* the engine's decode lanes */
    int64_t           decoder_death_ms;   /* Unix ms of the last death */
    char              decoder_cause[192]; /* what it was */
    clef_queue_stats  stats;           /* a copy, read counter by counter */
} clef_status;

void     clef_status_read(clef_queue *q, clef_status *st);

/* The two figures a 504 names, without copying the counters. */
typedef struct {
    uint32_t  state;
    uint32_t  queued;
} clef_status_brief;

void     clef_status_brief_read(clef_queue *q, clef_status_brief *b);

#endif
