/*
 * A Clef GGUF's configuration and tensors (gguf_clef.h).  The canonical
 * tensor list is the release's own (model_config.c, model_vision.c); each
 * canonical name is translated into the GGUF tensor(s) the converter made
 * of it by the rules below, and their shapes checked against the
 * configuration.
 */
#include "model/gguf_clef.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/model_config.h"
#include "model/model_vision.h"
#include "text/tokenizer.h"

struct clef_gguf_clef {
    clef_gguf               *g;
    clef_gguf               *mm;        /* the mmproj file, or NULL */
    const clef_gguf         *vis;       /* where the tower is: g, mm, NULL */
    clef_text_config         text;
    clef_head_config         head;
    clef_vision_config       vision;
    clef_gguf_clef_tensor   *t;
    size_t                   n_t;
    size_t                   cap_t;
};

typedef struct {
    clef_gguf_clef  *m;
    clef_error      *err;
    int              head;
} build_ctx;

static int
fail(const clef_gguf *g, clef_error *err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int
fail(const clef_gguf *g, clef_error *err, const char *fmt, ...)
{
    char     msg[400];
    va_list  ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return clef_error_fail(err, CLEF_E_MODEL, "%s: %s", clef_gguf_path(g), msg);
}

/* A required integer key into an int. */
static int
need_int(const clef_gguf *g, const char *key, int lo, int hi, int *out,
    clef_error *err)
{
    int64_t  v;
    int      rc = clef_gguf_get_int(g, key, lo, hi, &v, err);

    if (rc == 1) {
        return fail(g, err, "%s is missing", key);
    }
    if (rc == 0) {
        *out = (int) v;
    }
    return rc;
}

static int
need_float(const clef_gguf *g, const char *key, double *out, clef_error *err)
{
    int  rc = clef_gguf_get_float(g, key, out, err);

    return rc == 1 ? fail(g, err, "%s is missing", key) : rc;
}

/* ---- what the file is ------------------------------------------------ */

static int
is_str(const clef_gguf_str *s, const char *want)
{
    return s != NULL && s->len == strlen(want) && memcmp(s->s, want, s->len) == 0;
}

static int
not_decision(const clef_gguf *g, clef_error *err, const char *what)
{
    return clef_error_set(err, 501, "not_a_decision_model", NULL,
                          "not a decision model: '%s' %s", clef_gguf_path(g),
                          what);
}

static int
check_kind(const clef_gguf *g, clef_error *err)
{
    const clef_gguf_str  *arch = NULL, *dt = NULL;
    char                  what[400];

    if (clef_gguf_get_str(g, "general.architecture", &arch, err) < 0) {
        return -1;
    }
    if (arch == NULL) {
        return not_decision(g, err, "has no general.architecture");
    }
    if (is_str(arch, "clip")) {
        return not_decision(g, err, "is a vision projector (mmproj) file, not"
                            " the model: give the model's GGUF, and this file"
                            " as its mmproj");
    }
    if (is_str(arch, "qwen35") || is_str(arch, "qwen35moe")
        || is_str(arch, "qwen3next"))
    {
        snprintf(what, sizeof(what), "is a plain Qwen3.5 GGUF"
                 " (general.architecture \"%.20s\", converted before llama.cpp"
                 " had Clef support): it has no joint schema head.  Use a Clef"
                 " GGUF (general.architecture \"clef\", e.g. ggml-org's"
                 " Clef-Flash-GGUF), or convert the Clef release with a current"
                 " llama.cpp's convert_hf_to_gguf.py", arch->s);
        return not_decision(g, err, what);
    }
    if (!is_str(arch, "clef")) {
        snprintf(what, sizeof(what), "is a GGUF of architecture \"%.40s\", not"
                 " a Clef decision model (general.architecture \"clef\")",
                 arch->s);
        return not_decision(g, err, what);
    }
    if (clef_gguf_get_str(g, "clef.decision.type", &dt, err) < 0) {
        return -1;
    }
    if (!is_str(dt, "clef")) {
        return not_decision(g, err, "has no clef.decision.type \"clef\": convert"
                            " the Clef release again with a current llama.cpp");
    }
    return 0;
}

/* ---- configuration --------------------------------------------------- */

static const clef_gguf_tensor *
need_tensor(const clef_gguf *g, const char *name, int ndim, clef_error *err)
{
    const clef_gguf_tensor  *t = clef_gguf_tensor_find(g, name);

    if (t == NULL) {
        fail(g, err, "has no tensor '%s'", name);
        return NULL;
    }
    if (t->ndim != ndim) {
        fail(g, err, "tensor '%s' has %d dimensions, not %d", name, t->ndim,
             ndim);
        return NULL;
    }
    return t;
}

static int
text_layers(const clef_gguf *g, clef_text_config *c, clef_error *err)
{
    const clef_gguf_value  *rec = NULL;
    int64_t                 v;
    int                     l, every = 4, rc;

    rc = clef_gguf_get_arr(g, "clef.attention.recurrent_layers", CLEF_GGUF_BOOL,
                           &rec, err);
    if (rc < 0) {
        return -1;
    }
    if (rc == 0) {
        if (rec->v.arr.n != (uint64_t) c->num_hidden_layers) {
            return fail(g, err, "clef.attention.recurrent_layers has %llu"
                        " entries for %d layers",
                        (unsigned long long) rec->v.arr.n, c->num_hidden_layers);
        }
        for (l = 0; l < c->num_hidden_layers; l++) {
            clef_gguf_arr_int(rec, (uint64_t) l, &v);
            c->layer_full[l] = v == 0;
        }
    } else {
        if (clef_gguf_get_int(g, "clef.full_attention_interval", 1, 1024, &v,
                              err) < 0)
        {
            return -1;
        }
        every = clef_gguf_get(g, "clef.full_attention_interval") ? (int) v : 4;
        for (l = 0; l < c->num_hidden_layers; l++) {
            c->layer_full[l] = (l + 1) % every == 0;
        }
    }
    clef_text_config_describe_layers(c);
    return 0;
}

static int
text_config(const clef_gguf *g, clef_text_config *c, clef_error *err)
{
    const clef_gguf_tensor  *emb, *q;
    const clef_gguf_value   *sec = NULL;
    int                      inner = 0, vlen = 0, rope_dims = 0, l;
    int64_t                  s;

    memset(c, 0, sizeof(*c));
    if (need_int(g, "clef.embedding_length", 1, 1 << 20, &c->hidden_size, err)
        || need_int(g, "clef.feed_forward_length", 1, 1 << 20,
                    &c->intermediate_size, err)
        || need_int(g, "clef.block_count", 1, CLEF_MAX_LAYERS,
                    &c->num_hidden_layers, err)
        || need_int(g, "clef.attention.head_count", 1, 4096,
                    &c->num_attention_heads, err)
        || need_int(g, "clef.attention.head_count_kv", 1, 4096,
                    &c->num_key_value_heads, err)
        || need_int(g, "clef.attention.key_length", 1, 4096, &c->head_dim, err)
        || need_int(g, "clef.attention.value_length", 1, 4096, &vlen, err)
        || need_int(g, "clef.ssm.group_count", 1, 4096,
                    &c->linear_num_key_heads, err)
        || need_int(g, "clef.ssm.time_step_rank", 1, 4096,
                    &c->linear_num_value_heads, err)
        || need_int(g, "clef.ssm.state_size", 1, 4096,
                    &c->linear_key_head_dim, err)
        || need_int(g, "clef.ssm.inner_size", 1, 1 << 24, &inner, err)
        || need_int(g, "clef.ssm.conv_kernel", 1, 64,
                    &c->linear_conv_kernel_dim, err)
        || need_int(g, "clef.rope.dimension_count", 2, 4096, &rope_dims, err)
        || need_float(g, "clef.attention.layer_norm_rms_epsilon",
                      &c->rms_norm_eps, err)
        || need_float(g, "clef.rope.freq_base", &c->rope_theta, err))
    {
        return -1;
    }
    if (vlen != c->head_dim) {
        return fail(g, err, "clef.attention.value_length %d differs from"
                    " key_length %d", vlen, c->head_dim);
    }
    if (inner % c->linear_num_value_heads != 0
        || c->linear_num_value_heads % c->linear_num_key_heads != 0
        || c->num_attention_heads % c->num_key_value_heads != 0
        || rope_dims > c->head_dim)
    {
        return fail(g, err, "inconsistent head counts (ssm.inner_size %d,"
                    " time_step_rank %d, group_count %d, heads %d/%d, rope"
                    " dims %d of %d)", inner, c->linear_num_value_heads,
                    c->linear_num_key_heads, c->num_attention_heads,
                    c->num_key_value_heads, rope_dims, c->head_dim);
    }
    c->linear_value_head_dim = inner / c->linear_num_value_heads;
    c->partial_rotary_factor = (double) rope_dims / c->head_dim;
    c->mrope_interleaved = 1;
    if (clef_gguf_get_arr(g, "clef.rope.dimension_sections", CLEF_GGUF_INT32,
                          &sec, err) < 0)
    {
        return -1;
    }
    for (l = 0; sec != NULL && l < 3 && (uint64_t) l < sec->v.arr.n; l++) {
        clef_gguf_arr_int(sec, (uint64_t) l, &s);
        if (s < 0 || s > rope_dims / 2) {
            return fail(g, err, "clef.rope.dimension_sections[%d] is %lld", l,
                        (long long) s);
        }
        c->mrope_section[l] = (int) s;
    }
    if (sec == NULL) {
        c->mrope_section[0] = rope_dims / 2;    /* all pairs on T: 1-D RoPE */
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
    if (text_layers(g, c, err) != 0) {
        return -1;
    }
    c->attn_output_gate = 1;
    for (l = 0; l < c->num_hidden_layers; l++) {
        char  name[64];

        if (!c->layer_full[l]) {
            continue;
        }
        snprintf(name, sizeof(name), "blk.%d.attn_q.weight", l);
        q = need_tensor(g, name, 2, err);
        if (q == NULL) {
            return -1;
        }
        c->attn_output_gate = q->ne[1]
            == 2 * (int64_t) c->num_attention_heads * c->head_dim;
        break;
    }
    return 0;
}

static int
head_config(const clef_gguf *g, const clef_text_config *tc,
    clef_head_config *h, clef_error *err)
{
    const clef_gguf_tensor  *mem, *up;

    memset(h, 0, sizeof(*h));
    h->hidden_size = tc->hidden_size;
    if (need_int(g, "clef.decision.routing_block_count", 0, 1024,
                 &h->routing_layers, err)
        || need_int(g, "clef.decision.block_count", 0, 1024, &h->layers, err)
        || need_int(g, "clef.decision.head_count", 1, 4096, &h->heads, err))
    {
        return -1;
    }
    mem = need_tensor(g, "decision.proj_memory.weight", 2, err);
    up = need_tensor(g, "dec.blk.0.ffn_up.weight", 2, err);
    if (mem == NULL || up == NULL) {
        return -1;
    }
    if (mem->ne[1] > (1 << 20) || up->ne[1] > (1 << 20)
        || mem->ne[1] % h->heads != 0)
    {
        return fail(g, err, "the head's width %lld does not suit %d heads",
                    (long long) mem->ne[1], h->heads);
    }
    h->width = (int) mem->ne[1];
    h->feedforward = (int) up->ne[1];
    return 0;
}

static int
token_id(const clef_gguf *g, const char *tok, int *out, clef_error *err)
{
    const clef_gguf_value  *toks = NULL;
    const clef_gguf_str    *s;
    uint64_t                i;

    if (clef_gguf_get_arr(g, "tokenizer.ggml.tokens", CLEF_GGUF_STRING, &toks,
                          err) != 0)
    {
        return toks == NULL && err->code == CLEF_E_NONE
               ? fail(g, err, "tokenizer.ggml.tokens is missing") : -1;
    }
    for (i = 0; i < toks->v.arr.n; i++) {
        s = clef_gguf_arr_str(toks, i);
        if (is_str(s, tok)) {
            *out = (int) i;
            return 0;
        }
    }
    return fail(g, err, "the vocabulary has no %s token, which images need", tok);
}

static int
vision_config(const clef_gguf *g, const clef_gguf *vis, clef_vision_config *v,
    clef_error *err)
{
    const clef_gguf_tensor  *pos, *patch;
    const clef_gguf_value   *mean = NULL, *std = NULL;
    double                   f;
    int                      i;

    memset(v, 0, sizeof(*v));
    if (need_int(vis, "clip.vision.block_count", 1, 1024, &v->depth, err)
        || need_int(vis, "clip.vision.embedding_length", 1, 1 << 16,
                    &v->hidden_size, err)
        || need_int(vis, "clip.vision.feed_forward_length", 1, 1 << 20,
                    &v->intermediate_size, err)
        || need_int(vis, "clip.vision.attention.head_count", 1, 1024,
                    &v->num_heads, err)
        || need_int(vis, "clip.vision.patch_size", 1, 1024, &v->patch_size, err)
        || need_int(vis, "clip.vision.spatial_merge_size", 1, 64,
                    &v->spatial_merge_size, err)
        || need_int(vis, "clip.vision.projection_dim", 1, 1 << 20,
                    &v->out_hidden_size, err))
    {
        return -1;
    }
    pos = need_tensor(vis, "v.position_embd.weight", 2, err);
    patch = need_tensor(vis, "v.patch_embd.weight", 4, err);
    if (pos == NULL || patch == NULL) {
        return -1;
    }
    if (clef_gguf_tensor_find(vis, "v.patch_embd.weight.1") == NULL) {
        return fail(vis, err, "has no tensor 'v.patch_embd.weight.1': only a"
                    " temporal patch of 2 (the converter's two Conv2d halves)"
                    " is supported");
    }
    if (pos->ne[1] > (1 << 20) || v->hidden_size % v->num_heads != 0) {
        return fail(vis, err, "unsupported vision sizes");
    }
    v->present = 1;
    v->num_position_embeddings = (int) pos->ne[1];
    v->in_channels = (int) patch->ne[2];
    v->temporal_patch_size = 2;
    v->rope_theta = 10000.0;
    if (token_id(g, "<|image_pad|>", &v->image_token_id, err) != 0
        || token_id(g, "<|vision_start|>", &v->vision_start_token_id, err) != 0
        || token_id(g, "<|vision_end|>", &v->vision_end_token_id, err) != 0)
    {
        return -1;
    }
    clef_processor_config_default(&v->processor);
    v->processor.patch_size = v->patch_size;
    v->processor.temporal_patch_size = v->temporal_patch_size;
    v->processor.merge_size = v->spatial_merge_size;
    if (clef_gguf_get_arr(vis, "clip.vision.image_mean", CLEF_GGUF_FLOAT32,
                          &mean, err) < 0
        || clef_gguf_get_arr(vis, "clip.vision.image_std", CLEF_GGUF_FLOAT32,
                             &std, err) < 0)
    {
        return -1;
    }
    for (i = 0; i < 3; i++) {
        if (mean != NULL && mean->v.arr.n == 3) {
            clef_gguf_arr_float(mean, (uint64_t) i, &f);
            v->processor.mean[i] = f;
        }
        if (std != NULL && std->v.arr.n == 3) {
            clef_gguf_arr_float(std, (uint64_t) i, &f);
            v->processor.std[i] = f;
        }
    }
    return 0;
}

/* ---- canonical names -> GGUF tensors --------------------------------- */

typedef enum {
    VK_NONE = 0,
    VK_QKV,         /* rows after q and k, dv per head */
    VK_DV,          /* rows, dv per head */
    VK_ONE,         /* rows (or elements), one per head */
    VK_COLS         /* columns, dv per head */
} vkind;

typedef struct {
    const char  *from;          /* canonical, after the layer prefix */
    const char  *to;            /* GGUF, after "blk.N." */
    clef_ggx     xform;
    vkind        v;
} rule;

static const rule  layer_rules[] = {
    { "input_layernorm.weight",          "attn_norm.weight",  CLEF_GGX_PLUS_ONE, VK_NONE },
    { "post_attention_layernorm.weight", "post_attention_norm.weight",
                                                              CLEF_GGX_PLUS_ONE, VK_NONE },
    { "mlp.gate_proj.weight",            "ffn_gate.weight",   CLEF_GGX_NONE, VK_NONE },
    { "mlp.up_proj.weight",              "ffn_up.weight",     CLEF_GGX_NONE, VK_NONE },
    { "mlp.down_proj.weight",            "ffn_down.weight",   CLEF_GGX_NONE, VK_NONE },
    { "linear_attn.in_proj_qkv.weight",  "attn_qkv.weight",   CLEF_GGX_NONE, VK_QKV },
    { "linear_attn.in_proj_z.weight",    "attn_gate.weight",  CLEF_GGX_NONE, VK_DV },
    { "linear_attn.in_proj_b.weight",    "ssm_beta.weight",   CLEF_GGX_NONE, VK_ONE },
    { "linear_attn.in_proj_a.weight",    "ssm_alpha.weight",  CLEF_GGX_NONE, VK_ONE },
    { "linear_attn.conv1d.weight",       "ssm_conv1d.weight", CLEF_GGX_NONE, VK_QKV },
    { "linear_attn.dt_bias",             "ssm_dt.bias",       CLEF_GGX_NONE, VK_ONE },
    { "linear_attn.A_log",               "ssm_a",             CLEF_GGX_NEG_EXP, VK_ONE },
    { "linear_attn.norm.weight",         "ssm_norm.weight",   CLEF_GGX_NONE, VK_NONE },
    { "linear_attn.out_proj.weight",     "ssm_out.weight",    CLEF_GGX_NONE, VK_COLS },
    { "self_attn.q_proj.weight",         "attn_q.weight",     CLEF_GGX_NONE, VK_NONE },
    { "self_attn.k_proj.weight",         "attn_k.weight",     CLEF_GGX_NONE, VK_NONE },
    { "self_attn.v_proj.weight",         "attn_v.weight",     CLEF_GGX_NONE, VK_NONE },
    { "self_attn.o_proj.weight",         "attn_output.weight", CLEF_GGX_NONE, VK_NONE },
    { "self_attn.q_norm.weight",         "attn_q_norm.weight", CLEF_GGX_PLUS_ONE, VK_NONE },
    { "self_attn.k_norm.weight",         "attn_k_norm.weight", CLEF_GGX_PLUS_ONE, VK_NONE },
};

/* Prefix renames: canonical prefix -> GGUF prefix (the rest kept). */
typedef struct {
    const char  *from;
    const char  *to;
} prefix_rule;

static const prefix_rule  head_top[] = {
    { "hidden_norm.",                 "decision.hidden_norm." },
    { "memory_projection.",           "decision.proj_memory." },
    { "question_projection.",         "decision.proj_question." },
    { "option_question_projection.",  "decision.proj_option_question." },
    { "global_projection.",           "decision.proj_global." },
    { "option_context_projection.",   "decision.proj_option_context." },
    { "option_lexical_projection.",   "decision.proj_option_lexical." },
    { "type_embedding.",              "token_types." },
    { "option_summary_norm.",         "decision.option_summary_norm." },
    { "field_norm.",                  "decision.field_norm." },
    { "option_norm.",                 "decision.option_norm." },
    { "residual_scorer.0.",           "decision.scorer." },
    { "residual_scorer.3.",           "decision.scorer_out." },
};

/* inside evidence_layers.N (dec.blk.N) */
static const prefix_rule  head_routing[] = {
    { "query_norm.",           "cross_attn_norm." },
    { "memory_norm.",          "cross_attn_norm_kv." },
    { "attention.out_proj.",   "cross_attn_o." },
    { "attention.in_proj_",    "cross_attn_" },     /* split in q, k, v */
    { "feedforward_norm.",     "ffn_norm." },
    { "feedforward.0.",        "ffn_up." },
    { "feedforward.3.",        "ffn_down." },
};

/* inside layers.N (dec.blk.R+N) */
static const prefix_rule  head_decoder[] = {
    { "self_attn.out_proj.",       "attn_o." },
    { "self_attn.in_proj_",        "attn_" },
    { "multihead_attn.out_proj.",  "cross_attn_o." },
    { "multihead_attn.in_proj_",   "cross_attn_" },
    { "linear1.",                  "ffn_up." },
    { "linear2.",                  "ffn_down." },
    { "norm1.",                    "attn_norm." },
    { "norm2.",                    "cross_attn_norm." },
    { "norm3.",                    "ffn_norm." },
};

/* inside model.visual.blocks.N (v.blk.N) */
static const prefix_rule  vision_block[] = {
    { "norm1.",           "ln1." },
    { "norm2.",           "ln2." },
    { "attn.qkv.",        "attn_qkv." },
    { "attn.proj.",       "attn_out." },
    { "mlp.linear_fc1.",  "ffn_up." },
    { "mlp.linear_fc2.",  "ffn_down." },
};

static const prefix_rule  vision_top[] = {
    { "merger.norm.",        "v.post_ln." },
    { "merger.linear_fc1.",  "mm.0." },
    { "merger.linear_fc2.",  "mm.2." },
    { "patch_embed.proj.bias", "v.patch_embd.bias" },
    { "pos_embed.weight",    "v.position_embd.weight" },
};

/* out = to + the rest of name after from, for the first rule that fits. */
static const prefix_rule *
apply(const prefix_rule *r, size_t n, const char *name, char *out, size_t size)
{
    size_t  i, k;

    for (i = 0; i < n; i++) {
        k = strlen(r[i].from);
        if (strncmp(name, r[i].from, k) == 0) {
            snprintf(out, size, "%s%s", r[i].to, name + k);
            return &r[i];
        }
    }
    return NULL;
}

#define N_OF(a)  (sizeof(a) / sizeof((a)[0]))

static int
add_entry(build_ctx *b, const clef_tensor_spec *s, clef_gguf_clef_tensor **out)
{
    clef_gguf_clef  *m = b->m;
    void            *p;

    if (m->n_t == m->cap_t) {
        m->cap_t = m->cap_t ? 2 * m->cap_t : 256;
        p = realloc(m->t, m->cap_t * sizeof(*m->t));
        if (p == NULL) {
            return clef_error_fail(b->err, CLEF_E_NO_MEMORY, "out of memory");
        }
        m->t = p;
    }
    *out = &m->t[m->n_t++];
    memset(*out, 0, sizeof(**out));
    snprintf((*out)->name, sizeof((*out)->name), "%s", s->name);
    (*out)->head = b->head;
    (*out)->ndim = s->ndim;
    memcpy((*out)->shape, s->shape, sizeof(s->shape));
    return 0;
}

/* Dims without the trailing ones: GGML counts a tensor's dimensions up to
 * its last one above 1 (llama-quantize writes residual_scorer.3.weight
 * [1, W] as ne [W]), the converter as torch does. */
static int
dims(int ndim, const int64_t *ne)
{
    while (ndim > 1 && ne[ndim - 1] == 1) {
        ndim--;
    }
    return ndim;
}

/* Finds a part and checks its GGML shape (ndim dims in ne). */
static int
part(build_ctx *b, const clef_gguf *g, clef_gguf_clef_tensor *e,
    const char *gname, int ndim, const int64_t *ne)
{
    const clef_gguf_tensor  *t = clef_gguf_tensor_find(g, gname);
    char                     got[80], want[80];
    int64_t                  rev[4];
    int                      j, nd;

    if (t == NULL) {
        return fail(g, b->err, "has no tensor '%s' (the release's %s)", gname,
                    e->name);
    }
    nd = dims(ndim, ne);
    if (dims(t->ndim, t->ne) != nd
        || memcmp(t->ne, ne, (size_t) nd * sizeof(*ne)) != 0)
    {
        for (j = 0; j < t->ndim; j++) {
            rev[j] = t->ne[t->ndim - 1 - j];
        }
        clef_shape_format(got, sizeof(got), t->ndim, rev);
        for (j = 0; j < ndim; j++) {
            rev[j] = ne[ndim - 1 - j];
        }
        clef_shape_format(want, sizeof(want), ndim, rev);
        return fail(g, b->err, "tensor '%s' is %s, the configuration implies %s"
                    " (the release's %s)", gname, got, want, e->name);
    }
    e->part[e->n_parts++] = t;
    return 0;
}

/* The GGML dims of a canonical shape: reversed. */
static int
ggml_dims(const clef_tensor_spec *s, int64_t *ne)
{
    int  j;

    for (j = 0; j < s->ndim; j++) {
        ne[j] = s->shape[s->ndim - 1 - j];
    }
    return s->ndim;
}

/* A canonical tensor split in q, k, v (in_proj_weight / in_proj_bias). */
static int
split_qkv(build_ctx *b, clef_gguf_clef_tensor *e, const clef_tensor_spec *s,
    const char *gprefix, const char *kind)
{
    static const char  qkv[] = "qkv";
    int64_t            ne[2];
    char               name[320];
    int                i;

    ne[0] = s->ndim == 2 ? s->shape[1] : s->shape[0] / 3;
    ne[1] = s->shape[0] / 3;
    for (i = 0; i < 3; i++) {
        snprintf(name, sizeof(name), "%s%c.%s", gprefix, qkv[i], kind);
        if (part(b, b->m->g, e, name, s->ndim, ne) != 0) {
            return -1;
        }
    }
    return 0;
}

static int
on_head(const clef_tensor_spec *s, void *ctx)
{
    static const char       *scalars[] = {
        "prior_logit_scale", "joint_logit_scale", "residual_gate"
    };
    build_ctx               *b = ctx;
    const clef_gguf         *g = b->m->g;
    clef_gguf_clef_tensor   *e;
    const prefix_rule            *r;
    char                     rest[96], gname[256], prefix[48];
    int64_t                  ne[4], three = 3;
    int                      i, layer, n, routing = b->m->head.routing_layers;

    if (add_entry(b, s, &e) != 0) {
        return -1;
    }
    for (i = 0; i < 3; i++) {
        if (strcmp(s->name, scalars[i]) == 0) {
            e->elem = i;
            e->xform = i < 2 ? CLEF_GGX_SCALE_EXP : CLEF_GGX_SIGMOID;
            return part(b, g, e, "decision.scales", 1, &three);
        }
    }
    if (sscanf(s->name, "evidence_layers.%d.%n", &layer, &n) == 1) {
        snprintf(prefix, sizeof(prefix), "dec.blk.%d.", layer);
        r = apply(head_routing, N_OF(head_routing), s->name + n, rest,
                  sizeof(rest));
    } else if (sscanf(s->name, "layers.%d.%n", &layer, &n) == 1) {
        snprintf(prefix, sizeof(prefix), "dec.blk.%d.", routing + layer);
        r = apply(head_decoder, N_OF(head_decoder), s->name + n, rest,
                  sizeof(rest));
    } else {
        prefix[0] = '\0';
        r = apply(head_top, N_OF(head_top), s->name, rest, sizeof(rest));
    }
    if (r == NULL) {
        return fail(g, b->err, "no GGUF name for the head's %s", s->name);
    }
    if (strstr(r->from, "in_proj_") != NULL) {
        /* in_proj_weight -> cross_attn_{q,k,v}.weight, likewise the bias */
        snprintf(gname, sizeof(gname), "%s%s", prefix, r->to);
        return split_qkv(b, e, s, gname, rest + strlen(r->to));
    }
    snprintf(gname, sizeof(gname), "%s%s", prefix, rest);
    return part(b, g, e, gname, ggml_dims(s, ne), ne);
}

static int
on_vision(const clef_tensor_spec *s, void *ctx)
{
    build_ctx               *b = ctx;
    const clef_gguf         *g = b->m->vis;
    clef_gguf_clef_tensor   *e;
    const char              *rel = s->name + strlen(CLEF_VISION_PREFIX);
    char                     rest[96], gname[256];
    int64_t                  ne[4];
    int                      layer, n;

    if (add_entry(b, s, &e) != 0) {
        return -1;
    }
    if (strcmp(rel, "patch_embed.proj.weight") == 0) {
        /* [H, C, T, P, P] -> T Conv2d tensors of GGML dims [P, P, C, H] */
        ne[0] = s->shape[4];
        ne[1] = s->shape[3];
        ne[2] = s->shape[1];
        ne[3] = s->shape[0];
        e->temporal = 1;
        return part(b, g, e, "v.patch_embd.weight", 4, ne) != 0
               || part(b, g, e, "v.patch_embd.weight.1", 4, ne) != 0 ? -1 : 0;
    }
    if (sscanf(rel, "blocks.%d.%n", &layer, &n) == 1
        && apply(vision_block, N_OF(vision_block), rel + n, rest, sizeof(rest)))
    {
        snprintf(gname, sizeof(gname), "v.blk.%d.%s", layer, rest);
    } else if (apply(vision_top, N_OF(vision_top), rel, gname, sizeof(gname))
               == NULL)
    {
        return fail(g, b->err, "no GGUF name for %s", s->name);
    }
    return part(b, g, e, gname, ggml_dims(s, ne), ne);
}

static int
on_text(const clef_tensor_spec *s, void *ctx)
{
    build_ctx               *b = ctx;
    const clef_text_config  *c = &b->m->text;
    const clef_gguf         *g = b->m->g;
    clef_gguf_clef_tensor   *e;
    const char              *rel;
    char                     gname[256];
    int64_t                  ne[4];
    size_t                   i;
    int                      layer, n, nd;

    if (add_entry(b, s, &e) != 0) {
        return -1;
    }
    if (strcmp(s->name, "lm_head.weight") == 0) {
        return part(b, g, e, "output.weight", ggml_dims(s, ne), ne);
    }
    rel = s->name + strlen(CLEF_TEXT_PREFIX);
    if (strcmp(rel, "embed_tokens.weight") == 0) {
        return part(b, g, e, "token_embd.weight", ggml_dims(s, ne), ne);
    }
    if (strcmp(rel, "norm.weight") == 0) {
        e->xform = CLEF_GGX_PLUS_ONE;
        return part(b, g, e, "output_norm.weight", ggml_dims(s, ne), ne);
    }
    if (sscanf(rel, "layers.%d.%n", &layer, &n) != 1) {
        return fail(g, b->err, "no GGUF name for %s", s->name);
    }
    for (i = 0; i < N_OF(layer_rules); i++) {
        if (strcmp(rel + n, layer_rules[i].from) == 0) {
            break;
        }
    }
    if (i == N_OF(layer_rules)) {
        return fail(g, b->err, "no GGUF name for %s", s->name);
    }
    e->xform = layer_rules[i].xform;
    if (layer_rules[i].v != VK_NONE
        && c->linear_num_key_heads != c->linear_num_value_heads)
    {
        e->vorder = layer_rules[i].v == VK_COLS ? CLEF_GGV_COLS : CLEF_GGV_ROWS;
        e->v_hk = c->linear_num_key_heads;
        e->v_hv = c->linear_num_value_heads;
        e->v_unit = layer_rules[i].v == VK_ONE ? 1 : c->linear_value_head_dim;
        e->v_from = layer_rules[i].v == VK_QKV
                    ? 2 * (int64_t) c->linear_num_key_heads
                      * c->linear_key_head_dim : 0;
    }
    snprintf(gname, sizeof(gname), "blk.%d.%s", layer, layer_rules[i].to);
    nd = ggml_dims(s, ne);
    if (strcmp(layer_rules[i].from, "linear_attn.conv1d.weight") == 0) {
        ne[1] = ne[2];          /* [C, 1, K] was squeezed to [C, K] */
        nd = 2;
    }
    return part(b, g, e, gname, nd, ne);
}

/* ---- open / close ---------------------------------------------------- */

clef_gguf_clef *
clef_gguf_clef_open(const char *path, const char *mmproj, int flags,
    clef_error *err)
{
    clef_gguf_clef  *m = calloc(1, sizeof(*m));
    const clef_gguf_str *arch = NULL;
    build_ctx        b;

    if (m == NULL) {
        clef_error_fail(err, CLEF_E_NO_MEMORY, "out of memory");
        return NULL;
    }
    m->g = clef_gguf_open(path, flags, err);
    if (m->g == NULL || check_kind(m->g, err) != 0
        || text_config(m->g, &m->text, err) != 0
        || head_config(m->g, &m->text, &m->head, err) != 0)
    {
        goto fail;
    }
    if (mmproj != NULL) {
        m->mm = clef_gguf_open(mmproj, flags, err);
        if (m->mm == NULL
            || clef_gguf_get_str(m->mm, "general.architecture", &arch, err) < 0)
        {
            goto fail;
        }
        if (!is_str(arch, "clip")
            || clef_gguf_tensor_find(m->mm, "v.position_embd.weight") == NULL)
        {
            fail(m->mm, err, "is not a vision projector (mmproj) file with a"
                 " vision tower (general.architecture \"clip\", v.* tensors)");
            goto fail;
        }
        m->vis = m->mm;
    } else if (clef_gguf_tensor_find(m->g, "v.position_embd.weight") != NULL) {
        m->vis = m->g;
    }
    if (m->vis != NULL && vision_config(m->g, m->vis, &m->vision, err) != 0) {
        goto fail;
    }
    if (m->vis != NULL && m->vision.out_hidden_size != m->text.hidden_size) {
        fail(m->vis, err, "clip.vision.projection_dim %d is not the model's"
             " hidden size %d", m->vision.out_hidden_size, m->text.hidden_size);
        goto fail;
    }

    b.m = m;
    b.err = err;
    b.head = 0;
    if (clef_text_tensors(&m->text, on_text, &b) != 0
        || (m->vis != NULL && clef_vision_tensors(&m->vision, on_vision, &b) != 0))
    {
        goto fail;
    }
    b.head = 1;
    if (clef_head_tensors(&m->head, on_head, &b) != 0) {
        goto fail;
    }
    return m;

fail:
    clef_gguf_clef_close(m);
    return NULL;
}

void
clef_gguf_clef_close(clef_gguf_clef *m)
{
    if (m == NULL) {
        return;
    }
    clef_gguf_close(m->g);
    clef_gguf_close(m->mm);
    free(m->t);
    free(m);
}

const clef_text_config *
clef_gguf_clef_text_config(const clef_gguf_clef *m)
{
    return &m->text;
}

const clef_head_config *
clef_gguf_clef_head_config(const clef_gguf_clef *m)
{
    return &m->head;
}

const clef_vision_config *
clef_gguf_clef_vision_config(const clef_gguf_clef *m)
{
    return m->vision.present ? &m->vision : NULL;
}

const clef_gguf *
clef_gguf_clef_file(const clef_gguf_clef *m)
{
    return m->g;
}

size_t
clef_gguf_clef_count(const clef_gguf_clef *m)
{
    return m->n_t;
}

const clef_gguf_clef_tensor *
clef_gguf_clef_at(const clef_gguf_clef *m, size_t i)
{
    return i < m->n_t ? &m->t[i] : NULL;
}

const clef_gguf_clef_tensor *
clef_gguf_clef_find(const clef_gguf_clef *m, const char *name, int head)
{
    size_t  i;

    for (i = 0; i < m->n_t; i++) {
        if (m->t[i].head == head && strcmp(m->t[i].name, name) == 0) {
            return &m->t[i];
        }
    }
    return NULL;
}

/* ---- values ---------------------------------------------------------- */

/* The tiled position (the file's) of the value head at grouped position h
 * (the release's): h = group * per + j -> j * hk + group. */
static int64_t
tiled(int64_t h, int hk, int hv)
{
    int64_t  per = hv / hk;

    return (h % per) * hk + h / per;
}

static void
reorder(const clef_gguf_clef_tensor *t, float *dst, const float *src,
    int64_t rows, int64_t cols)
{
    int64_t  r, c, h, u, from;

    memcpy(dst, src, (size_t) (rows * cols) * sizeof(float));
    for (h = 0; h < t->v_hv; h++) {
        from = t->v_from + tiled(h, t->v_hk, t->v_hv) * t->v_unit;
        for (u = 0; u < t->v_unit; u++) {
            if (t->vorder == CLEF_GGV_ROWS) {
                memcpy(dst + (t->v_from + h * t->v_unit + u) * cols,
                       src + (from + u) * cols, (size_t) cols * sizeof(float));
                continue;
            }
            for (r = 0; r < rows; r++) {
                c = t->v_from + h * t->v_unit + u;
                dst[r * cols + c] = src[r * cols + from + u];
            }
        }
    }
}

int
clef_gguf_clef_read_f32(const clef_gguf_clef_tensor *t, float *dst,
    clef_error *err)
{
    const clef_gguf_tensor  *p;
    float                   *tmp;
    int64_t                  n = 1, off = 0, rows, plane, o, k, blocks;
    int                      i, j;

    for (j = 0; j < t->ndim; j++) {
        n *= t->shape[j];
    }
    for (i = 0; i < t->n_parts; i++) {
        if (t->part[i]->data == NULL) {
            return clef_error_fail(err, CLEF_E_INTERNAL, "%s: the GGUF was"
                                   " opened without its data", t->name);
        }
    }
    p = t->part[0];
    tmp = malloc((size_t) (p->numel > n ? p->numel : n) * sizeof(float) + 4);
    if (tmp == NULL) {
        return clef_error_fail(err, CLEF_E_NO_MEMORY, "out of memory");
    }
    if (t->ndim == 0) {
        p->traits->to_f32(p->data, tmp, p->numel);
        dst[0] = tmp[t->elem];
    } else if (t->temporal) {
        /* [H, C, T, P, P] from T parts of [H, C, P, P] */
        plane = t->shape[3] * t->shape[4];
        blocks = t->shape[0] * t->shape[1];
        for (i = 0; i < t->n_parts; i++) {
            p = t->part[i];
            p->traits->to_f32(p->data, tmp, p->numel);
            for (o = 0; o < blocks; o++) {
                memcpy(dst + (o * t->n_parts + i) * plane, tmp + o * plane,
                       (size_t) plane * sizeof(float));
            }
        }
    } else {
        for (i = 0; i < t->n_parts; i++) {
            p = t->part[i];
            p->traits->to_f32(p->data, dst + off, p->numel);
            off += p->numel;
        }
        if (t->vorder != CLEF_GGV_NONE) {
            rows = t->shape[0];
            k = n / rows;
            memcpy(tmp, dst, (size_t) n * sizeof(float));
            reorder(t, dst, tmp, rows, k);
        }
    }
    free(tmp);
    return 0;
}

void
clef_ggx_to_release(clef_ggx x, float *v, int64_t n)
{
    int64_t  i;

    for (i = 0; i < n; i++) {
        switch (x) {
        case CLEF_GGX_PLUS_ONE:
            v[i] = v[i] - 1.0f;
            break;
        case CLEF_GGX_NEG_EXP:
            v[i] = (float) log(-(double) v[i]);
            break;
        case CLEF_GGX_SCALE_EXP:
            v[i] = (float) log((double) v[i]);
            break;
        case CLEF_GGX_SIGMOID:
            v[i] = (float) log((double) v[i] / (1.0 - (double) v[i]));
            break;
        default:
            break;
        }
    }
}

/* ---- the tokenizer --------------------------------------------------- */

clef_tokenizer *
clef_gguf_clef_tokenizer(const clef_gguf_clef *m, clef_error *err)
{
    const clef_gguf         *g = m->g;
    const clef_gguf_str     *model = NULL, *pre = NULL, *s;
    const clef_gguf_value   *toks = NULL, *types = NULL, *merges = NULL;
    clef_tokenizer_vocab     v;
    clef_tokenizer          *tk = NULL;
    const char             **strs = NULL;
    size_t                  *lens = NULL;
    int32_t                 *ty = NULL;
    uint64_t                 i, n;
    int64_t                  t;
    char                     what[300];

    if (clef_gguf_get_str(g, "tokenizer.ggml.model", &model, err) < 0
        || clef_gguf_get_str(g, "tokenizer.ggml.pre", &pre, err) < 0
        || clef_gguf_get_arr(g, "tokenizer.ggml.tokens", CLEF_GGUF_STRING,
                             &toks, err) < 0
        || clef_gguf_get_arr(g, "tokenizer.ggml.token_type", CLEF_GGUF_INT32,
                             &types, err) < 0
        || clef_gguf_get_arr(g, "tokenizer.ggml.merges", CLEF_GGUF_STRING,
                             &merges, err) < 0)
    {
        return NULL;
    }
    if (!is_str(model, "gpt2") || toks == NULL || merges == NULL) {
        fail(g, err, "the tokenizer must be a byte-level BPE"
             " (tokenizer.ggml.model \"gpt2\" with tokens and merges)");
        return NULL;
    }
    if (types != NULL && types->v.arr.n != toks->v.arr.n) {
        fail(g, err, "tokenizer.ggml.token_type has %llu entries for %llu"
             " tokens", (unsigned long long) types->v.arr.n,
             (unsigned long long) toks->v.arr.n);
        return NULL;
    }
    n = toks->v.arr.n > merges->v.arr.n ? toks->v.arr.n : merges->v.arr.n;
    strs = malloc((n + 1) * sizeof(*strs));
    lens = malloc((n + 1) * sizeof(*lens));
    ty = malloc((toks->v.arr.n + 1) * sizeof(*ty));
    if (strs == NULL || lens == NULL || ty == NULL) {
        clef_error_fail(err, CLEF_E_NO_MEMORY, "out of memory");
        goto done;
    }
    memset(&v, 0, sizeof(v));
    v.pre = pre != NULL ? pre->s : NULL;
    v.n_tokens = (size_t) toks->v.arr.n;
    v.types = ty;
    for (i = 0; i < toks->v.arr.n; i++) {
        t = CLEF_TOKEN_NORMAL;
        if (types != NULL) {
            clef_gguf_arr_int(types, i, &t);
        }
        ty[i] = (int32_t) t;
    }
    snprintf(what, sizeof(what), "the tokenizer of '%s'", clef_gguf_path(g));
    /* tokens, then merges, through the same two arrays */
    for (i = 0; i < toks->v.arr.n; i++) {
        s = clef_gguf_arr_str(toks, i);
        strs[i] = s->s;
        lens[i] = (size_t) s->len;
    }
    v.tokens = strs;
    v.token_len = lens;
    {
        const char  **ms = malloc((merges->v.arr.n + 1) * sizeof(*ms));
        size_t       *ml = malloc((merges->v.arr.n + 1) * sizeof(*ml));

        if (ms == NULL || ml == NULL) {
            free(ms);
            free(ml);
            clef_error_fail(err, CLEF_E_NO_MEMORY, "out of memory");
            goto done;
        }
        for (i = 0; i < merges->v.arr.n; i++) {
            s = clef_gguf_arr_str(merges, i);
            ms[i] = s->s;
            ml[i] = (size_t) s->len;
        }
        v.n_merges = (size_t) merges->v.arr.n;
        v.merges = ms;
        v.merge_len = ml;
        tk = clef_tokenizer_from_vocab(&v, what, err);
        free(ms);
        free(ml);
    }

done:
    free(strs);
    free(lens);
    free(ty);
    return tk;
}
