/*
 * Token-budget batching over the shared queue and the ready FIFO (see
 * scheduler.h).
 */
#include "serve/scheduler.h"

#include <stdlib.h>
#include <string.h>

#define CLEF_SCHED_MAX_WAKE  64


int
clef_sched_batch_init(clef_sched_batch *b, int cap)
{
    memset(b, 0, sizeof(*b));
    b->items = calloc((size_t) cap, sizeof(*b->items));
    if (b->items == NULL) {
        return -1;
    }
    b->cap = cap;
    return 0;
}


void
clef_sched_batch_free(clef_sched_batch *b)
{
    free(b->items);
    memset(b, 0, sizeof(*b));
}


int
clef_sched_fits(const clef_sched_batch *b, int64_t tokens,
    int64_t max_batch_tokens, int max_records)
{
    if (b->n == 0) {
        /* a record longer than the budget still runs, alone */
        return 1;
    }
    if (b->n >= max_records || b->n >= b->cap) {
        return 0;
    }
    return b->tokens + tokens <= max_batch_tokens;
}


/* Notes a completed record's owner, sending the notes when full. */
static void
note_done(clef_sched *s, clef_wake_note *wake, int *n, clef_wake_note note)
{
    if (note.pid <= 0) {
        return;
    }
    wake[(*n)++] = note;
    if (*n == CLEF_SCHED_MAX_WAKE) {
        s->wake(s->ctx, wake, *n);
        *n = 0;
    }
}


/* ---- the ready FIFO ------------------------------------------------------ */

int
clef_sched_init(clef_sched *s, int cap)
{
    if (cap < s->max_records) {
        cap = s->max_records;
    }
    s->ready = calloc((size_t) cap, sizeof(*s->ready));
    if (s->ready == NULL) {
        return -1;
    }
    s->ready_cap = cap;
    s->ready_head = 0;
    s->ready_n = 0;
    s->ready_tokens = 0;
    return 0;
}


static clef_sched_item *
ready_at(clef_sched *s, int i)
{
    return &s->ready[(s->ready_head + i) % s->ready_cap];
}


static void
ready_pop(clef_sched *s, clef_sched_item *it)
{
    *it = *ready_at(s, 0);
    s->ready_head = (s->ready_head + 1) % s->ready_cap;
    s->ready_n--;
    s->ready_tokens -= it->tokens;
}


void
clef_sched_free(clef_sched *s)
{
    clef_sched_item  it;

    while (s->ready_n > 0) {
        ready_pop(s, &it);
        s->drop(s->ctx, &it);
    }
    free(s->ready);
    s->ready = NULL;
    s->ready_cap = 0;
}


int
clef_sched_ready_full(const clef_sched *s)
{
    int  k;

    if (s->ready_n == 0) {
        /* invariant 2 of scheduler.h */
        return 0;
    }
    k = s->ready_batches > 0 ? s->ready_batches : 1;
    return s->ready_n >= s->ready_cap || s->ready_n >= k * s->max_records
           || s->ready_tokens >= k * s->max_batch_tokens;
}


int
clef_sched_take(clef_sched *s, clef_sched_item *it)
{
    clef_wake_note  wake[CLEF_SCHED_MAX_WAKE];
    int             n_wake = 0, rc;
    uint32_t  slot;

    rc = clef_queue_take(s->q, s->gen, &slot, wake, &n_wake,
                         CLEF_SCHED_MAX_WAKE);
    if (n_wake) {
        /* records of an older configuration, answered 503 on the way */
        s->wake(s->ctx, wake, n_wake);
    }
    if (rc == CLEF_TAKE_OTHER_GEN) {
        return CLEF_SCHED_OTHER_GEN;
    }
    if (rc != CLEF_TAKE_OK) {
        return CLEF_SCHED_EMPTY;
    }
    memset(it, 0, sizeof(*it));
    it->slot = slot;
    rc = s->prepare(s->ctx, slot, it);
    return rc < 0 ? CLEF_SCHED_ANSWERED
           : rc > 0 ? CLEF_SCHED_DEFERRED : CLEF_SCHED_PREPARED;
}


void
clef_sched_ready_push(clef_sched *s, const clef_sched_item *it)
{
    *ready_at(s, s->ready_n) = *it;
    s->ready_n++;
    s->ready_tokens += it->tokens;
}


static void
batch_push(clef_sched_batch *b, const clef_sched_item *it)
{
    b->items[b->n++] = *it;
    b->tokens += it->tokens;
}


int
clef_sched_next_batch(clef_sched *s, clef_sched_batch *b)
{
    clef_sched_item  it;
    int              moved = 0;

    while (s->ready_n > 0
           && clef_sched_fits(b, ready_at(s, 0)->tokens, s->max_batch_tokens,
                              s->max_records))
    {
        ready_pop(s, &it);
        batch_push(b, &it);
        moved++;
    }
    return moved;
}


int
clef_sched_prune(clef_sched *s, clef_sched_batch *b, int64_t now_ns)
{
    clef_wake_note   wake[CLEF_SCHED_MAX_WAKE];
    int              i, kept = 0, n_wake = 0;
    clef_slot       *sl;
    clef_error      *e;

    b->tokens = 0;
    for (i = 0; i < b->n; i++) {
        clef_sched_item *it = &b->items[i];

        sl = clef_queue_slot_w(s->q, it->slot);
        if (clef_queue_is_cancelled(s->q, it->slot)) {
            s->drop(s->ctx, it);
            (void) clef_queue_complete(s->q, it->slot);   /* frees it */
            continue;
        }
        if (sl->deadline_ns != 0 && now_ns >= sl->deadline_ns) {
            s->drop(s->ctx, it);
            e = clef_queue_error_w(s->q, it->slot);
            clef_error_set(e, 504, "timeout_error", NULL,
                           "the request waited %lld ms for the engine to "
                           "start its forward (queue and preparation); "
                           "the limit is %lld ms",
                           (long long) ((now_ns - sl->submit_ns) / 1000000),
                           (long long) ((sl->deadline_ns - sl->submit_ns)
                                        / 1000000));
            sl->status = 504;
            note_done(s, wake, &n_wake, clef_queue_complete(s->q, it->slot));
            continue;
        }
        b->items[kept++] = *it;
        b->tokens += it->tokens;
    }
    b->n = kept;
    if (n_wake) {
        s->wake(s->ctx, wake, n_wake);
    }
    return kept;
}


void
clef_sched_batch_clear(clef_sched *s, clef_sched_batch *b)
{
    int  i;

    for (i = 0; i < b->n; i++) {
        s->drop(s->ctx, &b->items[i]);
    }
    b->n = 0;
    b->tokens = 0;
}


void
clef_sched_fail_ready(clef_sched *s, int status, const char *message)
{
    clef_sched_item  it;
    clef_slot       *sl;
    clef_wake_note   wake[CLEF_SCHED_MAX_WAKE];
    int              n_wake = 0;

    while (s->ready_n > 0) {
        ready_pop(s, &it);
        s->drop(s->ctx, &it);
        sl = clef_queue_slot_w(s->q, it.slot);
        clef_error_set(clef_queue_error_w(s->q, it.slot), status,
                       "engine_unavailable", NULL, "%s", message);
        sl->status = status;
        note_done(s, wake, &n_wake, clef_queue_complete(s->q, it.slot));
    }
    if (n_wake) {
        s->wake(s->ctx, wake, n_wake);
    }
}
