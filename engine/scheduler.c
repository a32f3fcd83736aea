/*
 * Token-budget batching over the shared queue (see scheduler.h).
 */
#include "scheduler.h"

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


int
clef_sched_full(const clef_sched *s, const clef_sched_batch *b)
{
    return s->has_carry
           || b->n >= b->cap || b->n >= s->max_records
           || (b->n > 0 && b->tokens >= s->max_batch_tokens);
}


int
clef_sched_has_carry(const clef_sched *s)
{
    return s->has_carry;
}


static void
add_pid(pid_t *wake, int *n, pid_t pid)
{
    int  i;

    if (pid <= 0) {
        return;
    }
    for (i = 0; i < *n; i++) {
        if (wake[i] == pid) {
            return;
        }
    }
    if (*n < CLEF_SCHED_MAX_WAKE) {
        wake[(*n)++] = pid;
    }
}


static void
batch_push(clef_sched_batch *b, const clef_sched_item *it)
{
    b->items[b->n++] = *it;
    b->tokens += it->tokens;
}


int
clef_sched_fill(clef_sched *s, clef_sched_batch *b, int *other_gen)
{
    clef_sched_item  it;
    pid_t            wake[CLEF_SCHED_MAX_WAKE];
    int              n_wake = 0, added = 0, rc;
    uint32_t         slot;

    *other_gen = 0;

    if (s->has_carry) {
        if (!clef_sched_fits(b, s->carry.tokens, s->max_batch_tokens,
                             s->max_records))
        {
            return 0;
        }
        batch_push(b, &s->carry);
        s->has_carry = 0;
        added++;
    }

    while (!clef_sched_full(s, b)) {
        rc = clef_queue_take(s->q, s->gen, &slot, wake, &n_wake,
                             CLEF_SCHED_MAX_WAKE);
        if (n_wake == CLEF_SCHED_MAX_WAKE || rc != CLEF_TAKE_OK) {
            if (n_wake) {
                s->wake(s->ctx, wake, n_wake);
                n_wake = 0;
            }
        }
        if (rc == CLEF_TAKE_OTHER_GEN) {
            *other_gen = 1;
            break;
        }
        if (rc != CLEF_TAKE_OK) {
            break;
        }

        memset(&it, 0, sizeof(it));
        it.slot = slot;
        if (s->prepare(s->ctx, slot, &it) != 0) {
            continue;
        }
        if (clef_sched_fits(b, it.tokens, s->max_batch_tokens,
                            s->max_records))
        {
            batch_push(b, &it);
            added++;
        } else {
            s->carry = it;
            s->has_carry = 1;
        }
    }
    if (n_wake) {
        s->wake(s->ctx, wake, n_wake);
    }
    return added;
}


int
clef_sched_prune(clef_sched *s, clef_sched_batch *b, int64_t now_ns)
{
    pid_t       wake[CLEF_SCHED_MAX_WAKE];
    int         i, kept = 0, n_wake = 0;
    clef_slot  *sl;
    clef_error *e;
    pid_t       pid;

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
            clef_error_set(e, 504, "timeout", NULL,
                           "the request waited longer than its deadline");
            sl->status = 504;
            pid = clef_queue_complete(s->q, it->slot);
            add_pid(wake, &n_wake, pid);
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
clef_sched_drop_carry(clef_sched *s, int status, const char *message)
{
    clef_slot  *sl;
    pid_t       pid;

    if (!s->has_carry) {
        return;
    }
    s->drop(s->ctx, &s->carry);
    s->has_carry = 0;
    sl = clef_queue_slot_w(s->q, s->carry.slot);
    clef_error_set(clef_queue_error_w(s->q, s->carry.slot), status,
                   "engine_unavailable", NULL, "%s", message);
    sl->status = status;
    pid = clef_queue_complete(s->q, s->carry.slot);
    if (pid > 0) {
        s->wake(s->ctx, &pid, 1);
    }
}
