/*
 * Token-budget batching, in the manner of Hugging Face
 * text-embeddings-inference, split between two threads of the engine:
 *
 *   preparing thread   shared queue --clef_sched_take()--> prepare()
 *                      --clef_sched_ready_push()--> ready FIFO
 *   executor           ready FIFO --clef_sched_next_batch()--> batch,
 *                      run, answer
 *
 * Records leave the shared queue in FIFO order, are prepared (encoded) one
 * at a time and wait, prepared, in the ready FIFO.  An idle executor takes
 * from the head of the ready FIFO as many records as fit max_batch_tokens
 * and max_records; a record longer than the budget runs alone.  Because
 * the executor only ever takes prepared records, preparing a record (a
 * long one, or a hostile one) never delays the forward of records prepared
 * before it.  The preparing thread stops taking from the shared queue once
 * a full batch is ready, so cancellations and deadlines keep applying to
 * records that wait, and memory stays bounded.  Cancelled and expired
 * records are dropped when taken (clef_queue_take) and again just before a
 * batch runs (clef_sched_prune).
 *
 * The scheduler does not know how a record is prepared: the engine passes
 * a prepare() that encodes it (the tests pass a simpler one).  It does no
 * locking: the engine calls the ready-FIFO functions under its own mutex,
 * and clef_sched_take() (the slow part) outside it.
 *
 * Chunked prefill (chunk_tokens > 0, a backend that can run a record in
 * parts: backend.h's clef_batch_part): a record longer than chunk_tokens
 * runs in parts of chunk_tokens (the last one shorter), one part per
 * batch, so that the records behind it do not wait for its whole forward.
 * An executor runs one such record at a time, kept in its batch between
 * parts (clef_sched_batch.part); the batches it takes follow three rules:
 *   a. short records first: when records that run whole are ready, the
 *      next batch takes them (as many as fit, in FIFO order, passing over
 *      records that run in parts), without a part;
 *   b. no starvation: after a batch without the part, the next batch
 *      starts with the part (short records that fit join it);
 *   c. a record that runs in parts starts when it heads the FIFO and the
 *      executor runs none, and runs to its last part on that executor.
 * So a short record waits for at most the part running when it became
 * ready, and a long one for at most one batch of short records between
 * two of its parts.  A record in parts that is cancelled is dropped
 * between two parts; its deadline applies until its first part starts.
 * In the ready FIFO a record in parts counts toward the records of a full
 * batch, not its tokens, so that short records behind records waiting to
 * run in parts are still prepared.  chunk_tokens 0: records run whole, as
 * before.
 *
 * Progress guarantee (test_scheduler checks it on fixed and randomized
 * mixes, with the engine's own policy, with and without chunked prefill):
 *   1. An empty batch takes the head of the ready FIFO whatever its size
 *      (clef_sched_fits(empty, any) == 1), so every call of
 *      clef_sched_next_batch() on a non-empty FIFO moves a record; with a
 *      record in parts it moves short records or the record's next part,
 *      and the record's parts end: each runs chunk_tokens tokens or the
 *      rest.
 *   2. clef_sched_ready_full() is false on an empty FIFO, so the preparing
 *      thread always refills it, and every record it takes ends in the
 *      FIFO or is answered by prepare().
 *   3. The executor takes a batch whenever it is idle and the FIFO is not
 *      empty, or it runs a record in parts (clef_sched_has_part(): it
 *      counts as busy until the record's last part ran or the record was
 *      dropped, so a draining engine waits for it); the preparing thread
 *      takes records whenever the FIFO is not full, which records waiting
 *      to run in parts cannot make it by their tokens.  Each waits only
 *      for the other's progress or for new work.
 * (The bug this replaced: a record that did not fit the batch being
 * prepared was "carried", and a carry made the scheduler call every later
 * batch full, even an empty one: two records that did not fit one batch
 * stalled the engine for good.)
 */
#ifndef CLEF_SCHEDULER_H
#define CLEF_SCHEDULER_H

#include <stdint.h>
#include <sys/types.h>

#include "serve/queue.h"

typedef struct {
    uint32_t   slot;
    int64_t    tokens;
    void      *prep;      /* what prepare() made of the record */
    /* in a batch: tokens [offset, offset + len) of the record run; a
     * whole record is 0, tokens, last 1, parted 0 */
    int64_t    offset;
    int64_t    len;
    int        last;      /* its last part (or the whole record) */
    int        parted;    /* the record runs in parts */
} clef_sched_item;

typedef struct {
    clef_sched_item  *items;
    int               n;
    int               cap;
    int64_t           tokens;     /* of the records and parts it runs */

    /* chunked prefill: the record this batch's executor runs in parts,
     * kept here from one part to the next */
    clef_sched_item   part;
    int64_t           part_done;  /* its tokens that ran */
    int               part_active;
    int               part_owed;  /* a batch of short records ran since
                                     its last part: the part goes next */
} clef_sched_batch;

/* Prepares a taken record.  Returns 0 with it->tokens and it->prep set,
 * -1 when it answered the record itself (an error written, completed,
 * owner woken), or 1 when it handed the record to someone who will push
 * it into the ready FIFO or answer it later (the engine's media workers:
 * serve/media_workers.h). */
typedef int  (*clef_sched_prepare_fn)(void *ctx, uint32_t slot,
    clef_sched_item *it);
/* Frees what prepare() made. */
typedef void (*clef_sched_drop_fn)(void *ctx, clef_sched_item *it);
/* Wakes the owners of records answered on the way. */
typedef void (*clef_sched_wake_fn)(void *ctx, const clef_wake_note *notes,
    int n);

typedef struct {
    clef_queue             *q;
    uint32_t                gen;
    int64_t                 max_batch_tokens;
    int                     max_records;
    int64_t                 chunk_tokens;   /* 0: records run whole; else
                                               a multiple of the backend's
                                               CLEF_PART_ALIGN */
    int                     ready_batches;  /* batches kept ready: one
                                               per executor (0 means 1) */
    clef_sched_prepare_fn   prepare;
    clef_sched_drop_fn      drop;
    clef_sched_wake_fn      wake;
    void                   *ctx;

    /* the ready FIFO: a ring of prepared records */
    clef_sched_item        *ready;
    int                     ready_head;
    int                     ready_n;
    int                     ready_cap;
    int64_t                 ready_tokens;   /* of the records that run
                                               whole */
} clef_sched;

/* The ready FIFO holds up to cap records (at least max_records). */
int  clef_sched_init(clef_sched *s, int cap);
/* Drops every ready record (drop()), then frees the FIFO. */
void clef_sched_free(clef_sched *s);

int  clef_sched_batch_init(clef_sched_batch *b, int cap);
void clef_sched_batch_free(clef_sched_batch *b);

/* 1 when a record of `tokens` may join batch b under the budget; always 1
 * for an empty batch. */
int  clef_sched_fits(const clef_sched_batch *b, int64_t tokens,
    int64_t max_batch_tokens, int max_records);

/* ---- the preparing thread ------------------------------------------------ */

/* 1 when ready_batches full batches are ready (their tokens or records),
 * or the FIFO has no room: take nothing more for now.  Never 1 for an
 * empty FIFO. */
int  clef_sched_ready_full(const clef_sched *s);

enum {
    CLEF_SCHED_EMPTY = 0,       /* nothing queued for this generation */
    CLEF_SCHED_PREPARED,        /* *it is prepared: push it */
    CLEF_SCHED_ANSWERED,        /* taken and answered by prepare() */
    CLEF_SCHED_DEFERRED,        /* taken and handed on by prepare() */
    CLEF_SCHED_OTHER_GEN        /* the head is a newer configuration's */
};

/* Takes the oldest queued record and prepares it.  Never blocks beyond
 * prepare(). */
int  clef_sched_take(clef_sched *s, clef_sched_item *it);

/* Appends a prepared record to the ready FIFO, which has room for it: its
 * capacity is at least the records that can exist at once (the engine
 * makes it the queue's slot count, as records prepared beside the
 * scheduler arrive whenever they are ready). */
void clef_sched_ready_push(clef_sched *s, const clef_sched_item *it);

/* ---- the executor -------------------------------------------------------- */

/* Moves records from the head of the ready FIFO into the empty batch b
 * while they fit; returns the records moved (>= 1 unless the FIFO is
 * empty).  With chunked prefill, the rules a-c above: the records and
 * the part moved (>= 1 unless the FIFO is empty and b runs no record in
 * parts). */
int  clef_sched_next_batch(clef_sched *s, clef_sched_batch *b);

/* Sets chunk_tokens (0: off), as a reload may (the ready records weigh
 * anew). */
void clef_sched_set_chunk(clef_sched *s, int64_t chunk_tokens);

/* 1 when b's executor has work without the FIFO: a record in parts. */
int  clef_sched_has_part(const clef_sched_batch *b);

/* Removes cancelled and expired records from b before it runs: cancelled
 * ones are freed, expired ones answered 504 (a record in parts only
 * before its first part).  Returns records left. */
int  clef_sched_prune(clef_sched *s, clef_sched_batch *b, int64_t now_ns);

/* After b ran (ran 1; the records it finished answered) or failed (ran 0;
 * every record of it answered with the error): drops what its records
 * made, but for a record in parts whose part ran and that has parts left:
 * it stays in b for its next part. */
void clef_sched_batch_end(clef_sched *s, clef_sched_batch *b, int ran);

/* Drops every record of b, its record in parts too (drop() then clear); b
 * stays allocated. */
void clef_sched_batch_clear(clef_sched *s, clef_sched_batch *b);

/* Answers every ready record with status and message (an engine that
 * stops). */
void clef_sched_fail_ready(clef_sched *s, int status, const char *message);

#endif
