/*
 * The engine's libraries out of nginx's processes (docs/architecture.md §1).
 *
 * Everything a worker needs (the request model, validation, the plan, the
 * zone client) is the client library, linked into the nginx module.  The
 * engine itself (tokenizing, media decoding, the scheduler, the backends
 * with OpenBLAS, the image codecs and later FFmpeg) is libclef_engine.so,
 * which the keeper's engine child dlopen()s right after it is forked: no
 * worker, no `nginx -t` and not the master ever maps it.
 *
 * Why dlopen and not an exec'd clef-engine binary: the queue is an nginx
 * shared zone, an anonymous shared mapping that a fork inherits and an
 * exec would lose; a reload that adopts the running keeper, the engine's
 * generation and its predecessor wait all stay as they are.  The library
 * is found beside the module's .so (`make install` puts it there), as the
 * engine then finds libclef_cuda.so beside itself.
 *
 * The library exports one table, checked against the module's own build
 * before its engine runs: a module and an engine library of two builds
 * disagree on the zone's layout, and the engine is refused with a message
 * saying so rather than run on it.
 */
#ifndef CLEF_ENGINE_LIBRARY_H
#define CLEF_ENGINE_LIBRARY_H

#include <stddef.h>
#include <stdint.h>

#include "serve/engine_conf.h"
#include "serve/queue.h"

#define CLEF_ENGINE_LIBRARY  "libclef_engine.so"
#define CLEF_ENGINE_SYMBOL   "clef_engine_library"

typedef struct {
    uint32_t  queue_version;     /* CLEF_QUEUE_VERSION */
    uint32_t  conf_size;         /* sizeof(clef_engine_conf) */
    uint32_t  error_size;        /* sizeof(clef_error) */
    uint32_t  queue_size;        /* sizeof(clef_queue) */
    /* clef_engine_run (engine.h) */
    int     (*run)(clef_queue *q, const clef_engine_conf *conf, int restart);
} clef_engine_library_t;

/* What this build expects of the library. */
#define CLEF_ENGINE_LIBRARY_INIT(run)                                         \
    { CLEF_QUEUE_VERSION, sizeof(clef_engine_conf), sizeof(clef_error),       \
      sizeof(clef_queue), (run) }

/* In the engine process: loads the library and checks it; NULL with why
 * filled when it is missing, does not load, or is of another build. */
const clef_engine_library_t *clef_engine_library_load(char *why, size_t size);

/* At configuration time, without loading it: 0 when the library is where
 * the engine will look first and readable; -1 with why filled (the path
 * and the fix). */
int clef_engine_library_check(char *why, size_t size);

#endif
