/*
 * Clef Omni's routed experts (weights_parts.h): the router (mlp.gate,
 * [E][H]) packed as any matrix, and each expert's gate_proj and up_proj
 * fused by rows into one [gate | up][H] matrix, its down_proj apart, so
 * that backbone_moe.c runs one product per expert over the tokens routed
 * to it.  A GGUF's experts are never copied: views of their slabs of the
 * file (the block view at fp32, groups read in place at q8, wqdot.h), so
 * only the experts tokens are routed to are read.  The experts are not
 * split by tensor parallelism (shard.h refuses tp > 1 for such a model),
 * so there are no segments here.
 */
#include "cpu/model/weights_parts.h"

#include <stdlib.h>

#include "cpu/kernels/wqdot.h"

static int64_t
moe_floats(const clef_cpu_weights *w)
{
    return 0;
}

static int64_t
moe_packed(const clef_cpu_weights *w)
{
    int64_t  H = w->cfg.hidden_size, I = w->cfg.moe_intermediate_size;
    int64_t  E = w->cfg.num_experts;

    return (int64_t) clef_cpu_wpack_floats(E, H)
           + E * (int64_t) (clef_cpu_wpack_floats(2 * I, H)
                            + clef_cpu_wpack_floats(H, I));
}

static int
moe_load(clef_cpu_loader *ld, clef_cpu_layer *l, int layer)
{
    static const clef_role   in[2] = { CLEF_ROLE_MOE_GATE, CLEF_ROLE_MOE_UP };
    static const clef_role   router = CLEF_ROLE_MOE_ROUTER;
    static const clef_role   down = CLEF_ROLE_MOE_DOWN;
    const clef_text_config  *c = &ld->w->cfg;
    clef_cpu_moe_w          *m = &l->mlp.moe;
    int64_t                  H = c->hidden_size, I = c->moe_intermediate_size;
    int                      e, E = c->num_experts;

    m->gate_up = calloc((size_t) E, sizeof(*m->gate_up));
    m->down = calloc((size_t) E, sizeof(*m->down));
    m->experts = m->gate_up != NULL && m->down != NULL ? E : 0;
    if (m->gate_up == NULL || m->down == NULL
        || clef_cpu_alloc_pack(ld, &router, 1, layer, E, H, &m->router) != 0)
    {
        return clef_cpu_loader_nomem(ld);
    }
    if (clef_cpu_take_rows(ld, router, layer, 0, E, &m->router, 0) != 0) {
        return -1;
    }
    for (e = 0; e < E; e++) {
        if (clef_cpu_alloc_pack(ld, in, 2, layer, 2 * I, H, &m->gate_up[e])
            != 0
            || clef_cpu_alloc_pack(ld, &down, 1, layer, H, I, &m->down[e])
               != 0)
        {
            return clef_cpu_loader_nomem(ld);
        }
        /* at q8 too an expert stays in the mapped file, read only when a
         * token is routed to it (fp32's block view already does) */
        clef_cpu_wqdot_in_place(&m->gate_up[e]);
        clef_cpu_wqdot_in_place(&m->down[e]);
        if (clef_cpu_take_expert_rows(ld, CLEF_ROLE_MOE_GATE, layer, e,
                                      &m->gate_up[e], 0) != 0
            || clef_cpu_take_expert_rows(ld, CLEF_ROLE_MOE_UP, layer, e,
                                         &m->gate_up[e], I) != 0
            || clef_cpu_take_expert_rows(ld, down, layer, e, &m->down[e], 0)
               != 0)
        {
            return -1;
        }
    }
    return 0;
}

static void
moe_free(clef_cpu_layer *l)
{
    clef_cpu_moe_w  *m = &l->mlp.moe;
    int              e;

    clef_cpu_wpack_free(&m->router);
    for (e = 0; e < m->experts; e++) {
        clef_cpu_wpack_free(&m->gate_up[e]);
        clef_cpu_wpack_free(&m->down[e]);
    }
    free(m->gate_up);
    free(m->down);
    m->gate_up = NULL;
    m->down = NULL;
    m->experts = 0;
}

static size_t
moe_bytes(const clef_cpu_weights *w, const clef_cpu_layer *l)
{
    const clef_cpu_moe_w  *m = &l->mlp.moe;
    size_t                 n = clef_cpu_wpack_bytes(&m->router);
    int                    e;

    for (e = 0; e < m->experts; e++) {
        n += clef_cpu_wpack_bytes(&m->gate_up[e])
             + clef_cpu_wpack_bytes(&m->down[e]);
    }
    return n;
}

const clef_cpu_part  clef_cpu_part_moe = {
    "routed experts", moe_floats, moe_packed, moe_load, moe_free, moe_bytes
};
