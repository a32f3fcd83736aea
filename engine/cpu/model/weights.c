#include "cpu/model/weights.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/kernels/qdot.h"
#include "cpu/kernels/wqdot.h"
#include "cpu/model/weights_parts.h"

static int
check_config(clef_cpu_weights *w, clef_error *err)
{
    const clef_text_config  *c = &w->cfg;
    double                   rot;
    int                      l, linear = 0, moe = 0;

    for (l = 0; l < c->num_hidden_layers && l < CLEF_MAX_LAYERS; l++) {
        linear |= c->layer[l].mixer == CLEF_MIXER_LINEAR;
        moe |= c->layer[l].mlp == CLEF_MLP_MOE;
    }
    if (c->hidden_size <= 0 || c->intermediate_size <= 0
        || c->num_hidden_layers <= 0 || c->num_hidden_layers > CLEF_MAX_LAYERS
        || c->num_attention_heads <= 0 || c->num_key_value_heads <= 0
        || c->head_dim <= 0
        || (linear && (c->linear_num_key_heads <= 0
                       || c->linear_num_value_heads <= 0
                       || c->linear_key_head_dim <= 0
                       || c->linear_value_head_dim <= 0
                       || c->linear_conv_kernel_dim <= 0))
        || (moe && (c->num_experts <= 0 || c->num_experts_per_tok <= 0
                    || c->num_experts_per_tok > c->num_experts
                    || c->moe_intermediate_size <= 0)))
    {
        return clef_error_fail(err, CLEF_E_MODEL,
                               "text config has a size that is not positive");
    }
    if (c->num_attention_heads % c->num_key_value_heads != 0
        || (linear
            && c->linear_num_value_heads % c->linear_num_key_heads != 0))
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

/* ---- a layer's norms ----------------------------------------------------- */

static int64_t
norms_floats(const clef_cpu_weights *w)
{
    return 2 * (int64_t) w->cfg.hidden_size;
}

static int64_t
no_packed(const clef_cpu_weights *w)
{
    return 0;
}

static int
norms_load(clef_cpu_loader *ld, clef_cpu_layer *l, int layer)
{
    int64_t  H = ld->w->cfg.hidden_size;

    l->norm.input = clef_cpu_loader_floats(ld, H);
    l->norm.post = clef_cpu_loader_floats(ld, H);
    return clef_cpu_take_norm(ld, CLEF_ROLE_INPUT_NORM, layer, l->norm.input)
           || clef_cpu_take_norm(ld, CLEF_ROLE_POST_NORM, layer, l->norm.post)
           ? -1 : 0;
}

static void
norms_free(clef_cpu_layer *l)
{
}

static size_t
norms_bytes(const clef_cpu_weights *w, const clef_cpu_layer *l)
{
    return 0;
}

const clef_cpu_part  clef_cpu_part_norms = {
    "norms", norms_floats, no_packed, norms_load, norms_free, norms_bytes
};

/* ---- a layer ------------------------------------------------------------ */

int
clef_cpu_layer_parts(const clef_layer_desc *d, int layer,
    const clef_cpu_part **parts, clef_error *err)
{
    parts[0] = &clef_cpu_part_norms;
    parts[1] = d->mixer == CLEF_MIXER_FULL ? &clef_cpu_part_attn
                                           : &clef_cpu_part_gdn;
    switch (d->mlp) {
    case CLEF_MLP_DENSE:
        parts[2] = &clef_cpu_part_dense;
        return 3;
    case CLEF_MLP_MOE:
        parts[2] = &clef_cpu_part_moe;
        return 3;
    default:
        return clef_error_fail(err, CLEF_E_MODEL,
                               "layer %d has an MLP of kind %d, which the "
                               "CPU backend does not run", layer,
                               (int) d->mlp);
    }
}

#define MAX_PARTS  4

/* 1 when q8's products take role r's tensors of the model's layers
 * `segs` segments of `width` columns at a time. */
static int
segments_cut(const clef_model *m, const clef_text_config *c, clef_role r,
    int64_t width, int segs)
{
    const clef_tensor  *t;
    int                 i, j;

    for (i = 0; i < c->num_hidden_layers; i++) {
        t = clef_model_role(m, r, i);
        for (j = 0; t != NULL && j < segs; j++) {
            if (!clef_cpu_wqdot_cuts(t, j * width, width)) {
                return 0;
            }
        }
    }
    return 1;
}

/* The row-parallel segments at q8.  Its products read whole blocks of the
 * stored weights (a K type's are 256 values) and of the activations (32),
 * so the model's fixed segments (the same sums on any number of ranks, as
 * at fp32) are kept where q8 takes each segment of down, o_proj and
 * out_proj apart; elsewhere one segment per rank (q8's answers at tp > 1
 * are then not those of tp = 1), a rank's segment q8 cannot take
 * multiplied at fp32 (clef_cpu_take_segments). */
static int
q8_segments(const clef_model *m, const clef_text_config *c, int tp)
{
    int      s = clef_shard_segments(c, tp);
    int64_t  o = (int64_t) c->num_attention_heads * c->head_dim;
    int64_t  v = (int64_t) c->linear_num_value_heads
                 * c->linear_value_head_dim;

    if (s > tp
        && segments_cut(m, c, CLEF_ROLE_MLP_DOWN, c->intermediate_size / s, s)
        && segments_cut(m, c, CLEF_ROLE_ATTN_O, o / s, s)
        && segments_cut(m, c, CLEF_ROLE_GDN_OUT, v / s, s))
    {
        return s;
    }
    return tp;
}

/* The text config, this rank's shard of it and the sizes that follow,
 * into w. */
static int
weights_layout(clef_cpu_weights *w, const clef_model *m, clef_precision prec,
    const clef_shard *shard, clef_error *err)
{
    const clef_text_config  *c;
    const clef_shard        *sh;
    int64_t                  hv, dv, hd, dk;

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
    /* fixed segments make the row-parallel products' sums the same on any
     * number of ranks */
    w->segs = prec == CLEF_PRECISION_Q8 ? q8_segments(m, c, sh->size)
                                        : clef_shard_segments(c, sh->size);
    w->nseg = w->segs / sh->size;
    w->seg0 = sh->rank * w->nseg;

    dk = c->linear_key_head_dim;
    dv = c->linear_value_head_dim;
    hd = c->head_dim;
    hv = sh->v_heads;
    w->hq = sh->q_heads;
    w->hkv = sh->kv_heads;
    w->hk = sh->k_heads;
    w->hv = sh->v_heads;
    w->inter = sh->inter;
    w->qkv_dim = (int) (2 * w->hk * dk + hv * dv);
    w->gdn_v_dim = (int) (hv * dv);
    w->gdn_in_dim = w->qkv_dim + w->gdn_v_dim + 2 * (int) hv;
    w->q_head_dim = (int) hd * (c->attn_output_gate ? 2 : 1);
    w->attn_in_dim = w->hq * w->q_head_dim + 2 * w->hkv * (int) hd;
    w->attn_o_dim = w->hq * (int) hd;
    return 0;
}

/* The GEMM the matrices take at w->prec, named in w->gemm: bf16 on native
 * instructions where oneDNN has them for every reduction length of the
 * model's matrices (gemm_bf16.h), the row-parallel ones by segment;
 * full_count: the model's layers of full attention. */
static void
weights_gemm(clef_cpu_weights *w, clef_cpu_pool *pool, int full_count)
{
    const clef_text_config  *c = &w->cfg;
    clef_precision           prec = w->prec;

    if (prec == CLEF_PRECISION_BF16) {
        int64_t  ks[5] = { c->hidden_size, w->inter / w->nseg,
                           w->attn_o_dim / w->nseg,
                           w->gdn_v_dim / w->nseg, c->moe_intermediate_size };
        int      nk = 2 + (full_count > 0);
        char     why[192];

        /* the reductions of the layers the model has */
        if (full_count < c->num_hidden_layers) {
            ks[nk++] = w->gdn_v_dim / w->nseg;
        }
        if (c->num_experts > 0) {
            ks[nk++] = c->moe_intermediate_size;
        }
        w->native = clef_cpu_bf16_native_open(ks, nk,
                                              clef_cpu_pool_size(pool), why,
                                              sizeof(why));
        if (w->native != NULL) {
            snprintf(w->gemm, sizeof(w->gemm), "%s",
                     clef_cpu_bf16_native_describe(w->native));
        } else {
            snprintf(w->gemm, sizeof(w->gemm), "%s; no native bf16 path: %s",
                     clef_cpu_gemm_describe_prec(prec), why);
        }
    } else if (prec == CLEF_PRECISION_Q8) {
        /* block-quantized weights take the integer products, the others
         * the fp32 GEMM */
        snprintf(w->gemm, sizeof(w->gemm), "%s; other weights: %s",
                 clef_qdot_describe(), clef_cpu_gemm_describe_prec(prec));
    } else {
        snprintf(w->gemm, sizeof(w->gemm), "%s",
                 clef_cpu_gemm_describe_prec(prec));
    }
}

int
clef_cpu_weights_load(clef_cpu_weights *w, const clef_model *m,
    clef_cpu_pool *pool, clef_precision prec, const clef_shard *shard,
    clef_error *err)
{
    const clef_text_config  *c;
    const clef_cpu_part     *parts[MAX_PARTS];
    clef_cpu_loader          ld;
    clef_cpu_layer          *l;
    char                     embed[160];
    int64_t                  H, qkv_all;
    int                      i, p, n, full_count = 0;
    int                      rc = -1;

    memset(w, 0, sizeof(*w));
    if (weights_layout(w, m, prec, shard, err) != 0) {
        return -1;
    }
    c = &w->cfg;
    H = c->hidden_size;
    qkv_all = 2 * (int64_t) c->linear_num_key_heads
              * c->linear_key_head_dim
              + (int64_t) c->linear_num_value_heads * c->linear_value_head_dim;

    memset(&ld, 0, sizeof(ld));
    ld.m = m;
    ld.pool = pool;
    ld.w = w;
    ld.err = err;
    clef_dims_text(&ld.dims, c);

    /* every layer's parts, refusing a kind this backend does not run
     * before anything is allocated; the plain vectors and (for the
     * message) the matrices they take */
    ld.floats = H;                                          /* final norm */
    for (i = 0; i < c->num_hidden_layers; i++) {
        full_count += c->layer[i].mixer == CLEF_MIXER_FULL;
        n = clef_cpu_layer_parts(&c->layer[i], i, parts, err);
        if (n < 0) {
            return -1;
        }
        for (p = 0; p < n; p++) {
            ld.floats += parts[p]->floats(w);
            ld.packed += parts[p]->packed(w);
        }
    }

    weights_gemm(w, pool, full_count);

    clef_role_name(c, CLEF_ROLE_EMBED, 0, embed, sizeof(embed));
    w->embed = clef_model_role(m, CLEF_ROLE_EMBED, 0);
    if (w->embed == NULL || w->embed->ndim != 2 || w->embed->shape[1] != H
        || w->embed->data == NULL)
    {
        return clef_error_fail(err, CLEF_E_MODEL,
            "tensor %s is missing or not [vocab, %lld]", embed, (long long) H);
    }

    w->layers = calloc((size_t) c->num_hidden_layers, sizeof(*w->layers));
    w->block = malloc(sizeof(float) * (size_t) ld.floats);
    /* the GDN's conv taps of every channel, before they are cut */
    ld.tmp = malloc(sizeof(float)
                    * (size_t) (c->linear_conv_kernel_dim * qkv_all + 1));
    if (w->layers == NULL || w->block == NULL || ld.tmp == NULL) {
        clef_cpu_loader_nomem(&ld);
        goto done;
    }

    ld.cur = w->block;
    w->final_norm = clef_cpu_loader_floats(&ld, H);
    if (clef_cpu_take_norm(&ld, CLEF_ROLE_FINAL_NORM, 0, w->final_norm)
        != 0)
    {
        goto done;
    }
    for (i = 0; i < c->num_hidden_layers; i++) {
        l = &w->layers[i];
        l->mixer = c->layer[i].mixer;
        l->mlp.kind = c->layer[i].mlp;
        n = clef_cpu_layer_parts(&c->layer[i], i, parts, err);
        for (p = 0; p < n; p++) {
            if (parts[p]->load(&ld, l, i) != 0) {
                goto done;
            }
        }
    }

    w->bytes = sizeof(float) * (size_t) ld.floats;
    for (i = 0; i < c->num_hidden_layers; i++) {
        n = clef_cpu_layer_parts(&c->layer[i], i, parts, err);
        for (p = 0; p < n; p++) {
            w->bytes += parts[p]->bytes(w, &w->layers[i]);
        }
    }
    rc = 0;

done:
    free(ld.tmp);
    if (rc != 0) {
        clef_cpu_weights_free(w);
    }
    return rc;
}

void
clef_cpu_weights_free(clef_cpu_weights *w)
{
    const clef_cpu_part  *parts[MAX_PARTS];
    clef_error            ignored;
    int                   i, p, n;

    for (i = 0; w->layers != NULL && i < w->cfg.num_hidden_layers; i++) {
        n = clef_cpu_layer_parts(&w->cfg.layer[i], i, parts, &ignored);
        for (p = 0; p < n; p++) {
            parts[p]->free(&w->layers[i]);
        }
    }
    free(w->layers);
    free(w->block);
    clef_cpu_bf16_native_close(w->native);
    w->layers = NULL;
    w->block = NULL;
    w->native = NULL;
}
