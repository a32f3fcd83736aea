/*
 * The gated attention mixer's weights (weights_parts.h): q_proj (with each
 * head's output-gate rows), k_proj and v_proj of this rank's heads fused
 * into one matrix by rows, q_norm and k_norm in fp32, o_proj as
 * row-parallel segments.
 */
#include "cpu/model/weights_parts.h"

static int64_t
attn_floats(const clef_cpu_weights *w)
{
    return 2 * (int64_t) w->cfg.head_dim;
}

static int64_t
attn_packed(const clef_cpu_weights *w)
{
    int64_t  H = w->cfg.hidden_size;

    return (int64_t) (clef_cpu_wpack_floats(w->attn_in_dim, H)
                      + w->nseg
                        * clef_cpu_wpack_floats(H, w->attn_o_dim / w->nseg));
}

static int
attn_load(clef_cpu_loader *ld, clef_cpu_layer *l, int layer)
{
    static const clef_role   in[3] = {
        CLEF_ROLE_ATTN_Q, CLEF_ROLE_ATTN_K, CLEF_ROLE_ATTN_V
    };
    const clef_cpu_weights  *w = ld->w;
    const clef_shard        *sh = &w->shard;
    clef_cpu_attn_w           *a = &l->attn;
    int64_t                  H = w->cfg.hidden_size, hd = w->cfg.head_dim;
    int64_t                  qhd = w->q_head_dim;
    int64_t                  qrows = (int64_t) w->hq * qhd;
    int64_t                  kvrows = (int64_t) w->hkv * hd;

    a->q_norm = clef_cpu_loader_floats(ld, hd);
    a->k_norm = clef_cpu_loader_floats(ld, hd);
    if (clef_cpu_alloc_pack(ld, in, 3, layer, w->attn_in_dim, H, &a->qkv_proj)
        != 0)
    {
        return clef_cpu_loader_nomem(ld);
    }
    /* q (with each head's gate rows), k, v of this rank's heads; o_proj's
     * columns that read them */
    return clef_cpu_take_rows(ld, CLEF_ROLE_ATTN_Q, layer, sh->q_head0 * qhd,
                              qrows, &a->qkv_proj, 0)
           || clef_cpu_take_rows(ld, CLEF_ROLE_ATTN_K, layer, sh->kv_head0 * hd,
                                 kvrows, &a->qkv_proj, qrows)
           || clef_cpu_take_rows(ld, CLEF_ROLE_ATTN_V, layer, sh->kv_head0 * hd,
                                 kvrows, &a->qkv_proj, qrows + kvrows)
           || clef_cpu_take_norm(ld, CLEF_ROLE_ATTN_Q_NORM, layer, a->q_norm)
           || clef_cpu_take_norm(ld, CLEF_ROLE_ATTN_K_NORM, layer, a->k_norm)
           || clef_cpu_take_segments(ld, CLEF_ROLE_ATTN_O, layer, H,
                                     w->attn_o_dim, sh->q_head0 * hd, a->o_proj)
           ? -1 : 0;
}

static void
attn_free(clef_cpu_layer *l)
{
    clef_cpu_free_fused(&l->attn.qkv_proj, l->attn.o_proj);
}

static size_t
attn_bytes(const clef_cpu_weights *w, const clef_cpu_layer *l)
{
    return clef_cpu_fused_bytes(w, &l->attn.qkv_proj, l->attn.o_proj);
}

const clef_cpu_part  clef_cpu_part_attn = {
    "gated attention mixer", attn_floats, attn_packed, attn_load, attn_free,
    attn_bytes
};
