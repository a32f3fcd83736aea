/*
 * The engine process (DESIGN.md §2), plain C.
 *
 * The nginx module forks a keeper from the master (keeper.h); the keeper
 * forks the engine and starts it again when it dies.  The engine:
 *   - waits until its predecessor (an engine of an older configuration)
 *     has exited, so that two engines never hold the weights at once;
 *   - claims the queue (pid, generation, epoch in shared memory), loads
 *     the model, opens the backend, reports progress through log();
 *   - prepares records (tokenize, encode) one at a time in its main thread
 *     while an executor thread runs the previous batch (scheduler.h says
 *     why this always makes progress);
 *   - writes logits into each record's slot and wakes its owner worker;
 *   - bumps the queue's progress counter, which the keeper's watchdog
 *     reads.
 * A drained engine finishes the records it took and every queued record
 * of its generation, then exits.
 */
#ifndef CLEF_ENGINE_H
#define CLEF_ENGINE_H

#include <stdint.h>
#include <sys/types.h>

#include "backend/backend.h"
#include "serve/queue.h"

enum {
    CLEF_LOG_ERR = 0,
    CLEF_LOG_WARN,
    CLEF_LOG_NOTICE,
    CLEF_LOG_INFO
};

/* Exit codes of the engine process, read by the keeper. */
enum {
    CLEF_ENGINE_EXIT_OK = 0,        /* drained */
    CLEF_ENGINE_EXIT_FATAL = 3      /* the model or backend cannot open */
};

typedef struct {
    const char  *model_path;
    const char  *backend;            /* a name of the backend registry */
    int          threads;            /* 0: one per core */
    clef_precision precision;        /* how the backend multiplies */
    int          device;             /* the device when n_devices is 0 */
    int          n_devices;          /* devices=: all of them, in order */
    int          devices[CLEF_MAX_DEVICES];
    int          tp;                 /* tensor-parallel size: devices per
                                        replica; n_devices / tp replicas,
                                        each with an executor thread */
    int          max_length;         /* encoder max_length of the model */
    int          truncate;           /* clef_truncate */
    int64_t      max_batch_tokens;
    int          max_batch_records;
    int64_t      drain_timeout_ms;   /* keeper: SIGKILL after this */
    uint32_t     gen;                /* configuration generation served */
    pid_t        predecessor;        /* engine to wait for; 0 = none */
    void       (*log)(int level, const char *msg);
    void       (*set_title)(const char *title);   /* ps name; may be NULL */
} clef_engine_conf;

/* Runs an engine in the calling process until it has drained.  restart:
 * this start follows a crash (the queue stays RESTARTING until ready). */
int  clef_engine_run(clef_queue *q, const clef_engine_conf *conf, int restart);

/* Formats a line and hands it to conf->log (nothing when it is NULL). */
void clef_engine_log(const clef_engine_conf *conf, int level,
    const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
