/*
 * Opening the CPU head: every tensor of joint_head.safetensors checked
 * against joint_head_config.json (docs/spec/encoder-and-head.md §7.1) and
 * converted to f32 once, the matrices packed for the GEMM (gemm.h).  The
 * tensors are named by their roles (model/roles.h), which also give the
 * shapes they are checked against.
 */
#include "cpu/model/head_source.h"
#include "cpu/model/head_weights.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/roles.h"

typedef struct {
    clef_cpu_head        *h;
    clef_head_tensor_fn   get;
    const void           *ctx;
    clef_dims             dims;
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

/* The tensor of role r (of head layer i), checked to be a float tensor of
 * its role's shape; its name into name[160]. */
static const clef_tensor *
tensor(loader *ld, clef_role r, int i, char *name)
{
    const clef_tensor  *t;
    int64_t             shape[5];
    int                 ndim;
    char                want[64], got[160];

    if (ld->failed) {
        return NULL;
    }
    clef_role_name(NULL, r, i, name, 160);
    ndim = clef_role_shape(r, &ld->dims, shape);
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
    if (!clef_dtype_is_float(t->dtype)) {
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
weight(loader *ld, clef_role r, int i)
{
    char                name[160];
    const clef_tensor  *t = tensor(ld, r, i, name);
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

/* Rows [row0, row0 + out) of role r's [rows][in] matrix, packed for the
 * GEMM; the f32 rows are dropped once packed. */
static clef_cpu_wpack
packed(loader *ld, clef_role r, int i, int64_t in, int64_t row0, int64_t out)
{
    char                name[160];
    const clef_tensor  *t = tensor(ld, r, i, name);
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
layer_norm(loader *ld, clef_role w, clef_role b, int i, int n)
{
    clef_head_ln  ln;

    ln.n = n;
    ln.weight = weight(ld, w, i);
    ln.bias = weight(ld, b, i);
    return ln;
}

/* A linear layer of roles w and b (CLEF_ROLE_COUNT: no bias). */
static clef_head_linear
linear(loader *ld, clef_role w, clef_role b, int i, int in, int out)
{
    clef_head_linear  l;

    memset(&l, 0, sizeof(l));
    l.in = in;
    l.out = out;
    l.packed = packed(ld, w, i, in, 0, out);
    if (b != CLEF_ROLE_COUNT) {
        l.bias = weight(ld, b, i);
    }
    return l;
}

/* An nn.MultiheadAttention: r[] its in_proj weight and bias, out_proj
 * weight and bias roles. */
static clef_head_attn
attention(loader *ld, const clef_role *r, int i, int width, int heads)
{
    clef_head_attn  a;
    const float    *bias;

    memset(&a, 0, sizeof(a));
    a.width = width;
    a.heads = heads;
    a.q.in = width;
    a.q.out = width;
    a.kv.in = width;
    a.kv.out = 2 * width;
    a.q.packed = packed(ld, r[0], i, width, 0, width);
    a.kv.packed = packed(ld, r[0], i, width, width, 2 * width);
    bias = weight(ld, r[1], i);
    a.q.bias = bias;
    a.kv.bias = bias != NULL ? bias + width : NULL;
    a.out = linear(ld, r[2], r[3], i, width, width);
    return a;
}

static float
scalar(loader *ld, clef_role r)
{
    const float  *v = weight(ld, r, 0);

    return v ? v[0] : 0.0f;
}

int
clef_cpu_head_open_tensors(const clef_head_config *cfg,
    clef_head_tensor_fn get, const void *ctx, const clef_tensor *lm_head,
    clef_cpu_head **out, clef_error *err)
{
    int             i, H = cfg->hidden_size, W = cfg->width, F = cfg->feedforward;
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
    if (!clef_dtype_is_float(lm_head->dtype)) {
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

    memset(&ld, 0, sizeof(ld));
    ld.h = h;
    ld.get = get;
    ld.ctx = ctx;
    ld.err = err;
    clef_dims_head(&ld.dims, cfg);

    h->hidden_norm = layer_norm(&ld, CLEF_ROLE_H_HIDDEN_NORM,
                                CLEF_ROLE_H_HIDDEN_NORM_BIAS, 0, H);
    h->memory_projection = linear(&ld, CLEF_ROLE_H_MEMORY_PROJ,
                                  CLEF_ROLE_COUNT, 0, H, W);
    h->question_projection = linear(&ld, CLEF_ROLE_H_QUESTION_PROJ,
                                    CLEF_ROLE_COUNT, 0, H, W);
    h->option_question_projection =
        linear(&ld, CLEF_ROLE_H_OPTION_QUESTION_PROJ, CLEF_ROLE_COUNT, 0, H, W);
    h->global_projection = linear(&ld, CLEF_ROLE_H_GLOBAL_PROJ,
                                  CLEF_ROLE_COUNT, 0, H, W);
    h->option_context_projection =
        linear(&ld, CLEF_ROLE_H_OPTION_CONTEXT_PROJ, CLEF_ROLE_COUNT, 0, H, W);
    h->option_lexical_projection =
        linear(&ld, CLEF_ROLE_H_OPTION_LEXICAL_PROJ, CLEF_ROLE_COUNT, 0, H, W);
    h->type_embedding = weight(&ld, CLEF_ROLE_H_TYPE_EMBEDDING, 0);

    for (i = 0; i < cfg->routing_layers; i++) {
        routing_layer  *r = &h->routing[i];

        r->query_norm = layer_norm(&ld, CLEF_ROLE_HR_QUERY_NORM,
                                   CLEF_ROLE_HR_QUERY_NORM_BIAS, i, W);
        r->memory_norm = layer_norm(&ld, CLEF_ROLE_HR_MEMORY_NORM,
                                    CLEF_ROLE_HR_MEMORY_NORM_BIAS, i, W);
        r->attention = attention(&ld, clef_roles_route_attention, i, W,
                                 cfg->heads);
        r->feedforward_norm = layer_norm(&ld, CLEF_ROLE_HR_FF_NORM,
                                         CLEF_ROLE_HR_FF_NORM_BIAS, i, W);
        r->up = linear(&ld, CLEF_ROLE_HR_FF0, CLEF_ROLE_HR_FF0_BIAS, i, W, F);
        r->down = linear(&ld, CLEF_ROLE_HR_FF3, CLEF_ROLE_HR_FF3_BIAS, i, F, W);
    }

    h->option_summary_norm = layer_norm(&ld, CLEF_ROLE_H_SUMMARY_NORM,
                                        CLEF_ROLE_H_SUMMARY_NORM_BIAS, 0, W);

    for (i = 0; i < cfg->layers; i++) {
        decoder_layer  *d = &h->decoder[i];

        d->norm1 = layer_norm(&ld, CLEF_ROLE_HD_NORM1, CLEF_ROLE_HD_NORM1_BIAS,
                              i, W);
        d->self_attn = attention(&ld, clef_roles_dec_self_attention, i, W,
                                 cfg->heads);
        d->norm2 = layer_norm(&ld, CLEF_ROLE_HD_NORM2, CLEF_ROLE_HD_NORM2_BIAS,
                              i, W);
        d->cross_attn = attention(&ld, clef_roles_dec_cross_attention, i, W,
                                  cfg->heads);
        d->norm3 = layer_norm(&ld, CLEF_ROLE_HD_NORM3, CLEF_ROLE_HD_NORM3_BIAS,
                              i, W);
        d->up = linear(&ld, CLEF_ROLE_HD_LINEAR1, CLEF_ROLE_HD_LINEAR1_BIAS, i,
                       W, F);
        d->down = linear(&ld, CLEF_ROLE_HD_LINEAR2, CLEF_ROLE_HD_LINEAR2_BIAS,
                         i, F, W);
    }

    h->field_norm = layer_norm(&ld, CLEF_ROLE_H_FIELD_NORM,
                               CLEF_ROLE_H_FIELD_NORM_BIAS, 0, W);
    h->option_norm = layer_norm(&ld, CLEF_ROLE_H_OPTION_NORM,
                                CLEF_ROLE_H_OPTION_NORM_BIAS, 0, W);
    h->scorer_up = linear(&ld, CLEF_ROLE_H_SCORER, CLEF_ROLE_H_SCORER_BIAS, 0,
                          4 * W, W);
    h->scorer_down = linear(&ld, CLEF_ROLE_H_SCORER_OUT,
                            CLEF_ROLE_H_SCORER_OUT_BIAS, 0, W, 1);

    ps = scalar(&ld, CLEF_ROLE_H_PRIOR_SCALE);
    js = scalar(&ld, CLEF_ROLE_H_JOINT_SCALE);
    rg = scalar(&ld, CLEF_ROLE_H_RESIDUAL_GATE);

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

