/*
 * The GGML block types (engine/model/quant*.c):
 *   - dequantization bit for bit against gguf-py's on random blocks
 *     (t/fixtures/quant, t/reference/gen_quant_fixtures.py), every type;
 *   - the layout of every type GGML defines against gguf-py's table;
 *   - f32 -> f16 rounding on every f16 value and every midpoint;
 *   - the quantizers: what they write reads back within each type's step,
 *     zeros stay zeros, and blocks of one value are exact.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "check.h"
#include "slurp.h"
#include "model/quant.h"
#include "model/tensor.h"

static char *
fixture(const char *name, const char *ext, size_t *len)
{
    char  path[512];

    snprintf(path, sizeof(path), "%s/quant/%s.%s", check_fixtures(), name, ext);
    return slurp(path, len);
}

/* The storage type of a GGML id, when ngx_clef reads it. */
static const clef_dtype_traits *
by_ggml(uint32_t id)
{
    clef_dtype  dt;

    return clef_dtype_from_ggml((int) id, &dt) == 0 && clef_dtype_is_float(dt)
           ? clef_dtype_traits_of(dt) : NULL;
}

static void
test_dequant(json_t *types)
{
    const clef_dtype_traits  *q;
    json_t            *t;
    size_t             i, nb, nf, n, j, bad;
    char              *blocks, *want;
    const char        *name;
    float             *got;
    int64_t            values;

    json_array_foreach(types, i, t) {
        name = json_string_value(json_object_get(t, "name"));
        values = json_integer_value(json_object_get(t, "values"));
        q = by_ggml((uint32_t) json_integer_value(json_object_get(t, "id")));
        CHECK(q != NULL && strcmp(q->name, name) == 0
              && q->block == json_integer_value(json_object_get(t, "block"))
              && (json_int_t) q->block_bytes
                 == json_integer_value(json_object_get(t, "bytes")),
              "%s: id, block and bytes per block as gguf-py's", name);
        blocks = fixture(name, "bin", &nb);
        want = fixture(name, "f32", &nf);
        if (q == NULL || blocks == NULL || want == NULL) {
            CHECK(0, "%s: fixtures readable", name);
            free(blocks);
            free(want);
            continue;
        }
        n = nf / sizeof(float);
        CHECK(n == (size_t) values && nb == n / q->block * q->block_bytes,
              "%s: %zu values in %zu bytes", name, n, nb);
        got = malloc(nf);
        memset(got, 0x55, nf);
        q->to_f32(blocks, got, (int64_t) n);
        for (j = 0, bad = 0; j < n; j++) {
            if (memcmp(&got[j], want + j * 4, 4) != 0) {
                if (bad++ < 3) {
                    uint32_t  g, w;

                    memcpy(&g, &got[j], 4);
                    memcpy(&w, want + j * 4, 4);
                    printf("#   %s value %zu: got %08x, want %08x\n", name, j,
                           g, w);
                }
            }
        }
        CHECK(bad == 0, "%s: %zu values bit-identical to gguf-py's"
              " dequantize (%zu differ)", name, n, bad);
        free(got);
        free(blocks);
        free(want);
    }
}

static void
test_layouts(json_t *layouts, json_t *types)
{
    const char  *key, *name;
    json_t      *v;
    int          block, bytes, bad = 0, known = 0, id;
    size_t       n;

    json_object_foreach(layouts, key, v) {
        id = (int) json_integer_value(json_array_get(v, 0));
        if (clef_ggml_type_layout((uint32_t) id, &name, &block, &bytes) != 0
            || strcmp(name, key) != 0
            || block != json_integer_value(json_array_get(v, 1))
            || bytes != json_integer_value(json_array_get(v, 2)))
        {
            printf("#   %s (%d) differs\n", key, id);
            bad++;
        }
    }
    for (id = 0; id < 256; id++) {
        known += clef_ggml_type_layout((uint32_t) id, &name, &block, &bytes) == 0;
    }
    CHECK(bad == 0 && known == (int) json_object_size(layouts),
          "the layouts of all %zu GGML types as gguf-py's GGML_QUANT_SIZES",
          json_object_size(layouts));
    for (n = 0, id = 0; id < 256; id++) {
        n += by_ggml((uint32_t) id) != NULL;
    }
    CHECK_INT(n, json_array_size(types), "every type read is in the fixtures");
    CHECK_INT(clef_ggml_row_bytes(CLEF_GGML_Q4_K, 512), 288, "Q4_K row bytes");
    CHECK_INT(clef_ggml_row_bytes(CLEF_GGML_Q4_K, 300), -1,
              "a row that is not whole blocks");
    CHECK_INT(clef_ggml_row_bytes(99, 32), -1, "an unknown type");
}

static float
bits_f(uint32_t u)
{
    float  f;

    memcpy(&f, &u, 4);
    return f;
}

/* f32 -> f16: every f16 value back to itself, every midpoint between
 * neighbours to the even one, just above/below a midpoint to the nearer. */
static void
test_f16_rounding(void)
{
    uint32_t  h, lo, hi, u, bad = 0;
    float     a, b, mid;

    for (h = 0; h < 0x10000; h++) {
        a = clef_f16_to_f32((uint16_t) h);
        if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0) {
            /* NaN: stays NaN, quiet, sign and top payload bits kept */
            bad += clef_f32_to_f16(a) != (h | 0x200);
            continue;
        }
        bad += clef_f32_to_f16(a) != h;
    }
    CHECK(bad == 0, "f16 -> f32 -> f16 is the identity (%u differ)", bad);

    bad = 0;
    for (lo = 0; lo < 0x7bff; lo++) {
        hi = lo + 1;
        a = clef_f16_to_f32((uint16_t) lo);
        b = clef_f16_to_f32((uint16_t) hi);
        mid = (float) (((double) a + (double) b) / 2);  /* exact in f32 */
        bad += clef_f32_to_f16(mid) != ((lo & 1) ? hi : lo);
        memcpy(&u, &mid, 4);
        bad += clef_f32_to_f16(bits_f(u + 1)) != hi;
        bad += clef_f32_to_f16(bits_f(u - 1)) != lo;
        bad += clef_f32_to_f16(-mid) != (((lo & 1) ? hi : lo) | 0x8000);
    }
    CHECK(bad == 0, "f32 -> f16 rounds to nearest, ties to even, on all"
          " %u midpoints (%u wrong)", 0x7bffu, bad);
    CHECK_INT(clef_f32_to_f16(65519.99f), 0x7bff, "just below 65520: 65504");
    CHECK_INT(clef_f32_to_f16(65520.0f), 0x7c00, "65520: infinity");
    CHECK_INT(clef_f32_to_f16(1e-8f), 0, "below half the least subnormal: 0");
    CHECK_INT(clef_f32_to_f16(-3e-8f), 0x8001, "-3e-8: the least subnormal");
}

/* splitmix64: a deterministic stream of test data */
static uint64_t
next_u64(uint64_t *s)
{
    uint64_t  z = (*s += 0x9e3779b97f4a7c15ull);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static float
next_gauss(uint64_t *s)
{
    /* a sum of uniforms: a bell, with tails to reach the clamps */
    float  v = 0;
    int    i;

    for (i = 0; i < 4; i++) {
        v += (float) (next_u64(s) >> 40) / (float) (1 << 24) - 0.5f;
    }
    return v;
}

/*
 * The quantizers: per block of each type, the largest error of a value
 * read back, over the block's largest magnitude, stays within the type's
 * bound (a step of its grid, the rounding of its fp16 scales and, for the
 * K types, of the 6- or 8-bit sub-scales).
 */
static void
test_quantizers(void)
{
    static const struct {
        clef_ggml_type  type;
        double          bound;      /* of |x - x'| / max |x| per block */
    } cases[] = {
        { CLEF_GGML_F32, 0 },        { CLEF_GGML_F16, 1.0 / 1024 },
        { CLEF_GGML_BF16, 1.0 / 128 }, { CLEF_GGML_Q8_0, 0.5 / 127 + 1e-3 },
        { CLEF_GGML_Q4_0, 1.0 / 8 + 1e-3 }, { CLEF_GGML_Q4_1, 1.0 / 15 + 2e-3 },
        { CLEF_GGML_Q5_0, 1.0 / 16 + 1e-3 }, { CLEF_GGML_Q5_1, 1.0 / 31 + 2e-3 },
        { CLEF_GGML_Q4_K, 0.12 },    { CLEF_GGML_Q5_K, 0.06 },
        { CLEF_GGML_Q6_K, 0.03 },
    };
    const clef_dtype_traits  *q;
    const int64_t      n = 256 * 64;
    float             *x, *y, amax, worst, e, s;
    uint8_t           *blocks;
    uint64_t           seed = 20;
    int64_t            i, b;
    size_t             c;
    int                zeros_ok;

    x = malloc(n * sizeof(float));
    y = malloc(n * sizeof(float));
    blocks = malloc(n * 4);
    for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        q = by_ggml(cases[c].type);
        for (i = 0; i < n; i++) {
            /* blocks of 256 at scales from 1e-3 to 10 */
            s = 1e-3f * (float) (1 << (i / 256 % 14));
            x[i] = next_gauss(&seed) * s;
        }
        q->from_f32(x, blocks, n);
        q->to_f32(blocks, y, n);
        worst = 0;
        for (b = 0; b < n; b += 256) {
            amax = 0;
            for (i = b; i < b + 256; i++) {
                amax = fabsf(x[i]) > amax ? fabsf(x[i]) : amax;
            }
            for (i = b; i < b + 256; i++) {
                e = fabsf(x[i] - y[i]) / amax;
                worst = e > worst ? e : worst;
            }
        }
        CHECK(worst <= cases[c].bound, "%s quantizer: error %.4g of a block's"
              " largest magnitude (bound %.4g)", q->name, (double) worst,
              cases[c].bound);

        memset(x, 0, 256 * sizeof(float));
        q->from_f32(x, blocks, 256);
        q->to_f32(blocks, y, 256);
        for (i = 0, zeros_ok = 1; i < 256; i++) {
            zeros_ok &= y[i] == 0;
        }
        CHECK(zeros_ok, "%s quantizer: a block of zeros reads back as zeros",
              q->name);
    }
    free(x);
    free(y);
    free(blocks);
}

int
main(void)
{
    json_t        *man;
    json_error_t   jerr;
    char           path[512];

    snprintf(path, sizeof(path), "%s/quant/manifest.json", check_fixtures());
    man = json_load_file(path, 0, &jerr);
    CHECK(man != NULL, "the manifest %s loads", path);
    if (man == NULL) {
        return check_done();
    }
    test_dequant(json_object_get(man, "types"));
    test_layouts(json_object_get(man, "layouts"), json_object_get(man, "types"));
    test_f16_rounding();
    test_quantizers();
    json_decref(man);
    return check_done();
}
