/*
 * Token-budget batching, in the manner of Hugging Face
 * text-embeddings-inference: records leave the shared queue in FIFO order
 * and are packed into one batch until the next one would push the batch
 * past max_batch_tokens.  A record longer than the budget runs alone: the
 * budget never refuses a record, it only decides where a batch ends.
 * Cancelled records are skipped when taken (clef_queue_take) and again
 * just before a batch runs (clef_sched_prune).
 *
 * The scheduler does not know how a record is prepared: the engine passes
 * a prepare() that parses and encodes it (the tests pass a simpler one),
 * so one batch can be prepared while the previous one runs.
 */
#ifndef CLEF_SCHEDULER_H
#define CLEF_SCHEDULER_H

#include <stdint.h>
#include <sys/types.h>

#include "queue.h"

typedef struct {
    uint32_t   slot;
    int64_t    tokens;
    void      *prep;      /* what prepare() made of the record */
} clef_sched_item;

typedef struct {
    clef_sched_item  *items;
    int               n;
    int               cap;
    int64_t           tokens;
} clef_sched_batch;

/* Prepares a taken record.  Returns 0 with it->tokens and it->prep set, or
 * -1 when it answered the record itself (an error written, completed,
 * owner woken). */
typedef int  (*clef_sched_prepare_fn)(void *ctx, uint32_t slot,
    clef_sched_item *it);
/* Frees what prepare() made. */
typedef void (*clef_sched_drop_fn)(void *ctx, clef_sched_item *it);
/* Wakes the owners of records answered on the way (pids are distinct). */
typedef void (*clef_sched_wake_fn)(void *ctx, const pid_t *pids, int n);

typedef struct {
    clef_queue             *q;
    uint32_t                gen;
    int64_t                 max_batch_tokens;
    int                     max_records;
    clef_sched_prepare_fn   prepare;
    clef_sched_drop_fn      drop;
    clef_sched_wake_fn      wake;
    void                   *ctx;
    clef_sched_item         carry;      /* prepared, did not fit last time */
    int                     has_carry;
} clef_sched;

int  clef_sched_batch_init(clef_sched_batch *b, int cap);
void clef_sched_batch_free(clef_sched_batch *b);

/* 1 when a record of `tokens` may join batch b under the budget. */
int  clef_sched_fits(const clef_sched_batch *b, int64_t tokens,
    int64_t max_batch_tokens, int max_records);

/* 1 when b takes no more records (budget met, or a record is waiting for
 * the next batch). */
int  clef_sched_full(const clef_sched *s, const clef_sched_batch *b);

/* Moves records from the queue into b while they fit.  Never blocks.
 * Returns the records added; *other_gen = 1 when the queue's head belongs
 * to a newer configuration (a draining engine stops there). */
int  clef_sched_fill(clef_sched *s, clef_sched_batch *b, int *other_gen);

/* Removes cancelled and expired records from b before it runs: cancelled
 * ones are freed, expired ones answered 504.  Returns records left. */
int  clef_sched_prune(clef_sched *s, clef_sched_batch *b, int64_t now_ns);

/* Drops every record of b (drop() then clear); b stays allocated. */
void clef_sched_batch_clear(clef_sched *s, clef_sched_batch *b);

/* 1 when a prepared record is waiting for the next batch. */
int  clef_sched_has_carry(const clef_sched *s);
/* Answers the carried record, if any, with status and message. */
void clef_sched_drop_carry(clef_sched *s, int status, const char *message);

#endif
