/*
 * The CPU's products over block-quantized weights at the fast precision
 * (base/precision.h's CLEF_PRECISION_Q8): activations quantized to int8
 * blocks, integer dot products against the weights' own blocks, fp32 sums
 * of the blocks' scaled results.
 *
 * Weights.  A matrix W[rows][cols] (y = x . W^T) is a list of groups, each
 * a run of rows of one GGUF block type (a fused matrix's parts may differ:
 * llama-quantize's Q4_K_M gives some projections Q6_K, and rows that are
 * not a multiple of 256 fall back to Q5_0 or Q8_0).  A group is kept in
 * panels of CLEF_QDOT_PANEL rows whose blocks are interleaved so that one
 * vector load gives four consecutive values of each of the panel's rows
 * (qpack.c): the same bits per value as the file's blocks (a K type's
 * 6-bit scales take a byte each, 2.8% more for Q4_K), no fp32 or bf16 copy.
 *
 * Activations.  Each row of x is cut in blocks of 32 values; a block keeps
 * d = max|x| / 127 in fp32, its values rounded to the nearest integer of
 * x / d (ties to even) in [-127, 127], and its integer sums (qact.c).
 * Blocks of 32 with an fp32 scale for every type: llama.cpp quantizes
 * activations in blocks of 32 with an fp16 scale for the 32-value types
 * and of 256 for the K types, coarser, so this stays closer to the exact
 * product on the same file.
 *
 * Arithmetic.  For weight row n, activation row m and each 32 values of
 * the reduction, in k order:
 *
 *     I  = the exact integer sum of the 32 products of the weights' codes
 *          and the activation's, less the code offset times the
 *          activation's sum (Q4_0 8, Q5_0 16, Q6_K 32), Q6_K's two halves
 *          each times their int8 scale first;
 *     t  = (float) I * ws               (ws: the block's weight scale,
 *                                        d, or d * sc for a K type: exact)
 *     y  = fma(t, da, y)                (da: the activation's scale)
 *     y  = fma(wm, da * S, y)           (types with a minimum: Q4_1, Q5_1
 *                                        wm = m; Q4_K, Q5_K wm = -dmin * mn;
 *                                        S the activation's integer sum)
 *
 * from y = 0 (or y's value when beta is 1).  The integer sums are exact on
 * every path and the float operations are the same ones in the same
 * order, so each element has the same bits on the AVX512-VNNI, AVX-VNNI and
 * AVX2 kernels (qdot_kernel.h), whatever the batch, the tile it falls in
 * or the thread count: it depends on its activation row and its weight
 * row only.  t/unit/test_cpu_qdot.c checks every kernel against a scalar
 * model of these lines, bit for bit.
 */
#ifndef CLEF_CPU_QDOT_H
#define CLEF_CPU_QDOT_H

#include <stddef.h>
#include <stdint.h>

#include "cpu/parallel/pool.h"

#define CLEF_QDOT_PANEL       16    /* weight rows per panel */
#define CLEF_QDOT_QK          32    /* activation values per block */
#define CLEF_QDOT_GROUPS_MAX  16    /* runs of one type in one matrix */

/* A run of rows of one block type. */
typedef struct {
    uint32_t        type;     /* its GGUF type (model/quant.h) */
    int64_t         row0, rows;   /* rows [row0, row0 + rows) of W */
    size_t          panel_bytes;  /* of one panel, all its columns */
    uint8_t        *data;     /* (rows + PANEL - 1) / PANEL panels, 64-byte
                                 aligned, the group's own allocation; NULL
                                 for a group read in place: */
    const uint8_t  *src;      /* its rows as the file's blocks, src_stride
                                 bytes apart, in x's column order: each
                                 product packs the panels it needs into
                                 scratch just before their tiles (a routed
                                 expert, whose rows stay in the mapped file
                                 and are read only when a token picks it) */
    size_t          src_stride;
} clef_qdot_group;

/*
 * The groups may come in any order of rows (a fused matrix's parts are
 * added as the loader reaches them).  amap, when not NULL, says that the
 * weights' columns are stored in another order than x's, in runs of whole
 * activation blocks (a GGUF file's reordered value heads): the product's
 * activation block b is x's block amap[b], so the stored blocks are
 * multiplied as they are, and each quantized block holds the same 32
 * values, hence the same bits, as in x's own order.
 */
typedef struct {
    int64_t          rows, cols;
    int              ngroups;
    clef_qdot_group  groups[CLEF_QDOT_GROUPS_MAX];
    const int32_t   *amap;    /* cols / QK entries, or NULL */
    size_t           bytes;
} clef_qdot_mat;

/* 1 when rows of `cols` values of GGUF type `type` are multiplied here:
 * Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K, Q3_K, Q2_K; IQ4_NL,
 * IQ4_XS and MXFP4 as codebook indices (NL4, X4, MX4); Q1_0, Q2_0, IQ3_S,
 * TQ1_0, TQ2_0 read as Q8_0's or Q6_K's blocks; IQ3_XXS, IQ2_XXS, IQ2_XS,
 * IQ2_S, IQ1_S, IQ1_M as int8 codes with int8 scales per 16 values
 * (qconv.c); with cols a whole number of its blocks.  NVFP4 is not (its
 * scale per 16 values is an e4m3: its products run at fp32). */
int    clef_qdot_type_ok(uint32_t type, int64_t cols);

/* Bytes a group of `rows` rows of `cols` values of `type` takes. */
size_t clef_qdot_group_bytes(uint32_t type, int64_t rows, int64_t cols);

/* Sets q up for a rows x cols matrix of n groups, group i rows[i] rows of
 * types[i] in that order, and allocates it (padding rows zeroed); -1 when
 * a type is not multiplied here (clef_qdot_type_ok), n is not 1 ..
 * CLEF_QDOT_GROUPS_MAX, the rows do not add up, or memory runs out. */
int    clef_qdot_mat_init(clef_qdot_mat *q, int64_t cols, const uint32_t *types,
    const int64_t *rows, int n);

/* One more group of q (q->cols set, zeroed at first): `rows` rows of
 * `type` from row0, allocated with its padding rows zeroed; -1 when the
 * type is not multiplied here, q holds CLEF_QDOT_GROUPS_MAX groups, or
 * memory runs out.  q->rows is left to the caller. */
int    clef_qdot_mat_add(clef_qdot_mat *q, uint32_t type, int64_t row0,
    int64_t rows);
void   clef_qdot_mat_free(clef_qdot_mat *q);

/* The same group read in place (src above): nothing allocated; the rows
 * are packed, bits unchanged, into the very panels clef_qdot_pack_rows()
 * would have made, so a product has the same bits either way. */
int    clef_qdot_mat_add_src(clef_qdot_mat *q, uint32_t type, int64_t row0,
    int64_t rows, const void *src, size_t stride);

/* Panels of group g's rows [r0, r0 + n) (r0 a multiple of the panel) from
 * its src into out (n / PANEL panels rounded up, the padding rows zero). */
void   clef_qdot_pack_panels(const clef_qdot_group *g, int64_t cols,
    int64_t r0, int64_t n, uint8_t *out);

/* Rows [row, row + n) of W from GGUF blocks: row r's blocks at src + r *
 * row_bytes.  The rows lie in one group, whose type the blocks have, and
 * are stored in the order amap says (or x's).
 * Rows may be packed from several threads at once, apart. */
void   clef_qdot_pack_rows(clef_qdot_mat *q, int64_t row, int64_t n,
    const void *src, size_t row_bytes);

/* Bytes of scratch clef_qdot_linear() needs for k columns of x: its
 * quantized activations, at most as many bytes as the fp32 GEMM's
 * clef_cpu_linear_scratch_floats(k) floats. */
size_t clef_qdot_scratch_bytes(int64_t k);

/* y[m][rows] = x[m][cols] . W^T + beta y (beta 0 or 1) over the pool. */
void   clef_qdot_linear(clef_cpu_pool *pool, const float *x, int64_t ldx,
    int64_t m, const clef_qdot_mat *q, float *y, int64_t ldy, float beta,
    void *scratch);

/* The kernels (qdot_kernel.h): which one runs, by name ("avx512vnni",
 * "avxvnni", "avx2"), and a line for logs and `clef bench`. */
const char *clef_qdot_kernel_name(void);
const char *clef_qdot_describe(void);

#endif
