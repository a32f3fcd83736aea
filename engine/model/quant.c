/*
 * The type table, the layouts of every GGML type, and the three float
 * types (F32, F16, BF16).  The block types are in quant_legacy.c (32
 * values per block) and quant_k.c (256).
 */
#include "model/quant.h"

#include <string.h>

#include "model/tensor.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "GGUF blocks are little-endian: this code reads them in place"
#endif

/*
 * Every type GGML defines (gguf-py's GGML_QUANT_SIZES): a file may hold
 * one ngx_clef does not compute with, and must still be checked and the
 * type named in the refusal.  Ids 4, 5, 31-33 and 36-38 were retired.
 */
static const struct {
    uint32_t     id;
    const char  *name;
    int          block;
    int          bytes;
} layouts[] = {
    { 0,  "F32",     1,   4 },   { 1,  "F16",     1,   2 },
    { 2,  "Q4_0",    32,  18 },  { 3,  "Q4_1",    32,  20 },
    { 6,  "Q5_0",    32,  22 },  { 7,  "Q5_1",    32,  24 },
    { 8,  "Q8_0",    32,  34 },  { 9,  "Q8_1",    32,  36 },
    { 10, "Q2_K",    256, 84 },  { 11, "Q3_K",    256, 110 },
    { 12, "Q4_K",    256, 144 }, { 13, "Q5_K",    256, 176 },
    { 14, "Q6_K",    256, 210 }, { 15, "Q8_K",    256, 292 },
    { 16, "IQ2_XXS", 256, 66 },  { 17, "IQ2_XS",  256, 74 },
    { 18, "IQ3_XXS", 256, 98 },  { 19, "IQ1_S",   256, 50 },
    { 20, "IQ4_NL",  32,  18 },  { 21, "IQ3_S",   256, 110 },
    { 22, "IQ2_S",   256, 82 },  { 23, "IQ4_XS",  256, 136 },
    { 24, "I8",      1,   1 },   { 25, "I16",     1,   2 },
    { 26, "I32",     1,   4 },   { 27, "I64",     1,   8 },
    { 28, "F64",     1,   8 },   { 29, "IQ1_M",   256, 56 },
    { 30, "BF16",    1,   2 },   { 34, "TQ1_0",   256, 54 },
    { 35, "TQ2_0",   256, 66 },  { 39, "MXFP4",   32,  17 },
    { 40, "NVFP4",   64,  36 },  { 41, "Q1_0",    128, 18 },
    { 42, "Q2_0",    64,  18 },
};

int
clef_ggml_type_layout(uint32_t type, const char **name, int *block,
    int *bytes)
{
    size_t  i;

    for (i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++) {
        if (layouts[i].id == type) {
            *name = layouts[i].name;
            *block = layouts[i].block;
            *bytes = layouts[i].bytes;
            return 0;
        }
    }
    return -1;
}

int64_t
clef_ggml_row_bytes(uint32_t type, int64_t n)
{
    const char  *name;
    int          block, bytes;

    if (n < 0 || clef_ggml_type_layout(type, &name, &block, &bytes) != 0
        || n % block != 0 || n / block > INT64_MAX / bytes)
    {
        return -1;
    }
    return n / block * bytes;
}

uint16_t
clef_f32_to_f16(float f)
{
    uint32_t  u, a, sign, m, q, rem, half;
    int       s;

    memcpy(&u, &f, sizeof(u));
    sign = (u >> 16) & 0x8000;
    a = u & 0x7fffffff;
    if (a > 0x7f800000) {
        return (uint16_t) (sign | 0x7e00 | ((a >> 13) & 0x3ff));
    }
    if (a >= 0x477ff000) {
        /* 65520 and above: halfway to 65536 or past it, infinity */
        return (uint16_t) (sign | 0x7c00);
    }
    if (a >= 0x38800000) {
        /* a normal f16: rebias, round the 13 dropped bits to even */
        a += 0xfff + ((a >> 13) & 1);
        a -= (uint32_t) (127 - 15) << 23;
        return (uint16_t) (sign | (a >> 13));
    }
    /* a subnormal f16 (or zero): units of 2^-24 */
    s = 126 - (int) (a >> 23);
    if (s > 24) {
        return (uint16_t) sign;
    }
    m = (a & 0x7fffff) | 0x800000;
    q = m >> s;
    rem = m & ((1u << s) - 1);
    half = 1u << (s - 1);
    if (rem > half || (rem == half && (q & 1))) {
        q++;
    }
    return (uint16_t) (sign | q);
}

void
clef_f32_to_f32(const void *blocks, float *dst, int64_t n)
{
    memcpy(dst, blocks, (size_t) n * sizeof(float));
}

void
clef_f16_blocks_to_f32(const void *blocks, float *dst, int64_t n)
{
    const uint8_t  *p = blocks;
    uint16_t        h;
    int64_t         i;

    for (i = 0; i < n; i++) {
        memcpy(&h, p + 2 * i, 2);
        dst[i] = clef_f16_to_f32(h);
    }
}

void
clef_bf16_blocks_to_f32(const void *blocks, float *dst, int64_t n)
{
    const uint8_t  *p = blocks;
    uint16_t        h;
    int64_t         i;

    for (i = 0; i < n; i++) {
        memcpy(&h, p + 2 * i, 2);
        dst[i] = clef_bf16_to_f32(h);
    }
}

void
clef_f32_from_f32(const float *src, void *blocks, int64_t n)
{
    memcpy(blocks, src, (size_t) n * sizeof(float));
}

void
clef_f16_from_f32(const float *src, void *blocks, int64_t n)
{
    uint8_t   *p = blocks;
    uint16_t   h;
    int64_t    i;

    for (i = 0; i < n; i++) {
        h = clef_f32_to_f16(src[i]);
        memcpy(p + 2 * i, &h, 2);
    }
}

void
clef_bf16_from_f32(const float *src, void *blocks, int64_t n)
{
    uint8_t   *p = blocks;
    uint16_t   h;
    int64_t    i;

    for (i = 0; i < n; i++) {
        h = clef_f32_to_bf16(src[i]);
        memcpy(p + 2 * i, &h, 2);
    }
}
