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
#include "model/roles.h"
#include "vision.h"

void
cuda_vision_weights_free(cuda_vision *v)
{
    if (v == NULL) {
        return;
    }
    cuda_allocs_free(&v->allocs);
    free(v->blocks);
    free(v);
}

/* The tower's tensor of role r (of block l) as fp32 on the host
 * (malloc'ed), checked to hold the values its shape implies (the role
 * table's, model/roles.h); NULL with err filled.  *numel: their count. */
static float *
host_f32(const clef_model *m, clef_role r, int l, int64_t *n, clef_error *err)
{
    const clef_tensor  *t;
    clef_dims           d;
    char                full[160];
    int64_t             numel;
    float              *h;

    memset(&d, 0, sizeof(d));
    clef_dims_vision(&d, clef_model_vision_config(m));
    numel = *n = clef_role_numel(r, &d);
    clef_role_name(clef_model_text_config(m), r, l, full, sizeof(full));
    t = clef_model_role(m, r, l);
    if (t == NULL || t->data == NULL) {
        clef_error_fail(err, CLEF_E_MODEL, "cuda backend: tensor %s is missing",
            full);
        return NULL;
    }
    if (t->numel != numel || !clef_dtype_is_float(t->dtype)) {
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
up_f32(cuda_vision *v, const clef_model *m, clef_role r, int l, float **out,
    clef_error *err)
{
    int64_t  numel;
    float   *h = host_f32(m, r, l, &numel, err);
    void    *d;
    int      rc;

    if (h == NULL) {
        return -1;
    }
    rc = cuda_dev_alloc(&v->allocs, (size_t) numel * sizeof(float),
                        "the vision tower", &d, err);
    if (rc == 0) {
        *out = d;
        rc = copy_up(d, h, (size_t) numel * sizeof(float), err);
    }
    free(h);
    return rc;
}

static int
up_bf16(cuda_vision *v, const clef_model *m, clef_role r, int l,
    clef_bf16 **out, clef_error *err)
{
    int64_t    numel, i;
    float     *h = host_f32(m, r, l, &numel, err);
    uint16_t  *b;
    void      *d;
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
    rc = cuda_dev_alloc(&v->allocs, (size_t) numel * 2, "the vision tower", &d,
                        err);
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
    int  rot = (int) (tc->head_dim * tc->partial_rotary_factor), i;

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
    v->n_ds = c->n_deepstack;
    for (i = 0; i < v->n_ds && i < CUDA_VISION_DEEPSTACK_MAX; i++) {
        v->ds_block[i] = c->deepstack[i];
    }

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
    if (v->n_ds < 0 || v->n_ds > CUDA_VISION_DEEPSTACK_MAX
        || v->n_ds > tc->num_hidden_layers)
    {
        return clef_error_fail(err, CLEF_E_MODEL,
            "cuda backend: %d DeepStack mergers (at most %d, and no more "
            "than the %d decoder layers)", v->n_ds, CUDA_VISION_DEEPSTACK_MAX,
            tc->num_hidden_layers);
    }
    for (i = 0; i < v->n_ds; i++) {
        if (v->ds_block[i] < 0 || v->ds_block[i] >= v->depth) {
            return clef_error_fail(err, CLEF_E_MODEL,
                "cuda backend: DeepStack merger %d reads block %d of a "
                "%d-block tower", i, v->ds_block[i], v->depth);
        }
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
    v->blocks = calloc((size_t) (v->depth > 0 ? v->depth : 1), sizeof(cuda_vblock));
    if (v->blocks == NULL) {
        cuda_vision_weights_free(v);
        return clef_error_fail(err, CLEF_E_NO_MEMORY, "out of memory");
    }

    if (up_bf16(v, m, CLEF_ROLE_V_PATCH, 0, &v->patch_w, err)
        || up_f32(v, m, CLEF_ROLE_V_PATCH_BIAS, 0, &v->patch_b, err)
        || up_f32(v, m, CLEF_ROLE_V_POS, 0, &v->pos, err))
    {
        goto failed;
    }
    for (l = 0; l < v->depth; l++) {
        bl = &v->blocks[l];
        if (up_f32(v, m, CLEF_ROLE_V_NORM1, l, &bl->n1_w, err)
            || up_f32(v, m, CLEF_ROLE_V_NORM1_BIAS, l, &bl->n1_b, err)
            || up_f32(v, m, CLEF_ROLE_V_NORM2, l, &bl->n2_w, err)
            || up_f32(v, m, CLEF_ROLE_V_NORM2_BIAS, l, &bl->n2_b, err)
            || up_bf16(v, m, CLEF_ROLE_V_QKV, l, &bl->qkv, err)
            || up_f32(v, m, CLEF_ROLE_V_QKV_BIAS, l, &bl->qkv_b, err)
            || up_bf16(v, m, CLEF_ROLE_V_PROJ, l, &bl->proj, err)
            || up_f32(v, m, CLEF_ROLE_V_PROJ_BIAS, l, &bl->proj_b, err)
            || up_bf16(v, m, CLEF_ROLE_V_FC1, l, &bl->fc1, err)
            || up_f32(v, m, CLEF_ROLE_V_FC1_BIAS, l, &bl->fc1_b, err)
            || up_bf16(v, m, CLEF_ROLE_V_FC2, l, &bl->fc2, err)
            || up_f32(v, m, CLEF_ROLE_V_FC2_BIAS, l, &bl->fc2_b, err))
        {
            goto failed;
        }
    }
    for (l = 0; l < v->n_ds; l++) {
        cuda_vmerger  *g = &v->ds[l];

        if (up_f32(v, m, CLEF_ROLE_V_DS_NORM, l, &g->n_w, err)
            || up_f32(v, m, CLEF_ROLE_V_DS_NORM_BIAS, l, &g->n_b, err)
            || up_bf16(v, m, CLEF_ROLE_V_DS_FC1, l, &g->m1, err)
            || up_f32(v, m, CLEF_ROLE_V_DS_FC1_BIAS, l, &g->m1_b, err)
            || up_bf16(v, m, CLEF_ROLE_V_DS_FC2, l, &g->m2, err)
            || up_f32(v, m, CLEF_ROLE_V_DS_FC2_BIAS, l, &g->m2_b, err))
        {
            goto failed;
        }
    }
    if (up_f32(v, m, CLEF_ROLE_V_MERGER_NORM, 0, &v->mn_w, err)
        || up_f32(v, m, CLEF_ROLE_V_MERGER_NORM_BIAS, 0, &v->mn_b, err)
        || up_bf16(v, m, CLEF_ROLE_V_MERGER_FC1, 0, &v->m1, err)
        || up_f32(v, m, CLEF_ROLE_V_MERGER_FC1_BIAS, 0, &v->m1_b, err)
        || up_bf16(v, m, CLEF_ROLE_V_MERGER_FC2, 0, &v->m2, err)
        || up_f32(v, m, CLEF_ROLE_V_MERGER_FC2_BIAS, 0, &v->m2_b, err))
    {
        goto failed;
    }
    *out = v;
    return 0;

failed:
    cuda_vision_weights_free(v);
    return -1;
}
