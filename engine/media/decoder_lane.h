/*
 * A decode lane: one decode process (build/clef-decoder --serve) and what
 * it takes to keep it alive (decoder.h says why there is such a process).
 * The engine runs several lanes, one per media-preparing thread
 * (serve/media_workers.h), so that one request's slow video never holds up
 * another's; the CLI and the tests use one default lane.
 *
 * Supervision.  A lane's process is started at its first item (FFmpeg's
 * ~150 libraries cost ~0.1 s that an engine start must not pay) and from
 * then on is watched: its pidfd tells at once when it dies, busy or idle;
 * it is reaped, the death is logged with its status and counted
 * (events->died, the engine's /status), and it is started again, at once
 * the first time, then with a back-off that doubles to 30 s while it keeps
 * dying within 10 s of its start.  An item that finds its lane down starts
 * it whatever the back-off says: an item is a reason to try.
 *
 * Its environment is fixed here, not inherited: OpenBLAS and OpenMP,
 * loaded into it by libavfilter's dependencies, start no threads of their
 * own (OPENBLAS_NUM_THREADS=1, OMP_NUM_THREADS=1), whatever nginx's
 * environment says; only LD_LIBRARY_PATH passes through (where its
 * libraries are).
 *
 * Its stderr (and its children's) is a pipe the lane reads: lines go to
 * events->log, prefixed with the lane and the item it decodes, at most
 * CLEF_DECODER_LOG_RATE lines a second (a burst of twice that), longer
 * lines cut; what is dropped is counted and said once the flood ends.  A
 * decoder can no longer fill nginx's error log.
 */
#ifndef CLEF_DECODER_LANE_H
#define CLEF_DECODER_LANE_H

#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/error.h"

#define CLEF_DECODER_LOG_RATE   10.0     /* stderr lines a second */
#define CLEF_DECODER_LOG_LINE   400      /* bytes of a line kept */
#define CLEF_DECODER_BACKOFF    30.0     /* longest wait between restarts */

/* How much a lane's line matters (the engine's log levels agree) */
enum {
    CLEF_DECODER_ERR = 0,
    CLEF_DECODER_WARN,
    CLEF_DECODER_NOTICE
};

/* What a lane reports; every callback may be NULL. */
typedef struct {
    /* a line for the operator, at a CLEF_DECODER_* level */
    void  (*log)(void *ctx, int level, const char *line);
    /* the lane's process started (restart: not its first start) */
    void  (*started)(void *ctx, int lane, int restart);
    /* the lane's process died by itself or was killed from outside */
    void  (*died)(void *ctx, int lane, const char *cause);
    void   *ctx;
} clef_decoder_events;

typedef struct clef_decoder_lane  clef_decoder_lane;

struct clef_decoder_lane {
    pthread_mutex_t             mu;         /* one item at a time */
    int                         index;
    const clef_decoder_events  *ev;

    pid_t                       pid;        /* --serve, -1: none */
    int                         ctl;        /* its control socket */
    int                         pidfd;
    int                         errfd;      /* its stderr, read end */

    /* supervision */
    int                         started;    /* ever started */
    double                      up_since;
    double                      restart_at; /* 0: no restart pending */
    double                      backoff;

    /* stderr relay */
    char                        item[80];   /* what it decodes now */
    char                        line[CLEF_DECODER_LOG_LINE + 1];
    size_t                      line_len;
    int                         line_cut;
    double                      tokens, tokens_at;
    uint64_t                    dropped;
};

/* A lane without a process yet; events may be NULL (lines to stderr). */
clef_decoder_lane *clef_decoder_lane_new(int index,
    const clef_decoder_events *events);
/* Ends its process and frees it. */
void clef_decoder_lane_free(clef_decoder_lane *l);

/* The process's default lane: build/clef and the tests. */
clef_decoder_lane *clef_decoder_lane_default(void);

/* Starts its process if none runs (the lock held).  -1 with err: 500
 * media_unsupported when this installation has none (FFMPEG=no), 500
 * internal_error when it cannot be run or is of another build. */
int  clef_decoder_lane_up(clef_decoder_lane *l, clef_error *err);
/* Ends its process (the lock held): killed, reaped, nothing logged. */
void clef_decoder_lane_down(clef_decoder_lane *l);

/* What to poll while the lane is idle (its pidfd and stderr; none before
 * its first start): fills p[0..2), returns how many. */
int  clef_decoder_lane_pollfds(clef_decoder_lane *l, struct pollfd *p);
/* After a poll of those or at clef_decoder_lane_wake_at(): relays its
 * stderr, notices a death (reaped, logged, counted), restarts it when the
 * back-off allows.  Takes the lock itself. */
void clef_decoder_lane_tend(clef_decoder_lane *l);
/* When tend() must run next for a restart; 0: no restart pending. */
double clef_decoder_lane_wake_at(clef_decoder_lane *l);

/* The lock held, while an item runs: relays what its stderr has now
 * (the item's lines are named after l->item). */
void clef_decoder_lane_relay(clef_decoder_lane *l);
/* The same at the end of an item: what was dropped of its lines is said
 * now, not at the next line. */
void clef_decoder_lane_relay_end(clef_decoder_lane *l);
/* The lock held: 1 when its process has ended (reaped, logged, counted as
 * a death with why the item says). */
int  clef_decoder_lane_reap(clef_decoder_lane *l, const char *during);

#endif
