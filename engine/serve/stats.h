/*
 * The counters a zone keeps for clef_status (Prometheus), updated with
 * atomics by workers and the engine, and the bounds of its histograms.
 */
#ifndef CLEF_STATS_H
#define CLEF_STATS_H

#include <stdatomic.h>
#include <stdint.h>

/* replicas with counters of their own (as many as devices an engine takes) */
#define CLEF_STATS_REPLICAS  64

/* Statuses counted per response, in clef_queue_stats.responses order. */
#define CLEF_STATUS_SLOTS  17
extern const int clef_stats_statuses[CLEF_STATUS_SLOTS];  /* 0 = other */
int clef_stats_status_index(int status);

/* Records per batch histogram bounds (le), the last bucket is +Inf. */
#define CLEF_HIST_BATCH  9
extern const int clef_hist_batch_le[CLEF_HIST_BATCH - 1];

/* Latency histogram bounds in milliseconds (le), the last bucket is +Inf. */
#define CLEF_HIST_LAT  15
extern const double clef_hist_lat_le_ms[CLEF_HIST_LAT - 1];

typedef struct {
    _Atomic uint64_t  submitted;        /* records queued */
    _Atomic uint64_t  rejected_full;    /* 429: queue or data area full */
    _Atomic uint64_t  cancelled;        /* client gone or deadline passed */
    _Atomic uint64_t  orphaned;         /* owner worker died */
    _Atomic uint64_t  failed;           /* failed by an engine crash or a
                                           failed model load */
    _Atomic uint64_t  batches;
    _Atomic uint64_t  batch_records;    /* sum of records over batches */
    _Atomic uint64_t  batch_tokens;
    _Atomic uint64_t  batch_records_max;
    _Atomic uint64_t  batch_hist[CLEF_HIST_BATCH];
    _Atomic uint64_t  busy_ns;          /* time spent in forward() */
    _Atomic uint64_t  last_batch_tokens;
    _Atomic uint64_t  last_batch_ns;
    _Atomic uint64_t  encode_errors;    /* refused by the encoder (400) */
    _Atomic uint64_t  lat_hist[CLEF_HIST_LAT];   /* end to end, in workers */
    _Atomic uint64_t  lat_count;
    _Atomic uint64_t  lat_sum_us;
    _Atomic uint64_t  queue_wait_us;    /* submit -> taken, over answered */
    _Atomic uint64_t  engine_us;        /* taken -> done, over answered */
    _Atomic uint64_t  responses[CLEF_STATUS_SLOTS];
    _Atomic uint64_t  engine_starts;
    _Atomic uint64_t  engine_restarts;  /* starts after a crash */
    _Atomic uint64_t  weight_loads;
    _Atomic uint64_t  lock_recoveries;  /* EOWNERDEAD seen */
    _Atomic uint64_t  engine_stalls;    /* engines the watchdog killed */
    /* per replica (engine executor), the first n_replicas of the zone */
    _Atomic uint64_t  replica_batches[CLEF_STATS_REPLICAS];
    _Atomic uint64_t  replica_busy_ns[CLEF_STATS_REPLICAS];
    _Atomic uint64_t  replica_faults[CLEF_STATS_REPLICAS];  /* reopened */
    /* the engine's decode processes (media/decoder_lane.h) */
    _Atomic uint64_t  decoder_starts;   /* first starts and restarts */
    _Atomic uint64_t  decoder_restarts; /* starts after a death */
    _Atomic uint64_t  decoder_deaths;   /* a decode process, or a child of
                                           one, killed or dead by itself
                                           (not a refusal of a file) */
} clef_queue_stats;

/* clef_status_read() copies the counters one by one as 64-bit words */
_Static_assert(sizeof(clef_queue_stats) % sizeof(uint64_t) == 0,
               "clef_queue_stats holds _Atomic uint64_t fields only");

/* A batch ran: records, tokens, forward time. */
void clef_stats_batch(clef_queue_stats *st, uint32_t records, uint64_t tokens,
    uint64_t ns);
/* A clef_systemone response went out (latency_ns < 0: not measured). */
void clef_stats_response(clef_queue_stats *st, int status, int64_t latency_ns);

#endif
