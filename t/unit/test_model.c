/*
 * engine/model.c on checkpoints written by `build/clef mkmodel` into a temp
 * directory (t/fixtures/models/r2.json, r3.json, and the real 9B layout as a
 * sparse file), then altered one file at a time to check every refusal and
 * its exact message.  The expected values were read from the generated
 * files with Python's safetensors.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "model/model.h"
#include "model/model_config.h"

static char  tmp[] = "/tmp/clef_model_XXXXXX";
static char  tokdir[512];

#define L  "model.language_model."

static int
run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int
run(const char *fmt, ...)
{
    char     cmd[2048];
    va_list  ap;

    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    return system(cmd);
}

static int
mkmodel(const char *name, const char *args)
{
    return run("build/clef mkmodel %s --tokenizer %s --out %s/%s >/dev/null",
               args, tokdir, tmp, name);
}

/* A copy of directory src as dst, every file hard-linked: a test replaces
 * the one file it alters (unlink + write), never the original. */
static void
clone(const char *src, const char *dst)
{
    run("rm -rf %s/%s && mkdir %s/%s && ln %s/%s/* %s/%s/", tmp, dst, tmp, dst,
        tmp, src, tmp, dst);
}

static char *
path_of(const char *dir, const char *file)
{
    static char  buf[4][512];
    static int   k;

    k = (k + 1) % 4;
    snprintf(buf[k], sizeof(buf[k]), "%s/%s%s%s", tmp, dir, file ? "/" : "",
             file ? file : "");
    return buf[k];
}

static json_t *
read_json(const char *dir, const char *file)
{
    return json_load_file(path_of(dir, file), 0, NULL);
}

static void
write_json(const char *dir, const char *file, json_t *v)
{
    unlink(path_of(dir, file));
    json_dump_file(v, path_of(dir, file), JSON_INDENT(2));
    json_decref(v);
}

/* Rewrites a safetensors file with its header passed through edit(); the
 * data is kept, extra zero bytes appended. */
static void
rewrite_st(const char *dir, const char *file, void (*edit)(json_t *, void *),
    void *arg, size_t extra)
{
    FILE      *f = fopen(path_of(dir, file), "rb");
    uint8_t    lb[8];
    uint64_t   hlen = 0, len;
    char      *head, *text, *data;
    json_t    *h;
    long       size;
    size_t     pad, n;
    int        i;

    fseek(f, 0, SEEK_END);
    size = ftell(f);
    fseek(f, 0, SEEK_SET);
    if (fread(lb, 1, 8, f) != 8) {
        abort();
    }
    for (i = 7; i >= 0; i--) {
        hlen = (hlen << 8) | lb[i];
    }
    head = calloc(1, hlen + 1);
    n = (size_t) size - 8 - hlen;
    data = calloc(1, n + extra + 1);
    if (fread(head, 1, hlen, f) != hlen || fread(data, 1, n, f) != n) {
        abort();
    }
    fclose(f);

    h = json_loads(head, 0, NULL);
    edit(h, arg);
    text = json_dumps(h, JSON_COMPACT);
    json_decref(h);
    pad = (8 - strlen(text) % 8) % 8;
    len = strlen(text) + pad;
    for (i = 0; i < 8; i++) {
        lb[i] = (uint8_t) (len >> (8 * i));
    }
    unlink(path_of(dir, file));
    f = fopen(path_of(dir, file), "wb");
    fwrite(lb, 1, 8, f);
    fputs(text, f);
    fprintf(f, "%*s", (int) pad, "");
    fwrite(data, 1, n + extra, f);
    fclose(f);
    free(text);
    free(head);
    free(data);
}

/* ---- header edits ----------------------------------------------------- */

typedef struct {
    const char  *name;
    const char  *to;          /* rename target, dtype, ... */
} edit_arg;

static void
edit_rename(json_t *h, void *arg)
{
    edit_arg  *a = arg;
    json_t    *e = json_incref(json_object_get(h, a->name));

    json_object_del(h, a->name);
    json_object_set_new(h, a->to, e);
}

static void
edit_dtype(json_t *h, void *arg)
{
    edit_arg  *a = arg;

    json_object_set_new(json_object_get(h, a->name), "dtype", json_string(a->to));
}

static void
edit_transpose(json_t *h, void *arg)
{
    edit_arg  *a = arg;
    json_t    *shape = json_object_get(json_object_get(h, a->name), "shape");
    json_t    *d0 = json_incref(json_array_get(shape, 0));

    json_array_remove(shape, 0);
    json_array_append_new(shape, d0);
}

/* Renames every "model.language_model.X" to "model.X" (Qwen3_5ForCausalLM)
 * and adds two tensors the loader must skip, stored after the data. */
static void
edit_causal_lm(json_t *h, void *arg)
{
    json_t      *copy = json_deep_copy(h), *v;
    const char  *key;
    char         name[256];
    int64_t      end = *(int64_t *) arg;

    json_object_clear(h);
    json_object_foreach(copy, key, v) {
        if (strncmp(key, L, strlen(L)) == 0) {
            snprintf(name, sizeof(name), "model.%s", key + strlen(L));
            json_object_set(h, name, v);
        } else {
            json_object_set(h, key, v);
        }
    }
    json_decref(copy);
    json_object_set_new(h, "mtp.fc.weight",
                        json_pack("{s:s,s:[i,i],s:[I,I]}", "dtype", "BF16", "shape", 2, 2,
                                  "data_offsets", (json_int_t) end, (json_int_t) end + 8));
    json_object_set_new(h, "model.visual.pos_embed.weight",
                        json_pack("{s:s,s:[i],s:[I,I]}", "dtype", "F32", "shape", 2,
                                  "data_offsets", (json_int_t) end + 8,
                                  (json_int_t) end + 16));
}

static void
edit_vision_drop(json_t *h, void *arg)
{
    (void) arg;
    json_object_del(h, "model.visual.blocks.0.attn.qkv.bias");
}

static void
edit_vision_shape(json_t *h, void *arg)
{
    json_t  *t = json_object_get(h, "model.visual.pos_embed.weight");

    (void) arg;
    /* the same bytes, another shape: [16, 32] as [32, 16] */
    json_object_set_new(t, "shape", json_pack("[i,i]", 32, 16));
}

static void
edit_add_bias(json_t *h, void *arg)
{
    int64_t  end = *(int64_t *) arg;

    json_object_set_new(h, L "layers.0.linear_attn.conv1d.bias",
                        json_pack("{s:s,s:[i],s:[I,I]}", "dtype", "BF16", "shape", 4,
                                  "data_offsets", (json_int_t) end, (json_int_t) end + 8));
}

static void
edit_garbage(json_t *h, void *arg)
{
    (void) arg;
    json_object_set_new(h, "zzz", json_string("not an entry"));
}

/* ---- helpers on an open model ---------------------------------------- */

static float
value_at(const clef_tensor *t, int64_t i)
{
    float  f;

    if (t == NULL || t->data == NULL) {
        return NAN;
    }
    if (t->dtype == CLEF_DTYPE_F32) {
        memcpy(&f, (const char *) t->data + 4 * i, 4);
        return f;
    }
    return clef_bf16_to_f32(((const uint16_t *) t->data)[i]);
}

/* Resident kB of all mappings of files whose path contains needle, and the
 * number of such mappings (from /proc/self/smaps). */
static long
resident_kb(const char *needle, int *mappings)
{
    FILE  *f = fopen("/proc/self/smaps", "r");
    char   line[1024];
    long   kb = 0, v;
    int    in = 0;

    *mappings = 0;
    while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
        if (strspn(line, "0123456789abcdef") > 0
            && line[strspn(line, "0123456789abcdef")] == '-')
        {                                   /* "start-end perms offset ... path" */
            in = strstr(line, needle) != NULL;
            *mappings += in;
        } else if (in && sscanf(line, "Rss: %ld kB", &v) == 1) {
            kb += v;
        }
    }
    if (f != NULL) {
        fclose(f);
    }
    return kb;
}

static int
count_mappings(const char *needle)
{
    int  n;

    resident_kb(needle, &n);
    return n;
}

static void
expect_error(const char *dir, int flags, int status, const char *type,
    const char *what, const char *want_fmt, ...)
    __attribute__((format(printf, 6, 7)));

static void
expect_error(const char *dir, int flags, int status, const char *type,
    const char *what, const char *want_fmt, ...)
{
    clef_model  *m;
    clef_error   err;
    char         want[1024];
    va_list      ap;

    va_start(ap, want_fmt);
    vsnprintf(want, sizeof(want), want_fmt, ap);
    va_end(ap);

    clef_error_clear(&err);
    m = clef_model_open(path_of(dir, NULL), flags, &err);
    CHECK(m == NULL, "%s: refused", what);
    CHECK_STR(err.message, want, "%s: message", what);
    CHECK(err.status == status && strcmp(err.type, type) == 0, "%s: %d %s", what,
          status, type);
    clef_model_close(m);
}

/* ---- tests ------------------------------------------------------------- */

static void
test_r2(void)
{
    const clef_text_config  *c;
    const clef_head_config  *h;
    const clef_tensor       *t;
    clef_model              *m;
    clef_error               err;
    static const uint8_t     full[5] = { 0, 1, 0, 0, 1 };

    m = clef_model_open(path_of("r2", NULL), 0, &err);
    CHECK(m != NULL, "r2 opens");
    if (m == NULL) {
        printf("#   %s\n", err.message);
        return;
    }
    CHECK_STR(clef_model_dir(m), path_of("r2", NULL), "dir kept");
    c = clef_model_text_config(m);
    CHECK_INT(c->vocab_size, 151669, "vocab_size is the tokenizer's size");
    CHECK(c->hidden_size == 48 && c->intermediate_size == 136
          && c->num_hidden_layers == 5, "hidden 48, intermediate 136, 5 layers");
    CHECK(c->num_attention_heads == 3 && c->num_key_value_heads == 1
          && c->head_dim == 24, "attention 3/1 heads x 24");
    CHECK(c->linear_num_key_heads == 3 && c->linear_num_value_heads == 6
          && c->linear_key_head_dim == 16 && c->linear_value_head_dim == 12
          && c->linear_conv_kernel_dim == 4, "GDN Hk 3, Hv 6, dk 16, dv 12, kernel 4");
    CHECK(memcmp(c->layer_full, full, 5) == 0, "layer_types L F L L F");
    CHECK(c->layer[0].mixer == CLEF_MIXER_LINEAR
          && c->layer[1].mixer == CLEF_MIXER_FULL
          && c->layer[4].mixer == CLEF_MIXER_FULL
          && c->layer[4].mlp == CLEF_MLP_DENSE
          && strcmp(c->layer[4].prefix, "model.language_model.layers.4.") == 0,
          "layer descriptions: mixer, dense MLP, tensor prefix");
    CHECK(c->attn_output_gate == 1 && c->tie_word_embeddings == 0, "gated, untied");
    CHECK(c->rms_norm_eps == 1e-6 && c->rope_theta == 1e7
          && c->partial_rotary_factor == 0.5, "eps 1e-6, theta 1e7, rotary 0.5");
    h = clef_model_head_config(m);
    CHECK(h->hidden_size == 48 && h->width == 40 && h->routing_layers == 2
          && h->layers == 2 && h->heads == 5 && h->feedforward == 72,
          "head 48/40/2/2/5/72");
    CHECK(clef_model_tokenizer(m) != NULL
          && clef_tokenizer_vocab_size(clef_model_tokenizer(m)) == 151669,
          "tokenizer loaded");

    t = clef_model_tensor(m, L "embed_tokens.weight");
    CHECK(t != NULL && t->dtype == CLEF_DTYPE_BF16 && t->ndim == 2
          && t->shape[0] == 151669 && t->shape[1] == 48, "embed_tokens BF16 [151669, 48]");
    CHECK(value_at(t, 0) == 0.84765625f && value_at(t, 1) == -0.045166015625f
          && value_at(t, 2) == 0.435546875f && value_at(t, 3) == -0.9140625f,
          "embed_tokens[0][0..3]");
    CHECK(value_at(t, 151668 * 48 + 47) == -0.30859375f, "embed_tokens[151668][47]");
    t = clef_model_tensor(m, "lm_head.weight");
    CHECK(t != NULL && value_at(t, 151668 * 48 + 47) == 0.6796875f,
          "lm_head[151668][47], its own tensor");
    t = clef_model_tensor(m, L "layers.0.linear_attn.A_log");
    CHECK(t != NULL && t->dtype == CLEF_DTYPE_F32 && t->numel == 6
          && value_at(t, 0) == 0x1.1931bep+1f && value_at(t, 5) == 0x1.1a04a6p+0f,
          "A_log F32 [6], values");
    t = clef_model_tensor(m, L "layers.3.linear_attn.norm.weight");
    CHECK(t != NULL && t->dtype == CLEF_DTYPE_F32 && t->numel == 12
          && value_at(t, 1) == 0x1.1601a4p+0f, "linear_attn.norm.weight F32 [12]");
    t = clef_model_tensor(m, L "layers.1.self_attn.q_proj.weight");
    CHECK(t != NULL && t->shape[0] == 144 && t->shape[1] == 48
          && value_at(t, 143 * 48 + 47) == -0.1259765625f,
          "q_proj [144, 48] = 3 heads x (24 query + 24 gate)");
    t = clef_model_tensor(m, L "layers.0.linear_attn.conv1d.weight");
    CHECK(t != NULL && t->ndim == 3 && t->shape[0] == 168 && t->shape[1] == 1
          && t->shape[2] == 4, "conv1d [2*3*16 + 6*12, 1, 4]");
    CHECK(clef_model_tensor(m, L "layers.0.self_attn.q_proj.weight") == NULL,
          "no attention tensors in a linear layer");
    CHECK(clef_model_tensor(m, "model.layers.0.input_layernorm.weight") == NULL,
          "only canonical names");

    t = clef_model_head_tensor(m, "residual_gate");
    CHECK(t != NULL && t->ndim == 0 && t->numel == 1 && value_at(t, 0) == 0.41015625f,
          "residual_gate: 0-dim, 0.41015625");
    CHECK(value_at(clef_model_head_tensor(m, "prior_logit_scale"), 0) == 0.69921875f
          && value_at(clef_model_head_tensor(m, "joint_logit_scale"), 0) == 1.2734375f,
          "prior_logit_scale 0.699, joint_logit_scale 1.273");
    t = clef_model_head_tensor(m, "layers.1.norm3.bias");
    CHECK(t != NULL && value_at(t, 0) == 0.09130859375f
          && value_at(t, 1) == -0.0284423828125f, "layers.1.norm3.bias[0..1]");
    t = clef_model_head_tensor(m, "evidence_layers.1.attention.in_proj_weight");
    CHECK(t != NULL && t->shape[0] == 120 && t->shape[1] == 40, "in_proj_weight [120, 40]");
    CHECK(clef_model_head_tensor(m, "evidence_layers.2.query_norm.weight") == NULL,
          "two routing layers only");

    CHECK_INT(count_mappings("/r2/model-0000"), 2, "both shards mapped");
    clef_model_close(m);
    CHECK_INT(count_mappings("/r2/"), 0, "close unmaps everything");

}

/* --shards does not change a single value. */
static void
test_shard_independence(void)
{
    static const char  *names[] = {
        L "embed_tokens.weight", L "layers.0.linear_attn.in_proj_qkv.weight",
        L "layers.2.mlp.up_proj.weight", L "layers.4.self_attn.o_proj.weight",
        L "norm.weight", "lm_head.weight"
    };
    const clef_tensor  *a, *b;
    clef_model         *two, *one;
    clef_error          err;
    int                 i, same;

    two = clef_model_open(path_of("r2", NULL), 0, &err);
    one = clef_model_open(path_of("r2one", NULL), 0, &err);
    same = one != NULL && two != NULL;
    for (i = 0; same && i < 6; i++) {
        a = clef_model_tensor(two, names[i]);
        b = clef_model_tensor(one, names[i]);
        same = a != NULL && b != NULL && a->nbytes == b->nbytes
               && memcmp(a->data, b->data, a->nbytes) == 0;
    }
    CHECK(same, "one shard or two: the same bytes");
    clef_model_close(one);
    clef_model_close(two);
}

static void
test_headers_only(void)
{
    clef_model         *m;
    clef_error          err;
    const clef_tensor  *t;

    m = clef_model_open(path_of("r2", NULL), CLEF_MODEL_HEADERS_ONLY, &err);
    CHECK(m != NULL, "headers-only open");
    if (m == NULL) {
        printf("#   %s\n", err.message);
        return;
    }
    t = clef_model_tensor(m, L "layers.1.self_attn.q_proj.weight");
    CHECK(t != NULL && t->data == NULL && t->shape[0] == 144 && t->nbytes == 144 * 48 * 2,
          "headers-only: shape and size, no data");
    CHECK(clef_model_tensor(m, "lm_head.weight")->data == NULL
          && clef_model_head_tensor(m, "residual_gate")->data == NULL,
          "headers-only: head and lm_head without data");
    CHECK_INT(count_mappings("/r2/"), 0, "headers-only: no file mapped");
    clef_model_close(m);
}

/* The vision tower (the default one mkmodel writes: depth 1, hidden 32):
 * its config, the processor's, every tensor checked. */
static void
test_vision(void)
{
    const clef_vision_config  *v;
    clef_model                *m;
    clef_error                 err;
    json_t                    *j;

    m = clef_model_open(path_of("r2", NULL), 0, &err);
    CHECK(m != NULL, "vision: r2 opens");
    if (m == NULL) {
        return;
    }
    v = clef_model_vision_config(m);
    CHECK(v != NULL && v->depth == 1 && v->hidden_size == 32 && v->num_heads == 2
          && v->intermediate_size == 64 && v->num_position_embeddings == 16
          && v->out_hidden_size == 48 && v->patch_size == 16
          && v->temporal_patch_size == 2 && v->spatial_merge_size == 2
          && v->rope_theta == 10000.0, "vision: config");
    CHECK(v != NULL && v->image_token_id == 151655
          && v->vision_start_token_id == 151652 && v->vision_end_token_id == 151653,
          "vision: image token ids from config.json");
    CHECK(v != NULL && v->processor.min_pixels == 65536
          && v->processor.max_pixels == 16777216 && v->processor.mean[2] == 0.5
          && v->processor.std[0] == 0.5, "vision: preprocessor_config.json");
    CHECK(clef_model_tensor(m, "model.visual.merger.linear_fc2.weight") != NULL
          && clef_model_tensor(m, "model.visual.merger.linear_fc2.weight")->shape[0] == 48,
          "vision: merger fc2 [48, 128]");
    clef_model_close(m);

    clone("r2", "e");
    rewrite_st("e", "model-00002-of-00002.safetensors", edit_vision_drop, NULL, 0);
    j = read_json("e", "model.safetensors.index.json");
    json_object_del(json_object_get(j, "weight_map"),
                    "model.visual.blocks.0.attn.qkv.bias");
    write_json("e", "model.safetensors.index.json", j);
    expect_error("e", 0, 500, "model_invalid", "vision: a tower tensor missing",
                 "%s: tensor 'model.visual.blocks.0.attn.qkv.bias' is missing",
                 path_of("e", NULL));
    clone("r2", "e");
    rewrite_st("e", "model-00002-of-00002.safetensors", edit_vision_shape, NULL, 0);
    expect_error("e", 0, 500, "model_invalid", "vision: a tower tensor's shape",
                 "%s: tensor 'model.visual.pos_embed.weight' has shape [32, 16], "
                 "expected [16, 32]",
                 path_of("e", "model-00002-of-00002.safetensors"));
}

static void
test_r3_tied(void)
{
    const clef_text_config  *c;
    const clef_tensor       *e, *l;
    clef_model              *m;
    clef_error               err;
    static const uint8_t     full[6] = { 0, 0, 1, 0, 0, 1 };

    m = clef_model_open(path_of("r3", NULL), 0, &err);
    CHECK(m != NULL, "r3 opens");
    if (m == NULL) {
        printf("#   %s\n", err.message);
        return;
    }
    c = clef_model_text_config(m);
    CHECK(memcmp(c->layer_full, full, 6) == 0, "full_attention_interval 3: L L F L L F");
    CHECK(c->rope_theta == 1e6 && c->partial_rotary_factor == 0.25,
          "legacy rope_theta 1e6, rotary 0.25");
    CHECK(c->tie_word_embeddings == 1, "tied");
    e = clef_model_tensor(m, L "embed_tokens.weight");
    l = clef_model_tensor(m, "lm_head.weight");
    CHECK(e != NULL && l == e, "tied: lm_head.weight is the embedding");
    CHECK(value_at(l, 151668 * 80 + 79) == 0.1533203125f, "embed[151668][79]");
    CHECK(clef_model_head_config(m)->routing_layers == 1
          && clef_model_head_config(m)->layers == 3, "head: 1 routing, 3 layers");
    clef_model_close(m);
}

/* Qwen3_5ForCausalLM: a flat text config, one model.safetensors, "model.*"
 * names, plus MTP and vision tensors to skip. */
static void
test_causal_lm_layout(void)
{
    json_t       *cfg, *text;
    clef_model   *m, *ref;
    clef_error    err;
    int64_t       end;
    struct stat   st;
    const clef_tensor  *a, *b;

    clone("r3", "causal");
    stat(path_of("causal", "model-00001-of-00001.safetensors"), &st);
    rename(path_of("causal", "model-00001-of-00001.safetensors"),
           path_of("causal", "model.safetensors"));
    unlink(path_of("causal", "model.safetensors.index.json"));
    end = 25428208;                          /* the data bytes of r3's shard */
    rewrite_st("causal", "model.safetensors", edit_causal_lm, &end, 16);
    cfg = read_json("causal", "config.json");
    text = json_incref(json_object_get(cfg, "text_config"));
    json_decref(cfg);
    json_object_set_new(text, "architectures", json_pack("[s]", "Qwen3_5ForCausalLM"));
    write_json("causal", "config.json", text);

    m = clef_model_open(path_of("causal", NULL), 0, &err);
    CHECK(m != NULL, "Qwen3_5ForCausalLM layout opens");
    if (m == NULL) {
        printf("#   %s\n", err.message);
        return;
    }
    ref = clef_model_open(path_of("r3", NULL), 0, &err);
    a = clef_model_tensor(m, L "layers.5.self_attn.k_norm.weight");
    b = clef_model_tensor(ref, L "layers.5.self_attn.k_norm.weight");
    CHECK(a != NULL && b != NULL && strcmp(a->name, "model.layers.5.self_attn.k_norm.weight") == 0
          && memcmp(a->data, b->data, b->nbytes) == 0,
          "model.X is found as " L "X, same bytes");
    CHECK(clef_model_tensor(m, "mtp.fc.weight") == NULL
          && clef_model_tensor(m, "model.visual.pos_embed.weight") == NULL
          && clef_model_tensor(m, L "visual.pos_embed.weight") == NULL,
          "mtp.* and model.visual.* skipped");
    CHECK(clef_model_text_config(m)->tie_word_embeddings == 1
          && clef_model_tensor(m, "lm_head.weight") == clef_model_tensor(m, L "embed_tokens.weight"),
          "flat config: tied by text_config's flag");
    clef_model_close(ref);
    clef_model_close(m);
}

static void
test_errors(void)
{
    json_t       *j;
    edit_arg      a;
    int64_t       end;
    char          shard2[512];
    struct stat   st;
    uint8_t       lb[8];
    uint64_t      hlen = 0;
    FILE         *f;
    int           i;

    snprintf(shard2, sizeof(shard2), "%s", path_of("r2", "model-00002-of-00002.safetensors"));

    clone("r2", "e");
    unlink(path_of("e", "joint_head_config.json"));
    expect_error("e", 0, 501, "not_a_decision_model", "no joint_head_config.json",
                 "not a decision model: %s has no joint_head_config.json",
                 path_of("e", NULL));

    clone("r2", "e");
    unlink(path_of("e", "config.json"));
    expect_error("e", 0, 500, "model_invalid", "no config.json",
                 "%s: cannot open: No such file or directory", path_of("e", "config.json"));

    clone("r2", "e");
    j = read_json("e", "config.json");
    json_array_set_new(json_object_get(json_object_get(j, "text_config"), "layer_types"), 3,
                       json_string("sliding_attention"));
    write_json("e", "config.json", j);
    expect_error("e", 0, 500, "model_invalid", "unknown layer type",
                 "%s: text_config.layer_types[3] is 'sliding_attention', expected "
                 "linear_attention or full_attention", path_of("e", "config.json"));

    clone("r2", "e");
    j = read_json("e", "config.json");
    json_object_del(json_object_get(j, "text_config"), "head_dim");
    write_json("e", "config.json", j);
    expect_error("e", 0, 500, "model_invalid", "no head_dim",
                 "%s: text_config.head_dim is missing", path_of("e", "config.json"));

    clone("r2", "e");
    j = read_json("e", "config.json");
    json_array_remove(json_object_get(json_object_get(j, "text_config"), "layer_types"), 0);
    write_json("e", "config.json", j);
    expect_error("e", 0, 500, "model_invalid", "layer_types too short",
                 "%s: text_config.layer_types has 4 entries for 5 layers",
                 path_of("e", "config.json"));

    /* Without layer_types, transformers' default interval of 4: L L L F L,
     * which r2's weights (L F L L F) do not fit. */
    clone("r2", "e");
    j = read_json("e", "config.json");
    json_object_del(json_object_get(j, "text_config"), "layer_types");
    write_json("e", "config.json", j);
    expect_error("e", 0, 500, "model_invalid", "default layer pattern",
                 "%s: tensor '" L "layers.1.linear_attn.in_proj_qkv.weight' is missing",
                 path_of("e", NULL));

    clone("r2", "e");
    j = read_json("e", "config.json");
    json_object_set_new(json_object_get(json_object_get(j, "text_config"), "rope_parameters"),
                        "rope_type", json_string("yarn"));
    write_json("e", "config.json", j);
    expect_error("e", 0, 500, "model_invalid", "rope_type yarn",
                 "%s: text_config.rope_parameters.rope_type is \"yarn\", only \"default\" "
                 "is supported", path_of("e", "config.json"));

    clone("r2", "e");
    j = read_json("e", "config.json");
    json_object_set_new(json_object_get(json_object_get(j, "text_config"), "rope_parameters"),
                        "partial_rotary_factor", json_real(0.125));
    write_json("e", "config.json", j);
    expect_error("e", 0, 500, "model_invalid", "odd rotary dims",
                 "%s: partial_rotary_factor 0.125 gives 3 rotary dims of head_dim 24, "
                 "need an even number >= 2", path_of("e", "config.json"));

    clone("r2", "e");
    j = read_json("e", "config.json");
    json_object_set_new(json_object_get(j, "text_config"), "attention_bias", json_true());
    write_json("e", "config.json", j);
    expect_error("e", 0, 500, "model_invalid", "attention_bias",
                 "%s: text_config.attention_bias true is not supported",
                 path_of("e", "config.json"));

    clone("r2", "e");
    j = read_json("e", "config.json");
    json_object_set_new(json_object_get(j, "text_config"), "num_key_value_heads",
                        json_integer(2));
    write_json("e", "config.json", j);
    expect_error("e", 0, 500, "model_invalid", "GQA not a multiple",
                 "%s: num_attention_heads 3 is not a multiple of num_key_value_heads 2",
                 path_of("e", "config.json"));

    clone("r2", "e");
    j = read_json("e", "config.json");
    json_object_set_new(j, "model_type", json_string("qwen3_next"));
    write_json("e", "config.json", j);
    expect_error("e", 0, 500, "model_invalid", "another model type",
                 "%s: model_type is \"qwen3_next\": neither Clef (\"qwen3_5\") "
                 "nor Clef Omni (\"qwen3_omni_moe\")",
                 path_of("e", "config.json"));

    clone("r2", "e");
    j = read_json("e", "joint_head_config.json");
    json_object_set_new(j, "hidden_size", json_integer(64));
    write_json("e", "joint_head_config.json", j);
    expect_error("e", 0, 500, "model_invalid", "head hidden_size",
                 "%s: hidden_size 64 does not match the backbone's 48",
                 path_of("e", "joint_head_config.json"));

    clone("r2", "e");
    j = read_json("e", "joint_head_config.json");
    json_object_set_new(j, "temperature", json_real(1.0));
    write_json("e", "joint_head_config.json", j);
    expect_error("e", 0, 500, "model_invalid", "unknown head key",
                 "%s: unknown key 'temperature'", path_of("e", "joint_head_config.json"));

    /* A tensor the index does not list is missing, even if a shard has it. */
    clone("r2", "e");
    j = read_json("e", "model.safetensors.index.json");
    json_object_del(json_object_get(j, "weight_map"), L "layers.1.self_attn.k_proj.weight");
    write_json("e", "model.safetensors.index.json", j);
    expect_error("e", 0, 500, "model_invalid", "missing tensor",
                 "%s: tensor '" L "layers.1.self_attn.k_proj.weight' is missing",
                 path_of("e", NULL));
    expect_error("e", CLEF_MODEL_HEADERS_ONLY, 500, "model_invalid",
                 "missing tensor, headers only",
                 "%s: tensor '" L "layers.1.self_attn.k_proj.weight' is missing",
                 path_of("e", NULL));

    clone("r2", "e");
    a.name = L "layers.1.self_attn.k_proj.weight";
    a.to = L "layers.1.self_attn.k_proj.weight_renamed";
    rewrite_st("e", "model-00001-of-00002.safetensors", edit_rename, &a, 0);
    expect_error("e", 0, 500, "model_invalid", "index names a tensor the shard lacks",
                 "%s: tensor '" L "layers.1.self_attn.k_proj.weight' is mapped to "
                 "'model-00001-of-00002.safetensors', which does not hold it",
                 path_of("e", "model.safetensors.index.json"));

    clone("r2", "e");
    a.name = L "layers.0.linear_attn.in_proj_z.weight";
    rewrite_st("e", "model-00001-of-00002.safetensors", edit_transpose, &a, 0);
    expect_error("e", 0, 500, "model_invalid", "wrong shape",
                 "%s: tensor '" L "layers.0.linear_attn.in_proj_z.weight' has shape "
                 "[48, 72], expected [72, 48]",
                 path_of("e", "model-00001-of-00002.safetensors"));

    clone("r2", "e");
    a.name = L "layers.0.linear_attn.A_log";
    a.to = "I32";
    rewrite_st("e", "model-00001-of-00002.safetensors", edit_dtype, &a, 0);
    expect_error("e", 0, 500, "model_invalid", "A_log as I32",
                 "%s: tensor '" L "layers.0.linear_attn.A_log' is I32, expected F32 or BF16",
                 path_of("e", "model-00001-of-00002.safetensors"));

    /* Any float dtype will do for the others. */
    clone("r2", "e");
    a.name = L "layers.0.linear_attn.in_proj_z.weight";
    a.to = "F16";
    rewrite_st("e", "model-00001-of-00002.safetensors", edit_dtype, &a, 0);
    {
        clef_error   err;
        clef_model  *m = clef_model_open(path_of("e", NULL), 0, &err);

        CHECK(m != NULL && clef_model_tensor(m, a.name)->dtype == CLEF_DTYPE_F16,
              "in_proj_z stored F16: accepted");
        clef_model_close(m);
    }

    /* An extra tensor would be silently ignored by the forward: refused. */
    clone("r2", "e");
    stat(path_of("e", "model-00001-of-00002.safetensors"), &st);
    f = fopen(path_of("e", "model-00001-of-00002.safetensors"), "rb");
    if (fread(lb, 1, 8, f) != 8) {
        abort();
    }
    fclose(f);
    for (i = 7; i >= 0; i--) {
        hlen = (hlen << 8) | lb[i];
    }
    end = (int64_t) st.st_size - 8 - (int64_t) hlen;
    rewrite_st("e", "model-00001-of-00002.safetensors", edit_add_bias, &end, 8);
    j = read_json("e", "model.safetensors.index.json");
    json_object_set_new(json_object_get(j, "weight_map"), L "layers.0.linear_attn.conv1d.bias",
                        json_string("model-00001-of-00002.safetensors"));
    write_json("e", "model.safetensors.index.json", j);
    expect_error("e", 0, 500, "model_invalid", "unexpected tensor",
                 "%s: unexpected tensor '" L "layers.0.linear_attn.conv1d.bias'",
                 path_of("e", "model-00001-of-00002.safetensors"));

    /* A truncated shard: the last tensor by offset is lm_head.weight. */
    clone("r2", "e");
    stat(shard2, &st);
    f = fopen(shard2, "rb");
    if (fread(lb, 1, 8, f) != 8) {
        abort();
    }
    fclose(f);
    hlen = 0;
    for (i = 7; i >= 0; i--) {
        hlen = (hlen << 8) | lb[i];
    }
    unlink(path_of("e", "model-00002-of-00002.safetensors"));
    run("head -c %lld %s > %s", (long long) st.st_size - 1000, shard2,
        path_of("e", "model-00002-of-00002.safetensors"));
    expect_error("e", 0, 500, "model_invalid", "truncated shard",
                 "%s: truncated: tensor 'model.visual.merger.linear_fc2.bias' ends at data "
                 "byte %lld but the "
                 "file holds %lld data bytes",
                 path_of("e", "model-00002-of-00002.safetensors"),
                 (long long) (st.st_size - 8 - (off_t) hlen),
                 (long long) (st.st_size - 8 - (off_t) hlen - 1000));
    expect_error("e", CLEF_MODEL_HEADERS_ONLY, 500, "model_invalid",
                 "truncated shard, headers only",
                 "%s: truncated: tensor 'model.visual.merger.linear_fc2.bias' ends at data "
                 "byte %lld but the "
                 "file holds %lld data bytes",
                 path_of("e", "model-00002-of-00002.safetensors"),
                 (long long) (st.st_size - 8 - (off_t) hlen),
                 (long long) (st.st_size - 8 - (off_t) hlen - 1000));

    clone("r2", "e");
    unlink(path_of("e", "model-00002-of-00002.safetensors"));
    expect_error("e", 0, 500, "model_invalid", "missing shard",
                 "%s: cannot open: No such file or directory",
                 path_of("e", "model-00002-of-00002.safetensors"));

    clone("r2", "e");
    rewrite_st("e", "joint_head.safetensors", edit_garbage, NULL, 0);
    expect_error("e", 0, 500, "model_invalid", "malformed head header",
                 "%s: header entry 'zzz' is not an object",
                 path_of("e", "joint_head.safetensors"));

    clone("r2", "e");
    unlink(path_of("e", "joint_head.safetensors"));
    f = fopen(path_of("e", "joint_head.safetensors"), "wb");
    fwrite("\x0c\0\0\0\0\0\0\0{\"a\": [1, 2,", 1, 20, f);
    fclose(f);
    expect_error("e", 0, 500, "model_invalid", "head header not JSON",
                 "%s: malformed header: ']' expected near end of file (at byte 12)",
                 path_of("e", "joint_head.safetensors"));

    clone("r2", "e");
    a.name = "residual_gate";
    a.to = "residual_gate_";
    rewrite_st("e", "joint_head.safetensors", edit_rename, &a, 0);
    expect_error("e", 0, 500, "model_invalid", "head tensor missing",
                 "%s: tensor 'residual_gate' is missing", path_of("e", "joint_head.safetensors"));

    clone("r2", "e");
    a.name = "option_norm.bias";
    a.to = "option_norm.bias.extra";
    rewrite_st("e", "joint_head.safetensors", edit_rename, &a, 0);
    expect_error("e", 0, 500, "model_invalid", "head: one missing",
                 "%s: tensor 'option_norm.bias' is missing",
                 path_of("e", "joint_head.safetensors"));

    clone("r2", "e");
    a.name = "layers.0.linear1.weight";
    rewrite_st("e", "joint_head.safetensors", edit_transpose, &a, 0);
    expect_error("e", 0, 500, "model_invalid", "head wrong shape",
                 "%s: tensor 'layers.0.linear1.weight' has shape [40, 72], expected [72, 40]",
                 path_of("e", "joint_head.safetensors"));
}

/* The real Clef-flash layout (4 shards, 17.9 GB as holes): validates and
 * maps without reading a page of weights. */
static void
test_real_layout(void)
{
    const clef_text_config  *c;
    const clef_tensor       *t;
    clef_model              *m;
    clef_error               err;
    int                      i, full = 0, maps;
    long                     kb;

    if (mkmodel("flash", "--shape clef-flash --sparse --seed 1") != 0) {
        CHECK(0, "mkmodel --shape clef-flash --sparse");
        return;
    }
    m = clef_model_open(path_of("flash", NULL), 0, &err);
    CHECK(m != NULL, "clef-flash layout opens");
    if (m == NULL) {
        printf("#   %s\n", err.message);
        return;
    }
    c = clef_model_text_config(m);
    for (i = 0; i < c->num_hidden_layers; i++) {
        full += c->layer_full[i] && (i + 1) % 4 == 0;
    }
    CHECK(c->vocab_size == 248320 && c->hidden_size == 4096 && c->num_hidden_layers == 32
          && full == 8, "9B: vocab 248320, hidden 4096, 32 layers, full at 3, 7, ..., 31");
    t = clef_model_tensor(m, L "layers.31.self_attn.q_proj.weight");
    CHECK(t != NULL && t->shape[0] == 8192 && t->shape[1] == 4096, "q_proj [8192, 4096]");
    t = clef_model_tensor(m, L "layers.30.linear_attn.in_proj_qkv.weight");
    CHECK(t != NULL && t->shape[0] == 8192 && t->shape[1] == 4096, "in_proj_qkv [8192, 4096]");
    t = clef_model_tensor(m, L "layers.30.linear_attn.out_proj.weight");
    CHECK(t != NULL && t->shape[0] == 4096 && t->shape[1] == 4096, "out_proj [4096, 4096]");
    t = clef_model_head_tensor(m, "residual_scorer.0.weight");
    CHECK(t != NULL && t->shape[0] == 1024 && t->shape[1] == 4096,
          "residual_scorer.0.weight [1024, 4096]");
    /* the release's vision tower (docs/spec/backbone.md §1.3, §2.5) */
    CHECK(clef_model_vision_config(m) != NULL
          && clef_model_vision_config(m)->depth == 27
          && clef_model_vision_config(m)->hidden_size == 1152
          && clef_model_vision_config(m)->num_heads == 16
          && clef_model_vision_config(m)->out_hidden_size == 4096,
          "clef-flash: the vision tower, 27 blocks of 1152, 16 heads of 72");
    t = clef_model_tensor(m, "model.visual.patch_embed.proj.weight");
    CHECK(t != NULL && t->ndim == 5 && t->shape[0] == 1152 && t->shape[1] == 3
          && t->shape[2] == 2 && t->shape[3] == 16 && t->shape[4] == 16,
          "patch_embed [1152, 3, 2, 16, 16]");
    t = clef_model_tensor(m, "model.visual.merger.linear_fc1.weight");
    CHECK(t != NULL && t->shape[0] == 4608 && t->shape[1] == 4608,
          "merger.linear_fc1 [4608, 4608]");
    t = clef_model_tensor(m, "model.visual.blocks.26.mlp.linear_fc2.weight");
    CHECK(t != NULL && t->shape[0] == 1152 && t->shape[1] == 4304,
          "blocks.26.mlp.linear_fc2 [1152, 4304]");
    kb = resident_kb("/flash/model-0000", &maps);
    CHECK_INT(maps, 4, "four shards mapped");
    CHECK_INT(kb, 0, "no page of the 17.9 GB of weights resident after open");
    clef_model_close(m);
}

typedef struct {
    int64_t  tensors, params, bytes;
} inventory;

static int
count_spec(const clef_tensor_spec *s, void *ctx)
{
    inventory  *v = ctx;
    int64_t     n = 1;
    int         k;

    for (k = 0; k < s->ndim; k++) {
        n *= s->shape[k];
    }
    v->tensors++;
    v->params += n;
    v->bytes += n * (s->dtype == CLEF_WANT_F32_OR_BF16 ? 4 : 2);
    return 0;
}

/* The inventory against the published counts (docs/spec/backbone.md §2.5,
 * docs/spec/encoder-and-head.md §1). */
static void
test_inventory(void)
{
    clef_text_config  c;
    clef_head_config  h = { 4096, 1024, 2, 4, 16, 4096 };
    inventory         v = { 0, 0, 0 };
    int               i;

    memset(&c, 0, sizeof(c));
    c.vocab_size = 248320;
    c.hidden_size = 4096;
    c.intermediate_size = 12288;
    c.num_hidden_layers = 32;
    c.num_attention_heads = 16;
    c.num_key_value_heads = 4;
    c.head_dim = 256;
    c.linear_num_key_heads = 16;
    c.linear_num_value_heads = 32;
    c.linear_key_head_dim = 128;
    c.linear_value_head_dim = 128;
    c.linear_conv_kernel_dim = 4;
    c.attn_output_gate = 1;
    for (i = 0; i < 32; i++) {
        c.layer_full[i] = (i + 1) % 4 == 0;
    }
    clef_text_config_describe_layers(&c);
    clef_text_tensors(&c, count_spec, &v);
    CHECK_INT(v.params, 8953803264LL, "9B text stack: 8,953,803,264 parameters");
    CHECK_INT(v.bytes, 17907614208LL, "9B text stack: bf16 + F32 A_log/norm bytes");
    CHECK_INT(v.tensors, 24 * 14 + 8 * 11 + 3, "9B text stack: tensor count");

    memset(&v, 0, sizeof(v));
    clef_head_tensors(&h, count_spec, &v);
    CHECK_INT(v.tensors, 122, "clef-flash head: 122 tensors");
    CHECK_INT(v.params, 121762820, "clef-flash head: 121,762,820 parameters");
    memset(&v, 0, sizeof(v));
    h.hidden_size = 5120;
    clef_head_tensors(&h, count_spec, &v);
    CHECK_INT(v.params, 128056324, "clef head: 128,056,324 parameters");
}

int
main(void)
{

    snprintf(tokdir, sizeof(tokdir), "%s", check_qwen3_tokenizer());
    if (access("build/clef", X_OK) != 0) {
        printf("1..0 # SKIP build/clef is not built\n");
        return 0;
    }
    if (access(tokdir, R_OK) != 0) {
        /* part of the repository: missing is a broken checkout */
        printf("Bail out! no tokenizer at %s\n", tokdir);
        return 1;
    }
    if (mkdtemp(tmp) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    CHECK(mkmodel("r2", "--config t/fixtures/models/r2.json --seed 2 --shards 2") == 0,
          "mkmodel r2");
    CHECK(mkmodel("r2one", "--config t/fixtures/models/r2.json --seed 2 --shards 1") == 0,
          "mkmodel r2, one shard");
    CHECK(mkmodel("r3", "--config t/fixtures/models/r3.json --seed 3") == 0, "mkmodel r3");

    test_inventory();
    test_r2();
    test_shard_independence();
    test_headers_only();
    test_r3_tied();
    test_vision();
    test_causal_lm_layout();
    test_errors();
    test_real_layout();

    run("rm -rf %s", tmp);
    return check_done();
}
