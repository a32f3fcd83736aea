/*
 * GGML's tensor types: the layout of one block of a GGUF tensor and its
 * conversion to and from f32.  The types ngx_clef reads are rows of the
 * storage-type table (dtype.h), which points at the functions below: a
 * GGUF tensor's type is a clef_dtype (clef_dtype_from_ggml()).
 *
 * A row of a GGUF tensor is a run of blocks; a block holds `block` values
 * in `bytes` bytes.  The types ngx_clef computes with are those llama.cpp's
 * converter and llama-quantize write for Clef (F32, F16, BF16, Q8_0, and
 * the Q4_K_M, Q5_K_M and Q6_K mixes with their fallbacks for rows that are
 * not a multiple of 256: Q4_0, Q4_1, Q5_0, Q5_1), and the ones it writes
 * for the smaller files, read only: Q2_K, Q3_K, the i-quants (IQ4_NL,
 * IQ4_XS, IQ3_XXS, IQ3_S, IQ2_XXS, IQ2_XS, IQ2_S, IQ1_S, IQ1_M), the
 * ternary TQ1_0 and TQ2_0, the fp4 types MXFP4 and NVFP4, and the binary
 * Q1_0 and Q2_0 (whose reference is ggml's: gguf-py does not dequantize
 * them).
 *
 * Dequantization is bit-identical to gguf-py's (gguf/quants.py): the same
 * f32 operations in the same order, each rounded on its own (no fused
 * multiply-add: Q4_1 is d * q, rounded, plus m, rounded), fp16 scales
 * widened exactly.  t/unit/test_quant.c checks every type against fixtures
 * made by gguf-py (t/reference/gen_quant_fixtures.py).
 *
 * The quantizers are ngx_clef's own (round to nearest, per-block min/max;
 * for the K types min/max per 32 or 16 values and 6- or 8-bit sub-scales):
 * any valid encoding reads back with every reader, and they are what the
 * GGUF writer uses for files of a given type.  They are not llama-quantize's
 * (which searches for smaller errors and uses an importance matrix).
 */
#ifndef CLEF_QUANT_H
#define CLEF_QUANT_H

#include <stddef.h>
#include <stdint.h>

/* GGML's type ids, as a GGUF tensor info stores them. */
typedef enum {
    CLEF_GGML_F32     = 0,
    CLEF_GGML_F16     = 1,
    CLEF_GGML_Q4_0    = 2,
    CLEF_GGML_Q4_1    = 3,
    CLEF_GGML_Q5_0    = 6,
    CLEF_GGML_Q5_1    = 7,
    CLEF_GGML_Q8_0    = 8,
    CLEF_GGML_Q2_K    = 10,
    CLEF_GGML_Q3_K    = 11,
    CLEF_GGML_Q4_K    = 12,
    CLEF_GGML_Q5_K    = 13,
    CLEF_GGML_Q6_K    = 14,
    CLEF_GGML_IQ2_XXS = 16,
    CLEF_GGML_IQ2_XS  = 17,
    CLEF_GGML_IQ3_XXS = 18,
    CLEF_GGML_IQ1_S   = 19,
    CLEF_GGML_IQ4_NL  = 20,
    CLEF_GGML_IQ3_S   = 21,
    CLEF_GGML_IQ2_S   = 22,
    CLEF_GGML_IQ4_XS  = 23,
    CLEF_GGML_IQ1_M   = 29,
    CLEF_GGML_BF16    = 30,
    CLEF_GGML_TQ1_0   = 34,
    CLEF_GGML_TQ2_0   = 35,
    CLEF_GGML_MXFP4   = 39,
    CLEF_GGML_NVFP4   = 40,
    CLEF_GGML_Q1_0    = 41,
    CLEF_GGML_Q2_0    = 42
} clef_ggml_type;

#define CLEF_QK_K  256      /* values per block of the K types */

/* The layout of any type GGML defines (Q2_K, IQ2_XXS, MXFP4, ...), so that
 * a file holding one can be checked and the type named: 0 and its name,
 * values and bytes per block; -1 for an id GGML does not define. */
int clef_ggml_type_layout(uint32_t type, const char **name, int *block,
    int *bytes);

/* Bytes of one row of n values of a type: -1 when n is not a multiple of
 * its block, the id is unknown or the size would not fit an int64. */
int64_t clef_ggml_row_bytes(uint32_t type, int64_t n);

/* f32 -> f16, rounded to nearest even; overflow to infinity, NaN kept
 * quiet. */
uint16_t clef_f32_to_f16(float f);

/* The dequantizers, one per type (n: values). */
void clef_f32_to_f32(const void *blocks, float *dst, int64_t n);
void clef_f16_blocks_to_f32(const void *blocks, float *dst, int64_t n);
void clef_bf16_blocks_to_f32(const void *blocks, float *dst, int64_t n);
void clef_q4_0_to_f32(const void *blocks, float *dst, int64_t n);
void clef_q4_1_to_f32(const void *blocks, float *dst, int64_t n);
void clef_q5_0_to_f32(const void *blocks, float *dst, int64_t n);
void clef_q5_1_to_f32(const void *blocks, float *dst, int64_t n);
void clef_q8_0_to_f32(const void *blocks, float *dst, int64_t n);
void clef_q4_k_to_f32(const void *blocks, float *dst, int64_t n);
void clef_q5_k_to_f32(const void *blocks, float *dst, int64_t n);
void clef_q6_k_to_f32(const void *blocks, float *dst, int64_t n);

/* Types ngx_clef reads and does not write (llama-quantize's, with their
 * search for small errors and importance matrices): quant_k_low.c,
 * quant_iq4.c, quant_iq.c, quant_tq.c.  Their table rows have no
 * quantizer. */
void clef_q2_k_to_f32(const void *blocks, float *dst, int64_t n);
void clef_q3_k_to_f32(const void *blocks, float *dst, int64_t n);
void clef_iq4_nl_to_f32(const void *blocks, float *dst, int64_t n);
void clef_iq4_xs_to_f32(const void *blocks, float *dst, int64_t n);
void clef_mxfp4_to_f32(const void *blocks, float *dst, int64_t n);
void clef_nvfp4_to_f32(const void *blocks, float *dst, int64_t n);
void clef_iq2_xxs_to_f32(const void *blocks, float *dst, int64_t n);
void clef_iq2_xs_to_f32(const void *blocks, float *dst, int64_t n);
void clef_iq2_s_to_f32(const void *blocks, float *dst, int64_t n);
void clef_iq3_xxs_to_f32(const void *blocks, float *dst, int64_t n);
void clef_iq3_s_to_f32(const void *blocks, float *dst, int64_t n);
void clef_iq1_s_to_f32(const void *blocks, float *dst, int64_t n);
void clef_iq1_m_to_f32(const void *blocks, float *dst, int64_t n);
void clef_tq1_0_to_f32(const void *blocks, float *dst, int64_t n);
void clef_tq2_0_to_f32(const void *blocks, float *dst, int64_t n);
void clef_q1_0_to_f32(const void *blocks, float *dst, int64_t n);
void clef_q2_0_to_f32(const void *blocks, float *dst, int64_t n);

/*
 * The integer form of a 256-value block of the types read only: value v is
 *
 *     x = (d * sc[v / 16]) * q[v] - (dmin * mn[v / 16])
 *
 * for int8 codes q and scales sc, mn (mins 0: no second term), d and dmin
 * exact f32 numbers (an fp16 field, times a power of two for the
 * i-quants: IQ2 d / 8, IQ3_XXS d / 4, IQ1 d / 8, whose codes are then the
 * grid's elements with their signs, 8 g +- 1 for IQ1).  Each product is
 * exact but the last, so the value is the one gguf-py computes in its own
 * order: the dequantizers of these types are this formula
 * (clef_qk_int_to_f32), checked against gguf-py bit for bit, and the
 * CPU's integer products repack the same codes (cpu/kernels/qconv.c).
 */
typedef struct {
    int8_t  q[256];
    int8_t  sc[16];
    int8_t  mn[16];
    float   d, dmin;
    int     mins;
} clef_qk_int;

typedef void (*clef_qk_int_fn)(const void *block, clef_qk_int *f);

void clef_q2_k_int(const void *block, clef_qk_int *f);
void clef_q3_k_int(const void *block, clef_qk_int *f);
void clef_iq4_xs_int(const void *block, clef_qk_int *f);
void clef_iq3_xxs_int(const void *block, clef_qk_int *f);
void clef_iq3_s_int(const void *block, clef_qk_int *f);
void clef_iq2_xxs_int(const void *block, clef_qk_int *f);
void clef_iq2_xs_int(const void *block, clef_qk_int *f);
void clef_iq2_s_int(const void *block, clef_qk_int *f);
void clef_iq1_s_int(const void *block, clef_qk_int *f);
void clef_iq1_m_int(const void *block, clef_qk_int *f);
void clef_tq1_0_int(const void *block, clef_qk_int *f);
void clef_tq2_0_int(const void *block, clef_qk_int *f);

/* The 256 values of f. */
void clef_qk_int_to_f32(const clef_qk_int *f, float *dst);

/* IQ4_NL's 32 codes, Q1_0's 128 (+-1), Q2_0's 64 (-1 .. 2): x = d * q, d
 * their fp16 field at 0. */
void clef_iq4_nl_codes(const void *block, int8_t q[32]);
void clef_q1_0_codes(const void *block, int8_t q[128]);
void clef_q2_0_codes(const void *block, int8_t q[64]);

/* The quantizers, one per type. */
void clef_f32_from_f32(const float *src, void *blocks, int64_t n);
void clef_f16_from_f32(const float *src, void *blocks, int64_t n);
void clef_bf16_from_f32(const float *src, void *blocks, int64_t n);
void clef_q4_0_from_f32(const float *src, void *blocks, int64_t n);
void clef_q4_1_from_f32(const float *src, void *blocks, int64_t n);
void clef_q5_0_from_f32(const float *src, void *blocks, int64_t n);
void clef_q5_1_from_f32(const float *src, void *blocks, int64_t n);
void clef_q8_0_from_f32(const float *src, void *blocks, int64_t n);
void clef_q4_k_from_f32(const float *src, void *blocks, int64_t n);
void clef_q5_k_from_f32(const float *src, void *blocks, int64_t n);
void clef_q6_k_from_f32(const float *src, void *blocks, int64_t n);

#endif
