/*
 * The vision tower's forward on the CPU (see vision.h).
 */
#include "cpu/model/vision.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/vision_layout.h"
#include "cpu/kernels/gemm.h"
#include "cpu/ops/vision_ops.h"
#include "model/roles.h"

#define TILE    1024        /* rows of the patch rows and the MLP at a time */

typedef struct {
    float           *norm1_w, *norm1_b, *norm2_w, *norm2_b;
    clef_cpu_wpack   qkv, proj, fc1, fc2;
    float           *qkv_b, *proj_b, *fc1_b, *fc2_b;
} vblock;

/* A merger: LayerNorm (over a patch before the 2 x 2 shuffle, or over the
 * shuffled block: DeepStack's), fc1, exact GELU, fc2. */
typedef struct {
    float           *norm_w, *norm_b;
    clef_cpu_wpack   m1, m2;
    float           *m1_b, *m2_b;
} vmerger;

struct clef_cpu_vision {
    clef_cpu_pool       *pool;
    clef_vision_config   cfg;
    int                  hd, side, row;      /* head dim, table side, 1536 */
    clef_cpu_wpack       patch;
    float               *patch_b, *pos;      /* [H], [side^2][H] */
    vblock              *blocks;
    vmerger              merger;
    vmerger              deepstack[8];       /* cfg.n_deepstack of them */
    float               *inv_freq;           /* [hd / 4] */
    void               (*progress)(void *ctx);
    void                *progress_ctx;
};


void
clef_cpu_vision_set_progress(clef_cpu_vision *v, void (*fn)(void *ctx),
    void *ctx)
{
    v->progress = fn;
    v->progress_ctx = ctx;
}


/* Role r of tower block (or DeepStack merger) `layer` as fp32
 * (malloc'ed), NULL with err filled. */
static float *
load_f32(const clef_model *m, clef_role r, int layer, clef_error *err)
{
    const clef_tensor  *t;
    char                full[128];
    float              *p;

    clef_role_name(NULL, r, layer, full, sizeof(full));
    t = clef_model_tensor(m, full);
    if (t == NULL || t->data == NULL) {
        clef_error_fail(err, CLEF_E_MODEL, "tensor '%s' is missing",
                        full);
        return NULL;
    }
    p = malloc(sizeof(float) * (size_t) t->numel);
    if (p == NULL) {
        clef_error_fail(err, CLEF_E_NO_MEMORY, "out of memory for '%s'",
                        full);
        return NULL;
    }
    clef_tensor_to_f32(t, p);
    return p;
}


/* A matrix of the tower packed for the GEMM.  A release stores it in bf16
 * and it stays bf16 (half the memory; the kernel widens it exactly, so the
 * products are those of an fp32 copy), read in place from the checkpoint,
 * whose pages are then released; another dtype is packed in fp32. */
static int
load_packed(const clef_model *m, clef_role r, int layer, int64_t n,
    int64_t k, clef_cpu_wpack *w, clef_error *err)
{
    const clef_tensor  *t;
    char                full[128];
    float              *p;

    clef_role_name(NULL, r, layer, full, sizeof(full));
    t = clef_model_tensor(m, full);
    if (t != NULL && t->data != NULL && t->dtype == CLEF_DTYPE_BF16
        && t->numel == n * k)
    {
        if (clef_cpu_wpack_alloc_bf16(w, n, k) != 0) {
            return clef_error_fail(err, CLEF_E_NO_MEMORY,
                                   "out of memory packing '%s'", full);
        }
        clef_cpu_wpack_rows_bf16(w, 0, n, (const uint16_t *) t->data, k);
        clef_tensor_release(t);
        return 0;
    }
    p = load_f32(m, r, layer, err);
    if (p == NULL) {
        return -1;
    }
    if (clef_cpu_wpack_alloc(w, n, k) != 0) {
        free(p);
        return clef_error_fail(err, CLEF_E_NO_MEMORY,
                               "out of memory packing '%s'", full);
    }
    clef_cpu_wpack_rows(w, 0, n, p, k);
    free(p);
    return 0;
}


static void
merger_free(vmerger *g)
{
    free(g->norm_w);
    free(g->norm_b);
    free(g->m1_b);
    free(g->m2_b);
    clef_cpu_wpack_free(&g->m1);
    clef_cpu_wpack_free(&g->m2);
}

/* A merger's roles: its norm and norm bias, fc1 and its bias, fc2 and
 * its bias (the tower's merger, or DeepStack merger `layer`'s). */
static const clef_role  merger_roles[6] = {
    CLEF_ROLE_V_MERGER_NORM, CLEF_ROLE_V_MERGER_NORM_BIAS,
    CLEF_ROLE_V_MERGER_FC1, CLEF_ROLE_V_MERGER_FC1_BIAS,
    CLEF_ROLE_V_MERGER_FC2, CLEF_ROLE_V_MERGER_FC2_BIAS
};
static const clef_role  deepstack_roles[6] = {
    CLEF_ROLE_V_DS_NORM, CLEF_ROLE_V_DS_NORM_BIAS,
    CLEF_ROLE_V_DS_FC1, CLEF_ROLE_V_DS_FC1_BIAS,
    CLEF_ROLE_V_DS_FC2, CLEF_ROLE_V_DS_FC2_BIAS
};

static int
merger_load(const clef_model *m, const clef_role *r, int layer, int64_t M,
    int64_t out, vmerger *g, clef_error *err)
{
    if ((g->norm_w = load_f32(m, r[0], layer, err)) == NULL
        || (g->norm_b = load_f32(m, r[1], layer, err)) == NULL
        || load_packed(m, r[2], layer, M, M, &g->m1, err) != 0
        || load_packed(m, r[4], layer, out, M, &g->m2, err) != 0)
    {
        return -1;
    }
    return (g->m1_b = load_f32(m, r[3], layer, err)) == NULL
           || (g->m2_b = load_f32(m, r[5], layer, err)) == NULL ? -1 : 0;
}

void
clef_cpu_vision_close(clef_cpu_vision *v)
{
    int  l;

    if (v == NULL) {
        return;
    }
    for (l = 0; v->blocks != NULL && l < v->cfg.depth; l++) {
        free(v->blocks[l].norm1_w);
        free(v->blocks[l].norm1_b);
        free(v->blocks[l].norm2_w);
        free(v->blocks[l].norm2_b);
        free(v->blocks[l].qkv_b);
        free(v->blocks[l].proj_b);
        free(v->blocks[l].fc1_b);
        free(v->blocks[l].fc2_b);
        clef_cpu_wpack_free(&v->blocks[l].qkv);
        clef_cpu_wpack_free(&v->blocks[l].proj);
        clef_cpu_wpack_free(&v->blocks[l].fc1);
        clef_cpu_wpack_free(&v->blocks[l].fc2);
    }
    free(v->blocks);
    clef_cpu_wpack_free(&v->patch);
    free(v->patch_b);
    free(v->pos);
    merger_free(&v->merger);
    for (l = 0; l < v->cfg.n_deepstack; l++) {
        merger_free(&v->deepstack[l]);
    }
    free(v->inv_freq);
    free(v);
}


int
clef_cpu_vision_open(const clef_model *m, clef_cpu_pool *pool,
    clef_cpu_vision **out, clef_error *err)
{
    const clef_vision_config  *c = clef_model_vision_config(m);
    clef_cpu_vision           *v;
    vblock                    *b;
    int64_t                    H, I, M;
    int                        l, sd;

    *out = NULL;
    if (c == NULL) {
        return 0;
    }
    v = calloc(1, sizeof(*v));
    if (v == NULL) {
        return clef_error_fail(err, CLEF_E_NO_MEMORY, "out of memory");
    }
    v->pool = pool;
    v->cfg = *c;
    H = c->hidden_size;
    I = c->intermediate_size;
    M = H * c->spatial_merge_size * c->spatial_merge_size;
    v->hd = c->hidden_size / c->num_heads;
    v->side = (int) lround(sqrt((double) c->num_position_embeddings));
    v->row = c->in_channels * c->temporal_patch_size * c->patch_size
             * c->patch_size;

    /* 1 / theta^(2i / (hd / 2)), each step in fp32 as the reference */
    sd = v->hd / 2;
    v->inv_freq = malloc(sizeof(float) * (size_t) (sd / 2));
    v->blocks = calloc((size_t) c->depth, sizeof(vblock));
    if (v->inv_freq == NULL || v->blocks == NULL) {
        clef_cpu_vision_close(v);
        return clef_error_fail(err, CLEF_E_NO_MEMORY, "out of memory");
    }
    clef_vision_inv_freq(v->hd, c->rope_theta, v->inv_freq);

    if (load_packed(m, CLEF_ROLE_V_PATCH, 0, H, v->row, &v->patch, err) != 0
        || (v->patch_b = load_f32(m, CLEF_ROLE_V_PATCH_BIAS, 0, err)) == NULL
        || (v->pos = load_f32(m, CLEF_ROLE_V_POS, 0, err)) == NULL)
    {
        goto failed;
    }
    for (l = 0; l < c->depth; l++) {
        b = &v->blocks[l];
#define F(field, role)                                                      \
        if ((b->field = load_f32(m, role, l, err)) == NULL) goto failed
#define P(field, role, rows, cols)                                          \
        if (load_packed(m, role, l, rows, cols, &b->field, err) != 0)       \
            goto failed
        F(norm1_w, CLEF_ROLE_V_NORM1);
        F(norm1_b, CLEF_ROLE_V_NORM1_BIAS);
        F(norm2_w, CLEF_ROLE_V_NORM2);
        F(norm2_b, CLEF_ROLE_V_NORM2_BIAS);
        P(qkv, CLEF_ROLE_V_QKV, 3 * H, H);
        F(qkv_b, CLEF_ROLE_V_QKV_BIAS);
        P(proj, CLEF_ROLE_V_PROJ, H, H);
        F(proj_b, CLEF_ROLE_V_PROJ_BIAS);
        P(fc1, CLEF_ROLE_V_FC1, I, H);
        F(fc1_b, CLEF_ROLE_V_FC1_BIAS);
        P(fc2, CLEF_ROLE_V_FC2, H, I);
        F(fc2_b, CLEF_ROLE_V_FC2_BIAS);
#undef F
#undef P
    }
    if (merger_load(m, merger_roles, 0, M, c->out_hidden_size, &v->merger,
                    err)
        != 0)
    {
        goto failed;
    }
    for (l = 0; l < c->n_deepstack; l++) {
        if (merger_load(m, deepstack_roles, l, M, c->out_hidden_size,
                        &v->deepstack[l], err)
            != 0)
        {
            goto failed;
        }
    }
    *out = v;
    return 0;

failed:
    clef_cpu_vision_close(v);
    return -1;
}


/* ---- forward -------------------------------------------------------------- */

/* The tower attends within each temporal group of an item (an image is
 * one, a video one per frame pair: the reference's cu_seqlens), and every
 * other step works on one patch, so a batch is a list of groups. */
typedef struct {
    const clef_cpu_vision         *v;
    const clef_media_item *const  *items;
    const int64_t                 *cu;         /* patch offsets of the groups */
    const int32_t                 *item;       /* each group's item */
    const int64_t                 *base;       /* its first patch in the item */
    int                            n_groups;
    int64_t                        p0;         /* first patch of the tile */
    float                         *rows;       /* [tile][row] */
    float                         *x;          /* [P][H] */
    float                         *cos, *sin;  /* [P][hd / 2] */
} patch_job;


static int
group_of(const int64_t *cu, int n, int64_t p)
{
    int  lo = 0, hi = n - 1, mid;

    /* the last group starting at or before p */
    while (lo < hi) {
        mid = lo + (hi - lo + 1) / 2;
        if (cu[mid] <= p) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    return lo;
}


static void
rows_task(void *ctx, int64_t begin, int64_t end, int worker)
{
    const patch_job  *j = ctx;
    int64_t           p;
    int               k;

    (void) worker;
    for (p = begin; p < end; p++) {
        k = group_of(j->cu, j->n_groups, j->p0 + p);
        clef_image_patch_row(j->items[j->item[k]],
                             j->base[k] + j->p0 + p - j->cu[k],
                             j->rows + p * j->v->row);
    }
}


/* x[p] += bias + the resampled position embedding; the rotary angles */
static void
pos_task(void *ctx, int64_t begin, int64_t end, int worker)
{
    const patch_job        *j = ctx;
    const clef_cpu_vision  *v = j->v;
    const clef_media_item  *im;
    int64_t                 p, H = v->cfg.hidden_size, q;
    int32_t                 r, c, tap[4];
    int                     k, i, quarter = v->hd / 4;
    float                   wgt[4], *x, acc;
    const float            *e[4];

    (void) worker;
    for (p = begin; p < end; p++) {
        k = group_of(j->cu, j->n_groups, p);
        im = j->items[j->item[k]];
        clef_vision_patch_rc(im, p - j->cu[k], &r, &c);
        clef_vision_pos_taps(r, c, im->grid_h, im->grid_w, v->side, tap, wgt);
        for (i = 0; i < 4; i++) {
            e[i] = v->pos + (int64_t) tap[i] * H;
        }
        x = j->x + p * H;
        for (q = 0; q < H; q++) {
            acc = e[0][q] * wgt[0];
            acc += e[1][q] * wgt[1];
            acc += e[2][q] * wgt[2];
            acc += e[3][q] * wgt[3];
            x[q] = (x[q] + v->patch_b[q]) + acc;
        }
        for (i = 0; i < quarter; i++) {
            j->cos[p * 2 * quarter + i] = cosf((float) r * v->inv_freq[i]);
            j->sin[p * 2 * quarter + i] = sinf((float) r * v->inv_freq[i]);
            j->cos[p * 2 * quarter + quarter + i] = cosf((float) c * v->inv_freq[i]);
            j->sin[p * 2 * quarter + quarter + i] = sinf((float) c * v->inv_freq[i]);
        }
    }
}


/* out[P / unit][out] <- merger g of the patches x ([P][H]): its LayerNorm
 * over each patch (the main merger), or over each 2 x 2 block's patches
 * side by side (they are consecutive rows; DeepStack's, post_shuffle),
 * then fc1, exact GELU, fc2, TILE merged rows at a time */
static void
merge(clef_cpu_vision *v, const vmerger *g, int post_shuffle, const float *x,
    float *xn, int64_t P, float *mlp, float *gemm, float *out)
{
    const clef_vision_config  *c = &v->cfg;
    clef_cpu_pool             *pool = v->pool;
    int64_t                    H = c->hidden_size, t0, n, unit, M;

    unit = (int64_t) c->spatial_merge_size * c->spatial_merge_size;
    M = H * unit;
    if (post_shuffle) {
        clef_cpu_layernorm(pool, x, M, xn, M, P / unit, (int) M, g->norm_w,
                           g->norm_b, 1e-6f);
    } else {
        clef_cpu_layernorm(pool, x, H, xn, H, P, (int) H, g->norm_w,
                           g->norm_b, 1e-6f);
    }
    for (t0 = 0; t0 < P / unit; t0 += TILE) {
        n = P / unit - t0 < TILE ? P / unit - t0 : TILE;
        clef_cpu_linear(pool, xn + t0 * M, M, n, &g->m1, mlp, M, 0.0f, gemm);
        clef_cpu_bias_gelu(pool, mlp, M, n, (int) M, g->m1_b, 0);
        clef_cpu_linear(pool, mlp, M, n, &g->m2, out + t0 * c->out_hidden_size,
                        c->out_hidden_size, 0.0f, gemm);
    }
    clef_cpu_add_bias(pool, out, c->out_hidden_size, P / unit,
                      c->out_hidden_size, g->m2_b);
}

int
clef_cpu_vision_deepstack(const clef_cpu_vision *v)
{
    return v != NULL ? v->cfg.n_deepstack : 0;
}

int
clef_cpu_vision_forward(clef_cpu_vision *v,
    const clef_media_item *const *items, int n_items, float *features,
    clef_error *err)
{
    return clef_cpu_vision_forward_levels(v, items, n_items, features, 0,
                                          err);
}

/* What a forward over a batch of items works in: the items' patch groups
 * (one per frame pair of a video, one per image) and the activations. */
typedef struct {
    int64_t   *cu;          /* n_groups + 1: the groups' first patches */
    int64_t   *blocks;      /* n_groups + 1: the attention's scratch */
    int64_t   *base;        /* n_groups: a group's first patch in its item */
    int32_t   *item;        /* n_groups: the item a group is of */
    int        n_groups;
    int64_t    P;           /* patches in all */
    int64_t    longest;     /* patches of the largest group */
    float     *x, *xn, *qkv, *o, *mlp, *rows, *cs, *sn, *gemm, *scratch;
    size_t     per_worker;  /* attention scratch floats per pool worker */
} vision_ws;


/* The items' patch groups into ws; an item this tower did not prepare is
 * refused. */
static int
vision_groups(clef_cpu_vision *v, const clef_media_item *const *items,
    int n_items, vision_ws *ws, clef_error *err)
{
    const clef_vision_config  *c = &v->cfg;
    const clef_media_item     *it;
    int64_t                    n, t0;
    int                        k, g, n_groups = 0;

    for (k = 0; k < n_items; k++) {
        it = items[k];
        if ((it->kind != CLEF_MEDIA_IMAGE && it->kind != CLEF_MEDIA_VIDEO)
            || it->patch != c->patch_size
            || it->temporal != c->temporal_patch_size
            || it->merge != c->spatial_merge_size
            || clef_image_row_size(it) != v->row || it->grid_t < 1
            || (it->kind == CLEF_MEDIA_IMAGE && it->grid_t != 1))
        {
            return clef_error_fail(err, CLEF_E_INTERNAL,
                "media item %d was prepared for another tower", k);
        }
        n_groups += it->grid_t;
    }
    ws->cu = malloc(sizeof(int64_t) * ((size_t) n_groups + 1) * 3);
    ws->item = malloc(sizeof(int32_t) * ((size_t) n_groups + 1));
    if (ws->cu == NULL || ws->item == NULL) {
        return clef_error_fail(err, CLEF_E_NO_MEMORY, "out of memory");
    }
    ws->n_groups = n_groups;
    ws->blocks = ws->cu + n_groups + 1;
    ws->base = ws->blocks + n_groups + 1;
    ws->cu[0] = 0;
    ws->longest = 0;
    for (k = 0, g = 0; k < n_items; k++) {
        n = (int64_t) items[k]->grid_h * items[k]->grid_w;
        for (t0 = 0; t0 < items[k]->grid_t; t0++, g++) {
            ws->item[g] = k;
            ws->base[g] = t0 * n;
            ws->cu[g + 1] = ws->cu[g] + n;
        }
        ws->longest = n > ws->longest ? n : ws->longest;
    }
    ws->P = ws->cu[n_groups];
    return 0;
}


/* The activations of a forward over ws->P patches. */
static int
vision_ws_alloc(clef_cpu_vision *v, vision_ws *ws, clef_error *err)
{
    const clef_vision_config  *c = &v->cfg;
    int64_t                    P = ws->P, H = c->hidden_size;
    int64_t                    I = c->intermediate_size, M, kmax;

    M = H * c->spatial_merge_size * c->spatial_merge_size;
    kmax = M > I ? M : I;
    kmax = v->row > kmax ? v->row : kmax;
    ws->per_worker = clef_cpu_vision_attention_scratch(ws->longest, v->hd);
    ws->x = malloc(sizeof(float) * (size_t) (P * H));
    ws->xn = malloc(sizeof(float) * (size_t) (P * H));
    ws->qkv = malloc(sizeof(float) * (size_t) (P * 3 * H));
    ws->o = malloc(sizeof(float) * (size_t) (P * H));
    ws->mlp = malloc(sizeof(float) * (size_t) TILE * (size_t) (I > M ? I : M));
    ws->rows = malloc(sizeof(float) * (size_t) TILE * (size_t) v->row);
    ws->cs = malloc(sizeof(float) * (size_t) (P * v->hd / 2));
    ws->sn = malloc(sizeof(float) * (size_t) (P * v->hd / 2));
    ws->gemm = malloc(sizeof(float) * clef_cpu_linear_scratch_floats(kmax));
    ws->scratch = malloc(sizeof(float) * ws->per_worker
                         * (size_t) clef_cpu_pool_size(v->pool));
    if (ws->x == NULL || ws->xn == NULL || ws->qkv == NULL || ws->o == NULL
        || ws->mlp == NULL || ws->rows == NULL || ws->cs == NULL
        || ws->sn == NULL || ws->gemm == NULL || ws->scratch == NULL)
    {
        return clef_error_fail(err, CLEF_E_NO_MEMORY,
                               "out of memory for the vision tower on %lld "
                               "patches", (long long) P);
    }
    return 0;
}


static void
vision_ws_free(vision_ws *ws)
{
    free(ws->cu);
    free(ws->item);
    free(ws->x);
    free(ws->xn);
    free(ws->qkv);
    free(ws->o);
    free(ws->mlp);
    free(ws->rows);
    free(ws->cs);
    free(ws->sn);
    free(ws->gemm);
    free(ws->scratch);
}


/* Patch embedding into ws->x, TILE patch rows at a time, and the rotary
 * tables of the patches' positions. */
static void
vision_embed(clef_cpu_vision *v, const clef_media_item *const *items,
    vision_ws *ws)
{
    clef_cpu_pool  *pool = v->pool;
    patch_job       pj;
    int64_t         t0, n, P = ws->P, H = v->cfg.hidden_size;

    pj.v = v;
    pj.items = items;
    pj.cu = ws->cu;
    pj.item = ws->item;
    pj.base = ws->base;
    pj.n_groups = ws->n_groups;
    pj.rows = ws->rows;
    pj.x = ws->x;
    pj.cos = ws->cs;
    pj.sin = ws->sn;
    for (t0 = 0; t0 < P; t0 += TILE) {
        n = P - t0 < TILE ? P - t0 : TILE;
        pj.p0 = t0;
        clef_cpu_pool_for(pool, n, 8, rows_task, &pj);
        clef_cpu_linear(pool, ws->rows, v->row, n, &v->patch, ws->x + t0 * H,
                        H, 0.0f, ws->gemm);
    }
    pj.p0 = 0;
    clef_cpu_pool_for(pool, P, 8, pos_task, &pj);
}


/* One block over ws->x: attention within each group, then the MLP. */
static void
vision_block(clef_cpu_vision *v, const vblock *b, vision_ws *ws)
{
    const clef_vision_config  *c = &v->cfg;
    clef_cpu_pool             *pool = v->pool;
    int64_t                    P = ws->P, H = c->hidden_size;
    int64_t                    I = c->intermediate_size, t0, n;
    float                     *x = ws->x, *xn = ws->xn, *o = ws->o;

    clef_cpu_layernorm(pool, x, H, xn, H, P, (int) H, b->norm1_w,
                       b->norm1_b, 1e-6f);
    clef_cpu_linear(pool, xn, H, P, &b->qkv, ws->qkv, 3 * H, 0.0f, ws->gemm);
    clef_cpu_add_bias(pool, ws->qkv, 3 * H, P, (int) (3 * H), b->qkv_b);
    clef_cpu_vision_rotary(pool, ws->qkv, 3 * H, P, c->num_heads, v->hd, H,
                           ws->cs, ws->sn);
    clef_cpu_vision_attention(pool, ws->qkv, 3 * H, o, H, ws->cu,
                              ws->n_groups, c->num_heads, v->hd,
                              1.0f / sqrtf((float) v->hd), ws->scratch,
                              ws->per_worker, ws->blocks);
    /* x + (o proj^T + bias), in the reference's order */
    clef_cpu_linear(pool, o, H, P, &b->proj, xn, H, 0.0f, ws->gemm);
    clef_cpu_add_bias(pool, xn, H, P, (int) H, b->proj_b);
    clef_cpu_add_rows(pool, x, xn, H, P, (int) H);

    clef_cpu_layernorm(pool, x, H, xn, H, P, (int) H, b->norm2_w,
                       b->norm2_b, 1e-6f);
    for (t0 = 0; t0 < P; t0 += TILE) {
        n = P - t0 < TILE ? P - t0 : TILE;
        clef_cpu_linear(pool, xn + t0 * H, H, n, &b->fc1, ws->mlp, I, 0.0f,
                        ws->gemm);
        clef_cpu_bias_gelu(pool, ws->mlp, I, n, (int) I, b->fc1_b, 1);
        clef_cpu_linear(pool, ws->mlp, I, n, &b->fc2, o + t0 * H, H, 0.0f,
                        ws->gemm);
    }
    clef_cpu_add_bias(pool, o, H, P, (int) H, b->fc2_b);
    clef_cpu_add_rows(pool, x, o, H, P, (int) H);
}


int
clef_cpu_vision_forward_levels(clef_cpu_vision *v,
    const clef_media_item *const *items, int n_items, float *features,
    int64_t level_stride, clef_error *err)
{
    const clef_vision_config  *c = &v->cfg;
    vision_ws                  ws;
    int                        l, d, rc = -1;

    memset(&ws, 0, sizeof(ws));
    if (vision_groups(v, items, n_items, &ws, err) != 0
        || vision_ws_alloc(v, &ws, err) != 0)
    {
        goto done;
    }

    vision_embed(v, items, &ws);
    for (l = 0; l < c->depth; l++) {
        vision_block(v, &v->blocks[l], &ws);
        /* DeepStack: this block's output through its merger, level d + 1
         * of the features */
        for (d = 0; d < c->n_deepstack; d++) {
            if (c->deepstack[d] == l) {
                merge(v, &v->deepstack[d], 1, ws.x, ws.xn, ws.P, ws.mlp,
                      ws.gemm, features + (d + 1) * level_stride);
            }
        }
        if (v->progress != NULL) {
            v->progress(v->progress_ctx);
        }
    }

    /* the merger: LayerNorm per patch, each 2 x 2 block's patches side by
     * side (they are consecutive rows), fc1, exact GELU, fc2 */
    merge(v, &v->merger, 0, ws.x, ws.xn, ws.P, ws.mlp, ws.gemm, features);
    rc = 0;

done:
    vision_ws_free(&ws);
    return rc;
}
