/*
 * Inside the CPU weight loader (weights.h): a decoder layer is loaded part
 * by part (its norms, its mixer, its MLP), each part by a loader of its
 * own file that knows its tensors by their roles (model/roles.h) and the
 * helpers below, which cut this rank's slice of a tensor out of the
 * mapped checkpoint and convert or pack it.
 *
 * A part says how many plain fp32 floats it needs per layer (they are
 * carved from one block, w->block), how many its packed matrices would
 * take in fp32 (for the message when memory runs out), how to load and
 * free it and the bytes it holds.  A layer part (the dense MLP, Clef
 * Omni's routed experts) is a clef_cpu_part, selected by the layer's kind
 * in clef_cpu_layer_parts().
 */
#ifndef CLEF_CPU_WEIGHTS_PARTS_H
#define CLEF_CPU_WEIGHTS_PARTS_H

#include "cpu/model/weights.h"
#include "model/roles.h"

typedef struct {
    const clef_model   *m;
    clef_cpu_pool      *pool;
    clef_cpu_weights   *w;
    clef_dims           dims;      /* the model's sizes (not the rank's) */
    float              *cur;       /* the next free float of w->block */
    float              *tmp;       /* scratch: a layer's largest vector */
    int64_t             floats;    /* of the vectors, all layers */
    int64_t             packed;    /* of the matrices in fp32, all layers */
    clef_error         *err;
} clef_cpu_loader;

typedef struct {
    const char  *name;
    int64_t    (*floats)(const clef_cpu_weights *w);
    int64_t    (*packed)(const clef_cpu_weights *w);
    int        (*load)(clef_cpu_loader *ld, clef_cpu_layer *l, int layer);
    void       (*free)(clef_cpu_layer *l);
    size_t     (*bytes)(const clef_cpu_weights *w, const clef_cpu_layer *l);
} clef_cpu_part;

extern const clef_cpu_part  clef_cpu_part_norms;     /* weights.c */
extern const clef_cpu_part  clef_cpu_part_gdn;       /* weights_gdn.c */
extern const clef_cpu_part  clef_cpu_part_attn;      /* weights_attn.c */
extern const clef_cpu_part  clef_cpu_part_dense;     /* weights_mlp.c */
extern const clef_cpu_part  clef_cpu_part_moe;       /* weights_moe.c */

/* The parts of a layer of description d, in load order: its norms, its
 * mixer, its MLP; the count, or -1 (err filled) for a kind the CPU
 * backend does not run. */
int clef_cpu_layer_parts(const clef_layer_desc *d, int layer,
    const clef_cpu_part **parts, clef_error *err);

/* n floats of w->block for a part's vector. */
float *clef_cpu_loader_floats(clef_cpu_loader *ld, int64_t n);

/* Role r of layer `layer` (a vector the CPU keeps in fp32): all of it, or
 * rows [row0, row0 + rows) of it, into dst. */
int clef_cpu_take_vector(clef_cpu_loader *ld, clef_role r, int layer,
    float *dst);
/* An RMSNorm's weight of role r as its multiplier (cpu/ops/norm.h): 1 + w
 * where the model's norms are zero-centred, else w. */
int clef_cpu_take_norm(clef_cpu_loader *ld, clef_role r, int layer,
    float *dst);
int clef_cpu_take_vector_rows(clef_cpu_loader *ld, clef_role r, int layer,
    int64_t row0, int64_t rows, float *dst);

/* Allocates pack (rows x cols) for the matrix fused from roles rs[0..n) of
 * layer `layer`, in the format their stored types and the precision call
 * for (wpack.h). */
int clef_cpu_alloc_pack(clef_cpu_loader *ld, const clef_role *rs, int n,
    int layer, int64_t rows, int64_t cols, clef_cpu_wpack *pack);

/* Rows [src0, src0 + rows) of role r's matrix into rows [row0, row0 +
 * rows) of pack (column-parallel: a rank's heads). */
int clef_cpu_take_rows(clef_cpu_loader *ld, clef_role r, int layer,
    int64_t src0, int64_t rows, clef_cpu_wpack *pack, int64_t row0);

/* Every row of expert e's matrix of per-expert role r into rows [row0,
 * row0 + its rows) of pack. */
int clef_cpu_take_expert_rows(clef_cpu_loader *ld, clef_role r, int layer,
    int expert, clef_cpu_wpack *pack, int64_t row0);

/* Role r's row-parallel matrix as this rank's segments (rowpar.h):
 * segment j is its columns [col0 + j k, col0 + (j + 1) k), k = cols /
 * nseg, in packs[j], allocated here. */
int clef_cpu_take_segments(clef_cpu_loader *ld, clef_role r, int layer,
    int64_t rows, int64_t cols, int64_t col0, clef_cpu_wpack *packs);

/* Frees, and counts the bytes of, a part's fused input matrix and its
 * row-parallel output segments (w->nseg of them). */
void   clef_cpu_free_fused(clef_cpu_wpack *in, clef_cpu_wpack *segs);
size_t clef_cpu_fused_bytes(const clef_cpu_weights *w, const clef_cpu_wpack *in,
    const clef_cpu_wpack *segs);

/* The out-of-memory error of a load. */
int clef_cpu_loader_nomem(clef_cpu_loader *ld);

#endif
