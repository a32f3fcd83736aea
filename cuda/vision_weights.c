/*
 * The vision tower's weights on the device (see vision.h): the five kinds
 * of projection (patch embedding, qkv, proj, fc1, fc2, the merger's two)
 * in bf16, the operand cuBLASLt's bf16 tensor-core GEMMs take, as the
 * backbone's; LayerNorm weights, biases and the learned position table in
 * fp32: they are read once per row, cost nothing to keep exact, and the
 * position table is only gathered (no GEMM reads it), so fp32 spares one
 * rounding against the CPU tower without any cost.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <math.h>

#include "cuda_backend.h"
#include "vision.h"

#define PREFIX  "model.visual."

static int
vdev_alloc(cuda_vision *v, size_t bytes, void **out, clef_error *err)
{
    void        *p;
    cudaError_t  e;

    if (v->n_allocs == v->cap_allocs) {
        int    cap = v->cap_allocs ? 2 * v->cap_allocs : 64;
        void **a = realloc(v->allocs, (size_t) cap * sizeof(*a));

        if (a == NULL) {
            return clef_error_fail(err, CLEF_E_NO_MEMORY, "out of memory");
        }
        v->allocs = a;
        v->cap_allocs = cap;
    }
    e = cudaMalloc(&p, bytes ? bytes : 16);
    if (e != cudaSuccess) {
        return clef_error_fail(err, CLEF_E_NO_MEMORY,
            "cudaMalloc of %zu bytes for the vision tower: %s", bytes,
            cudaGetErrorString(e));
    }
    v->allocs[v->n_allocs++] = p;
    *out = p;
    return 0;
}

void
cuda_vision_weights_free(cuda_vision *v)
{
    int  i;

    if (v == NULL) {
        return;
    }
    for (i = 0; i < v->n_allocs; i++) {
        cudaFree(v->allocs[i]);
    }
    free(v->allocs);
    free(v->blocks);
    free(v);
}

/* model.visual.<name> as fp32 on the host (malloc'ed), checked to hold
 * numel values; NULL with err filled. */
static float *
host_f32(const clef_model *m, const char *name, int64_t numel, clef_error *err)
{
    const clef_tensor  *t;
    char                full[160];
    float              *h;

    snprintf(full, sizeof(full), PREFIX "%s", name);
    t = clef_model_tensor(m, full);
    if (t == NULL || t->data == NULL) {
        clef_error_fail(err, CLEF_E_MODEL, "cuda backend: tensor %s is missing",
            full);
        return NULL;
    }
    if (t->numel != numel || (t->dtype != CLEF_DTYPE_F32 && t->dtype != CLEF_DTYPE_F16
                              && t->dtype != CLEF_DTYPE_BF16))
    {
        clef_error_fail(err, CLEF_E_MODEL,
            "cuda backend: tensor %s has %lld %s elements, expected %lld floats",
            full, (long long) t->numel, clef_dtype_name(t->dtype),
            (long long) numel);
        return NULL;
    }
    h = malloc((size_t) numel * sizeof(float));
    if (h == NULL) {
        clef_error_fail(err, CLEF_E_NO_MEMORY, "out of memory for %s", full);
        return NULL;
    }
    clef_tensor_to_f32(t, h);
    return h;
}

static int
copy_up(void *dst, const void *src, size_t bytes, clef_error *err)
{
    cudaError_t  e = cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice);

    if (e != cudaSuccess) {
        return clef_error_fail(err, CLEF_E_INTERNAL, "vision weight upload: %s",
            cudaGetErrorString(e));
    }
    return 0;
}

static int
up_f32(cuda_vision *v, const clef_model *m, const char *name, int64_t numel,
    float **out, clef_error *err)
{
    float  *h = host_f32(m, name, numel, err);
    void   *d;
    int     rc;

    if (h == NULL) {
        return -1;
    }
    rc = vdev_alloc(v, (size_t) numel * sizeof(float), &d, err);
    if (rc == 0) {
        *out = d;
        rc = copy_up(d, h, (size_t) numel * sizeof(float), err);
    }
    free(h);
    return rc;
}

static int
up_bf16(cuda_vision *v, const clef_model *m, const char *name, int64_t numel,
    clef_bf16 **out, clef_error *err)
{
    float     *h = host_f32(m, name, numel, err);
    uint16_t  *b;
    void      *d;
    int64_t    i;
    int        rc;

    if (h == NULL) {
        return -1;
    }
    b = malloc((size_t) numel * sizeof(uint16_t));
    if (b == NULL) {
        free(h);
        return clef_error_fail(err, CLEF_E_NO_MEMORY, "out of memory");
    }
    /* bf16 checkpoints round-trip exactly through fp32 */
    for (i = 0; i < numel; i++) {
        b[i] = clef_f32_to_bf16(h[i]);
    }
    rc = vdev_alloc(v, (size_t) numel * 2, &d, err);
    if (rc == 0) {
        *out = d;
        rc = copy_up(d, b, (size_t) numel * 2, err);
    }
    free(h);
    free(b);
    return rc;
}

/* Sizes, and what this backend's kernels need of them. */
static int
vsizes(cuda_vision *v, const clef_vision_config *c, const clef_text_config *tc,
    clef_error *err)
{
    int  rot = (int) (tc->head_dim * tc->partial_rotary_factor);

    v->H = c->hidden_size;
    v->I = c->intermediate_size;
    v->heads = c->num_heads;
    v->depth = c->depth;
    v->hd = v->heads > 0 ? v->H / v->heads : 0;
    v->side = (int) lround(sqrt((double) c->num_position_embeddings));
    v->row = c->in_channels * c->temporal_patch_size * c->patch_size * c->patch_size;
    v->merge = c->spatial_merge_size;
    v->ps = c->patch_size;
    v->temporal = c->temporal_patch_size;
    v->unit = v->merge * v->merge;
    v->M = v->H * v->unit;
    v->out = c->out_hidden_size;
    v->theta = c->rope_theta;
    v->msec[0] = tc->mrope_section[0];
    v->msec[1] = tc->mrope_section[1];
    v->msec[2] = tc->mrope_section[2];

    if (v->heads <= 0 || v->H % v->heads != 0 || !clef_k_attention_supported(v->hd)
        || v->hd % 4 != 0 || v->depth < 0 || v->I <= 0 || v->row <= 0
        || v->merge < 1 || v->side < 1
        || (int64_t) v->side * v->side != c->num_position_embeddings)
    {
        return clef_error_fail(err, CLEF_E_MODEL,
            "cuda backend: unsupported vision tower (hidden %d, %d heads, "
            "intermediate %d, %d position embeddings): needs a head dim that "
            "is a multiple of 8 up to 256 and a square position table",
            v->H, v->heads, v->I, c->num_position_embeddings);
    }
    if (v->out != tc->hidden_size) {
        return clef_error_fail(err, CLEF_E_MODEL,
            "cuda backend: the vision tower's output (%d) is not the text "
            "hidden size (%d)", v->out, tc->hidden_size);
    }
    if (2 * (tc->mrope_section[0] + tc->mrope_section[1] + tc->mrope_section[2])
        > rot)
    {
        return clef_error_fail(err, CLEF_E_MODEL,
            "cuda backend: M-RoPE sections %d+%d+%d exceed the %d rotary pairs",
            tc->mrope_section[0], tc->mrope_section[1], tc->mrope_section[2],
            rot / 2);
    }
    return 0;
}

int
cuda_vision_weights_upload(const clef_model *m, const clef_text_config *tc,
    cuda_vision **out, clef_error *err)
{
    const clef_vision_config  *c = clef_model_vision_config(m);
    cuda_vision               *v;
    cuda_vblock               *bl;
    char                       n[96];
    int64_t                    H, I, M;
    int                        l;

    *out = NULL;
    if (c == NULL) {
        return 0;
    }
    v = calloc(1, sizeof(*v));
    if (v == NULL) {
        return clef_error_fail(err, CLEF_E_NO_MEMORY, "out of memory");
    }
    if (vsizes(v, c, tc, err) != 0) {
        cuda_vision_weights_free(v);
        return -1;
    }
    H = v->H;
    I = v->I;
    M = v->M;
    v->blocks = calloc((size_t) (v->depth > 0 ? v->depth : 1), sizeof(cuda_vblock));
    if (v->blocks == NULL) {
        cuda_vision_weights_free(v);
        return clef_error_fail(err, CLEF_E_NO_MEMORY, "out of memory");
    }

    if (up_bf16(v, m, "patch_embed.proj.weight", H * v->row, &v->patch_w, err)
        || up_f32(v, m, "patch_embed.proj.bias", H, &v->patch_b, err)
        || up_f32(v, m, "pos_embed.weight", (int64_t) v->side * v->side * H,
                  &v->pos, err))
    {
        goto failed;
    }
    for (l = 0; l < v->depth; l++) {
        bl = &v->blocks[l];
#define F(field, s, numel)                                                  \
        snprintf(n, sizeof(n), "blocks.%d.%s", l, s);                       \
        if (up_f32(v, m, n, numel, &bl->field, err) != 0) goto failed
#define B(field, s, numel)                                                  \
        snprintf(n, sizeof(n), "blocks.%d.%s", l, s);                       \
        if (up_bf16(v, m, n, numel, &bl->field, err) != 0) goto failed
        F(n1_w, "norm1.weight", H);
        F(n1_b, "norm1.bias", H);
        F(n2_w, "norm2.weight", H);
        F(n2_b, "norm2.bias", H);
        B(qkv, "attn.qkv.weight", 3 * H * H);
        F(qkv_b, "attn.qkv.bias", 3 * H);
        B(proj, "attn.proj.weight", H * H);
        F(proj_b, "attn.proj.bias", H);
        B(fc1, "mlp.linear_fc1.weight", I * H);
        F(fc1_b, "mlp.linear_fc1.bias", I);
        B(fc2, "mlp.linear_fc2.weight", H * I);
        F(fc2_b, "mlp.linear_fc2.bias", H);
#undef F
#undef B
    }
    if (up_f32(v, m, "merger.norm.weight", H, &v->mn_w, err)
        || up_f32(v, m, "merger.norm.bias", H, &v->mn_b, err)
        || up_bf16(v, m, "merger.linear_fc1.weight", M * M, &v->m1, err)
        || up_f32(v, m, "merger.linear_fc1.bias", M, &v->m1_b, err)
        || up_bf16(v, m, "merger.linear_fc2.weight", (int64_t) v->out * M, &v->m2,
                   err)
        || up_f32(v, m, "merger.linear_fc2.bias", v->out, &v->m2_b, err))
    {
        goto failed;
    }
    *out = v;
    return 0;

failed:
    cuda_vision_weights_free(v);
    return -1;
}
