/*
 * What the engine can compute with, as the configuration sees it: the
 * backends' names and capabilities, and the precisions.  Part of the
 * client library (an nginx worker and `nginx -t` read it): no backend code
 * is linked by it.  The ops themselves are clef_backend_find()'s, in the
 * engine (backend.h).  A new backend is one more row here and one loader
 * in backend.c.
 */
#ifndef CLEF_REGISTRY_H
#define CLEF_REGISTRY_H

#include <stddef.h>

#define CLEF_MAX_DEVICES  64      /* = CLEF_STATS_REPLICAS (stats.h) */

/* How a backend multiplies (the README's "precision"), chosen per model.
 * Weights stay bf16 in memory in both. */
typedef enum {
    CLEF_PRECISION_DEFAULT = 0,  /* the backend's own: fp32 on the CPU
                                    (exact), bf16 on CUDA */
    CLEF_PRECISION_FP32,         /* fp32 activations and sums: within 1e-5
                                    of the fp32 reference */
    CLEF_PRECISION_BF16          /* bf16 activations into the linear layers,
                                    fp32 sums: within 2e-2, same argmax */
} clef_precision;

/* "default", "fp32", "bf16". */
const char *clef_precision_name(clef_precision p);

/* "fp32" or "bf16" in name[0..len) into *p; -1 for anything else. */
int         clef_precision_parse(const char *name, size_t len, clef_precision *p);

typedef struct {
    const char  *name;
    const char  *what;          /* one line for messages and --help */
    int          uses_devices;  /* devices= means something */
    int          tensor_parallel;  /* tp= above 1 means something (the
                                      backend itself refuses at open a
                                      layout it cannot run) */
} clef_backend_entry;

/* Every backend this build knows, in a NULL-named-terminated table. */
const clef_backend_entry *clef_backend_registry(void);

/* The entry named name[0..len), or NULL. */
const clef_backend_entry *clef_backend_lookup(const char *name, size_t len);

/* "cpu, cuda": the names, for messages. */
const char *clef_backend_names(void);

#endif
