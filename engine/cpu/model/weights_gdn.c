/*
 * The Gated DeltaNet mixer's weights (weights_parts.h): in_proj_qkv,
 * in_proj_z, in_proj_b and in_proj_a fused into one matrix by rows (this
 * rank's key heads' q and k channels, its value heads' v, z, b and a), the
 * conv taps of its channels rearranged tap-major, A_log, dt_bias and the
 * gated norm in fp32, out_proj as row-parallel segments.
 */
#include "cpu/model/weights_parts.h"

static int64_t
gdn_floats(const clef_cpu_weights *w)
{
    return (int64_t) w->cfg.linear_conv_kernel_dim * w->qkv_dim + 2 * w->hv
           + w->cfg.linear_value_head_dim;
}

static int64_t
gdn_packed(const clef_cpu_weights *w)
{
    int64_t  H = w->cfg.hidden_size;

    return (int64_t) (clef_cpu_wpack_floats(w->gdn_in_dim, H)
                      + w->nseg
                        * clef_cpu_wpack_floats(H, w->gdn_v_dim / w->nseg));
}

static int
gdn_load(clef_cpu_loader *ld, clef_cpu_layer *l, int layer)
{
    static const clef_role   in[4] = {
        CLEF_ROLE_GDN_QKV, CLEF_ROLE_GDN_Z, CLEF_ROLE_GDN_B, CLEF_ROLE_GDN_A
    };
    const clef_cpu_weights  *w = ld->w;
    const clef_text_config  *c = &w->cfg;
    const clef_shard        *sh = &w->shard;
    clef_cpu_gdn_w            *g = &l->gdn;
    int64_t                  H = c->hidden_size, K = c->linear_conv_kernel_dim;
    int64_t                  Hk = c->linear_num_key_heads, hv = w->hv;
    int64_t                  dk = c->linear_key_head_dim;
    int64_t                  dv = c->linear_value_head_dim;
    int64_t                  src[3], len[3], ch, j, k;
    int                      p;

    g->conv = clef_cpu_loader_floats(ld, K * w->qkv_dim);
    g->A_log = clef_cpu_loader_floats(ld, hv);
    g->dt_bias = clef_cpu_loader_floats(ld, hv);
    g->norm = clef_cpu_loader_floats(ld, dv);
    if (clef_cpu_alloc_pack(ld, in, 4, layer, w->gdn_in_dim, H, &g->in_proj)
        != 0)
    {
        return clef_cpu_loader_nomem(ld);
    }
    /* the conv channels (rows of in_proj_qkv) of this rank's heads: its
     * key heads' q and k, its value heads' v */
    src[0] = sh->k_head0 * dk;
    src[1] = Hk * dk + sh->k_head0 * dk;
    src[2] = 2 * Hk * dk + sh->v_head0 * dv;
    len[0] = w->hk * dk;
    len[1] = w->hk * dk;
    len[2] = hv * dv;
    if (clef_cpu_take_rows(ld, CLEF_ROLE_GDN_QKV, layer, src[0], len[0],
                           &g->in_proj, 0)
        || clef_cpu_take_rows(ld, CLEF_ROLE_GDN_QKV, layer, src[1], len[1],
                              &g->in_proj, len[0])
        || clef_cpu_take_rows(ld, CLEF_ROLE_GDN_QKV, layer, src[2], len[2],
                              &g->in_proj, len[0] + len[1])
        || clef_cpu_take_rows(ld, CLEF_ROLE_GDN_Z, layer, sh->v_head0 * dv,
                              hv * dv, &g->in_proj, w->qkv_dim)
        || clef_cpu_take_rows(ld, CLEF_ROLE_GDN_B, layer, sh->v_head0, hv,
                              &g->in_proj, w->qkv_dim + w->gdn_v_dim)
        || clef_cpu_take_rows(ld, CLEF_ROLE_GDN_A, layer, sh->v_head0, hv,
                              &g->in_proj, w->qkv_dim + w->gdn_v_dim + hv)
        || clef_cpu_take_vector(ld, CLEF_ROLE_GDN_CONV, layer, ld->tmp)
        || clef_cpu_take_vector_rows(ld, CLEF_ROLE_GDN_A_LOG, layer,
                                     sh->v_head0, hv, g->A_log)
        || clef_cpu_take_vector_rows(ld, CLEF_ROLE_GDN_DT_BIAS, layer,
                                     sh->v_head0, hv, g->dt_bias)
        || clef_cpu_take_vector(ld, CLEF_ROLE_GDN_NORM, layer, g->norm)
        || clef_cpu_take_segments(ld, CLEF_ROLE_GDN_OUT, layer, H, w->gdn_v_dim,
                                  sh->v_head0 * dv, g->out_proj))
    {
        return -1;
    }
    /* conv1d.weight [channels][1][kernel] -> [kernel][this rank's
     * channels], in the order of its in_proj rows */
    ch = 0;
    for (p = 0; p < 3; p++) {
        for (j = 0; j < len[p]; j++, ch++) {
            for (k = 0; k < K; k++) {
                g->conv[k * w->qkv_dim + ch] = ld->tmp[(src[p] + j) * K + k];
            }
        }
    }
    return 0;
}

static void
gdn_free(clef_cpu_layer *l)
{
    clef_cpu_free_fused(&l->gdn.in_proj, l->gdn.out_proj);
}

static size_t
gdn_bytes(const clef_cpu_weights *w, const clef_cpu_layer *l)
{
    return clef_cpu_fused_bytes(w, &l->gdn.in_proj, l->gdn.out_proj);
}

const clef_cpu_part  clef_cpu_part_gdn = {
    "gated delta rule mixer", gdn_floats, gdn_packed, gdn_load, gdn_free,
    gdn_bytes
};
