/*
 * The engine process (docs/architecture.md §1), plain C.
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
#include "serve/engine_conf.h"
#include "serve/queue.h"

/* Runs an engine in the calling process until it has drained.  restart:
 * this start follows a crash (the queue stays RESTARTING until ready). */
int  clef_engine_run(clef_queue *q, const clef_engine_conf *conf, int restart);

#endif
