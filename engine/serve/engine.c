/*
 * The engine process (see engine.h).
 */
#include "serve/engine.h"

#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "backend/backend.h"
#include "base/pid.h"
#include "media/decoder.h"
#include "model/model.h"
#include "model/model_media.h"
#include "protocol/encode.h"
#include "protocol/encode_media.h"
#include "protocol/plan.h"
#include "serve/media_workers.h"
#include "serve/scheduler.h"

#define ENGINE_IDLE_MS       1000
/* prepared records waiting beyond this many batches' tokens hold the
 * media workers back (media_workers.h): decoded media are large */
#define ENGINE_READY_BATCHES 4

#define elog  clef_engine_log


static double
seconds_since(int64_t t0)
{
    return (double) (clef_now_ns() - t0) / 1e9;
}


typedef struct engine_s  engine;

/* A replica: one backend instance (a device, a tensor-parallel group of
 * devices, or the CPU) and the executor thread that drives it. */
typedef struct {
    engine                   *e;
    int                       index;
    clef_backend             *backend;
    clef_sched_batch          running;   /* its own batch */
    clef_backend_seq         *seq;       /* the state of the record it
                                            runs in parts, or NULL */
    int                       busy;      /* under e->mu */
    int                       faulted;   /* its device must be reset */
    int                       started;
    pthread_t                 thread;
} engine_replica;

struct engine_s {
    clef_queue               *q;
    const clef_engine_conf   *conf;
    clef_model               *model;
    const clef_tokenizer     *tk;
    const clef_backend_ops   *ops;
    engine_replica            replicas[CLEF_MAX_DEVICES];
    clef_backend_opts         replica_opts[CLEF_MAX_DEVICES];
    int                       n_replicas;
    int                       wake_fd;

    /* the ready FIFO is shared by the preparing thread and every executor:
     * under mu */
    clef_sched                sched;
    pthread_mutex_t           mu;
    pthread_cond_t            cv;        /* executors wait on it */
    int                       busy;      /* executors running a batch */
    int                       stop;

    /* records with media are prepared beside the scheduler */
    clef_media_workers       *media;
};

static volatile sig_atomic_t  engine_drain;
static clef_queue            *engine_signal_q;


static void
engine_on_term(int signo)
{
    (void) signo;
    engine_drain = 1;
    if (engine_signal_q != NULL) {
        /* async-signal-safe: an atomic add and a futex syscall */
        atomic_fetch_add(&engine_signal_q->h->futex, 1);
        syscall(SYS_futex, &engine_signal_q->h->futex, FUTEX_WAKE, INT32_MAX,
                NULL, NULL, 0);
    }
}


static void
engine_wake(void *ctx, const clef_wake_note *notes, int n)
{
    engine  *e = ctx;

    clef_wake_send(e->wake_fd, e->q->h->zone_id, notes, n,
                   &e->q->h->wake_lost);
}


static void
engine_answer_error(engine *e, uint32_t slot, const clef_error *err)
{
    clef_slot       *s = clef_queue_slot_w(e->q, slot);
    clef_wake_note   note;

    *clef_queue_error_w(e->q, slot) = *err;
    s->status = err->status >= 400 ? err->status : 500;
    /* a cancelled record is freed instead: nobody to wake */
    note = clef_queue_complete(e->q, slot);
    if (note.pid > 0) {
        engine_wake(e, &note, 1);
    }
}


static void
engine_prep_progress(void *ctx)
{
    clef_queue_progress(ctx);
}


/* A record whose media a worker prepares: its request, for the decoder's
 * log lines and to stop decoding when it is gone. */
typedef struct {
    engine    *e;
    uint32_t   slot;
    char       what[32];
} engine_media_job;


static void
engine_media_progress(void *ctx)
{
    engine_media_job  *j = ctx;

    clef_queue_progress(j->e->q);
}


static int
engine_media_cancelled(void *ctx)
{
    engine_media_job  *j = ctx;

    return clef_queue_is_cancelled(j->e->q, j->slot);
}


/* Tokenizes the rendered plan (plan.h) the worker handed over, bounded by
 * the record's limit, its media decoded and processed through lane (a
 * video in the decode process it waits for), never in an nginx worker.
 * 0 with it filled, -1 when the record was answered. */
static int
engine_encode(engine *e, uint32_t slot, clef_decoder_lane *lane,
    clef_sched_item *it)
{
    clef_slot         *s = clef_queue_slot_w(e->q, slot);
    clef_media_conf    mc;
    clef_encode_opts   opts;
    clef_decoder_run   run;
    engine_media_job   job;
    clef_error         err;
    clef_plan          plan;
    clef_record       *rec;
    int                rc;

    clef_error_clear(&err);
    rec = calloc(1, sizeof(*rec));
    if (rec == NULL) {
        clef_error_fail(&err, CLEF_E_NO_MEMORY, "out of memory");
        engine_answer_error(e, slot, &err);
        return -1;
    }
    if (clef_plan_view(&plan, clef_queue_body(e->q, slot), s->body_len, &err)
        != 0)
    {
        free(rec);
        engine_answer_error(e, slot, &err);
        return -1;
    }

    clef_encode_opts_default(&opts);
    opts.max_length = s->max_length > 0 ? s->max_length : e->conf->max_length;
    opts.truncate = (clef_truncate) s->truncate;
    /* a long item beats the watchdog's heart, and stops when its request
     * is gone */
    job.e = e;
    job.slot = slot;
    snprintf(job.what, sizeof(job.what), "record %u", slot);
    run.lane = lane;
    run.progress = engine_media_progress;
    run.cancelled = engine_media_cancelled;
    run.ctx = &job;
    run.what = job.what;
    opts.progress = engine_prep_progress;
    opts.progress_ctx = e->q;
    opts.media_run = &run;
    clef_model_media_conf(e->model, &mc);
    clef_media_conf_backend(&mc, e->conf->backend);
    if (plan.n_media > 0
        && clef_encode_media_prepare(&mc, &plan, &opts, &err) != 0)
    {
        clef_plan_free(&plan);
        free(rec);
        if (!clef_queue_is_cancelled(e->q, slot)) {
            atomic_fetch_add(&e->q->h->stats.encode_errors,
                             err.status >= 400 && err.status < 500);
        }
        engine_answer_error(e, slot, &err);
        return -1;
    }
    rc = clef_encode_plan(e->tk, &plan, &opts, rec, &err);
    clef_plan_free(&plan);
    /* the record took the items' data, after a failure it is freed here */
    clef_encode_media_release(&opts);
    if (rc != 0) {
        free(rec);
        atomic_fetch_add(&e->q->h->stats.encode_errors, 1);
        engine_answer_error(e, slot, &err);
        return -1;
    }
    if (rec->n_options != (int) s->n_options) {
        clef_error_fail(&err, CLEF_E_INTERNAL,
                        "encoder made %d options, the worker expects %u",
                        rec->n_options, s->n_options);
        clef_record_free(rec);
        free(rec);
        engine_answer_error(e, slot, &err);
        return -1;
    }
    it->tokens = (int64_t) rec->ids.n;
    it->prep = rec;
    return 0;
}


/* prepare() of the scheduler: a text-only record is encoded here and
 * now; one with media goes to the media workers (media_workers.h), so
 * that it never holds up the records behind it. */
static int
engine_prepare(void *ctx, uint32_t slot, clef_sched_item *it)
{
    engine      *e = ctx;
    clef_slot   *s = clef_queue_slot_w(e->q, slot);
    clef_error   err;
    clef_plan    plan;
    int          media;

    clef_error_clear(&err);
    if (e->media != NULL
        && clef_plan_view(&plan, clef_queue_body(e->q, slot), s->body_len,
                          &err) == 0)
    {
        media = plan.n_media > 0;
        clef_plan_free(&plan);
        if (media && clef_media_workers_push(e->media, slot) == 0) {
            return 1;
        }
    }
    return engine_encode(e, slot, NULL, it);
}


/* The media workers' side of the scheduler (media_workers.h). */
static int
engine_media_prepare(void *ctx, uint32_t slot, clef_decoder_lane *lane,
    clef_sched_item *it)
{
    engine          *e = ctx;
    clef_slot       *s = clef_queue_slot_w(e->q, slot);
    clef_error       err;
    clef_wake_note   note;
    int64_t          now = clef_now_ns();

    if (clef_queue_is_cancelled(e->q, slot)) {
        (void) clef_queue_complete(e->q, slot);      /* frees it */
        return -1;
    }
    if (s->deadline_ns != 0 && now >= s->deadline_ns) {
        clef_error_set(&err, 504, "timeout_error", NULL, "the request waited "
                       "%lld ms for the engine to prepare its media; the "
                       "limit is %lld ms",
                       (long long) ((now - s->submit_ns) / 1000000),
                       (long long) ((s->deadline_ns - s->submit_ns)
                                    / 1000000));
        s->status = 504;
        *clef_queue_error_w(e->q, slot) = err;
        note = clef_queue_complete(e->q, slot);
        engine_wake(e, &note, 1);
        return -1;
    }
    return engine_encode(e, slot, lane, it);
}


static void
engine_media_ready(void *ctx, const clef_sched_item *it)
{
    engine  *e = ctx;

    pthread_mutex_lock(&e->mu);
    clef_sched_ready_push(&e->sched, it);
    pthread_cond_signal(&e->cv);
    pthread_mutex_unlock(&e->mu);
    clef_queue_progress(e->q);
}


static int
engine_media_backlogged(void *ctx)
{
    engine  *e = ctx;
    int      full;

    pthread_mutex_lock(&e->mu);
    full = e->sched.ready_tokens
           >= ENGINE_READY_BATCHES * e->n_replicas
              * e->sched.max_batch_tokens;
    pthread_mutex_unlock(&e->mu);
    return full;
}


static void
engine_decoder_log(void *ctx, int level, const char *line)
{
    engine  *e = ctx;

    elog(e->conf, level, "%s", line);
}


static void
engine_decoder_started(void *ctx, int lane, int restart)
{
    engine  *e = ctx;

    atomic_fetch_add(&e->q->h->stats.decoder_starts, 1);
    if (restart) {
        atomic_fetch_add(&e->q->h->stats.decoder_restarts, 1);
    }
}


static void
engine_decoder_died(void *ctx, int lane, const char *cause)
{
    engine  *e = ctx;
    char     line[240];

    snprintf(line, sizeof(line), "decoder %d: %s", lane, cause);
    clef_queue_decoder_died(e->q, line);
}


static int
engine_media_start(engine *e, clef_error *err)
{
    clef_media_workers_conf  c;
    long                     ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int                      n;

    n = e->conf->decoders > 0
        ? e->conf->decoders
        : clef_media_workers_default(ncpu > 0 ? (int) ncpu : 1);
    memset(&c, 0, sizeof(c));
    c.prepare = engine_media_prepare;
    c.ready = engine_media_ready;
    c.backlogged = engine_media_backlogged;
    c.ctx = e;
    c.events.log = engine_decoder_log;
    c.events.started = engine_decoder_started;
    c.events.died = engine_decoder_died;
    c.events.ctx = e;
    e->media = clef_media_workers_start(n, &c, err);
    if (e->media == NULL) {
        return -1;
    }
    atomic_store(&e->q->h->n_decoders, (uint32_t) n);
    elog(e->conf, CLEF_LOG_NOTICE, "clef engine %d: %d media workers, each "
         "with a decode process of its own", (int) getpid(), n);
    return 0;
}


static void
engine_drop(void *ctx, clef_sched_item *it)
{
    clef_record  *rec = it->prep;

    (void) ctx;
    if (rec != NULL) {
        clef_record_free(rec);
        free(rec);
        it->prep = NULL;
    }
}


/* Chunked prefill: a record in parts whose first part is in b gets its
 * state on the replica's backend; a record it cannot be opened for is
 * answered with the error and leaves the batch.  Returns b's records. */
static int
engine_open_part(engine *e, engine_replica *rep, clef_sched_batch *b)
{
    clef_sched_item  *it;
    clef_error        err;
    int               i, kept = 0;

    for (i = 0; i < b->n; i++) {
        it = &b->items[i];
        if (it->parted && it->offset == 0 && rep->seq == NULL) {
            clef_error_clear(&err);
            if (e->ops->seq_open(rep->backend, it->prep, &rep->seq, &err)
                != 0)
            {
                rep->seq = NULL;
                b->tokens -= it->len;
                engine_answer_error(e, it->slot, &err);
                b->part_active = 0;
                engine_drop(e, it);
                continue;
            }
        }
        b->items[kept++] = *it;
    }
    b->n = kept;
    return kept;
}


/* Runs one batch on a replica and answers its records (logits or the
 * forward's error); a record in parts is answered with its last part.
 * Returns 0 when the forward ran, -1 when its records were answered with
 * an error. */
static int
engine_run_batch(engine *e, engine_replica *rep, clef_sched_batch *b)
{
    const clef_record  **records = NULL;
    clef_batch_part     *parts = NULL;
    int32_t             *cu = NULL;
    float               *logits = NULL;
    clef_wake_note      *notes = NULL;
    clef_batch           batch = { 0 };
    clef_error           err;
    int                  i, n, n_notes = 0, off, rc, total, parted = 0;
    int64_t              t0, ns;
    clef_slot           *s;
    clef_record         *rec;

    n = clef_sched_prune(&e->sched, b, clef_now_ns());
    for (i = 0; i < n; i++) {
        parted |= b->items[i].parted;
    }
    if (parted) {
        n = engine_open_part(e, rep, b);
    }
    if (n <= 0) {
        return 0;
    }
    for (i = 0; i < n; i++) {
        clef_queue_mark_running(e->q, b->items[i].slot);
    }

    clef_error_clear(&err);
    records = malloc((size_t) n * sizeof(*records));
    cu = malloc((size_t) (n + 1) * sizeof(*cu));
    notes = malloc((size_t) n * sizeof(*notes));
    parts = parted ? malloc((size_t) n * sizeof(*parts)) : NULL;
    if (records == NULL || cu == NULL || notes == NULL
        || (parted && parts == NULL))
    {
        clef_error_fail(&err, CLEF_E_NO_MEMORY, "out of memory");
        rc = -1;
        goto answer;
    }
    for (i = 0; i < n; i++) {
        records[i] = b->items[i].prep;
        if (parts != NULL) {
            parts[i].seq = b->items[i].parted ? rep->seq : NULL;
            parts[i].offset = b->items[i].offset;
            parts[i].len = b->items[i].len;
            parts[i].last = b->items[i].last;
        }
    }
    clef_batch_init_parts(&batch, records, parts, n, cu);
    if (clef_batch_set_media(&batch, &err) != 0) {
        rc = -1;
        goto answer;
    }
    total = clef_batch_options(&batch);
    logits = malloc((size_t) (total > 0 ? total : 1) * sizeof(float));
    if (logits == NULL) {
        clef_error_fail(&err, CLEF_E_NO_MEMORY, "out of memory");
        rc = -1;
        goto answer;
    }

    t0 = clef_now_ns();
    rc = e->ops->forward(rep->backend, &batch, logits, &err);
    ns = clef_now_ns() - t0;
    if (rc != 0) {
        elog(e->conf, CLEF_LOG_ERR, "clef engine: forward of %d records "
             "on replica %d failed: %s", n, rep->index, err.message);
        if (err.code == CLEF_E_DEVICE_FAULT) {
            /* its records are answered below; the replica is reopened by
             * its executor before it takes another batch */
            rep->faulted = 1;
            clef_error_set(&err, 503, "engine_unavailable", NULL,
                           "the device of replica %d faulted and is being "
                           "reset; retry", rep->index);
        }
    } else {
        clef_stats_batch(&e->q->h->stats, (uint32_t) n,
                         (uint64_t) clef_batch_tokens(&batch), (uint64_t) ns);
        if (rep->index < CLEF_STATS_REPLICAS) {
            atomic_fetch_add(&e->q->h->stats.replica_batches[rep->index], 1);
            atomic_fetch_add(&e->q->h->stats.replica_busy_ns[rep->index],
                             (uint64_t) ns);
        }
    }

answer:
    off = 0;
    for (i = 0; i < n; i++) {
        uint32_t slot = b->items[i].slot;

        rec = b->items[i].prep;
        s = clef_queue_slot_w(e->q, slot);
        if (rc == 0 && !b->items[i].last) {
            /* a part: the record is answered with its last one */
            continue;
        }
        if (rc == 0) {
            memcpy(clef_queue_logits_w(e->q, slot), logits + off,
                   (size_t) rec->n_options * sizeof(float));
            s->status = 0;
            s->n_tokens = (int32_t) rec->ids.n;
            s->state_tokens = (int32_t) rec->state_tokens;
            s->state_kept = (int32_t) rec->state_kept;
            s->batch_records = (uint32_t) n;
            off += rec->n_options;
        } else {
            *clef_queue_error_w(e->q, slot) = err;
            s->status = err.status >= 400 ? err.status : 500;
        }

        if (notes != NULL) {
            notes[n_notes++] = clef_queue_complete(e->q, slot);
        } else {
            clef_wake_note note = clef_queue_complete(e->q, slot);

            engine_wake(e, &note, 1);
        }
    }
    engine_wake(e, notes, n_notes);

    clef_batch_free_media(&batch);
    free(notes);
    free(logits);
    free(parts);
    free(cu);
    free(records);
    return rc != 0 ? -1 : 0;
}


static void
replica_set_up(engine *e, int r, int up)
{
    uint64_t  bit = (uint64_t) 1 << r;

    if (up) {
        atomic_fetch_or(&e->q->h->replicas_up, bit);
    } else {
        atomic_fetch_and(&e->q->h->replicas_up, ~bit);
    }
}


/* A replica whose device faulted: close its backend (which resets the
 * device) and open it again, alone; the other replicas keep serving.  -1
 * when it cannot come back: its executor stops, the others go on. */
static int
engine_replica_reopen(engine *e, engine_replica *rep)
{
    clef_error  err;

    replica_set_up(e, rep->index, 0);
    if (rep->index < CLEF_STATS_REPLICAS) {
        atomic_fetch_add(&e->q->h->stats.replica_faults[rep->index], 1);
    }
    e->ops->close(rep->backend);
    rep->backend = NULL;
    clef_error_clear(&err);
    if (e->ops->open(e->model, &e->replica_opts[rep->index], &rep->backend,
                     &err) != 0)
    {
        rep->backend = NULL;
        elog(e->conf, CLEF_LOG_ERR, "clef engine %d: replica %d cannot be "
             "reopened after its fault: %s; it stays out", (int) getpid(),
             rep->index, err.message);
        return -1;
    }
    rep->faulted = 0;
    replica_set_up(e, rep->index, 1);
    elog(e->conf, CLEF_LOG_NOTICE, "clef engine %d: replica %d reopened "
         "after a device fault", (int) getpid(), rep->index);
    return 0;
}


/*
 * An executor, one per replica: whenever it is idle and prepared records
 * wait, it takes the next batch from the ready FIFO (scheduler.h) and runs
 * it.  It never waits for a record being prepared.  A record it runs in
 * parts keeps it busy (its next part is work without the FIFO) until the
 * record's last part ran or it was dropped; the state of the record is
 * then closed.
 */
static void *
engine_exec_main(void *arg)
{
    engine_replica  *rep = arg;
    engine          *e = rep->e;
    int              ran;

    pthread_mutex_lock(&e->mu);
    for ( ;; ) {
        while (e->sched.ready_n == 0 && !clef_sched_has_part(&rep->running)
               && !e->stop)
        {
            pthread_cond_wait(&e->cv, &e->mu);
        }
        if (e->sched.ready_n == 0 && !clef_sched_has_part(&rep->running)) {
            break;
        }
        /* clef_engine chunk_tokens applies without a restart, where the
         * backend can run a record in parts (backend.h) */
        clef_sched_set_chunk(&e->sched, e->ops->seq_open != NULL
                             ? atomic_load(&e->q->h->chunk_tokens) : 0);
        clef_sched_next_batch(&e->sched, &rep->running);
        if (!rep->busy) {
            rep->busy = 1;
            e->busy++;
        }
        pthread_mutex_unlock(&e->mu);

        /* the preparing thread may have been waiting for room */
        clef_queue_wake_engine(e->q);
        clef_queue_progress(e->q);

        ran = engine_run_batch(e, rep, &rep->running) == 0;
        clef_sched_batch_end(&e->sched, &rep->running, ran);
        if (!clef_sched_has_part(&rep->running) && rep->seq != NULL) {
            e->ops->seq_close(rep->backend, rep->seq);
            rep->seq = NULL;
        }
        clef_queue_progress(e->q);
        if (rep->faulted && engine_replica_reopen(e, rep) != 0) {
            pthread_mutex_lock(&e->mu);
            rep->busy = 0;
            e->busy--;
            break;
        }

        pthread_mutex_lock(&e->mu);
        if (!clef_sched_has_part(&rep->running)) {
            rep->busy = 0;
            e->busy--;
        }
        /* a draining preparing thread waits for the executors to be idle */
        clef_queue_wake_engine(e->q);
    }
    pthread_mutex_unlock(&e->mu);
    return NULL;
}


/* The backends' per-layer heartbeat: progress for the keeper's watchdog. */
static void
engine_layer_done(void *ctx)
{
    clef_queue_progress(ctx);
}


static int
engine_load(engine *e, clef_error *err)
{
    const clef_engine_conf  *conf = e->conf;
    const clef_text_config  *tc;
    clef_backend_opts        bo;
    int64_t                  t0 = clef_now_ns();
    int                      r, tp;

    elog(conf, CLEF_LOG_NOTICE, "clef engine %d: loading model \"%s\" "
         "(backend %s, generation %u)", (int) getpid(), conf->model_path,
         conf->backend, conf->gen);
    clef_queue_set_message(e->q, "loading model %s", conf->model_path);

    e->model = clef_model_open_files(conf->model_path, conf->model_mmproj, 0,
                                     err);
    if (e->model == NULL) {
        return -1;
    }
    tc = clef_model_text_config(e->model);
    elog(conf, CLEF_LOG_NOTICE, "clef engine %d: model opened in %.2f s "
         "(%d layers, hidden %d, vocab %d); opening the %s backend",
         (int) getpid(), seconds_since(t0), tc->num_hidden_layers,
         tc->hidden_size, tc->vocab_size, conf->backend);
    clef_queue_set_message(e->q, "opening the %s backend", conf->backend);

    e->tk = clef_model_tokenizer(e->model);
    e->ops = clef_backend_find(conf->backend, err);
    if (e->ops == NULL) {
        return -1;
    }

    /* one replica per tensor-parallel group of the devices (the CPU, or a
     * backend given no devices, is one replica) */
    tp = conf->tp > 0 ? conf->tp : 1;
    e->n_replicas = conf->n_devices >= tp ? conf->n_devices / tp : 1;
    for (r = 0; r < e->n_replicas; r++) {
        memset(&bo, 0, sizeof(bo));
        bo.threads = conf->threads;
        bo.precision = conf->precision;
        bo.tp = tp;
        bo.n_devices = conf->n_devices > 0 ? tp : 0;
        bo.devices = conf->n_devices > 0 ? conf->devices + r * tp : NULL;
        bo.device = bo.devices != NULL ? bo.devices[0] : conf->device;
        /* the memory plan's batch: the largest the scheduler forms */
        bo.gpu_memory = conf->gpu_memory;
        bo.batch_tokens = conf->max_batch_tokens;
        bo.batch_records = conf->max_batch_records;
        bo.progress = engine_layer_done;
        bo.progress_ctx = e->q;
        e->replicas[r].e = e;
        e->replicas[r].index = r;
        e->replica_opts[r] = bo;
        if (e->ops->open(e->model, &bo, &e->replicas[r].backend, err) != 0) {
            e->replicas[r].backend = NULL;
            return -1;
        }
        elog(conf, CLEF_LOG_NOTICE, "clef engine %d: replica %d: %s",
             (int) getpid(), r, e->ops->describe != NULL
             ? e->ops->describe(e->replicas[r].backend) : conf->backend);
    }
    atomic_store(&e->q->h->n_replicas, (uint32_t) e->n_replicas);
    atomic_store(&e->q->h->replicas_up,
                 e->n_replicas >= 64 ? ~(uint64_t) 0
                                     : ((uint64_t) 1 << e->n_replicas) - 1);
    atomic_fetch_add(&e->q->h->stats.weight_loads, 1);
    elog(conf, CLEF_LOG_NOTICE, "clef engine %d: ready in %.2f s",
         (int) getpid(), seconds_since(t0));
    clef_queue_set_message(e->q, "ready: %s", conf->model_path);
    return 0;
}


static void
engine_unload(engine *e)
{
    int  r;

    for (r = 0; r < e->n_replicas; r++) {
        if (e->replicas[r].backend != NULL) {
            e->ops->close(e->replicas[r].backend);
            e->replicas[r].backend = NULL;
        }
    }
    if (e->model != NULL) {
        clef_model_close(e->model);
        e->model = NULL;
    }
}


static void
engine_wait_predecessor(engine *e)
{
    clef_queue_hdr  *h = e->q->h;
    pid_t            pred = e->conf->predecessor;
    pid_t            cur;
    int64_t          t0 = clef_now_ns();
    int              logged = 0;

    for ( ;; ) {
        cur = atomic_load(&h->engine_pid);
        if (!(clef_pid_alive(pred) && pred != getpid())
            && !(cur != getpid() && clef_pid_alive(cur)
                 && atomic_load(&h->gen) < e->conf->gen))
        {
            break;
        }
        if (!logged) {
            elog(e->conf, CLEF_LOG_NOTICE, "clef engine %d: waiting for engine "
                 "%d of the previous configuration to drain", (int) getpid(),
                 (int) (clef_pid_alive(pred) ? pred : cur));
            logged = 1;
        }
        if (engine_drain) {
            return;
        }
        usleep(20000);
    }
    if (logged) {
        elog(e->conf, CLEF_LOG_NOTICE, "clef engine %d: previous engine gone "
             "after %.2f s", (int) getpid(), seconds_since(t0));
    }
}


static void
engine_claim(engine *e, int restart)
{
    clef_queue_hdr  *h = e->q->h;

    atomic_store(&h->engine_pid, getpid());
    atomic_store(&h->gen, e->conf->gen);
    atomic_fetch_add(&h->epoch, 1);
    atomic_store(&h->state, restart ? CLEF_ENGINE_RESTARTING
                                    : CLEF_ENGINE_LOADING);
    atomic_fetch_add(&h->stats.engine_starts, 1);
}


static int
engine_owner(engine *e)
{
    return atomic_load(&e->q->h->engine_pid) == getpid();
}


/*
 * The preparing thread: takes records from the shared queue one at a time
 * while the ready FIFO has room, prepares them and hands them to the
 * executor.  Progress rests on the invariants written in scheduler.h.
 */
static void
engine_loop(engine *e)
{
    clef_sched_item  it;
    uint32_t         seen;
    int              progressed, full, idle, rc, draining = 0;
    int64_t          mbt;

    for ( ;; ) {
        seen = clef_queue_futex(e->q);

        if (engine_drain && !draining) {
            draining = 1;
            if (engine_owner(e)) {
                atomic_store(&e->q->h->state, CLEF_ENGINE_DRAINING);
            }
            elog(e->conf, CLEF_LOG_NOTICE, "clef engine %d: draining",
                 (int) getpid());
        }

        pthread_mutex_lock(&e->mu);
        /* clef_engine max_batch_tokens applies without a restart */
        mbt = atomic_load(&e->q->h->max_batch_tokens);
        if (mbt > 0) {
            e->sched.max_batch_tokens = mbt;
        }
        full = clef_sched_ready_full(&e->sched);
        pthread_mutex_unlock(&e->mu);

        progressed = 0;
        rc = CLEF_SCHED_EMPTY;
        if (!full) {
            /* the slow part, outside the lock: the executor keeps taking
             * what is ready meanwhile */
            rc = clef_sched_take(&e->sched, &it);
            progressed = rc == CLEF_SCHED_PREPARED
                         || rc == CLEF_SCHED_ANSWERED
                         || rc == CLEF_SCHED_DEFERRED;
        }

        pthread_mutex_lock(&e->mu);
        if (rc == CLEF_SCHED_PREPARED) {
            clef_sched_ready_push(&e->sched, &it);
            pthread_cond_signal(&e->cv);
        }
        idle = e->busy == 0 && e->sched.ready_n == 0;
        pthread_mutex_unlock(&e->mu);
        idle = idle && clef_media_workers_pending(e->media) == 0;

        if (progressed) {
            clef_queue_progress(e->q);
            continue;
        }
        if (draining && idle) {
            /* nothing of ours queued, ready or running */
            break;
        }
        /* woken by a submit, a batch taken or finished, or a signal */
        clef_queue_engine_wait(e->q, seen, ENGINE_IDLE_MS);
    }
}


int
clef_engine_run(clef_queue *q, const clef_engine_conf *conf, int restart)
{
    engine            e;
    clef_error        err;
    struct sigaction  sa;
    sigset_t          all, old;
    int               rc = CLEF_ENGINE_EXIT_OK, n, r;
    clef_wake_note    wake[256];

    memset(&e, 0, sizeof(e));
    e.q = q;
    e.conf = conf;
    e.wake_fd = clef_wake_sender();

    engine_signal_q = q;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = engine_on_term;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGQUIT, &sa, NULL);
    sa.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);

    engine_wait_predecessor(&e);
    if (engine_drain) {
        close(e.wake_fd);
        return CLEF_ENGINE_EXIT_OK;
    }
    engine_claim(&e, restart);

    clef_error_clear(&err);
    if (engine_load(&e, &err) != 0) {
        elog(conf, CLEF_LOG_ERR, "clef engine %d: cannot load \"%s\": %s",
             (int) getpid(), conf->model_path, err.message);
        clef_queue_set_message(q, "cannot load the model: %s", err.message);
        atomic_store(&q->h->state, CLEF_ENGINE_FAILED);
        n = 0;
        clef_queue_fail_all(q, conf->gen, 503, "engine_unavailable",
                            "the model could not be loaded", wake, &n,
                            (int) (sizeof(wake) / sizeof(wake[0])));
        engine_wake(&e, wake, n);
        engine_unload(&e);
        close(e.wake_fd);
        return CLEF_ENGINE_EXIT_FATAL;
    }

    e.sched.q = q;
    e.sched.gen = conf->gen;
    e.sched.max_batch_tokens = conf->max_batch_tokens;
    e.sched.max_records = conf->max_batch_records;
    e.sched.chunk_tokens = e.ops->seq_open != NULL ? conf->chunk_tokens : 0;
    e.sched.prepare = engine_prepare;
    e.sched.drop = engine_drop;
    e.sched.wake = engine_wake;
    e.sched.ctx = &e;

    /* a batch ready ahead for every replica */
    e.sched.ready_batches = e.n_replicas;
    for (r = 0; r < e.n_replicas; r++) {
        if (clef_sched_batch_init(&e.replicas[r].running,
                                  conf->max_batch_records) != 0)
        {
            break;
        }
    }
    /* media workers push prepared records whenever their media are
     * ready: room for every slot of the queue */
    if (r < e.n_replicas
        || clef_sched_init(&e.sched, (int) q->h->nslots
                                     > conf->max_batch_records * e.n_replicas
                                     ? (int) q->h->nslots
                                     : conf->max_batch_records * e.n_replicas)
           != 0)
    {
        elog(conf, CLEF_LOG_ERR, "clef engine: out of memory");
        rc = CLEF_ENGINE_EXIT_FATAL;
        goto done;
    }
    pthread_mutex_init(&e.mu, NULL);
    pthread_cond_init(&e.cv, NULL);

    /* the executors must never take a signal meant for the main thread */
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    for (r = 0; r < e.n_replicas; r++) {
        n = pthread_create(&e.replicas[r].thread, NULL, engine_exec_main,
                           &e.replicas[r]);
        if (n != 0) {
            break;
        }
        e.replicas[r].started = 1;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);

    if (r == e.n_replicas && engine_media_start(&e, &err) != 0) {
        elog(conf, CLEF_LOG_ERR, "clef engine: %s", err.message);
        rc = CLEF_ENGINE_EXIT_FATAL;
    } else if (r == e.n_replicas) {
        if (engine_owner(&e)) {
            atomic_store(&q->h->state, CLEF_ENGINE_READY);
        }
        clef_queue_wake_engine(q);
        engine_loop(&e);
    } else {
        elog(conf, CLEF_LOG_ERR, "clef engine: pthread_create failed");
        rc = CLEF_ENGINE_EXIT_FATAL;
    }
    /* drained: nothing is handed over any more */
    clef_media_workers_stop(e.media);
    e.media = NULL;

    pthread_mutex_lock(&e.mu);
    e.stop = 1;
    pthread_cond_broadcast(&e.cv);
    pthread_mutex_unlock(&e.mu);
    for (r = 0; r < e.n_replicas; r++) {
        if (e.replicas[r].started) {
            pthread_join(e.replicas[r].thread, NULL);
        }
    }
    elog(conf, CLEF_LOG_NOTICE, "clef engine %d: drained, exiting",
         (int) getpid());

done:
    clef_sched_fail_ready(&e.sched, 503, "the inference engine stopped");
    clef_sched_free(&e.sched);
    for (r = 0; r < e.n_replicas; r++) {
        clef_sched_batch_free(&e.replicas[r].running);
    }
    engine_unload(&e);
    close(e.wake_fd);
    return rc;
}
