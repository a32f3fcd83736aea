/*
 * A Clef model: its configs, its tokenizer and one canonical tensor table,
 * from a container (container.h): a GGUF file (and its mmproj), or a
 * release directory
 * (docs/spec/encoder-and-head.md §1, §7 and docs/spec/backbone.md §1-§2:
 * config.json, joint_head_config.json, model.safetensors.index.json +
 * shards (or one model.safetensors), joint_head.safetensors,
 * tokenizer.json).
 *
 * Opening checks that every tensor the text backbone and the head need is
 * present with the shape the configs imply (the role table, roles.h), and
 * says which one is wrong if not.  mtp.* is skipped; model.visual.* is
 * checked tensor by tensor when config.json has a vision_config and the
 * checkpoint carries the tower.  Weights stay in the mmapped files:
 * opening needs no memory beyond the page cache.
 */
#ifndef CLEF_MODEL_H
#define CLEF_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "media/audio_features.h"
#include "media/processor.h"
#include "media/video_sample.h"
#include "model/tensor.h"
#include "text/tokenizer.h"

#define CLEF_MAX_LAYERS  256

/* Where the text stack's tensors live in a release checkpoint. */
#define CLEF_TEXT_PREFIX  "model.language_model."

typedef enum {
    CLEF_MIXER_LINEAR = 0,      /* gated delta rule (linear_attn.*) */
    CLEF_MIXER_FULL             /* gated softmax attention (self_attn.*) */
} clef_mixer_kind;

typedef enum {
    CLEF_MLP_DENSE = 0,         /* mlp.{gate,up,down}_proj */
    CLEF_MLP_MOE                /* routed experts (Clef Omni): a router,
                                   mlp.experts.E.{gate,up,down}_proj */
} clef_mlp_kind;

/* The family of a model: which release layout it comes in and which
 * reference encodes its records.  The backbone does not test it: what
 * differs between families is spelled out in the config (layer kinds,
 * norm form, output gate, rotary share, MLP kind). */
typedef enum {
    CLEF_FAMILY_CLEF = 0,       /* Clef, Clef-flash: qwen3_5 */
    CLEF_FAMILY_OMNI            /* Clef Omni: qwen3_omni_moe's thinker */
} clef_family;

/* One decoder layer as the config describes it, derived once when the
 * config is parsed; both weight loaders (CPU and CUDA) and the role table
 * (roles.h: which tensors a layer of these kinds has) read it instead of
 * spelling names and kinds themselves. */
typedef struct {
    clef_mixer_kind  mixer;
    clef_mlp_kind    mlp;
    char             prefix[48];   /* "model.language_model.layers.7." */
} clef_layer_desc;

/* "<prefix><suffix>" into buf (a tensor name of the layer). */
const char *clef_layer_tensor(const clef_layer_desc *d, const char *suffix,
    char *buf, size_t size);

typedef struct {
    int     vocab_size;
    int     hidden_size;
    int     intermediate_size;
    int     num_hidden_layers;
    int     num_attention_heads;
    int     num_key_value_heads;
    int     head_dim;
    int     linear_num_key_heads;       /* Hk */
    int     linear_num_value_heads;     /* Hv */
    int     linear_key_head_dim;        /* dk */
    int     linear_value_head_dim;      /* dv */
    int     linear_conv_kernel_dim;
    int     attn_output_gate;           /* 1: q_proj rows are [query | gate] per head */
    double  rms_norm_eps;
    double  rope_theta;
    double  partial_rotary_factor;
    int     mrope_section[3];           /* rotary pairs on T, H, W (images):
                                           pair j is on H when j % 3 == 1 and
                                           j < 3 sec[1], on W when j % 3 == 2
                                           and j < 3 sec[2], else on T */
    int     mrope_interleaved;          /* always 1 (transformers' only form) */
    int     tie_word_embeddings;
    int     norm_plus_one;              /* 1: RMSNorm weights applied as
                                           1 + w (Qwen3.5), 0: as w (Omni) */
    int     num_experts;                /* 0: dense MLPs */
    int     num_experts_per_tok;
    int     moe_intermediate_size;
    int     norm_topk_prob;             /* top-k weights renormalised */
    uint8_t layer_full[CLEF_MAX_LAYERS]; /* 1: full_attention, 0: linear_attention */
    uint8_t layer_moe[CLEF_MAX_LAYERS];  /* 1: the layer's MLP is routed experts */
    clef_layer_desc layer[CLEF_MAX_LAYERS];   /* from the above */
} clef_text_config;

typedef struct {
    int  hidden_size;
    int  width;
    int  routing_layers;
    int  layers;
    int  heads;
    int  feedforward;
} clef_head_config;

/* The vision tower (docs/spec/backbone.md §1.3, §5), when the checkpoint
 * has one: config.json's vision_config and token ids, and the processor. */
typedef struct {
    int     present;                /* vision_config and model.visual.* */
    int     depth;
    int     hidden_size;
    int     intermediate_size;
    int     num_heads;
    int     in_channels;
    int     patch_size;
    int     temporal_patch_size;
    int     spatial_merge_size;
    int     num_position_embeddings;
    int     out_hidden_size;
    double  rope_theta;             /* the 2D rotary's, 10000 */
    int     n_deepstack;            /* DeepStack mergers (Clef Omni) */
    int     deepstack[8];           /* the tower block each one reads */
    int     image_token_id;
    int     vision_start_token_id;
    int     vision_end_token_id;
    int     video_token_id;         /* 0: the config names none (then the
                                       model takes no videos) */
    clef_processor_config  processor;
    clef_video_config      video;   /* video_preprocessor_config.json */
} clef_vision_config;

/* Clef Omni's audio tower (transformers' Qwen3OmniMoeAudioEncoderConfig:
 * thinker_config.audio_config), the sizes its tensors are checked at. */
typedef struct {
    int     present;
    int     num_mel_bins;           /* 128 */
    int     d_model;                /* 1280 */
    int     encoder_layers;         /* 32 */
    int     encoder_attention_heads;
    int     encoder_ffn_dim;
    int     downsample_hidden_size; /* the convolutions' channels */
    int     output_dim;             /* the thinker's hidden size */
    int     n_window;               /* chunks of 2 n_window frames */
    int     n_window_infer;         /* attention windows, in frames */
    int     max_source_positions;
    clef_audio_config  features;    /* its log-mel features: the feature
                                       extractor's keys of
                                       preprocessor_config.json */
} clef_audio_tower_config;

/* What Clef Omni's thinker_config adds: token ids and the time scale of
 * its M-RoPE positions. */
typedef struct {
    int     audio_token_id;         /* <|audio_pad|> */
    int     audio_start_token_id;
    int     audio_end_token_id;
    int     video_token_id;
    int     position_id_per_seconds;
} clef_omni_config;

typedef struct clef_model clef_model;

enum {
    CLEF_MODEL_HEADERS_ONLY = 1     /* validate configs and tensor headers, map nothing */
};

/* Refuses a directory that is not a Clef decision model ("not a decision
 * model: joint_head_config.json is missing"), a config it cannot read, a
 * missing tensor or a wrong shape, naming the file and tensor. */
clef_model *clef_model_open(const char *path, int flags, clef_error *err);
/* The same with the vision tower in a file of its own (a GGUF model's
 * mmproj), or NULL. */
clef_model *clef_model_open_files(const char *path, const char *mmproj,
    int flags, clef_error *err);
void        clef_model_close(clef_model *m);

const clef_text_config *clef_model_text_config(const clef_model *m);
const clef_head_config *clef_model_head_config(const clef_model *m);
/* NULL when the checkpoint has no vision tower (it then takes no images). */
const clef_vision_config *clef_model_vision_config(const clef_model *m);
const clef_tokenizer   *clef_model_tokenizer(const clef_model *m);
/* Clef Omni's reference encodes a record in at most this many tokens by
 * default (its DEFAULT_MAX_LENGTH, and the hosted endpoint's budget). */
#define CLEF_OMNI_MAX_LENGTH  64000

/* The token limit of a record the model's reference has when none is
 * configured: CLEF_OMNI_MAX_LENGTH for Clef Omni, 0 (the engine's own
 * default, protocol/plan.h) for Clef. */
int clef_model_default_max_length(const clef_model *m);

/* Which family the model is (its release layout and its encoder). */
clef_family             clef_model_family(const clef_model *m);
/* Clef Omni's token ids and time scale; NULL for another family. */
const clef_omni_config *clef_model_omni_config(const clef_model *m);
/* NULL when the model has no audio tower. */
const clef_audio_tower_config *clef_model_audio_config(const clef_model *m);
/* The path the model was opened from. */
const char             *clef_model_dir(const clef_model *m);
/* What kind of container it is ("release directory", "GGUF file"). */
const char             *clef_model_container(const clef_model *m);
/* What its weights are stored as ("BF16", "Q4_K_M"): the file type a GGUF
 * states, else the type of its matrices. */
void                    clef_model_weights(const clef_model *m, char *buf,
    size_t size);

/* Every tensor of the model (backbone, towers, joint head): the i-th of
 * clef_model_tensor_count(), in no particular order, with its canonical
 * name in *name; NULL past the end. */
int                clef_model_tensor_count(const clef_model *m);
const clef_tensor *clef_model_tensor_at(const clef_model *m, int i,
    const char **name);

/* What the model's weights are stored as, one row per type (model_types.c):
 * its matrices (tensors of two or more dimensions) counted by the rows
 * stored in each type, lm_head.weight left out (a decision model never
 * reads it; clef_weight_type: dtype.h).  Fills out[0 .. max) and
 * returns the number of types (at most max). */
int clef_model_weight_types(const clef_model *m, clef_weight_type *out,
    int max);

/* What the default precision of a backend depends on (registry.h): of a
 * census (all its types), with the matrices' bytes as stored and as the
 * integer products keep them; of a model. */
clef_weights_kind clef_weight_types_kind(const clef_weight_type *types,
    int n, int64_t *bytes, int64_t *q8_bytes);
clef_weights_kind clef_model_weights_kind(const clef_model *m);

/* Backbone tensors by their canonical name, "model.language_model.…",
 * "model.visual.…" or
 * "lm_head.weight" (a checkpoint with Qwen3_5ForCausalLM names, "model.…",
 * is mapped onto these).  For a tied model lm_head.weight is the embedding.
 * NULL when absent. */
const clef_tensor *clef_model_tensor(const clef_model *m, const char *name);

/* joint_head.safetensors tensors by their name in that file
 * ("hidden_norm.weight", "evidence_layers.0.attention.in_proj_weight", ...). */
const clef_tensor *clef_model_head_tensor(const clef_model *m, const char *name);

#endif
