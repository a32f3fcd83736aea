/*
 * The dense SwiGLU MLP's weights (weights_parts.h): gate_proj and up_proj
 * (this rank's intermediate columns of each) fused into one matrix by
 * rows, down_proj (the matching columns of its input) as row-parallel
 * segments.
 *
 * Clef Omni's MoE MLP joins beside it as a part of its own (router in
 * fp32, each expert's gate|up and down packed apart so that an expert runs
 * one GEMM over its tokens, the shared expert and its gate), selected in
 * clef_cpu_layer_parts() by CLEF_MLP_MOE.
 */
#include "cpu/model/weights_parts.h"

static int64_t
dense_floats(const clef_cpu_weights *w)
{
    return 0;
}

static int64_t
dense_packed(const clef_cpu_weights *w)
{
    int64_t  H = w->cfg.hidden_size, I = w->inter;

    return (int64_t) (clef_cpu_wpack_floats(2 * I, H)
                      + w->nseg * clef_cpu_wpack_floats(H, I / w->nseg));
}

static int
dense_load(clef_cpu_loader *ld, clef_cpu_layer *l, int layer)
{
    static const clef_role   in[2] = { CLEF_ROLE_MLP_GATE, CLEF_ROLE_MLP_UP };
    const clef_cpu_weights  *w = ld->w;
    clef_cpu_dense_w          *d = &l->mlp.dense;
    int64_t                  H = w->cfg.hidden_size, I = w->inter;
    int64_t                  i0 = w->shard.inter0;

    if (clef_cpu_alloc_pack(ld, in, 2, layer, 2 * I, H, &d->gate_up) != 0) {
        return clef_cpu_loader_nomem(ld);
    }
    return clef_cpu_take_rows(ld, CLEF_ROLE_MLP_GATE, layer, i0, I,
                              &d->gate_up, 0)
           || clef_cpu_take_rows(ld, CLEF_ROLE_MLP_UP, layer, i0, I,
                                 &d->gate_up, I)
           || clef_cpu_take_segments(ld, CLEF_ROLE_MLP_DOWN, layer, H, I, i0,
                                     d->down)
           ? -1 : 0;
}

static void
dense_free(clef_cpu_layer *l)
{
    clef_cpu_free_fused(&l->mlp.dense.gate_up, l->mlp.dense.down);
}

static size_t
dense_bytes(const clef_cpu_weights *w, const clef_cpu_layer *l)
{
    return clef_cpu_fused_bytes(w, &l->mlp.dense.gate_up, l->mlp.dense.down);
}

const clef_cpu_part  clef_cpu_part_dense = {
    "dense MLP", dense_floats, dense_packed, dense_load, dense_free, dense_bytes
};
