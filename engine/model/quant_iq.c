/*
 * The lattice i-quants (256 values a block), read only: each group of 8
 * (IQ2, IQ1) or 4 (IQ3) values is a row of a fixed grid (quant_iq_grids.h)
 * named by an index, with signs and a scale.
 *
 *   IQ2_XXS  f16 d; per 32 values a u32 of four 8-bit grid indices and a
 *            u32 of four 7-bit sign patterns and a 4-bit scale
 *            x = ((d * (0.5 + s)) * 0.25) * grid * sign
 *   IQ2_XS   f16 d; per 8 values a u16: 9-bit index, 7-bit signs; a 4-bit
 *            scale per 16 values; x as IQ2_XXS
 *   IQ2_S    f16 d; 32 bytes of indices' low 8 bits, 32 bytes of signs
 *            (one bit a value), 8 bytes of the indices' 2 high bits, a
 *            4-bit scale per 16 values; x as IQ2_XXS
 *   IQ3_XXS  f16 d; 64 bytes of 8-bit indices (4 values each), per 32
 *            values a u32 of four 7-bit sign patterns and a 4-bit scale
 *            x = ((d * (0.5 + s)) * 0.5) * grid * sign
 *   IQ3_S    f16 d; 64 bytes of indices' low 8 bits, 8 bytes of their
 *            ninth, 32 bytes of signs, a 4-bit scale per 32 values
 *            x = (d * (1 + 2 s)) * grid * sign
 *   IQ1_S    f16 d; 32 bytes of indices' low 8 bits; per 32 values a u16
 *            of four 3-bit high parts, a 3-bit scale, the delta's sign
 *            x = (d * (2 s + 1)) * (grid + delta), delta = +-1/8
 *   IQ1_M    as IQ1_S without its f16: indices' high 3 bits and the
 *            delta's sign in a nibble per 8 values, a 3-bit scale per 16,
 *            and d in the top nibbles of the four u16 of scales
 *
 * A 7-bit sign pattern names a byte of clef_iq2_ksigns (its eighth bit
 * the parity); bit j set negates element j.  Here are their integer forms
 * (quant.h): the signed grid elements as codes (IQ1: 8 g +- 1), the odd
 * scale 2 s + 1 or 1 + 2 s, and d times the power of two that leaves,
 * which is exact: ((d * (0.5 + s)) * 0.25) is (d / 8) * (2 s + 1), and
 * (d * (2 s + 1)) * (g +- 1/8) the same number as ((d / 8) * (2 s + 1)) *
 * (8 g +- 1), each rounded once.  The values are quant_int.c's, bit for
 * bit gguf-py's (gguf/quants.py).
 */
#include "model/quant_impl.h"
#include "model/quant_iq_grids.h"

#define QK  CLEF_QK_K

/* The bytes of a grid row (element j in byte j, little-endian). */
#define ROW(grid, i)  ((const uint8_t *) &(grid)[i])

/* n (4 or 8) grid elements as codes, negated where signs has bit j. */
static void
grid_codes(const uint8_t *row, int n, unsigned signs, int8_t *q)
{
    int  j;

    for (j = 0; j < n; j++) {
        q[j] = (int8_t) (signs >> j & 1 ? -row[j] : row[j]);
    }
}

/* Scale k (one per 16 values) of the nibbles at sc. */
static unsigned
nibble(const uint8_t *sc, int k)
{
    return (sc[k / 2] >> (4 * (k % 2))) & 0x0f;
}

void
clef_iq2_xxs_int(const void *block, clef_qk_int *f)
{
    const uint8_t  *b = block, *q;
    uint32_t        aux0, aux1;
    int             g, k;

    for (g = 0; g < 8; g++) {
        q = b + 2 + 8 * g;
        aux0 = q_rd_u32(q);
        aux1 = q_rd_u32(q + 4);
        f->sc[2 * g] = f->sc[2 * g + 1] = (int8_t) (2 * (aux1 >> 28) + 1);
        for (k = 0; k < 4; k++) {
            grid_codes(ROW(clef_iq2xxs_grid, (aux0 >> (8 * k)) & 0xff), 8,
                       clef_iq2_ksigns[(aux1 >> (7 * k)) & 127],
                       f->q + 32 * g + 8 * k);
        }
    }
    q_no_mins(f, q_rd_f16(b) * 0.125f);
}

void
clef_iq2_xs_int(const void *block, clef_qk_int *f)
{
    const uint8_t  *b = block;
    uint16_t        q;
    int             e;

    for (e = 0; e < 32; e++) {
        q = q_rd_u16(b + 2 + 2 * e);
        grid_codes(ROW(clef_iq2xs_grid, q & 511), 8, clef_iq2_ksigns[q >> 9],
                   f->q + 8 * e);
    }
    for (e = 0; e < 16; e++) {
        f->sc[e] = (int8_t) (2 * nibble(b + 66, e) + 1);
    }
    q_no_mins(f, q_rd_f16(b) * 0.125f);
}

void
clef_iq2_s_int(const void *block, clef_qk_int *f)
{
    const uint8_t  *b = block, *qs = b + 2, *signs = b + 34, *qh = b + 66;
    int             e;

    for (e = 0; e < 32; e++) {
        grid_codes(ROW(clef_iq2s_grid,
                       qs[e] | ((qh[e / 4] >> (2 * (e % 4))) & 3) << 8), 8,
                   signs[e], f->q + 8 * e);
    }
    for (e = 0; e < 16; e++) {
        f->sc[e] = (int8_t) (2 * nibble(b + 74, e) + 1);
    }
    q_no_mins(f, q_rd_f16(b) * 0.125f);
}

void
clef_iq3_xxs_int(const void *block, clef_qk_int *f)
{
    const uint8_t  *b = block, *qs;
    uint32_t        aux;
    unsigned        signs;
    int             g, k;

    for (g = 0; g < 8; g++) {
        qs = b + 2 + 8 * g;
        aux = q_rd_u32(b + 66 + 4 * g);
        f->sc[2 * g] = f->sc[2 * g + 1] = (int8_t) (2 * (aux >> 28) + 1);
        for (k = 0; k < 4; k++) {
            signs = clef_iq2_ksigns[(aux >> (7 * k)) & 127];
            grid_codes(ROW(clef_iq3xxs_grid, qs[2 * k]), 4, signs,
                       f->q + 32 * g + 8 * k);
            grid_codes(ROW(clef_iq3xxs_grid, qs[2 * k + 1]), 4, signs >> 4,
                       f->q + 32 * g + 8 * k + 4);
        }
    }
    q_no_mins(f, q_rd_f16(b) * 0.25f);
}

void
clef_iq3_s_int(const void *block, clef_qk_int *f)
{
    const uint8_t  *b = block, *qs = b + 2, *qh = b + 66, *signs = b + 74;
    int             e;

    for (e = 0; e < 64; e++) {
        grid_codes(ROW(clef_iq3s_grid,
                       qs[e] | ((qh[e / 8] >> (e % 8)) & 1) << 8), 4,
                   signs[e / 2] >> (4 * (e % 2)), f->q + 4 * e);
    }
    for (e = 0; e < 16; e++) {
        f->sc[e] = (int8_t) (1 + 2 * nibble(b + 106, e / 2));
    }
    q_no_mins(f, q_rd_f16(b));
}

/* 8 codes of an IQ1 grid row: 8 g + 1, or 8 g - 1 with the delta negated
 * (neg). */
static void
iq1_codes(unsigned idx, int neg, int8_t *q)
{
    const int8_t  *row = (const int8_t *) &clef_iq1s_grid[idx];
    int            j;

    for (j = 0; j < 8; j++) {
        q[j] = (int8_t) (8 * row[j] + (neg ? -1 : 1));
    }
}

void
clef_iq1_s_int(const void *block, clef_qk_int *f)
{
    const uint8_t  *b = block;
    uint16_t        qh;
    int             g, k;

    for (g = 0; g < 8; g++) {
        qh = q_rd_u16(b + 34 + 2 * g);
        f->sc[2 * g] = f->sc[2 * g + 1] = (int8_t) (2 * ((qh >> 12) & 7) + 1);
        for (k = 0; k < 4; k++) {
            iq1_codes(b[2 + 4 * g + k] | ((qh >> (3 * k)) & 7) << 8,
                      (qh & 0x8000) != 0, f->q + 32 * g + 8 * k);
        }
    }
    q_no_mins(f, q_rd_f16(b) * 0.125f);
}

void
clef_iq1_m_int(const void *block, clef_qk_int *f)
{
    const uint8_t  *b = block;
    uint16_t        s[4], h;
    unsigned        nib;
    int             e;

    for (e = 0; e < 4; e++) {
        s[e] = q_rd_u16(b + 48 + 2 * e);
    }
    h = (uint16_t) ((s[0] >> 12) | ((s[1] >> 8) & 0x00f0)
                    | ((s[2] >> 4) & 0x0f00) | (s[3] & 0xf000));
    for (e = 0; e < 16; e++) {
        f->sc[e] = (int8_t) (2 * ((s[e / 4] >> (3 * (e % 4))) & 7) + 1);
    }
    for (e = 0; e < 32; e++) {
        nib = (b[32 + e / 2] >> (4 * (e % 2))) & 0x0f;
        iq1_codes(b[e] | (nib & 7) << 8, (nib & 8) != 0, f->q + 8 * e);
    }
    q_no_mins(f, clef_f16_to_f32(h) * 0.125f);
}
