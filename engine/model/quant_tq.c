/*
 * The ternary types (256 values a block, each -1, 0 or 1 times an f16
 * scale), read only: their integer forms (quant.h, sc 1), the values
 * quant_int.c's.
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
    memset(f->mn, 0, sizeof(f->mn));
    f->d = d;
    f->dmin = 0;
    f->mins = 0;
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
