/*
 * Token embedding gather: row ids[t] of the stored table, converted to fp32
 * as it is copied.  The table stays in the mmapped checkpoint (248k x 4096
 * for 9B would be 4 GB as fp32); only the rows a batch uses are touched.
 */
#ifndef CLEF_CPU_EMBED_H
#define CLEF_CPU_EMBED_H

#include <stdint.h>

#include "base/error.h"
#include "cpu/parallel/pool.h"
#include "model/tensor.h"

/* Refuses (err filled, 400 "invalid_token") an id outside the table. */
int clef_cpu_embed(clef_cpu_pool *pool, const clef_tensor *table,
    const int32_t *ids, int64_t tokens, float *out, int64_t ldo,
    clef_error *err);

#endif
