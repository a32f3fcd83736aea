/*
 * Where a model comes from.  A container is what a `clef_model` path
 * names: it gives the model's configs, its tokenizer and its tensors, each
 * tensor under its canonical name (roles.h) into the model's one tensor
 * table, which model.c then checks against the inventory the configs
 * imply.  Nothing past the container knows which kind it was.
 *
 * Kinds today: the release directory (container_release.c: config.json,
 * joint_head_config.json, preprocessor_config.json, tokenizer.json and
 * safetensors shards, each tensor mapped in place).  A GGUF file holds
 * config, tokenizer and tensors in one file: it joins as one more kind
 * (a probe that reads the magic, configs from the metadata, the tokenizer
 * from tokenizer.ggml.*, tensors under the role table's GGUF names mapped
 * onto the canonical ones) in clef_container_kinds[] (container.c).
 */
#ifndef CLEF_CONTAINER_H
#define CLEF_CONTAINER_H

#include "base/error.h"
#include "model/model.h"
#include "model/tensor.h"
#include "text/tokenizer.h"

/* What every kind of container says of a model. */
typedef struct {
    clef_family              family;
    clef_text_config         text;
    clef_head_config         head;
    clef_vision_config       vision;  /* present 0: no tower */
    clef_audio_tower_config  audio;   /* present 0: no audio tower */
    clef_omni_config         omni;    /* CLEF_FAMILY_OMNI only */
} clef_model_configs;

/* The model's canonical tensor table, as containers fill it. */
typedef struct clef_tensor_table clef_tensor_table;

/* Parts of the table, for where a missing tensor is reported. */
typedef enum {
    CLEF_SOURCE_BACKBONE = 0,       /* the text stack and the tower */
    CLEF_SOURCE_HEAD                /* the joint head */
} clef_source;

/* Adds t (which the container keeps valid until it closes) under its
 * canonical name; `from` names where it was read, for messages (a file
 * path the container keeps).  The joint head's tensors are added under
 * their names in the reference's state_dict with head set. */
int clef_tensor_table_add(clef_tensor_table *tt, const char *canonical,
    int head, const clef_tensor *t, const char *from, clef_error *err);

typedef struct {
    const char  *name;               /* "release directory" */
    /* 1 when path is this kind's; the last kind takes any path */
    int        (*probe)(const char *path);
    /* flags: clef_model_open's (CLEF_MODEL_HEADERS_ONLY: map nothing) */
    void      *(*open)(const char *path, int flags, clef_error *err);
    /* the configs, checked as far as the container can (a directory
     * that is not a decision model is refused here, saying so) */
    int        (*configs)(void *c, clef_model_configs *cfg, clef_error *err);
    /* the tensors of one source into tt (the tower's only when
     * cfg->vision.present): the backbone's, then the head's; and where
     * the missing ones of a source would have been, for messages */
    int        (*tensors)(void *c, const clef_model_configs *cfg,
                          clef_source s, clef_tensor_table *tt,
                          clef_error *err);
    const char *(*where)(void *c, clef_source s);
    /* the tokenizer, checked against the configs' vocabulary */
    clef_tokenizer *(*tokenizer)(void *c, const clef_model_configs *cfg,
                                 clef_error *err);
    void       (*close)(void *c);
} clef_container_kind;

/* The kind of container path is. */
const clef_container_kind *clef_container_find(const char *path);

/* The kinds (container.c); each kind's file defines its entry. */
extern const clef_container_kind  clef_container_release;

#endif
