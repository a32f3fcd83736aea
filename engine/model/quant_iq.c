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
 * the parity); bit j set negates element j.  Each product is rounded to
 * f32 in gguf-py's order (gguf/quants.py); a sign is exact.
 */
#include "model/quant_impl.h"
#include "model/quant_iq_grids.h"

#define QK  CLEF_QK_K

/* n (4 or 8) grid elements, times db, negated where signs has bit j. */
static void
grid_row(const uint8_t *row, int n, float db, unsigned signs, float *dst)
{
    float  t;
    int    j;

    for (j = 0; j < n; j++) {
        t = db * (float) row[j];
        dst[j] = signs >> j & 1 ? -t : t;
    }
}

/* The bytes of a grid row (element j in byte j, little-endian). */
#define ROW(grid, i)  ((const uint8_t *) &(grid)[i])

/* IQ2's scale: (d * (0.5 + s)) * 0.25. */
static float
iq2_db(float d, unsigned s)
{
    float  t = d * (0.5f + (float) s);

    return t * 0.25f;
}

void
clef_iq2_xxs_to_f32(const void *blocks, float *dst, int64_t n)
{
    const uint8_t  *b = blocks, *q;
    uint32_t        aux0, aux1;
    float           d, db;
    int64_t         i;
    int             g, k;

    for (i = 0; i < n / QK; i++, b += 66) {
        d = q_rd_f16(b);
        for (g = 0; g < 8; g++) {
            q = b + 2 + 8 * g;
            aux0 = q_rd_u32(q);
            aux1 = q_rd_u32(q + 4);
            db = iq2_db(d, aux1 >> 28);
            for (k = 0; k < 4; k++, dst += 8) {
                grid_row(ROW(clef_iq2xxs_grid, (aux0 >> (8 * k)) & 0xff), 8,
                         db, clef_iq2_ksigns[(aux1 >> (7 * k)) & 127], dst);
            }
        }
    }
}

/* Scale k (one per 16 values) of the nibbles of IQ2_XS and IQ2_S. */
static unsigned
nibble(const uint8_t *sc, int k)
{
    return (sc[k / 2] >> (4 * (k % 2))) & 0x0f;
}

void
clef_iq2_xs_to_f32(const void *blocks, float *dst, int64_t n)
{
    const uint8_t  *b = blocks;
    uint16_t        q;
    float           d;
    int64_t         i;
    int             e;

    for (i = 0; i < n / QK; i++, b += 74) {
        d = q_rd_f16(b);
        for (e = 0; e < 32; e++, dst += 8) {
            q = q_rd_u16(b + 2 + 2 * e);
            grid_row(ROW(clef_iq2xs_grid, q & 511), 8,
                     iq2_db(d, nibble(b + 66, e / 2)),
                     clef_iq2_ksigns[q >> 9], dst);
        }
    }
}

void
clef_iq2_s_to_f32(const void *blocks, float *dst, int64_t n)
{
    const uint8_t  *b = blocks, *qs, *signs, *qh;
    float           d;
    int64_t         i;
    int             e;

    for (i = 0; i < n / QK; i++, b += 82) {
        d = q_rd_f16(b);
        qs = b + 2;
        signs = b + 34;
        qh = b + 66;
        for (e = 0; e < 32; e++, dst += 8) {
            grid_row(ROW(clef_iq2s_grid,
                         qs[e] | ((qh[e / 4] >> (2 * (e % 4))) & 3) << 8), 8,
                     iq2_db(d, nibble(b + 74, e / 2)), signs[e], dst);
        }
    }
}

void
clef_iq3_xxs_to_f32(const void *blocks, float *dst, int64_t n)
{
    const uint8_t  *b = blocks, *qs;
    uint32_t        aux;
    unsigned        signs;
    float           d, db, t;
    int64_t         i;
    int             g, k;

    for (i = 0; i < n / QK; i++, b += 98) {
        d = q_rd_f16(b);
        for (g = 0; g < 8; g++) {
            qs = b + 2 + 8 * g;
            aux = q_rd_u32(b + 66 + 4 * g);
            t = d * (0.5f + (float) (aux >> 28));
            db = t * 0.5f;
            for (k = 0; k < 4; k++, dst += 8) {
                signs = clef_iq2_ksigns[(aux >> (7 * k)) & 127];
                grid_row(ROW(clef_iq3xxs_grid, qs[2 * k]), 4, db, signs, dst);
                grid_row(ROW(clef_iq3xxs_grid, qs[2 * k + 1]), 4, db,
                         signs >> 4, dst + 4);
            }
        }
    }
}

void
clef_iq3_s_codes(const void *block, int8_t q[QK], int8_t sc[16])
{
    const uint8_t  *b = block, *qs = b + 2, *qh = b + 66, *signs = b + 74;
    const uint8_t  *row;
    int             e, j, v;

    for (e = 0; e < 64; e++) {
        row = ROW(clef_iq3s_grid, qs[e] | ((qh[e / 8] >> (e % 8)) & 1) << 8);
        for (j = 0; j < 4; j++) {
            v = 4 * e + j;
            q[v] = (int8_t) ((signs[v / 8] >> (v % 8)) & 1 ? -row[j] : row[j]);
        }
    }
    for (e = 0; e < 16; e++) {
        sc[e] = (int8_t) (1 + 2 * nibble(b + 106, e / 2));
    }
}

void
clef_iq3_s_to_f32(const void *blocks, float *dst, int64_t n)
{
    const uint8_t  *b = blocks;
    int8_t          q[QK], sc[16];
    float           d, db = 0;
    int64_t         i;
    int             v;

    for (i = 0; i < n / QK; i++, b += 110, dst += QK) {
        clef_iq3_s_codes(b, q, sc);
        d = q_rd_f16(b);
        for (v = 0; v < QK; v++) {
            if (v % 32 == 0) {
                db = d * (float) sc[v / 16];
            }
            /* the sign is exact: (db * g) * -1 = db * -g */
            dst[v] = db * (float) q[v];
        }
    }
}

#define IQ1_DELTA  0.125f

/* 8 values of an IQ1 grid row: dl * (element + delta). */
static void
iq1_row(unsigned idx, float dl, float delta, float *dst)
{
    const int8_t  *row = (const int8_t *) &clef_iq1s_grid[idx];
    int            j;

    for (j = 0; j < 8; j++) {
        dst[j] = dl * ((float) row[j] + delta);
    }
}

void
clef_iq1_s_to_f32(const void *blocks, float *dst, int64_t n)
{
    const uint8_t  *b = blocks;
    uint16_t        qh;
    float           d, dl, delta;
    int64_t         i;
    int             g, k;

    for (i = 0; i < n / QK; i++, b += 50) {
        d = q_rd_f16(b);
        for (g = 0; g < 8; g++) {
            qh = q_rd_u16(b + 34 + 2 * g);
            dl = d * (float) (2 * ((qh >> 12) & 7) + 1);
            delta = qh & 0x8000 ? -IQ1_DELTA : IQ1_DELTA;
            for (k = 0; k < 4; k++, dst += 8) {
                iq1_row(b[2 + 4 * g + k] | ((qh >> (3 * k)) & 7) << 8, dl,
                        delta, dst);
            }
        }
    }
}

void
clef_iq1_m_to_f32(const void *blocks, float *dst, int64_t n)
{
    const uint8_t  *b = blocks;
    uint16_t        s[4], h;
    unsigned        nib;
    float           d, dl = 0;
    int64_t         i;
    int             e;

    for (i = 0; i < n / QK; i++, b += 56) {
        for (e = 0; e < 4; e++) {
            s[e] = q_rd_u16(b + 48 + 2 * e);
        }
        h = (uint16_t) ((s[0] >> 12) | ((s[1] >> 8) & 0x00f0)
                        | ((s[2] >> 4) & 0x0f00) | (s[3] & 0xf000));
        d = clef_f16_to_f32(h);
        for (e = 0; e < 32; e++, dst += 8) {
            if (e % 2 == 0) {
                dl = d * (float) (2 * ((s[e / 8] >> (3 * ((e / 2) % 4))) & 7)
                                  + 1);
            }
            nib = (b[32 + e / 2] >> (4 * (e % 2))) & 0x0f;
            iq1_row(b[e] | (nib & 7) << 8, dl,
                    nib & 8 ? -IQ1_DELTA : IQ1_DELTA, dst);
        }
    }
}
