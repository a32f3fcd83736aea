/*
 * config.json and joint_head_config.json (the tensors they imply are the
 * role table's, roles.h).  Defaults follow transformers' Qwen3_5TextConfig
 * where the release may leave a key out (layer_types, rope parameters,
 * rms_norm_eps); every size must be stated.
 */
#include "model/model_config.h"

#include <stdio.h>
#include <string.h>

#define MAX_DIM    (1 << 20)
#define MAX_VOCAB  (1 << 28)

typedef struct {
    const char  *file;
    const char  *prefix;      /* "text_config." when nested, else "" */
    clef_error  *err;
} cfg_ctx;

static int
cfg_error(const cfg_ctx *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int
cfg_error(const cfg_ctx *x, const char *fmt, ...)
{
    char     msg[400];
    va_list  ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return clef_error_fail(x->err, CLEF_E_MODEL, "%s: %s", x->file, msg);
}

static int
get_int(const cfg_ctx *x, const json_t *o, const char *key, int lo, int hi, int *out)
{
    const json_t  *v = json_object_get(o, key);
    json_int_t     i;

    if (v == NULL) {
        return cfg_error(x, "%s%s is missing", x->prefix, key);
    }
    if (!json_is_integer(v)) {
        return cfg_error(x, "%s%s is not an integer", x->prefix, key);
    }
    i = json_integer_value(v);
    if (i < lo || i > hi) {
        return cfg_error(x, "%s%s is %lld, outside [%d, %d]", x->prefix, key,
                         (long long) i, lo, hi);
    }
    *out = (int) i;
    return 0;
}

/* A number, or dflt when the key is absent from every object in os. */
static int
get_num(const cfg_ctx *x, const json_t *const *os, const char *const *prefixes,
    int n, const char *key, double dflt, double *out)
{
    const json_t  *v;
    int            i;

    for (i = 0; i < n; i++) {
        v = os[i] != NULL ? json_object_get(os[i], key) : NULL;
        if (v != NULL) {
            if (!json_is_number(v)) {
                return cfg_error(x, "%s%s is not a number", prefixes[i], key);
            }
            *out = json_number_value(v);
            return 0;
        }
    }
    *out = dflt;
    return 0;
}

static int
get_bool(const cfg_ctx *x, const json_t *o, const char *prefix, const char *key,
    int dflt, int *out)
{
    const json_t  *v = json_object_get(o, key);

    if (v == NULL) {
        *out = dflt;
        return 0;
    }
    if (!json_is_boolean(v)) {
        return cfg_error(x, "%s%s is not true or false", prefix, key);
    }
    *out = json_is_true(v);
    return 0;
}

/* A key whose other values would change the math this engine implements. */
static int
want_string(const cfg_ctx *x, const json_t *o, const char *prefix, const char *key,
    const char *want)
{
    const json_t  *v = json_object_get(o, key);

    if (v != NULL && (!json_is_string(v) || strcmp(json_string_value(v), want) != 0)) {
        return cfg_error(x, "%s%s is %s%s%s, only \"%s\" is supported", prefix, key,
                         json_is_string(v) ? "\"" : "",
                         json_is_string(v) ? json_string_value(v) : "not a string",
                         json_is_string(v) ? "\"" : "", want);
    }
    return 0;
}

const char *
clef_layer_tensor(const clef_layer_desc *d, const char *suffix, char *buf,
    size_t size)
{
    snprintf(buf, size, "%s%s", d->prefix, suffix);
    return buf;
}


void
clef_text_config_describe_layers(clef_text_config *c)
{
    int  l;

    for (l = 0; l < c->num_hidden_layers; l++) {
        c->layer[l].mixer = c->layer_full[l] ? CLEF_MIXER_FULL
                                             : CLEF_MIXER_LINEAR;
        c->layer[l].mlp = c->layer_moe[l] ? CLEF_MLP_MOE : CLEF_MLP_DENSE;
        snprintf(c->layer[l].prefix, sizeof(c->layer[l].prefix),
                 CLEF_TEXT_PREFIX "layers.%d.", l);
    }
}


static int
parse_layer_types(const cfg_ctx *x, const json_t *tc, clef_text_config *c)
{
    const json_t  *lt = json_object_get(tc, "layer_types"), *v;
    const char    *s;
    int            i, interval;

    if (lt == NULL) {
        if (json_object_get(tc, "full_attention_interval") == NULL) {
            interval = 4;
        } else if (get_int(x, tc, "full_attention_interval", 1, CLEF_MAX_LAYERS,
                           &interval) != 0)
        {
            return -1;
        }
        for (i = 0; i < c->num_hidden_layers; i++) {
            c->layer_full[i] = (i + 1) % interval == 0;
        }
        return 0;
    }

    if (!json_is_array(lt)) {
        return cfg_error(x, "%slayer_types is not a list", x->prefix);
    }
    if ((int) json_array_size(lt) != c->num_hidden_layers) {
        return cfg_error(x, "%slayer_types has %zu entries for %d layers", x->prefix,
                         json_array_size(lt), c->num_hidden_layers);
    }
    for (i = 0; i < c->num_hidden_layers; i++) {
        v = json_array_get(lt, (size_t) i);
        s = json_is_string(v) ? json_string_value(v) : NULL;
        if (s != NULL && strcmp(s, "linear_attention") == 0) {
            c->layer_full[i] = 0;
        } else if (s != NULL && strcmp(s, "full_attention") == 0) {
            c->layer_full[i] = 1;
        } else {
            return cfg_error(x, "%slayer_types[%d] is %s%s%s, expected "
                             "linear_attention or full_attention", x->prefix, i,
                             s ? "'" : "", s ? s : "not a string", s ? "'" : "");
        }
    }
    return 0;
}

/* How a family's text config states its rotary embedding, where a key is
 * left out: transformers' defaults for its config class. */
typedef struct {
    const char  *params;            /* the object: "rope_parameters" */
    const char  *legacy;            /* or this older one, or NULL */
    double       theta;
    double       partial;
    int          mrope[3];
} rope_defaults;

static const rope_defaults  qwen35_rope = {
    "rope_parameters", NULL, 10000.0, 0.25, { 11, 11, 10 }
};

/* Qwen3OmniMoeTextConfig: default_theta 1e6, every dim rotates, the
 * rotary embedding's mrope_section default [24, 20, 20]; the release
 * states them in rope_scaling, which transformers reads as
 * rope_parameters. */
static const rope_defaults  omni_rope = {
    "rope_parameters", "rope_scaling", 1000000.0, 1.0, { 24, 20, 20 }
};

/* The M-RoPE split of the rotary pairs over (T, H, W) that images use, as
 * transformers' rotary embeddings read it: mrope_section of the rope
 * object, the family's default when absent whatever the pair count, never
 * checked against it (pairs past the section's reach stay on T); the
 * layout is always interleaved (mrope_interleaved is not read there, so
 * not here either). */
static int
parse_mrope(const cfg_ctx *x, const json_t *rp, const char *rprefix,
    const rope_defaults *d, clef_text_config *c)
{
    const json_t  *ms = rp != NULL ? json_object_get(rp, "mrope_section") : NULL;
    int            i;

    for (i = 0; i < 3; i++) {
        c->mrope_section[i] = d->mrope[i];
    }
    c->mrope_interleaved = 1;
    if (ms == NULL) {
        return 0;
    }
    if (!json_is_array(ms) || json_array_size(ms) != 3) {
        return cfg_error(x, "%smrope_section is not a list of 3 integers",
                         rprefix);
    }
    for (i = 0; i < 3; i++) {
        if (!json_is_integer(json_array_get(ms, (size_t) i))
            || json_integer_value(json_array_get(ms, (size_t) i)) < 0
            || json_integer_value(json_array_get(ms, (size_t) i)) > 4096)
        {
            return cfg_error(x, "%smrope_section is not a list of 3 integers",
                             rprefix);
        }
        c->mrope_section[i] = (int) json_integer_value(json_array_get(ms, (size_t) i));
    }
    return 0;
}

static int
parse_rope(const cfg_ctx *x, const json_t *tc, const rope_defaults *d,
    clef_text_config *c)
{
    const json_t  *rp = json_object_get(tc, d->params);
    const json_t  *os[2];
    const char    *prefixes[2], *name = d->params;
    char           rprefix[80];
    int            rotary;

    if (rp == NULL && d->legacy != NULL) {
        name = d->legacy;
        rp = json_object_get(tc, name);
    }
    /* transformers' precedence: the rope object, then the legacy
     * top-level keys, then the defaults */
    if (rp != NULL && !json_is_object(rp)) {
        return cfg_error(x, "%s%s is not an object", x->prefix, name);
    }
    snprintf(rprefix, sizeof(rprefix), "%s%s.", x->prefix, name);
    if (rp != NULL && want_string(x, rp, rprefix, "rope_type", "default") != 0) {
        return -1;
    }
    os[0] = rp;
    os[1] = tc;
    prefixes[0] = rprefix;
    prefixes[1] = x->prefix;
    if (get_num(x, os, prefixes, 2, "rope_theta", d->theta, &c->rope_theta) != 0
        || get_num(x, os, prefixes, 2, "partial_rotary_factor", d->partial,
                   &c->partial_rotary_factor) != 0)
    {
        return -1;
    }
    if (!(c->rope_theta > 1.0)) {
        return cfg_error(x, "rope_theta is %g, must be over 1", c->rope_theta);
    }
    /* transformers rotates int(head_dim * factor) dims in (d, d + dim/2) pairs. */
    rotary = c->partial_rotary_factor > 0.0 && c->partial_rotary_factor <= 1.0
             ? (int) (c->head_dim * c->partial_rotary_factor) : 0;
    if (rotary < 2 || rotary % 2 != 0) {
        return cfg_error(x, "partial_rotary_factor %g gives %d rotary dims of "
                         "head_dim %d, need an even number >= 2",
                         c->partial_rotary_factor, rotary, c->head_dim);
    }
    return parse_mrope(x, rp, rprefix, d, c);
}

/* ---- Clef Omni: the thinker of qwen3_omni_moe -------------------------- */

/* mlp_only_layers, decoder_sparse_step and num_experts decide which layers
 * route, as Qwen3OmniMoeThinkerTextDecoderLayer does. */
static int
parse_omni_moe(const cfg_ctx *x, const json_t *tc, clef_text_config *c)
{
    const json_t  *ol = json_object_get(tc, "mlp_only_layers"), *v;
    int            step = 1, l;
    size_t         i;

    if (get_int(x, tc, "num_experts", 0, 4096, &c->num_experts) != 0) {
        return -1;
    }
    if (json_object_get(tc, "decoder_sparse_step") != NULL
        && get_int(x, tc, "decoder_sparse_step", 1, CLEF_MAX_LAYERS, &step)
           != 0)
    {
        return -1;
    }
    v = json_object_get(tc, "shared_expert_intermediate_size");
    if (v != NULL && !(json_is_integer(v) && json_integer_value(v) == 0)) {
        return cfg_error(x, "%sshared_expert_intermediate_size: a shared "
                         "expert is not supported", x->prefix);
    }
    if (ol != NULL && !json_is_null(ol) && !json_is_array(ol)) {
        return cfg_error(x, "%smlp_only_layers is not a list", x->prefix);
    }
    for (l = 0; l < c->num_hidden_layers; l++) {
        c->layer_moe[l] = c->num_experts > 0 && (l + 1) % step == 0;
    }
    json_array_foreach(ol, i, v) {
        if (!json_is_integer(v) || json_integer_value(v) < 0) {
            return cfg_error(x, "%smlp_only_layers[%zu] is not a layer index",
                             x->prefix, i);
        }
        if (json_integer_value(v) < c->num_hidden_layers) {
            c->layer_moe[json_integer_value(v)] = 0;
        }
    }
    if (c->num_experts == 0) {
        return 0;
    }
    if (get_int(x, tc, "num_experts_per_tok", 1,
                c->num_experts < 64 ? c->num_experts : 64,
                &c->num_experts_per_tok) != 0
        || get_int(x, tc, "moe_intermediate_size", 1, MAX_DIM,
                   &c->moe_intermediate_size) != 0
        || get_bool(x, tc, x->prefix, "norm_topk_prob", 1, &c->norm_topk_prob)
           != 0)
    {
        return -1;
    }
    return 0;
}

/* config.json of a Clef Omni release (Qwen3OmniMoeForConditionalGeneration):
 * the text stack under thinker_config.text_config, every layer full
 * attention without an output gate, plain RMSNorm weights, routed
 * experts; the talker's and code2wav's configs are not read. */
static int
parse_omni(cfg_ctx *x, const json_t *root, clef_text_config *c)
{
    const json_t  *th = json_object_get(root, "thinker_config"), *tc;
    const json_t  *os[1];
    const char    *prefixes[1];
    int            l, tied_top = -1;

    if (!json_is_object(th)) {
        return cfg_error(x, "thinker_config is %s", th == NULL ? "missing"
                                                               : "not an object");
    }
    tc = json_object_get(th, "text_config");
    if (!json_is_object(tc)) {
        return cfg_error(x, "thinker_config.text_config is %s",
                         tc == NULL ? "missing" : "not an object");
    }
    x->prefix = "thinker_config.text_config.";
    if (want_string(x, tc, x->prefix, "model_type", "qwen3_omni_moe_text") != 0
        || want_string(x, tc, x->prefix, "hidden_act", "silu") != 0
        || get_bool(x, th, "thinker_config.", "tie_word_embeddings", 0,
                    &tied_top) != 0)
    {
        return -1;
    }
    if (json_is_true(json_object_get(tc, "attention_bias"))) {
        return cfg_error(x, "%sattention_bias true is not supported",
                         x->prefix);
    }
    if (json_is_true(json_object_get(tc, "use_sliding_window"))) {
        return cfg_error(x, "%suse_sliding_window true is not supported",
                         x->prefix);
    }
    if (get_int(x, tc, "vocab_size", 1, MAX_VOCAB, &c->vocab_size) != 0
        || get_int(x, tc, "hidden_size", 1, MAX_DIM, &c->hidden_size) != 0
        || get_int(x, tc, "intermediate_size", 1, MAX_DIM,
                   &c->intermediate_size) != 0
        || get_int(x, tc, "num_hidden_layers", 1, CLEF_MAX_LAYERS,
                   &c->num_hidden_layers) != 0
        || get_int(x, tc, "num_attention_heads", 1, 4096,
                   &c->num_attention_heads) != 0
        || get_int(x, tc, "num_key_value_heads", 1, 4096,
                   &c->num_key_value_heads) != 0)
    {
        return -1;
    }
    /* the attention's own default when the key is absent */
    c->head_dim = c->hidden_size / c->num_attention_heads;
    if ((json_object_get(tc, "head_dim") != NULL
         && get_int(x, tc, "head_dim", 1, 65536, &c->head_dim) != 0)
        || parse_omni_moe(x, tc, c) != 0)
    {
        return -1;
    }
    if (c->head_dim < 1 || c->num_attention_heads % c->num_key_value_heads != 0)
    {
        return cfg_error(x, "num_attention_heads %d is not a multiple of "
                         "num_key_value_heads %d (head_dim %d)",
                         c->num_attention_heads, c->num_key_value_heads,
                         c->head_dim);
    }
    os[0] = tc;
    prefixes[0] = x->prefix;
    if (get_num(x, os, prefixes, 1, "rms_norm_eps", 1e-6, &c->rms_norm_eps) != 0)
    {
        return -1;
    }
    if (!(c->rms_norm_eps > 0.0 && c->rms_norm_eps < 1.0)) {
        return cfg_error(x, "rms_norm_eps is %g, outside (0, 1)", c->rms_norm_eps);
    }
    if (get_bool(x, tc, x->prefix, "tie_word_embeddings", 0,
                 &c->tie_word_embeddings) != 0
        || parse_rope(x, tc, &omni_rope, c) != 0)
    {
        return -1;
    }
    if (tied_top >= 0) {
        c->tie_word_embeddings = tied_top;
    }
    for (l = 0; l < c->num_hidden_layers; l++) {
        c->layer_full[l] = 1;
    }
    c->attn_output_gate = 0;
    c->norm_plus_one = 0;
    clef_text_config_describe_layers(c);
    return 0;
}

clef_family
clef_config_family(const json_t *root)
{
    const json_t  *mt = json_object_get(root, "model_type");

    return json_is_string(mt)
           && strcmp(json_string_value(mt), "qwen3_omni_moe") == 0
           ? CLEF_FAMILY_OMNI : CLEF_FAMILY_CLEF;
}

int
clef_text_config_parse(const json_t *root, const char *file, clef_text_config *c,
    clef_error *err)
{
    const json_t  *tc, *mt;
    const json_t  *os[2];
    const char    *prefixes[2];
    cfg_ctx        x = { file, "", err };
    int            tied_top = -1;

    memset(c, 0, sizeof(*c));
    if (!json_is_object(root)) {
        return cfg_error(&x, "not a JSON object");
    }
    if (clef_config_family(root) == CLEF_FAMILY_OMNI) {
        return parse_omni(&x, root, c);
    }

    tc = json_object_get(root, "text_config");
    if (tc != NULL) {
        if (!json_is_object(tc)) {
            return cfg_error(&x, "text_config is not an object");
        }
        x.prefix = "text_config.";
        mt = json_object_get(root, "model_type");
        if (mt != NULL && (!json_is_string(mt)
                           || strcmp(json_string_value(mt), "qwen3_5") != 0))
        {
            return cfg_error(&x, "model_type is %s%s%s: neither Clef "
                             "(\"qwen3_5\") nor Clef Omni "
                             "(\"qwen3_omni_moe\")",
                             json_is_string(mt) ? "\"" : "",
                             json_is_string(mt) ? json_string_value(mt)
                                                : "not a string",
                             json_is_string(mt) ? "\"" : "");
        }
        mt = json_object_get(root, "tie_word_embeddings");
        if (mt != NULL && get_bool(&x, root, "", "tie_word_embeddings", 0,
                                   &tied_top) != 0)
        {
            return -1;
        }
    } else {
        tc = root;
    }
    if (want_string(&x, tc, x.prefix, "model_type", "qwen3_5_text") != 0
        || want_string(&x, tc, x.prefix, "hidden_act", "silu") != 0)
    {
        return -1;
    }
    if (json_is_true(json_object_get(tc, "attention_bias"))) {
        return cfg_error(&x, "%sattention_bias true is not supported", x.prefix);
    }

    if (get_int(&x, tc, "vocab_size", 1, MAX_VOCAB, &c->vocab_size) != 0
        || get_int(&x, tc, "hidden_size", 1, MAX_DIM, &c->hidden_size) != 0
        || get_int(&x, tc, "intermediate_size", 1, MAX_DIM, &c->intermediate_size) != 0
        || get_int(&x, tc, "num_hidden_layers", 1, CLEF_MAX_LAYERS,
                   &c->num_hidden_layers) != 0
        || get_int(&x, tc, "num_attention_heads", 1, 4096, &c->num_attention_heads) != 0
        || get_int(&x, tc, "num_key_value_heads", 1, 4096, &c->num_key_value_heads) != 0
        || get_int(&x, tc, "head_dim", 1, 65536, &c->head_dim) != 0
        || get_int(&x, tc, "linear_num_key_heads", 1, 4096,
                   &c->linear_num_key_heads) != 0
        || get_int(&x, tc, "linear_num_value_heads", 1, 4096,
                   &c->linear_num_value_heads) != 0
        || get_int(&x, tc, "linear_key_head_dim", 1, 65536,
                   &c->linear_key_head_dim) != 0
        || get_int(&x, tc, "linear_value_head_dim", 1, 65536,
                   &c->linear_value_head_dim) != 0
        || get_int(&x, tc, "linear_conv_kernel_dim", 1, 64,
                   &c->linear_conv_kernel_dim) != 0)
    {
        return -1;
    }
    if (c->num_attention_heads % c->num_key_value_heads != 0) {
        return cfg_error(&x, "num_attention_heads %d is not a multiple of "
                         "num_key_value_heads %d",
                         c->num_attention_heads, c->num_key_value_heads);
    }
    if (c->linear_num_value_heads % c->linear_num_key_heads != 0) {
        return cfg_error(&x, "linear_num_value_heads %d is not a multiple of "
                         "linear_num_key_heads %d",
                         c->linear_num_value_heads, c->linear_num_key_heads);
    }

    os[0] = tc;
    prefixes[0] = x.prefix;
    if (get_num(&x, os, prefixes, 1, "rms_norm_eps", 1e-6, &c->rms_norm_eps) != 0) {
        return -1;
    }
    if (!(c->rms_norm_eps > 0.0 && c->rms_norm_eps < 1.0)) {
        return cfg_error(&x, "rms_norm_eps is %g, outside (0, 1)", c->rms_norm_eps);
    }
    if (get_bool(&x, tc, x.prefix, "attn_output_gate", 1, &c->attn_output_gate) != 0
        || get_bool(&x, tc, x.prefix, "tie_word_embeddings", 0,
                    &c->tie_word_embeddings) != 0)
    {
        return -1;
    }
    /* Qwen3_5ForConditionalGeneration ties by its own (top-level) flag. */
    if (tied_top >= 0) {
        c->tie_word_embeddings = tied_top;
    }

    if (parse_layer_types(&x, tc, c) != 0
        || parse_rope(&x, tc, &qwen35_rope, c) != 0)
    {
        return -1;
    }
    c->norm_plus_one = 1;
    clef_text_config_describe_layers(c);
    return 0;
}

int
clef_head_config_parse(const json_t *root, const char *file, clef_head_config *h,
    clef_error *err)
{
    static const char  *known[] = {
        "hidden_size", "width", "routing_layers", "layers", "heads", "feedforward",
        "dropout"
    };
    cfg_ctx        x = { file, "", err };
    const char    *key;
    const json_t  *v;
    size_t         i;

    memset(h, 0, sizeof(*h));
    if (!json_is_object(root)) {
        return cfg_error(&x, "not a JSON object");
    }
    json_object_foreach((json_t *) root, key, v) {
        for (i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
            if (strcmp(key, known[i]) == 0) {
                break;
            }
        }
        if (i == sizeof(known) / sizeof(known[0])) {
            return cfg_error(&x, "unknown key '%s'", key);
        }
    }
    v = json_object_get(root, "dropout");
    if (v != NULL && !(json_is_number(v) && json_number_value(v) >= 0.0
                       && json_number_value(v) < 1.0))
    {
        return cfg_error(&x, "dropout is not a number in [0, 1)");
    }
    if (get_int(&x, root, "hidden_size", 1, MAX_DIM, &h->hidden_size) != 0
        || get_int(&x, root, "width", 1, MAX_DIM, &h->width) != 0
        || get_int(&x, root, "routing_layers", 0, 1024, &h->routing_layers) != 0
        || get_int(&x, root, "layers", 0, 1024, &h->layers) != 0
        || get_int(&x, root, "heads", 1, 4096, &h->heads) != 0
        || get_int(&x, root, "feedforward", 1, MAX_DIM, &h->feedforward) != 0)
    {
        return -1;
    }
    if (h->width % h->heads != 0) {
        return cfg_error(&x, "width %d is not a multiple of heads %d",
                         h->width, h->heads);
    }
    return 0;
}

void
clef_shape_format(char *buf, size_t size, int ndim, const int64_t *shape)
{
    size_t  n = 0;
    int     i;

    n += (size_t) snprintf(buf, size, "[");
    for (i = 0; i < ndim && n < size; i++) {
        n += (size_t) snprintf(buf + n, size - n, "%s%lld", i ? ", " : "",
                               (long long) shape[i]);
    }
    if (n < size) {
        snprintf(buf + n, size - n, "]");
    }
}
