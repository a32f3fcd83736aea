/*
 * A model as the configuration sees it (`nginx -t`, the master): opened
 * from its headers only, checked, summed up and closed again, so that the
 * nginx module never holds a clef_model nor links the code that computes
 * with one.
 */
#ifndef CLEF_MODEL_INSPECT_H
#define CLEF_MODEL_INSPECT_H

#include <stddef.h>

#include "base/error.h"
#include "media/kinds.h"

typedef struct {
    int                    layers;
    int                    hidden_size;
    size_t                 max_token_bytes;   /* the tokenizer's longest
                                                 entry (plan.h's bound) */
    clef_media_conf        media;             /* the media kinds it takes
                                                 (model_media.h) */
    int                    max_length;        /* its record limit when none
                                                 is configured */
    int                    omni;              /* a Clef Omni model */
} clef_model_info;

/* What clef_model_inspect() refused. */
enum {
    CLEF_INSPECT_OPEN = -1,   /* the release itself (configs, tensors) */
    CLEF_INSPECT_TP = -2      /* tp does not divide one of its counts */
};

/* Fills info from the release at path, after checking that tp (0 or 1:
 * none) shards it; 0, or a CLEF_INSPECT_* with err filled. */
int clef_model_inspect(const char *path, int tp, clef_model_info *info,
    clef_error *err);

#endif
