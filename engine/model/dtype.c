#include "model/dtype.h"

#include <strings.h>
#include <string.h>

#include "model/quant.h"

/* GGUF's ids are those of ggml's enum ggml_type (gguf-py's
 * GGMLQuantizationType); the conversions are quant.h's, exact as gguf-py
 * computes them. */
#define FLOAT(f)  clef_##f##_to_f32, clef_##f##_from_f32
#define READ(f)   clef_##f##_to_f32, NULL      /* read only */

static const clef_dtype_traits  dtypes[CLEF_DTYPE_COUNT] = {
    [CLEF_DTYPE_F32]  = { "F32",  1, CLEF_GGML_F32,  1, 4,
                          clef_f32_to_f32, clef_f32_from_f32 },
    [CLEF_DTYPE_F16]  = { "F16",  1, CLEF_GGML_F16,  1, 2,
                          clef_f16_blocks_to_f32, clef_f16_from_f32 },
    [CLEF_DTYPE_BF16] = { "BF16", 1, CLEF_GGML_BF16, 1, 2,
                          clef_bf16_blocks_to_f32, clef_bf16_from_f32 },
    [CLEF_DTYPE_I32]  = { "I32",  1, 26, 1, 4, NULL, NULL },
    [CLEF_DTYPE_I64]  = { "I64",  1, 27, 1, 8, NULL, NULL },
    [CLEF_DTYPE_U8]   = { "U8",   1, -1, 1, 1, NULL, NULL },
    [CLEF_DTYPE_Q4_0] = { "Q4_0", 0, CLEF_GGML_Q4_0, 32,  18,  FLOAT(q4_0) },
    [CLEF_DTYPE_Q4_1] = { "Q4_1", 0, CLEF_GGML_Q4_1, 32,  20,  FLOAT(q4_1) },
    [CLEF_DTYPE_Q5_0] = { "Q5_0", 0, CLEF_GGML_Q5_0, 32,  22,  FLOAT(q5_0) },
    [CLEF_DTYPE_Q5_1] = { "Q5_1", 0, CLEF_GGML_Q5_1, 32,  24,  FLOAT(q5_1) },
    [CLEF_DTYPE_Q8_0] = { "Q8_0", 0, CLEF_GGML_Q8_0, 32,  34,  FLOAT(q8_0) },
    [CLEF_DTYPE_Q4_K] = { "Q4_K", 0, CLEF_GGML_Q4_K, 256, 144, FLOAT(q4_k) },
    [CLEF_DTYPE_Q5_K] = { "Q5_K", 0, CLEF_GGML_Q5_K, 256, 176, FLOAT(q5_k) },
    [CLEF_DTYPE_Q6_K] = { "Q6_K", 0, CLEF_GGML_Q6_K, 256, 210, FLOAT(q6_k) },
    [CLEF_DTYPE_Q2_K] = { "Q2_K", 0, CLEF_GGML_Q2_K, 256, 84, READ(q2_k) },
    [CLEF_DTYPE_Q3_K] = { "Q3_K", 0, CLEF_GGML_Q3_K, 256, 110, READ(q3_k) },
    [CLEF_DTYPE_IQ4_NL]  = { "IQ4_NL", 0, CLEF_GGML_IQ4_NL, 32, 18,
                             READ(iq4_nl) },
    [CLEF_DTYPE_IQ4_XS]  = { "IQ4_XS", 0, CLEF_GGML_IQ4_XS, 256, 136,
                             READ(iq4_xs) },
    [CLEF_DTYPE_IQ3_XXS] = { "IQ3_XXS", 0, CLEF_GGML_IQ3_XXS, 256, 98,
                             READ(iq3_xxs) },
    [CLEF_DTYPE_IQ3_S]   = { "IQ3_S", 0, CLEF_GGML_IQ3_S, 256, 110,
                             READ(iq3_s) },
    [CLEF_DTYPE_IQ2_XXS] = { "IQ2_XXS", 0, CLEF_GGML_IQ2_XXS, 256, 66,
                             READ(iq2_xxs) },
    [CLEF_DTYPE_IQ2_XS]  = { "IQ2_XS", 0, CLEF_GGML_IQ2_XS, 256, 74,
                             READ(iq2_xs) },
    [CLEF_DTYPE_IQ2_S]   = { "IQ2_S", 0, CLEF_GGML_IQ2_S, 256, 82,
                             READ(iq2_s) },
    [CLEF_DTYPE_IQ1_S]   = { "IQ1_S", 0, CLEF_GGML_IQ1_S, 256, 50,
                             READ(iq1_s) },
    [CLEF_DTYPE_IQ1_M]   = { "IQ1_M", 0, CLEF_GGML_IQ1_M, 256, 56,
                             READ(iq1_m) },
    [CLEF_DTYPE_TQ1_0]   = { "TQ1_0", 0, CLEF_GGML_TQ1_0, 256, 54,
                             READ(tq1_0) },
    [CLEF_DTYPE_TQ2_0]   = { "TQ2_0", 0, CLEF_GGML_TQ2_0, 256, 66,
                             READ(tq2_0) },
    [CLEF_DTYPE_MXFP4]   = { "MXFP4", 0, CLEF_GGML_MXFP4, 32, 17,
                             READ(mxfp4) },
    [CLEF_DTYPE_NVFP4]   = { "NVFP4", 0, CLEF_GGML_NVFP4, 64, 36,
                             READ(nvfp4) },
    [CLEF_DTYPE_Q1_0]    = { "Q1_0", 0, CLEF_GGML_Q1_0, 128, 18,
                             READ(q1_0) },
    [CLEF_DTYPE_Q2_0]    = { "Q2_0", 0, CLEF_GGML_Q2_0, 64, 18,
                             READ(q2_0) },
};

const clef_dtype_traits *
clef_dtype_traits_of(clef_dtype dt)
{
    return (unsigned) dt < CLEF_DTYPE_COUNT ? &dtypes[dt] : NULL;
}

const char *
clef_dtype_name(clef_dtype dt)
{
    return (unsigned) dt < CLEF_DTYPE_COUNT ? dtypes[dt].name : "?";
}

int
clef_dtype_from_name(const char *name, clef_dtype *dt)
{
    int  i;

    for (i = 0; i < CLEF_DTYPE_COUNT; i++) {
        if (dtypes[i].safetensors && strcmp(name, dtypes[i].name) == 0) {
            *dt = (clef_dtype) i;
            return 0;
        }
    }
    return -1;
}

int
clef_dtype_from_any_name(const char *name, clef_dtype *dt)
{
    int  i;

    for (i = 0; i < CLEF_DTYPE_COUNT; i++) {
        if (strcasecmp(name, dtypes[i].name) == 0) {
            *dt = (clef_dtype) i;
            return 0;
        }
    }
    return -1;
}

int
clef_dtype_from_ggml(int ggml, clef_dtype *dt)
{
    int  i;

    for (i = 0; i < CLEF_DTYPE_COUNT; i++) {
        if (ggml >= 0 && dtypes[i].ggml == ggml) {
            *dt = (clef_dtype) i;
            return 0;
        }
    }
    return -1;
}

size_t
clef_dtype_size(clef_dtype dt)
{
    return (unsigned) dt < CLEF_DTYPE_COUNT && dtypes[dt].block == 1
           ? dtypes[dt].block_bytes : 0;
}

int64_t
clef_dtype_bytes(clef_dtype dt, int64_t n)
{
    const clef_dtype_traits  *t = clef_dtype_traits_of(dt);

    if (t == NULL || n < 0 || n % t->block != 0) {
        return -1;
    }
    return n / t->block * (int64_t) t->block_bytes;
}

int
clef_dtype_is_float(clef_dtype dt)
{
    const clef_dtype_traits  *t = clef_dtype_traits_of(dt);

    return t != NULL && t->to_f32 != NULL;
}

int
clef_dtype_is_block(clef_dtype dt)
{
    const clef_dtype_traits  *t = clef_dtype_traits_of(dt);

    return t != NULL && t->block > 1;
}

float
clef_bf16_to_f32(uint16_t h)
{
    uint32_t  u = (uint32_t) h << 16;
    float     f;

    memcpy(&f, &u, sizeof(f));
    return f;
}

uint16_t
clef_f32_to_bf16(float f)
{
    uint32_t  u;

    memcpy(&u, &f, sizeof(u));
    if ((u & 0x7fffffffu) > 0x7f800000u) {
        return (uint16_t) ((u >> 16) | 0x40);      /* quiet NaN */
    }
    u += 0x7fffu + ((u >> 16) & 1);                 /* round to nearest even */
    return (uint16_t) (u >> 16);
}

float
clef_f16_to_f32(uint16_t h)
{
    uint32_t  sign = (uint32_t) (h & 0x8000) << 16;
    uint32_t  exp = (h >> 10) & 0x1f;
    uint32_t  man = h & 0x3ff;
    uint32_t  u;
    float     f;

    if (exp == 0) {
        if (man == 0) {
            u = sign;
        } else {                                    /* subnormal: normalise */
            exp = 127 - 15 + 1;
            while ((man & 0x400) == 0) {
                man <<= 1;
                exp--;
            }
            u = sign | (exp << 23) | ((man & 0x3ff) << 13);
        }
    } else if (exp == 31) {
        u = sign | 0x7f800000u | (man << 13);
    } else {
        u = sign | ((exp + 127 - 15) << 23) | (man << 13);
    }
    memcpy(&f, &u, sizeof(f));
    return f;
}
