/*
 * clef mkmodel --config FILE|--shape NAME --tokenizer DIR --seed N --out DIR
 *              [--shards N] [--sparse] [--text-only]
 * clef mkmodel --config FILE|--shape NAME --tokenizer DIR --seed N
 *              --gguf TYPE --out FILE.gguf [--mmproj FILE] [--sparse]
 *
 * Writes a complete Clef release directory with deterministic random
 * weights: config.json (Qwen3_5ForConditionalGeneration with its vision
 * config), joint_head_config.json, preprocessor_config.json,
 * video_preprocessor_config.json, model.safetensors.index.json + bf16 shards under the release's tensor
 * names (A_log and linear_attn.norm.weight F32; the vision tower after the
 * text stack), joint_head.safetensors, and the tokenizer files copied from
 * DIR.  --text-only leaves the tower's tensors and the processor configs
 * out: a checkpoint that takes no images or videos.  The --config format is in
 * t/fixtures/models/README.md.
 *
 * --gguf TYPE writes the same model as one GGUF file instead, as llama.cpp's
 * converter and llama-quantize would have made it from that release
 * (cli/mkmodel_gguf.c), the tower into the --mmproj file when given; a
 * Clef Omni config as a clef-omni file (model/gguf_clef.h), its audio
 * tower in the mmproj beside the vision tower.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/path.h"
#include "commands.h"
#include "mkmodel.h"
#include "model/model_vision.h"

typedef struct {
    const char  *config;
    const char  *shape;
    const char  *tokenizer;
    const char  *out;
    uint64_t     seed;
    int          have_seed;
    int          shards;
    int          sparse;
    int          text_only;
    const char  *gguf;
    const char  *mmproj;
} mk_args;

static void
usage(FILE *f)
{
    fprintf(f, "usage: clef mkmodel (--config FILE | --shape NAME) --tokenizer DIR "
               "--seed N --out DIR\n"
               "                    [--shards N] [--sparse] [--text-only]\n"
               "       clef mkmodel (--config FILE | --shape NAME) --tokenizer DIR "
               "--seed N\n"
               "                    --gguf TYPE --out FILE.gguf [--mmproj FILE] "
               "[--sparse]\n"
               "  --config FILE  text_config keys plus a \"head\" object "
               "(t/fixtures/models/README.md)\n"
               "  --shape NAME   one of: ");
    mkmodel_shape_list(f);
    fprintf(f, "  --tokenizer DIR  holds tokenizer.json and tokenizer_config.json\n"
               "  --seed N       weights are a function of N only\n"
               "  --shards N     number of model-*.safetensors files\n"
               "  --sparse       leave the weight data as holes (for loader tests)\n"
               "  --text-only    no vision tower tensors (a model without images)\n"
               "  --gguf TYPE    one GGUF file as llama.cpp makes it: f32, f16, bf16,"
               " q8_0,\n"
               "                 q4_0, q4_1, q5_0, q5_1, q6_k, q4_k_m, q5_k_m;"
               " iq4_xs,\n"
               "                 q3_k_m with --sparse\n"
               "  --mmproj FILE  with --gguf: the vision tower into FILE (Clef"
               " Omni: and\n"
               "                 its audio tower)\n");
}

static int
fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int
fail(const char *fmt, ...)
{
    va_list  ap;

    fprintf(stderr, "clef mkmodel: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n");
    return 1;
}

/* mkdir -p */
static int
make_dirs(const char *dir)
{
    char    *p = strdup(dir), *s;
    int      rc = 0;

    if (p == NULL) {
        return -1;
    }
    for (s = p + 1; rc == 0; s++) {
        if (*s == '/' || *s == '\0') {
            char  c = *s;

            *s = '\0';
            if (mkdir(p, 0755) != 0 && errno != EEXIST) {
                rc = -1;
            }
            *s = c;
            if (c == '\0') {
                break;
            }
        }
    }
    free(p);
    return rc;
}

/* ---- JSON output --------------------------------------------------------- */

/* 1 when every real in v prints back exactly with 15 significant digits. */
static int
reals_fit_15(const json_t *v)
{
    const char  *key;
    json_t      *x;
    size_t       i;
    char         buf[64];

    if (json_is_real(v)) {
        snprintf(buf, sizeof(buf), "%.15g", json_real_value(v));
        return strtod(buf, NULL) == json_real_value(v);
    }
    if (json_is_array(v)) {
        json_array_foreach(v, i, x) {
            if (!reals_fit_15(x)) {
                return 0;
            }
        }
    }
    if (json_is_object(v)) {
        json_object_foreach((json_t *) v, key, x) {
            if (!reals_fit_15(x)) {
                return 0;
            }
        }
    }
    return 1;
}

/* Sorted keys, two-space indent, the shortest exact reals jansson can give:
 * the same bytes for the same tree. */
static int
write_json(const char *dir, const char *name, const json_t *v)
{
    char   *path = clef_path_join(dir, name), *text;
    FILE   *f;
    size_t  flags = JSON_INDENT(2) | JSON_SORT_KEYS
                    | JSON_REAL_PRECISION(reals_fit_15(v) ? 15 : 17);
    int     rc = -1;

    text = json_dumps(v, flags);
    f = path != NULL ? fopen(path, "wb") : NULL;
    if (text != NULL && f != NULL && fputs(text, f) != EOF && fputc('\n', f) != EOF) {
        rc = 0;
    }
    if (f == NULL || fclose(f) != 0) {
        rc = -1;
    }
    if (rc != 0) {
        fail("%s: %s", path ? path : name, strerror(errno));
    }
    free(text);
    free(path);
    return rc;
}

static int
copy_file(const char *from_dir, const char *to_dir, const char *name)
{
    char    *from = clef_path_join(from_dir, name), *to = clef_path_join(to_dir, name);
    char     buf[1 << 16];
    FILE    *in = NULL, *out = NULL;
    size_t   n;
    int      rc = -1;

    if (from == NULL || to == NULL) {
        goto done;
    }
    in = fopen(from, "rb");
    if (in == NULL) {
        fail("%s: %s", from, strerror(errno));
        goto done;
    }
    out = fopen(to, "wb");
    if (out == NULL) {
        fail("%s: %s", to, strerror(errno));
        goto done;
    }
    while ((n = fread(buf, 1, sizeof(buf), in)) > 0) {
        if (fwrite(buf, 1, n, out) != n) {
            break;
        }
    }
    rc = ferror(in) || ferror(out) ? -1 : 0;
    if (fclose(out) != 0) {
        rc = -1;
    }
    out = NULL;
    if (rc != 0) {
        fail("copying %s to %s: %s", from, to, strerror(errno));
    }

done:
    if (in != NULL) {
        fclose(in);
    }
    if (out != NULL) {
        fclose(out);
    }
    free(from);
    free(to);
    return rc;
}

/* ---- tokenizer facts ----------------------------------------------------- */

typedef struct {
    int64_t  vocab;                 /* max id + 1 */
    json_t  *token_ids;             /* config.json keys for the vision tokens */
    json_t  *audio_ids;             /* Clef Omni's thinker_config keys for the
                                       audio tokens */
} mk_tokenizer;

static int
read_tokenizer(const char *dir, mk_tokenizer *tk)
{
    static const char  *vision[][2] = {
        { "image_token_id", "<|image_pad|>" },
        { "video_token_id", "<|video_pad|>" },
        { "vision_start_token_id", "<|vision_start|>" },
        { "vision_end_token_id", "<|vision_end|>" },
        { "audio_token_id", "<|audio_pad|>" },
        { "audio_start_token_id", "<|audio_start|>" },
        { "audio_end_token_id", "<|audio_end|>" },
    };
    char          *path = clef_path_join(dir, "tokenizer.json");
    json_t        *root, *vocab, *added, *v, *a;
    json_error_t   jerr;
    const char    *key;
    size_t         i, k;
    int64_t        id;

    root = path != NULL ? json_load_file(path, 0, &jerr) : NULL;
    if (root == NULL) {
        fail("%s: %s", path ? path : dir, path ? jerr.text : "out of memory");
        free(path);
        return -1;
    }
    tk->vocab = 0;
    tk->token_ids = json_object();
    tk->audio_ids = json_object();
    vocab = json_object_get(json_object_get(root, "model"), "vocab");
    json_object_foreach(vocab, key, v) {
        id = json_integer_value(v);
        tk->vocab = id + 1 > tk->vocab ? id + 1 : tk->vocab;
    }
    added = json_object_get(root, "added_tokens");
    json_array_foreach(added, i, a) {
        id = json_integer_value(json_object_get(a, "id"));
        tk->vocab = id + 1 > tk->vocab ? id + 1 : tk->vocab;
        for (k = 0; k < sizeof(vision) / sizeof(vision[0]); k++) {
            if (json_is_string(json_object_get(a, "content"))
                && strcmp(json_string_value(json_object_get(a, "content")),
                          vision[k][1]) == 0)
            {
                json_object_set_new(k < 4 ? tk->token_ids : tk->audio_ids,
                                    vision[k][0], json_integer(id));
            }
        }
    }
    json_decref(root);
    if (tk->vocab == 0) {
        fail("%s: no tokens in model.vocab or added_tokens", path);
        free(path);
        return -1;
    }
    free(path);
    return 0;
}

/* ---- configs ------------------------------------------------------------- */

/* transformers' interleaved M-RoPE needs a (T, H, W) split of the rotary
 * pairs; [11, 11, 10] for the release's 32 pairs.  Text never uses it. */
static json_t *
mrope_section(int pairs)
{
    int  h = (pairs + 1) / 3, w = pairs / 3;

    return json_pack("[i,i,i]", pairs - h - w, h, w);
}

static json_t *
tiny_vision(int out_hidden)
{
    return json_pack("{s:s,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:s,s:[],s:i}",
                     "model_type", "qwen3_5",
                     "depth", 1, "hidden_size", 32, "intermediate_size", 64,
                     "num_heads", 2, "in_channels", 3, "patch_size", 16,
                     "temporal_patch_size", 2, "spatial_merge_size", 2,
                     "num_position_embeddings", 16,
                     "hidden_act", "gelu_pytorch_tanh",
                     "deepstack_visual_indexes",
                     "out_hidden_size", out_hidden);
}

/* Turns the --config object into config.json and joint_head_config.json,
 * both validated by the loader's own parsers. */
/* preprocessor_config.json of the release (docs/spec/backbone.md
 * §5.1), with the tower's patch sizes */
static json_t *
preprocessor_config(const clef_vision_config *vc)
{
    return json_pack("{s:{s:i,s:i},s:i,s:i,s:i,s:[f,f,f],s:[f,f,f],s:b,s:f,"
                     "s:b,s:b,s:b,s:i,s:s,s:s}",
                     "size", "shortest_edge", 65536, "longest_edge", 16777216,
                     "patch_size", vc->patch_size,
                     "temporal_patch_size", vc->temporal_patch_size,
                     "merge_size", vc->spatial_merge_size,
                     "image_mean", 0.5, 0.5, 0.5, "image_std", 0.5, 0.5, 0.5,
                     "do_rescale", 1, "rescale_factor", 1.0 / 255.0,
                     "do_normalize", 1, "do_resize", 1, "do_convert_rgb", 1,
                     "resample", 3,
                     "image_processor_type", "Qwen2VLImageProcessorFast",
                     "processor_class", "Qwen3VLProcessor");
}

/* video_preprocessor_config.json of the release (docs/spec/backbone.md
 * §5.4), with the tower's patch sizes */
static json_t *
video_preprocessor_config(const clef_vision_config *vc)
{
    return json_pack("{s:{s:i,s:i},s:i,s:i,s:i,s:[f,f,f],s:[f,f,f],s:s,s:s}",
                     "size", "shortest_edge", 4096, "longest_edge", 25165824,
                     "patch_size", vc->patch_size,
                     "temporal_patch_size", vc->temporal_patch_size,
                     "merge_size", vc->spatial_merge_size,
                     "image_mean", 0.5, 0.5, 0.5, "image_std", 0.5, 0.5, 0.5,
                     "processor_class", "Qwen3VLProcessor",
                     "video_processor_type", "Qwen3VLVideoProcessor");
}

static int
build_configs(json_t *in, const mk_tokenizer *tk, json_t **config, json_t **head,
    clef_text_config *tc, clef_head_config *hc, clef_vision_config *vc)
{
    json_t      *text, *rope, *lt, *vision, *v;
    clef_error   err;
    int64_t      vocab;
    int          i;

    *config = NULL;
    *head = NULL;
    if (!json_is_object(in)) {
        return fail("the config is not a JSON object");
    }
    text = json_deep_copy(in);
    json_object_del(text, "head");
    json_object_del(text, "vision_config");

    v = json_object_get(in, "vocab_size");
    vocab = json_is_integer(v) && json_integer_value(v) > tk->vocab
            ? json_integer_value(v) : tk->vocab;
    json_object_set_new(text, "vocab_size", json_integer(vocab));
    json_object_set_new(text, "model_type", json_string("qwen3_5_text"));

    *config = json_object();
    json_object_set_new(*config, "text_config", text);
    if (clef_text_config_parse(*config, "config", tc, &err) != 0) {
        return fail("%s", err.message);
    }

    /* Spell out what the loader derived, in the release's form. */
    lt = json_array();
    for (i = 0; i < tc->num_hidden_layers; i++) {
        json_array_append_new(lt, json_string(tc->layer_full[i] ? "full_attention"
                                                                : "linear_attention"));
    }
    json_object_set_new(text, "layer_types", lt);
    rope = json_object_get(text, "rope_parameters");
    rope = rope != NULL ? json_deep_copy(rope) : json_object();
    json_object_set_new(rope, "rope_type", json_string("default"));
    json_object_set_new(rope, "rope_theta", json_real(tc->rope_theta));
    json_object_set_new(rope, "partial_rotary_factor",
                        json_real(tc->partial_rotary_factor));
    if (json_object_get(rope, "mrope_section") == NULL) {
        json_object_set_new(rope, "mrope_section",
                            mrope_section((int) (tc->head_dim * tc->partial_rotary_factor)
                                          / 2));
    }
    if (json_object_get(rope, "mrope_interleaved") == NULL) {
        json_object_set_new(rope, "mrope_interleaved", json_true());
    }
    json_object_set_new(text, "rope_parameters", rope);
    json_object_del(text, "rope_theta");
    json_object_del(text, "partial_rotary_factor");
    json_object_set_new(text, "rms_norm_eps", json_real(tc->rms_norm_eps));
    json_object_set_new(text, "attn_output_gate", json_boolean(tc->attn_output_gate));
    json_object_set_new(text, "tie_word_embeddings",
                        json_boolean(tc->tie_word_embeddings));
    json_object_set_new(text, "hidden_act", json_string("silu"));
    json_object_set_new(text, "attention_bias", json_false());
    json_object_set_new(text, "dtype", json_string("bfloat16"));
    if (json_object_get(text, "max_position_embeddings") == NULL) {
        json_object_set_new(text, "max_position_embeddings", json_integer(262144));
    }

    v = json_object_get(in, "vision_config");
    if (v != NULL && !json_is_object(v)) {
        return fail("vision_config is not an object");
    }
    vision = v != NULL ? json_deep_copy(v) : tiny_vision(tc->hidden_size);
    json_object_set_new(vision, "out_hidden_size", json_integer(tc->hidden_size));

    json_object_set_new(*config, "architectures",
                        json_pack("[s]", "Qwen3_5ForConditionalGeneration"));
    json_object_set_new(*config, "model_type", json_string("qwen3_5"));
    json_object_set_new(*config, "tie_word_embeddings",
                        json_boolean(tc->tie_word_embeddings));
    json_object_set_new(*config, "vision_config", vision);
    json_object_update(*config, tk->token_ids);
    if (clef_vision_config_parse(*config, "vision_config", vc, &err) != 0) {
        return fail("%s", err.message);
    }

    v = json_object_get(in, "head");
    if (!json_is_object(v)) {
        return fail("the config has no \"head\" object");
    }
    *head = json_deep_copy(v);
    if (json_object_get(*head, "hidden_size") == NULL) {
        json_object_set_new(*head, "hidden_size", json_integer(tc->hidden_size));
    }
    if (clef_head_config_parse(*head, "head", hc, &err) != 0) {
        return fail("%s", err.message);
    }
    if (hc->hidden_size != tc->hidden_size) {
        return fail("head.hidden_size %d is not the backbone's %d", hc->hidden_size,
                    tc->hidden_size);
    }
    return 0;
}

/* ---- weights ------------------------------------------------------------- */

typedef struct {
    mkmodel_tensor           *v;
    int                       n, cap;
    const clef_model_configs *cfg;
} mk_list;

static int
collect(const clef_tensor_spec *s, void *ctx)
{
    mk_list         *l = ctx;
    mkmodel_tensor  *p;
    int              k;

    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 256;
        p = realloc(l->v, (size_t) l->cap * sizeof(*p));
        if (p == NULL) {
            return -1;
        }
        l->v = p;
    }
    p = &l->v[l->n++];
    p->spec = *s;
    p->kind = clef_role_kind_in(l->cfg != NULL ? &l->cfg->text : NULL,
                                s->role);
    if (l->cfg != NULL && l->cfg->family == CLEF_FAMILY_OMNI
        && mkmodel_omni_name(p->spec.name, sizeof(p->spec.name)) != 0)
    {
        return -1;
    }
    p->dtype = mkmodel_release_dtype(s);
    p->nbytes = clef_dtype_size(p->dtype);
    for (k = 0; k < s->ndim; k++) {
        p->nbytes *= (uint64_t) s->shape[k];
    }
    p->shard = 0;
    return 0;
}

clef_dtype
mkmodel_release_dtype(const clef_tensor_spec *s)
{
    /* The release stores A_log and the gated norm F32, all else bf16. */
    return s->dtype == CLEF_WANT_F32_OR_BF16 ? CLEF_DTYPE_F32 : CLEF_DTYPE_BF16;
}

/* Contiguous runs of tensors of about total/n bytes each, none empty. */
static void
assign_shards(mk_list *l, int n, uint64_t total)
{
    uint64_t  before = 0;
    int       i, s, prev = 0;

    for (i = 0; i < l->n; i++) {
        s = (int) ((before + l->v[i].nbytes / 2) * (uint64_t) n / (total ? total : 1));
        s = s > prev + 1 ? prev + 1 : s;
        s = s < prev ? prev : s;
        s = s < n - (l->n - i) ? n - (l->n - i) : s;
        s = s > n - 1 ? n - 1 : s;
        l->v[i].shard = prev = s;
        before += l->v[i].nbytes;
    }
}

/* A Clef Omni release's speech output (talker.*, code2wav.*), which the
 * loader must never read: two small tensors in a shard of their own. */
static int
add_speech(mk_list *l, const clef_model_configs *cfg)
{
    static const char  *names[] = {
        "code2wav.pre_transformer.norm.weight", "talker.model.norm.weight"
    };
    clef_tensor_spec    s;
    size_t              i;
    int                 rc = 0;

    /* drawn as norms, under their own names (no config: no renaming) */
    l->cfg = NULL;
    for (i = 0; rc == 0 && i < sizeof(names) / sizeof(names[0]); i++) {
        memset(&s, 0, sizeof(s));
        snprintf(s.name, sizeof(s.name), "%s", names[i]);
        s.role = CLEF_ROLE_FINAL_NORM;
        s.expert = -1;
        s.ndim = 1;
        s.shape[0] = cfg->text.hidden_size;
        rc = collect(&s, l);
    }
    l->cfg = cfg;
    return rc;
}

static int
write_backbone(const mk_args *a, const clef_model_configs *cfg, int shards,
    uint64_t *bytes)
{
    const clef_text_config    *tc = &cfg->text;
    const clef_vision_config  *vc = &cfg->vision;
    mk_list    l = { NULL, 0, 0, cfg };
    int        omni = cfg->family == CLEF_FAMILY_OMNI, speech = 0;
    json_t    *index = NULL, *map;
    uint64_t   total = 0;
    char       name[64], *path;
    int        i, s, first, rc = -1;

    /* the text stack, then the vision tower after it, as the release's
     * index lists them */
    if (clef_text_tensors(tc, collect, &l) != 0
        || (vc->present && clef_vision_tensors(vc, collect, &l) != 0)
        || (cfg->audio.present
            && clef_audio_tensors(&cfg->audio, collect, &l) != 0))
    {
        fail("out of memory");
        goto done;
    }
    if (shards > l.n) {
        fail("--shards %d is more than the %d tensors", shards, l.n);
        goto done;
    }
    for (i = 0; i < l.n; i++) {
        total += l.v[i].nbytes;
    }
    assign_shards(&l, shards, total);
    if (omni) {
        speech = l.n;
        if (add_speech(&l, cfg) != 0) {
            fail("out of memory");
            goto done;
        }
        for (i = speech; i < l.n; i++) {
            l.v[i].shard = shards;
            total += l.v[i].nbytes;
        }
        shards++;
    }

    map = json_object();
    index = json_pack("{s:{s:I},s:o}", "metadata", "total_size", (json_int_t) total,
                      "weight_map", map);
    for (s = 0, first = 0; s < shards; s++) {
        snprintf(name, sizeof(name), "model-%05d-of-%05d.safetensors", s + 1, shards);
        for (i = first; i < l.n && l.v[i].shard == s; i++) {
            json_object_set_new(map, l.v[i].spec.name, json_string(name));
        }
        path = clef_path_join(a->out, name);
        if (path == NULL
            || mkmodel_write_safetensors(path, l.v + first, i - first, a->seed,
                                         a->sparse) != 0)
        {
            free(path);
            goto done;
        }
        free(path);
        first = i;
    }
    if (write_json(a->out, "model.safetensors.index.json", index) != 0) {
        goto done;
    }
    *bytes = total;
    rc = 0;

done:
    json_decref(index);
    free(l.v);
    return rc;
}

static int
write_head(const mk_args *a, const clef_head_config *hc, int *count, uint64_t *bytes)
{
    mk_list  l = { NULL, 0, 0, NULL };
    char    *path = clef_path_join(a->out, "joint_head.safetensors");
    int      i, rc = -1;

    if (path == NULL || clef_head_tensors(hc, collect, &l) != 0) {
        fail("out of memory");
        goto done;
    }
    for (i = 0; i < l.n; i++) {
        *bytes += l.v[i].nbytes;            /* all bf16, as in the release */
    }
    *count = l.n;
    rc = mkmodel_write_safetensors(path, l.v, l.n, a->seed, a->sparse);

done:
    free(path);
    free(l.v);
    return rc;
}

/* ---- command ------------------------------------------------------------- */

static int
write_gguf(const mk_args *a, json_t *config, const clef_model_configs *cfg)
{
    mkmodel_gguf_args   g;
    json_t             *ctx, *every, *text;
    const char         *base = a->shape;
    char                name[128];
    size_t              n;

    if (base == NULL) {
        base = strrchr(a->config, '/') ? strrchr(a->config, '/') + 1 : a->config;
    }
    n = strcspn(base, ".");
    /* the converter's name: the directory's, its first letter upper */
    snprintf(name, sizeof(name), "%.*s", (int) (n < 100 ? n : 100), base);
    name[0] = (char) toupper((unsigned char) name[0]);
    text = json_object_get(config, "text_config");
    if (cfg->family == CLEF_FAMILY_OMNI) {
        text = json_object_get(json_object_get(config, "thinker_config"),
                               "text_config");
    }
    ctx = json_object_get(text, "max_position_embeddings");
    every = json_object_get(text, "full_attention_interval");
    memset(&g, 0, sizeof(g));
    g.type = a->gguf;
    g.out = a->out;
    g.mmproj = a->mmproj;
    g.tokenizer_dir = a->tokenizer;
    g.name = name;
    g.context_length = json_integer_value(ctx);
    /* transformers' default when the config has none */
    g.full_attention_interval = every ? json_integer_value(every) : 4;
    g.seed = a->seed;
    g.sparse = a->sparse;
    return mkmodel_write_gguf(&g, cfg);
}

static int
parse_args(int argc, char **argv, mk_args *a)
{
    static const struct option  opts[] = {
        { "config", required_argument, NULL, 'c' },
        { "shape", required_argument, NULL, 'S' },
        { "tokenizer", required_argument, NULL, 't' },
        { "seed", required_argument, NULL, 's' },
        { "out", required_argument, NULL, 'o' },
        { "shards", required_argument, NULL, 'n' },
        { "sparse", no_argument, NULL, 'p' },
        { "text-only", no_argument, NULL, 'T' },
        { "gguf", required_argument, NULL, 'g' },
        { "mmproj", required_argument, NULL, 'm' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 }
    };
    char  *end;
    long   n;
    int    c;

    memset(a, 0, sizeof(*a));
    optind = 1;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'c': a->config = optarg; break;
        case 'S': a->shape = optarg; break;
        case 't': a->tokenizer = optarg; break;
        case 'o': a->out = optarg; break;
        case 'p': a->sparse = 1; break;
        case 'T': a->text_only = 1; break;
        case 'g': a->gguf = optarg; break;
        case 'm': a->mmproj = optarg; break;
        case 's':
            errno = 0;
            a->seed = strtoull(optarg, &end, 0);
            if (errno != 0 || *end != '\0' || optarg[0] == '-') {
                return fail("--seed '%s' is not a non-negative integer", optarg);
            }
            a->have_seed = 1;
            break;
        case 'n':
            n = strtol(optarg, &end, 10);
            if (*end != '\0' || n < 1 || n > 99999) {
                return fail("--shards '%s' is not an integer in [1, 99999]", optarg);
            }
            a->shards = (int) n;
            break;
        case 'h':
            usage(stdout);
            exit(0);
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind != argc || (a->config == NULL) == (a->shape == NULL)
        || a->tokenizer == NULL || a->out == NULL || !a->have_seed
        || (a->mmproj != NULL && a->gguf == NULL)
        || (a->gguf != NULL && (a->shards != 0 || a->text_only)))
    {
        usage(stderr);
        return 2;
    }
    return 0;
}

int
clef_cmd_mkmodel(int argc, char **argv)
{
    const mkmodel_shape  *shape = NULL;
    clef_model_configs    cfg;
    mk_tokenizer          tk = { 0, NULL, NULL };
    json_t               *in = NULL, *config = NULL, *head = NULL, *pre = NULL;
    json_t               *vpre = NULL;
    json_error_t          jerr;
    mk_args               a;
    uint64_t              text_bytes = 0, head_bytes = 0;
    int                   rc, shards, head_count = 0;

    rc = parse_args(argc, argv, &a);
    if (rc != 0) {
        return rc;
    }

    rc = 1;
    memset(&cfg, 0, sizeof(cfg));
    if (a.shape != NULL) {
        shape = mkmodel_shape_find(a.shape);
        if (shape == NULL) {
            fail("unknown shape '%s'", a.shape);
            usage(stderr);
            return 2;
        }
        in = json_loads(shape->json, JSON_REJECT_DUPLICATES, &jerr);
    } else {
        in = json_load_file(a.config, JSON_REJECT_DUPLICATES, &jerr);
    }
    if (in == NULL) {
        fail("%s: %s (line %d)", a.config ? a.config : a.shape, jerr.text, jerr.line);
        goto done;
    }
    shards = a.shards ? a.shards : shape != NULL ? shape->shards : 1;

    if (read_tokenizer(a.tokenizer, &tk) != 0) {
        goto done;
    }
    if (mkmodel_is_omni(in)
        ? mkmodel_omni_configs(in, tk.vocab, tk.token_ids, tk.audio_ids,
                               &config, &head, &cfg) != 0
        : build_configs(in, &tk, &config, &head, &cfg.text, &cfg.head,
                        &cfg.vision) != 0)
    {
        goto done;
    }
    if (a.gguf != NULL) {
        rc = write_gguf(&a, config, &cfg);
        goto done;
    }
    if (make_dirs(a.out) != 0) {
        fail("%s: %s", a.out, strerror(errno));
        goto done;
    }
    if (a.text_only) {
        cfg.vision.present = 0;
        cfg.audio.present = 0;
    }
    if (cfg.family == CLEF_FAMILY_OMNI) {
        pre = cfg.vision.present || cfg.audio.present
              ? mkmodel_omni_preprocessor(&cfg.vision) : NULL;
    } else {
        pre = cfg.vision.present ? preprocessor_config(&cfg.vision) : NULL;
    }
    vpre = cfg.family != CLEF_FAMILY_OMNI && cfg.vision.present
           ? video_preprocessor_config(&cfg.vision) : NULL;
    if (write_json(a.out, "config.json", config) != 0
        || write_json(a.out, "joint_head_config.json", head) != 0
        || (pre != NULL
            && write_json(a.out, "preprocessor_config.json", pre) != 0)
        || (vpre != NULL
            && write_json(a.out, "video_preprocessor_config.json", vpre) != 0)
        || write_backbone(&a, &cfg, shards, &text_bytes) != 0
        || write_head(&a, &cfg.head, &head_count, &head_bytes) != 0
        || copy_file(a.tokenizer, a.out, "tokenizer.json") != 0
        || copy_file(a.tokenizer, a.out, "tokenizer_config.json") != 0)
    {
        goto done;
    }
    printf("%s: vocab %d, hidden %d, %d layers, %d shard%s, %llu bytes of backbone "
           "tensors; head %d tensors, %llu bytes%s\n",
           a.out, cfg.text.vocab_size, cfg.text.hidden_size,
           cfg.text.num_hidden_layers, shards, shards == 1 ? "" : "s",
           (unsigned long long) text_bytes, head_count,
           (unsigned long long) head_bytes, a.sparse ? " (sparse)" : "");
    rc = 0;

done:
    json_decref(in);
    json_decref(config);
    json_decref(head);
    json_decref(pre);
    json_decref(vpre);
    json_decref(tk.token_ids);
    json_decref(tk.audio_ids);
    return rc;
}
