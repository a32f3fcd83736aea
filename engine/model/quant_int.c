/*
 * The integer form of the read-only 256-value types (quant.h): its
 * values, and the dequantizers that are nothing else.
 */
#include "model/quant_impl.h"

void
clef_qk_int_to_f32(const clef_qk_int *f, float *dst)
{
    float  dl = 0, ml = 0, t;
    int    v;

    for (v = 0; v < CLEF_QK_K; v++) {
        if (v % 16 == 0) {
            dl = f->d * (float) f->sc[v / 16];
            ml = f->dmin * (float) f->mn[v / 16];
        }
        t = dl * (float) f->q[v];
        dst[v] = f->mins ? t - ml : t;
    }
}

/* n values of blocks of `bytes` bytes through their integer form. */
static void
by_int(const uint8_t *b, size_t bytes, clef_qk_int_fn form, float *dst,
    int64_t n)
{
    clef_qk_int  f;
    int64_t      i;

    for (i = 0; i < n / CLEF_QK_K; i++, b += bytes, dst += CLEF_QK_K) {
        form(b, &f);
        clef_qk_int_to_f32(&f, dst);
    }
}

#define BY_INT(name, bytes)                                                  \
    void                                                                     \
    clef_##name##_to_f32(const void *blocks, float *dst, int64_t n)          \
    {                                                                        \
        by_int(blocks, bytes, clef_##name##_int, dst, n);                    \
    }

BY_INT(q2_k, 84)
BY_INT(q3_k, 110)
BY_INT(iq4_xs, 136)
BY_INT(iq3_xxs, 98)
BY_INT(iq3_s, 110)
BY_INT(iq2_xxs, 66)
BY_INT(iq2_xs, 74)
BY_INT(iq2_s, 82)
BY_INT(iq1_s, 50)
BY_INT(iq1_m, 56)
BY_INT(tq1_0, 54)
BY_INT(tq2_0, 66)
