/*
 * The 2- and 3-bit K types (256 values a block), read only: files of
 * these types come from llama-quantize, and ngx_clef writes none.  Their
 * integer forms (quant.h); the values are quant_int.c's.
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
 */
#include "model/quant_impl.h"

#define QK  CLEF_QK_K

/* The 2 low bits of value v of the 64 bytes at qs. */
static int
two_bits(const uint8_t *qs, int v)
{
    return (qs[(v / 128) * 32 + v % 32] >> (2 * ((v % 128) / 32))) & 3;
}

void
clef_q2_k_int(const void *block, clef_qk_int *f)
{
    const uint8_t  *b = block;
    int             k, v;

    for (k = 0; k < 16; k++) {
        f->sc[k] = (int8_t) (b[k] & 0x0f);
        f->mn[k] = (int8_t) (b[k] >> 4);
    }
    for (v = 0; v < QK; v++) {
        f->q[v] = (int8_t) two_bits(b + 16, v);
    }
    f->d = q_rd_f16(b + 80);
    f->dmin = q_rd_f16(b + 82);
    f->mins = 1;
}

void
clef_q3_k_int(const void *block, clef_qk_int *f)
{
    const uint8_t  *b = block, *hm = b, *sb = b + 96;
    int             k, v;

    for (k = 0; k < 16; k++) {
        f->sc[k] = (int8_t) ((((sb[k % 8] >> (4 * (k / 8))) & 0x0f)
                              | (((sb[8 + k % 4] >> (2 * (k / 4))) & 3) << 4))
                             - 32);
    }
    for (v = 0; v < QK; v++) {
        f->q[v] = (int8_t) (two_bits(b + 32, v)
                            - (((hm[v % 32] >> (v / 32)) & 1) ? 0 : 4));
    }
    q_no_mins(f, q_rd_f16(b + 108));
}
