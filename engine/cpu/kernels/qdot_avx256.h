/*
 * The 8-lane vector operations of the quantized products' tile
 * (qdot_tile.h) for the 256-bit kernels, qdot_avx2.c and qdot_avxvnni.c:
 * AVX2 with F16C, which both have.  A vector holds rows 0-7 or 8-15 of a
 * panel's step (32 of its 64 bytes).
 */
#ifndef CLEF_CPU_QDOT_AVX256_H
#define CLEF_CPU_QDOT_AVX256_H

#define VI  __m256i
#define VF  __m256

#define vi_zero()         _mm256_setzero_si256()
#define vi_load(p)        _mm256_loadu_si256((const void *) (p))
#define vi_and(a, b)      _mm256_and_si256(a, b)
#define vi_or(a, b)       _mm256_or_si256(a, b)
#define vi_srli16(a, n)   _mm256_srli_epi16(a, n)
#define vi_slli16(a, n)   _mm256_slli_epi16(a, n)
#define vi_slli32(a, n)   _mm256_slli_epi32(a, n)
#define vi_set8(c)        _mm256_set1_epi8(c)
#define vi_add(a, b)      _mm256_add_epi32(a, b)
#define vi_sub(a, b)      _mm256_sub_epi32(a, b)
#define vi_mullo(a, b)    _mm256_mullo_epi32(a, b)
#define vi_bcast(p)       _mm256_set1_epi32(*(const qd_i32 *) (p))
#define vi_s8(p)          _mm256_cvtepi8_epi32(_mm_loadl_epi64((const void *) (p)))
#define vi_u8(p)          _mm256_cvtepu8_epi32(_mm_loadl_epi64((const void *) (p)))
#define vi_srli32(a, n)   _mm256_srli_epi32(a, n)
#define vi_lut16(p)                                                          \
    _mm256_broadcastsi128_si256(_mm_loadu_si128((const void *) (p)))
#define vi_shuffle8(t, i) _mm256_shuffle_epi8(t, i)
#define vf_zero()         _mm256_setzero_ps()
#define vf_load(p)        _mm256_loadu_ps(p)
#define vf_store(p, v)    _mm256_storeu_ps(p, v)
#define vf_bcast(p)       _mm256_set1_ps(*(p))
#define vf_cvt(i)         _mm256_cvtepi32_ps(i)
#define vf_mul(a, b)      _mm256_mul_ps(a, b)
#define vf_fma(a, b, c)   _mm256_fmadd_ps(a, b, c)
#define vf_fnma(a, b, c)  _mm256_fnmadd_ps(a, b, c)
#define vf_f16(p)         _mm256_cvtph_ps(_mm_loadu_si128((const void *) (p)))
#define vf_u8(p)                                                             \
    _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const void *) (p))))

#endif
