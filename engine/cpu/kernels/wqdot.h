/*
 * GGUF block weights on the CPU at the fast precision (base/precision.h's
 * CLEF_PRECISION_Q8): the packed weight format CLEF_CPU_WQDOT (wpack.h),
 * whose product is qdot.h's: int8 activation blocks times the weights'
 * own blocks.
 *
 * The loader hands the format the model's tensors range by range, as it
 * hands them to the block view (wblocks.h); each range's rows are repacked
 * at once into qdot.h's panels, one group per run of rows of one type
 * (a fused matrix's parts, llama-quantize's mixed types), with the bits
 * the file has: no fp32 or bf16 copy is ever made, and a plain tensor's
 * pages of the mapped file are released once packed.  Columns stored in
 * another order (the file's reordered value heads) are not moved: the
 * activations are read in the stored order instead (qdot.h's amap).
 */
#ifndef CLEF_CPU_WQDOT_H
#define CLEF_CPU_WQDOT_H

#include <stddef.h>
#include <stdint.h>

#include "cpu/kernels/qdot.h"
#include "cpu/kernels/wpack.h"

typedef struct {
    clef_qdot_mat   q;
    int             order;    /* 0: not known yet, 1: x's, 2: amap's */
    int32_t        *amap;     /* q.cols / CLEF_QDOT_QK entries, or NULL */
    int             in_place; /* plain ranges read from the file at each
                                 product (qdot.h's src groups), not packed
                                 at load: a routed expert's */
    size_t          file_bytes;   /* what those ranges span */
} clef_cpu_wqdot;

/* W's plain ranges are read in place from now on (w of this format; a
 * no-op for another). */
void   clef_cpu_wqdot_in_place(clef_cpu_wpack *w);

/* 1 when weights stored in dt are multiplied by this format. */
int    clef_cpu_wqdot_takes(clef_dtype dt);

/* 1 unless t is stored in types these products take and its columns
 * [t_col, t_col + cols) cannot be taken apart from the rest of its rows:
 * a segment must hold whole blocks of each type its rows are stored in,
 * in one range of whole blocks where the file keeps the columns in
 * another order (GGUF's value heads of the delta rule). */
int    clef_cpu_wqdot_cuts(const clef_tensor *t, int64_t t_col,
    int64_t cols);

/* The format's entries (wpack.c's table). */
size_t clef_cpu_wqdot_bytes(int64_t rows, int64_t cols);
size_t clef_cpu_wqdot_held(const clef_cpu_wpack *w);
int    clef_cpu_wqdot_add(clef_cpu_wpack *w, clef_cpu_pool *pool,
    int64_t row, const clef_tensor *t, int64_t t_row, int64_t n,
    int64_t t_col);
void   clef_cpu_wqdot_linear(clef_cpu_pool *pool, const float *x,
    int64_t ldx, int64_t m, const clef_cpu_wpack *w, float *y, int64_t ldy,
    float beta, float *scratch, clef_precision prec);
void   clef_cpu_wqdot_release(clef_cpu_wpack *w);

#endif
