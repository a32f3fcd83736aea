/*
 * The zone as its clients see it (see clef.h): the master's setup, a
 * worker's records, and the status snapshot.
 */
#include "clef.h"

#include <string.h>

#include "base/pid.h"

/* how often a worker looks at the engine's and keeper's processes */
#define CLIENT_PID_CHECK_NS  (250 * 1000000LL)


/* ---- the zone ------------------------------------------------------------ */

int
clef_zone_init(clef_queue *q, void *mem, size_t size, uint32_t nslots,
    uint64_t zone_id, clef_error *err)
{
    return clef_queue_init(q, mem, size, nslots, zone_id, err);
}


int
clef_zone_attach(clef_queue *q, void *mem)
{
    return clef_queue_attach(q, mem);
}


uint32_t
clef_zone_slots(size_t size)
{
    return clef_queue_default_slots(size);
}


void
clef_zone_configure(clef_queue *q, int64_t max_batch_tokens,
    int64_t chunk_tokens, int64_t watchdog_ms)
{
    atomic_store(&q->h->max_batch_tokens, max_batch_tokens);
    atomic_store(&q->h->chunk_tokens, chunk_tokens);
    atomic_store(&q->h->watchdog_ms, watchdog_ms);
}


uint32_t
clef_zone_next_gen(clef_queue *q)
{
    clef_queue_hdr  *h = q->h;
    uint32_t         gen;

    gen = atomic_load(&h->want_gen) + 1;
    if (atomic_load(&h->gen) >= gen) {
        gen = atomic_load(&h->gen) + 1;
    }
    atomic_store(&h->want_gen, gen);
    return gen;
}


pid_t
clef_zone_engine_pid(const clef_queue *q)
{
    return atomic_load(&q->h->engine_pid);
}


pid_t
clef_zone_keeper_pid(const clef_queue *q)
{
    return atomic_load(&q->h->keeper_pid);
}


uint64_t
clef_zone_id(const clef_queue *q)
{
    return q->h->zone_id;
}


size_t
clef_zone_data_size(const clef_queue *q)
{
    return (size_t) q->h->data_size;
}


int
clef_zone_same(const clef_queue *a, const clef_queue *b)
{
    return a->h == b->h;
}


/* ---- a worker's records -------------------------------------------------- */

/* Whether the processes the zone names are gone: asked at most every
 * CLIENT_PID_CHECK_NS in this process, since it costs two syscalls. */
static int
engine_gone(clef_queue_hdr *h, int *keeper_gone)
{
    static int64_t  checked_ns;
    static pid_t    checked_engine, checked_keeper;
    static int      engine_dead, keeper_dead;
    pid_t           engine = atomic_load(&h->engine_pid);
    pid_t           keeper = atomic_load(&h->keeper_pid);
    int64_t         now = clef_now_ns();

    if (engine != checked_engine || keeper != checked_keeper
        || now - checked_ns >= CLIENT_PID_CHECK_NS)
    {
        engine_dead = engine > 0 && !clef_pid_alive(engine);
        keeper_dead = keeper > 0 && !clef_pid_alive(keeper);
        checked_engine = engine;
        checked_keeper = keeper;
        checked_ns = now;
    }
    *keeper_gone = keeper_dead;
    return engine_dead;
}


const char *
clef_refusal(clef_queue *q, uint32_t want)
{
    clef_queue_hdr  *h = q->h;
    uint32_t         st = atomic_load(&h->state);
    uint32_t         gen = atomic_load(&h->gen);
    int              keeper_gone;

    /* stale ownership: the zone names an engine that is gone (the keeper
     * notices its engine's death within milliseconds; a dead keeper takes
     * its engine with it and only a reload starts a new one) */
    if ((st == CLEF_ENGINE_LOADING || st == CLEF_ENGINE_READY)
        && gen == want && engine_gone(h, &keeper_gone))
    {
        if (keeper_gone) {
            return "the inference engine and its keeper are gone; "
                   "nginx -s reload starts them again";
        }
        return "the inference engine is restarting; retry";
    }

    if (gen > want) {
        return "the model configuration was replaced; retry";
    }
    if (gen < want) {
        /* the engine of this configuration has not claimed the zone yet */
        return NULL;
    }
    switch (st) {
    case CLEF_ENGINE_RESTARTING:
        return "the inference engine is restarting; retry";
    case CLEF_ENGINE_STALLED:
        return "the inference engine stopped making progress and is "
               "restarting; retry";
    case CLEF_ENGINE_FAILED:
        return "the inference engine could not load the model";
    case CLEF_ENGINE_STOPPED:
        return "the inference engine is stopped";
    default:
        return NULL;
    }
}


uint32_t
clef_retry_after_ms(clef_queue *q)
{
    clef_queue_stats  *st = &q->h->stats;
    uint64_t           busy = atomic_load(&st->busy_ns);
    uint64_t           records = atomic_load(&st->batch_records);
    double             ms;

    if (busy == 0 || records == 0) {
        return 1000;
    }
    ms = (double) clef_queue_depth(q) * ((double) busy / 1e6)
         / (double) records;
    if (ms < 100) {
        ms = 100;
    }
    if (ms > 60000) {
        ms = 60000;
    }
    return (uint32_t) ms;
}


int
clef_submit(clef_queue *q, const clef_submission *sub, clef_ticket *t)
{
    return clef_queue_submit(q, sub, &t->slot, &t->seq);
}


int
clef_poll(const clef_queue *q, clef_ticket t)
{
    switch (clef_queue_done(q, t.slot, t.seq)) {
    case 1:
        return CLEF_RECORD_DONE;
    case 0:
        return atomic_load(&q->slots[t.slot].running) ? CLEF_RECORD_RUNNING
                                                      : CLEF_RECORD_WAITING;
    default:
        return CLEF_RECORD_LOST;
    }
}


int
clef_result_read(const clef_queue *q, clef_ticket t, clef_result *r)
{
    const clef_slot  *s;

    if (clef_queue_done(q, t.slot, t.seq) != 1) {
        return -1;
    }
    s = clef_queue_slot(q, t.slot);
    memset(r, 0, sizeof(*r));
    r->status = s->status;
    r->n_tokens = s->n_tokens;
    r->state_tokens = s->state_tokens;
    r->state_kept = s->state_kept;
    r->batch_records = s->batch_records;
    r->queue_ns = s->taken_ns > 0 ? s->taken_ns - s->submit_ns : -1;
    r->engine_ns = s->taken_ns > 0 ? s->done_ns - s->taken_ns : -1;
    if (s->status == 0) {
        r->logits = clef_queue_logits(q, t.slot);
    } else {
        r->error = *clef_queue_error(q, t.slot);
        r->error.status = s->status;
    }
    return 0;
}


void
clef_release(clef_queue *q, clef_ticket t)
{
    clef_queue_release(q, t.slot, t.seq);
}


int
clef_cancel(clef_queue *q, clef_ticket t)
{
    return clef_queue_cancel(q, t.slot, t.seq);
}


void
clef_count_response(clef_queue *q, int status, int64_t latency_ns)
{
    clef_stats_response(&q->h->stats, status, latency_ns);
}


void
clef_count_answer(clef_queue *q, const clef_result *r)
{
    if (r->queue_ns >= 0 && r->engine_ns >= 0) {
        atomic_fetch_add(&q->h->stats.queue_wait_us,
                         (uint64_t) (r->queue_ns / 1000));
        atomic_fetch_add(&q->h->stats.engine_us,
                         (uint64_t) (r->engine_ns / 1000));
    }
}


uint64_t
clef_wake_lost(const clef_queue *q)
{
    return atomic_load(&q->h->wake_lost);
}


/* ---- status -------------------------------------------------------------- */

void
clef_status_read(clef_queue *q, clef_status *st)
{
    clef_queue_hdr          *h = q->h;
    const _Atomic uint64_t  *src = (const _Atomic uint64_t *) &h->stats;
    _Atomic uint64_t        *dst = (_Atomic uint64_t *) &st->stats;
    size_t                   i;

    memset(st, 0, sizeof(*st));
    st->state = atomic_load(&h->state);
    st->engine_pid = atomic_load(&h->engine_pid);
    st->keeper_pid = atomic_load(&h->keeper_pid);
    st->gen = atomic_load(&h->gen);
    st->epoch = atomic_load(&h->epoch);
    st->stalled_ms = atomic_load(&h->stalled_ms);
    st->progress = atomic_load(&h->progress);
    st->watchdog_ms = atomic_load(&h->watchdog_ms);
    st->wake_lost = atomic_load(&h->wake_lost);
    st->n_replicas = atomic_load(&h->n_replicas);
    st->replicas_up = atomic_load(&h->replicas_up);
    st->n_decoders = atomic_load(&h->n_decoders);
    st->decoder_death_ms = atomic_load(&h->decoder_death_ms);
    clef_queue_get_decoder_cause(q, st->decoder_cause,
                                 sizeof(st->decoder_cause));
    clef_queue_get_usage(q, &st->usage);
    clef_queue_get_message(q, st->message, sizeof(st->message));

    /* every counter is an _Atomic uint64_t (stats.h): copy one by one */
    for (i = 0; i < sizeof(h->stats) / sizeof(*src); i++) {
        atomic_store_explicit(&dst[i], atomic_load_explicit(&src[i],
                              memory_order_relaxed), memory_order_relaxed);
    }
}


void
clef_status_brief_read(clef_queue *q, clef_status_brief *b)
{
    b->state = atomic_load(&q->h->state);
    b->queued = clef_queue_depth(q);
}
