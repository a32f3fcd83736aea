/*
 * A Clef Omni GGUF's configuration (gguf_clef.h, the key table there):
 * the thinker's text stack from the CLEF_GGUF_OMNI_ARCH.* keys, named as
 * llama.cpp's Qwen3-VL-MoE converter names them for its qwen3vlmoe files;
 * the token ids the thinker config states, by their tokens; the audio
 * tower from the mmproj's clip.audio.* keys and a.* tensors.
 */
#include "model/gguf_clef_impl.h"

#include <stdio.h>
#include <string.h>

#include "media/audio_features.h"
#include "model/model_config.h"

#define fail         clef_gguf_clef_fail
#define need_int     clef_gguf_clef_need_int
#define need_float   clef_gguf_clef_need_float
#define need_tensor  clef_gguf_clef_need_tensor
#define token_id     clef_gguf_clef_token_id

#define A  CLEF_GGUF_OMNI_ARCH "."

static int
opt_int(const clef_gguf *g, const char *key, int lo, int hi, int dflt,
    int *out, clef_error *err)
{
    int64_t  v;
    int      rc = clef_gguf_get_int(g, key, lo, hi, &v, err);

    if (rc < 0) {
        return -1;
    }
    *out = rc == 0 ? (int) v : dflt;
    return 0;
}

/* A BOOL key: 1 or 0, dflt when absent. */
static int
opt_bool(const clef_gguf *g, const char *key, int dflt, int *out,
    clef_error *err)
{
    const clef_gguf_value  *v = clef_gguf_get(g, key);

    if (v == NULL) {
        *out = dflt;
        return 0;
    }
    if (v->type != CLEF_GGUF_BOOL) {
        return fail(g, err, "%s is not a BOOL", key);
    }
    *out = v->v.u != 0;
    return 0;
}

/* Which layers route: those with a router (blk.N.ffn_gate_inp); the
 * others (the release's mlp_only_layers) have a dense MLP. */
static int
moe_layers(const clef_gguf *g, clef_text_config *c, clef_error *err)
{
    char  name[64];
    int   l, n = 0;

    for (l = 0; l < c->num_hidden_layers; l++) {
        snprintf(name, sizeof(name), "blk.%d.ffn_gate_inp.weight", l);
        c->layer_moe[l] = clef_gguf_tensor_find(g, name) != NULL;
        n += c->layer_moe[l];
    }
    if (n > 0 && c->num_experts < 1) {
        return fail(g, err, A "expert_count is missing for %d routed"
                    " layers", n);
    }
    return 0;
}

int
clef_gguf_clef_omni_text(const clef_gguf *g, clef_text_config *c,
    clef_error *err)
{
    const clef_gguf_tensor  *emb;
    const clef_gguf_value   *sec = NULL;
    int64_t                  s;
    int                      norm = 1;
    int                      vlen = 0, rope_dims = 0, l;

    memset(c, 0, sizeof(*c));
    if (need_int(g, A "embedding_length", 1, 1 << 20, &c->hidden_size, err)
        || need_int(g, A "feed_forward_length", 1, 1 << 20,
                    &c->intermediate_size, err)
        || need_int(g, A "block_count", 1, CLEF_MAX_LAYERS,
                    &c->num_hidden_layers, err)
        || need_int(g, A "attention.head_count", 1, 4096,
                    &c->num_attention_heads, err)
        || need_int(g, A "attention.head_count_kv", 1, 4096,
                    &c->num_key_value_heads, err)
        || need_int(g, A "attention.key_length", 1, 4096, &c->head_dim, err)
        || need_int(g, A "attention.value_length", 1, 4096, &vlen, err)
        || need_float(g, A "attention.layer_norm_rms_epsilon",
                      &c->rms_norm_eps, err)
        || need_float(g, A "rope.freq_base", &c->rope_theta, err)
        || opt_int(g, A "rope.dimension_count", 2, 4096, c->head_dim,
                   &rope_dims, err)
        || opt_int(g, A "expert_count", 0, 4096, 0, &c->num_experts, err))
    {
        return -1;
    }
    if (vlen != c->head_dim || rope_dims > c->head_dim
        || c->num_attention_heads % c->num_key_value_heads != 0)
    {
        return fail(g, err, "inconsistent attention sizes (heads %d/%d, key"
                    " length %d, value length %d, rope dims %d)",
                    c->num_attention_heads, c->num_key_value_heads,
                    c->head_dim, vlen, rope_dims);
    }
    if (c->num_experts > 0
        && (need_int(g, A "expert_used_count", 1,
                     c->num_experts < 64 ? c->num_experts : 64,
                     &c->num_experts_per_tok, err)
            || need_int(g, A "expert_feed_forward_length", 1, 1 << 20,
                        &c->moe_intermediate_size, err)
            || opt_bool(g, A "expert_weights_norm", 1, &norm, err) != 0))
    {
        return -1;
    }
    c->norm_topk_prob = norm;
    c->partial_rotary_factor = (double) rope_dims / c->head_dim;
    c->mrope_interleaved = 1;
    if (clef_gguf_get_arr(g, A "rope.dimension_sections", CLEF_GGUF_INT32,
                          &sec, err) < 0)
    {
        return -1;
    }
    for (l = 0; sec != NULL && l < 3 && (uint64_t) l < sec->v.arr.n; l++) {
        clef_gguf_arr_int(sec, (uint64_t) l, &s);
        if (s < 0 || s > 4096) {
            return fail(g, err, A "rope.dimension_sections[%d] is %lld", l,
                        (long long) s);
        }
        c->mrope_section[l] = (int) s;
    }
    if (sec == NULL) {
        c->mrope_section[0] = rope_dims / 2;
    }
    emb = need_tensor(g, "token_embd.weight", 2, err);
    if (emb == NULL) {
        return -1;
    }
    if (emb->ne[1] > (1 << 28)) {
        return fail(g, err, "token_embd.weight has %lld rows",
                    (long long) emb->ne[1]);
    }
    c->vocab_size = (int) emb->ne[1];
    c->tie_word_embeddings = clef_gguf_tensor_find(g, "output.weight") == NULL;
    for (l = 0; l < c->num_hidden_layers; l++) {
        c->layer_full[l] = 1;
    }
    /* the thinker: gated attention without an output gate, plain RMSNorm
     * weights (stored as they are) */
    c->attn_output_gate = 0;
    c->norm_plus_one = 0;
    if (moe_layers(g, c, err) != 0) {
        return -1;
    }
    clef_text_config_describe_layers(c);
    return 0;
}

int
clef_gguf_clef_omni_ids(const clef_gguf *g, clef_omni_config *o,
    clef_error *err)
{
    memset(o, 0, sizeof(*o));
    if (token_id(g, "<|audio_pad|>", &o->audio_token_id, err) != 0
        || token_id(g, "<|audio_start|>", &o->audio_start_token_id, err) != 0
        || token_id(g, "<|audio_end|>", &o->audio_end_token_id, err) != 0
        || token_id(g, "<|video_pad|>", &o->video_token_id, err) != 0
        || opt_int(g, A "position_id_per_seconds", 1, 1 << 20, 25,
                   &o->position_id_per_seconds, err) != 0)
    {
        return -1;
    }
    return 0;
}

int
clef_gguf_clef_omni_audio(const clef_gguf *g, const clef_gguf *vis,
    const clef_text_config *tc, clef_audio_tower_config *a, clef_error *err)
{
    const clef_gguf_tensor  *conv;
    int                      has = 0;

    memset(a, 0, sizeof(*a));
    if (opt_bool(vis, "clip.has_audio_encoder", 0, &has, err) != 0) {
        return -1;
    }
    if (!has) {
        return 0;
    }
    if (need_int(vis, "clip.audio.num_mel_bins", 1, 1024, &a->num_mel_bins,
                 err)
        || need_int(vis, "clip.audio.embedding_length", 1, 1 << 20,
                    &a->d_model, err)
        || need_int(vis, "clip.audio.feed_forward_length", 1, 1 << 20,
                    &a->encoder_ffn_dim, err)
        || need_int(vis, "clip.audio.block_count", 1, 256,
                    &a->encoder_layers, err)
        || need_int(vis, "clip.audio.attention.head_count", 1, 1024,
                    &a->encoder_attention_heads, err)
        || need_int(vis, "clip.audio.projection_dim", 1, 1 << 20,
                    &a->output_dim, err)
        /* not in llama.cpp's files: transformers' defaults then */
        || opt_int(vis, "clip.audio.n_window", 1, 1 << 16, 100, &a->n_window,
                   err)
        || opt_int(vis, "clip.audio.n_window_infer", 1, 1 << 20, 400,
                   &a->n_window_infer, err)
        || opt_int(vis, "clip.audio.max_pos_emb", 1, 1 << 20, 1500,
                   &a->max_source_positions, err))
    {
        return -1;
    }
    conv = need_tensor(vis, "a.conv2d.1.weight", 4, err);
    if (conv == NULL) {
        return -1;
    }
    if (conv->ne[3] > (1 << 20) || a->d_model % a->encoder_attention_heads
        || a->output_dim != tc->hidden_size)
    {
        return fail(vis, err, "unsupported audio sizes (d_model %d, %d heads,"
                    " projection %d for hidden size %d)", a->d_model,
                    a->encoder_attention_heads, a->output_dim,
                    tc->hidden_size);
    }
    a->downsample_hidden_size = (int) conv->ne[3];
    /* the feature extractor's settings are the release's
     * preprocessor_config.json, which a GGUF does not carry: Qwen3-Omni's
     * (the defaults) with as many mels as the tower takes, as the release
     * loader requires them to be */
    clef_audio_config_default(&a->features);
    a->features.n_mels = a->num_mel_bins;
    a->present = 1;
    return 0;
}
