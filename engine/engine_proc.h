/*
 * The engine process and its keeper (DESIGN.md §2), plain C.
 *
 * The nginx module forks the keeper from the master; the keeper forks the
 * engine and starts it again when it dies.  The keeper never loads a model
 * and never touches CUDA, so restarting after a GPU fault is cheap.
 *
 *   master --(control pipe)--> keeper --(fork, PDEATHSIG)--> engine
 *
 * The keeper lives as long as the write end of its control pipe is open in
 * the master: end of file (a reload with another model configuration,
 * nginx stop or quit, or the master's death) makes it drain the engine and
 * exit.  A drained engine finishes the records it took and every queued
 * record of its generation, then exits.
 *
 * The engine:
 *   - waits until its predecessor (an engine of an older configuration)
 *     has exited, so that two engines never hold the weights at once;
 *   - claims the queue (pid, generation, epoch in shared memory), loads
 *     the model, opens the backend, reports progress through log();
 *   - prepares the next batch (parse, tokenize, encode) in one thread while
 *     the previous batch runs in another;
 *   - writes logits into each record's slot and wakes its owner worker.
 */
#ifndef CLEF_ENGINE_PROC_H
#define CLEF_ENGINE_PROC_H

#include <stdint.h>
#include <sys/types.h>

#include "queue.h"

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
    const char  *backend;            /* "cpu" or "cuda" */
    int          threads;            /* 0: one per core */
    int          device;             /* CUDA device ordinal */
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

/* Runs the keeper in the calling (freshly forked) process until the control
 * pipe reaches end of file.  Returns the process exit status. */
int  clef_keeper_run(clef_queue *q, const clef_engine_conf *conf,
    int control_fd);

/* Runs an engine in the calling process until it has drained.  restart:
 * this start follows a crash (the queue stays RESTARTING until ready). */
int  clef_engine_run(clef_queue *q, const clef_engine_conf *conf, int restart);

#endif
