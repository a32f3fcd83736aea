/*
 * The quantized products' tile for CPUs with 256-bit VNNI (qdot_tile.h):
 * 8 lanes, one vpdpbusd per 4 values of 8 weight rows and one activation
 * row.  A tile is 4 activation rows (3 for Q6_K) by 8 weight rows, in the
 * 16 registers of AVX-VNNI's VEX encoding (Intel since Alder Lake, AMD
 * since Zen 5).  The same code is compiled a second time with AVX512-VNNI's
 * EVEX encoding of the 256-bit instruction (AVX512VL): the same operation
 * on the same lanes, so a CPU with AVX-512 but not AVX-VNNI (Zen 4,
 * Ice Lake) runs and tests this kernel's code; where both exist the VEX
 * one runs.  Q8_0 as in qdot_avx512.c: 128 added to its codes, 128 times
 * the activation's sum taken off.
 */
#include "cpu/kernels/qdot_kernel.h"

#include <immintrin.h>

typedef int32_t  qd_i32 __attribute__((may_alias, aligned(1)));

#define QD_LANES     8
#define QD_MR        4
#define QD_MR6       3
#define QD_NV        1
#define QD_HALF      0
#define QD_Q8_SHIFT  7

#include "cpu/kernels/qdot_avx256.h"

/* ---- AVX-VNNI (VEX) ------------------------------------------------------ */

#define QD_FN(name)  qdvex_##name
#define QD_TARGET    __attribute__((target("avx2,fma,f16c,avxvnni")))
#define QD_DOT(acc, u, p)     _mm256_dpbusd_avx_epi32(acc, u, vi_bcast(p))
#define QD_DOT_Q8(acc, w, p)                                                 \
    QD_DOT(acc, _mm256_xor_si256(w, vi_set8((char) 0x80)), p)

#include "cpu/kernels/qdot_tile.h"

static const clef_qdot_isa  vex = {
    "avxvnni",
    "AVX-VNNI 4x8 tiles (Q6_K 3x8)",
    QD_MRS, 8, QD_TILES, QD_HALVES
};

#undef QD_FN
#undef QD_TARGET
#undef QD_DOT

/* ---- the same at 256 bits of AVX512-VNNI (EVEX) ---------------------- */

#define QD_FN(name)  qdevex_##name
#define QD_TARGET                                                            \
    __attribute__((target("avx2,fma,f16c,avx512f,avx512vl,avx512vnni")))
#define QD_DOT(acc, u, p)     _mm256_dpbusd_epi32(acc, u, vi_bcast(p))

#include "cpu/kernels/qdot_tile.h"

static const clef_qdot_isa  evex = {
    "avxvnni",
    "AVX-VNNI 4x8 tiles (Q6_K 3x8), in AVX512-VNNI's 256-bit encoding",
    QD_MRS, 8, QD_TILES, QD_HALVES
};

const clef_qdot_isa *
clef_qdot_kernels_avxvnni(void)
{
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avxvnni")) {
        return &vex;
    }
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl")
           && __builtin_cpu_supports("avx512vnni")
           ? &evex : NULL;
}
