/*
 * The wide AVX-512 micro-kernel (engine/cpu/kernels/gemm_kernel_avx512.c) gives
 * every element the bits of the AVX2 kernel: a 12 x 32 tile against the
 * four 6 x 16 tiles it covers, bit for bit (and its 6 x 32 half tile
 * against the top two, for packed A and bf16 B), for
 *   - B as fp32 panels and as bf16 weight panels (interleaved columns),
 *   - A as packed panels and read in place (strided, and transposed),
 *   - kc 1, 7, 64, 256; alpha 1 and 0.37; C loaded or not;
 *   - values that show a different order or a different operation at once:
 *     magnitudes spread over 2^-60 .. 2^60 (cancellation), subnormals,
 *     -0, infinities and NaN in some rows and columns.
 * Skipped where the CPU has no AVX-512F; there the wide kernel never runs.
 * The whole products under both kernels are compared by running the CPU
 * tests with CLEF_CPU_GEMM_KERNEL=avx2 as well (make test-kernels).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/splitmix64.h"
#include "check.h"
#include "cpu/kernels/gemm.h"
#include "cpu/kernels/gemm_kernel.h"

#define MR   CLEF_GEMM_MR
#define NR   CLEF_GEMM_NR
#define WMR  CLEF_GEMM_WIDE_MR
#define WNR  CLEF_GEMM_WIDE_NR
#define LDC  40                   /* C wider than the tile: strides matter */

static uint64_t  seed = 5;

/* a value of a random sign and magnitude 2^-60 .. 2^60, now and then a
 * special one */
static float
nasty(int specials)
{
    uint64_t  r = clef_splitmix64(&seed);
    float     v = ldexpf((float) ((r >> 40) & 0xffffff) / 16777216.0f + 0.5f,
                         (int) ((r >> 8) % 121) - 60);

    v = (r & 1) ? -v : v;
    if (specials) {
        switch ((r >> 16) % 64) {
        case 0: return -0.0f;
        case 1: return 1e-40f;                /* subnormal */
        case 2: return INFINITY;
        case 3: return NAN;
        default: break;
        }
    }
    return v;
}

/* 64-byte aligned, the size rounded up as aligned_alloc() wants */
static void *
alloc64(size_t bytes)
{
    return aligned_alloc(64, (bytes + 63) / 64 * 64);
}

static uint16_t
bf16_of(float f)
{
    uint32_t  u;

    memcpy(&u, &f, 4);
    return (uint16_t) (u >> 16);
}

/* bf16 panel position of column j (gemm_kernel.h) */
static int
bf16_pos(int j)
{
    return j < NR / 2 ? 2 * j : 2 * (j - NR / 2) + 1;
}

static void
one_case(int64_t kc, int bf16, int strided, float alpha, int load_c,
    int specials)
{
    /* A: 12 rows x kc, as a row-major matrix (lda = kc + 3) and as two
     * packed panels; B: kc x 32 as two panels, fp32 or bf16 */
    int64_t    lda = kc + 3, i, j, k, p;
    float     *a = malloc(sizeof(float) * WMR * lda);
    float     *ap = alloc64(sizeof(float) * 2 * kc * MR);
    float     *bf = alloc64(sizeof(float) * 2 * kc * NR);
    uint16_t  *bh = alloc64(sizeof(uint16_t) * 2 * kc * NR);
    float      c0[WMR * LDC], want[WMR * LDC], got[WMR * LDC], w;
    int        ok;

    for (i = 0; i < WMR; i++) {
        for (k = 0; k < kc; k++) {
            a[i * lda + k] = nasty(specials && i == 4);
            ap[(i / MR) * kc * MR + k * MR + i % MR] = a[i * lda + k];
        }
    }
    for (p = 0; p < 2; p++) {
        for (k = 0; k < kc; k++) {
            for (j = 0; j < NR; j++) {
                w = nasty(specials && j == 3);
                bh[p * kc * NR + k * NR + bf16_pos((int) j)] = bf16_of(w);
                bf[p * kc * NR + k * NR + j] = w;
            }
        }
    }
    for (i = 0; i < WMR * LDC; i++) {
        c0[i] = nasty(0);
    }

    /* the AVX2 kernel, four tiles */
    memcpy(want, c0, sizeof(want));
    for (i = 0; i < 2; i++) {
        for (j = 0; j < 2; j++) {
            float  *c = want + i * MR * LDC + j * NR;

            /* the AVX2 bf16 kernels' two loops: the first row of tiles
             * prefetches a panel (the other one: any readable memory) */
            const uint16_t  *next = i == 0 ? bh + (1 - j) * kc * NR : NULL;

            if (bf16 && strided) {
                clef_cpu_gemm_kernel_bf16w_strided(kc, a + i * MR * lda, lda, 1,
                                                   bh + j * kc * NR, next, alpha,
                                                   c, LDC, load_c);
            } else if (bf16) {
                clef_cpu_gemm_kernel_bf16w(kc, ap + i * kc * MR, bh + j * kc * NR,
                                           next, alpha, c, LDC, load_c);
            } else if (strided) {
                clef_cpu_gemm_kernel_strided(kc, a + i * MR * lda, lda, 1,
                                             bf + j * kc * NR, NR, alpha, c, LDC,
                                             load_c);
            } else {
                clef_cpu_gemm_kernel(kc, ap + i * kc * MR, bf + j * kc * NR, NR,
                                     alpha, c, LDC, load_c);
            }
        }
    }

    /* the wide kernel, one tile */
    memcpy(got, c0, sizeof(got));
    if (bf16 && strided) {
        clef_cpu_gemm_kernel_wide_bf16w_strided(kc, a, lda, 1, bh, bh + kc * NR,
                                                NULL, NULL, alpha, got, LDC,
                                                load_c);
    } else if (bf16) {
        /* with something to prefetch (its own panels: any readable memory) */
        clef_cpu_gemm_kernel_wide_bf16w(kc, ap, ap + kc * MR, bh, bh + kc * NR,
                                        bh, bh + kc * NR, alpha, got, LDC,
                                        load_c);
    } else if (strided) {
        clef_cpu_gemm_kernel_wide_strided(kc, a, lda, 1, bf, bf + kc * NR, NR,
                                          alpha, got, LDC, load_c);
    } else {
        clef_cpu_gemm_kernel_wide(kc, ap, ap + kc * MR, bf, bf + kc * NR, NR,
                                  alpha, got, LDC, load_c);
    }

    ok = memcmp(want, got, sizeof(got)) == 0;
    for (i = 0; !ok && i < WMR * LDC; i++) {
        if (memcmp(&want[i], &got[i], 4) != 0) {
            printf("# element (%ld, %ld): AVX2 %a, wide %a\n", (long) (i / LDC),
                   (long) (i % LDC), want[i], got[i]);
            break;
        }
    }
    CHECK(ok, "kc %ld, B %s, A %s, alpha %g, C %s%s: the wide tile has the "
          "AVX2 tiles' bits, columns past the tile untouched", (long) kc,
          bf16 ? "bf16" : "fp32", strided ? "in place" : "packed", alpha,
          load_c ? "loaded" : "overwritten", specials ? ", with -0/subnormal/inf/NaN" : "");

    /* the half tile: rows 0-5 of the wide one from the first panel of A,
     * the rows below left as they were */
    if (bf16 && !strided) {
        memcpy(got, c0, sizeof(got));
        clef_cpu_gemm_kernel_half_bf16w(kc, ap, bh, bh + kc * NR, NULL, NULL,
                                        alpha, got, LDC, load_c);
        CHECK(memcmp(want, got, sizeof(float) * MR * LDC) == 0
              && memcmp(c0 + MR * LDC, got + MR * LDC,
                        sizeof(float) * (WMR - MR) * LDC) == 0,
              "kc %ld, alpha %g, C %s%s: the half tile has the AVX2 tiles' "
              "bits in its %d rows and leaves the others", (long) kc, alpha,
              load_c ? "loaded" : "overwritten",
              specials ? ", with -0/subnormal/inf/NaN" : "", MR);
    }

    free(a);
    free(ap);
    free(bf);
    free(bh);
}

/* A read in place through a transpose (column stride > 1), as
 * clef_cpu_gemm() does for A^T */
static void
transposed_case(void)
{
    int64_t  kc = 37, i, j, k, ld = WMR + 1;
    float   *at = malloc(sizeof(float) * kc * ld);
    float   *bf = alloc64(sizeof(float) * 2 * kc * NR);
    float    want[WMR * LDC] = { 0 }, got[WMR * LDC] = { 0 };

    for (k = 0; k < kc; k++) {
        for (i = 0; i < ld; i++) {
            at[k * ld + i] = nasty(0);
        }
        for (j = 0; j < 2 * NR; j++) {
            bf[k * NR + (j / NR) * kc * NR + j % NR] = nasty(0);
        }
    }
    for (i = 0; i < 2; i++) {
        for (j = 0; j < 2; j++) {
            clef_cpu_gemm_kernel_strided(kc, at + i * MR, 1, ld, bf + j * kc * NR, NR,
                                         0.5f, want + i * MR * LDC + j * NR, LDC, 0);
        }
    }
    clef_cpu_gemm_kernel_wide_strided(kc, at, 1, ld, bf, bf + kc * NR, NR, 0.5f,
                                      got, LDC, 0);
    CHECK(memcmp(want, got, sizeof(got)) == 0,
          "A read through a transpose (row stride 1, column stride %ld): same bits",
          (long) ld);
    free(at);
    free(bf);
}

int
main(void)
{
    static const int64_t  kcs[] = { 1, 7, 64, 256 };
    size_t                s;
    int                   bf16, strided, load_c, specials;

    (void) check_fixtures;
    (void) check_rel_err;
    if (!clef_cpu_gemm_wide_supported()) {
        printf("1..0 # SKIP no AVX-512F: the wide kernel never runs here\n");
        return 0;
    }
    for (s = 0; s < sizeof(kcs) / sizeof(kcs[0]); s++) {
        for (bf16 = 0; bf16 < 2; bf16++) {
            for (strided = 0; strided < 2; strided++) {
                for (load_c = 0; load_c < 2; load_c++) {
                    for (specials = 0; specials < 2; specials++) {
                        one_case(kcs[s], bf16, strided, load_c ? 1.0f : 0.37f,
                                 load_c, specials);
                    }
                }
            }
        }
    }
    transposed_case();
    return check_done();
}
