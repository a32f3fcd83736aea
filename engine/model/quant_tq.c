/*
 * The ternary types (256 values a block, each -1, 0 or 1 times an f16
 * scale), read only.
 *
 *   TQ1_0  48 bytes of five base-3 digits each, 4 bytes of four, f16 d
 *   TQ2_0  64 bytes of four 2-bit values each (stored q + 1), f16 d
 *
 * TQ1_0 stores a byte of digits as ceil(n * 256 / 243): its k-th digit
 * (k = 0 most significant) is ((byte * 3^k mod 256) * 3) >> 8.  Value v
 * lives, for v < 160, in byte v % 32, digit v / 32; for v < 240 in byte 32
 * + (v - 160) % 16, digit (v - 160) / 16; else in byte 48 + (v - 240) % 4,
 * digit (v - 240) / 4.  TQ2_0's value v is (qs[(v / 128) * 32 + v % 32] >>
 * 2 * ((v % 128) / 32)) & 3, less 1.  x = d * q, as gguf-py computes it.
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

void
clef_tq1_0_codes(const void *block, int8_t q[QK])
{
    const uint8_t  *b = block;
    int             v;

    for (v = 0; v < QK; v++) {
        if (v < 160) {
            q[v] = (int8_t) tq1_digit(b[v % 32], v / 32);
        } else if (v < 240) {
            q[v] = (int8_t) tq1_digit(b[32 + (v - 160) % 16], (v - 160) / 16);
        } else {
            q[v] = (int8_t) tq1_digit(b[48 + (v - 240) % 4], (v - 240) / 4);
        }
    }
}

void
clef_tq2_0_codes(const void *block, int8_t q[QK])
{
    const uint8_t  *b = block;
    int             v;

    for (v = 0; v < QK; v++) {
        q[v] = (int8_t) (((b[(v / 128) * 32 + v % 32] >> (2 * ((v % 128) / 32)))
                          & 3) - 1);
    }
}

/* x = d * q of each value, the codes from codes(). */
static void
ternary(const uint8_t *b, int d_at, void (*codes)(const void *, int8_t *),
    float *dst, int64_t n)
{
    int8_t   q[QK];
    float    d;
    int64_t  i;
    int      v;

    for (i = 0; i < n / QK; i++, b += d_at + 2, dst += QK) {
        codes(b, q);
        d = q_rd_f16(b + d_at);
        for (v = 0; v < QK; v++) {
            dst[v] = d * (float) q[v];
        }
    }
}

void
clef_tq1_0_to_f32(const void *blocks, float *dst, int64_t n)
{
    ternary(blocks, 52, clef_tq1_0_codes, dst, n);
}

void
clef_tq2_0_to_f32(const void *blocks, float *dst, int64_t n)
{
    ternary(blocks, 64, clef_tq2_0_codes, dst, n);
}
