/*
 * The audio tower's weights on the device (see audio.h): the matrices the
 * GEMMs read (the second and third convolutions as [C][9 C], conv_out,
 * q, k and v stacked into one [3D][D], out, fc1, fc2, proj1, proj2) in
 * bf16, the operand of cuBLASLt's bf16 tensor-core GEMMs; the first
 * convolution (one input channel, a direct kernel), the LayerNorms, the
 * biases and the sinusoidal positions in fp32: read once per value, exact
 * at no cost.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audio.h"
#include "backend/audio_layout.h"
#include "cuda_backend.h"
#include "model/roles.h"

void
cuda_audio_weights_free(cuda_audio *a)
{
    if (a == NULL) {
        return;
    }
    cuda_allocs_free(&a->allocs);
    free(a->L);
    free(a);
}

/* Role r (of layer l) as fp32 on the host into h (its numel values, the
 * role table's shape, model/roles.h). */
static int
host_f32(const clef_model *m, clef_role r, int l, float *h, int64_t numel,
    clef_error *err)
{
    const clef_tensor  *t;
    char                full[160];

    clef_role_name(clef_model_text_config(m), r, l, full, sizeof(full));
    t = clef_model_role(m, r, l);
    if (t == NULL || t->data == NULL) {
        return clef_error_fail(err, CLEF_E_MODEL,
            "cuda backend: tensor %s is missing", full);
    }
    if (t->numel != numel || !clef_dtype_is_float(t->dtype)) {
        return clef_error_fail(err, CLEF_E_MODEL,
            "cuda backend: tensor %s has %lld %s elements, expected %lld "
            "floats", full, (long long) t->numel, clef_dtype_name(t->dtype),
            (long long) numel);
    }
    clef_tensor_to_f32(t, h);
    return 0;
}

static int
copy_up(void *dst, const void *src, size_t bytes, clef_error *err)
{
    cudaError_t  e = cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice);

    if (e != cudaSuccess) {
        return clef_error_fail(err, CLEF_E_INTERNAL, "audio weight upload: %s",
            cudaGetErrorString(e));
    }
    return 0;
}

/* Roles r[0..n) (of layer l), numel values each, one after the other on
 * the device: fp32 (bf16 0) or bf16. */
static int
up(cuda_audio *a, const clef_model *m, const clef_role *r, int n, int l,
    int64_t numel, int bf16, void **out, clef_error *err)
{
    float     *h;
    uint16_t  *b;
    int64_t    i, all = numel * n;
    int        k, rc = -1;

    h = malloc((size_t) all * sizeof(float));
    b = bf16 ? malloc((size_t) all * sizeof(uint16_t)) : NULL;
    if (h == NULL || (bf16 && b == NULL)) {
        free(h);
        free(b);
        return clef_error_fail(err, CLEF_E_NO_MEMORY, "out of memory");
    }
    for (k = 0; k < n; k++) {
        if (host_f32(m, r[k], l, h + k * numel, numel, err) != 0) {
            goto done;
        }
    }
    if (bf16) {
        /* bf16 checkpoints round-trip exactly through fp32 */
        for (i = 0; i < all; i++) {
            b[i] = clef_f32_to_bf16(h[i]);
        }
    }
    if (cuda_dev_alloc(&a->allocs, (size_t) all * (bf16 ? 2 : 4),
                       "the audio tower", out, err) == 0
        && copy_up(*out, bf16 ? (void *) b : (void *) h,
                   (size_t) all * (bf16 ? 2 : 4), err) == 0)
    {
        rc = 0;
    }

done:
    free(h);
    free(b);
    return rc;
}

#define F32(role, l, numel, field)                                          \
    up(a, m, (const clef_role []) { role }, 1, (l), (numel), 0,             \
       (void **) &(field), err)
#define BF16(role, l, numel, field)                                         \
    up(a, m, (const clef_role []) { role }, 1, (l), (numel), 1,             \
       (void **) &(field), err)

static int
asizes(cuda_audio *a, const clef_audio_tower_config *c,
    const clef_text_config *tc, clef_error *err)
{
    const char  *why = clef_audio_config_refusal(c);

    a->cfg = *c;
    a->D = c->d_model;
    a->I = c->encoder_ffn_dim;
    a->C = c->downsample_hidden_size;
    a->O = c->output_dim;
    a->heads = c->encoder_attention_heads;
    a->hd = a->D / a->heads;
    a->layers = c->encoder_layers;
    a->mels = c->num_mel_bins;
    a->F = (((a->mels - 1) / 2 + 1 - 1) / 2 + 1 - 1) / 2 + 1;
    if (why != NULL) {
        return clef_error_fail(err, CLEF_E_MODEL, "cuda backend: %s", why);
    }
    if (!clef_k_attention_supported(a->hd) || a->hd % 8 != 0
        || a->C % 8 != 0 || a->D % 8 != 0 || a->I % 8 != 0 || a->O % 8 != 0)
    {
        return clef_error_fail(err, CLEF_E_MODEL,
            "cuda backend: unsupported audio tower (d_model %d, %d heads, "
            "ffn %d, %d channels, output %d): needs a head dim that is a "
            "multiple of 8 up to 256 and sizes that are multiples of 8",
            a->D, a->heads, a->I, a->C, a->O);
    }
    if (a->O != tc->hidden_size) {
        return clef_error_fail(err, CLEF_E_MODEL,
            "cuda backend: the audio tower's output (%d) is not the text "
            "hidden size (%d)", a->O, tc->hidden_size);
    }
    return 0;
}

int
cuda_audio_weights_upload(const clef_model *m, const clef_text_config *tc,
    cuda_audio **out, clef_error *err)
{
    const clef_audio_tower_config  *c = clef_model_audio_config(m);
    cuda_audio                     *a;
    cuda_alayer                    *y;
    float                          *pos;
    int64_t                         D, C, I, O;
    int                             l;

    *out = NULL;
    if (c == NULL || !c->present) {
        return 0;
    }
    a = calloc(1, sizeof(*a));
    if (a == NULL) {
        return clef_error_fail(err, CLEF_E_NO_MEMORY, "out of memory");
    }
    if (asizes(a, c, tc, err) != 0) {
        cuda_audio_weights_free(a);
        return -1;
    }
    D = a->D;
    C = a->C;
    I = a->I;
    O = a->O;
    a->L = calloc((size_t) (a->layers > 0 ? a->layers : 1), sizeof(*a->L));
    pos = malloc(sizeof(float) * 13 * (size_t) D);
    if (a->L == NULL || pos == NULL) {
        free(pos);
        cuda_audio_weights_free(a);
        return clef_error_fail(err, CLEF_E_NO_MEMORY, "out of memory");
    }
    /* a chunk keeps 13 steps at most */
    clef_audio_positions((int) D, 13, pos);
    if (cuda_dev_alloc(&a->allocs, sizeof(float) * 13 * (size_t) D,
                       "the audio tower", (void **) &a->pos,
                   err) != 0
        || copy_up(a->pos, pos, sizeof(float) * 13 * (size_t) D, err) != 0)
    {
        free(pos);
        goto failed;
    }
    free(pos);

    if (F32(CLEF_ROLE_A_CONV1, 0, C * 9, a->conv1_w)
        || F32(CLEF_ROLE_A_CONV1_BIAS, 0, C, a->conv1_b)
        || BF16(CLEF_ROLE_A_CONV2, 0, C * 9 * C, a->conv2)
        || F32(CLEF_ROLE_A_CONV2_BIAS, 0, C, a->conv2_b)
        || BF16(CLEF_ROLE_A_CONV3, 0, C * 9 * C, a->conv3)
        || F32(CLEF_ROLE_A_CONV3_BIAS, 0, C, a->conv3_b)
        || BF16(CLEF_ROLE_A_CONV_OUT, 0, D * C * a->F, a->conv_out)
        || F32(CLEF_ROLE_A_POST_NORM, 0, D, a->post_w)
        || F32(CLEF_ROLE_A_POST_NORM_BIAS, 0, D, a->post_b)
        || BF16(CLEF_ROLE_A_PROJ1, 0, D * D, a->proj1)
        || F32(CLEF_ROLE_A_PROJ1_BIAS, 0, D, a->proj1_b)
        || BF16(CLEF_ROLE_A_PROJ2, 0, O * D, a->proj2)
        || F32(CLEF_ROLE_A_PROJ2_BIAS, 0, O, a->proj2_b))
    {
        goto failed;
    }
    for (l = 0; l < a->layers; l++) {
        y = &a->L[l];
        /* q, k, v stacked: the rows the attention kernel reads at 0, D
         * and 2 D of a qkv row */
        if (up(a, m, (const clef_role []) { CLEF_ROLE_A_Q, CLEF_ROLE_A_K,
                                            CLEF_ROLE_A_V },
               3, l, D * D, 1, (void **) &y->qkv, err)
            || up(a, m, (const clef_role []) { CLEF_ROLE_A_Q_BIAS,
                                               CLEF_ROLE_A_K_BIAS,
                                               CLEF_ROLE_A_V_BIAS },
                  3, l, D, 0, (void **) &y->qkv_b, err)
            || F32(CLEF_ROLE_A_NORM1, l, D, y->n1_w)
            || F32(CLEF_ROLE_A_NORM1_BIAS, l, D, y->n1_b)
            || F32(CLEF_ROLE_A_NORM2, l, D, y->n2_w)
            || F32(CLEF_ROLE_A_NORM2_BIAS, l, D, y->n2_b)
            || BF16(CLEF_ROLE_A_OUT, l, D * D, y->out)
            || F32(CLEF_ROLE_A_OUT_BIAS, l, D, y->out_b)
            || BF16(CLEF_ROLE_A_FC1, l, I * D, y->fc1)
            || F32(CLEF_ROLE_A_FC1_BIAS, l, I, y->fc1_b)
            || BF16(CLEF_ROLE_A_FC2, l, D * I, y->fc2)
            || F32(CLEF_ROLE_A_FC2_BIAS, l, D, y->fc2_b))
        {
            goto failed;
        }
    }
    *out = a;
    return 0;

failed:
    cuda_audio_weights_free(a);
    return -1;
}
