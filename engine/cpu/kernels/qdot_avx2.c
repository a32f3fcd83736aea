/*
 * The quantized products' tile for CPUs with AVX2 and no VNNI
 * (qdot_tile.h): 8 lanes, the 4-value dot of an unsigned and a signed
 * byte vector by vpmaddubsw (pairs to 16 bits) and vpmaddwd with ones
 * (pairs to 32).  Exact: vpmaddubsw saturates at 32767, and no pair here
 * reaches it (weight codes at most 63, activation codes at most 127 in
 * magnitude: 2 x 63 x 127 = 16002), nor Q8_0's, whose codes go in as their
 * magnitudes (at most 128) against the activations' codes with the
 * weights' signs (2 x 128 x 127 = 32512).  The K types' steps add up in
 * 16-bit lanes a group at a time (QD_DOT16 below).  A tile is 4
 * activation rows (3 for I8) by 8 weight rows, in the 16 registers.
 */
#include "cpu/kernels/qdot_kernel.h"

#include <immintrin.h>

typedef int32_t  qd_i32 __attribute__((may_alias, aligned(1)));

#define QD_FN(name)  qd2_##name
#define QD_TARGET    __attribute__((target("avx2,fma,f16c")))
#define QD_LANES     8
#define QD_MR        4
#define QD_MR6       3
#define QD_MRQ6      4    /* Q6_K's: q6k16 keeps one 32-bit sum */
#define QD_NV        1
#define QD_HALF      0

#include "cpu/kernels/qdot_avx256.h"

#define QD_DOT(acc, u, p)                                                    \
    _mm256_add_epi32(acc, _mm256_madd_epi16(                                 \
        _mm256_maddubs_epi16(u, vi_bcast(p)), _mm256_set1_epi16(1)))
#define QD_DOT_Q8(acc, w, p)                                                 \
    _mm256_add_epi32(acc, _mm256_madd_epi16(                                 \
        _mm256_maddubs_epi16(_mm256_abs_epi8(w),                             \
                             _mm256_sign_epi8(vi_bcast(p), w)),              \
        _mm256_set1_epi16(1)))
#define QD_Q8_SHIFT  (-1)
/* the K types' steps added in 16-bit lanes, a group at a time
 * (qdot_tile.h's QD_G16_*: their sums stay under 32768, so vpaddw never
 * wraps), then one vpmaddwd per group */
#define QD_DOT16(acc, u, p)                                                  \
    _mm256_add_epi16(acc, _mm256_maddubs_epi16(u, vi_bcast(p)))
#define QD_WIDEN(acc, h)                                                     \
    _mm256_add_epi32(acc, _mm256_madd_epi16(h, _mm256_set1_epi16(1)))
/* Q6_K's (qdot_tile.h's q6k16): pairs of 16-bit lanes multiplied and
 * added into 32 bits; the 8 int8 at p in both 16-bit halves of lanes 0-7;
 * a's low and b's high 16 bits of each lane */
#define QD_MADD16(a, b)   _mm256_madd_epi16(a, b)
#define QD_SC16(p)                                                           \
    _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(                                  \
        _mm_loadl_epi64((const void *) (p)),                                 \
        _mm_loadl_epi64((const void *) (p))))
#define QD_BLEND16(a, b)  _mm256_blend_epi16(a, b, 0xaa)

#include "cpu/kernels/qdot_tile.h"

static const clef_qdot_isa  kernels = {
    "avx2",
    "AVX2 4x8 tiles (vpmaddubsw, K types in 16-bit groups; I8 3x8)",
    QD_MRS, 8, QD_TILES, QD_HALVES
};

const clef_qdot_isa *
clef_qdot_kernels_avx2(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")
           ? &kernels : NULL;
}
