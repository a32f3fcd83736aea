/*
 * The audio tower's place in a CUDA forward (see audio.h): the batch's
 * clips laid out on the host (backend/audio_layout.h: chunks padded to
 * their record's longest, attention windows), their features and the
 * metadata uploaded with one copy, the workspace, and the launches.
 *
 * The convolutions run over slabs of at most SLAB chunks, which bounds
 * their workspace (the second convolution's im2col rows are 9 C values a
 * position) whatever the clips' length; everything after conv_out runs
 * over all rows at once.  Nothing here waits for the device except where
 * a host buffer the device may still read is about to be rewritten.
 */
#include <stdlib.h>
#include <string.h>

#include "audio.h"
#include "backend/audio_layout.h"
#include "backend/vision_layout.h"
#include "cuda_backend.h"
#include "tower.h"

#define SLAB    16          /* chunks per pass of the convolutions */
#define LN_EPS  1e-5f       /* nn.LayerNorm's default */
#define HALF(n) (((n) - 1) / 2 + 1)

static int
audio_open(clef_backend *b, void **state, clef_error *err)
{
    cuda_audio  *a = NULL;
    int          rc;

    rc = cuda_audio_weights_upload(b->model, clef_model_text_config(b->model),
                                   &a, err);
    *state = a;
    return rc;
}

static void
audio_close(void *state)
{
    cuda_audio  *a = state;

    cuda_stage_free(&a->stage);
    free(a->chunk_row);
    cuda_audio_weights_free(a);
}

/* ---- plan ----------------------------------------------------------------- */

static void
aplan_layout(const cuda_audio *a, cuda_aplan *p)
{
    size_t  o = 0;

    p->o_feat = o;
    o = cuda_align256(o + (size_t) p->nc * a->mels * p->w0 * 4);
    p->o_cw = o;
    o = cuda_align256(o + (size_t) p->nc * 4);
    p->o_rowmeta = o;
    o = cuda_align256(o + (size_t) p->P * 2 * 4);
    p->o_tiles = o;
    o = cuda_align256(o + (size_t) p->n_tiles * 3 * 4);
    p->o_dst = o;
    o = cuda_align256(o + (size_t) p->P * 4);
    p->bytes = o;
}

/* Carves the workspace for the plan's rows and widest chunk (slabs of at
 * most SLAB chunks); with a NULL base it only sizes. */
static size_t
aws_layout(cuda_audio *a, const cuda_aplan *p, char *base)
{
    size_t  P = (size_t) p->P, D = (size_t) a->D, C = (size_t) a->C, off = 0;
    size_t  nc = (size_t) (p->nc < SLAB ? p->nc : SLAB);
    size_t  h1 = (size_t) HALF(a->mels), w1 = (size_t) HALF(p->w0);
    size_t  h2 = HALF(h1), w2 = HALF(w1), h3 = HALF(h2), w3 = HALF(w2);
    size_t  wide = (size_t) (a->I > a->D ? a->I : a->D);

#define CARVE(field, type, bytes)                                           \
    a->field = base != NULL ? (type *) (base + off) : NULL;                 \
    off = cuda_align256(off + (bytes))
    CARVE(act1, clef_bf16, nc * h1 * w1 * C * 2);
    CARVE(act2, clef_bf16, nc * h2 * w2 * C * 2);
    CARVE(act3, clef_bf16, nc * h3 * w3 * C * 2);
    CARVE(cols, clef_bf16, nc * h2 * w2 * 9 * C * 2);
    CARVE(flat, clef_bf16, P * C * (size_t) a->F * 2);
    CARVE(x, float, P * D * 4);
    CARVE(xn, clef_bf16, P * D * 2);
    CARVE(qkv, clef_bf16, P * 3 * D * 2);
    CARVE(o, clef_bf16, P * D * 2);
    CARVE(y, clef_bf16, P * D * 2);
    CARVE(mlp, clef_bf16, P * wide * 2);
    CARVE(feat, clef_bf16, P * (size_t) a->O * 2);
#undef CARVE
    return off;
}

static int
ensure_aws(cuda_audio *a, const cuda_aplan *p, clef_error *err)
{
    if (cuda_stage_ws(&a->stage, aws_layout(a, p, NULL), "audio", p->P,
                      "rows", err) != 0)
    {
        return -1;
    }
    aws_layout(a, p, a->stage.ws);
    return 0;
}

/* The staging buffer for the batch: each chunk's frames (zeros after, up
 * to the widest), its padded width, each row's chunk and step, the
 * attention tiles of the windows, each row's token. */
static int
aplan_fill(cuda_audio *a, const clef_batch *batch,
    const clef_media_item *const *items, const clef_audio_layout *l,
    clef_error *err)
{
    cuda_aplan             *p = &a->plan;
    unsigned char          *s = a->stage.hstage;
    float                  *feat = (float *) (s + p->o_feat);
    int32_t                *cw = (int32_t *) (s + p->o_cw);
    int32_t                *rm = (int32_t *) (s + p->o_rowmeta);
    const clef_audio_chunk *ch;
    const clef_media_item  *it;
    const char             *why = NULL;
    float                  *dst;
    int64_t                 t;
    int                     k, h;

    for (k = 0; k < l->n_chunks; k++) {
        ch = &l->chunks[k];
        it = items[ch->item];
        for (h = 0; h < a->mels; h++) {
            dst = feat + ((int64_t) k * a->mels + h) * p->w0;
            memcpy(dst, it->values + (int64_t) h * it->grid_w + ch->first,
                   sizeof(float) * (size_t) ch->frames);
            memset(dst + ch->frames, 0,
                   sizeof(float) * (size_t) (p->w0 - ch->frames));
        }
        cw[k] = ch->width;
        for (t = 0; t < ch->rows; t++) {
            rm[2 * (ch->row + t)] = k;
            rm[2 * (ch->row + t) + 1] = (int32_t) t;
        }
        a->chunk_row[k] = ch->row;
    }
    a->chunk_row[l->n_chunks] = l->rows;
    clef_vision_attn_tiles(l->cu, l->n_windows, CLEF_K_ATTN_TILE,
                           (int32_t *) (s + p->o_tiles));
    if (clef_audio_scatter_rows(batch, (int32_t *) (s + p->o_dst), p->P, &why)
        != 0)
    {
        return clef_error_fail(err, CLEF_E_INTERNAL, "cuda backend: %s", why);
    }
    return 0;
}

/* The prepare hook (tower.h), for a batch with audio clips. */
static int
audio_prepare(clef_backend *b, void *state, const clef_batch *batch,
    clef_error *err)
{
    cuda_audio              *a = state;
    cuda_aplan              *p;
    const clef_media_item  **items;
    const clef_media_item   *it;
    clef_audio_layout        lay;
    const char              *why = NULL;
    int32_t                 *group;
    int64_t                 *rows;
    int                      m, r, rm, n = 0, rc = -1;

    for (m = 0; m < batch->n_items; m++) {
        n += cuda_tower_takes(&cuda_audio_tower,
                              clef_batch_item(batch, m)->kind);
    }
    items = calloc((size_t) n, sizeof(*items));
    group = calloc((size_t) n, sizeof(*group));
    if (items == NULL || group == NULL) {
        free(items);
        free(group);
        return clef_error_fail(err, CLEF_E_NO_MEMORY, "out of memory");
    }
    /* the clips in batch order, each with its record: a record's clips
     * are padded alike (audio_layout.h) */
    for (m = 0, r = 0, rm = 0, n = 0; m < batch->n_items; m++) {
        while (r < batch->n_records && m - rm >= batch->records[r]->n_media) {
            rm += batch->records[r++]->n_media;
        }
        it = clef_batch_item(batch, m);
        if (cuda_tower_takes(&cuda_audio_tower, it->kind)) {
            group[n] = r;
            items[n++] = it;
        }
    }
    if (clef_audio_layout_build(&a->cfg, items, group, n, &lay, &why) != 0) {
        free(items);
        free(group);
        return clef_error_fail(err, strcmp(why, "out of memory") == 0
                                    ? CLEF_E_NO_MEMORY : CLEF_E_INTERNAL,
                               "cuda backend: %s", why);
    }

    /* the previous forward's copy out of the staging buffer has ended (the
     * forward waits for its stream) unless it failed half-way: wait */
    if (cuda_check(cudaStreamSynchronize(b->stream), "audio staging", err)
        != 0)
    {
        goto done;
    }
    p = &a->plan;
    memset(p, 0, sizeof(*p));
    p->nc = lay.n_chunks;
    p->w0 = lay.widest;
    p->P = lay.rows;
    p->n_tiles = clef_vision_attn_tiles(lay.cu, lay.n_windows,
                                        CLEF_K_ATTN_TILE, NULL);
    aplan_layout(a, p);
    rows = realloc(a->chunk_row, sizeof(int64_t) * ((size_t) p->nc + 1));
    if (rows == NULL) {
        clef_error_fail(err, CLEF_E_NO_MEMORY, "out of memory");
        goto done;
    }
    a->chunk_row = rows;
    if (cuda_stage_grow(&a->stage, p->bytes, "audio", err) != 0
        || ensure_aws(a, p, err) != 0
        || aplan_fill(a, batch, items, &lay, err) != 0
        || cuda_stage_upload(&a->stage, p->bytes, b->stream, "audio", err) != 0)
    {
        goto done;
    }
    rc = 0;

done:
    clef_audio_layout_free(&lay);
    free(items);
    free(group);
    return rc;
}

/* ---- forward -------------------------------------------------------------- */

/* The tower over the prepared batch's clips into a->feat (before the last
 * bias). */
static int
audio_run(clef_backend *b, cuda_audio *a, clef_error *err)
{
    const cuda_aplan     *p = &a->plan;
    const unsigned char  *d = a->stage.dmeta;
    const float          *feat = (const float *) (d + p->o_feat);
    const int32_t        *cw = (const int32_t *) (d + p->o_cw);
    const int32_t        *rm = (const int32_t *) (d + p->o_rowmeta);
    cudaStream_t          s = b->stream;
    const int             P = (int) p->P, D = a->D, C = a->C, F = a->F;
    const int             h1 = HALF(a->mels), w1 = HALF(p->w0);
    const int             h2 = HALF(h1), w2 = HALF(w1), w3 = HALF(w2);
    clef_k_attn_args      at;
    int                   c0, n, l;
    int64_t               r0, r1;

    if (P == 0) {
        return 0;
    }
    /* the convolutions, SLAB chunks at a time, their kept steps
     * flattened into conv_out's rows */
    for (c0 = 0; c0 < p->nc; c0 += SLAB) {
        n = p->nc - c0 < SLAB ? p->nc - c0 : SLAB;
        CK(clef_k_aconv1(feat + (int64_t) c0 * a->mels * p->w0, cw + c0,
                         a->conv1_w, a->conv1_b, a->act1, n, a->mels, p->w0,
                         C, s), "audio conv1");
        CK(clef_k_aim2col(a->act1, cw + c0, 1, n, h1, w1, C, a->cols, s),
           "audio im2col 2");
        TGEMM(n * h2 * w2, C, 9 * C, a->conv2, a->cols, a->act2);
        CK(clef_k_vbias_gelu(a->act2, a->conv2_b, n * h2 * w2, C, 0, s),
           "audio conv2 gelu");
        CK(clef_k_aim2col(a->act2, cw + c0, 2, n, h2, w2, C, a->cols, s),
           "audio im2col 3");
        TGEMM(n * F * w3, C, 9 * C, a->conv3, a->cols, a->act3);
        CK(clef_k_vbias_gelu(a->act3, a->conv3_b, n * F * w3, C, 0, s),
           "audio conv3 gelu");
        r0 = a->chunk_row[c0];
        r1 = a->chunk_row[c0 + n];
        CK(clef_k_aflatten(a->act3, rm + 2 * r0, (int) (r1 - r0), c0, F, w3,
                           C, a->flat + r0 * C * F, s), "audio flatten");
    }
    TGEMM(P, D, C * F, a->conv_out, a->flat, a->y);
    CK(clef_k_apos(a->y, a->pos, rm, a->x, P, D, s), "audio positions");

    memset(&at, 0, sizeof(at));
    at.q = a->qkv;
    at.ldq = 3 * D;
    at.q_hs = a->hd;
    at.k = a->qkv + D;
    at.ldk = 3 * D;
    at.k_hs = a->hd;
    at.v = a->qkv + 2 * D;
    at.ldv = 3 * D;
    at.v_hs = a->hd;
    at.gate = NULL;
    at.out = a->o;
    at.ldo = D;
    at.o_hs = a->hd;
    at.tiles = (const int32_t *) (d + p->o_tiles);
    at.n_tiles = (int) p->n_tiles;
    at.Hq = a->heads;
    at.Hkv = a->heads;
    at.hd = a->hd;

    for (l = 0; l < a->layers; l++) {
        const cuda_alayer  *y = &a->L[l];

        CK(clef_k_vlayernorm(a->x, y->n1_w, y->n1_b, a->xn, P, D, LN_EPS, s),
           "audio norm1");
        TGEMM(P, 3 * D, D, y->qkv, a->xn, a->qkv);
        CK(clef_k_abias(a->qkv, y->qkv_b, P, 3 * D, s), "audio qkv bias");
        CK(clef_k_attention_bidir(&at, s), "audio attention");
        TGEMM(P, D, D, y->out, a->o, a->y);
        CK(clef_k_vresidual(a->x, a->y, y->out_b, P, D, s), "audio residual");

        CK(clef_k_vlayernorm(a->x, y->n2_w, y->n2_b, a->xn, P, D, LN_EPS, s),
           "audio norm2");
        TGEMM(P, a->I, D, y->fc1, a->xn, a->mlp);
        CK(clef_k_vbias_gelu(a->mlp, y->fc1_b, P, a->I, 0, s), "audio gelu");
        TGEMM(P, D, a->I, y->fc2, a->mlp, a->y);
        CK(clef_k_vresidual(a->x, a->y, y->fc2_b, P, D, s), "audio residual");
    }

    CK(clef_k_vlayernorm(a->x, a->post_w, a->post_b, a->xn, P, D, LN_EPS, s),
       "audio ln_post");
    TGEMM(P, D, D, a->proj1, a->xn, a->mlp);
    CK(clef_k_vbias_gelu(a->mlp, a->proj1_b, P, D, 0, s), "audio proj1 gelu");
    TGEMM(P, a->O, D, a->proj2, a->mlp, a->feat);
    return 0;
}

/* The embed hook (tower.h): the tower, its rows over the audio-pad
 * tokens. */
static int
audio_embed(clef_backend *b, void *state, cuda_tower_out *out,
    clef_error *err)
{
    cuda_audio  *a = state;

    if (audio_run(b, a, err) != 0) {
        return -1;
    }
    out->feat = a->feat;
    out->bias = a->proj2_b;
    out->dst = (const int32_t *) (a->stage.dmeta + a->plan.o_dst);
    out->rows = a->plan.P;
    out->width = a->O;
    return 0;
}

const cuda_tower_ops  cuda_audio_tower = {
    "audio",
    CLEF_MEDIA_BIT(CLEF_MEDIA_AUDIO),
    audio_open,
    audio_prepare,
    audio_embed,
    audio_close,
    NULL,                       /* audio positions count on as text's */
    NULL                        /* no DeepStack */
};
