#include "model/dtype.h"

#include <string.h>

static void
f32_to_f32(const void *src, float *dst, int64_t n)
{
    memcpy(dst, src, (size_t) n * sizeof(float));
}

static void
bf16_to_f32(const void *src, float *dst, int64_t n)
{
    const uint16_t  *h = src;
    int64_t          i;

    for (i = 0; i < n; i++) {
        dst[i] = clef_bf16_to_f32(h[i]);
    }
}

static void
f16_to_f32(const void *src, float *dst, int64_t n)
{
    const uint16_t  *h = src;
    int64_t          i;

    for (i = 0; i < n; i++) {
        dst[i] = clef_f16_to_f32(h[i]);
    }
}

/* GGUF's ids are those of ggml's enum ggml_type (gguf-py's
 * GGMLQuantizationType): F32 0, F16 1, I32 26, I64 27, BF16 30. */
static const clef_dtype_traits  dtypes[CLEF_DTYPE_COUNT] = {
    [CLEF_DTYPE_F32]  = { "F32",  1, 0,  1, 4, f32_to_f32 },
    [CLEF_DTYPE_F16]  = { "F16",  1, 1,  1, 2, f16_to_f32 },
    [CLEF_DTYPE_BF16] = { "BF16", 1, 30, 1, 2, bf16_to_f32 },
    [CLEF_DTYPE_I32]  = { "I32",  1, 26, 1, 4, NULL },
    [CLEF_DTYPE_I64]  = { "I64",  1, 27, 1, 8, NULL },
    [CLEF_DTYPE_U8]   = { "U8",   1, -1, 1, 1, NULL },
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
