/*
 * Activations into int8 blocks for the quantized products (qdot.h): per
 * 32 values, amax = the largest magnitude (compared as the bits of |x|,
 * so that NaN sorts above infinity and the result never depends on the
 * order of comparisons), d = amax / 127, codes = x * (1 / d) rounded to
 * the nearest integer, ties to even (the conversion's default mode),
 * clamped to [-127, 127] (a NaN or infinity gives -127 as the conversion's
 * "indefinite" does; never -128, which the AVX2 kernel's pairs could not
 * hold), their sum s and the sum s0 of the first 16, and d * s.
 *
 * One implementation, on AVX2 (x86-64-v3, the CPU backend's floor), for
 * every kernel, so the codes are the same whatever kernel reads them.
 */
#include "cpu/kernels/qdot_kernel.h"

#include <immintrin.h>
#include <string.h>

static int32_t
hsum8(__m256i v)
{
    __m128i  s = _mm_add_epi32(_mm256_castsi256_si128(v),
                               _mm256_extracti128_si256(v, 1));

    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
    return _mm_cvtsi128_si32(s);
}

static int32_t
hmax8(__m256i v)
{
    __m128i  s = _mm_max_epi32(_mm256_castsi256_si128(v),
                               _mm256_extracti128_si256(v, 1));

    s = _mm_max_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    s = _mm_max_epi32(s, _mm_shuffle_epi32(s, 0xb1));
    return _mm_cvtsi128_si32(s);
}

static void
quantize_block(const float *x, int8_t *q, clef_qdot_ameta *meta)
{
    const __m256i  abs = _mm256_set1_epi32(0x7fffffff);
    const __m256i  hi = _mm256_set1_epi32(127), lo = _mm256_set1_epi32(-127);
    __m256i        v[4], mx, p01, p23;
    __m256         idv;
    float          amax, d, id;
    int32_t        bits;
    int            j;

    for (j = 0; j < 4; j++) {
        v[j] = _mm256_castps_si256(_mm256_loadu_ps(x + 8 * j));
    }
    mx = _mm256_max_epi32(_mm256_max_epi32(_mm256_and_si256(v[0], abs),
                                           _mm256_and_si256(v[1], abs)),
                          _mm256_max_epi32(_mm256_and_si256(v[2], abs),
                                           _mm256_and_si256(v[3], abs)));
    bits = hmax8(mx);
    memcpy(&amax, &bits, sizeof(amax));
    d = amax / 127.0f;
    id = d != 0.0f ? 1.0f / d : 0.0f;
    idv = _mm256_set1_ps(id);
    for (j = 0; j < 4; j++) {
        v[j] = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_castsi256_ps(v[j]), idv));
        v[j] = _mm256_max_epi32(_mm256_min_epi32(v[j], hi), lo);
    }
    meta->s0 = hsum8(_mm256_add_epi32(v[0], v[1]));
    meta->s = meta->s0 + hsum8(_mm256_add_epi32(v[2], v[3]));
    meta->d = d;
    meta->dsa = d * (float) meta->s;
    /* int32 -> int8 without saturating (the values fit); the packs work
     * within 128-bit halves, the permutation puts the dwords back */
    p01 = _mm256_packs_epi32(v[0], v[1]);
    p23 = _mm256_packs_epi32(v[2], v[3]);
    p01 = _mm256_packs_epi16(p01, p23);
    p01 = _mm256_permutevar8x32_epi32(p01, _mm256_setr_epi32(0, 4, 1, 5, 2, 6,
                                                             3, 7));
    _mm256_storeu_si256((__m256i *) q, p01);
}

void
clef_qdot_quantize_rows(const float *x, int64_t ldx, int64_t m, int64_t k,
    const int32_t *amap, int64_t r0, int64_t r1, int8_t *aq,
    clef_qdot_ameta *am, int64_t ab)
{
    int64_t  r, b, nb = k / CLEF_QDOT_QK;

    for (r = r0; r < r1; r++) {
        for (b = 0; b < nb; b++) {
            if (r >= m) {
                memset(aq + (b * ab + r) * CLEF_QDOT_QK, 0, CLEF_QDOT_QK);
                memset(&am[b * ab + r], 0, sizeof(am[0]));
                continue;
            }
            quantize_block(x + r * ldx
                           + (amap != NULL ? amap[b] : b) * CLEF_QDOT_QK,
                           aq + (b * ab + r) * CLEF_QDOT_QK, &am[b * ab + r]);
        }
    }
}
