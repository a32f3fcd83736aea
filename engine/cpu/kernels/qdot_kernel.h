/*
 * Inside the quantized products (qdot.h): the layouts the kernels read and
 * the kernels' interface, one table of tiles per instruction set.
 *
 * Activations (qact.c) of a run of `ab` rows (a multiple of
 * QD_ROWS_ALIGN, the rows past the run's own zero) and k / 32 blocks:
 *     codes  int8 [k / 32][ab][32]          block b of row i at
 *                                           (b * ab + i) * 32
 *     meta   clef_qdot_ameta [k / 32][ab]   the same order
 *
 * Weights (qpack.c): a group's panel is CLEF_QDOT_PANEL rows, block after
 * block of its type (32 values, or 256 for a K type).  Inside a block a
 * "step" is 64 bytes: 4 bytes of each of the 16 rows, row r at 4 r, so one
 * 64-byte load (or two 32-byte halves, rows 0-7 and 8-15) gives 4 values
 * of every row, the 4-byte lanes a dot-product instruction sums.  A
 * "chunk" is a step of packed nibbles: its low nibbles are one step of
 * values, its high nibbles another.  Scales are arrays of 16 (one per
 * row): fp16 d and m as stored, a K type's sub-block scales and minima one
 * byte each, Q6_K's int8 scales as they are.  Offsets, in bytes from the
 * block:
 *
 *   Q8_0   d 0, step j (values 4j .. 4j+3) at 32 + 64 j            544
 *   Q4_0   d 0, chunk c at 32 + 64 c: low = values 4c + i,          288
 *          high = values 16 + 4c + i (the file's byte 4c + i)
 *   Q4_1   d 0, m 32, chunks at 64                                  320
 *   Q5_0   d 0, fifth bits 32, chunks at 96                         352
 *   Q5_1   d 0, m 32, fifth bits 64, chunks at 128                  384
 *   Q4_K   d 0, dmin 32, sc[8][16] 64, mn[8][16] 192,              2368
 *          chunks of sub-block pair p at 320 + 64 (8p + c): low =
 *          sub-block 2p's values 4c + i, high = sub-block 2p + 1's
 *   Q5_K   as Q4_K, then sub-block s's fifth bits at 2368 + 64 s   2880
 *   I8     d as f32 [16] 0, dmin f32 [16] 64, sc[16][16] int8 128 4736
 *          (one per 16 values), mn[16][16] int8 384, step j (values
 *          4j .. 4j+3, int8 codes) at 640 + 64 j: a 256-value integer
 *          form (model/quant.h) as it is, I8M the same with minima
 *   NL4    the block's scale as f32 [16] 0, chunks at 64: indices  320
 *          into IQ4_NL's codebook, as Q4_0's (IQ4_NL's blocks;
 *          MX4 the same into MXFP4's doubled e2m1 values, the scale
 *          2^(e - 128))
 *   X4     IQ4_XS's 256 values: d [16] 0, sc - 32 int8 [8][16] 32  2208
 *          (one per 32 values), sub-block s's chunks at 160 +
 *          64 (4s + c), indices into IQ4_NL's codebook as NL4's
 *   Q3_K   d [16] 0, sc - 32 int8 [16][16] 32 (one per 16         1824
 *          values), 2-bit steps of half h (128 values) at 288 +
 *          64 (8h + c): bits 2j, 2j + 1 of byte (r, i) are
 *          sub-block 4h + j's value 4c + i (the file's qs bytes 32h
 *          + 4c + i as they are); sub-block s's third bits at 1312 +
 *          64 s as a fifth-bit vector (below); codes q + 4 in 0..7
 *   Q2_K   d [16] 0, dmin [16] 32, the file's scale bytes         1344
 *          [16][16] at 64 (low nibble the scale, high the
 *          minimum, one per 16 values), 2-bit steps as Q3_K's at
 *          320
 *   Q6_K   d 0, sc[16][16] 32 (one per 16 values), low nibbles     3360
 *          of half h (128 values), quarter e in {0, 1}, chunk c at
 *          288 + 64 (16 h + 8 e + c): low = sub-block 4h + e's values
 *          4c + i, high = sub-block 4h + e + 2's; 2-bit high parts of
 *          half h step c at 2336 + 64 (8 h + c), sub-block 4h + j's in
 *          bits 2j, 2j + 1
 *
 * A fifth-bit vector (64 bytes, 16 rows x 4) holds, in bit j of byte
 * (r, i), the fifth bit of value 4j + i of row r.
 */
#ifndef CLEF_CPU_QDOT_KERNEL_H
#define CLEF_CPU_QDOT_KERNEL_H

#include <stddef.h>
#include <stdint.h>

#include "cpu/kernels/qdot.h"
#include "model/quant_iq_grids.h"

#define QD_STEP        64     /* bytes of one step of a panel */
#define QD_ROWS_ALIGN  12     /* activation runs are padded to a multiple
                                 of every kernel's rows per tile */

/* The types, in the order of the kernels' tables. */
typedef enum {
    QT_Q8_0 = 0,
    QT_Q4_0,
    QT_Q4_1,
    QT_Q5_0,
    QT_Q5_1,
    QT_Q4_K,
    QT_Q5_K,
    QT_Q6_K,
    QT_I8,
    QT_I8M,
    QT_NL4,
    QT_X4,
    QT_Q3_K,
    QT_Q2_K,
    QT_MX4,
    QT_COUNT
} qd_type;

/* Where a type's parts are in a block of a panel (the table above). */
#define QB_Q8_0   544
#define QB_Q4_0   288
#define QB_Q4_1   320
#define QB_Q5_0   352
#define QB_Q5_1   384
#define QB_Q4_K   2368
#define QB_Q5_K   2880
#define QB_Q6_K   3360
#define QB_I8     4736
#define QB_NL4    320
#define QB_X4     2208
#define QB_Q3_K   1824
#define QB_Q2_K   1344

#define QK_SC     64      /* K types: sub-block scales */
#define QK_MN     192     /* minima */
#define QK_QS     320     /* chunks */
#define QK_QH     2368    /* Q5_K's fifth bits */
#define Q6_SC     32
#define Q6_QL     288
#define Q6_QH     2336
#define I8_D      0
#define I8_DMIN   64
#define I8_SC     128
#define I8_MN     384
#define I8_QS     640
#define NL4_QS    64
#define X4_SC     32
#define X4_QS     160
#define Q3_SC     32
#define Q3_QS     288
#define Q3_QH     1312
#define Q2_DMIN   32
#define Q2_SC     64
#define Q2_QS     320

/* An activation block's scale and sums. */
typedef struct {
    float    d;       /* max |x| / 127 */
    float    dsa;     /* d * s, rounded once */
    int32_t  s;       /* sum of the 32 codes */
    int32_t  s0;      /* sum of the first 16 */
} clef_qdot_ameta;

/* One tile: rows [0, mr) of an activation run times the weight rows of
 * the tile, over every block of the reduction, into y (rows of ldy; y's
 * values added to when load is 1). */
typedef struct {
    const int8_t           *aq;     /* block 0 of the tile's first row */
    const clef_qdot_ameta  *am;
    int64_t                 ab;     /* rows of the activation run */
    const uint8_t          *w;      /* the tile's first panel, block 0 */
    size_t                  ps;     /* bytes from a panel to the next */
    int                     h0;     /* 8-lane kernels: the tile starts in
                                       the panel's second half (rows
                                       8-15) */
    int64_t                 nb;     /* blocks of the type */
    float                  *y;
    int64_t                 ldy;
    int                     load;
} clef_qdot_tile;

typedef void (*clef_qdot_tile_fn)(const clef_qdot_tile *t);

/* An instruction set's kernels: per type, the activation rows of a tile,
 * its weight rows (8, 16 or 32), the tile, and for 32 a 16-row tile for
 * a group's odd last panel. */
typedef struct {
    const char         *name;
    const char         *what;
    int                 mr[QT_COUNT];
    int                 nr;
    clef_qdot_tile_fn   tile[QT_COUNT];
    clef_qdot_tile_fn   half[QT_COUNT];
} clef_qdot_isa;

/* The three, each NULL where the CPU lacks its instructions.  avxvnni
 * runs with AVX-VNNI's VEX encoding where the CPU has it, else the same
 * code with AVX512-VNNI's EVEX encoding at 256 bits (AVX512VL): the same
 * instructions' arithmetic, so that a CPU with AVX-512 tests it. */
const clef_qdot_isa *clef_qdot_kernels_avx512vnni(void);
const clef_qdot_isa *clef_qdot_kernels_avxvnni(void);
const clef_qdot_isa *clef_qdot_kernels_avx2(void);

/* The kernels that run: the widest the CPU has, or the one named by
 * CLEF_CPU_QDOT_KERNEL (avx512vnni, avxvnni, avx2) where the CPU has it
 * (the tests run each); decided once. */
const clef_qdot_isa *clef_qdot_kernels(void);

/* clef_qdot_linear() on the kernels k (the tests run every one the CPU
 * has in one process). */
void clef_qdot_linear_isa(const clef_qdot_isa *k, clef_cpu_pool *pool,
    const float *x, int64_t ldx, int64_t m, const clef_qdot_mat *q, float *y,
    int64_t ldy, float beta, void *scratch);

/* How the blocks of a GGUF type reach the kernels (qconv.c): as they are,
 * or each rewritten exactly as a block of the type qt (convert, into a
 * buffer of that type's file block, or for I8 and I8M of a clef_qk_int). */
typedef struct {
    uint32_t  ggml;
    int       qt;                   /* the kernels' type */
    int       values;               /* of the file's block: qt's, or a
                                       multiple of them (Q1_0, Q2_0) */
    int       bytes;                /* of the file's block */
    /* qt's block `part` of the file's block (0 but for a multiple) */
    void    (*convert)(const uint8_t *block, int part, uint8_t *out);
} qd_source;

/* NULL for a type not multiplied here. */
const qd_source *qd_source_of(uint32_t ggml);

/* The kernels' type of a GGUF type; -1 for one not multiplied here. */
int qd_type_of(uint32_t ggml);

/* Values per block and bytes of one block of a panel, per type. */
extern const int  qd_block_values[QT_COUNT];
extern const int  qd_block_bytes[QT_COUNT];

/* Quantizes rows [r0, r1) of x (k columns, row stride ldx) into rows
 * [r0, r1) of an activation run of ab rows at aq / am, block b from x's
 * block amap[b] (or b when amap is NULL: qdot.h); rows of x past m
 * (r >= m) are zeros. */
void clef_qdot_quantize_rows(const float *x, int64_t ldx, int64_t m, int64_t k,
    const int32_t *amap, int64_t r0, int64_t r1, int8_t *aq,
    clef_qdot_ameta *am, int64_t ab);

#endif
