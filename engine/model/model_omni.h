/*
 * The Clef Omni release layout (Qwen3OmniMoeForConditionalGeneration with
 * the joint head, docs/spec/backbone.md §6): config.json's
 * thinker_config (its text_config is read by clef_text_config_parse(),
 * its vision_config by clef_vision_config_parse()); here its token ids,
 * its time scale and its audio_config, and the names of its tensors.
 *
 * A release stores the thinker under "thinker.": "thinker.model.X" (the
 * text stack), "thinker.lm_head.weight", "thinker.visual.X" (the tower,
 * its mergers as merger.{ln_q,mlp.0,mlp.2} and merger_list.N.*),
 * "thinker.audio_tower.X"; and the speech output's "talker.*" and
 * "code2wav.*", which are never read.  Canonical names (roles.h) are
 * Clef's: "model.language_model.X", "lm_head.weight", "model.visual.X"
 * (merger.{norm,linear_fc1,linear_fc2}, deepstack_merger_list.N.*, as
 * transformers' Qwen3-VL names them) and "model.audio_tower.X".
 */
#ifndef CLEF_MODEL_OMNI_H
#define CLEF_MODEL_OMNI_H

#include <jansson.h>
#include <stddef.h>

#include "base/error.h"
#include "model/container.h"

#define CLEF_AUDIO_PREFIX  "model.audio_tower."

/* thinker_config's token ids, position_id_per_seconds and audio_config
 * (cfg->audio.present 0 without one) into cfg->omni and cfg->audio. */
int clef_omni_config_parse(const json_t *root, const char *file,
    clef_model_configs *cfg, clef_error *err);

/* The thinker_config object of a Clef Omni config.json, or NULL. */
const json_t *clef_omni_thinker(const json_t *root);

/* The audio tower's feature settings from preprocessor_config.json (root;
 * NULL: the release's defaults) into a->features, checked against what
 * media/audio_features.c computes. */
int clef_audio_features_parse(const json_t *root, const char *file,
    clef_audio_tower_config *a, clef_error *err);

/* A stored name to its canonical one into buf: 1 when it is one, 0 for a
 * tensor that is never read (talker.*, code2wav.*, and any name outside
 * thinker.*), -1 when buf is too small. */
int clef_omni_canonical(const char *stored, char *buf, size_t size);

/* A canonical name to the one a release stores it under; -1 when buf is
 * too small or the name is not the thinker's. */
int clef_omni_stored(const char *canonical, char *buf, size_t size);

#endif
