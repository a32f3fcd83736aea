/*
 * A Clef GGUF's kind, configuration and tokenizer (gguf_clef.h); its
 * tensors are gguf_clef_tensors.c's.
 */
#include "model/gguf_clef_impl.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/model_config.h"
#include "model/model_vision.h"
#include "text/tokenizer.h"

#define fail         clef_gguf_clef_fail
#define need_int     clef_gguf_clef_need_int
#define need_float   clef_gguf_clef_need_float
#define need_tensor  clef_gguf_clef_need_tensor
#define token_id     clef_gguf_clef_token_id

int
clef_gguf_clef_fail(const clef_gguf *g, clef_error *err, const char *fmt, ...)
{
    char     msg[400];
    va_list  ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return clef_error_fail(err, CLEF_E_MODEL, "%s: %s", clef_gguf_path(g), msg);
}

/* A required integer key into an int. */
int
clef_gguf_clef_need_int(const clef_gguf *g, const char *key, int lo,
    int hi, int *out, clef_error *err)
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

int
clef_gguf_clef_need_float(const clef_gguf *g, const char *key, double *out,
    clef_error *err)
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
check_kind(const clef_gguf *g, clef_family *family, clef_error *err)
{
    const clef_gguf_str  *arch = NULL, *dt = NULL;
    char                  what[400], key[64];

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
    if (is_str(arch, "qwen3vlmoe") || is_str(arch, "qwen3omnimoe")) {
        snprintf(what, sizeof(what), "is a plain Qwen3-Omni / Qwen3-VL-MoE"
                 " GGUF (general.architecture \"%.20s\"): it has no joint"
                 " schema head.  Use a Clef Omni GGUF (general.architecture"
                 " \"" CLEF_GGUF_OMNI_ARCH "\", `clef mkmodel --gguf`)",
                 arch->s);
        return not_decision(g, err, what);
    }
    if (is_str(arch, CLEF_GGUF_OMNI_ARCH)) {
        *family = CLEF_FAMILY_OMNI;
    } else if (is_str(arch, "clef")) {
        *family = CLEF_FAMILY_CLEF;
    } else {
        snprintf(what, sizeof(what), "is a GGUF of architecture \"%.40s\", not"
                 " a Clef decision model (general.architecture \"clef\" or"
                 " \"" CLEF_GGUF_OMNI_ARCH "\")", arch->s);
        return not_decision(g, err, what);
    }
    snprintf(key, sizeof(key), "%s.decision.type", arch->s);
    if (clef_gguf_get_str(g, key, &dt, err) < 0) {
        return -1;
    }
    if (!is_str(dt, "clef")) {
        snprintf(what, sizeof(what), "has no %s \"clef\": convert the Clef"
                 " release again with a current llama.cpp", key);
        return not_decision(g, err, what);
    }
    return 0;
}

/* ---- configuration --------------------------------------------------- */

const clef_gguf_tensor *
clef_gguf_clef_need_tensor(const clef_gguf *g, const char *name, int ndim,
    clef_error *err)
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
    /* the Clef GGUF is Qwen3.5's dense stack: its RMSNorms multiply by
     * 1 + w, w as the release holds it (the map undoes the converter's
     * CLEF_GGUF_PLUS_ONE) */
    c->norm_plus_one = 1;
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
        /* as the release's mrope_section: never checked against the
         * pair count (pairs past its reach stay on T, model_config.c) */
        if (s < 0 || s > 4096) {
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
head_config(const clef_gguf *g, const char *arch, const clef_text_config *tc,
    clef_head_config *h, clef_error *err)
{
    const clef_gguf_tensor  *mem, *up;
    char                     k[3][64];

    memset(h, 0, sizeof(*h));
    h->hidden_size = tc->hidden_size;
    snprintf(k[0], sizeof(k[0]), "%s.decision.routing_block_count", arch);
    snprintf(k[1], sizeof(k[1]), "%s.decision.block_count", arch);
    snprintf(k[2], sizeof(k[2]), "%s.decision.head_count", arch);
    if (need_int(g, k[0], 0, 1024, &h->routing_layers, err)
        || need_int(g, k[1], 0, 1024, &h->layers, err)
        || need_int(g, k[2], 1, 4096, &h->heads, err))
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

int
clef_gguf_clef_token_id(const clef_gguf *g, const char *tok, int *out,
    clef_error *err)
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
    return fail(g, err, "the vocabulary has no %s token, which the model"
                " needs", tok);
}

/* The tower blocks whose DeepStack mergers feed the decoder
 * (clip.vision.is_deepstack_layers, true at each, as llama.cpp's Qwen3-VL
 * converter writes it). */
static int
deepstack(const clef_gguf *vis, clef_vision_config *v, clef_error *err)
{
    const clef_gguf_value  *ds = NULL;
    int64_t                 b;
    uint64_t                i;

    if (clef_gguf_get_arr(vis, "clip.vision.is_deepstack_layers",
                          CLEF_GGUF_BOOL, &ds, err) < 0)
    {
        return -1;
    }
    for (i = 0; ds != NULL && i < ds->v.arr.n; i++) {
        clef_gguf_arr_int(ds, i, &b);
        if (!b) {
            continue;
        }
        if (i >= (uint64_t) v->depth
            || v->n_deepstack == (int) (sizeof(v->deepstack)
                                        / sizeof(v->deepstack[0])))
        {
            return fail(vis, err, "clip.vision.is_deepstack_layers: layer"
                        " %llu is past the tower or one too many",
                        (unsigned long long) i);
        }
        v->deepstack[v->n_deepstack++] = (int) i;
    }
    return 0;
}

static int
vision_config(const clef_gguf *g, const clef_gguf *vis, clef_family family,
    clef_vision_config *v, clef_error *err)
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
        || token_id(g, "<|vision_end|>", &v->vision_end_token_id, err) != 0
        || deepstack(vis, v, err) != 0
        || (family == CLEF_FAMILY_OMNI
            && token_id(g, "<|video_pad|>", &v->video_token_id, err) != 0))
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

/* ---- open / close ---------------------------------------------------- */

static int
open_mmproj(clef_gguf_clef *m, const char *mmproj, int flags,
    clef_error *err)
{
    const clef_gguf_str  *arch = NULL;

    m->mm = clef_gguf_open(mmproj, flags, err);
    if (m->mm == NULL
        || clef_gguf_get_str(m->mm, "general.architecture", &arch, err) < 0)
    {
        return -1;
    }
    if (!is_str(arch, "clip")
        || clef_gguf_tensor_find(m->mm, "v.position_embd.weight") == NULL)
    {
        return fail(m->mm, err, "is not a vision projector (mmproj) file with"
                    " a vision tower (general.architecture \"clip\", v.*"
                    " tensors)");
    }
    m->vis = m->mm;
    return 0;
}

clef_gguf_clef *
clef_gguf_clef_open(const char *path, const char *mmproj, int flags,
    clef_error *err)
{
    clef_gguf_clef  *m = calloc(1, sizeof(*m));

    if (m == NULL) {
        clef_error_fail(err, CLEF_E_NO_MEMORY, "out of memory");
        return NULL;
    }
    m->g = clef_gguf_open(path, flags, err);
    if (m->g == NULL || check_kind(m->g, &m->family, err) != 0) {
        goto fail;
    }
    if (clef_gguf_tensor_count(m->g) == 0) {
        /* else refused for the first tensor it lacks, which says less */
        fail(m->g, err, "holds no tensors (a vocabulary-only GGUF, as"
             " convert_hf_to_gguf.py --vocab-only writes): give the model's"
             " GGUF");
        goto fail;
    }
    m->arch = m->family == CLEF_FAMILY_OMNI ? CLEF_GGUF_OMNI_ARCH : "clef";
    if ((m->family == CLEF_FAMILY_OMNI
         ? clef_gguf_clef_omni_text(m->g, &m->text, err)
         : text_config(m->g, &m->text, err)) != 0
        || head_config(m->g, m->arch, &m->text, &m->head, err) != 0
        || (m->family == CLEF_FAMILY_OMNI
            && clef_gguf_clef_omni_ids(m->g, &m->omni, err) != 0))
    {
        goto fail;
    }
    if (mmproj != NULL) {
        if (open_mmproj(m, mmproj, flags, err) != 0) {
            goto fail;
        }
    } else if (clef_gguf_tensor_find(m->g, "v.position_embd.weight") != NULL) {
        m->vis = m->g;
    }
    if (m->vis != NULL
        && vision_config(m->g, m->vis, m->family, &m->vision, err) != 0)
    {
        goto fail;
    }
    if (m->family == CLEF_FAMILY_OMNI && m->vis != NULL
        && clef_gguf_clef_omni_audio(m->g, m->vis, &m->text, &m->audio,
                                     err) != 0)
    {
        goto fail;
    }
    if (m->vis != NULL && m->vision.out_hidden_size != m->text.hidden_size) {
        fail(m->vis, err, "clip.vision.projection_dim %d is not the model's"
             " hidden size %d", m->vision.out_hidden_size, m->text.hidden_size);
        goto fail;
    }
    if (clef_gguf_clef_build_tensors(m, err) != 0) {
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
    size_t  i;

    if (m == NULL) {
        return;
    }
    for (i = 0; i < m->n_t; i++) {
        free(m->t[i]);
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

clef_family
clef_gguf_clef_family(const clef_gguf_clef *m)
{
    return m->family;
}

const clef_audio_tower_config *
clef_gguf_clef_audio_config(const clef_gguf_clef *m)
{
    return m->audio.present ? &m->audio : NULL;
}

const clef_omni_config *
clef_gguf_clef_omni_config(const clef_gguf_clef *m)
{
    return m->family == CLEF_FAMILY_OMNI ? &m->omni : NULL;
}

const clef_gguf *
clef_gguf_clef_file(const clef_gguf_clef *m)
{
    return m->g;
}

const clef_gguf *
clef_gguf_clef_vision_file(const clef_gguf_clef *m)
{
    return m->vis;
}

size_t
clef_gguf_clef_count(const clef_gguf_clef *m)
{
    return m->n_t;
}

const clef_gguf_clef_tensor *
clef_gguf_clef_at(const clef_gguf_clef *m, size_t i)
{
    return i < m->n_t ? m->t[i] : NULL;
}

const clef_gguf_clef_tensor *
clef_gguf_clef_find(const clef_gguf_clef *m, const char *name, int head)
{
    size_t  i;

    for (i = 0; i < m->n_t; i++) {
        if (m->t[i]->head == head && strcmp(m->t[i]->name, name) == 0) {
            return m->t[i];
        }
    }
    return NULL;
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
