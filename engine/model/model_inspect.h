/*
 * A model as the configuration sees it (`nginx -t`, the master): opened
 * from its headers only, checked, summed up and closed again, so that the
 * nginx module never holds a clef_model nor links the code that computes
 * with one.
 */
#ifndef CLEF_MODEL_INSPECT_H
#define CLEF_MODEL_INSPECT_H

#include <stddef.h>

#include "backend/device_plan.h"
#include "base/error.h"
#include "media/kinds.h"
#include "model/dtype.h"

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
    char                   container[24];     /* "release directory",
                                                 "GGUF file" */
    char                   weights[24];       /* "BF16", "Q4_K_M" */
    clef_weights_kind      kind;              /* what the default precision
                                                 depends on (registry.h) */
    int64_t                bytes, q8_bytes;   /* the matrices as stored, and
                                                 as q8 keeps them */
    int                    n_types;           /* what the matrices are */
    clef_weight_type       types[8];          /* stored as, by bytes */
    clef_devplan_rank      gpu_rank;          /* the CUDA backend's rank 0
                                                 at this tp, and */
    int64_t                gpu_weights;       /* the bytes it uploads
                                                 (device_plan.h) */
} clef_model_info;

/* What clef_model_inspect() refused. */
enum {
    CLEF_INSPECT_OPEN = -1,   /* the release itself (configs, tensors) */
    CLEF_INSPECT_TP = -2      /* tp does not divide one of its counts */
};

/* Fills info from the model at path (a release directory or a GGUF file,
 * with its vision tower in mmproj or NULL), after checking that tp (0 or
 * 1: none) shards it; 0, or a CLEF_INSPECT_* with err filled. */
int clef_model_inspect(const char *path, const char *mmproj, int tp,
    clef_model_info *info, clef_error *err);

#endif
