/*
 * The ternary and binary types, read only.  TQ1_0 and TQ2_0 (256 values a
 * block, each -1, 0 or 1 times an f16 scale) as integer forms (quant.h, sc
 * 1), the values quant_int.c's; Q1_0 (128 values: f16 d, one bit each, x =
 * +-d) and Q2_0 (64: f16 d, two bits each, value j at bits 2 (j % 4) of
 * byte j / 4, x = (q - 1) * d), which gguf-py does not dequantize, as
 * ggml's dequantize_row_q1_0 / _q2_0 do.
 *
 *   TQ1_0  48 bytes of five base-3 digits each, 4 bytes of four, f16 d
 *   TQ2_0  64 bytes of four 2-bit values each (stored q + 1), f16 d
 *
 * TQ1_0 stores a byte of digits as ceil(n * 256 / 243): its k-th digit
 * (k = 0 most significant) is ((byte * 3^k mod 256) * 3) >> 8.  Value v
 * lives, for v < 160, in byte v % 32, digit v / 32; for v < 240 in byte 32
 * + (v - 160) % 16, digit (v - 160) / 16; else in byte 48 + (v - 240) % 4,
 * digit (v - 240) / 4.  TQ2_0's value v is (qs[(v / 128) * 32 + v % 32] >>
 * 2 * ((v % 128) / 32)) & 3, less 1.  x = (d * 1) * q = d * q, as gguf-py
 * computes it.
 */
#include "model/quant_impl.h"

#define QK  CLEF_QK_K

/* Digit k (0: the most significant) of a TQ1_0 byte, less 1. */
static int
tq1_digit(uint8_t b, int k)
{
    static const uint8_t  pow3[5] = { 1, 3, 9, 27, 81 };
    uint8_t               q = (uint8_t) (b * pow3[k]);

    return ((q * 3) >> 8) - 1;
}

static void
ternary(clef_qk_int *f, float d)
{
    memset(f->sc, 1, sizeof(f->sc));
    q_no_mins(f, d);
}

void
clef_tq1_0_int(const void *block, clef_qk_int *f)
{
    const uint8_t  *b = block;
    int             v;

    for (v = 0; v < QK; v++) {
        if (v < 160) {
            f->q[v] = (int8_t) tq1_digit(b[v % 32], v / 32);
        } else if (v < 240) {
            f->q[v] = (int8_t) tq1_digit(b[32 + (v - 160) % 16],
                                         (v - 160) / 16);
        } else {
            f->q[v] = (int8_t) tq1_digit(b[48 + (v - 240) % 4],
                                         (v - 240) / 4);
        }
    }
    ternary(f, q_rd_f16(b + 52));
}

void
clef_tq2_0_int(const void *block, clef_qk_int *f)
{
    const uint8_t  *b = block;
    int             v;

    for (v = 0; v < QK; v++) {
        f->q[v] = (int8_t) (((b[(v / 128) * 32 + v % 32]
                              >> (2 * ((v % 128) / 32))) & 3) - 1);
    }
    ternary(f, q_rd_f16(b + 64));
}

void
clef_q1_0_codes(const void *block, int8_t q[128])
{
    const uint8_t  *qs = (const uint8_t *) block + 2;
    int             j;

    for (j = 0; j < 128; j++) {
        q[j] = (int8_t) ((qs[j / 8] >> (j % 8)) & 1 ? 1 : -1);
    }
}

void
clef_q2_0_codes(const void *block, int8_t q[64])
{
    const uint8_t  *qs = (const uint8_t *) block + 2;
    int             j;

    for (j = 0; j < 64; j++) {
        q[j] = (int8_t) (((qs[j / 4] >> (2 * (j % 4))) & 3) - 1);
    }
}

/* x = d * q for blocks of 18 bytes: an f16 d, `values` codes. */
static void
d_times(const uint8_t *b, int values, void (*codes)(const void *, int8_t *),
    float *dst, int64_t n)
{
    int8_t   q[128];
    float    d;
    int64_t  i;
    int      j;

    for (i = 0; i < n / values; i++, b += 18, dst += values) {
        codes(b, q);
        d = q_rd_f16(b);
        for (j = 0; j < values; j++) {
            dst[j] = d * (float) q[j];
        }
    }
}

void
clef_q1_0_to_f32(const void *blocks, float *dst, int64_t n)
{
    d_times(blocks, 128, clef_q1_0_codes, dst, n);
}

void
clef_q2_0_to_f32(const void *blocks, float *dst, int64_t n)
{
    d_times(blocks, 64, clef_q2_0_codes, dst, n);
}
