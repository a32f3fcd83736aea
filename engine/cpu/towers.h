/*
 * The CPU backend's media towers as one table (the CUDA backend's twin is
 * cuda/tower.h): a row names the media kinds it encodes and its hooks;
 * backend_cpu.c opens, closes and encodes through the rows, and picks a
 * kind's tower by its row.  A kind no row takes is refused as "no
 * encoder", a kind whose tower the model lacks as "does not accept"
 * (400 <kind>_unsupported, media/kinds.h's words).
 */
#ifndef CLEF_CPU_TOWERS_H
#define CLEF_CPU_TOWERS_H

#include <stdint.h>

#include "base/error.h"
#include "cpu/parallel/pool.h"
#include "media/media.h"
#include "model/model.h"

#define CLEF_CPU_TOWERS  2

typedef struct {
    unsigned   kinds;               /* CLEF_MEDIA_BIT() of each kind */
    /* Its weights; *out NULL (and 0 returned) for a model without it.
     * The pool is borrowed. */
    int      (*open)(const clef_model *m, clef_cpu_pool *pool, void **out,
                     clef_error *err);
    void     (*close)(void *t);
    /* fn(ctx) after every block or layer (the engine's watchdog). */
    void     (*set_progress)(void *t, void (*fn)(void *ctx), void *ctx);
    /* n items of its kinds (group[k]: item k's record) to their rows at
     * the text stack's width, one item after the other; DeepStack level
     * d + 1 at features + (d + 1) level_stride. */
    int      (*encode)(void *t, const clef_media_item *const *items,
                       const int32_t *group, int n, float *features,
                       int64_t level_stride, clef_error *err);
    /* DeepStack levels past the first (NULL: none). */
    int      (*deepstack)(const void *t);
} clef_cpu_tower;

extern const clef_cpu_tower  clef_cpu_towers[CLEF_CPU_TOWERS];

/* The row that encodes kind, or -1. */
int  clef_cpu_tower_of(clef_media_kind kind);

#endif
