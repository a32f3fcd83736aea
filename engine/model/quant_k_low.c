/*
 * The 2- and 3-bit K types (256 values a block), read only: files of
 * these types come from llama-quantize, and ngx_clef writes none.
 *
 *   Q2_K  16 bytes of scales (low nibble: scale, high: minimum; one per 16
 *         values), 64 bytes of 2-bit values, f16 d, f16 dmin
 *         x = (d * sc) * q - (dmin * m)
 *   Q3_K  32 bytes of third bits, 64 bytes of 2-bit values, 12 bytes of
 *         6-bit scales (one per 16 values), f16 d
 *         x = (d * (sc - 32)) * (q - 4 * !third bit)
 *
 * Where the bits of value v live (half h = v / 128, j = (v % 128) / 32,
 * l = v % 32): its 2 bits are qs[h * 32 + l] >> 2 * j; Q3_K's third bit is
 * bit v / 32 of hmask[l].  Q3_K's scale k (k = v / 16) has its low nibble
 * in byte k % 8, shifted by 4 * (k / 8), its two high bits in byte 8 + k %
 * 4, shifted by 2 * (k / 4).
 *
 * Each product and difference is rounded to f32 on its own, in gguf-py's
 * order (gguf/quants.py).
 */
#include "model/quant_impl.h"

#define QK  CLEF_QK_K

void
clef_q2_k_to_f32(const void *blocks, float *dst, int64_t n)
{
    const uint8_t  *b = blocks, *sc, *qs;
    float           d, dmin, dl = 0, ml = 0, t;
    int64_t         i;
    int             v, q;

    for (i = 0; i < n / QK; i++, b += 84, dst += QK) {
        sc = b;
        qs = b + 16;
        d = q_rd_f16(b + 80);
        dmin = q_rd_f16(b + 82);
        for (v = 0; v < QK; v++) {
            if (v % 16 == 0) {
                dl = d * (float) (sc[v / 16] & 0x0f);
                ml = dmin * (float) (sc[v / 16] >> 4);
            }
            q = (qs[(v / 128) * 32 + v % 32] >> (2 * ((v % 128) / 32))) & 3;
            t = dl * (float) q;
            dst[v] = t - ml;
        }
    }
}

void
clef_q3_k_codes(const void *block, int8_t q[CLEF_QK_K], int8_t sc[16])
{
    const uint8_t  *b = block, *hm = b, *qs = b + 32, *sb = b + 96;
    int             k, v;

    for (k = 0; k < 16; k++) {
        sc[k] = (int8_t) ((((sb[k % 8] >> (4 * (k / 8))) & 0x0f)
                           | (((sb[8 + k % 4] >> (2 * (k / 4))) & 3) << 4))
                          - 32);
    }
    for (v = 0; v < QK; v++) {
        q[v] = (int8_t) (((qs[(v / 128) * 32 + v % 32] >> (2 * ((v % 128) / 32)))
                          & 3)
                         - (((hm[v % 32] >> (v / 32)) & 1) ? 0 : 4));
    }
}

void
clef_q3_k_to_f32(const void *blocks, float *dst, int64_t n)
{
    const uint8_t  *b = blocks;
    int8_t          q[QK], sc[16];
    float           d, dl = 0;
    int64_t         i;
    int             v;

    for (i = 0; i < n / QK; i++, b += 110, dst += QK) {
        clef_q3_k_codes(b, q, sc);
        d = q_rd_f16(b + 108);
        for (v = 0; v < QK; v++) {
            if (v % 16 == 0) {
                dl = d * (float) sc[v / 16];
            }
            dst[v] = dl * (float) q[v];
        }
    }
}
