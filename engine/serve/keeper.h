/*
 * The keeper: a small process, forked from the nginx master, that forks
 * the engine (engine.h) and starts it again when it dies.  It never loads
 * a model and never touches CUDA, so restarting after a GPU fault is cheap.
 *
 *   master --(control pipe)--> keeper --(fork, PDEATHSIG)--> engine
 *
 * The keeper lives as long as the write end of its control pipe is open in
 * the master: end of file (a reload with another model configuration,
 * nginx stop or quit, or the master's death) makes it drain the engine:
 * SIGTERM, then SIGKILL once drain_timeout_ms has passed, whatever else
 * happens meanwhile; then it exits.
 *
 * Its watchdog kills an engine that owes answers but has made no progress
 * for the queue header's watchdog_ms (set by the master on every load, so
 * a reload changes it; 0 turns the watchdog off): a deadlock, a hung
 * device, SIGSTOP.  The restart
 * that follows fails the waiting records with 503 and Retry-After.  While
 * the keeper waits it also frees records whose owner worker died.
 */
#ifndef CLEF_KEEPER_H
#define CLEF_KEEPER_H

#include "serve/engine_conf.h"
#include "serve/queue.h"

/* Runs the keeper in the calling (freshly forked) process until the control
 * pipe reaches end of file.  Returns the process exit status. */
int  clef_keeper_run(clef_queue *q, const clef_engine_conf *conf,
    int control_fd);

#endif
