/*
 * Block types the integer products read as blocks of a type they have
 * (qdot.h): each block rewritten when it is packed, exactly, as a block
 * of that type whose values are the same numbers (model/quant.h's integer
 * forms), so the same kernels, panels and tests serve both:
 *
 *   IQ4_NL  -> NL4   the indices as they are (0.625 bytes a value), the
 *                    codebook looked up in registers, the scale d as an f32
 *   MXFP4   -> MX4   the same with MXFP4's codebook (its e2m1 values
 *                    doubled, integers), the scale 2^(e - 128) as an f32
 *   Q1_0    -> Q8_0  the same d; each 32 of its 128 (Q2_0: 64) values a
 *   Q2_0             block, the codes +-1 (-1 .. 2)
 *   IQ3_S   -> Q6_K  the same d; q + 32 as the 6-bit codes, sc as the
 *   TQ1_0            int8 scales (TQ1_0, TQ2_0: 1): (d * sc) * (q + 32 -
 *   TQ2_0            32) is the value each dequantizer gives, the same
 *                    products in the same order
 *
 *   IQ3_XXS, IQ2_XXS, IQ2_XS, IQ2_S, IQ1_S, IQ1_M -> I8: the integer form
 *   itself, the codebook's or the grid's elements expanded to int8 codes
 *   with their signs
 *
 * The cost is the target's bytes per value in the panels (Q6_K's 0.82
 * bytes for IQ3_S's 0.43, NL4's 0.625 for IQ4_NL's 0.56, I8's 1.16 for
 * IQ2_XXS's 0.26): the codes stay integers and nothing is rounded.
 * IQ4_XS, Q3_K and Q2_K, the bulk of the small files and of the dynamic
 * mixes, have panels of their own instead (X4, Q3_K, Q2_K: qpack.c), their
 * bits as stored, at 0.54, 0.45 and 0.33 bytes a value.
 */
#include "cpu/kernels/qdot_kernel.h"

#include <math.h>
#include <pthread.h>
#include <string.h>

#include "model/dtype.h"
#include "model/quant.h"

/* Q6_K's 6-bit code of value v (model/quant_k.c's layout). */
static void
q6k_put(uint8_t *b, int v, int q)
{
    int  h = v / 128, r = v % 128;

    if (r < 64) {
        b[h * 64 + r] |= (uint8_t) (q & 0x0f);
    } else {
        b[h * 64 + r - 64] |= (uint8_t) ((q & 0x0f) << 4);
    }
    b[128 + h * 32 + r % 32] |= (uint8_t) (((q >> 4) & 3) << (2 * (r / 32)));
}

/* A Q6_K block of an integer form with codes in [-32, 31], no minima and
 * an fp16 d. */
static void
q6k_block_of(const clef_qk_int *f, uint8_t *out)
{
    uint16_t  h = clef_f32_to_f16(f->d);
    int       v;

    memset(out, 0, 210);
    for (v = 0; v < CLEF_QK_K; v++) {
        q6k_put(out, v, f->q[v] + 32);
    }
    memcpy(out + 192, f->sc, 16);
    memcpy(out + 208, &h, 2);
}

#define AS_Q6K(name)                                                         \
    static void                                                              \
    name(const uint8_t *b, int part, uint8_t *out)                           \
    {                                                                        \
        clef_qk_int  f;                                                      \
                                                                             \
        clef_##name##_int(b, &f);                                            \
        q6k_block_of(&f, out);                                               \
    }

AS_Q6K(iq3_s)
AS_Q6K(tq1_0)
AS_Q6K(tq2_0)

/* The integer form as it is (the kernels' I8 and I8M). */
#define AS_I8(name)                                                          \
    static void                                                              \
    name(const uint8_t *b, int part, uint8_t *out)                           \
    {                                                                        \
        clef_##name##_int(b, (clef_qk_int *) (void *) out);                  \
    }

AS_I8(iq3_xxs)
AS_I8(iq2_xxs)
AS_I8(iq2_xs)
AS_I8(iq2_s)
AS_I8(iq1_s)
AS_I8(iq1_m)

/* An NL4 block: the f32 scale, IQ4's 16 bytes of indices as stored. */
static void
nl4_of(float ws, const uint8_t *qs, uint8_t *out)
{
    memcpy(out, &ws, 4);
    memcpy(out + 4, qs, 16);
}

static void
iq4_nl(const uint8_t *b, int part, uint8_t *out)
{
    uint16_t  h;

    memcpy(&h, b, 2);
    nl4_of(clef_f16_to_f32(h), b + 2, out);
}

/* MXFP4: 2^(e - 128), exact in f32 (subnormal for e < 2) as ggml's
 * e8m0_to_fp32_half, with the 16 bytes of indices. */
static void
mxfp4(const uint8_t *b, int part, uint8_t *out)
{
    nl4_of(ldexpf(1.0f, (int) b[0] - 128), b + 1, out);
}

/* Q8_0 block `part` (32 values) of a Q1_0 or Q2_0 block: the same d, the
 * codes +-1 or -1 .. 2. */
static void
d_codes(const uint8_t *b, int part, void (*codes)(const void *, int8_t *),
    uint8_t *out)
{
    int8_t  q[128];

    codes(b, q);
    memcpy(out, b, 2);
    memcpy(out + 2, q + 32 * part, 32);
}

static void
q1_0(const uint8_t *b, int part, uint8_t *out)
{
    d_codes(b, part, clef_q1_0_codes, out);
}

static void
q2_0(const uint8_t *b, int part, uint8_t *out)
{
    d_codes(b, part, clef_q2_0_codes, out);
}

/* The kernels' type and conversion of each GGUF type multiplied here; its
 * block's values and bytes are the storage-type table's (model/dtype.c),
 * filled in once, never spelled a second time. */
static qd_source        sources[] = {
    { CLEF_GGML_Q8_0, QT_Q8_0, 0, 0, NULL },
    { CLEF_GGML_Q4_0, QT_Q4_0, 0, 0, NULL },
    { CLEF_GGML_Q4_1, QT_Q4_1, 0, 0, NULL },
    { CLEF_GGML_Q5_0, QT_Q5_0, 0, 0, NULL },
    { CLEF_GGML_Q5_1, QT_Q5_1, 0, 0, NULL },
    { CLEF_GGML_Q4_K, QT_Q4_K, 0, 0, NULL },
    { CLEF_GGML_Q5_K, QT_Q5_K, 0, 0, NULL },
    { CLEF_GGML_Q6_K, QT_Q6_K, 0, 0, NULL },
    { CLEF_GGML_IQ4_NL, QT_NL4, 0, 0, iq4_nl },
    { CLEF_GGML_MXFP4, QT_MX4, 0, 0, mxfp4 },
    { CLEF_GGML_Q1_0, QT_Q8_0, 0, 0, q1_0 },
    { CLEF_GGML_Q2_0, QT_Q8_0, 0, 0, q2_0 },
    { CLEF_GGML_Q3_K, QT_Q3_K, 0, 0, NULL },
    { CLEF_GGML_IQ3_S, QT_Q6_K, 0, 0, iq3_s },
    { CLEF_GGML_TQ1_0, QT_Q6_K, 0, 0, tq1_0 },
    { CLEF_GGML_TQ2_0, QT_Q6_K, 0, 0, tq2_0 },
    { CLEF_GGML_Q2_K, QT_Q2_K, 0, 0, NULL },
    { CLEF_GGML_IQ4_XS, QT_X4, 0, 0, NULL },
    { CLEF_GGML_IQ3_XXS, QT_I8, 0, 0, iq3_xxs },
    { CLEF_GGML_IQ2_XXS, QT_I8, 0, 0, iq2_xxs },
    { CLEF_GGML_IQ2_XS, QT_I8, 0, 0, iq2_xs },
    { CLEF_GGML_IQ2_S, QT_I8, 0, 0, iq2_s },
    { CLEF_GGML_IQ1_S, QT_I8, 0, 0, iq1_s },
    { CLEF_GGML_IQ1_M, QT_I8, 0, 0, iq1_m },
};

static pthread_once_t   sources_once = PTHREAD_ONCE_INIT;


static void
sources_fill(void)
{
    const clef_dtype_traits  *tr;
    clef_dtype                dt;
    size_t                    i;

    for (i = 0; i < sizeof(sources) / sizeof(sources[0]); i++) {
        if (clef_dtype_from_ggml((int) sources[i].ggml, &dt) == 0
            && (tr = clef_dtype_traits_of(dt)) != NULL)
        {
            sources[i].values = (int) tr->block;
            sources[i].bytes = (int) tr->block_bytes;
        }
    }
}


const qd_source *
qd_source_of(uint32_t ggml)
{
    size_t  i;

    pthread_once(&sources_once, sources_fill);
    for (i = 0; i < sizeof(sources) / sizeof(sources[0]); i++) {
        if (sources[i].ggml == ggml) {
            return &sources[i];
        }
    }
    return NULL;
}
