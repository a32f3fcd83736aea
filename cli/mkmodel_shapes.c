/*
 * The shapes `clef mkmodel --shape NAME` knows, written in the --config
 * format (t/fixtures/models/README.md).  clef-flash and clef are the real
 * Qwen3.5-9B and 27B backbones and heads (docs/spec/backbone.md §1.2,
 * docs/spec/encoder-and-head.md §1), vision tower included in the config;
 * omni is Clef Omni's (§6: the thinker of Qwen3-Omni-30B-A3B with its
 * vision and audio towers), omni-tiny the same parts at toy sizes.
 */
#include "mkmodel.h"

#include <string.h>

#define REAL_VISION(out)                                                    \
    "\"vision_config\": {\"model_type\": \"qwen3_5\", \"depth\": 27,"       \
    " \"hidden_size\": 1152, \"intermediate_size\": 4304, \"num_heads\": 16," \
    " \"in_channels\": 3, \"patch_size\": 16, \"temporal_patch_size\": 2,"  \
    " \"spatial_merge_size\": 2, \"num_position_embeddings\": 2304,"        \
    " \"hidden_act\": \"gelu_pytorch_tanh\", \"deepstack_visual_indexes\": []," \
    " \"out_hidden_size\": " #out "}"

#define REAL_TEXT                                                           \
    "\"num_key_value_heads\": 4, \"head_dim\": 256,"                        \
    " \"linear_num_key_heads\": 16, \"linear_key_head_dim\": 128,"          \
    " \"linear_value_head_dim\": 128, \"linear_conv_kernel_dim\": 4,"       \
    " \"full_attention_interval\": 4, \"rms_norm_eps\": 1e-6,"              \
    " \"max_position_embeddings\": 262144, \"attn_output_gate\": true,"     \
    " \"tie_word_embeddings\": false,"                                      \
    " \"rope_parameters\": {\"rope_type\": \"default\", \"rope_theta\": 10000000," \
    " \"partial_rotary_factor\": 0.25, \"mrope_interleaved\": true,"        \
    " \"mrope_section\": [11, 11, 10]},"

/* Clef Omni: Qwen3-Omni-30B-A3B's thinker (docs/spec/backbone.md §6) */
#define OMNI_TEXT                                                           \
    "\"model_type\": \"qwen3_omni_moe_text\", \"rms_norm_eps\": 1e-6,"      \
    " \"rope_theta\": 1000000, \"norm_topk_prob\": true,"                  \
    " \"decoder_sparse_step\": 1,"

static const mkmodel_shape  shapes[] = {
    { "tiny",
      "{\"hidden_size\": 64, \"intermediate_size\": 128, \"num_hidden_layers\": 4,"
      " \"layer_types\": [\"linear_attention\", \"linear_attention\","
      " \"linear_attention\", \"full_attention\"],"
      " \"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"head_dim\": 32,"
      " \"linear_num_key_heads\": 2, \"linear_num_value_heads\": 4,"
      " \"linear_key_head_dim\": 16, \"linear_value_head_dim\": 16,"
      " \"linear_conv_kernel_dim\": 4, \"rms_norm_eps\": 1e-6,"
      " \"rope_parameters\": {\"rope_type\": \"default\", \"rope_theta\": 10000000,"
      " \"partial_rotary_factor\": 0.25},"
      " \"tie_word_embeddings\": false,"
      " \"head\": {\"width\": 32, \"routing_layers\": 2, \"layers\": 2, \"heads\": 4,"
      " \"feedforward\": 64}}",
      1 },

    /* CPU benchmarks: the 9B's ratios at a quarter of its width. */
    { "medium",
      "{\"hidden_size\": 1024, \"intermediate_size\": 3072, \"num_hidden_layers\": 8,"
      " \"full_attention_interval\": 4,"
      " \"num_attention_heads\": 8, \"num_key_value_heads\": 2, \"head_dim\": 128,"
      " \"linear_num_key_heads\": 8, \"linear_num_value_heads\": 16,"
      " \"linear_key_head_dim\": 64, \"linear_value_head_dim\": 64,"
      " \"linear_conv_kernel_dim\": 4, \"rms_norm_eps\": 1e-6,"
      " \"rope_parameters\": {\"rope_type\": \"default\", \"rope_theta\": 10000000,"
      " \"partial_rotary_factor\": 0.25},"
      " \"tie_word_embeddings\": false,"
      " \"head\": {\"width\": 256, \"routing_layers\": 2, \"layers\": 4, \"heads\": 4,"
      " \"feedforward\": 1024}}",
      2 },

    { "clef-flash",
      "{\"vocab_size\": 248320, \"hidden_size\": 4096, \"intermediate_size\": 12288,"
      " \"num_hidden_layers\": 32, \"num_attention_heads\": 16,"
      " \"linear_num_value_heads\": 32, " REAL_TEXT
      " \"head\": {\"width\": 1024, \"routing_layers\": 2, \"layers\": 4, \"heads\": 16,"
      " \"feedforward\": 4096}, " REAL_VISION(4096) "}",
      4 },

    /* tests: every part of Clef Omni at toy sizes, a dense layer among the
     * routed ones, three DeepStack mergers, an audio tower */
    { "omni-tiny",
      "{" OMNI_TEXT " \"hidden_size\": 64, \"intermediate_size\": 96,"
      " \"num_hidden_layers\": 4, \"mlp_only_layers\": [2],"
      " \"num_attention_heads\": 4, \"num_key_value_heads\": 2,"
      " \"head_dim\": 32, \"num_experts\": 8, \"num_experts_per_tok\": 2,"
      " \"moe_intermediate_size\": 48,"
      " \"rope_scaling\": {\"mrope_section\": [6, 5, 5]},"
      " \"vision_config\": {\"depth\": 4, \"hidden_size\": 32,"
      " \"intermediate_size\": 64, \"num_heads\": 2, \"in_channels\": 3,"
      " \"patch_size\": 16, \"temporal_patch_size\": 2,"
      " \"spatial_merge_size\": 2, \"num_position_embeddings\": 16,"
      " \"hidden_act\": \"gelu_pytorch_tanh\","
      " \"deepstack_visual_indexes\": [1, 2, 3]},"
      " \"audio_config\": {\"num_mel_bins\": 128, \"d_model\": 32,"
      " \"encoder_layers\": 2, \"encoder_attention_heads\": 2,"
      " \"encoder_ffn_dim\": 64, \"downsample_hidden_size\": 16,"
      " \"n_window\": 50, \"n_window_infer\": 800,"
      " \"max_source_positions\": 1500, \"activation_function\": \"gelu\"},"
      " \"head\": {\"width\": 32, \"routing_layers\": 2, \"layers\": 2,"
      " \"heads\": 4, \"feedforward\": 64}}",
      2 },

    { "omni",
      "{" OMNI_TEXT " \"vocab_size\": 152064, \"hidden_size\": 2048,"
      " \"intermediate_size\": 768, \"num_hidden_layers\": 48,"
      " \"num_attention_heads\": 32, \"num_key_value_heads\": 4,"
      " \"head_dim\": 128, \"num_experts\": 128, \"num_experts_per_tok\": 8,"
      " \"moe_intermediate_size\": 768, \"max_position_embeddings\": 65536,"
      " \"rope_scaling\": {\"mrope_section\": [24, 20, 20]},"
      " \"vision_config\": {\"depth\": 27, \"hidden_size\": 1152,"
      " \"intermediate_size\": 4304, \"num_heads\": 16, \"in_channels\": 3,"
      " \"patch_size\": 16, \"temporal_patch_size\": 2,"
      " \"spatial_merge_size\": 2, \"num_position_embeddings\": 2304,"
      " \"hidden_act\": \"gelu_pytorch_tanh\","
      " \"deepstack_visual_indexes\": [8, 16, 24]},"
      " \"audio_config\": {\"num_mel_bins\": 128, \"d_model\": 1280,"
      " \"encoder_layers\": 32, \"encoder_attention_heads\": 20,"
      " \"encoder_ffn_dim\": 5120, \"downsample_hidden_size\": 480,"
      " \"n_window\": 50, \"n_window_infer\": 800,"
      " \"max_source_positions\": 1500, \"activation_function\": \"gelu\"},"
      " \"head\": {\"width\": 1024, \"routing_layers\": 2, \"layers\": 4,"
      " \"heads\": 16, \"feedforward\": 4096}}",
      16 },

    { "clef",
      "{\"vocab_size\": 248320, \"hidden_size\": 5120, \"intermediate_size\": 17408,"
      " \"num_hidden_layers\": 64, \"num_attention_heads\": 24,"
      " \"linear_num_value_heads\": 48, " REAL_TEXT
      " \"head\": {\"width\": 1024, \"routing_layers\": 2, \"layers\": 4, \"heads\": 16,"
      " \"feedforward\": 4096}, " REAL_VISION(5120) "}",
      18 },
};

const mkmodel_shape *
mkmodel_shape_find(const char *name)
{
    size_t  i;

    for (i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
        if (strcmp(shapes[i].name, name) == 0) {
            return &shapes[i];
        }
    }
    return NULL;
}

void
mkmodel_shape_list(FILE *f)
{
    size_t  i;

    for (i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
        fprintf(f, "%s%s", i ? ", " : "", shapes[i].name);
    }
    fprintf(f, "\n");
}
