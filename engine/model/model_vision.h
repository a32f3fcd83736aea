/*
 * The vision tower's configuration (docs/spec/backbone.md §1.3, §2.5,
 * §5): config.json's vision_config and image and video token ids,
 * preprocessor_config.json and video_preprocessor_config.json.  Shared by the loader and `clef mkmodel`; its
 * tensors are the role table's (roles.h).
 */
#ifndef CLEF_MODEL_VISION_H
#define CLEF_MODEL_VISION_H

#include <jansson.h>

#include "base/error.h"
#include "model/model.h"
#include "model/model_config.h"

#define CLEF_VISION_PREFIX  "model.visual."

/* root: config.json (a Clef Omni release's thinker_config).  A config
 * without vision_config leaves v->present 0.  The sizes are checked as the
 * tower needs them (hidden divisible by the heads, a square position
 * table, gelu_pytorch_tanh, DeepStack blocks inside the tower). */
int clef_vision_config_parse(const json_t *root, const char *file,
    clef_vision_config *v, clef_error *err);

/* root: preprocessor_config.json (NULL: the release's values).  Its patch,
 * temporal and merge sizes must be the tower's. */
int clef_processor_config_parse(const json_t *root, const char *file,
    const clef_vision_config *v, clef_processor_config *pc, clef_error *err);

/* root: video_preprocessor_config.json (NULL: the release's values,
 * docs/spec/backbone.md §5.4): Qwen3VLVideoProcessor's keys, its patch,
 * temporal and merge sizes the tower's, frames sampled (do_sample_frames
 * true), fps, min/max_frames and the pixel budget in bounds. */
int clef_video_processor_config_parse(const json_t *root, const char *file,
    const clef_vision_config *v, clef_video_config *vc, clef_error *err);

#endif
