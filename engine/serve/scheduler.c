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


/* 1 when a record of `tokens` runs whole: chunked prefill off, or no
 * longer than a part. */
static int
sched_whole(const clef_sched *s, int64_t tokens)
{
    return s->chunk_tokens <= 0 || tokens <= s->chunk_tokens;
}


/* What a ready record weighs toward a full batch's tokens: a record in
 * parts nothing, so that however many wait for an executor free of one,
 * the short records behind them are still prepared (they count toward
 * the FIFO's records, which bounds them). */
static int64_t
ready_weight(const clef_sched *s, int64_t tokens)
{
    return sched_whole(s, tokens) ? tokens : 0;
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
    s->ready_tokens -= ready_weight(s, it->tokens);
}


/* Takes the i-th ready record out of the FIFO, the later ones moving up
 * (a short record passing one that runs in parts). */
static void
ready_remove(clef_sched *s, int i, clef_sched_item *it)
{
    if (i == 0) {
        ready_pop(s, it);
        return;
    }
    *it = *ready_at(s, i);
    for ( ; i + 1 < s->ready_n; i++) {
        *ready_at(s, i) = *ready_at(s, i + 1);
    }
    s->ready_n--;
    s->ready_tokens -= ready_weight(s, it->tokens);
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
    s->ready_tokens += ready_weight(s, it->tokens);
}


/* A whole record into the batch. */
static void
batch_push(clef_sched_batch *b, const clef_sched_item *it)
{
    clef_sched_item  *w = &b->items[b->n++];

    *w = *it;
    w->offset = 0;
    w->len = it->tokens;
    w->last = 1;
    w->parted = 0;
    b->tokens += it->tokens;
}


/* The next part of b's record in parts into the batch: chunk_tokens of it
 * (the rest when chunked prefill was turned off meanwhile). */
static void
part_push(const clef_sched *s, clef_sched_batch *b)
{
    clef_sched_item  *w = &b->items[b->n++];
    int64_t           left = b->part.tokens - b->part_done;

    *w = b->part;
    w->offset = b->part_done;
    w->len = s->chunk_tokens > 0 && left > s->chunk_tokens
             ? s->chunk_tokens : left;
    w->last = w->offset + w->len == b->part.tokens;
    w->parted = 1;
    b->tokens += w->len;
}


/* Moves into b, in FIFO order, the ready records that run whole while
 * they fit, passing over those that run in parts (rule a). */
static int
take_whole(clef_sched *s, clef_sched_batch *b)
{
    clef_sched_item  it;
    int              i = 0, moved = 0;
    int64_t          t;

    while (i < s->ready_n) {
        t = ready_at(s, i)->tokens;
        if (!sched_whole(s, t)) {
            i++;
            continue;
        }
        if (!clef_sched_fits(b, t, s->max_batch_tokens, s->max_records)) {
            break;
        }
        ready_remove(s, i, &it);
        batch_push(b, &it);
        moved++;
    }
    return moved;
}


static int
ready_has_whole(clef_sched *s)
{
    int  i;

    for (i = 0; i < s->ready_n; i++) {
        if (sched_whole(s, ready_at(s, i)->tokens)) {
            return 1;
        }
    }
    return 0;
}


void
clef_sched_set_chunk(clef_sched *s, int64_t chunk_tokens)
{
    int  i;

    if (chunk_tokens == s->chunk_tokens) {
        return;
    }
    /* the ready records' weights change with it */
    s->chunk_tokens = chunk_tokens;
    s->ready_tokens = 0;
    for (i = 0; i < s->ready_n; i++) {
        s->ready_tokens += ready_weight(s, ready_at(s, i)->tokens);
    }
}


int
clef_sched_has_part(const clef_sched_batch *b)
{
    return b->part_active;
}


int
clef_sched_next_batch(clef_sched *s, clef_sched_batch *b)
{
    clef_sched_item  it;
    int              moved = 0;

    if (s->chunk_tokens <= 0 && !b->part_active) {
        while (s->ready_n > 0
               && clef_sched_fits(b, ready_at(s, 0)->tokens,
                                  s->max_batch_tokens, s->max_records))
        {
            ready_pop(s, &it);
            batch_push(b, &it);
            moved++;
        }
        return moved;
    }

    if (b->part_active && !b->part_owed && ready_has_whole(s)) {
        /* rule a: the short records do not wait for the rest of the
         * record in parts */
        b->part_owed = 1;
        return take_whole(s, b);
    }
    if (!b->part_active && s->ready_n > 0
        && !sched_whole(s, ready_at(s, 0)->tokens))
    {
        /* rule c */
        ready_pop(s, &b->part);
        b->part_done = 0;
        b->part_active = 1;
    }
    if (b->part_active) {
        /* rule b */
        part_push(s, b);
        b->part_owed = 0;
        moved = 1;
    }
    return moved + take_whole(s, b);
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
            b->part_active &= !it->parted;
            (void) clef_queue_complete(s->q, it->slot);   /* frees it */
            continue;
        }
        /* the deadline is for the wait until the forward starts: a record
         * in parts whose first part ran is past it */
        if (sl->deadline_ns != 0 && now_ns >= sl->deadline_ns
            && it->offset == 0)
        {
            s->drop(s->ctx, it);
            b->part_active &= !it->parted;
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
        b->tokens += it->len;
    }
    b->n = kept;
    if (n_wake) {
        s->wake(s->ctx, wake, n_wake);
    }
    return kept;
}


void
clef_sched_batch_end(clef_sched *s, clef_sched_batch *b, int ran)
{
    clef_sched_item  *it;
    int               i;

    for (i = 0; i < b->n; i++) {
        it = &b->items[i];
        if (it->parted && ran && !it->last) {
            /* its next part in a later batch */
            b->part_done = it->offset + it->len;
            continue;
        }
        if (it->parted) {
            b->part_active = 0;
        }
        s->drop(s->ctx, it);
    }
    b->n = 0;
    b->tokens = 0;
}


void
clef_sched_batch_clear(clef_sched *s, clef_sched_batch *b)
{
    int  i;

    for (i = 0; i < b->n; i++) {
        if (!b->items[i].parted) {
            s->drop(s->ctx, &b->items[i]);
        }
    }
    if (b->part_active) {
        s->drop(s->ctx, &b->part);
        b->part_active = 0;
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
