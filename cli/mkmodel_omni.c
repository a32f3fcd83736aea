/*
 * `clef mkmodel` for Clef Omni (a --config object whose model_type is
 * "qwen3_omni_moe_text"): config.json in the release's layout
 * (Qwen3OmniMoeForConditionalGeneration, the thinker's text, vision and
 * audio configs under thinker_config, its token ids and time scale), and
 * the tensor names the release stores (model_omni.h).
 */
#include "mkmodel.h"

#include <string.h>

#include "model/model_omni.h"
#include "model/model_vision.h"

static int
omni_fail(const char *what, const clef_error *err)
{
    fprintf(stderr, "clef mkmodel: %s%s%s\n", what, err ? ": " : "",
            err ? err->message : "");
    return 1;
}

int
mkmodel_is_omni(const json_t *in)
{
    const json_t  *mt = json_object_get(in, "model_type");

    return json_is_string(mt)
           && strcmp(json_string_value(mt), "qwen3_omni_moe_text") == 0;
}

/* The sizes a --config gives a tower, and the release's own keys. */
static json_t *
tower(const json_t *in, const char *key, const char *model_type,
    int out_hidden)
{
    const json_t  *v = json_object_get(in, key);
    json_t        *t;

    if (!json_is_object(v)) {
        return NULL;
    }
    t = json_deep_copy(v);
    json_object_set_new(t, "model_type", json_string(model_type));
    json_object_set_new(t, strcmp(key, "audio_config") == 0 ? "output_dim"
                                                            : "out_hidden_size",
                        json_integer(out_hidden));
    return t;
}

int
mkmodel_omni_configs(const json_t *in, int64_t vocab, const json_t *vision_ids,
    const json_t *audio_ids, json_t **config, json_t **head,
    clef_model_configs *cfg)
{
    json_t      *text, *thinker, *rope, *vision, *audio, *v;
    clef_error   err;
    int          hidden;

    *config = NULL;
    *head = NULL;
    memset(cfg, 0, sizeof(*cfg));
    text = json_deep_copy(in);
    json_object_del(text, "head");
    json_object_del(text, "vision_config");
    json_object_del(text, "audio_config");
    v = json_object_get(in, "vocab_size");
    if (json_is_integer(v) && json_integer_value(v) > vocab) {
        vocab = json_integer_value(v);
    }
    json_object_set_new(text, "vocab_size", json_integer(vocab));
    json_object_set_new(text, "hidden_act", json_string("silu"));
    json_object_set_new(text, "attention_bias", json_false());
    json_object_set_new(text, "use_sliding_window", json_false());
    json_object_set_new(text, "tie_word_embeddings", json_false());
    json_object_set_new(text, "shared_expert_intermediate_size",
                        json_integer(0));
    if (json_object_get(text, "max_position_embeddings") == NULL) {
        json_object_set_new(text, "max_position_embeddings",
                            json_integer(65536));
    }
    /* the release states its rotary as rope_scaling + rope_theta */
    rope = json_object_get(text, "rope_scaling");
    rope = rope != NULL ? json_deep_copy(rope) : json_object();
    json_object_set_new(rope, "rope_type", json_string("default"));
    json_object_set_new(rope, "interleaved", json_true());
    json_object_set_new(rope, "mrope_interleaved", json_true());
    json_object_set_new(text, "rope_scaling", rope);
    if (json_object_get(text, "rope_theta") == NULL) {
        json_object_set_new(text, "rope_theta", json_real(1000000.0));
    }

    hidden = (int) json_integer_value(json_object_get(in, "hidden_size"));
    thinker = json_pack("{s:s,s:o,s:i,s:b}",
                        "model_type", "qwen3_omni_moe_thinker",
                        "text_config", text,
                        "position_id_per_seconds", 13,
                        "tie_word_embeddings", 0);
    vision = tower(in, "vision_config", "qwen3_omni_moe_vision_encoder",
                   hidden);
    audio = tower(in, "audio_config", "qwen3_omni_moe_audio_encoder", hidden);
    if (vision != NULL) {
        json_object_set_new(thinker, "vision_config", vision);
    }
    if (audio != NULL) {
        json_object_set_new(thinker, "audio_config", audio);
    }
    json_object_update(thinker, (json_t *) vision_ids);
    json_object_update(thinker, (json_t *) audio_ids);

    *config = json_pack("{s:[s],s:s,s:b,s:o}",
                        "architectures", "Qwen3OmniMoeForConditionalGeneration",
                        "model_type", "qwen3_omni_moe",
                        "enable_audio_output", 0,
                        "thinker_config", thinker);
    cfg->family = CLEF_FAMILY_OMNI;
    if (clef_text_config_parse(*config, "config", &cfg->text, &err) != 0) {
        return omni_fail("config", &err);
    }
    if (clef_vision_config_parse(thinker, "vision_config", &cfg->vision, &err)
        != 0
        || clef_omni_config_parse(*config, "config", cfg, &err) != 0)
    {
        return omni_fail("config", &err);
    }

    v = json_object_get(in, "head");
    if (!json_is_object(v)) {
        return omni_fail("the config has no \"head\" object", NULL);
    }
    *head = json_deep_copy(v);
    if (json_object_get(*head, "hidden_size") == NULL) {
        json_object_set_new(*head, "hidden_size", json_integer(hidden));
    }
    if (clef_head_config_parse(*head, "head", &cfg->head, &err) != 0) {
        return omni_fail("head", &err);
    }
    return 0;
}

int
mkmodel_omni_name(char *name, size_t size)
{
    char  buf[sizeof(((clef_tensor_spec *) 0)->name)];

    if (clef_omni_stored(name, buf, sizeof(buf)) != 0 || strlen(buf) >= size)
    {
        fprintf(stderr, "clef mkmodel: %s has no name in an Omni release\n",
                name);
        return -1;
    }
    memcpy(name, buf, strlen(buf) + 1);
    return 0;
}

json_t *
mkmodel_omni_preprocessor(const clef_vision_config *vc)
{
    json_t  *pre;

    /* the feature extractor's (WhisperFeatureExtractor) and the image
     * processor's keys in one file, as Qwen3OmniMoeProcessor reads them */
    pre = json_pack("{s:i,s:f,s:s,s:i,s:i,s:i,s:i,s:i,s:s,s:f,s:b,s:i,"
                    "s:s}",
                    "chunk_length", 300, "dither", 0.0,
                    "feature_extractor_type", "WhisperFeatureExtractor",
                    "feature_size", 128, "hop_length", 160, "n_fft", 400,
                    "n_samples", 4800000, "nb_max_frames", 30000,
                    "padding_side", "right", "padding_value", 0.0,
                    "return_attention_mask", 1, "sampling_rate", 16000,
                    "processor_class", "Qwen3OmniMoeProcessor");
    if (vc->present) {
        json_object_update_new(pre, json_pack(
            "{s:[f,f,f],s:[f,f,f],s:s,s:i,s:i,s:i,s:i,s:i}",
            "image_mean", 0.5, 0.5, 0.5, "image_std", 0.5, 0.5, 0.5,
            "image_processor_type", "Qwen2VLImageProcessor",
            "max_pixels", 12845056, "min_pixels", 3136,
            "merge_size", vc->spatial_merge_size,
            "patch_size", vc->patch_size,
            "temporal_patch_size", vc->temporal_patch_size));
    }
    return pre;
}
