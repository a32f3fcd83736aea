/*
 * What the nginx master hands the keeper and the engine (engine.h): the
 * model, backend and batching settings, and where their log lines go.
 * Part of the client library: the module fills it in the master, the
 * keeper reads it, and the engine receives it across the engine library's
 * entry (engine_library.h).
 */
#ifndef CLEF_ENGINE_CONF_H
#define CLEF_ENGINE_CONF_H

#include <stdint.h>
#include <sys/types.h>

#include "backend/registry.h"

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
    const char  *model_path;         /* a release directory or a GGUF */
    const char  *model_mmproj;       /* a GGUF's vision tower, or NULL */
    const char  *backend;            /* a name of the backend registry */
    int          threads;            /* 0: one per core */
    clef_precision precision;        /* how the backend multiplies */
    int          device;             /* the device when n_devices is 0 */
    int          n_devices;          /* devices=: all of them, in order */
    int          devices[CLEF_MAX_DEVICES];
    int          tp;                 /* tensor-parallel size: devices per
                                        replica; n_devices / tp replicas,
                                        each with an executor thread */
    int64_t      gpu_memory;         /* gpu_memory=: bytes the backend may
                                        use on each device; 0: what it
                                        has free (device_plan.h) */
    int          max_length;         /* encoder max_length of the model */
    int          truncate;           /* clef_truncate */
    int64_t      max_batch_tokens;
    int          max_batch_records;
    int          decoders;           /* media workers and their decode
                                        processes; 0: from the cores
                                        (serve/media_workers.h) */
    int64_t      chunk_tokens;       /* chunked prefill: records longer
                                        run in parts of this many tokens;
                                        0: off (scheduler.h) */
    int64_t      drain_timeout_ms;   /* keeper: SIGKILL after this */
    uint32_t     gen;                /* configuration generation served */
    pid_t        predecessor;        /* engine to wait for; 0 = none */
    void       (*log)(int level, const char *msg);
    void       (*set_title)(const char *title);   /* ps name; may be NULL */
} clef_engine_conf;

/* Formats a line and hands it to conf->log (nothing when it is NULL). */
void clef_engine_log(const clef_engine_conf *conf, int level,
    const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
