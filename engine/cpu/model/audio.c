/*
 * The audio tower's forward on the CPU (see audio.h).
 */
#include "cpu/model/audio.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/audio_layout.h"
#include "cpu/kernels/gemm.h"
#include "cpu/ops/audio_ops.h"
#include "cpu/ops/vision_ops.h"
#include "model/model_omni.h"
#include "model/roles.h"

#define TILE     1024       /* rows of the MLP at a time */
#define LN_EPS   1e-5f      /* nn.LayerNorm's default */

typedef struct {
    float           *norm1_w, *norm1_b, *norm2_w, *norm2_b;
    clef_cpu_wpack   qkv, out, fc1, fc2;
    float           *qkv_b, *out_b, *fc1_b, *fc2_b;
} alayer;

struct clef_cpu_audio {
    clef_cpu_pool            *pool;
    clef_audio_tower_config   cfg;
    int                       C, F, hd;   /* conv channels, mel bins after
                                             the convolutions, head dim */
    float                    *conv1_w, *conv1_b, *conv2_b, *conv3_b;
    clef_cpu_wpack            conv2, conv3, conv_out;
    alayer                   *layers;
    float                    *post_w, *post_b, *proj1_b, *proj2_b;
    clef_cpu_wpack            proj1, proj2;
    float                    *pos;        /* [13][d_model] */
    void                    (*progress)(void *ctx);
    void                     *progress_ctx;
};


void
clef_cpu_audio_set_progress(clef_cpu_audio *a, void (*fn)(void *ctx),
    void *ctx)
{
    a->progress = fn;
    a->progress_ctx = ctx;
}


/* Role r of the tower (of its layer `layer`), which must hold numel
 * values. */
static const clef_tensor *
tensor(const clef_model *m, clef_role r, int layer, int64_t numel,
    clef_error *err)
{
    const clef_tensor  *t;
    char                full[160];

    clef_role_name(NULL, r, layer, full, sizeof(full));
    t = clef_model_tensor(m, full);
    if (t == NULL || t->data == NULL || t->numel != numel) {
        clef_error_fail(err, CLEF_E_MODEL, "tensor '%s' is missing or not "
                        "of %lld values", full, (long long) numel);
        return NULL;
    }
    return t;
}

/* A vector or small tensor of the tower as fp32 (malloc'ed). */
static float *
load_f32(const clef_model *m, clef_role r, int layer, int64_t numel,
    clef_error *err)
{
    const clef_tensor  *t = tensor(m, r, layer, numel, err);
    float              *p;

    if (t == NULL) {
        return NULL;
    }
    p = malloc(sizeof(float) * (size_t) numel);
    if (p == NULL) {
        clef_error_fail(err, CLEF_E_NO_MEMORY, "out of memory for '%s'",
                        clef_role_of(r)->name);
        return NULL;
    }
    clef_tensor_to_f32(t, p);
    return p;
}

/* Matrices roles[0..n_parts) of layer `layer` ([rows][k] each) stacked
 * into one packed matrix: bf16 as stored when all are plain bf16 (the
 * kernel widens it exactly: the products of an fp32 copy), else fp32. */
static int
load_packed(const clef_model *m, const clef_role *roles, int n_parts,
    int layer, int64_t rows, int64_t k, clef_cpu_wpack *w, clef_error *err)
{
    const clef_tensor  *t[3];
    float              *p;
    int                 i, bf16 = 1;

    for (i = 0; i < n_parts; i++) {
        t[i] = tensor(m, roles[i], layer, rows * k, err);
        if (t[i] == NULL) {
            return -1;
        }
        bf16 &= t[i]->dtype == CLEF_DTYPE_BF16 && clef_tensor_is_plain(t[i]);
    }
    if ((bf16 ? clef_cpu_wpack_alloc_bf16(w, n_parts * rows, k)
              : clef_cpu_wpack_alloc(w, n_parts * rows, k)) != 0)
    {
        return clef_error_fail(err, CLEF_E_NO_MEMORY,
                               "out of memory packing '%s'",
                               clef_role_of(roles[0])->name);
    }
    for (i = 0; i < n_parts; i++) {
        if (bf16) {
            clef_cpu_wpack_rows_bf16(w, i * rows, rows,
                                     (const uint16_t *) t[i]->data, k);
            clef_tensor_release(t[i]);
            continue;
        }
        p = malloc(sizeof(float) * (size_t) (rows * k));
        if (p == NULL) {
            return clef_error_fail(err, CLEF_E_NO_MEMORY,
                                   "out of memory packing '%s'",
                                   clef_role_of(roles[i])->name);
        }
        clef_tensor_to_f32(t[i], p);
        clef_cpu_wpack_rows(w, i * rows, rows, p, k);
        free(p);
    }
    return 0;
}

static int
load_one(const clef_model *m, clef_role r, int layer, int64_t rows,
    int64_t k, clef_cpu_wpack *w, clef_error *err)
{
    return load_packed(m, &r, 1, layer, rows, k, w, err);
}


void
clef_cpu_audio_close(clef_cpu_audio *a)
{
    alayer  *y;
    int      l;

    if (a == NULL) {
        return;
    }
    for (l = 0; a->layers != NULL && l < a->cfg.encoder_layers; l++) {
        y = &a->layers[l];
        free(y->norm1_w);
        free(y->norm1_b);
        free(y->norm2_w);
        free(y->norm2_b);
        free(y->qkv_b);
        free(y->out_b);
        free(y->fc1_b);
        free(y->fc2_b);
        clef_cpu_wpack_free(&y->qkv);
        clef_cpu_wpack_free(&y->out);
        clef_cpu_wpack_free(&y->fc1);
        clef_cpu_wpack_free(&y->fc2);
    }
    free(a->layers);
    free(a->conv1_w);
    free(a->conv1_b);
    free(a->conv2_b);
    free(a->conv3_b);
    clef_cpu_wpack_free(&a->conv2);
    clef_cpu_wpack_free(&a->conv3);
    clef_cpu_wpack_free(&a->conv_out);
    free(a->post_w);
    free(a->post_b);
    free(a->proj1_b);
    free(a->proj2_b);
    clef_cpu_wpack_free(&a->proj1);
    clef_cpu_wpack_free(&a->proj2);
    free(a->pos);
    free(a);
}


static int
load_layer(const clef_model *m, int l, int64_t D, int64_t I, alayer *y,
    clef_error *err)
{
    static const clef_role  qkv[3] = {
        CLEF_ROLE_A_Q, CLEF_ROLE_A_K, CLEF_ROLE_A_V
    };
    static const clef_role  qkv_b[3] = {
        CLEF_ROLE_A_Q_BIAS, CLEF_ROLE_A_K_BIAS, CLEF_ROLE_A_V_BIAS
    };
    float                  *v;
    int                     i;

    if ((y->norm1_w = load_f32(m, CLEF_ROLE_A_NORM1, l, D, err)) == NULL
        || (y->norm1_b = load_f32(m, CLEF_ROLE_A_NORM1_BIAS, l, D, err))
           == NULL
        || (y->norm2_w = load_f32(m, CLEF_ROLE_A_NORM2, l, D, err)) == NULL
        || (y->norm2_b = load_f32(m, CLEF_ROLE_A_NORM2_BIAS, l, D, err))
           == NULL
        || (y->out_b = load_f32(m, CLEF_ROLE_A_OUT_BIAS, l, D, err)) == NULL
        || (y->fc1_b = load_f32(m, CLEF_ROLE_A_FC1_BIAS, l, I, err)) == NULL
        || (y->fc2_b = load_f32(m, CLEF_ROLE_A_FC2_BIAS, l, D, err)) == NULL
        || load_packed(m, qkv, 3, l, D, D, &y->qkv, err) != 0)
    {
        return -1;
    }
    /* q, k, v side by side: the rows vision_ops.h's attention reads */
    y->qkv_b = malloc(sizeof(float) * (size_t) (3 * D));
    if (y->qkv_b == NULL) {
        return clef_error_fail(err, CLEF_E_NO_MEMORY, "out of memory");
    }
    for (i = 0; i < 3; i++) {
        v = load_f32(m, qkv_b[i], l, D, err);
        if (v == NULL) {
            return -1;
        }
        memcpy(y->qkv_b + i * D, v, sizeof(float) * (size_t) D);
        free(v);
    }
    return load_one(m, CLEF_ROLE_A_OUT, l, D, D, &y->out, err) != 0
           || load_one(m, CLEF_ROLE_A_FC1, l, I, D, &y->fc1, err) != 0
           || load_one(m, CLEF_ROLE_A_FC2, l, D, I, &y->fc2, err) != 0
           ? -1 : 0;
}


int
clef_cpu_audio_open(const clef_model *m, clef_cpu_pool *pool,
    clef_cpu_audio **out, clef_error *err)
{
    const clef_audio_tower_config  *c = clef_model_audio_config(m);
    const char                     *why;
    clef_cpu_audio                 *a;
    int64_t                         D, I, C, O;
    int                             l;

    *out = NULL;
    if (c == NULL || !c->present) {
        return 0;
    }
    why = clef_audio_config_refusal(c);
    if (why != NULL) {
        return clef_error_fail(err, CLEF_E_MODEL, "%s", why);
    }
    a = calloc(1, sizeof(*a));
    if (a == NULL) {
        return clef_error_fail(err, CLEF_E_NO_MEMORY, "out of memory");
    }
    a->pool = pool;
    a->cfg = *c;
    D = c->d_model;
    I = c->encoder_ffn_dim;
    C = c->downsample_hidden_size;
    O = c->output_dim;
    a->C = (int) C;
    a->F = CLEF_AUDIO_HALF(CLEF_AUDIO_HALF(CLEF_AUDIO_HALF(c->num_mel_bins)));
    a->hd = c->d_model / c->encoder_attention_heads;
    a->layers = calloc((size_t) c->encoder_layers, sizeof(alayer));
    /* a chunk keeps 13 rows at most */
    a->pos = malloc(sizeof(float) * 13 * (size_t) D);
    if (a->layers == NULL || a->pos == NULL) {
        clef_cpu_audio_close(a);
        return clef_error_fail(err, CLEF_E_NO_MEMORY, "out of memory");
    }
    clef_audio_positions((int) D, 13, a->pos);

    if ((a->conv1_w = load_f32(m, CLEF_ROLE_A_CONV1, 0, C * 9, err)) == NULL
        || (a->conv1_b = load_f32(m, CLEF_ROLE_A_CONV1_BIAS, 0, C, err))
           == NULL
        || (a->conv2_b = load_f32(m, CLEF_ROLE_A_CONV2_BIAS, 0, C, err))
           == NULL
        || (a->conv3_b = load_f32(m, CLEF_ROLE_A_CONV3_BIAS, 0, C, err))
           == NULL
        || load_one(m, CLEF_ROLE_A_CONV2, 0, C, 9 * C, &a->conv2, err) != 0
        || load_one(m, CLEF_ROLE_A_CONV3, 0, C, 9 * C, &a->conv3, err) != 0
        || load_one(m, CLEF_ROLE_A_CONV_OUT, 0, D, C * a->F, &a->conv_out,
                    err) != 0
        || (a->post_w = load_f32(m, CLEF_ROLE_A_POST_NORM, 0, D, err)) == NULL
        || (a->post_b = load_f32(m, CLEF_ROLE_A_POST_NORM_BIAS, 0, D, err))
           == NULL
        || load_one(m, CLEF_ROLE_A_PROJ1, 0, D, D, &a->proj1, err) != 0
        || (a->proj1_b = load_f32(m, CLEF_ROLE_A_PROJ1_BIAS, 0, D, err))
           == NULL
        || load_one(m, CLEF_ROLE_A_PROJ2, 0, O, D, &a->proj2, err) != 0
        || (a->proj2_b = load_f32(m, CLEF_ROLE_A_PROJ2_BIAS, 0, O, err))
           == NULL)
    {
        goto failed;
    }
    for (l = 0; l < c->encoder_layers; l++) {
        if (load_layer(m, l, D, I, &a->layers[l], err) != 0) {
            goto failed;
        }
    }
    *out = a;
    return 0;

failed:
    clef_cpu_audio_close(a);
    return -1;
}


/* ---- forward -------------------------------------------------------------- */

/* The scratch of the convolutions, sized for the widest chunk. */
typedef struct {
    float  *act1, *act2, *act3, *cols, *flat;
} conv_bufs;


/* Chunk ch through the convolutions and conv_out into x (its rows at
 * ch->row), positions added. */
static void
chunk_forward(clef_cpu_audio *a, const clef_media_item *it,
    const clef_audio_chunk *ch, conv_bufs *cb, float *gemm, float *x)
{
    clef_cpu_pool  *pool = a->pool;
    int             C = a->C, D = a->cfg.d_model, mels = a->cfg.num_mel_bins;
    int             h1, w1, h2, w2, h3, w3, f, c;
    int64_t         t, i;
    float          *row;

    h1 = CLEF_AUDIO_HALF(mels);
    w1 = CLEF_AUDIO_HALF(ch->width);
    h2 = CLEF_AUDIO_HALF(h1);
    w2 = CLEF_AUDIO_HALF(w1);
    h3 = CLEF_AUDIO_HALF(h2);
    w3 = CLEF_AUDIO_HALF(w2);

    clef_cpu_audio_conv1(pool, it->values, it->grid_w, ch->first, ch->frames,
                         mels, ch->width, a->conv1_w, C, cb->act1);
    clef_cpu_bias_gelu(pool, cb->act1, C, (int64_t) h1 * w1, C, a->conv1_b,
                       0);
    clef_cpu_audio_im2col(pool, cb->act1, h1, w1, C, cb->cols);
    clef_cpu_linear(pool, cb->cols, 9 * C, (int64_t) h2 * w2, &a->conv2,
                    cb->act2, C, 0.0f, gemm);
    clef_cpu_bias_gelu(pool, cb->act2, C, (int64_t) h2 * w2, C, a->conv2_b,
                       0);
    clef_cpu_audio_im2col(pool, cb->act2, h2, w2, C, cb->cols);
    clef_cpu_linear(pool, cb->cols, 9 * C, (int64_t) h3 * w3, &a->conv3,
                    cb->act3, C, 0.0f, gemm);
    clef_cpu_bias_gelu(pool, cb->act3, C, (int64_t) h3 * w3, C, a->conv3_b,
                       0);

    /* the reference's (channel, mel) flattening per time step, the kept
     * steps only */
    for (t = 0; t < ch->rows; t++) {
        row = cb->flat + t * C * a->F;
        for (c = 0; c < C; c++) {
            for (f = 0; f < a->F; f++) {
                row[c * a->F + f] = cb->act3[((int64_t) f * w3 + t) * C + c];
            }
        }
    }
    clef_cpu_linear(pool, cb->flat, (int64_t) C * a->F, ch->rows,
                    &a->conv_out, x + ch->row * D, D, 0.0f, gemm);
    for (t = 0; t < ch->rows; t++) {
        row = x + (ch->row + t) * D;
        for (i = 0; i < D; i++) {
            row[i] += a->pos[t * D + i];
        }
    }
}


int
clef_cpu_audio_forward(clef_cpu_audio *a, const clef_media_item *const *items,
    const int32_t *group, int n, float *features, clef_error *err)
{
    const clef_audio_tower_config  *c = &a->cfg;
    clef_cpu_pool                  *pool = a->pool;
    clef_audio_layout               lay;
    const alayer                   *y;
    conv_bufs                       cb = { 0 };
    const char                     *why;
    int64_t                         P, D = c->d_model, I = c->encoder_ffn_dim;
    int64_t                         O = c->output_dim, kmax, t0, m, pos1;
    int64_t                        *blocks = NULL;
    float                          *x = NULL, *xn = NULL, *qkv = NULL;
    float                          *o = NULL, *mlp = NULL, *gemm = NULL;
    float                          *scratch = NULL;
    size_t                          per_worker;
    int                             k, l, rc = -1, C = a->C, w1, w2;

    if (n == 0) {
        return 0;
    }
    if (clef_audio_layout_build(c, items, group, n, &lay, &why) != 0) {
        return clef_error_fail(err, strcmp(why, "out of memory") == 0
                                    ? CLEF_E_NO_MEMORY : CLEF_E_INTERNAL,
                               "%s", why);
    }
    P = lay.rows;
    w1 = CLEF_AUDIO_HALF(lay.widest);
    w2 = CLEF_AUDIO_HALF(w1);
    pos1 = (int64_t) CLEF_AUDIO_HALF(c->num_mel_bins) * w1;
    kmax = 9 * (int64_t) C;
    kmax = (int64_t) C * a->F > kmax ? (int64_t) C * a->F : kmax;
    kmax = I > kmax ? I : kmax;
    kmax = D > kmax ? D : kmax;
    per_worker = clef_cpu_vision_attention_scratch(lay.longest, a->hd);

    cb.act1 = malloc(sizeof(float) * (size_t) (pos1 * C));
    cb.act2 = malloc(sizeof(float) * (size_t) (pos1 * C));
    cb.act3 = malloc(sizeof(float) * (size_t) (pos1 * C));
    /* im2col rows of the second convolution, the larger of the two */
    cb.cols = malloc(sizeof(float) * (size_t) CLEF_AUDIO_HALF(
                         CLEF_AUDIO_HALF(c->num_mel_bins)) * (size_t) w2
                     * 9 * (size_t) C);
    cb.flat = malloc(sizeof(float) * 13 * (size_t) C * (size_t) a->F);
    x = malloc(sizeof(float) * (size_t) (P * D));
    xn = malloc(sizeof(float) * (size_t) (P * D));
    qkv = malloc(sizeof(float) * (size_t) (P * 3 * D));
    o = malloc(sizeof(float) * (size_t) (P * D));
    mlp = malloc(sizeof(float) * TILE * (size_t) I);
    gemm = malloc(sizeof(float) * clef_cpu_linear_scratch_floats(kmax));
    scratch = malloc(sizeof(float) * per_worker
                     * (size_t) clef_cpu_pool_size(pool));
    blocks = malloc(sizeof(int64_t) * ((size_t) lay.n_windows + 1));
    if (cb.act1 == NULL || cb.act2 == NULL || cb.act3 == NULL
        || cb.cols == NULL || cb.flat == NULL || x == NULL || xn == NULL
        || qkv == NULL || o == NULL || mlp == NULL || gemm == NULL
        || scratch == NULL || blocks == NULL)
    {
        clef_error_fail(err, CLEF_E_NO_MEMORY,
                        "out of memory for the audio tower on %lld rows",
                        (long long) P);
        goto done;
    }

    /* the convolutions, one chunk at a time */
    for (k = 0; k < lay.n_chunks; k++) {
        chunk_forward(a, items[lay.chunks[k].item], &lay.chunks[k], &cb, gemm,
                      x);
    }

    for (l = 0; l < c->encoder_layers; l++) {
        y = &a->layers[l];
        clef_cpu_layernorm(pool, x, D, xn, D, P, (int) D, y->norm1_w,
                           y->norm1_b, LN_EPS);
        clef_cpu_linear(pool, xn, D, P, &y->qkv, qkv, 3 * D, 0.0f, gemm);
        clef_cpu_add_bias(pool, qkv, 3 * D, P, (int) (3 * D), y->qkv_b);
        clef_cpu_vision_attention(pool, qkv, 3 * D, o, D, lay.cu,
                                  lay.n_windows, c->encoder_attention_heads,
                                  a->hd, 1.0f / sqrtf((float) a->hd), scratch,
                                  per_worker, blocks);
        clef_cpu_linear(pool, o, D, P, &y->out, xn, D, 0.0f, gemm);
        clef_cpu_add_bias(pool, xn, D, P, (int) D, y->out_b);
        clef_cpu_add_rows(pool, x, xn, D, P, (int) D);

        clef_cpu_layernorm(pool, x, D, xn, D, P, (int) D, y->norm2_w,
                           y->norm2_b, LN_EPS);
        for (t0 = 0; t0 < P; t0 += TILE) {
            m = P - t0 < TILE ? P - t0 : TILE;
            clef_cpu_linear(pool, xn + t0 * D, D, m, &y->fc1, mlp, I, 0.0f,
                            gemm);
            clef_cpu_bias_gelu(pool, mlp, I, m, (int) I, y->fc1_b, 0);
            clef_cpu_linear(pool, mlp, I, m, &y->fc2, o + t0 * D, D, 0.0f,
                            gemm);
        }
        clef_cpu_add_bias(pool, o, D, P, (int) D, y->fc2_b);
        clef_cpu_add_rows(pool, x, o, D, P, (int) D);
        if (a->progress != NULL) {
            a->progress(a->progress_ctx);
        }
    }

    /* ln_post, proj1, GELU, proj2 */
    clef_cpu_layernorm(pool, x, D, xn, D, P, (int) D, a->post_w, a->post_b,
                       LN_EPS);
    clef_cpu_linear(pool, xn, D, P, &a->proj1, o, D, 0.0f, gemm);
    clef_cpu_bias_gelu(pool, o, D, P, (int) D, a->proj1_b, 0);
    clef_cpu_linear(pool, o, D, P, &a->proj2, features, O, 0.0f, gemm);
    clef_cpu_add_bias(pool, features, O, P, (int) O, a->proj2_b);
    rc = 0;

done:
    clef_audio_layout_free(&lay);
    free(cb.act1);
    free(cb.act2);
    free(cb.act3);
    free(cb.cols);
    free(cb.flat);
    free(x);
    free(xn);
    free(qkv);
    free(o);
    free(mlp);
    free(gemm);
    free(scratch);
    free(blocks);
    return rc;
}
