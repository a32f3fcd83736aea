/*
 * `clef mkmodel`: random Clef checkpoints in the release layout.  Shared
 * between cli/cmd_mkmodel.c (configs, files), cli/mkmodel_weights.c (random
 * values, safetensors writing) and cli/mkmodel_shapes.c (named shapes).
 */
#ifndef CLEF_CLI_MKMODEL_H
#define CLEF_CLI_MKMODEL_H

#include <stdint.h>
#include <stdio.h>

#include "model/model_config.h"
#include "model/tensor.h"

/* A named shape: the --config JSON text it stands for, and its shard count
 * when --shards is not given.  NULL when the name is unknown. */
typedef struct {
    const char  *name;
    const char  *json;
    int          shards;
} mkmodel_shape;

const mkmodel_shape *mkmodel_shape_find(const char *name);
void                 mkmodel_shape_list(FILE *f);

/* One tensor to write: its spec and its stored dtype. */
typedef struct {
    clef_tensor_spec  spec;
    clef_dtype        dtype;
    uint64_t          nbytes;
    int               shard;
} mkmodel_tensor;

/* Writes a safetensors file holding tensors[0..n) in that order, their
 * values drawn from seed (independent of which file a tensor lands in).
 * sparse: the data region is left as a hole (zeros), for loader tests of
 * real shapes without writing gigabytes.  Returns 0, or -1 with a message
 * on stderr. */
int mkmodel_write_safetensors(const char *path, const mkmodel_tensor *tensors,
    int n, uint64_t seed, int sparse);

#endif
