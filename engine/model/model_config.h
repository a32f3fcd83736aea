/*
 * What a Clef release's two config files say (docs/spec/backbone.md
 * §1-§2, docs/spec/encoder-and-head.md §1, §7.1).  Shared by the loader
 * (engine/model/model.c) and the checkpoint generator (cli/cmd_mkmodel.c);
 * the tensors the configs imply are the role table's (roles.h).
 */
#ifndef CLEF_MODEL_CONFIG_H
#define CLEF_MODEL_CONFIG_H

#include <jansson.h>
#include <stdint.h>

#include "base/error.h"
#include "model/model.h"
#include "model/roles.h"

/* root: the parsed config.json, either Qwen3_5ForConditionalGeneration
 * (sizes under "text_config"), text-only (sizes at the top level), or a
 * Clef Omni release (Qwen3OmniMoeForConditionalGeneration: the thinker's
 * text_config under thinker_config).
 * file names the source in error messages. */
int clef_text_config_parse(const json_t *root, const char *file,
    clef_text_config *c, clef_error *err);

/* The family a config.json is of: CLEF_FAMILY_OMNI for model_type
 * "qwen3_omni_moe" (a Clef Omni release: the thinker's configs under
 * thinker_config), else CLEF_FAMILY_CLEF (which clef_text_config_parse()
 * then checks is qwen3_5). */
clef_family clef_config_family(const json_t *root);

/* root: the parsed joint_head_config.json; exactly the six size keys plus an
 * optional "dropout". */
int clef_head_config_parse(const json_t *root, const char *file,
    clef_head_config *h, clef_error *err);

/* Derives c->layer[] (model.h) from layer_full; the parser calls it, and
 * so must code that fills a config by hand. */
void clef_text_config_describe_layers(clef_text_config *c);

/* "[248320, 4096]", "[]" for a scalar. */
void clef_shape_format(char *buf, size_t size, int ndim, const int64_t *shape);

#endif
