/*
 * Uploads the weights once at open, each tensor by its role (model/roles.h:
 * the names and shapes are the role table's), a decoder layer part by part
 * (its norms, its MLP, its mixer, each with a loader of its own): matrices
 * in bf16 as stored (converted only when a checkpoint stores another float
 * type), A_log/dt_bias/the GDN norm in fp32, the joint head in fp32.
 * Projections that read the same input are concatenated by rows so that
 * each becomes one GEMM:
 *   GDN:        in_proj_qkv | in_proj_z | in_proj_b | in_proj_a
 *   attention:  q_proj | k_proj | v_proj
 *   MLP:        gate_proj | up_proj
 * with zero rows up to a multiple of 8 (16-byte aligned output rows).
 *
 * A tensor-parallel rank (tp > 1) uploads only its shard of each layer
 * (shard_slice.h: rows of the column-parallel projections, conv channels,
 * A_log and dt_bias of its heads; columns of the row-parallel ones),
 * stacked the same way, so that its kernels see a model with fewer heads;
 * norms and the embedding are replicated, and the head (with lm_head and
 * the final norm) lives on rank 0 alone.  At tp = 1 every range is the
 * whole tensor and the bytes uploaded are those of an unsharded load.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_backend.h"
#include "model/roles.h"
#include "shard_slice.h"

#define WEIGHTS  "the weights"      /* their allocations' owner, in errors */

void
cuda_weights_free(clef_backend *b)
{
    cuda_allocs_free(&b->allocs);
    free(b->head.route);
    free(b->head.dec);
    b->head.route = NULL;
    b->head.dec = NULL;
}

/* The tensor, checked to hold numel floats. */
static const clef_tensor *
need(const clef_tensor *t, const char *name, int64_t numel, clef_error *err)
{
    if (t == NULL) {
        clef_error_fail(err, CLEF_E_MODEL, "cuda backend: tensor %s is missing",
            name);
        return NULL;
    }
    if (t->numel != numel || !clef_dtype_is_float(t->dtype)) {
        clef_error_fail(err, CLEF_E_MODEL,
            "cuda backend: tensor %s has %lld %s elements, expected %lld floats",
            name, (long long) t->numel, clef_dtype_name(t->dtype), (long long) numel);
        return NULL;
    }
    return t;
}

/* The sizes the role table's shapes are written in. */
static void
model_dims(const clef_backend *b, clef_dims *d)
{
    memset(d, 0, sizeof(*d));
    clef_dims_text(d, clef_model_text_config(b->model));
    clef_dims_head(d, clef_model_head_config(b->model));
}

/* The tensor of role r (of layer or head layer l), checked to hold the
 * model's number of floats. */
static const clef_tensor *
role_t(const clef_backend *b, clef_role r, int l, clef_error *err)
{
    clef_dims  d;
    char       name[160];

    model_dims(b, &d);
    clef_role_name(clef_model_text_config(b->model), r, l, name, sizeof(name));
    return need(clef_model_role(b->model, r, l), name, clef_role_numel(r, &d),
                err);
}

static int
copy_up(void *dst, const void *src, size_t bytes, clef_error *err)
{
    cudaError_t  e = cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice);

    if (e != cudaSuccess) {
        return clef_error_fail(err, CLEF_E_INTERNAL, "weight upload: %s",
            cudaGetErrorString(e));
    }
    return 0;
}

/* Rows converted to bf16 per upload: bounds the host memory of a tensor
 * stored in another type (a GGUF block type, whose blocks are dequantized
 * here: the bf16 GEMMs read the model as a release's). */
#define PUT_CHUNK  (1 << 22)

/* t as bf16 into device memory at dst: its bytes when they are a bf16
 * tensor's as the release lays it out, else converted a slice of rows at
 * a time (a view with runs or spans, a GGUF's value heads, is read through
 * model/tensor.h). */
static int
put_bf16(void *dst, const clef_tensor *t, clef_error *err)
{
    uint16_t  *h;
    float     *f;
    int64_t    rows, cols, row, n, i, step;
    int        rc = 0;

    if (t->dtype == CLEF_DTYPE_BF16 && clef_tensor_is_plain(t)) {
        return copy_up(dst, t->data, (size_t) t->numel * 2, err);
    }
    rows = t->ndim >= 1 ? t->shape[0] : 1;
    cols = t->ndim >= 1 ? t->numel / (rows ? rows : 1) : 1;
    step = PUT_CHUNK / (cols ? cols : 1);
    step = step > 0 ? step : 1;
    step = step < rows ? step : rows;
    f = malloc((size_t) (step * cols + 1) * sizeof(float));
    h = malloc((size_t) (step * cols + 1) * sizeof(uint16_t));
    if (f == NULL || h == NULL) {
        free(f);
        free(h);
        return clef_error_fail(err, CLEF_E_NO_MEMORY, "out of memory");
    }
    for (row = 0; rc == 0 && row < rows; row += n) {
        n = rows - row < step ? rows - row : step;
        if (t->ndim == 0) {
            clef_tensor_to_f32(t, f);
        } else {
            clef_tensor_rows_to_f32(t, row, n, f);
        }
        for (i = 0; i < n * cols; i++) {
            h[i] = clef_f32_to_bf16(f[i]);
        }
        rc = copy_up((uint16_t *) dst + row * cols, h,
                     (size_t) (n * cols) * sizeof(uint16_t), err);
    }
    free(f);
    free(h);
    return rc;
}

static int
up_bf16(clef_backend *b, const clef_tensor *t, clef_bf16 **out, clef_error *err)
{
    void  *d;

    if (t == NULL
        || cuda_dev_alloc(&b->allocs, (size_t) t->numel * 2, WEIGHTS, &d, err)
           != 0)
    {
        return -1;
    }
    *out = d;
    return put_bf16(d, t, err);
}

/* Whether the ranges, one after another, are the whole of an extent (a
 * tp = 1 load: in_proj_qkv's q | k | v ranges are then contiguous). */
static int
whole(const cuda_range *r, int n, int64_t extent)
{
    int64_t  at = 0;
    int      i;

    for (i = 0; i < n; i++) {
        if (r[i].start != at) {
            return 0;
        }
        at += r[i].count;
    }
    return at == extent;
}

/* The ranges' rows (or, with cols_split, columns) of t [rows][cols] into
 * device memory at dst as bf16. */
static int
put_slice(void *dst, const clef_tensor *t, int64_t rows, int64_t cols,
    int cols_split, const cuda_range *r, int n, clef_error *err)
{
    int64_t    total = cuda_slice_total(r, n), i;
    size_t     out = (size_t) (cols_split ? rows * total : total * cols);
    uint16_t  *h;
    float     *f = NULL, *g = NULL;
    int        rc;

    if (whole(r, n, cols_split ? cols : rows)) {
        return put_bf16(dst, t, err);
    }
    h = malloc((out ? out : 1) * sizeof(uint16_t));
    if (h == NULL) {
        return clef_error_fail(err, CLEF_E_NO_MEMORY, "out of memory");
    }
    if (t->dtype == CLEF_DTYPE_BF16 && clef_tensor_is_plain(t)) {
        if (cols_split) {
            cuda_slice_cols(t->data, rows, cols, 2, r, n, h);
        } else {
            cuda_slice_rows(t->data, cols, 2, r, n, h);
        }
    } else {
        f = malloc((size_t) t->numel * sizeof(float));
        g = malloc((out ? out : 1) * sizeof(float));
        if (f == NULL || g == NULL) {
            free(f);
            free(g);
            free(h);
            return clef_error_fail(err, CLEF_E_NO_MEMORY, "out of memory");
        }
        clef_tensor_to_f32(t, f);
        if (cols_split) {
            cuda_slice_cols(f, rows, cols, sizeof(float), r, n, g);
        } else {
            cuda_slice_rows(f, cols, sizeof(float), r, n, g);
        }
        for (i = 0; i < (int64_t) out; i++) {
            h[i] = clef_f32_to_bf16(g[i]);
        }
        free(f);
        free(g);
    }
    rc = copy_up(dst, h, out * sizeof(uint16_t), err);
    free(h);
    return rc;
}

/* The rank's rows of each part (the ranges of kinds[i], rows of `cols`
 * columns), stacked into [rows][cols] (rows >= the sum; the rest is zero). */
static int
up_stack(clef_backend *b, const clef_tensor **parts, const cuda_slice_kind *kinds,
    int n, int rows, int cols, clef_bf16 **out, clef_error *err)
{
    const clef_text_config  *tc = clef_model_text_config(b->model);
    cuda_range               r[CUDA_SLICE_MAX];
    int64_t                  off[4], used;
    void                    *d;
    int                      i, nr;

    for (i = 0; i < n; i++) {
        if (parts[i] == NULL) {
            return -1;
        }
    }
    if (n > 4) {
        return clef_error_fail(err, CLEF_E_INTERNAL,
            "cuda backend: %d stacked parts", n);
    }
    used = cuda_slice_stack(tc, &b->shard, kinds, n, off);
    if (used > rows) {
        return clef_error_fail(err, CLEF_E_INTERNAL,
            "cuda backend: %lld stacked rows for %d allocated", (long long) used, rows);
    }
    if (cuda_dev_alloc(&b->allocs, (size_t) rows * cols * 2, WEIGHTS, &d, err) != 0) {
        return -1;
    }
    if (cudaMemset(d, 0, (size_t) rows * cols * 2) != cudaSuccess) {
        return clef_error_fail(err, CLEF_E_INTERNAL, "cudaMemset failed");
    }
    for (i = 0; i < n; i++) {
        nr = cuda_slice_ranges(tc, &b->shard, kinds[i], r);
        if (put_slice((char *) d + (size_t) off[i] * cols * 2, parts[i],
                      parts[i]->numel / cols, cols, 0, r, nr, err) != 0)
        {
            return -1;
        }
    }
    *out = d;
    return 0;
}

/* The rank's columns (kind's ranges) of t [rows][cols]. */
static int
up_cols(clef_backend *b, const clef_tensor *t, int64_t rows, int64_t cols,
    cuda_slice_kind kind, clef_bf16 **out, clef_error *err)
{
    cuda_range  r[CUDA_SLICE_MAX];
    void       *d;
    int         nr;

    if (t == NULL) {
        return -1;
    }
    nr = cuda_slice_ranges(clef_model_text_config(b->model), &b->shard, kind, r);
    if (cuda_dev_alloc(&b->allocs, (size_t) (rows * cuda_slice_total(r, nr)) * 2,
                       WEIGHTS, &d, err) != 0)
    {
        return -1;
    }
    *out = d;
    return put_slice(d, t, rows, cols, 1, r, nr, err);
}

static int
up_f32_host(clef_backend *b, const float *h, size_t n, float **out, clef_error *err)
{
    void  *d;

    if (cuda_dev_alloc(&b->allocs, n * sizeof(float), WEIGHTS, &d, err) != 0) {
        return -1;
    }
    *out = d;
    return copy_up(d, h, n * sizeof(float), err);
}

static int
up_f32(clef_backend *b, const clef_tensor *t, float **out, clef_error *err)
{
    float  *h;
    int     rc;

    if (t == NULL) {
        return -1;
    }
    h = malloc((size_t) (t->numel ? t->numel : 1) * sizeof(float));
    if (h == NULL) {
        return clef_error_fail(err, CLEF_E_NO_MEMORY, "out of memory");
    }
    clef_tensor_to_f32(t, h);
    rc = up_f32_host(b, h, (size_t) t->numel, out, err);
    free(h);
    return rc;
}

static int
scalar(const clef_tensor *t, float *v)
{
    if (t == NULL) {
        return -1;
    }
    clef_tensor_to_f32(t, v);
    return 0;
}

/* ---- a decoder layer, part by part ------------------------------------- */

static int
upload_norms(clef_backend *b, int l, cuda_layer *ly, clef_error *err)
{
    return up_bf16(b, role_t(b, CLEF_ROLE_INPUT_NORM, l, err), &ly->norm.input,
                   err)
           || up_bf16(b, role_t(b, CLEF_ROLE_POST_NORM, l, err),
                      &ly->norm.post, err) ? -1 : 0;
}

static int
upload_dense(clef_backend *b, int l, cuda_layer *ly, clef_error *err)
{
    static const cuda_slice_kind  mlp[2] = {
        CUDA_SLICE_MLP_IN, CUDA_SLICE_MLP_IN
    };
    const clef_text_config  *tc = clef_model_text_config(b->model);
    const clef_tensor       *p[2];

    p[0] = role_t(b, CLEF_ROLE_MLP_GATE, l, err);
    p[1] = p[0] ? role_t(b, CLEF_ROLE_MLP_UP, l, err) : NULL;
    return up_stack(b, p, mlp, 2, 2 * b->I, b->H, &ly->mlp.dense.gate_up, err)
           || up_cols(b, role_t(b, CLEF_ROLE_MLP_DOWN, l, err), b->H,
                      tc->intermediate_size, CUDA_SLICE_MLP_DOWN,
                      &ly->mlp.dense.down, err) ? -1 : 0;
}

/* Layer l's routed experts (cuda_moe): the router in fp32, then expert
 * by expert its gate_proj and up_proj rows and its down_proj, each
 * tensor converted and copied to its place (no host copy of a layer's
 * experts at once). */
static int
upload_moe(clef_backend *b, int l, cuda_layer *ly, clef_error *err)
{
    static const clef_role  part[3] = {
        CLEF_ROLE_MOE_GATE, CLEF_ROLE_MOE_UP, CLEF_ROLE_MOE_DOWN
    };
    static const char      *pname[3] = { "gate_proj", "up_proj", "down_proj" };
    cuda_moe               *m = &ly->mlp.moe;
    size_t                  each = (size_t) b->Im * (size_t) b->H;
    const clef_tensor      *t;
    clef_bf16              *dst;
    char                    name[96];
    void                   *d;
    int                     e, j;

    if (up_f32(b, role_t(b, CLEF_ROLE_MOE_ROUTER, l, err), &m->router, err)
        != 0
        || cuda_dev_alloc(&b->allocs, (size_t) b->E * 2 * each * 2, WEIGHTS, &d,
                          err) != 0)
    {
        return -1;
    }
    m->gate_up = d;
    if (cuda_dev_alloc(&b->allocs, (size_t) b->E * each * 2, WEIGHTS, &d, err)
        != 0)
    {
        return -1;
    }
    m->down = d;
    for (e = 0; e < b->E; e++) {
        for (j = 0; j < 3; j++) {
            snprintf(name, sizeof(name), "layer %d expert %d %s", l, e,
                     pname[j]);
            t = need(clef_model_expert_role(b->model, part[j], l, e), name,
                     (int64_t) each, err);
            dst = j < 2 ? m->gate_up + (size_t) (2 * e + j) * each
                        : m->down + (size_t) e * each;
            if (t == NULL || put_bf16(dst, t, err) != 0) {
                return -1;
            }
        }
    }
    return 0;
}

static int
upload_gdn(clef_backend *b, int l, cuda_layer *ly, clef_error *err)
{
    static const cuda_slice_kind  gdn[4] = {
        CUDA_SLICE_GDN_QKV, CUDA_SLICE_GDN_Z, CUDA_SLICE_GDN_HEAD,
        CUDA_SLICE_GDN_HEAD
    };
    const clef_text_config  *tc = clef_model_text_config(b->model);
    const clef_tensor       *p[4], *conv, *alog, *dtb;
    int64_t                  gHv = tc->linear_num_value_heads;
    int64_t                  gCconv = 2 * (int64_t) tc->linear_num_key_heads
                                      * b->dk + gHv * b->dv;
    cuda_range               ch[CUDA_SLICE_MAX], hv[CUDA_SLICE_MAX];
    uint16_t                *wt;
    float                   *tmp;
    void                    *d;
    int                      c, i, k, n_ch, rc;

    p[0] = role_t(b, CLEF_ROLE_GDN_QKV, l, err);
    p[1] = p[0] ? role_t(b, CLEF_ROLE_GDN_Z, l, err) : NULL;
    p[2] = p[1] ? role_t(b, CLEF_ROLE_GDN_B, l, err) : NULL;
    p[3] = p[2] ? role_t(b, CLEF_ROLE_GDN_A, l, err) : NULL;
    if (up_stack(b, p, gdn, 4, b->gdn_rows, b->H, &ly->gdn.in, err)
        || up_cols(b, role_t(b, CLEF_ROLE_GDN_OUT, l, err), b->H, gHv * b->dv,
                   CUDA_SLICE_GDN_OUT, &ly->gdn.out, err)
        || up_f32(b, role_t(b, CLEF_ROLE_GDN_NORM, l, err), &ly->gdn.norm, err))
    {
        return -1;
    }

    conv = role_t(b, CLEF_ROLE_GDN_CONV, l, err);
    alog = conv ? role_t(b, CLEF_ROLE_GDN_A_LOG, l, err) : NULL;
    dtb = alog ? role_t(b, CLEF_ROLE_GDN_DT_BIAS, l, err) : NULL;
    if (dtb == NULL) {
        return -1;
    }
    n_ch = cuda_slice_ranges(tc, &b->shard, CUDA_SLICE_GDN_QKV, ch);
    cuda_slice_ranges(tc, &b->shard, CUDA_SLICE_GDN_HEAD, hv);
    /* conv [C][1][K] -> [K][C] so a thread reads 8 channels of a tap;
     * the rank's channels are its q | k | v ranges, in that order */
    tmp = malloc((size_t) gCconv * b->Kc * sizeof(float));
    wt = malloc((size_t) b->Cconv * b->Kc * sizeof(uint16_t));
    if (tmp == NULL || wt == NULL) {
        free(tmp);
        free(wt);
        return clef_error_fail(err, CLEF_E_NO_MEMORY, "out of memory");
    }
    clef_tensor_to_f32(conv, tmp);
    c = 0;
    for (k = 0; k < n_ch; k++) {
        int64_t  g;

        for (g = ch[k].start; g < ch[k].start + ch[k].count; g++, c++) {
            for (i = 0; i < b->Kc; i++) {
                wt[(size_t) i * b->Cconv + c] =
                    clef_f32_to_bf16(tmp[(size_t) g * b->Kc + i]);
            }
        }
    }
    rc = c == b->Cconv ? 0
         : clef_error_fail(err, CLEF_E_INTERNAL,
             "cuda backend: %d conv channels for %d", c, b->Cconv);
    if (rc == 0) {
        rc = cuda_dev_alloc(&b->allocs, (size_t) b->Cconv * b->Kc * 2, WEIGHTS,
                            &d, err);
    }
    if (rc == 0) {
        ly->gdn.conv_wt = d;
        rc = copy_up(d, wt, (size_t) b->Cconv * b->Kc * 2, err);
    }
    /* A_log and dt_bias of the rank's value heads */
    if (rc == 0) {
        clef_tensor_to_f32(alog, tmp);
        for (i = 0; i < b->Hv; i++) {
            tmp[i] = -expf(tmp[hv[0].start + i]);
        }
        rc = up_f32_host(b, tmp, (size_t) b->Hv, &ly->gdn.neg_a, err);
    }
    if (rc == 0) {
        clef_tensor_to_f32(dtb, tmp);
        rc = up_f32_host(b, tmp + hv[0].start, (size_t) b->Hv, &ly->gdn.dt_bias,
                         err);
    }
    free(tmp);
    free(wt);
    return rc;
}

static int
upload_attn(clef_backend *b, int l, cuda_layer *ly, clef_error *err)
{
    static const cuda_slice_kind  attn[3] = {
        CUDA_SLICE_Q_PROJ, CUDA_SLICE_KV_PROJ, CUDA_SLICE_KV_PROJ
    };
    const clef_text_config  *tc = clef_model_text_config(b->model);
    const clef_tensor       *p[3];
    int64_t                  gq = (int64_t) tc->num_attention_heads * b->hd;

    p[0] = role_t(b, CLEF_ROLE_ATTN_Q, l, err);
    p[1] = p[0] ? role_t(b, CLEF_ROLE_ATTN_K, l, err) : NULL;
    p[2] = p[1] ? role_t(b, CLEF_ROLE_ATTN_V, l, err) : NULL;
    return up_stack(b, p, attn, 3, b->attn_rows, b->H, &ly->attn.in, err)
           || up_cols(b, role_t(b, CLEF_ROLE_ATTN_O, l, err), b->H, gq,
                      CUDA_SLICE_O_PROJ, &ly->attn.out, err)
           || up_bf16(b, role_t(b, CLEF_ROLE_ATTN_Q_NORM, l, err),
                      &ly->attn.q_norm, err)
           || up_bf16(b, role_t(b, CLEF_ROLE_ATTN_K_NORM, l, err),
                      &ly->attn.k_norm, err) ? -1 : 0;
}

/* Layer l: its norms, its MLP (dense, or routed experts), its mixer. */
static int
upload_layer(clef_backend *b, int l, clef_error *err)
{
    const clef_layer_desc  *d = &clef_model_text_config(b->model)->layer[l];
    cuda_layer             *ly = &b->layers[l];

    ly->mixer = d->mixer;
    ly->mlp.kind = d->mlp;
    if (upload_norms(b, l, ly, err) != 0
        || (d->mlp == CLEF_MLP_MOE ? upload_moe(b, l, ly, err)
                                   : upload_dense(b, l, ly, err)) != 0)
    {
        return -1;
    }
    return d->mixer == CLEF_MIXER_FULL ? upload_attn(b, l, ly, err)
                                       : upload_gdn(b, l, ly, err);
}

/* ---- the joint head --------------------------------------------------- */

static int
up_role_f32(clef_backend *b, clef_role r, int i, float **out, clef_error *err)
{
    return up_f32(b, role_t(b, r, i, err), out, err);
}

/* A LayerNorm: its weight and bias roles. */
static int
up_ln(clef_backend *b, clef_role w, clef_role bias, int i, float **wo,
    float **bo, clef_error *err)
{
    return up_role_f32(b, w, i, wo, err) || up_role_f32(b, bias, i, bo, err)
           ? -1 : 0;
}

/* An nn.MultiheadAttention: its in_proj weight and bias, out_proj weight
 * and bias roles, in that order. */
static int
up_mha(clef_backend *b, const clef_role *r, int i, cuda_mha *m, clef_error *err)
{
    return up_role_f32(b, r[0], i, &m->in_w, err)
           || up_role_f32(b, r[1], i, &m->in_b, err)
           || up_role_f32(b, r[2], i, &m->out_w, err)
           || up_role_f32(b, r[3], i, &m->out_b, err) ? -1 : 0;
}

static int
up_scalar(clef_backend *b, clef_role r, float *v, clef_error *err)
{
    return scalar(role_t(b, r, 0, err), v);
}

static int
upload_head(clef_backend *b, clef_error *err)
{
    cuda_head_w        *h = &b->head;
    int64_t             H = b->H, W = b->W;
    const clef_tensor  *t[2];
    float              *tmp;
    int                 i, rc;
    float               v;

    h->route = calloc((size_t) (b->n_route ? b->n_route : 1), sizeof(*h->route));
    h->dec = calloc((size_t) (b->n_dec ? b->n_dec : 1), sizeof(*h->dec));
    if (h->route == NULL || h->dec == NULL) {
        return clef_error_fail(err, CLEF_E_NO_MEMORY, "out of memory");
    }
    if (up_ln(b, CLEF_ROLE_H_HIDDEN_NORM, CLEF_ROLE_H_HIDDEN_NORM_BIAS, 0,
              &h->hn_w, &h->hn_b, err)
        || up_role_f32(b, CLEF_ROLE_H_MEMORY_PROJ, 0, &h->mem_proj, err)
        || up_role_f32(b, CLEF_ROLE_H_GLOBAL_PROJ, 0, &h->glob_proj, err)
        || up_role_f32(b, CLEF_ROLE_H_OPTION_CONTEXT_PROJ, 0, &h->ctx_proj, err)
        || up_role_f32(b, CLEF_ROLE_H_OPTION_LEXICAL_PROJ, 0, &h->lex_proj, err)
        || up_role_f32(b, CLEF_ROLE_H_TYPE_EMBEDDING, 0, &h->type_emb, err))
    {
        return -1;
    }

    /* option_question_projection and question_projection both read the
     * question vectors: one [2W][H] product. */
    t[0] = role_t(b, CLEF_ROLE_H_OPTION_QUESTION_PROJ, 0, err);
    t[1] = t[0] ? role_t(b, CLEF_ROLE_H_QUESTION_PROJ, 0, err) : NULL;
    if (t[1] == NULL) {
        return -1;
    }
    tmp = malloc((size_t) (2 * W * H) * sizeof(float));
    if (tmp == NULL) {
        return clef_error_fail(err, CLEF_E_NO_MEMORY, "out of memory");
    }
    clef_tensor_to_f32(t[0], tmp);
    clef_tensor_to_f32(t[1], tmp + W * H);
    rc = up_f32_host(b, tmp, (size_t) (2 * W * H), &h->qv_proj, err);
    free(tmp);
    if (rc != 0) {
        return -1;
    }

    for (i = 0; i < b->n_route; i++) {
        cuda_route  *r = &h->route[i];

        if (up_ln(b, CLEF_ROLE_HR_QUERY_NORM, CLEF_ROLE_HR_QUERY_NORM_BIAS, i,
                  &r->qn_w, &r->qn_b, err)
            || up_ln(b, CLEF_ROLE_HR_MEMORY_NORM, CLEF_ROLE_HR_MEMORY_NORM_BIAS,
                     i, &r->mn_w, &r->mn_b, err)
            || up_ln(b, CLEF_ROLE_HR_FF_NORM, CLEF_ROLE_HR_FF_NORM_BIAS, i,
                     &r->fn_w, &r->fn_b, err)
            || up_mha(b, clef_roles_route_attention, i, &r->att, err)
            || up_role_f32(b, CLEF_ROLE_HR_FF0, i, &r->ff0_w, err)
            || up_role_f32(b, CLEF_ROLE_HR_FF0_BIAS, i, &r->ff0_b, err)
            || up_role_f32(b, CLEF_ROLE_HR_FF3, i, &r->ff3_w, err)
            || up_role_f32(b, CLEF_ROLE_HR_FF3_BIAS, i, &r->ff3_b, err))
        {
            return -1;
        }
    }
    if (up_ln(b, CLEF_ROLE_H_SUMMARY_NORM, CLEF_ROLE_H_SUMMARY_NORM_BIAS, 0,
              &h->sum_w, &h->sum_b, err))
    {
        return -1;
    }
    for (i = 0; i < b->n_dec; i++) {
        cuda_dec  *d = &h->dec[i];

        if (up_ln(b, CLEF_ROLE_HD_NORM1, CLEF_ROLE_HD_NORM1_BIAS, i,
                  &d->n1_w, &d->n1_b, err)
            || up_ln(b, CLEF_ROLE_HD_NORM2, CLEF_ROLE_HD_NORM2_BIAS, i,
                     &d->n2_w, &d->n2_b, err)
            || up_ln(b, CLEF_ROLE_HD_NORM3, CLEF_ROLE_HD_NORM3_BIAS, i,
                     &d->n3_w, &d->n3_b, err)
            || up_mha(b, clef_roles_dec_self_attention, i, &d->sa, err)
            || up_mha(b, clef_roles_dec_cross_attention, i, &d->ca, err)
            || up_role_f32(b, CLEF_ROLE_HD_LINEAR1, i, &d->l1_w, err)
            || up_role_f32(b, CLEF_ROLE_HD_LINEAR1_BIAS, i, &d->l1_b, err)
            || up_role_f32(b, CLEF_ROLE_HD_LINEAR2, i, &d->l2_w, err)
            || up_role_f32(b, CLEF_ROLE_HD_LINEAR2_BIAS, i, &d->l2_b, err))
        {
            return -1;
        }
    }
    if (up_ln(b, CLEF_ROLE_H_FIELD_NORM, CLEF_ROLE_H_FIELD_NORM_BIAS, 0,
              &h->field_w, &h->field_b, err)
        || up_ln(b, CLEF_ROLE_H_OPTION_NORM, CLEF_ROLE_H_OPTION_NORM_BIAS, 0,
                 &h->opt_w, &h->opt_b, err)
        || up_role_f32(b, CLEF_ROLE_H_SCORER, 0, &h->rs0_w, err)
        || up_role_f32(b, CLEF_ROLE_H_SCORER_BIAS, 0, &h->rs0_b, err)
        || up_role_f32(b, CLEF_ROLE_H_SCORER_OUT, 0, &h->rs3_w, err)
        || up_role_f32(b, CLEF_ROLE_H_SCORER_OUT_BIAS, 0, &h->rs3_b, err))
    {
        return -1;
    }

    /* exp(min(s, ln 100)) and sigmoid(gate), in double like the converter. */
    if (up_scalar(b, CLEF_ROLE_H_PRIOR_SCALE, &v, err) != 0) {
        return -1;
    }
    h->prior_scale = (float) exp(fmin((double) v, log(100.0)));
    if (up_scalar(b, CLEF_ROLE_H_JOINT_SCALE, &v, err) != 0) {
        return -1;
    }
    h->joint_scale = (float) exp(fmin((double) v, log(100.0)));
    if (up_scalar(b, CLEF_ROLE_H_RESIDUAL_GATE, &v, err) != 0) {
        return -1;
    }
    h->gate = (float) (1.0 / (1.0 + exp(-(double) v)));
    return 0;
}

int
cuda_weights_upload(clef_backend *b, clef_error *err)
{
    const clef_text_config  *tc = clef_model_text_config(b->model);
    const clef_tensor       *emb, *lm;
    float                    inv[128];
    int                      l, j;

    /* every rank embeds (replicated: shard.h says why) */
    emb = role_t(b, CLEF_ROLE_EMBED, 0, err);
    if (emb == NULL || up_bf16(b, emb, &b->embed, err) != 0) {
        return -1;
    }
    /* lm_head and the final norm serve the head: rank 0 alone */
    if (b->rank == 0) {
        lm = role_t(b, CLEF_ROLE_LM_HEAD, 0, err);
        if (lm == NULL) {
            return -1;
        }
        if (lm->data == emb->data) {
            b->lm_head = b->embed;              /* tied */
        } else if (up_bf16(b, lm, &b->lm_head, err) != 0) {
            return -1;
        }
        if (up_bf16(b, role_t(b, CLEF_ROLE_FINAL_NORM, 0, err), &b->final_norm,
                    err) != 0)
        {
            return -1;
        }
    }

    /* RoPE inverse frequencies as HF computes them, in fp32. */
    for (j = 0; j < b->rot / 2; j++) {
        float  e = (float) (2 * j) / (float) b->rot;

        inv[j] = 1.0f / (float) pow(tc->rope_theta, (double) e);
    }
    if (up_f32_host(b, inv, (size_t) (b->rot / 2 > 0 ? b->rot / 2 : 1), &b->inv_freq,
                    err) != 0)
    {
        return -1;
    }

    for (l = 0; l < b->L; l++) {
        if (upload_layer(b, l, err) != 0) {
            return -1;
        }
    }
    return b->rank == 0 ? upload_head(b, err) : 0;
}
