#include "cpu/model/weights.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PREFIX  CLEF_TEXT_PREFIX

/* Which part of a tensor (its first dimension by the rest) a rank keeps:
 * rows [row0, row0 + rows) and columns [col0, col0 + cols). */
typedef struct {
    int64_t  row0, rows, col0, cols;
} slice;

typedef struct {
    const clef_tensor  *t;
    int64_t             cols;      /* of the tensor */
    slice               s;
    float              *dst;       /* plain: [s.rows][cols] */
    clef_cpu_wpack     *pack;      /* or packed, slice row r as row row0 + r */
    int64_t             row0;
    atomic_int          failed;
} convert_job;

static void
convert_task(void *ctx, int64_t begin, int64_t end, int worker)
{
    convert_job  *j = ctx;
    int64_t       first = j->s.row0 + begin;

    if (j->pack == NULL) {
        /* plain vectors are cut by rows only (check_slice) */
        clef_tensor_rows_to_f32(j->t, first, end - begin, j->dst + begin * j->cols);
        return;
    }
    if (clef_cpu_wpack_from_tensor(j->pack, j->row0 + begin, j->t, first,
                                   end - begin, j->s.col0) != 0)
    {
        atomic_store(&j->failed, 1);
    }
}

/* Converts slice sl (NULL: all) of tensor `name` (numel floats expected)
 * into dst, or into rows [row0, row0 + the slice's rows) of pack. */
static int
take_slice(const clef_model *m, clef_cpu_pool *pool, const char *name,
    int64_t numel, const slice *sl, float *dst, clef_cpu_wpack *pack,
    int64_t row0, clef_error *err)
{
    const clef_tensor  *t = clef_model_tensor(m, name);
    convert_job         j;

    if (t == NULL) {
        return clef_error_fail(err, CLEF_E_MODEL,
                               "tensor %s is missing", name);
    }
    if (!clef_dtype_is_float(t->dtype)) {
        return clef_error_fail(err, CLEF_E_MODEL,
                               "tensor %s is %s, not a float type", name,
                               clef_dtype_name(t->dtype));
    }
    if (t->numel != numel || t->data == NULL || t->ndim < 1
        || (pack != NULL && t->ndim != 2))
    {
        return clef_error_fail(err, CLEF_E_MODEL,
            "tensor %s has %lld elements, the config implies %lld",
            name, (long long) t->numel, (long long) numel);
    }
    j.t = t;
    j.cols = t->numel / t->shape[0];
    if (sl != NULL) {
        j.s = *sl;
    } else {
        j.s = (slice) { 0, t->shape[0], 0, j.cols };
    }
    if (j.s.row0 < 0 || j.s.rows < 0 || j.s.row0 + j.s.rows > t->shape[0]
        || j.s.col0 < 0 || j.s.col0 + j.s.cols > j.cols
        || (pack == NULL ? j.s.cols != j.cols : j.s.cols != pack->cols))
    {
        return clef_error_fail(err, CLEF_E_MODEL,
                               "tensor %s cannot be cut into rows %lld+%lld, "
                               "columns %lld+%lld", name, (long long) j.s.row0,
                               (long long) j.s.rows, (long long) j.s.col0,
                               (long long) j.s.cols);
    }
    j.dst = dst;
    j.pack = pack;
    j.row0 = row0;
    atomic_init(&j.failed, 0);
    clef_cpu_pool_for(pool, j.s.rows, 64, convert_task, &j);
    if (atomic_load(&j.failed)) {
        return clef_error_fail(err, CLEF_E_NO_MEMORY,
                               "out of memory converting %s", name);
    }
    if (pack != NULL) {
        clef_tensor_release(t);
    }
    return 0;
}

static int
take_into(const clef_model *m, clef_cpu_pool *pool, const char *name,
    int64_t numel, float *dst, clef_error *err)
{
    return take_slice(m, pool, name, numel, NULL, dst, NULL, 0, err);
}

/* Rows [row0, row0 + rows) of a layer's vector or matrix of numel floats
 * (all of it: rows -1) into dst. */
static int
take_layer_rows(const clef_model *m, clef_cpu_pool *pool, int layer,
    const char *what, int64_t numel, int64_t row0, int64_t rows, float *dst,
    clef_error *err)
{
    const clef_tensor  *t;
    char                name[256];
    slice               sl;

    clef_layer_tensor(&clef_model_text_config(m)->layer[layer], what, name,
                      sizeof(name));
    t = clef_model_tensor(m, name);
    if (rows < 0 || t == NULL || t->ndim < 1 || t->shape[0] <= 0) {
        return take_slice(m, pool, name, numel, NULL, dst, NULL, 0, err);
    }
    sl = (slice) { row0, rows, 0, t->numel / t->shape[0] };
    return take_slice(m, pool, name, numel, &sl, dst, NULL, 0, err);
}

static int
take_layer(const clef_model *m, clef_cpu_pool *pool, int layer, const char *what,
    int64_t numel, float *dst, clef_error *err)
{
    return take_layer_rows(m, pool, layer, what, numel, 0, -1, dst, err);
}

/* Allocates pack (n x k) for the named tensors of a layer, which fill its
 * rows: in bf16 when every one of them is stored in bf16 or the products
 * are bf16, else in fp32 (exact at fp32 precision).  A missing tensor is
 * left for take_packed() to report. */
static int
alloc_pack(const clef_model *m, const clef_cpu_weights *w, int layer,
    const char *const *what, int n_what, int64_t n, int64_t k,
    clef_cpu_wpack *pack)
{
    const clef_tensor  *t;
    clef_dtype          stored[8];
    char                name[256];
    int                 i;

    if (w->native != NULL) {
        return clef_cpu_wpack_alloc_native(pack, n, k, w->native);
    }
    for (i = 0; i < n_what && i < 8; i++) {
        clef_layer_tensor(&w->cfg.layer[layer], what[i], name, sizeof(name));
        t = clef_model_tensor(m, name);
        stored[i] = t != NULL ? t->dtype : CLEF_DTYPE_BF16;
    }
    return clef_cpu_wpack_alloc_format(pack,
                                       clef_cpu_wformat_for(stored, i, w->prec,
                                                            NULL),
                                       n, k);
}

/* Rows [src0, src0 + rows) of a [rows_total][pack->cols] matrix into rows
 * [row0, row0 + rows) of pack (column-parallel: a rank's heads). */
static int
take_packed_rows(const clef_model *m, clef_cpu_pool *pool, int layer,
    const char *what, int64_t rows_total, int64_t src0, int64_t rows,
    clef_cpu_wpack *pack, int64_t row0, clef_error *err)
{
    char   name[256];
    slice  sl = { src0, rows, 0, pack->cols };

    clef_layer_tensor(&clef_model_text_config(m)->layer[layer], what, name,
                      sizeof(name));
    return take_slice(m, pool, name, rows_total * pack->cols, &sl, NULL, pack,
                      row0, err);
}

/* Columns [col0, col0 + pack->cols) of a [pack->rows][cols_total] matrix into
 * pack (row-parallel: the inputs that come from a rank's heads). */
static int
take_packed_cols(const clef_model *m, clef_cpu_pool *pool, int layer,
    const char *what, int64_t cols_total, int64_t col0, clef_cpu_wpack *pack,
    clef_error *err)
{
    char   name[256];
    slice  sl = { 0, pack->rows, col0, pack->cols };

    clef_layer_tensor(&clef_model_text_config(m)->layer[layer], what, name,
                      sizeof(name));
    return take_slice(m, pool, name, pack->rows * cols_total, &sl, NULL, pack, 0,
                      err);
}

/* The row-parallel matrix `what` as this rank's segments (rowpar.h):
 * segment j is columns [col0 + j k, col0 + (j + 1) k) of the
 * [n][cols_total] tensor, k = cols / nseg, in packs[j]. */
static int
alloc_segments(const clef_model *m, const clef_cpu_weights *w, int layer,
    const char *const *what, int64_t n, int64_t cols, clef_cpu_wpack *packs)
{
    int  j;

    for (j = 0; j < w->nseg; j++) {
        if (alloc_pack(m, w, layer, what, 1, n, cols / w->nseg, &packs[j]) != 0) {
            return -1;
        }
    }
    return 0;
}

static int
take_segments(const clef_model *m, clef_cpu_pool *pool, const clef_cpu_weights *w,
    int layer, const char *what, int64_t cols_total, int64_t col0,
    clef_cpu_wpack *packs, clef_error *err)
{
    int  j;

    for (j = 0; j < w->nseg; j++) {
        if (take_packed_cols(m, pool, layer, what, cols_total,
                             col0 + j * packs[j].cols, &packs[j], err) != 0)
        {
            return -1;
        }
    }
    return 0;
}

static int
check_config(clef_cpu_weights *w, clef_error *err)
{
    const clef_text_config  *c = &w->cfg;
    double                   rot;

    if (c->hidden_size <= 0 || c->intermediate_size <= 0
        || c->num_hidden_layers <= 0 || c->num_hidden_layers > CLEF_MAX_LAYERS
        || c->num_attention_heads <= 0 || c->num_key_value_heads <= 0
        || c->head_dim <= 0 || c->linear_num_key_heads <= 0
        || c->linear_num_value_heads <= 0 || c->linear_key_head_dim <= 0
        || c->linear_value_head_dim <= 0 || c->linear_conv_kernel_dim <= 0)
    {
        return clef_error_fail(err, CLEF_E_MODEL,
                               "text config has a size that is not positive");
    }
    if (c->num_attention_heads % c->num_key_value_heads != 0
        || c->linear_num_value_heads % c->linear_num_key_heads != 0)
    {
        return clef_error_fail(err, CLEF_E_MODEL,
            "head counts do not group: %d q heads on %d kv heads, "
            "%d value heads on %d key heads",
            c->num_attention_heads, c->num_key_value_heads,
            c->linear_num_value_heads, c->linear_num_key_heads);
    }
    /* int(head_dim * partial_rotary_factor), as the reference computes it */
    rot = (double) c->head_dim * c->partial_rotary_factor;
    w->rot_dim = (int) rot;
    if (w->rot_dim < 0 || w->rot_dim > c->head_dim || w->rot_dim % 2 != 0) {
        return clef_error_fail(err, CLEF_E_MODEL,
            "partial_rotary_factor %g of head_dim %d does not give "
            "an even number of rotated dims",
            c->partial_rotary_factor, c->head_dim);
    }
    if (!(c->rope_theta > 0)) {
        return clef_error_fail(err, CLEF_E_MODEL,
                               "rope_theta %g is not positive", c->rope_theta);
    }
    return 0;
}

/* the tensors of each fused matrix, in the order of its rows */
static const char  *const mlp_up[] = {
    "mlp.gate_proj.weight", "mlp.up_proj.weight"
};
static const char  *const mlp_down[] = { "mlp.down_proj.weight" };
static const char  *const attn_in[] = {
    "self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight"
};
static const char  *const attn_out[] = { "self_attn.o_proj.weight" };
static const char  *const gdn_in[] = {
    "linear_attn.in_proj_qkv.weight", "linear_attn.in_proj_z.weight",
    "linear_attn.in_proj_b.weight", "linear_attn.in_proj_a.weight"
};
static const char  *const gdn_out[] = { "linear_attn.out_proj.weight" };

#define ALLOC_PACK(what, n, k, pack)                                         \
    alloc_pack(m, w, i, what, (int) (sizeof(what) / sizeof(what[0])), n, k, pack)

int
clef_cpu_weights_load(clef_cpu_weights *w, const clef_model *m,
    clef_cpu_pool *pool, clef_precision prec, const clef_shard *shard,
    clef_error *err)
{
    const clef_text_config  *c;
    const clef_shard        *sh;
    clef_cpu_layer          *l;
    float                   *cur, *tmp = NULL;
    int64_t                  H, I, K, hv, dv, hd, dk, size, packed, ch, qkv_all;
    int64_t                  HI, Hk, Hv, Hq, Hkv, qhd, src[3], len[3];
    int                      i, p, full_count = 0;
    int                      rc = -1;

    memset(w, 0, sizeof(*w));
    w->cfg = *clef_model_text_config(m);
    w->prec = prec;
    c = &w->cfg;
    if (check_config(w, err) != 0) {
        return -1;
    }
    if (shard != NULL && shard->size > 1) {
        if (clef_shard_check(c, shard->size, err) != 0) {
            return -1;
        }
        w->shard = *shard;
    } else {
        clef_shard_of(c, 1, 0, &w->shard);
    }
    sh = &w->shard;
    w->segs = clef_shard_segments(c, sh->size);
    w->nseg = w->segs / sh->size;
    w->seg0 = sh->rank * w->nseg;

    /* the model's sizes in capitals, this rank's in lower case */
    H = c->hidden_size;
    HI = c->intermediate_size;
    Hk = c->linear_num_key_heads;
    Hv = c->linear_num_value_heads;
    Hq = c->num_attention_heads;
    Hkv = c->num_key_value_heads;
    K = c->linear_conv_kernel_dim;
    dk = c->linear_key_head_dim;
    dv = c->linear_value_head_dim;
    hd = c->head_dim;
    I = sh->inter;
    hv = sh->v_heads;
    w->hq = sh->q_heads;
    w->hkv = sh->kv_heads;
    w->hk = sh->k_heads;
    w->hv = sh->v_heads;
    w->inter = sh->inter;
    qkv_all = 2 * Hk * dk + Hv * dv;
    w->qkv_dim = (int) (2 * w->hk * dk + hv * dv);
    w->gdn_v_dim = (int) (hv * dv);
    w->gdn_in_dim = w->qkv_dim + w->gdn_v_dim + 2 * (int) hv;
    w->q_head_dim = (int) hd * (c->attn_output_gate ? 2 : 1);
    qhd = w->q_head_dim;
    w->attn_in_dim = w->hq * w->q_head_dim + 2 * w->hkv * (int) hd;
    w->attn_o_dim = w->hq * (int) hd;

    for (i = 0; i < c->num_hidden_layers; i++) {
        full_count += c->layer_full[i] != 0;
    }
    /* the plain vectors; the matrices are packed apart */
    size = H                                                    /* final norm */
         + (int64_t) c->num_hidden_layers * 2 * H
         + (int64_t) (c->num_hidden_layers - full_count)
           * (K * w->qkv_dim + 2 * hv + dv)
         + (int64_t) full_count * 2 * hd;
    packed = (int64_t) c->num_hidden_layers
             * (clef_cpu_wpack_floats(2 * I, H)
                + w->nseg * clef_cpu_wpack_floats(H, I / w->nseg))
           + (int64_t) (c->num_hidden_layers - full_count)
             * (clef_cpu_wpack_floats(w->gdn_in_dim, H)
                + w->nseg * clef_cpu_wpack_floats(H, w->gdn_v_dim / w->nseg))
           + (int64_t) full_count
             * (clef_cpu_wpack_floats(w->attn_in_dim, H)
                + w->nseg * clef_cpu_wpack_floats(H, w->attn_o_dim / w->nseg));

    /* bf16 on native instructions where oneDNN has them for every
     * reduction length of the model's matrices (gemm_bf16.h): the
     * row-parallel ones by segment */
    if (prec == CLEF_PRECISION_BF16) {
        int64_t  ks[4] = { H, I / w->nseg, w->gdn_v_dim / w->nseg,
                           w->attn_o_dim / w->nseg };
        char     why[192];

        w->native = clef_cpu_bf16_native_open(ks, full_count > 0 ? 4 : 3,
                                              clef_cpu_pool_size(pool), why,
                                              sizeof(why));
        if (w->native != NULL) {
            snprintf(w->gemm, sizeof(w->gemm), "%s",
                     clef_cpu_bf16_native_describe(w->native));
        } else {
            snprintf(w->gemm, sizeof(w->gemm), "%s; no native bf16 path: %s",
                     clef_cpu_gemm_describe_prec(prec), why);
        }
    } else {
        snprintf(w->gemm, sizeof(w->gemm), "%s", clef_cpu_gemm_describe_prec(prec));
    }

    w->embed = clef_model_tensor(m, PREFIX "embed_tokens.weight");
    if (w->embed == NULL || w->embed->ndim != 2 || w->embed->shape[1] != H
        || w->embed->data == NULL)
    {
        return clef_error_fail(err, CLEF_E_MODEL,
            "tensor " PREFIX "embed_tokens.weight is missing or "
            "not [vocab, %lld]", (long long) H);
    }

    w->layers = calloc((size_t) c->num_hidden_layers, sizeof(*w->layers));
    w->block = malloc(sizeof(float) * (size_t) size);
    tmp = malloc(sizeof(float) * (size_t) (K * qkv_all));
    if (w->layers == NULL || w->block == NULL || tmp == NULL) {
        goto nomem;
    }

    cur = w->block;
    w->final_norm = cur;
    cur += H;
    if (take_into(m, pool, PREFIX "norm.weight", H, w->final_norm, err) != 0) {
        goto done;
    }

    for (i = 0; i < c->num_hidden_layers; i++) {
        l = &w->layers[i];
        l->full = c->layer[i].mixer == CLEF_MIXER_FULL;

        l->input_norm = cur;
        cur += H;
        l->post_norm = cur;
        cur += H;
        if (ALLOC_PACK(mlp_up, 2 * I, H, &l->gate_up) != 0
            || alloc_segments(m, w, i, mlp_down, H, I, l->down) != 0)
        {
            goto nomem;
        }
        /* gate_up: this rank's intermediate columns of gate, then of up;
         * down: the matching columns of its input */
        if (take_layer(m, pool, i, "input_layernorm.weight", H, l->input_norm, err)
            || take_layer(m, pool, i, "post_attention_layernorm.weight", H,
                          l->post_norm, err)
            || take_packed_rows(m, pool, i, "mlp.gate_proj.weight", HI,
                                sh->inter0, I, &l->gate_up, 0, err)
            || take_packed_rows(m, pool, i, "mlp.up_proj.weight", HI,
                                sh->inter0, I, &l->gate_up, I, err)
            || take_segments(m, pool, w, i, "mlp.down_proj.weight", HI,
                             sh->inter0, l->down, err))
        {
            goto done;
        }

        if (l->full) {
            int64_t  qrows = (int64_t) w->hq * qhd;
            int64_t  kvrows = (int64_t) w->hkv * hd;

            l->q_norm = cur;
            cur += hd;
            l->k_norm = cur;
            cur += hd;
            if (ALLOC_PACK(attn_in, w->attn_in_dim, H, &l->qkv_proj) != 0
                || alloc_segments(m, w, i, attn_out, H, w->attn_o_dim,
                                  l->o_proj) != 0)
            {
                goto nomem;
            }
            /* q (with each head's gate rows), k, v of this rank's heads;
             * o_proj's columns that read them */
            if (take_packed_rows(m, pool, i, "self_attn.q_proj.weight", Hq * qhd,
                                 sh->q_head0 * qhd, qrows, &l->qkv_proj, 0, err)
                || take_packed_rows(m, pool, i, "self_attn.k_proj.weight",
                                    Hkv * hd, sh->kv_head0 * hd, kvrows,
                                    &l->qkv_proj, qrows, err)
                || take_packed_rows(m, pool, i, "self_attn.v_proj.weight",
                                    Hkv * hd, sh->kv_head0 * hd, kvrows,
                                    &l->qkv_proj, qrows + kvrows, err)
                || take_layer(m, pool, i, "self_attn.q_norm.weight", hd, l->q_norm, err)
                || take_layer(m, pool, i, "self_attn.k_norm.weight", hd, l->k_norm, err)
                || take_segments(m, pool, w, i, "self_attn.o_proj.weight",
                                 Hq * hd, sh->q_head0 * hd, l->o_proj, err))
            {
                goto done;
            }
            continue;
        }

        l->conv = cur;
        cur += K * w->qkv_dim;
        l->A_log = cur;
        cur += hv;
        l->dt_bias = cur;
        cur += hv;
        l->gdn_norm = cur;
        cur += dv;
        if (ALLOC_PACK(gdn_in, w->gdn_in_dim, H, &l->in_proj) != 0
            || alloc_segments(m, w, i, gdn_out, H, w->gdn_v_dim, l->out_proj) != 0)
        {
            goto nomem;
        }
        /* the conv channels (rows of in_proj_qkv) of this rank's heads:
         * its key heads' q and k, its value heads' v */
        src[0] = sh->k_head0 * dk;
        src[1] = Hk * dk + sh->k_head0 * dk;
        src[2] = 2 * Hk * dk + sh->v_head0 * dv;
        len[0] = w->hk * dk;
        len[1] = w->hk * dk;
        len[2] = hv * dv;
        if (take_packed_rows(m, pool, i, "linear_attn.in_proj_qkv.weight", qkv_all,
                             src[0], len[0], &l->in_proj, 0, err)
            || take_packed_rows(m, pool, i, "linear_attn.in_proj_qkv.weight",
                                qkv_all, src[1], len[1], &l->in_proj, len[0], err)
            || take_packed_rows(m, pool, i, "linear_attn.in_proj_qkv.weight",
                                qkv_all, src[2], len[2], &l->in_proj,
                                len[0] + len[1], err)
            || take_packed_rows(m, pool, i, "linear_attn.in_proj_z.weight", Hv * dv,
                                sh->v_head0 * dv, hv * dv, &l->in_proj,
                                w->qkv_dim, err)
            || take_packed_rows(m, pool, i, "linear_attn.in_proj_b.weight", Hv,
                                sh->v_head0, hv, &l->in_proj,
                                w->qkv_dim + w->gdn_v_dim, err)
            || take_packed_rows(m, pool, i, "linear_attn.in_proj_a.weight", Hv,
                                sh->v_head0, hv, &l->in_proj,
                                w->qkv_dim + w->gdn_v_dim + hv, err)
            || take_layer(m, pool, i, "linear_attn.conv1d.weight", qkv_all * K,
                          tmp, err)
            || take_layer_rows(m, pool, i, "linear_attn.A_log", Hv, sh->v_head0,
                               hv, l->A_log, err)
            || take_layer_rows(m, pool, i, "linear_attn.dt_bias", Hv, sh->v_head0,
                               hv, l->dt_bias, err)
            || take_layer(m, pool, i, "linear_attn.norm.weight", dv, l->gdn_norm, err)
            || take_segments(m, pool, w, i, "linear_attn.out_proj.weight",
                             Hv * dv, sh->v_head0 * dv, l->out_proj, err))
        {
            goto done;
        }
        /* conv1d.weight [channels][1][kernel] -> [kernel][this rank's
         * channels], in the order of its in_proj rows */
        ch = 0;
        for (p = 0; p < 3; p++) {
            int64_t  j, k;

            for (j = 0; j < len[p]; j++, ch++) {
                for (k = 0; k < K; k++) {
                    l->conv[k * w->qkv_dim + ch] = tmp[(src[p] + j) * K + k];
                }
            }
        }
    }
    w->bytes = sizeof(float) * (size_t) size;
    for (i = 0; i < c->num_hidden_layers; i++) {
        l = &w->layers[i];
        w->bytes += clef_cpu_wpack_bytes(&l->in_proj)
                    + clef_cpu_wpack_bytes(&l->qkv_proj)
                    + clef_cpu_wpack_bytes(&l->gate_up);
        for (p = 0; p < w->nseg; p++) {
            w->bytes += clef_cpu_wpack_bytes(&l->out_proj[p])
                        + clef_cpu_wpack_bytes(&l->o_proj[p])
                        + clef_cpu_wpack_bytes(&l->down[p]);
        }
    }
    rc = 0;
    goto done;

nomem:
    clef_error_fail(err, CLEF_E_NO_MEMORY,
                    "out of memory for %.1f GB of weights (%.1f GB in bf16)",
                    (double) (size + packed) * 4 / 1e9,
                    (double) (size * 4 + packed * 2) / 1e9);
done:
    free(tmp);
    if (rc != 0) {
        clef_cpu_weights_free(w);
    }
    return rc;
}

void
clef_cpu_weights_free(clef_cpu_weights *w)
{
    clef_cpu_layer  *l;
    int              i, j;

    for (i = 0; w->layers != NULL && i < w->cfg.num_hidden_layers; i++) {
        l = &w->layers[i];
        clef_cpu_wpack_free(&l->in_proj);
        clef_cpu_wpack_free(&l->qkv_proj);
        clef_cpu_wpack_free(&l->gate_up);
        for (j = 0; j < CLEF_SHARD_SEGS_MAX; j++) {
            clef_cpu_wpack_free(&l->out_proj[j]);
            clef_cpu_wpack_free(&l->o_proj[j]);
            clef_cpu_wpack_free(&l->down[j]);
        }
    }
    free(w->layers);
    free(w->block);
    clef_cpu_bf16_native_close(w->native);
    w->layers = NULL;
    w->block = NULL;
    w->native = NULL;
}
