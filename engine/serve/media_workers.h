/*
 * The engine's media-preparing threads: records with media are prepared
 * here, beside the scheduler, so that a record never waits for another
 * record's media.
 *
 *   preparing thread   takes every record from the shared queue; a
 *                      text-only record is encoded there and then (a few
 *                      ms), a record with media is handed over here
 *   media workers      N threads, each with a decode lane of its own
 *                      (media/decoder_lane.h): a worker takes the oldest
 *                      record handed over, decodes and processes its media
 *                      and encodes it, and hands it to the ready FIFO
 *                      itself: it enters the next batch as soon as its own
 *                      media are ready
 *
 * Why threads and lanes rather than one queue of items: a record's items
 * are processed together (an audio clip's features depend on the record's
 * other clips, a video's sound joins them), and a lane decodes one item at
 * a time; N lanes decode N records at once, and a text-only record, which
 * needs none, is never behind any of them.  (Before, one preparing thread
 * did all of it: a text request sent behind two 30-second 1080p videos
 * waited 12.9 s instead of 8 ms.)
 *
 * An idle worker watches its lane: a decode process that dies while idle
 * is noticed at once, reaped, logged and restarted with back-off (its
 * lane does the work, decoder_lane.h).  A worker takes no new record while
 * the engine says it is backlogged (prepared records waiting for the
 * executors beyond a bound): decoded media are large, and records still
 * queued keep their cancellations and deadlines.
 */
#ifndef CLEF_MEDIA_WORKERS_H
#define CLEF_MEDIA_WORKERS_H

#include <stdint.h>

#include "base/error.h"
#include "media/decoder_lane.h"
#include "serve/scheduler.h"

typedef struct {
    /* prepares the record of slot with its media through lane: 0 with it
     * filled, -1 when it answered the record itself (a refusal, a
     * cancellation) */
    int   (*prepare)(void *ctx, uint32_t slot, clef_decoder_lane *lane,
                     clef_sched_item *it);
    /* a record prepared: into the ready FIFO */
    void  (*ready)(void *ctx, const clef_sched_item *it);
    /* 1 while prepared records wait beyond the engine's bound */
    int   (*backlogged)(void *ctx);
    void   *ctx;
    /* what the lanes report (logs, /status) */
    clef_decoder_events  events;
} clef_media_workers_conf;

typedef struct clef_media_workers  clef_media_workers;

/* The default worker count for ncpu cores: one per two cores, at least 2
 * (so that one long video never holds every lane), at most 8. */
int  clef_media_workers_default(int ncpu);

/* Starts n workers (their lanes start their processes at their first
 * record); conf is copied. */
clef_media_workers *clef_media_workers_start(int n,
    const clef_media_workers_conf *conf, clef_error *err);

/* Hands the record of slot over (never blocks). */
int  clef_media_workers_push(clef_media_workers *w, uint32_t slot);

/* Records handed over and not yet prepared or answered. */
int  clef_media_workers_pending(clef_media_workers *w);

/* Ends the workers (each finishes the record it prepares; records still
 * handed over are left to the caller: call it once pending is 0) and
 * their decode processes. */
void clef_media_workers_stop(clef_media_workers *w);

#endif
