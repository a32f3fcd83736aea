/*
 * The 16-value codebook types: a 4-bit index per value into a fixed table
 * of int8 levels (quant_iq_grids.h), times a scale.  Read only.
 *
 *   IQ4_NL  32 values: f16 d, 16 bytes of indices; x = d * kv[q]
 *   IQ4_XS  256 values: f16 d, u16 of the scales' high 2 bits, 4 bytes of
 *           their low nibbles (one 6-bit scale per 32 values), 128 bytes
 *           of indices; x = (d * (sc - 32)) * kv[q]
 *   MXFP4   32 values: an e8m0 exponent, 16 bytes of e2m1 indices;
 *           x = 2^(e - 128) * 2 kv[q] (kv doubled, the scale halved)
 *   NVFP4   64 values: 4 unsigned e4m3 scales (one per 16), 32 bytes of
 *           e2m1 indices; x = (e4m3 / 2) * kv[q]
 *
 * Value j of 32 (IQ4_NL, MXFP4, a 32-value run of IQ4_XS) is the low
 * nibble of byte j % 16 for j < 16, the high nibble after; NVFP4's value j
 * of 16 is the low nibble of byte j % 8 for j < 8.  IQ4_XS's scale s has
 * its low nibble in byte s / 2 (shifted by 4 * (s % 2)) and its high bits
 * at bit 2 * s of the u16 (its integer form, quant.h, has the scale twice,
 * once per 16 values).  Products rounded to f32 as gguf-py's.
 */
#include <math.h>

#include "model/quant_impl.h"
#include "model/quant_iq_grids.h"

/* 32 values from 16 bytes of nibbles, each kv[q] times d. */
static void
nibbles_32(const uint8_t *qs, const int8_t *kv, float d, float *dst)
{
    int  j;

    for (j = 0; j < 16; j++) {
        dst[j] = d * (float) kv[qs[j] & 0x0f];
        dst[j + 16] = d * (float) kv[qs[j] >> 4];
    }
}

void
clef_iq4_nl_codes(const void *block, int8_t q[32])
{
    const uint8_t  *qs = (const uint8_t *) block + 2;
    int             j;

    for (j = 0; j < 16; j++) {
        q[j] = clef_iq4nl_values[qs[j] & 0x0f];
        q[j + 16] = clef_iq4nl_values[qs[j] >> 4];
    }
}

void
clef_iq4_nl_to_f32(const void *blocks, float *dst, int64_t n)
{
    const uint8_t  *b = blocks;
    int64_t         i;

    for (i = 0; i < n / 32; i++, b += 18, dst += 32) {
        nibbles_32(b + 2, clef_iq4nl_values, q_rd_f16(b), dst);
    }
}

/* IQ4_XS's integer form (quant.h): its values are quant_int.c's. */
void
clef_iq4_xs_int(const void *block, clef_qk_int *f)
{
    const uint8_t  *b = block, *qs;
    uint16_t        sh = q_rd_u16(b + 2);
    int             s, j;

    for (s = 0; s < 8; s++) {
        f->sc[2 * s] = (int8_t) ((((b[4 + s / 2] >> (4 * (s % 2))) & 0x0f)
                                  | (((sh >> (2 * s)) & 3) << 4)) - 32);
        f->sc[2 * s + 1] = f->sc[2 * s];
        qs = b + 8 + 16 * s;
        for (j = 0; j < 16; j++) {
            f->q[32 * s + j] = clef_iq4nl_values[qs[j] & 0x0f];
            f->q[32 * s + j + 16] = clef_iq4nl_values[qs[j] >> 4];
        }
    }
    q_no_mins(f, q_rd_f16(b));
}

/* ggml_e8m0_to_fp32_half: 2^(e - 128), subnormal for e < 2. */
static float
e8m0_half(uint8_t e)
{
    uint32_t  u = e < 2 ? 0x00200000u << e : (uint32_t) (e - 1) << 23;
    float     f;

    memcpy(&f, &u, 4);
    return f;
}

void
clef_mxfp4_to_f32(const void *blocks, float *dst, int64_t n)
{
    const uint8_t  *b = blocks;
    int64_t         i;

    for (i = 0; i < n / 32; i++, b += 17, dst += 32) {
        nibbles_32(b + 1, clef_mxfp4_values, e8m0_half(b[0]), dst);
    }
}

/* An unsigned e4m3 scale (bias 7; 0x7f, its NaN, and 0 read as 0), halved
 * for the doubled values: gguf-py's NVFP4.ue4m3_to_fp32. */
static float
ue4m3_half(uint8_t x)
{
    int    e = (x >> 3) & 0x0f, m = x & 7;
    float  raw;

    if (x == 0 || x == 0x7f) {
        return 0.0f;
    }
    raw = e == 0 ? (float) m * 0x1p-9f
                 : (1.0f + (float) m / 8.0f) * ldexpf(1.0f, e - 7);
    return raw * 0.5f;
}

void
clef_nvfp4_to_f32(const void *blocks, float *dst, int64_t n)
{
    const uint8_t  *b = blocks, *qs;
    float           d;
    int64_t         i;
    int             s, j;

    for (i = 0; i < n / 64; i++, b += 36, dst += 64) {
        for (s = 0; s < 4; s++) {
            d = ue4m3_half(b[s]);
            qs = b + 4 + 8 * s;
            for (j = 0; j < 8; j++) {
                dst[16 * s + j] = d * (float) clef_mxfp4_values[qs[j] & 0x0f];
                dst[16 * s + 8 + j] = d * (float) clef_mxfp4_values[qs[j] >> 4];
            }
        }
    }
}
