/*
 * Opening the CPU head: every tensor of joint_head.safetensors checked
 * against joint_head_config.json (spec/clef-encoder-and-head.md §7.1) and
 * converted to f32 once, the matrices packed for the GEMM (gemm.h).
 */
#include "cpu/model/head_source.h"
#include "cpu/model/head_weights.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    clef_cpu_head        *h;
    clef_head_tensor_fn   get;
    const void           *ctx;
    clef_error           *err;
    int                   failed;
} loader;

static void
shape_text(char *buf, size_t size, int ndim, const int64_t *shape)
{
    size_t  n;
    int     i;

    n = (size_t) snprintf(buf, size, "[");
    for (i = 0; i < ndim && n < size; i++) {
        n += (size_t) snprintf(buf + n, size - n, "%s%lld", i ? "," : "",
                               (long long) shape[i]);
    }
    if (n < size) {
        snprintf(buf + n, size - n, "]");
    }
}

/* The tensor `name`, checked to be a float tensor of the given shape. */
static const clef_tensor *
tensor(loader *ld, const char *name, int ndim, int64_t d0, int64_t d1)
{
    const clef_tensor  *t;
    int64_t             shape[2] = { d0, d1 };
    char                want[64], got[160];

    if (ld->failed) {
        return NULL;
    }
    t = ld->get(ld->ctx, name);
    if (t == NULL) {
        ld->failed = 1;
        clef_error_fail(ld->err, CLEF_E_MODEL,
                        "joint_head.safetensors: tensor %s is missing", name);
        return NULL;
    }
    if (!clef_tensor_has_shape(t, ndim, shape)) {
        ld->failed = 1;
        shape_text(want, sizeof(want), ndim, shape);
        shape_text(got, sizeof(got), t->ndim, t->shape);
        clef_error_fail(ld->err, CLEF_E_MODEL,
                        "joint_head.safetensors: tensor %s is %s, want %s",
                        name, got, want);
        return NULL;
    }
    if (t->dtype != CLEF_DTYPE_F32 && t->dtype != CLEF_DTYPE_BF16
        && t->dtype != CLEF_DTYPE_F16)
    {
        ld->failed = 1;
        clef_error_fail(ld->err, CLEF_E_MODEL,
                        "joint_head.safetensors: tensor %s is %s, not a float",
                        name, clef_dtype_name(t->dtype));
        return NULL;
    }
    return t;
}

/* Takes f (malloc'd) into the list of blocks the head frees at close; f
 * NULL, an allocation that failed, fails the load as out of memory. */
static int
keep(loader *ld, float *f, const char *name)
{
    float  **nb;

    if (f != NULL && ld->h->n_blobs == ld->h->cap_blobs) {
        nb = realloc(ld->h->blobs,
                     (size_t) (ld->h->cap_blobs * 2 + 64) * sizeof(float *));
        if (nb != NULL) {
            ld->h->blobs = nb;
            ld->h->cap_blobs = ld->h->cap_blobs * 2 + 64;
        }
    }
    if (f == NULL || ld->h->n_blobs == ld->h->cap_blobs) {
        free(f);
        ld->failed = 1;
        clef_error_fail(ld->err, CLEF_E_NO_MEMORY,
                        "out of memory loading the head (%s)", name);
        return -1;
    }
    ld->h->blobs[ld->h->n_blobs++] = f;
    return 0;
}

static const float *
weight(loader *ld, const char *name, int ndim, int64_t d0, int64_t d1)
{
    const clef_tensor  *t = tensor(ld, name, ndim, d0, d1);
    float              *f;

    if (t == NULL) {
        return NULL;
    }
    f = malloc((size_t) (t->numel > 0 ? t->numel : 1) * sizeof(float));
    if (keep(ld, f, name) != 0) {
        return NULL;
    }
    clef_tensor_to_f32(t, f);
    return f;
}

/* Rows [row0, row0 + out) of the [rows][in] matrix `name`, packed for the
 * GEMM; the f32 rows are dropped once packed. */
static clef_cpu_wpack
packed(loader *ld, const char *name, int64_t rows, int64_t in, int64_t row0,
    int64_t out)
{
    const clef_tensor  *t = tensor(ld, name, 2, rows, in);
    clef_cpu_wpack      p;
    float              *f;

    memset(&p, 0, sizeof(p));
    if (t == NULL) {
        return p;
    }
    f = malloc((size_t) (out * in > 0 ? out * in : 1) * sizeof(float));
    if (f == NULL || clef_cpu_wpack_alloc(&p, out, in) != 0) {
        free(f);
        keep(ld, NULL, name);
        return p;
    }
    clef_tensor_rows_to_f32(t, row0, out, f);
    clef_cpu_wpack_rows(&p, 0, out, f, in);
    free(f);
    if (keep(ld, p.data, name) != 0) {
        p.data = NULL;
    }
    return p;
}

static clef_head_ln
layer_norm(loader *ld, const char *prefix, int n)
{
    char          name[160];
    clef_head_ln  ln;

    ln.n = n;
    snprintf(name, sizeof(name), "%s.weight", prefix);
    ln.weight = weight(ld, name, 1, n, 0);
    snprintf(name, sizeof(name), "%s.bias", prefix);
    ln.bias = weight(ld, name, 1, n, 0);
    return ln;
}

static clef_head_linear
linear(loader *ld, const char *prefix, int in, int out, int bias)
{
    char              name[160];
    clef_head_linear  l;

    memset(&l, 0, sizeof(l));
    l.in = in;
    l.out = out;
    snprintf(name, sizeof(name), "%s.weight", prefix);
    l.packed = packed(ld, name, out, in, 0, out);
    if (bias) {
        snprintf(name, sizeof(name), "%s.bias", prefix);
        l.bias = weight(ld, name, 1, out, 0);
    }
    return l;
}

static clef_head_attn
attention(loader *ld, const char *prefix, int width, int heads)
{
    char            name[160];
    clef_head_attn  a;
    const float    *bias;

    memset(&a, 0, sizeof(a));
    a.width = width;
    a.heads = heads;
    a.q.in = width;
    a.q.out = width;
    a.kv.in = width;
    a.kv.out = 2 * width;
    snprintf(name, sizeof(name), "%s.in_proj_weight", prefix);
    a.q.packed = packed(ld, name, 3 * (int64_t) width, width, 0, width);
    a.kv.packed = packed(ld, name, 3 * (int64_t) width, width, width, 2 * width);
    snprintf(name, sizeof(name), "%s.in_proj_bias", prefix);
    bias = weight(ld, name, 1, 3 * (int64_t) width, 0);
    a.q.bias = bias;
    a.kv.bias = bias != NULL ? bias + width : NULL;
    snprintf(name, sizeof(name), "%s.out_proj", prefix);
    a.out = linear(ld, name, width, width, 1);
    return a;
}

static float
scalar(loader *ld, const char *name)
{
    const float  *v = weight(ld, name, 0, 0, 0);

    return v ? v[0] : 0.0f;
}

int
clef_cpu_head_open_tensors(const clef_head_config *cfg,
    clef_head_tensor_fn get, const void *ctx, const clef_tensor *lm_head,
    clef_cpu_head **out, clef_error *err)
{
    int             i, H = cfg->hidden_size, W = cfg->width, F = cfg->feedforward;
    char            p[96];
    float           ln100 = (float) log(100.0);
    float           ps, js, rg;
    clef_cpu_head  *h;
    loader          ld;

    *out = NULL;
    if (H <= 0 || W <= 0 || F <= 0 || cfg->heads <= 0 || W % cfg->heads != 0
        || cfg->routing_layers < 0 || cfg->layers < 0)
    {
        return clef_error_fail(err, CLEF_E_MODEL,
            "joint_head_config.json: width %d is not a "
            "multiple of heads %d, or a size is not positive",
            W, cfg->heads);
    }
    if (lm_head == NULL || lm_head->ndim != 2 || lm_head->shape[1] != H
        || lm_head->shape[0] <= 0)
    {
        return clef_error_fail(err, CLEF_E_MODEL,
            "lm_head.weight is missing or not [vocab, %d]", H);
    }
    if (lm_head->dtype != CLEF_DTYPE_F32 && lm_head->dtype != CLEF_DTYPE_BF16
        && lm_head->dtype != CLEF_DTYPE_F16)
    {
        return clef_error_fail(err, CLEF_E_MODEL,
                               "lm_head.weight is %s, not a float",
                               clef_dtype_name(lm_head->dtype));
    }

    h = calloc(1, sizeof(*h));
    if (h != NULL) {
        h->routing = calloc((size_t) cfg->routing_layers + 1, sizeof(routing_layer));
        h->decoder = calloc((size_t) cfg->layers + 1, sizeof(decoder_layer));
    }
    if (h == NULL || h->routing == NULL || h->decoder == NULL) {
        clef_cpu_head_close(h);
        return clef_error_fail(err, CLEF_E_NO_MEMORY,
                               "out of memory opening the head");
    }
    h->cfg = *cfg;
    h->lm_head = lm_head;

    ld.h = h;
    ld.get = get;
    ld.ctx = ctx;
    ld.err = err;
    ld.failed = 0;

    h->hidden_norm = layer_norm(&ld, "hidden_norm", H);
    h->memory_projection = linear(&ld, "memory_projection", H, W, 0);
    h->question_projection = linear(&ld, "question_projection", H, W, 0);
    h->option_question_projection =
        linear(&ld, "option_question_projection", H, W, 0);
    h->global_projection = linear(&ld, "global_projection", H, W, 0);
    h->option_context_projection =
        linear(&ld, "option_context_projection", H, W, 0);
    h->option_lexical_projection =
        linear(&ld, "option_lexical_projection", H, W, 0);
    h->type_embedding = weight(&ld, "type_embedding.weight", 2, 3, W);

    for (i = 0; i < cfg->routing_layers; i++) {
        routing_layer  *r = &h->routing[i];

        snprintf(p, sizeof(p), "evidence_layers.%d.query_norm", i);
        r->query_norm = layer_norm(&ld, p, W);
        snprintf(p, sizeof(p), "evidence_layers.%d.memory_norm", i);
        r->memory_norm = layer_norm(&ld, p, W);
        snprintf(p, sizeof(p), "evidence_layers.%d.attention", i);
        r->attention = attention(&ld, p, W, cfg->heads);
        snprintf(p, sizeof(p), "evidence_layers.%d.feedforward_norm", i);
        r->feedforward_norm = layer_norm(&ld, p, W);
        snprintf(p, sizeof(p), "evidence_layers.%d.feedforward.0", i);
        r->up = linear(&ld, p, W, F, 1);
        snprintf(p, sizeof(p), "evidence_layers.%d.feedforward.3", i);
        r->down = linear(&ld, p, F, W, 1);
    }

    h->option_summary_norm = layer_norm(&ld, "option_summary_norm", W);

    for (i = 0; i < cfg->layers; i++) {
        decoder_layer  *d = &h->decoder[i];

        snprintf(p, sizeof(p), "layers.%d.norm1", i);
        d->norm1 = layer_norm(&ld, p, W);
        snprintf(p, sizeof(p), "layers.%d.self_attn", i);
        d->self_attn = attention(&ld, p, W, cfg->heads);
        snprintf(p, sizeof(p), "layers.%d.norm2", i);
        d->norm2 = layer_norm(&ld, p, W);
        snprintf(p, sizeof(p), "layers.%d.multihead_attn", i);
        d->cross_attn = attention(&ld, p, W, cfg->heads);
        snprintf(p, sizeof(p), "layers.%d.norm3", i);
        d->norm3 = layer_norm(&ld, p, W);
        snprintf(p, sizeof(p), "layers.%d.linear1", i);
        d->up = linear(&ld, p, W, F, 1);
        snprintf(p, sizeof(p), "layers.%d.linear2", i);
        d->down = linear(&ld, p, F, W, 1);
    }

    h->field_norm = layer_norm(&ld, "field_norm", W);
    h->option_norm = layer_norm(&ld, "option_norm", W);
    h->scorer_up = linear(&ld, "residual_scorer.0", 4 * W, W, 1);
    h->scorer_down = linear(&ld, "residual_scorer.3", W, 1, 1);

    ps = scalar(&ld, "prior_logit_scale");
    js = scalar(&ld, "joint_logit_scale");
    rg = scalar(&ld, "residual_gate");

    if (ld.failed) {
        clef_cpu_head_close(h);
        return -1;
    }

    /* as torch computes them in fp32: clamp(max=ln 100).exp(), sigmoid */
    h->prior_scale = expf(ps < ln100 ? ps : ln100);
    h->joint_scale = expf(js < ln100 ? js : ln100);
    h->gate = 1.0f / (1.0f + expf(-rg));

    *out = h;
    return 0;
}

void
clef_cpu_head_close(clef_cpu_head *h)
{
    int  i;

    if (h == NULL) {
        return;
    }
    for (i = 0; i < h->n_blobs; i++) {
        free(h->blobs[i]);
    }
    free(h->blobs);
    free(h->routing);
    free(h->decoder);
    free(h);
}

