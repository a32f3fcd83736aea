/*
 * A Clef decision model in GGUF, as llama.cpp's converter writes it
 * (conversion/clef.py on top of its Qwen3.5 converter): the model's
 * configuration from the metadata, and every tensor of the release under
 * its canonical name, with what the converter did to it.
 *
 * The file: general.architecture = "clef", clef.decision.type = "clef",
 * the backbone's tensors as blk.N.*, the joint head's as decision.*,
 * dec.blk.N.* and token_types.weight.  The vision tower is not in it: the
 * converter writes it to a separate mmproj file (--mmproj; general.
 * architecture "clip", clip.vision.*, v.* and mm.* tensors), given here
 * beside the model.  A tower in the model file itself (v.* tensors and
 * clip.vision.* keys there) is read the same way.
 *
 * Metadata -> clef_text_config (model.h):
 *   clef.embedding_length             hidden_size
 *   clef.feed_forward_length          intermediate_size
 *   clef.block_count                  num_hidden_layers
 *   clef.attention.head_count(_kv)    num_attention_heads, num_key_value_heads
 *   clef.attention.key_length         head_dim (value_length must equal it)
 *   clef.attention.layer_norm_rms_epsilon   rms_norm_eps (an f32)
 *   clef.rope.freq_base               rope_theta
 *   clef.rope.dimension_count         partial_rotary_factor x head_dim
 *   clef.rope.dimension_sections      mrope_section (its 4th entry 0)
 *   clef.ssm.group_count              linear_num_key_heads
 *   clef.ssm.time_step_rank           linear_num_value_heads
 *   clef.ssm.state_size               linear_key_head_dim
 *   clef.ssm.inner_size               linear_value_head_dim x value heads
 *   clef.ssm.conv_kernel              linear_conv_kernel_dim
 *   clef.attention.recurrent_layers   layer_types (true: linear_attention);
 *                                     when absent, clef.full_attention_interval
 *   token_embd.weight rows            vocab_size
 *   attn_q.weight rows                attn_output_gate (2 x heads x head_dim)
 *   output.weight absent              tie_word_embeddings
 * -> clef_head_config: hidden_size the backbone's; routing_layers, layers,
 *   heads from clef.decision.{routing_block_count, block_count,
 *   head_count}; width and feedforward from decision.proj_memory and
 *   dec.blk.0's ffn_up shapes.  clef.attention.layer_norm_epsilon is the
 *   head's LayerNorm eps (1e-5, torch's default, as in the release).
 * -> clef_vision_config: clip.vision.{embedding_length, feed_forward_length,
 *   block_count, attention.head_count, patch_size, spatial_merge_size,
 *   projection_dim}; num_position_embeddings the rows of
 *   v.position_embd; in_channels from v.patch_embd; temporal_patch_size 2
 *   (the converter splits the Conv3d in two); image_mean/std into the
 *   processor, the rest of it the release's defaults; the image token ids
 *   by their tokens in tokenizer.ggml.tokens.
 *
 * Tensors: every canonical tensor of the role table (roles.h) is found
 * under the role's GGUF name, its shape checked (GGML's ne is the reverse
 * of the release's shape, the memory order the same: a row of a weight is
 * a row), and handed out as a clef_tensor view (tensor.h) of the release's
 * values.  What the converter changed (the role's CLEF_GGUF_* flags) is
 * undone without a copy of any large tensor:
 *   - vectors, conv taps, the head's scalars and the patch embedding (all
 *     small) are computed once at open into fp32, exactly as dequantized:
 *     RMSNorm weights stored as 1 + w give w = x - 1 (in f32, as the
 *     reference computes 1 + w back, the same value where x >= 0.5);
 *     A = -exp(A_log) gives log(-A), the head's scales exp(min(s, ln 100))
 *     log(v), its gate sigmoid(g) log(v / (1 - v)) (each in double,
 *     rounded to f32: within an ulp or two of the value the forward then
 *     computes back); conv1d [C, K] is the release's [C, 1, K]; the
 *     Conv3d patch embedding is joined from its two temporal Conv2d halves;
 *   - matrices are views of the mapped file: the head's in_proj (q, k, v
 *     stored apart, each in its own type) as three runs of rows; the gated
 *     delta rule's value heads, which the converter reorders from grouped
 *     (value head j with key head j / (Hv / Hk)) to tiled (key head
 *     j % Hk) when there are more value than key heads, as runs of rows
 *     in in_proj_qkv's V rows, in_proj_z, in_proj_a and in_proj_b, and as
 *     spans of columns in out_proj, whose blocks (256 values: two value
 *     heads of 128) cannot move: a reader converts the blocks a span
 *     touches and keeps its part (tensor.h);
 *   - the head's layers: routing blocks are dec.blk.0..R-1, decision
 *     blocks dec.blk.R.., one numbering.
 * llama-quantize keeps 1-D tensors and norms in F32; the rest may be any
 * block type of dtype.h.
 *
 * Clef Omni.  llama.cpp's Clef converter does not take a Clef Omni release
 * (conversion/clef.py is Qwen3.5's dense stack; its Qwen3-Omni support,
 * conversion/qwen3vl.py, writes the thinker as general.architecture
 * "qwen3vlmoe" and the towers to an mmproj, without the head).  `clef
 * mkmodel --gguf` writes the Omni thinker in the same manner, keys and
 * tensor names as llama.cpp's qwen3vlmoe and Qwen3-Omni mmproj files, the
 * head as in a Clef file:
 *   general.architecture = CLEF_GGUF_OMNI_ARCH ("clef-omni", so that no
 *   Qwen3-VL-MoE reader takes it for a plain LLM), and under that prefix:
 *   embedding_length, feed_forward_length (the dense MLP of the layers the
 *   release lists in mlp_only_layers), block_count, context_length,
 *   attention.{head_count, head_count_kv, key_length, value_length,
 *   layer_norm_rms_epsilon}, rope.{freq_base, dimension_count,
 *   dimension_sections} (as Clef's), expert_count, expert_used_count,
 *   expert_feed_forward_length, expert_weights_norm (norm_topk_prob),
 *   n_deepstack_layers, position_id_per_seconds (the thinker config's),
 *   decision.{type "clef", routing_block_count, block_count, head_count},
 *   attention.layer_norm_epsilon (the head's); tokenizer.ggml.* as Clef's.
 *   Every layer is full attention without an output gate, RMSNorm weights
 *   stored as the release holds them (no 1 + w); a layer routes when it
 *   has blk.N.ffn_gate_inp.weight (the router, [E][H], F32 after
 *   llama-quantize), its experts as three 3-D tensors
 *   blk.N.ffn_{gate,up,down}_exps.weight of GGML ne [H, I, E], [H, I, E]
 *   and [I, H, E] (expert e's matrix the e-th [rows][cols] slab: each
 *   expert's canonical tensor is a view of its slab, nothing copied, so
 *   only the routed experts' pages are read); the other layers have
 *   blk.N.ffn_{gate,up,down}.weight.  The token ids the thinker config
 *   states (image, video, audio pad, start, end) by their tokens.
 *   The mmproj (general.architecture "clip") holds the vision tower as
 *   Clef's with clip.vision.is_deepstack_layers true at each DeepStack
 *   merger's tower block and the mergers as v.deepstack.N.{norm, fc1,
 *   fc2} (N that block), and, when clip.has_audio_encoder, the audio
 *   tower as llama.cpp's Qwen3-Omni mmproj: clip.audio.{num_mel_bins,
 *   embedding_length, feed_forward_length, block_count,
 *   attention.head_count, projection_dim} and ours, absent from
 *   llama.cpp's files (transformers' defaults then): clip.audio.
 *   {n_window, n_window_infer, max_pos_emb}; tensors a.conv2d.{1,2,3}
 *   (biases [1, 1, C]), a.conv_out, a.blk.N.{attn_q, attn_k, attn_v,
 *   attn_out, ln1, ffn_up, ffn_down, ln2}, a.post_ln, mm.a.mlp.{1,2};
 *   the convolutions' channels from a.conv2d.1's shape.
 */
#ifndef CLEF_GGUF_CLEF_H
#define CLEF_GGUF_CLEF_H

#include <stdint.h>

#include "base/error.h"
#include "model/gguf.h"
#include "model/model.h"
#include "model/roles.h"

/* general.architecture of a Clef Omni GGUF, and its keys' prefix. */
#define CLEF_GGUF_OMNI_ARCH  "clef-omni"

/* One canonical tensor of the model. */
typedef struct {
    char          name[96];     /* canonical: "model.language_model.layers
                                   .0.mlp.up_proj.weight", "model.visual
                                   .…", "lm_head.weight", or a head
                                   tensor's name in joint_head.safetensors */
    int           head;         /* 1: a joint head tensor */
    clef_role     role;
    int           layer;
    clef_tensor   t;            /* the release's values (above) */
    const clef_gguf_tensor  *part[3];   /* the file's tensor(s) it is made
                                           of, in order */
    int           n_parts;
} clef_gguf_clef_tensor;

typedef struct clef_gguf_clef clef_gguf_clef;

/*
 * Opens a Clef GGUF (and its mmproj file, or NULL) and checks every
 * tensor the configuration implies: present, of the shape it implies.
 * Refuses a file that is not a Clef decision model with type
 * "not_a_decision_model" (501), saying what the file is and what to do: a
 * plain Qwen3.5 GGUF (general.architecture qwen35, converted before
 * llama.cpp's Clef support) has no joint head.  flags: CLEF_GGUF_HEADERS_ONLY
 * maps nothing.
 */
clef_gguf_clef *clef_gguf_clef_open(const char *path, const char *mmproj,
    int flags, clef_error *err);
void            clef_gguf_clef_close(clef_gguf_clef *m);

const clef_text_config   *clef_gguf_clef_text_config(const clef_gguf_clef *m);
const clef_head_config   *clef_gguf_clef_head_config(const clef_gguf_clef *m);
/* NULL without a tower. */
const clef_vision_config *clef_gguf_clef_vision_config(const clef_gguf_clef *m);
const clef_gguf          *clef_gguf_clef_file(const clef_gguf_clef *m);
/* Clef or Clef Omni; Omni's token ids and time scale (NULL for Clef);
 * its audio tower (NULL without one in the mmproj). */
clef_family               clef_gguf_clef_family(const clef_gguf_clef *m);
const clef_omni_config   *clef_gguf_clef_omni_config(const clef_gguf_clef *m);
const clef_audio_tower_config *clef_gguf_clef_audio_config(
    const clef_gguf_clef *m);
/* The file holding the tower (the mmproj, or the model's), or NULL. */
const clef_gguf   *clef_gguf_clef_vision_file(const clef_gguf_clef *m);

/* Every tensor of the release, backbone (and tower) then head: the views
 * stay valid until the model is closed.  Opened with headers only, the
 * views have no data (data NULL, no runs). */
size_t clef_gguf_clef_count(const clef_gguf_clef *m);
const clef_gguf_clef_tensor *clef_gguf_clef_at(const clef_gguf_clef *m,
    size_t i);
/* By canonical name; head: 1 for joint head tensors.  NULL when absent. */
const clef_gguf_clef_tensor *clef_gguf_clef_find(const clef_gguf_clef *m,
    const char *name, int head);

/* The token strings, types and merges of tokenizer.ggml.* as the
 * tokenizer constructor wants them (text/tokenizer.h). */
clef_tokenizer *clef_gguf_clef_tokenizer(const clef_gguf_clef *m,
    clef_error *err);

#endif
