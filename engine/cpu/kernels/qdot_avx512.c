/*
 * The quantized products' tile for CPUs with AVX512-VNNI (qdot_tile.h):
 * 16 lanes, one vpdpbusd per 4 values of 16 weight rows and one activation
 * row, the activation's 4 bytes broadcast from memory.  A tile is 6
 * activation rows (4 for Q6_K, which keeps two sums) by two panels (32
 * weight rows): 12 float and 12 integer accumulators of the 32 registers.
 * Unsigned bytes times signed ones: Q8_0's signed codes go in with 128
 * added (an xor), and 128 times the activation's sum comes off after.
 *
 * Compiled for these instructions by function attribute, called only
 * where the CPU has them (qdot.c).
 */
#include "cpu/kernels/qdot_kernel.h"

#include <immintrin.h>

typedef int32_t  qd_i32 __attribute__((may_alias, aligned(1)));

#define QD_FN(name)  qd512_##name
#define QD_TARGET                                                            \
    __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,fma,f16c")))
#define QD_LANES     16
#define QD_MR        6
#define QD_MR6       4
#define QD_NV        2
#define QD_HALF      1

#define VI  __m512i
#define VF  __m512

#define vi_zero()         _mm512_setzero_si512()
#define vi_load(p)        _mm512_loadu_si512((const void *) (p))
#define vi_and(a, b)      _mm512_and_si512(a, b)
#define vi_or(a, b)       _mm512_or_si512(a, b)
#define vi_srli16(a, n)   _mm512_srli_epi16(a, n)
#define vi_slli16(a, n)   _mm512_slli_epi16(a, n)
#define vi_slli32(a, n)   _mm512_slli_epi32(a, n)
#define vi_set8(c)        _mm512_set1_epi8(c)
#define vi_add(a, b)      _mm512_add_epi32(a, b)
#define vi_sub(a, b)      _mm512_sub_epi32(a, b)
#define vi_mullo(a, b)    _mm512_mullo_epi32(a, b)
#define vi_bcast(p)       _mm512_set1_epi32(*(const qd_i32 *) (p))
#define vi_s8(p)          _mm512_cvtepi8_epi32(_mm_loadu_si128((const void *) (p)))
#define vi_u8(p)          _mm512_cvtepu8_epi32(_mm_loadu_si128((const void *) (p)))
#define vi_srli32(a, n)   _mm512_srli_epi32(a, n)
#define vi_lut16(p)                                                          \
    _mm512_broadcast_i32x4(_mm_loadu_si128((const void *) (p)))
#define vi_shuffle8(t, i) _mm512_shuffle_epi8(t, i)
#define vf_zero()         _mm512_setzero_ps()
#define vf_load(p)        _mm512_loadu_ps(p)
#define vf_store(p, v)    _mm512_storeu_ps(p, v)
#define vf_bcast(p)       _mm512_set1_ps(*(p))
#define vf_cvt(i)         _mm512_cvtepi32_ps(i)
#define vf_mul(a, b)      _mm512_mul_ps(a, b)
#define vf_fma(a, b, c)   _mm512_fmadd_ps(a, b, c)
#define vf_fnma(a, b, c)  _mm512_fnmadd_ps(a, b, c)
#define vf_f16(p)         _mm512_cvtph_ps(_mm256_loadu_si256((const void *) (p)))
#define vf_u8(p)                                                             \
    _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128((const void *) (p))))

#define QD_DOT(acc, u, p)     _mm512_dpbusd_epi32(acc, u, vi_bcast(p))
#define QD_DOT_Q8(acc, w, p)                                                 \
    _mm512_dpbusd_epi32(acc, _mm512_xor_si512(w, vi_set8((char) 0x80)),      \
                        vi_bcast(p))
#define QD_Q8_SHIFT  7

#include "cpu/kernels/qdot_tile.h"

static const clef_qdot_isa  kernels = {
    "avx512vnni",
    "AVX512-VNNI 6x32 tiles (Q6_K 4x32)",
    QD_MRS, 32, QD_TILES, QD_HALVES
};

const clef_qdot_isa *
clef_qdot_kernels_avx512vnni(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")
           && __builtin_cpu_supports("avx512vl")
           && __builtin_cpu_supports("avx512vnni")
           ? &kernels : NULL;
}
