/*
 * `clef mkmodel`: random Clef checkpoints in the release layout.  Shared
 * between cli/cmd_mkmodel.c (configs, files), cli/mkmodel_weights.c (random
 * values, safetensors writing) and cli/mkmodel_shapes.c (named shapes).
 */
#ifndef CLEF_CLI_MKMODEL_H
#define CLEF_CLI_MKMODEL_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include "model/container.h"
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

/* One tensor to write: its spec (its name the one the release stores it
 * under), its stored dtype and what it is (how its values are drawn). */
typedef struct {
    clef_tensor_spec  spec;
    clef_role_kind    kind;
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

/* Clef Omni (mkmodel_omni.c): whether a --config object is one (its
 * model_type "qwen3_omni_moe_text"); its config.json and
 * joint_head_config.json (vocab: the tokenizer's; vision_ids, audio_ids:
 * the token ids it found), parsed back into cfg by the loader's parsers;
 * and a canonical tensor name rewritten in place to the release's. */
int mkmodel_is_omni(const json_t *in);
int mkmodel_omni_configs(const json_t *in, int64_t vocab,
    const json_t *vision_ids, const json_t *audio_ids, json_t **config,
    json_t **head, clef_model_configs *cfg);
int mkmodel_omni_name(char *name, size_t size);
/* preprocessor_config.json of a Clef Omni release: the audio feature
 * extractor's keys, and the image processor's when it has a tower. */
json_t *mkmodel_omni_preprocessor(const clef_vision_config *vc);

/* Values [first, first + n) of tensor s (row-major; kind: its role's in
 * the model's config, clef_role_kind_in()) as a release stored in dt (F32,
 * or BF16: rounded) holds them, in fp32: the same numbers
 * mkmodel_write_safetensors() writes, had at any offset. */
void mkmodel_values(const clef_tensor_spec *s, clef_role_kind kind,
    clef_dtype dt, uint64_t seed, int64_t first, int64_t n, float *dst);

/* The dtype a release stores tensor s in: F32 for A_log and the gated
 * norm, bf16 for the rest. */
clef_dtype mkmodel_release_dtype(const clef_tensor_spec *s);

/* `clef mkmodel --gguf TYPE` (cli/mkmodel_gguf.c). */
typedef struct {
    const char  *type;          /* f32, f16, bf16, q8_0, ..., q4_k_m */
    const char  *out;           /* the model's GGUF file */
    const char  *mmproj;        /* the tower's file, or NULL: none */
    const char  *tokenizer_dir; /* tokenizer.json, tokenizer_config.json */
    const char  *name;          /* general.name */
    int64_t      context_length;
    int64_t      full_attention_interval;   /* the config's (written as
                                               the converter does; the
                                               layers are in
                                               recurrent_layers) */
    uint64_t     seed;
    int          sparse;        /* the matrices' data left as holes */
} mkmodel_gguf_args;

/* The model as llama.cpp's converter (and llama-quantize, for a block type
 * or a K mix) would have written the release of the same seed, into the
 * GGUF file a->out, the vision tower (when cfg->vision.present and
 * a->mmproj) into the mmproj file, with Clef Omni's audio tower when it
 * has one (Clef Omni: in the manner of its Qwen3-VL-MoE converter,
 * model/gguf_clef.h); tensors made a slice of rows at a time.  0, or 1 with
 * a message on stderr; 2 for an unknown TYPE. */
int mkmodel_write_gguf(const mkmodel_gguf_args *a,
    const clef_model_configs *cfg);

#endif
