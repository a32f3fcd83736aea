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
#include "vision.h"

#define MAX_PATCHES  (1 << 24)
#define LN_EPS       1e-6f

static size_t
align256(size_t v)
{
    return (v + 255) / 256 * 256;
}

int
cuda_vision_open(clef_backend *b, clef_error *err)
{
    return cuda_vision_weights_upload(b->model, clef_model_text_config(b->model),
                                      &b->vision, err);
}

void
cuda_vision_close(clef_backend *b)
{
    cuda_vision  *v = b->vision;

    if (v == NULL) {
        return;
    }
    if (v->ws_mem != NULL) {
        cudaFree(v->ws_mem);
    }
    if (v->dmeta != NULL) {
        cudaFree(v->dmeta);
    }
    if (v->hstage != NULL) {
        cudaFreeHost(v->hstage);
    }
    cuda_vision_weights_free(v);
    b->vision = NULL;
}

/* ---- plan ----------------------------------------------------------------- */

static void
vplan_layout(const cuda_vision *v, cuda_vplan *p)
{
    size_t  o = 0, q = (size_t) (v->hd / 4);

    p->o_rgb = o;
    o = align256(o + (size_t) p->rgb_bytes);
    p->o_imeta = o;
    o = align256(o + (size_t) p->n_img * 4 * 8);
    p->o_inorm = o;
    o = align256(o + (size_t) p->n_img * 6 * 4);
    p->o_img = o;
    o = align256(o + (size_t) p->P * 4);
    p->o_src = o;
    o = align256(o + (size_t) p->P * 4);
    p->o_rows = o;
    o = align256(o + (size_t) p->P1 * v->row * 2);
    p->o_tap = o;
    o = align256(o + (size_t) p->P * 4 * 4);
    p->o_pw = o;
    o = align256(o + (size_t) p->P * 4 * 4);
    p->o_rc = o;
    o = align256(o + (size_t) p->P * 2 * 4);
    p->o_cos = o;
    o = align256(o + (size_t) p->n_pos * q * 4);
    p->o_sin = o;
    o = align256(o + (size_t) p->n_pos * q * 4);
    p->o_tiles = o;
    o = align256(o + (size_t) p->n_tiles * 3 * 4);
    p->o_dst = o;
    o = align256(o + (size_t) p->R * 4);
    p->o_mpos = o;
    o = align256(o + (size_t) p->T * 3 * 4);
    p->bytes = o;
}

static int
grow_stage(cuda_vision *v, size_t bytes, clef_error *err)
{
    cudaError_t  e;
    size_t       cap = bytes + bytes / 4 + 4096;

    if (bytes > v->stage_cap) {
        if (v->hstage != NULL) {
            cudaFreeHost(v->hstage);
            v->hstage = NULL;
            v->stage_cap = 0;
        }
        e = cudaHostAlloc((void **) &v->hstage, cap, cudaHostAllocDefault);
        if (e != cudaSuccess) {
            v->hstage = NULL;
            return cuda_check(e, "vision staging", err);
        }
        v->stage_cap = cap;
    }
    if (bytes > v->dmeta_cap) {
        if (v->dmeta != NULL) {
            cudaFree(v->dmeta);
            v->dmeta = NULL;
            v->dmeta_cap = 0;
        }
        e = cudaMalloc((void **) &v->dmeta, cap);
        if (e != cudaSuccess) {
            v->dmeta = NULL;
            return cuda_check(e, "vision metadata", err);
        }
        v->dmeta_cap = cap;
    }
    return 0;
}

/* Carves the workspace for cap_P patches; with a NULL base it only sizes. */
static size_t
vws_layout(cuda_vision *v, char *base)
{
    size_t  P = (size_t) v->cap_P, R = P / (size_t) v->unit + 1, off = 0;
    size_t  H = (size_t) v->H, wide = (size_t) (v->I > v->H ? v->I : v->H);

#define CARVE(field, type, bytes)                                           \
    v->field = base != NULL ? (type *) (base + off) : NULL;                 \
    off = align256(off + (bytes))
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
    cudaError_t  e;
    size_t       bytes;

    if (v->ws_mem != NULL && P <= v->cap_P) {
        return 0;
    }
    if (v->ws_mem != NULL) {
        cudaFree(v->ws_mem);
        v->ws_mem = NULL;
    }
    v->cap_P = P + P / 4 + 256;
    bytes = vws_layout(v, NULL);
    e = cudaMalloc(&v->ws_mem, bytes);
    if (e != cudaSuccess) {
        v->ws_mem = NULL;
        v->cap_P = 0;
        return clef_error_fail(err, CLEF_E_NO_MEMORY,
            "vision workspace of %zu bytes for %lld patches: %s", bytes,
            (long long) P, cudaGetErrorString(e));
    }
    vws_layout(v, v->ws_mem);
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
    unsigned char     *s = v->hstage;
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
        im = clef_batch_item(batch, m);
        if (im->kind == CLEF_MEDIA_AUDIO) {
            continue;                   /* audio.c's */
        }
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

/* Whether item m is the vision tower's (an image or a video; audio clips
 * have a tower of their own, audio.c). */
static int
visual(const clef_batch *batch, int m)
{
    const clef_media_item  *im = clef_batch_item(batch, m);

    return im == NULL || im->kind != CLEF_MEDIA_AUDIO;
}

/* The error of a batch with media for a model without a tower, in the
 * words of the first visual item's kind. */
static int
no_tower(const clef_batch *batch, clef_error *err)
{
    const clef_media_item  *im = NULL;
    int                     m;

    for (m = 0; m < batch->n_items && im == NULL; m++) {
        im = visual(batch, m) ? clef_batch_item(batch, m) : NULL;
    }

    if (im != NULL && im->kind == CLEF_MEDIA_VIDEO) {
        return clef_error_set(err, 400, "videos_unsupported", NULL,
                              "This model does not accept videos.");
    }
    return clef_error_set(err, 400, "images_unsupported", NULL,
                          "This model does not accept images.");
}

int
cuda_vision_prepare(clef_backend *b, const clef_batch *batch, clef_error *err)
{
    cuda_vision            *v = b->vision;
    cuda_vplan             *p;
    const clef_media_item  *im;
    int64_t                 P = 0, side = 1, P1 = 0, rgb = 0, n, groups = 0;
    int64_t                 tiles = 0;
    int                     r, m, any = 0;

    if (v != NULL) {
        v->active = 0;
    }
    for (r = 0; r < batch->n_records; r++) {
        any |= batch->records[r]->n_media > 0;
    }
    if (!any && batch->n_spans == 0 && batch->positions == NULL) {
        return 0;                       /* text: the path of old, untouched */
    }
    /* audio clips alone: their positions count on as text's (mrope.c),
     * so the text rope serves them and the tower has nothing to do */
    for (m = 0, any = 0; m < batch->n_items; m++) {
        any |= visual(batch, m);
    }
    if (!any) {
        return 0;
    }
    if (v == NULL) {
        return no_tower(batch, err);
    }
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
    if (grow_stage(v, p->bytes, err) != 0 || ensure_vws(v, P, err) != 0
        || vplan_fill(v, batch, err) != 0)
    {
        return -1;
    }
    if (cuda_check(cudaMemcpyAsync(v->dmeta, v->hstage, p->bytes,
                                   cudaMemcpyHostToDevice, b->stream),
                   "vision metadata upload", err) != 0)
    {
        return -1;
    }
    v->active = 1;
    return 0;
}

int
cuda_vision_active(const clef_backend *b)
{
    return b->vision != NULL && b->vision->active;
}

void
cuda_vision_rope(const clef_backend *b, clef_k_rope_args *r)
{
    const cuda_vision  *v = b->vision;

    if (v != NULL && v->active) {
        r->mpos = (const int32_t *) (v->dmeta + v->plan.o_mpos);
        r->msec[0] = v->msec[0];
        r->msec[1] = v->msec[1];
        r->msec[2] = v->msec[2];
    } else {
        r->mpos = NULL;
        r->msec[0] = r->msec[1] = r->msec[2] = 0;
    }
}

/* ---- forward -------------------------------------------------------------- */

#define CK(call, what)  do {                                                  \
        if (cuda_check((call), (what), err) != 0) {                           \
            return -1;                                                        \
        }                                                                     \
    } while (0)

#define VGEMM(rows, n, k, Wt, Xp, Dp)                                         \
    do {                                                                      \
        if (clef_gemm_run(b->gemm, s, CLEF_GEMM_BF16, (rows), (n), (k), (Wt), \
                          (k), (Xp), (k), (Dp), (n), 0.0f, NULL, err) != 0)   \
        {                                                                     \
            return -1;                                                        \
        }                                                                     \
    } while (0)

int
cuda_vision_tower(clef_backend *b, clef_error *err)
{
    cuda_vision        *v = b->vision;
    const cuda_vplan   *p = &v->plan;
    const unsigned char *d = v->dmeta;
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
    VGEMM(P, H, v->row, v->patch_w, v->rows, v->y);
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
        VGEMM(P, 3 * H, H, bl->qkv, v->xn, v->qkv);
        CK(clef_k_vqkv_rotary(v->qkv, bl->qkv_b, (const int32_t *) (d + p->o_rc),
                              (const float *) (d + p->o_cos),
                              (const float *) (d + p->o_sin), P, v->heads, v->hd, s),
           "vision rotary");
        CK(clef_k_attention_bidir(&a, s), "vision attention");
        VGEMM(P, H, H, bl->proj, v->o, v->y);
        CK(clef_k_vresidual(v->x, v->y, bl->proj_b, P, H, s), "vision residual");

        CK(clef_k_vlayernorm(v->x, bl->n2_w, bl->n2_b, v->xn, P, H, LN_EPS, s),
           "vision norm2");
        VGEMM(P, v->I, H, bl->fc1, v->xn, v->mlp);
        CK(clef_k_vbias_gelu(v->mlp, bl->fc1_b, P, v->I, 1, s), "vision gelu");
        VGEMM(P, H, v->I, bl->fc2, v->mlp, v->y);
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
            VGEMM(R, v->M, v->M, g->m1, v->xn, v->mlp);
            CK(clef_k_vbias_gelu(v->mlp, g->m1_b, R, v->M, 0, s),
               "deepstack gelu");
            VGEMM(R, v->out, v->M, g->m2, v->mlp,
                  v->ds_feat + (size_t) j * R * v->out);
        }
    }

    /* the merger: a 2 x 2 block's patches are consecutive rows, so the
     * normed [P][H] is the [R][4H] input as it lies */
    CK(clef_k_vlayernorm(v->x, v->mn_w, v->mn_b, v->xn, P, H, LN_EPS, s),
       "vision merger norm");
    VGEMM(R, v->M, v->M, v->m1, v->xn, v->mlp);
    CK(clef_k_vbias_gelu(v->mlp, v->m1_b, R, v->M, 0, s), "vision merger gelu");
    VGEMM(R, v->out, v->M, v->m2, v->mlp, v->feat);
    return 0;
}

int
cuda_vision_embed(clef_backend *b, clef_error *err)
{
    cuda_vision  *v = b->vision;

    if (v == NULL || !v->active || v->plan.P == 0) {
        return 0;
    }
    if (cuda_vision_tower(b, err) != 0) {
        return -1;
    }
    return cuda_check(clef_k_vscatter(v->feat, v->m2_b,
                                      (const int32_t *) (v->dmeta + v->plan.o_dst),
                                      b->ws.hid, (int) v->plan.R, v->out, b->stream),
                      "image features", err);
}

int
cuda_vision_deepstack(clef_backend *b, int l, clef_error *err)
{
    cuda_vision  *v = b->vision;

    if (v == NULL || !v->active || v->plan.P == 0 || l >= v->n_ds) {
        return 0;
    }
    return cuda_check(clef_k_vscatter_add(
                          v->ds_feat + (size_t) l * v->plan.R * v->out,
                          v->ds[l].m2_b,
                          (const int32_t *) (v->dmeta + v->plan.o_dst),
                          b->ws.hid, (int) v->plan.R, v->out, b->stream),
                      "deepstack features", err);
}

int
clef_cuda_vision_features(clef_backend *b, const clef_batch *batch,
    float *features, clef_error *err)
{
    cuda_vision  *v = b->vision;
    uint16_t     *h = NULL;
    float        *bias = NULL;
    size_t        n;
    int64_t       j;
    int           i, rc = -1;

    if (v == NULL) {
        return no_tower(batch, err);
    }
    if (cuda_check(cudaSetDevice(b->device), "cudaSetDevice", err) != 0
        || cuda_vision_prepare(b, batch, err) != 0)
    {
        return -1;
    }
    if (!v->active || v->plan.R == 0) {
        return 0;
    }
    n = (size_t) v->plan.R * (size_t) v->out;
    h = malloc(n * sizeof(uint16_t));
    bias = malloc((size_t) v->out * sizeof(float));
    if (h == NULL || bias == NULL) {
        clef_error_fail(err, CLEF_E_NO_MEMORY, "out of memory");
    } else if (cuda_vision_tower(b, err) == 0
               && cuda_check(cudaMemcpyAsync(h, v->feat, n * 2,
                                             cudaMemcpyDeviceToHost, b->stream),
                             "vision features", err) == 0
               && cuda_check(cudaMemcpyAsync(bias, v->m2_b,
                                             (size_t) v->out * sizeof(float),
                                             cudaMemcpyDeviceToHost, b->stream),
                             "vision bias", err) == 0)
    {
        rc = 0;
    }
    /* wait even after a failed enqueue: the staging buffer is reused */
    if (cuda_check(cudaStreamSynchronize(b->stream), "vision tower", err) != 0) {
        rc = -1;
    }
    if (rc == 0) {
        for (j = 0; j < v->plan.R; j++) {
            for (i = 0; i < v->out; i++) {
                features[j * v->out + i] = clef_bf16_to_f32(h[j * v->out + i])
                                           + bias[i];
            }
        }
    }
    v->active = 0;
    free(h);
    free(bias);
    return rc;
}
