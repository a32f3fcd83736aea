/*
 * The shared-memory record queue between nginx workers and the engine
 * process (docs/architecture.md §1).  Plain C: the nginx module hands it the memory
 * of its shared zone; the engine process, forked from the nginx master,
 * sees the same mapping at the same address.
 *
 * One zone holds:
 *   - a header: ownership of the engine (keeper pid, engine pid,
 *     configuration generation, start epoch, state), the futex the engine
 *     sleeps on, and the counters clef_status reports;
 *   - nslots record slots, a FIFO ring of slot indices and a free stack;
 *   - a data area where each record owns one block: the request body as
 *     received, then a clef_error, then one float per option for the
 *     logits the engine writes back.
 *
 * Ownership of a slot moves with its state:
 *   FILLING   the worker copies the body in (not yet in the ring)
 *   QUEUED    in the ring, waiting for the engine
 *   TAKEN     the engine parses, encodes and runs it
 *   DONE      results written (status 0: logits; otherwise an error); the
 *             worker reads them, then releases the slot
 * CANCELLED is a flag added to QUEUED or TAKEN by the worker (client gone,
 * deadline passed): the engine then frees the slot instead of answering.
 *
 * Every structural change happens under one robust process-shared mutex, so
 * a process killed while holding it (kill -9 of a worker) does not wedge
 * the others: the next locker sees EOWNERDEAD and carries on.  Critical
 * sections are a few hundred instructions; bodies are copied outside.
 */
#ifndef CLEF_QUEUE_H
#define CLEF_QUEUE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/clock.h"
#include "base/error.h"
#include "serve/stats.h"
#include "serve/wake.h"

#define CLEF_QUEUE_VERSION   7   /* 4: clef_error has a code; 5: the
                                    records' plans are CLP3 (plan.h); 6:
                                    audio is media kind 2, videos 3; 7:
                                    the decode processes' counters and
                                    chunk_tokens */
#define CLEF_QUEUE_MIN_SIZE  (1024 * 1024)

enum {
    CLEF_SLOT_FREE = 0,
    CLEF_SLOT_FILLING,
    CLEF_SLOT_QUEUED,
    CLEF_SLOT_TAKEN,
    CLEF_SLOT_DONE,
    CLEF_SLOT_STATE_MASK = 0xff,
    CLEF_SLOT_CANCELLED = 0x100
};

/* What the engine owning the queue is doing (clef_queue_hdr.state). */
enum {
    CLEF_ENGINE_NONE = 0,      /* no engine has started yet */
    CLEF_ENGINE_LOADING,       /* first load: requests queue and wait */
    CLEF_ENGINE_READY,
    CLEF_ENGINE_DRAINING,      /* finishing what it took, then exits */
    CLEF_ENGINE_RESTARTING,    /* crashed; the keeper starts a new one: 503 */
    CLEF_ENGINE_FAILED,        /* the model could not be loaded: 503 */
    CLEF_ENGINE_STOPPED,       /* the keeper is gone: 503 */
    CLEF_ENGINE_STALLED        /* queued work, no progress for the
                                  watchdog's time: being killed, 503 */
};

const char *clef_engine_state_name(uint32_t state);

typedef struct {
    _Atomic uint32_t  state;        /* CLEF_SLOT_* | CLEF_SLOT_CANCELLED */
    uint32_t          seq;          /* bumped on every allocation */
    int32_t           owner_pid;    /* the worker waiting for it */
    uint32_t          gen;          /* configuration generation it is for */
    uint64_t          block;        /* offset of its data block */
    uint32_t          body_len;
    uint32_t          n_options;    /* logits the worker expects */
    int32_t           max_length;   /* encoder limit for this record */
    int32_t           truncate;     /* clef_truncate */
    int64_t           submit_ns;    /* CLOCK_MONOTONIC */
    int64_t           deadline_ns;
    int64_t           taken_ns;
    int64_t           done_ns;
    /* results, written by the engine before the state becomes DONE */
    int32_t           status;       /* 0: logits valid; else the HTTP status */
    int32_t           n_tokens;
    int32_t           state_tokens;
    int32_t           state_kept;
    uint32_t          batch_records;
    _Atomic uint32_t  running;      /* its forward has started: the
                                       deadline no longer applies */
} clef_slot;

typedef struct {
    uint64_t          magic;
    uint32_t          version;
    uint32_t          nslots;
    uint64_t          zone_id;      /* random: names the wake sockets */
    uint64_t          size;
    pthread_mutex_t   lock;

    /* the engine sleeps on futex; anyone who gives it work bumps it */
    _Atomic uint32_t  futex;
    _Atomic uint32_t  waiting;

    /* ownership: who serves this queue now */
    _Atomic int32_t   keeper_pid;
    _Atomic int32_t   engine_pid;
    _Atomic uint32_t  gen;          /* configuration generation it serves */
    _Atomic uint32_t  epoch;        /* bumped at every engine start */
    _Atomic uint32_t  state;        /* CLEF_ENGINE_* */
    _Atomic uint32_t  want_gen;     /* newest generation the master started */
    _Atomic int64_t   max_batch_tokens; /* set by the master on every
                                           (re)load; read per batch */
    _Atomic int64_t   chunk_tokens;     /* the same; 0: off */
    char              message[256]; /* last progress or error line */

    /* the watchdog: the engine bumps progress whenever a record or batch
     * moves (and per layer inside a forward); the keeper publishes how
     * long work has waited without any progress */
    _Atomic uint64_t  progress;
    _Atomic int64_t   stalled_ms;
    _Atomic int64_t   watchdog_ms;  /* set by the master; 0: off */
    _Atomic uint64_t  wake_lost;    /* wake-ups a worker could not take */
    _Atomic uint32_t  n_replicas;   /* executors of the engine */
    _Atomic uint64_t  replicas_up;  /* bit r: replica r serves */
    _Atomic uint32_t  n_decoders;   /* the engine's decode lanes */
    _Atomic int64_t   decoder_death_ms;  /* when the last one died (Unix
                                            time, ms; 0: never) */
    char              decoder_cause[192];  /* and how (under lock) */

    /* under lock */
    uint32_t          q_head;
    uint32_t          q_count;
    uint32_t          free_count;
    uint32_t          pad;
    uint64_t          data_used;
    uint64_t          rover;

    /* layout, as offsets from the header */
    uint64_t          ring_off;
    uint64_t          free_off;
    uint64_t          slots_off;
    uint64_t          data_off;
    uint64_t          data_size;

    clef_queue_stats  stats;
} clef_queue_hdr;

typedef struct {
    clef_queue_hdr  *h;
    uint32_t        *ring;
    uint32_t        *free;
    clef_slot       *slots;
    unsigned char   *data;
} clef_queue;

/* Lays a fresh queue out over mem[0..size) (nslots 0 = from the size). */
int  clef_queue_init(clef_queue *q, void *mem, size_t size, uint32_t nslots,
    uint64_t zone_id, clef_error *err);
/* Attaches to a queue laid out by clef_queue_init (-1: not one). */
int  clef_queue_attach(clef_queue *q, void *mem);
/* Slots a zone of this size gets by default. */
uint32_t clef_queue_default_slots(size_t size);


/* ---- worker side ------------------------------------------------------ */

typedef struct {
    const void  *body;
    size_t       body_len;
    uint32_t     n_options;
    int32_t      max_length;
    int32_t      truncate;
    uint32_t     gen;
    pid_t        owner_pid;
    int64_t      deadline_ns;
    uint32_t     max_queue;     /* refuse when this many are queued */
} clef_submission;

enum {
    CLEF_Q_OK = 0,
    CLEF_Q_FULL,                /* max_queue records wait already */
    CLEF_Q_NOMEM,               /* no slot or no room in the data area */
    CLEF_Q_TOO_BIG              /* could never fit in this zone */
};

/* Allocates a slot, copies the body in (outside the lock), queues it and
 * wakes the engine.  *slot and *seq name the record from then on. */
int  clef_queue_submit(clef_queue *q, const clef_submission *s, uint32_t *slot,
    uint32_t *seq);

/* 1 when the record is DONE (results readable), 0 while it waits, -1 when
 * slot/seq no longer name a record of ours. */
int  clef_queue_done(const clef_queue *q, uint32_t slot, uint32_t seq);
const clef_slot  *clef_queue_slot(const clef_queue *q, uint32_t slot);
const float      *clef_queue_logits(const clef_queue *q, uint32_t slot);
const clef_error *clef_queue_error(const clef_queue *q, uint32_t slot);

/* The worker is done with a DONE record: frees it. */
void clef_queue_release(clef_queue *q, uint32_t slot, uint32_t seq);
/* The worker gives up on a record: frees it, or flags it for the engine to
 * free.  Returns 1 when a pending record was cancelled, 0 otherwise. */
int  clef_queue_cancel(clef_queue *q, uint32_t slot, uint32_t seq);

void clef_queue_wake_engine(clef_queue *q);
uint32_t clef_queue_depth(clef_queue *q);

typedef struct {
    uint32_t  slots_used;
    uint32_t  queued;
    uint64_t  data_used;
    uint64_t  data_size;
    uint32_t  nslots;
} clef_queue_usage;

void clef_queue_get_usage(clef_queue *q, clef_queue_usage *u);

/* ---- engine side ------------------------------------------------------ */

enum {
    CLEF_TAKE_EMPTY = 0,
    CLEF_TAKE_OK,
    CLEF_TAKE_OTHER_GEN         /* the head belongs to a newer configuration */
};

/* Pops the oldest record of generation gen: frees cancelled ones and those
 * whose owner died on the way; fails older generations with 503 (at most
 * max_wake of them per call, noted in wake[], *n_wake).  Never blocks
 * beyond the lock. */
int  clef_queue_take(clef_queue *q, uint32_t gen, uint32_t *slot,
    clef_wake_note *wake, int *n_wake, int max_wake);
const char *clef_queue_body(const clef_queue *q, uint32_t slot);
clef_slot  *clef_queue_slot_w(clef_queue *q, uint32_t slot);
float      *clef_queue_logits_w(clef_queue *q, uint32_t slot);
clef_error *clef_queue_error_w(clef_queue *q, uint32_t slot);
int  clef_queue_is_cancelled(const clef_queue *q, uint32_t slot);

/* Marks a TAKEN record DONE (results written before).  Returns the note to
 * wake its owner with; its pid is 0 when it had been cancelled and was
 * freed instead. */
clef_wake_note clef_queue_complete(clef_queue *q, uint32_t slot);

/* The record's forward starts now: its deadline no longer applies. */
void clef_queue_mark_running(clef_queue *q, uint32_t slot);

/* The engine made progress (a record or batch moved, a layer ran). */
void clef_queue_progress(clef_queue *q);
/* Records the engine owes an answer: queued or taken, not cancelled. */
uint32_t clef_queue_engine_work(clef_queue *q);

/* Sleeps until someone bumps the futex from `seen` or timeout_ms passes. */
void clef_queue_engine_wait(clef_queue *q, uint32_t seen, int timeout_ms);
uint32_t clef_queue_futex(clef_queue *q);

/* Answers every QUEUED or TAKEN record (of any generation when gen is 0)
 * with status and message, freeing cancelled ones; notes up to max_wake
 * owners to wake (beyond, it counts wake_lost: the workers rescan).  Used
 * by the keeper when the engine died.  Returns records failed. */
int  clef_queue_fail_all(clef_queue *q, uint32_t gen, int status,
    const char *type, const char *message, clef_wake_note *wake,
    int *n_wake, int max_wake);

/* Frees records whose owner process is gone (kill -9 of a worker). */
int  clef_queue_reap_orphans(clef_queue *q);

void clef_queue_set_message(clef_queue *q, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void clef_queue_get_message(clef_queue *q, char *buf, size_t size);

/* A decode process or child died: counted, its cause kept for /status. */
void clef_queue_decoder_died(clef_queue *q, const char *cause);
void clef_queue_get_decoder_cause(clef_queue *q, char *buf, size_t size);

#endif
