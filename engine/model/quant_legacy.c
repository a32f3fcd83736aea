/*
 * The 32-value block types: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0.
 *
 *   Q4_0  f16 d, 16 bytes of nibbles            x = d * (q - 8)
 *   Q4_1  f16 d, f16 m, 16 bytes of nibbles     x = d * q + m
 *   Q5_0  f16 d, u32 high bits, 16 bytes        x = d * (q - 16)
 *   Q5_1  f16 d, f16 m, u32 high bits, 16 bytes x = d * q + m
 *   Q8_0  f16 d, 32 int8                        x = q * d
 *
 * Value j < 16 of a block is the low nibble of byte j, value j + 16 its
 * high nibble; a 5-bit value's fifth bit is bit j of the u32.  Each
 * product and sum is rounded to f32 on its own, as gguf-py's numpy
 * expressions are (this file must not be built with FMA contraction).
 */
#include "model/quant_impl.h"

#define QK  32

/* The 5-bit values of a Q5 block: nibbles from qs, fifth bits from qh. */
static void
q5_values(const uint8_t *qh4, const uint8_t *qs, int q[QK])
{
    uint32_t  qh;
    int       j;

    memcpy(&qh, qh4, 4);
    for (j = 0; j < QK / 2; j++) {
        q[j] = (qs[j] & 0x0f) | (int) (((qh >> j) & 1) << 4);
        q[j + QK / 2] = (qs[j] >> 4) | (int) (((qh >> (j + QK / 2)) & 1) << 4);
    }
}

void
clef_q4_0_to_f32(const void *blocks, float *dst, int64_t n)
{
    const uint8_t  *b = blocks;
    float           d;
    int64_t         i;
    int             j;

    for (i = 0; i < n / QK; i++, b += 18, dst += QK) {
        d = q_rd_f16(b);
        for (j = 0; j < QK / 2; j++) {
            dst[j] = d * (float) ((b[2 + j] & 0x0f) - 8);
            dst[j + QK / 2] = d * (float) ((b[2 + j] >> 4) - 8);
        }
    }
}

void
clef_q4_1_to_f32(const void *blocks, float *dst, int64_t n)
{
    const uint8_t  *b = blocks;
    float           d, m, t;
    int64_t         i;
    int             j;

    for (i = 0; i < n / QK; i++, b += 20, dst += QK) {
        d = q_rd_f16(b);
        m = q_rd_f16(b + 2);
        for (j = 0; j < QK / 2; j++) {
            t = d * (float) (b[4 + j] & 0x0f);
            dst[j] = t + m;
            t = d * (float) (b[4 + j] >> 4);
            dst[j + QK / 2] = t + m;
        }
    }
}

void
clef_q5_0_to_f32(const void *blocks, float *dst, int64_t n)
{
    const uint8_t  *b = blocks;
    float           d;
    int64_t         i;
    int             j, q[QK];

    for (i = 0; i < n / QK; i++, b += 22, dst += QK) {
        d = q_rd_f16(b);
        q5_values(b + 2, b + 6, q);
        for (j = 0; j < QK; j++) {
            dst[j] = d * (float) (q[j] - 16);
        }
    }
}

void
clef_q5_1_to_f32(const void *blocks, float *dst, int64_t n)
{
    const uint8_t  *b = blocks;
    float           d, m, t;
    int64_t         i;
    int             j, q[QK];

    for (i = 0; i < n / QK; i++, b += 24, dst += QK) {
        d = q_rd_f16(b);
        m = q_rd_f16(b + 2);
        q5_values(b + 4, b + 8, q);
        for (j = 0; j < QK; j++) {
            t = d * (float) q[j];
            dst[j] = t + m;
        }
    }
}

void
clef_q8_0_to_f32(const void *blocks, float *dst, int64_t n)
{
    const uint8_t  *b = blocks;
    float           d;
    int64_t         i;
    int             j;

    for (i = 0; i < n / QK; i++, b += 34, dst += QK) {
        d = q_rd_f16(b);
        for (j = 0; j < QK; j++) {
            dst[j] = (float) (int8_t) b[2 + j] * d;
        }
    }
}

/* ---- quantizers ------------------------------------------------------ */

/* The value of largest magnitude, with its sign (the first one on ties). */
static float
signed_absmax(const float *x)
{
    float  m = 0, a = 0;
    int    j;

    for (j = 0; j < QK; j++) {
        if (x[j] > a || -x[j] > a) {
            a = x[j] > 0 ? x[j] : -x[j];
            m = x[j];
        }
    }
    return m;
}

static void
min_max(const float *x, float *mn, float *mx)
{
    int  j;

    *mn = *mx = x[0];
    for (j = 1; j < QK; j++) {
        *mn = x[j] < *mn ? x[j] : *mn;
        *mx = x[j] > *mx ? x[j] : *mx;
    }
}

/* Packs 32 values of 4 bits (the low bits of q) into 16 bytes. */
static void
pack_nibbles(const int q[QK], uint8_t *qs)
{
    int  j;

    for (j = 0; j < QK / 2; j++) {
        qs[j] = (uint8_t) ((q[j] & 0x0f) | ((q[j + QK / 2] & 0x0f) << 4));
    }
}

/* Packs 32 values of 5 bits: nibbles into qs, fifth bits into the u32. */
static void
pack_q5(const int q[QK], uint8_t *qh4, uint8_t *qs)
{
    uint32_t  qh = 0;
    int       j;

    pack_nibbles(q, qs);
    for (j = 0; j < QK; j++) {
        qh |= (uint32_t) ((q[j] >> 4) & 1) << j;
    }
    memcpy(qh4, &qh, 4);
}

/* Symmetric blocks (Q4_0, Q5_0): the largest magnitude maps onto -half,
 * the code half stands for zero. */
static void
quantize_sym(const float *x, uint8_t *b, int half, int *q)
{
    float  d, id;
    int    j;

    d = q_wr_f16(b, signed_absmax(x) / (float) -half);
    id = q_inv(d);
    for (j = 0; j < QK; j++) {
        q[j] = q_nearest(x[j] * id, -half, half - 1) + half;
    }
}

/* Blocks with a minimum (Q4_1, Q5_1): codes 0..levels from the minimum. */
static void
quantize_min(const float *x, uint8_t *b, int levels, int *q)
{
    float  mn, mx, d, m, id;
    int    j;

    min_max(x, &mn, &mx);
    d = q_wr_f16(b, (mx - mn) / (float) levels);
    m = q_wr_f16(b + 2, mn);
    id = q_inv(d);
    for (j = 0; j < QK; j++) {
        q[j] = q_nearest((x[j] - m) * id, 0, levels);
    }
}

void
clef_q4_0_from_f32(const float *src, void *blocks, int64_t n)
{
    uint8_t  *b = blocks;
    int64_t   i;
    int       q[QK];

    for (i = 0; i < n / QK; i++, b += 18, src += QK) {
        quantize_sym(src, b, 8, q);
        pack_nibbles(q, b + 2);
    }
}

void
clef_q4_1_from_f32(const float *src, void *blocks, int64_t n)
{
    uint8_t  *b = blocks;
    int64_t   i;
    int       q[QK];

    for (i = 0; i < n / QK; i++, b += 20, src += QK) {
        quantize_min(src, b, 15, q);
        pack_nibbles(q, b + 4);
    }
}

void
clef_q5_0_from_f32(const float *src, void *blocks, int64_t n)
{
    uint8_t  *b = blocks;
    int64_t   i;
    int       q[QK];

    for (i = 0; i < n / QK; i++, b += 22, src += QK) {
        quantize_sym(src, b, 16, q);
        pack_q5(q, b + 2, b + 6);
    }
}

void
clef_q5_1_from_f32(const float *src, void *blocks, int64_t n)
{
    uint8_t  *b = blocks;
    int64_t   i;
    int       q[QK];

    for (i = 0; i < n / QK; i++, b += 24, src += QK) {
        quantize_min(src, b, 31, q);
        pack_q5(q, b + 4, b + 8);
    }
}

void
clef_q8_0_from_f32(const float *src, void *blocks, int64_t n)
{
    uint8_t  *b = blocks;
    float     amax, d, id;
    int64_t   i;
    int       j;

    for (i = 0; i < n / QK; i++, b += 34, src += QK) {
        amax = signed_absmax(src);
        amax = amax < 0 ? -amax : amax;
        d = q_wr_f16(b, amax / 127.0f);
        id = q_inv(d);
        for (j = 0; j < QK; j++) {
            b[2 + j] = (uint8_t) (int8_t) q_nearest(src[j] * id, -127, 127);
        }
    }
}
