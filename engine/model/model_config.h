/*
 * What a Clef release's two config files say, and the tensors they imply
 * (spec/qwen35-backbone.md §1-§2, spec/clef-encoder-and-head.md §1, §7.1).
 * Shared by the loader (engine/model.c) and the checkpoint generator
 * (cli/cmd_mkmodel.c), so that both agree on one list of names and shapes.
 */
#ifndef CLEF_MODEL_CONFIG_H
#define CLEF_MODEL_CONFIG_H

#include <jansson.h>
#include <stdint.h>

#include "base/error.h"
#include "model/model.h"

/* root: the parsed config.json, either Qwen3_5ForConditionalGeneration
 * (sizes under "text_config") or text-only (sizes at the top level).
 * file names the source in error messages. */
int clef_text_config_parse(const json_t *root, const char *file,
    clef_text_config *c, clef_error *err);

/* root: the parsed joint_head_config.json; exactly the six size keys plus an
 * optional "dropout". */
int clef_head_config_parse(const json_t *root, const char *file,
    clef_head_config *h, clef_error *err);

typedef enum {
    CLEF_WANT_FLOAT = 0,       /* F32, F16 or BF16 */
    CLEF_WANT_F32_OR_BF16      /* the release stores these F32 */
} clef_dtype_want;

typedef struct {
    char             name[96];
    int              ndim;
    int64_t          shape[5];        /* the patch embedding is 5-D */
    clef_dtype_want  dtype;
} clef_tensor_spec;

/* Calls fn once per tensor, in checkpoint order; stops at and returns fn's
 * first non-zero return. */
typedef int (*clef_tensor_spec_fn)(const clef_tensor_spec *s, void *ctx);

/* The text stack under its canonical names ("model.language_model.…",
 * "lm_head.weight" unless the embeddings are tied). */
/* Derives c->layer[] (model.h) from layer_full; the parser calls it, and
 * so must code that fills a config by hand. */
void clef_text_config_describe_layers(clef_text_config *c);

int clef_text_tensors(const clef_text_config *c, clef_tensor_spec_fn fn, void *ctx);

/* joint_head.safetensors: the names of the reference JointSchemaHead's
 * state_dict (with strict loading, exactly these). */
int clef_head_tensors(const clef_head_config *h, clef_tensor_spec_fn fn, void *ctx);

/* Whether a dtype satisfies a spec. */
int clef_dtype_wanted(clef_dtype_want want, clef_dtype dt);

/* "[248320, 4096]", "[]" for a scalar. */
void clef_shape_format(char *buf, size_t size, int ndim, const int64_t *shape);

#endif
