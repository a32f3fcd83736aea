/*
 * Shared-memory record queue: layout, slot life cycle, a first-fit block
 * allocator for the data area, and the engine futex.
 * See queue.h for the ownership rules.
 */
#include "serve/queue.h"

#include <errno.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "base/pid.h"

#define CLEF_QUEUE_MAGIC  0x31455545514c4543ULL    /* "CLEQUEU1" */
#define BLK_MAGIC         0x636c6566u              /* "clef" */
#define BLK_HDR           ((uint64_t) sizeof(clef_blk))
#define BLK_MIN           (BLK_HDR + 64)

/* A block of the data area; blocks tile the area back to back. */
typedef struct {
    uint64_t  size;        /* whole block, header included */
    uint64_t  prev_size;   /* 0 for the first block */
    uint32_t  used;
    uint32_t  magic;
    uint64_t  pad;
} clef_blk;

static const char *engine_state_names[] = {
    "none", "loading", "ready", "draining", "restarting", "failed", "stopped",
    "stalled"
};


const char *
clef_engine_state_name(uint32_t state)
{
    if (state < sizeof(engine_state_names) / sizeof(engine_state_names[0])) {
        return engine_state_names[state];
    }
    return "unknown";
}


static uint64_t
align_up(uint64_t n, uint64_t a)
{
    return (n + a - 1) & ~(a - 1);
}


/* ---- layout ------------------------------------------------------------- */

uint32_t
clef_queue_default_slots(size_t size)
{
    size_t  n = size / 16384;

    if (n < 64) {
        n = 64;
    }
    if (n > 65536) {
        n = 65536;
    }
    return (uint32_t) n;
}


static void
queue_bind(clef_queue *q, clef_queue_hdr *h)
{
    unsigned char  *base = (unsigned char *) h;

    q->h = h;
    q->ring = (uint32_t *) (base + h->ring_off);
    q->free = (uint32_t *) (base + h->free_off);
    q->slots = (clef_slot *) (base + h->slots_off);
    q->data = base + h->data_off;
}


int
clef_queue_init(clef_queue *q, void *mem, size_t size, uint32_t nslots,
    uint64_t zone_id, clef_error *err)
{
    clef_queue_hdr       *h = mem;
    pthread_mutexattr_t   attr;
    uint64_t              off;
    clef_blk             *b;
    uint32_t              i;

    if (((uintptr_t) mem & 63) != 0) {
        return clef_error_set(err, 500, "queue_layout", NULL,
                              "queue memory is not 64-byte aligned");
    }
    if (nslots == 0) {
        nslots = clef_queue_default_slots(size);
    }

    memset(h, 0, sizeof(*h));
    h->version = CLEF_QUEUE_VERSION;
    h->nslots = nslots;
    h->zone_id = zone_id;
    h->size = size;

    off = align_up(sizeof(*h), 64);
    h->ring_off = off;
    off = align_up(off + (uint64_t) nslots * sizeof(uint32_t), 64);
    h->free_off = off;
    off = align_up(off + (uint64_t) nslots * sizeof(uint32_t), 64);
    h->slots_off = off;
    off = align_up(off + (uint64_t) nslots * sizeof(clef_slot), 64);
    h->data_off = off;

    if (off + BLK_MIN * 16 > size) {
        return clef_error_set(err, 500, "queue_layout", NULL,
                              "zone of %zu bytes is too small for %u slots",
                              size, nslots);
    }
    h->data_size = (size - off) & ~(uint64_t) 63;

    if (pthread_mutexattr_init(&attr) != 0
        || pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED) != 0
        || pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST) != 0
        || pthread_mutex_init(&h->lock, &attr) != 0)
    {
        return clef_error_set(err, 500, "queue_layout", NULL,
                              "cannot create the queue mutex");
    }
    pthread_mutexattr_destroy(&attr);

    queue_bind(q, h);
    memset(q->slots, 0, (size_t) nslots * sizeof(clef_slot));
    for (i = 0; i < nslots; i++) {
        q->free[i] = nslots - 1 - i;
    }
    h->free_count = nslots;

    b = (clef_blk *) q->data;
    b->size = h->data_size;
    b->prev_size = 0;
    b->used = 0;
    b->magic = BLK_MAGIC;
    h->rover = 0;

    atomic_store(&h->state, CLEF_ENGINE_NONE);
    /* last: a reader that sees the magic sees a complete layout */
    atomic_thread_fence(memory_order_release);
    h->magic = CLEF_QUEUE_MAGIC;
    return 0;
}


int
clef_queue_attach(clef_queue *q, void *mem)
{
    clef_queue_hdr  *h = mem;

    if (h->magic != CLEF_QUEUE_MAGIC || h->version != CLEF_QUEUE_VERSION) {
        return -1;
    }
    queue_bind(q, h);
    return 0;
}


/* ---- lock ----------------------------------------------------------------- */

static void
q_lock(clef_queue *q)
{
    int  rc = pthread_mutex_lock(&q->h->lock);

    if (rc == EOWNERDEAD) {
        /* the holder died inside a short critical section; the structures
         * it touched are word-sized updates we accept as they are */
        pthread_mutex_consistent(&q->h->lock);
        atomic_fetch_add(&q->h->stats.lock_recoveries, 1);
    }
}


static void
q_unlock(clef_queue *q)
{
    pthread_mutex_unlock(&q->h->lock);
}


/* ---- data area allocator (under lock) ------------------------------------ */

static clef_blk *
blk_at(clef_queue *q, uint64_t off)
{
    return (clef_blk *) (q->data + off);
}


static int
blk_alloc(clef_queue *q, uint64_t payload, uint64_t *out)
{
    clef_queue_hdr  *h = q->h;
    uint64_t         need = align_up(payload + BLK_HDR, 64);
    uint64_t         off, start, wrapped = 0;
    clef_blk        *b, *rest, *next;

    if (need > h->data_size) {
        return -1;
    }
    start = h->rover < h->data_size ? h->rover : 0;
    off = start;

    for ( ;; ) {
        b = blk_at(q, off);
        if (!b->used && b->size >= need) {
            if (b->size - need >= BLK_MIN) {
                rest = blk_at(q, off + need);
                rest->size = b->size - need;
                rest->prev_size = need;
                rest->used = 0;
                rest->magic = BLK_MAGIC;
                if (off + b->size < h->data_size) {
                    next = blk_at(q, off + b->size);
                    next->prev_size = rest->size;
                }
                b->size = need;
            }
            b->used = 1;
            h->data_used += b->size;
            h->rover = off + b->size < h->data_size ? off + b->size : 0;
            *out = off;
            return 0;
        }
        off += b->size;
        if (off >= h->data_size) {
            off = 0;
            wrapped = 1;
        }
        if (wrapped && off >= start) {
            return -1;
        }
    }
}


static void
blk_free(clef_queue *q, uint64_t off)
{
    clef_queue_hdr  *h = q->h;
    clef_blk        *b = blk_at(q, off), *next, *prev;
    uint64_t         end, poff;

    if (b->magic != BLK_MAGIC || !b->used) {
        return;
    }
    b->used = 0;
    h->data_used -= b->size;

    end = off + b->size;
    if (end < h->data_size) {
        next = blk_at(q, end);
        if (!next->used) {
            if (h->rover == end) {
                h->rover = off;
            }
            b->size += next->size;
            next->magic = 0;
        }
    }
    if (b->prev_size != 0) {
        poff = off - b->prev_size;
        prev = blk_at(q, poff);
        if (!prev->used) {
            if (h->rover == off) {
                h->rover = poff;
            }
            prev->size += b->size;
            b->magic = 0;
            b = prev;
            off = poff;
        }
    }
    end = off + b->size;
    if (end < h->data_size) {
        blk_at(q, end)->prev_size = b->size;
    }
}


/* ---- slots (under lock) ---------------------------------------------------- */

static uint64_t
block_bytes(uint32_t body_len, uint32_t n_options)
{
    return align_up(body_len + 1, 16) + align_up(sizeof(clef_error), 16)
           + (uint64_t) n_options * sizeof(float);
}


static unsigned char *
block_payload(const clef_queue *q, const clef_slot *s)
{
    return q->data + s->block + BLK_HDR;
}


static void
slot_free_locked(clef_queue *q, uint32_t idx)
{
    clef_slot  *s = &q->slots[idx];

    blk_free(q, s->block);
    atomic_store(&s->state, CLEF_SLOT_FREE);
    s->owner_pid = 0;
    q->free[q->h->free_count++] = idx;
}


static void
ring_push_locked(clef_queue *q, uint32_t idx)
{
    clef_queue_hdr  *h = q->h;

    q->ring[(h->q_head + h->q_count) % h->nslots] = idx;
    h->q_count++;
}


static uint32_t
ring_pop_locked(clef_queue *q)
{
    clef_queue_hdr  *h = q->h;
    uint32_t         idx = q->ring[h->q_head];

    h->q_head = (h->q_head + 1) % h->nslots;
    h->q_count--;
    return idx;
}


/* ---- worker side ------------------------------------------------------------ */

int
clef_queue_submit(clef_queue *q, const clef_submission *sub, uint32_t *slot,
    uint32_t *seq)
{
    clef_queue_hdr  *h = q->h;
    uint64_t         bytes, blk;
    uint32_t         idx;
    clef_slot       *s;
    unsigned char   *p;

    if (sub->body_len > UINT32_MAX - 64) {
        return CLEF_Q_TOO_BIG;
    }
    bytes = block_bytes((uint32_t) sub->body_len, sub->n_options);
    if (bytes + BLK_HDR > h->data_size) {
        return CLEF_Q_TOO_BIG;
    }

    q_lock(q);
    if (sub->max_queue && h->q_count >= sub->max_queue) {
        q_unlock(q);
        atomic_fetch_add(&h->stats.rejected_full, 1);
        return CLEF_Q_FULL;
    }
    if (h->free_count == 0 || blk_alloc(q, bytes, &blk) != 0) {
        q_unlock(q);
        atomic_fetch_add(&h->stats.rejected_full, 1);
        return CLEF_Q_NOMEM;
    }
    idx = q->free[--h->free_count];
    s = &q->slots[idx];
    s->seq++;
    s->owner_pid = sub->owner_pid;
    s->gen = sub->gen;
    s->block = blk;
    s->body_len = (uint32_t) sub->body_len;
    s->n_options = sub->n_options;
    s->max_length = sub->max_length;
    s->truncate = sub->truncate;
    s->deadline_ns = sub->deadline_ns;
    s->taken_ns = 0;
    s->done_ns = 0;
    s->status = 0;
    s->n_tokens = 0;
    s->state_tokens = 0;
    s->state_kept = 0;
    s->batch_records = 0;
    atomic_store(&s->running, 0);
    atomic_store(&s->state, CLEF_SLOT_FILLING);
    q_unlock(q);

    /* the copy runs outside the lock: a 13 MB body must not stall others */
    p = block_payload(q, s);
    memcpy(p, sub->body, sub->body_len);
    p[sub->body_len] = '\0';
    memset(p + align_up(sub->body_len + 1, 16), 0, sizeof(clef_error));

    q_lock(q);
    s->submit_ns = clef_now_ns();
    atomic_store(&s->state, CLEF_SLOT_QUEUED);
    ring_push_locked(q, idx);
    q_unlock(q);

    atomic_fetch_add(&h->stats.submitted, 1);
    *slot = idx;
    *seq = s->seq;
    clef_queue_wake_engine(q);
    return CLEF_Q_OK;
}


int
clef_queue_done(const clef_queue *q, uint32_t slot, uint32_t seq)
{
    const clef_slot  *s;
    uint32_t          st;

    if (slot >= q->h->nslots) {
        return -1;
    }
    s = &q->slots[slot];
    st = atomic_load_explicit(&s->state, memory_order_acquire);
    if (s->seq != seq || (st & CLEF_SLOT_STATE_MASK) == CLEF_SLOT_FREE) {
        return -1;
    }
    return (st & CLEF_SLOT_STATE_MASK) == CLEF_SLOT_DONE;
}


const clef_slot *
clef_queue_slot(const clef_queue *q, uint32_t slot)
{
    return &q->slots[slot];
}


const float *
clef_queue_logits(const clef_queue *q, uint32_t slot)
{
    const clef_slot  *s = &q->slots[slot];

    return (const float *) (block_payload(q, s) + align_up(s->body_len + 1, 16)
                            + align_up(sizeof(clef_error), 16));
}


const clef_error *
clef_queue_error(const clef_queue *q, uint32_t slot)
{
    const clef_slot  *s = &q->slots[slot];

    return (const clef_error *) (block_payload(q, s)
                                 + align_up(s->body_len + 1, 16));
}


void
clef_queue_release(clef_queue *q, uint32_t slot, uint32_t seq)
{
    clef_slot  *s;

    if (slot >= q->h->nslots) {
        return;
    }
    s = &q->slots[slot];
    q_lock(q);
    if (s->seq == seq
        && (atomic_load(&s->state) & CLEF_SLOT_STATE_MASK) == CLEF_SLOT_DONE)
    {
        slot_free_locked(q, slot);
    }
    q_unlock(q);
}


int
clef_queue_cancel(clef_queue *q, uint32_t slot, uint32_t seq)
{
    clef_slot  *s;
    uint32_t    st;
    int         cancelled = 0;

    if (slot >= q->h->nslots) {
        return 0;
    }
    s = &q->slots[slot];
    q_lock(q);
    if (s->seq == seq) {
        st = atomic_load(&s->state);
        switch (st) {
        case CLEF_SLOT_QUEUED:
        case CLEF_SLOT_TAKEN:
            /* the engine holds it (or will pop it): it frees it */
            atomic_store(&s->state, st | CLEF_SLOT_CANCELLED);
            cancelled = 1;
            break;
        case CLEF_SLOT_FILLING:
            cancelled = 1;
            /* fall through */
        case CLEF_SLOT_DONE:
            slot_free_locked(q, slot);
            break;
        default:
            break;
        }
    }
    q_unlock(q);
    if (cancelled) {
        atomic_fetch_add(&q->h->stats.cancelled, 1);
    }
    return cancelled;
}


uint32_t
clef_queue_futex(clef_queue *q)
{
    return atomic_load(&q->h->futex);
}


void
clef_queue_wake_engine(clef_queue *q)
{
    atomic_fetch_add(&q->h->futex, 1);
    if (atomic_load(&q->h->waiting)) {
        /* no FUTEX_PRIVATE_FLAG: the word lives in a MAP_SHARED zone */
        syscall(SYS_futex, &q->h->futex, FUTEX_WAKE, INT32_MAX, NULL, NULL, 0);
    }
}


void
clef_queue_progress(clef_queue *q)
{
    atomic_fetch_add_explicit(&q->h->progress, 1, memory_order_relaxed);
}


uint32_t
clef_queue_engine_work(clef_queue *q)
{
    uint32_t  i, st, n = 0;

    q_lock(q);
    for (i = 0; i < q->h->nslots; i++) {
        st = atomic_load(&q->slots[i].state);
        if (st == CLEF_SLOT_QUEUED || st == CLEF_SLOT_TAKEN) {
            n++;
        }
    }
    q_unlock(q);
    return n;
}


void
clef_queue_engine_wait(clef_queue *q, uint32_t seen, int timeout_ms)
{
    struct timespec  ts;

    ts.tv_sec = timeout_ms / 1000;
    ts.tv_nsec = (long) (timeout_ms % 1000) * 1000000;
    atomic_store(&q->h->waiting, 1);
    if (atomic_load(&q->h->futex) == seen) {
        syscall(SYS_futex, &q->h->futex, FUTEX_WAIT, seen, &ts, NULL, 0);
    }
    atomic_store(&q->h->waiting, 0);
}


uint32_t
clef_queue_depth(clef_queue *q)
{
    uint32_t  n;

    q_lock(q);
    n = q->h->q_count;
    q_unlock(q);
    return n;
}


void
clef_queue_get_usage(clef_queue *q, clef_queue_usage *u)
{
    q_lock(q);
    u->nslots = q->h->nslots;
    u->slots_used = q->h->nslots - q->h->free_count;
    u->queued = q->h->q_count;
    u->data_used = q->h->data_used;
    u->data_size = q->h->data_size;
    q_unlock(q);
}


/* ---- engine side ------------------------------------------------------------ */

/* Notes the owner of a record answered under the lock, or counts a lost
 * wake-up when the caller's array is full (the worker rescans). */
static void
add_wake(clef_queue *q, uint32_t idx, clef_wake_note *wake, int *n_wake,
    int max_wake)
{
    clef_slot  *s = &q->slots[idx];

    if (s->owner_pid <= 0) {
        return;
    }
    if (wake == NULL || *n_wake >= max_wake) {
        atomic_fetch_add(&q->h->wake_lost, 1);
        return;
    }
    wake[*n_wake].pid = s->owner_pid;
    wake[*n_wake].slot = idx;
    wake[*n_wake].seq = s->seq;
    (*n_wake)++;
}


/* Writes an error result into a record and marks it DONE (under lock). */
static void
fail_locked(clef_queue *q, uint32_t idx, int status, const char *type,
    const char *message)
{
    clef_slot   *s = &q->slots[idx];
    clef_error  *e = clef_queue_error_w(q, idx);

    clef_error_set(e, status, type, NULL, "%s", message);
    s->status = status;
    s->done_ns = clef_now_ns();
    atomic_store_explicit(&s->state, CLEF_SLOT_DONE, memory_order_release);
}


int
clef_queue_take(clef_queue *q, uint32_t gen, uint32_t *slot,
    clef_wake_note *wake, int *n_wake, int max_wake)
{
    clef_queue_hdr  *h = q->h;
    clef_slot       *s;
    uint32_t         idx, st;
    int              rc = CLEF_TAKE_EMPTY;

    q_lock(q);
    while (h->q_count > 0) {
        idx = q->ring[h->q_head];
        s = &q->slots[idx];
        st = atomic_load(&s->state);

        if (st & CLEF_SLOT_CANCELLED) {
            ring_pop_locked(q);
            slot_free_locked(q, idx);
            continue;
        }
        if (!clef_pid_alive(s->owner_pid)) {
            ring_pop_locked(q);
            slot_free_locked(q, idx);
            atomic_fetch_add(&h->stats.orphaned, 1);
            continue;
        }
        if (s->gen > gen) {
            rc = CLEF_TAKE_OTHER_GEN;
            break;
        }
        if (s->gen < gen && wake != NULL && *n_wake >= max_wake) {
            /* no room to note its owner: answer it on the next call */
            break;
        }
        ring_pop_locked(q);
        if (s->gen < gen) {
            /* submitted by a worker of a replaced configuration */
            fail_locked(q, idx, 503, "engine_unavailable",
                        "the model configuration changed; retry");
            atomic_fetch_add(&h->stats.failed, 1);
            add_wake(q, idx, wake, n_wake, max_wake);
            continue;
        }
        s->taken_ns = clef_now_ns();
        atomic_store(&s->state, CLEF_SLOT_TAKEN);
        *slot = idx;
        rc = CLEF_TAKE_OK;
        break;
    }
    q_unlock(q);
    return rc;
}


const char *
clef_queue_body(const clef_queue *q, uint32_t slot)
{
    return (const char *) block_payload(q, &q->slots[slot]);
}


clef_slot *
clef_queue_slot_w(clef_queue *q, uint32_t slot)
{
    return &q->slots[slot];
}


float *
clef_queue_logits_w(clef_queue *q, uint32_t slot)
{
    return (float *) clef_queue_logits(q, slot);
}


clef_error *
clef_queue_error_w(clef_queue *q, uint32_t slot)
{
    return (clef_error *) clef_queue_error(q, slot);
}


int
clef_queue_is_cancelled(const clef_queue *q, uint32_t slot)
{
    return (atomic_load(&q->slots[slot].state) & CLEF_SLOT_CANCELLED) != 0;
}


clef_wake_note
clef_queue_complete(clef_queue *q, uint32_t slot)
{
    clef_slot       *s = &q->slots[slot];
    uint32_t         expect = CLEF_SLOT_TAKEN;
    clef_wake_note   note;

    note.pid = s->owner_pid;
    note.slot = slot;
    note.seq = s->seq;
    s->done_ns = clef_now_ns();
    if (atomic_compare_exchange_strong(&s->state, &expect, CLEF_SLOT_DONE)) {
        return note;
    }
    /* cancelled while it ran */
    q_lock(q);
    slot_free_locked(q, slot);
    q_unlock(q);
    note.pid = 0;
    return note;
}


void
clef_queue_mark_running(clef_queue *q, uint32_t slot)
{
    atomic_store(&q->slots[slot].running, 1);
}


int
clef_queue_fail_all(clef_queue *q, uint32_t gen, int status, const char *type,
    const char *message, clef_wake_note *wake, int *n_wake, int max_wake)
{
    clef_queue_hdr  *h = q->h;
    uint32_t         i, st, kept = 0, head;
    int              n = 0;
    clef_slot       *s;

    q_lock(q);
    /* the ring keeps only live records of other generations */
    head = h->q_head;
    for (i = 0; i < h->q_count; i++) {
        uint32_t idx = q->ring[(head + i) % h->nslots];

        s = &q->slots[idx];
        if (gen != 0 && s->gen != gen
            && !(atomic_load(&s->state) & CLEF_SLOT_CANCELLED))
        {
            q->ring[(head + kept) % h->nslots] = idx;
            kept++;
        }
    }

    for (i = 0; i < h->nslots; i++) {
        s = &q->slots[i];
        st = atomic_load(&s->state);
        if ((st & CLEF_SLOT_STATE_MASK) != CLEF_SLOT_QUEUED
            && (st & CLEF_SLOT_STATE_MASK) != CLEF_SLOT_TAKEN)
        {
            continue;
        }
        if (gen != 0 && s->gen != gen && !(st & CLEF_SLOT_CANCELLED)) {
            continue;
        }
        if (st & CLEF_SLOT_CANCELLED) {
            slot_free_locked(q, i);
            continue;
        }
        fail_locked(q, i, status, type, message);
        add_wake(q, i, wake, n_wake, max_wake);
        n++;
    }
    h->q_count = kept;
    q_unlock(q);
    atomic_fetch_add(&h->stats.failed, (uint64_t) n);
    return n;
}


int
clef_queue_reap_orphans(clef_queue *q)
{
    uint32_t    i, st;
    int         n = 0;
    clef_slot  *s;

    q_lock(q);
    for (i = 0; i < q->h->nslots; i++) {
        s = &q->slots[i];
        st = atomic_load(&s->state);
        /* QUEUED and TAKEN ones are the engine's to drop */
        if ((st == CLEF_SLOT_DONE || st == CLEF_SLOT_FILLING)
            && !clef_pid_alive(s->owner_pid))
        {
            slot_free_locked(q, i);
            n++;
        }
    }
    q_unlock(q);
    if (n) {
        atomic_fetch_add(&q->h->stats.orphaned, (uint64_t) n);
    }
    return n;
}


void
clef_queue_set_message(clef_queue *q, const char *fmt, ...)
{
    va_list  ap;
    char     buf[sizeof(q->h->message)];

    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    q_lock(q);
    memcpy(q->h->message, buf, sizeof(buf));
    q_unlock(q);
}


void
clef_queue_get_message(clef_queue *q, char *buf, size_t size)
{
    q_lock(q);
    snprintf(buf, size, "%s", q->h->message);
    q_unlock(q);
}


void
clef_queue_decoder_died(clef_queue *q, const char *cause)
{
    struct timespec  ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    atomic_fetch_add(&q->h->stats.decoder_deaths, 1);
    q_lock(q);
    snprintf(q->h->decoder_cause, sizeof(q->h->decoder_cause), "%s", cause);
    q_unlock(q);
    atomic_store(&q->h->decoder_death_ms,
                 (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
}


void
clef_queue_get_decoder_cause(clef_queue *q, char *buf, size_t size)
{
    q_lock(q);
    snprintf(buf, size, "%s", q->h->decoder_cause);
    q_unlock(q);
}
