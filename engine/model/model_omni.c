/*
 * The Clef Omni release layout (see model_omni.h).
 */
#include "model/model_omni.h"

#include <stdio.h>
#include <string.h>

#include "model/config_json.h"
#include "model/model_config.h"
#include "model/model_vision.h"

#define MAX_DIM  (1 << 20)

/* ---- names -------------------------------------------------------------- */

/* Where a stored prefix lands; merger: the next component (after a
 * merger_list index) is renamed by the merger table below. */
static const struct {
    const char  *stored;
    const char  *canonical;
    int          merger;
} prefixes[] = {
    { "thinker.model.", CLEF_TEXT_PREFIX, 0 },
    { "thinker.lm_head.weight", "lm_head.weight", 0 },
    { "thinker.audio_tower.", CLEF_AUDIO_PREFIX, 0 },
    { "thinker.visual.merger_list.",
      CLEF_VISION_PREFIX "deepstack_merger_list.", 1 },
    { "thinker.visual.merger.", CLEF_VISION_PREFIX "merger.", 1 },
    { "thinker.visual.", CLEF_VISION_PREFIX, 0 },
};

/* transformers' Qwen3OmniMoeVisionPatchMerger against Qwen3-VL's */
static const char *const  merger_parts[][2] = {
    { "ln_q.", "norm." },
    { "mlp.0.", "linear_fc1." },
    { "mlp.2.", "linear_fc2." },
};

/* from[side] -> to (side 0: stored, 1: canonical) */
static int
map_name(const char *name, int side, char *buf, size_t size)
{
    const char  *from, *to, *rest, *part;
    size_t       i, k, lf, lp;
    int          n;

    for (i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
        from = side == 0 ? prefixes[i].stored : prefixes[i].canonical;
        to = side == 0 ? prefixes[i].canonical : prefixes[i].stored;
        lf = strlen(from);
        if (strncmp(name, from, lf) != 0
            || (from[lf - 1] != '.' && name[lf] != '\0'))
        {
            continue;
        }
        rest = name + lf;
        if (!prefixes[i].merger) {
            n = snprintf(buf, size, "%s%s", to, rest);
            return n >= 0 && (size_t) n < size ? 1 : -1;
        }
        /* merger_list's index stays, the part after it is renamed */
        part = rest;
        while (*part >= '0' && *part <= '9') {
            part++;
        }
        if (part > rest && *part == '.') {
            part++;
        } else {
            part = rest;
        }
        for (k = 0; k < sizeof(merger_parts) / sizeof(merger_parts[0]); k++) {
            lp = strlen(merger_parts[k][side]);
            if (strncmp(part, merger_parts[k][side], lp) == 0) {
                n = snprintf(buf, size, "%s%.*s%s%s", to, (int) (part - rest),
                             rest, merger_parts[k][!side], part + lp);
                return n >= 0 && (size_t) n < size ? 1 : -1;
            }
        }
        n = snprintf(buf, size, "%s%s", to, rest);
        return n >= 0 && (size_t) n < size ? 1 : -1;
    }
    return 0;
}

int
clef_omni_canonical(const char *stored, char *buf, size_t size)
{
    return map_name(stored, 0, buf, size);
}

int
clef_omni_stored(const char *canonical, char *buf, size_t size)
{
    return map_name(canonical, 1, buf, size) == 1 ? 0 : -1;
}

/* ---- thinker_config ----------------------------------------------------- */

const json_t *
clef_omni_thinker(const json_t *root)
{
    const json_t  *th = json_object_get(root, "thinker_config");

    return json_is_object(th) ? th : NULL;
}

/* transformers' Qwen3OmniMoeAudioEncoderConfig: every size stated, the
 * exact GELU the tower is built with */
static int
parse_audio(const json_t *ac, const char *file, clef_audio_tower_config *a,
    clef_error *err)
{
    const char    *p = "thinker_config.audio_config.";
    const json_t  *x = json_object_get(ac, "activation_function");

    if (x != NULL && (!json_is_string(x)
                      || strcmp(json_string_value(x), "gelu") != 0))
    {
        return clef_cfg_fail(err, file, "%sactivation_function: only "
                   "\"gelu\" is supported", p);
    }
    if (clef_cfg_int(ac, p, "num_mel_bins", 1, 1024, -1, &a->num_mel_bins,
            file, err)
        || clef_cfg_int(ac, p, "d_model", 1, MAX_DIM, -1, &a->d_model, file,
               err)
        || clef_cfg_int(ac, p, "encoder_layers", 1, 256, -1,
               &a->encoder_layers, file, err)
        || clef_cfg_int(ac, p, "encoder_attention_heads", 1, 1024, -1,
               &a->encoder_attention_heads, file, err)
        || clef_cfg_int(ac, p, "encoder_ffn_dim", 1, MAX_DIM, -1,
               &a->encoder_ffn_dim, file, err)
        || clef_cfg_int(ac, p, "downsample_hidden_size", 1, MAX_DIM, -1,
               &a->downsample_hidden_size, file, err)
        || clef_cfg_int(ac, p, "output_dim", 1, MAX_DIM, -1, &a->output_dim,
               file, err)
        || clef_cfg_int(ac, p, "n_window", 1, 1 << 16, -1, &a->n_window, file,
               err)
        || clef_cfg_int(ac, p, "n_window_infer", 1, 1 << 20, -1,
               &a->n_window_infer, file, err)
        || clef_cfg_int(ac, p, "max_source_positions", 1, 1 << 20, 1500,
               &a->max_source_positions, file, err))
    {
        return -1;
    }
    if (a->d_model % a->encoder_attention_heads != 0) {
        return clef_cfg_fail(err, file, "%sd_model %d is not a multiple of "
                   "its %d heads", p, a->d_model, a->encoder_attention_heads);
    }
    clef_audio_config_default(&a->features);
    a->present = 1;
    return 0;
}


/* The release's preprocessor_config.json holds the feature extractor's
 * keys beside the image processor's (WhisperFeatureExtractor as
 * Qwen3OmniMoeProcessor calls it); what the engine computes
 * (media/audio_features.h) is checked against them, and any value it
 * does not compute the same way is refused by name. */
int
clef_audio_features_parse(const json_t *root, const char *file,
    clef_audio_tower_config *a, clef_error *err)
{
    const char        *p = "";
    const json_t      *x;
    clef_audio_config  *f = &a->features;
    int                 size;

    clef_audio_config_default(f);
    if (root == NULL) {
        return 0;
    }
    x = json_object_get(root, "feature_extractor_type");
    if (x != NULL && (!json_is_string(x)
                      || strcmp(json_string_value(x),
                                "WhisperFeatureExtractor") != 0))
    {
        return clef_cfg_fail(err, file, "feature_extractor_type: only "
                   "\"WhisperFeatureExtractor\" is supported");
    }
    size = f->n_mels;
    if (clef_cfg_int(root, p, "sampling_rate", CLEF_AUDIO_RATE,
            CLEF_AUDIO_RATE, CLEF_AUDIO_RATE, &f->sampling_rate, file, err)
        || clef_cfg_int(root, p, "n_fft", 4, 4096, f->n_fft, &f->n_fft, file,
               err)
        || clef_cfg_int(root, p, "hop_length", 1, 4096, f->hop_length,
               &f->hop_length, file, err)
        || clef_cfg_int(root, p, "feature_size", 1, 1024, size, &size, file,
               err))
    {
        return -1;
    }
    f->n_mels = size;
    if (f->n_fft % 2 != 0 || f->hop_length > f->n_fft) {
        return clef_cfg_fail(err, file, "n_fft must be even and hop_length "
                   "at most n_fft (%d, %d)", f->n_fft, f->hop_length);
    }
    if (f->n_mels != a->num_mel_bins) {
        return clef_cfg_fail(err, file, "feature_size %d is not the audio "
                   "tower's num_mel_bins %d", f->n_mels, a->num_mel_bins);
    }
    /* the settings whose other values this engine does not compute */
    x = json_object_get(root, "dither");
    if (x != NULL && (!json_is_number(x) || json_number_value(x) != 0)) {
        return clef_cfg_fail(err, file, "dither: only 0.0 is supported");
    }
    x = json_object_get(root, "padding_value");
    if (x != NULL && (!json_is_number(x) || json_number_value(x) != 0)) {
        return clef_cfg_fail(err, file, "padding_value: only 0.0 is "
                   "supported");
    }
    x = json_object_get(root, "padding_side");
    if (x != NULL && (!json_is_string(x)
                      || strcmp(json_string_value(x), "right") != 0))
    {
        return clef_cfg_fail(err, file, "padding_side: only \"right\" is "
                   "supported");
    }
    return 0;
}

int
clef_omni_config_parse(const json_t *root, const char *file,
    clef_model_configs *cfg, clef_error *err)
{
    const char     *p = "thinker_config.";
    const json_t   *th = clef_omni_thinker(root), *ac;
    clef_omni_config  *o = &cfg->omni;

    memset(o, 0, sizeof(*o));
    memset(&cfg->audio, 0, sizeof(cfg->audio));
    if (th == NULL) {
        return clef_cfg_fail(err, file, "thinker_config is missing");
    }
    /* transformers' Qwen3OmniMoeThinkerConfig defaults where a key is
     * left out */
    if (clef_cfg_int(th, p, "audio_token_id", 0, 1 << 28, 151646,
            &o->audio_token_id, file, err)
        || clef_cfg_int(th, p, "audio_start_token_id", 0, 1 << 28, 151647,
               &o->audio_start_token_id, file, err)
        || clef_cfg_int(th, p, "video_token_id", 0, 1 << 28, 151656,
               &o->video_token_id, file, err)
        || clef_cfg_int(th, p, "position_id_per_seconds", 1, 1 << 20, 25,
               &o->position_id_per_seconds, file, err))
    {
        return -1;
    }
    ac = json_object_get(th, "audio_config");
    if (ac == NULL || json_is_null(ac)) {
        return 0;
    }
    if (!json_is_object(ac)) {
        return clef_cfg_fail(err, file, "%saudio_config is not an object", p);
    }
    /* the config class has no default for it: the release states it */
    if (clef_cfg_int(th, p, "audio_end_token_id", 0, 1 << 28, -1,
            &o->audio_end_token_id, file, err) != 0)
    {
        return -1;
    }
    return parse_audio(ac, file, &cfg->audio, err);
}
