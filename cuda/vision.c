/*
 * The vision tower's place in a CUDA forward (see vision.h): the per-batch
 * metadata built on the host from the batch's images and videos
 * (vision_layout.h; a video is one temporal group a frame pair, attending
 * within itself, as an image is one) and uploaded with one copy, the
 * workspace, and the launch sequence
 *
 *   RGB bytes -> patch rows (bf16) --GEMM--> + bias + resampled position
 *   table (fp32 x)
 *   depth x [ LayerNorm -> qkv GEMM -> bias + 2D rotary
 *             -> bidirectional attention per group (attention.cu)
 *             -> proj GEMM -> x += . + bias
 *             LayerNorm -> fc1 GEMM -> bias + gelu(tanh) -> fc2 GEMM
 *             -> x += . + bias ]
 *   LayerNorm -> [P / 4][4 H] -> fc1 GEMM -> bias + gelu(erf) -> fc2 GEMM
 *   -> + bias over the image-pad tokens' embeddings
 *
 * Nothing here waits for the device except where a host buffer the device
 * may still read is about to be rewritten.  Batches with images run
 * eagerly, never as a CUDA graph (backend.c): their launch shapes depend
 * on the images' grids, which the graph key does not hold.
 */
#include <stdlib.h>
#include <string.h>

#include "backend/vision_layout.h"
#include "cuda_backend.h"
#include "tower.h"
#include "vision.h"

#define MAX_PATCHES  (1 << 24)
#define LN_EPS       1e-6f

static int
vision_open(clef_backend *b, void **state, clef_error *err)
{
    cuda_vision  *v = NULL;
    int           rc;

    rc = cuda_vision_weights_upload(b->model, clef_model_text_config(b->model),
                                    &v, err);
    *state = v;
    return rc;
}

static void
vision_close(void *state)
{
    cuda_vision  *v = state;

    cuda_stage_free(&v->stage);
    cuda_vision_weights_free(v);
}

/* Whether item m is this tower's (an image or a video). */
static int
visual(const clef_batch *batch, int m)
{
    const clef_media_item  *im = clef_batch_item(batch, m);

    return im != NULL && cuda_tower_takes(&cuda_vision_tower, im->kind);
}

/* ---- plan ----------------------------------------------------------------- */

static void
vplan_layout(const cuda_vision *v, cuda_vplan *p)
{
    size_t  o = 0, q = (size_t) (v->hd / 4);

    p->o_rgb = o;
    o = cuda_align256(o + (size_t) p->rgb_bytes);
    p->o_imeta = o;
    o = cuda_align256(o + (size_t) p->n_img * 4 * 8);
    p->o_inorm = o;
    o = cuda_align256(o + (size_t) p->n_img * 6 * 4);
    p->o_img = o;
    o = cuda_align256(o + (size_t) p->P * 4);
    p->o_src = o;
    o = cuda_align256(o + (size_t) p->P * 4);
    p->o_rows = o;
    o = cuda_align256(o + (size_t) p->P1 * v->row * 2);
    p->o_tap = o;
    o = cuda_align256(o + (size_t) p->P * 4 * 4);
    p->o_pw = o;
    o = cuda_align256(o + (size_t) p->P * 4 * 4);
    p->o_rc = o;
    o = cuda_align256(o + (size_t) p->P * 2 * 4);
    p->o_cos = o;
    o = cuda_align256(o + (size_t) p->n_pos * q * 4);
    p->o_sin = o;
    o = cuda_align256(o + (size_t) p->n_pos * q * 4);
    p->o_tiles = o;
    o = cuda_align256(o + (size_t) p->n_tiles * 3 * 4);
    p->o_dst = o;
    o = cuda_align256(o + (size_t) p->R * 4);
    p->o_mpos = o;
    o = cuda_align256(o + (size_t) p->T * 3 * 4);
    p->bytes = o;
}

/* Carves the workspace for P patches; with a NULL base it only sizes. */
static size_t
vws_layout(cuda_vision *v, int64_t patches, char *base)
{
    size_t  P = (size_t) patches, R = P / (size_t) v->unit + 1, off = 0;
    size_t  H = (size_t) v->H, wide = (size_t) (v->I > v->H ? v->I : v->H);

#define CARVE(field, type, bytes)                                           \
    v->field = base != NULL ? (type *) (base + off) : NULL;                 \
    off = cuda_align256(off + (bytes))
    CARVE(rows, clef_bf16, P * (size_t) v->row * 2);
    CARVE(x, float, P * H * 4);
    CARVE(xn, clef_bf16, P * H * 2);
    CARVE(qkv, clef_bf16, P * 3 * H * 2);
    CARVE(o, clef_bf16, P * H * 2);
    CARVE(y, clef_bf16, P * H * 2);
    CARVE(mlp, clef_bf16, P * wide * 2);
    CARVE(feat, clef_bf16, R * (size_t) v->out * 2);
    CARVE(ds_feat, clef_bf16, (size_t) v->n_ds * R * (size_t) v->out * 2);
#undef CARVE
    return off;
}

static int
ensure_vws(cuda_vision *v, int64_t P, clef_error *err)
{
    if (cuda_stage_ws(&v->stage, vws_layout(v, P, NULL), "vision", P,
                      "patches", err) != 0)
    {
        return -1;
    }
    vws_layout(v, P, v->stage.ws);
    return 0;
}

/* The staging buffer's contents for the batch (sizes already laid out):
 * per temporal group (an image, or one frame pair of a video) where its
 * frames are, its normalisation, and per patch its group, place and
 * position taps. */
static int
vplan_fill(cuda_vision *v, const clef_batch *batch, clef_error *err)
{
    cuda_vplan        *p = &v->plan;
    unsigned char     *s = v->stage.hstage;
    uint16_t          *rows = (uint16_t *) (s + p->o_rows);
    int32_t           *tap = (int32_t *) (s + p->o_tap);
    float             *pw = (float *) (s + p->o_pw);
    int32_t           *rc = (int32_t *) (s + p->o_rc);
    int64_t           *imeta = (int64_t *) (s + p->o_imeta);
    float             *inorm = (float *) (s + p->o_inorm);
    int32_t           *img = (int32_t *) (s + p->o_img);
    int32_t           *src = (int32_t *) (s + p->o_src);
    const clef_media_item  *im;
    const char             *why = NULL;
    int64_t                *cu, g = 0, lp, n, i, rgb = 0, staged = 0, frame;
    int64_t                 first, frames;
    float                  *row;
    int                     m, c, k = 0, t;

    cu = malloc(sizeof(int64_t) * ((size_t) p->n_img + 1));
    row = malloc(sizeof(float) * (size_t) v->row);
    if (cu == NULL || row == NULL) {
        free(cu);
        free(row);
        return clef_error_fail(err, CLEF_E_NO_MEMORY, "out of memory");
    }
    cu[0] = 0;
    for (m = 0; m < batch->n_items; m++) {
        if (!visual(batch, m)) {
            continue;                   /* another tower's */
        }
        im = clef_batch_item(batch, m);
        n = (int64_t) im->grid_h * im->grid_w;
        /* RGB frames go up as they are (a quarter of the bf16 rows) and
         * become patch rows on the device; pixel values given as floats
         * (the tests' reference pixels) become rows here */
        frame = n * im->patch * im->patch * 3;
        for (t = 0; t < im->grid_t; t++, k++) {
            /* the group's first frame and the frames there are from it:
             * slot s shows frame first + min(s, there - 1), as
             * clef_image_patch_row() reads them (an image's one frame in
             * every slot, an odd count's last pair its last frame twice) */
            frames = im->frames > 0 ? im->frames : 1;
            first = (int64_t) t * im->temporal;
            first = first < frames ? first : frames - 1;
            imeta[4 * k] = rgb + first * frame;
            imeta[4 * k + 1] = frame;
            imeta[4 * k + 2] = frames - first;
            imeta[4 * k + 3] = (int64_t) im->grid_w * im->patch;
            for (c = 0; c < 3; c++) {
                inorm[6 * k + c] = im->mean[c];
                inorm[6 * k + 3 + c] = im->std[c];
            }
            for (lp = 0; lp < n; lp++, g++) {
                img[g] = k;
                src[g] = -1;
                if (im->values != NULL) {
                    clef_image_patch_row(im, (int64_t) t * n + lp, row);
                    for (i = 0; i < v->row; i++) {
                        rows[staged * v->row + i] = clef_f32_to_bf16(row[i]);
                    }
                    src[g] = (int32_t) staged++;
                }
                clef_vision_patch_rc(im, lp, &rc[2 * g], &rc[2 * g + 1]);
                clef_vision_pos_taps(rc[2 * g], rc[2 * g + 1], im->grid_h,
                                     im->grid_w, v->side, &tap[4 * g],
                                     &pw[4 * g]);
            }
            cu[k + 1] = cu[k] + n;
        }
        if (im->values == NULL) {
            memcpy(s + p->o_rgb + rgb, im->bytes,
                   (size_t) (frame * (im->frames > 0 ? im->frames : 1)));
            rgb += frame * (im->frames > 0 ? im->frames : 1);
        }
    }
    clef_vision_rotary_table(v->hd, v->theta, p->n_pos,
                             (float *) (s + p->o_cos), (float *) (s + p->o_sin));
    clef_vision_attn_tiles(cu, p->n_img, CLEF_K_ATTN_TILE,
                           (int32_t *) (s + p->o_tiles));
    free(cu);
    free(row);
    if (clef_vision_scatter_rows(batch, (int32_t *) (s + p->o_dst), p->R, &why) != 0) {
        return clef_error_fail(err, CLEF_E_INTERNAL, "cuda backend: %s", why);
    }
    memcpy(s + p->o_mpos, batch->positions, sizeof(int32_t) * 3 * (size_t) p->T);
    return 0;
}

/* The tower's prepare hook (tower.h), for a batch with images or videos:
 * a text batch, or one with audio clips alone (their positions count on
 * as text's, mrope.c), never comes here and runs the text rope. */
static int
vision_prepare(clef_backend *b, void *state, const clef_batch *batch,
    clef_error *err)
{
    cuda_vision            *v = state;
    cuda_vplan             *p;
    const clef_media_item  *im;
    int64_t                 P = 0, side = 1, P1 = 0, rgb = 0, n, groups = 0;
    int64_t                 tiles = 0;
    int                     m;

    if (batch->positions == NULL) {
        return clef_error_fail(err, CLEF_E_INTERNAL, "a batch with media "
                               "needs its media (clef_batch_set_media)");
    }
    for (m = 0; m < batch->n_items; m++) {
        if (!visual(batch, m)) {
            continue;
        }
        im = clef_batch_item(batch, m);
        if (im == NULL
            || (im->kind != CLEF_MEDIA_IMAGE && im->kind != CLEF_MEDIA_VIDEO)
            || (im->kind == CLEF_MEDIA_IMAGE && im->grid_t != 1)
            || im->grid_t < 1 || clef_image_row_size(im) != v->row
            || im->patch != v->ps || im->temporal != v->temporal
            || im->merge != v->merge || im->grid_h < v->merge || im->grid_w < v->merge
            || im->grid_h % v->merge != 0 || im->grid_w % v->merge != 0
            || (im->bytes == NULL && im->values == NULL))
        {
            return clef_error_fail(err, CLEF_E_INTERNAL,
                "media item %d was prepared for another tower", m);
        }
        n = (int64_t) im->grid_h * im->grid_w;
        P += n * im->grid_t;
        groups += im->grid_t;
        tiles += im->grid_t * ((n + CLEF_K_ATTN_TILE - 1) / CLEF_K_ATTN_TILE);
        if (im->values != NULL) {
            P1 += n * im->grid_t;
        } else {
            rgb += n * im->patch * im->patch * 3
                   * (im->frames > 0 ? im->frames : 1);
        }
        side = im->grid_h > side ? im->grid_h : side;
        side = im->grid_w > side ? im->grid_w : side;
        if (P > MAX_PATCHES) {
            return clef_error_fail(err, CLEF_E_INTERNAL,
                "cuda backend: a batch holds at most %d image or video "
                "patches", MAX_PATCHES);
        }
    }

    /* the previous forward's copy out of the staging buffer has ended (the
     * forward waits for its stream) unless it failed half-way: wait */
    if (cuda_check(cudaStreamSynchronize(b->stream), "vision staging", err) != 0) {
        return -1;
    }
    p = &v->plan;
    memset(p, 0, sizeof(*p));
    p->P = P;
    p->P1 = P1;
    p->rgb_bytes = rgb;
    p->n_img = (int) groups;
    p->R = P / v->unit;
    p->T = clef_batch_tokens(batch);
    p->n_pos = (int) side;
    p->n_tiles = tiles;
    vplan_layout(v, p);
    if (cuda_stage_grow(&v->stage, p->bytes, "vision", err) != 0
        || ensure_vws(v, P, err) != 0 || vplan_fill(v, batch, err) != 0)
    {
        return -1;
    }
    return cuda_stage_upload(&v->stage, p->bytes, b->stream, "vision", err);
}

/* The batch's M-RoPE positions and the backbone's sections. */
static void
vision_rope(const void *state, clef_k_rope_args *r)
{
    const cuda_vision  *v = state;

    r->mpos = (const int32_t *) (v->stage.dmeta + v->plan.o_mpos);
    r->msec[0] = v->msec[0];
    r->msec[1] = v->msec[1];
    r->msec[2] = v->msec[2];
}

/* ---- forward -------------------------------------------------------------- */

/* The tower over the prepared batch's images into v->feat (merged rows,
 * before the last bias). */
static int
vision_run(clef_backend *b, cuda_vision *v, clef_error *err)
{
    const cuda_vplan   *p = &v->plan;
    const unsigned char *d = v->stage.dmeta;
    cudaStream_t        s = b->stream;
    const int           P = (int) p->P, R = (int) p->R, H = v->H;
    clef_k_patch_args   pa;
    clef_k_attn_args    a;
    int                 l, j;

    if (P == 0) {
        return 0;
    }
    pa.rgb = d + p->o_rgb;
    pa.imeta = (const int64_t *) (d + p->o_imeta);
    pa.inorm = (const float *) (d + p->o_inorm);
    pa.img = (const int32_t *) (d + p->o_img);
    pa.rc = (const int32_t *) (d + p->o_rc);
    pa.src = (const int32_t *) (d + p->o_src);
    pa.staged = (const clef_bf16 *) (d + p->o_rows);
    pa.rows = v->rows;
    pa.P = P;
    pa.ps = v->ps;
    pa.temporal = v->temporal;
    CK(clef_k_vpatchify(&pa, s), "vision patch rows");
    TGEMM(P, H, v->row, v->patch_w, v->rows, v->y);
    CK(clef_k_vpos_embed(v->y, v->patch_b, v->pos, (const int32_t *) (d + p->o_tap),
                         (const float *) (d + p->o_pw), v->x, P, H, s),
       "vision position embedding");

    memset(&a, 0, sizeof(a));
    a.q = v->qkv;
    a.ldq = 3 * H;
    a.q_hs = v->hd;
    a.k = v->qkv + H;
    a.ldk = 3 * H;
    a.k_hs = v->hd;
    a.v = v->qkv + 2 * H;
    a.ldv = 3 * H;
    a.v_hs = v->hd;
    a.gate = NULL;
    a.out = v->o;
    a.ldo = H;
    a.o_hs = v->hd;
    a.tiles = (const int32_t *) (d + p->o_tiles);
    a.n_tiles = (int) p->n_tiles;
    a.Hq = v->heads;
    a.Hkv = v->heads;
    a.hd = v->hd;

    for (l = 0; l < v->depth; l++) {
        const cuda_vblock  *bl = &v->blocks[l];

        CK(clef_k_vlayernorm(v->x, bl->n1_w, bl->n1_b, v->xn, P, H, LN_EPS, s),
           "vision norm1");
        TGEMM(P, 3 * H, H, bl->qkv, v->xn, v->qkv);
        CK(clef_k_vqkv_rotary(v->qkv, bl->qkv_b, (const int32_t *) (d + p->o_rc),
                              (const float *) (d + p->o_cos),
                              (const float *) (d + p->o_sin), P, v->heads, v->hd, s),
           "vision rotary");
        CK(clef_k_attention_bidir(&a, s), "vision attention");
        TGEMM(P, H, H, bl->proj, v->o, v->y);
        CK(clef_k_vresidual(v->x, v->y, bl->proj_b, P, H, s), "vision residual");

        CK(clef_k_vlayernorm(v->x, bl->n2_w, bl->n2_b, v->xn, P, H, LN_EPS, s),
           "vision norm2");
        TGEMM(P, v->I, H, bl->fc1, v->xn, v->mlp);
        CK(clef_k_vbias_gelu(v->mlp, bl->fc1_b, P, v->I, 1, s), "vision gelu");
        TGEMM(P, H, v->I, bl->fc2, v->mlp, v->y);
        CK(clef_k_vresidual(v->x, v->y, bl->fc2_b, P, H, s), "vision residual");

        /* DeepStack: this block's output through each merger that reads
         * it, its LayerNorm over a merged row's 4H (the rows as they lie) */
        for (j = 0; j < v->n_ds; j++) {
            const cuda_vmerger  *g = &v->ds[j];

            if (v->ds_block[j] != l) {
                continue;
            }
            CK(clef_k_vlayernorm(v->x, g->n_w, g->n_b, v->xn, R, v->M, LN_EPS,
                                 s), "deepstack norm");
            TGEMM(R, v->M, v->M, g->m1, v->xn, v->mlp);
            CK(clef_k_vbias_gelu(v->mlp, g->m1_b, R, v->M, 0, s),
               "deepstack gelu");
            TGEMM(R, v->out, v->M, g->m2, v->mlp,
                  v->ds_feat + (size_t) j * R * v->out);
        }
    }

    /* the merger: a 2 x 2 block's patches are consecutive rows, so the
     * normed [P][H] is the [R][4H] input as it lies */
    CK(clef_k_vlayernorm(v->x, v->mn_w, v->mn_b, v->xn, P, H, LN_EPS, s),
       "vision merger norm");
    TGEMM(R, v->M, v->M, v->m1, v->xn, v->mlp);
    CK(clef_k_vbias_gelu(v->mlp, v->m1_b, R, v->M, 0, s), "vision merger gelu");
    TGEMM(R, v->out, v->M, v->m2, v->mlp, v->feat);
    return 0;
}

/* The embed hook (tower.h): the tower, its merged rows over the
 * image-pad tokens. */
static int
vision_embed(clef_backend *b, void *state, cuda_tower_out *out,
    clef_error *err)
{
    cuda_vision  *v = state;

    if (vision_run(b, v, err) != 0) {
        return -1;
    }
    out->feat = v->feat;
    out->bias = v->m2_b;
    out->dst = (const int32_t *) (v->stage.dmeta + v->plan.o_dst);
    out->rows = v->plan.P > 0 ? v->plan.R : 0;
    out->width = v->out;
    return 0;
}

/* The layer hook: after decoder layer l, DeepStack level l's features
 * added over the image-pad tokens (nothing past the last level). */
static int
vision_deepstack(clef_backend *b, void *state, int l, clef_error *err)
{
    cuda_vision  *v = state;

    if (v->plan.P == 0 || l >= v->n_ds) {
        return 0;
    }
    return cuda_check(clef_k_vscatter_add(
                          v->ds_feat + (size_t) l * v->plan.R * v->out,
                          v->ds[l].m2_b,
                          (const int32_t *) (v->stage.dmeta + v->plan.o_dst),
                          b->ws.hid, (int) v->plan.R, v->out, b->stream),
                      "deepstack features", err);
}

const cuda_tower_ops  cuda_vision_tower = {
    "vision",
    CLEF_MEDIA_BIT(CLEF_MEDIA_IMAGE) | CLEF_MEDIA_BIT(CLEF_MEDIA_VIDEO),
    vision_open,
    vision_prepare,
    vision_embed,
    vision_close,
    vision_rope,
    vision_deepstack
};
