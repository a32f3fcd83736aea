/*
 * bf16 in the CPU GEMM (engine/cpu/kernels/gemm.h), as equality of bits:
 *   - a weight packed in bf16 gives the products of the same weight packed
 *     in fp32 (widening is exact and the kernel's arithmetic is the same),
 *     through clef_cpu_linear() on 1, 2 and 3 threads and
 *     clef_cpu_gemm_packed() (A read in place), beta 0 and 1, with tail
 *     tiles on every side and several blocks of k;
 *   - packing from bf16 bytes and from floats agree, in both packs;
 *   - clef_cpu_round_bf16() is clef_f32_to_bf16() (ties, NaN, infinities,
 *     denormals, random values);
 *   - CLEF_PRECISION_BF16 is the fp32 product of x rounded to bf16, bit for bit,
 *     so it inherits the determinism of the fp32 path: a row alone, a row
 *     in a batch from any offset and any thread count give the same bits;
 *   - the native path (gemm_bf16.h), where the CPU has bf16 instructions:
 *     within an fp32 sum's rounding of the fallback, and as deterministic
 *     (a row alone, from any offset, on 1-3 threads: the same bits).
 *     Elsewhere it must decline, saying why, and the test says it skipped.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/splitmix64.h"
#include "check.h"
#include "cpu/kernels/gemm.h"
#include "cpu/kernels/gemm_bf16.h"
#include "cpu/kernels/gemm_pack.h"
#include "cpu/parallel/pool.h"
#include "model/tensor.h"

static uint64_t  seed = 13;

static float
random_float(void)
{
    return (float) ((double) (clef_splitmix64(&seed) >> 11) / 9007199254740992.0
                    * 2.0 - 1.0);
}

static int
same_bits(const float *a, const float *b, int64_t n)
{
    return memcmp(a, b, sizeof(float) * (size_t) n) == 0;
}

static void
test_round(void)
{
    static const uint32_t  edge[] = {
        0x3f808000u,    /* tie, even below: stays */
        0x3f818000u,    /* tie, odd below: rounds up */
        0x3f808001u,    /* above the tie */
        0x7f7fffffu,    /* FLT_MAX: rounds to infinity */
        0x7f800000u, 0xff800000u,
        0x7fc00001u, 0x7f800001u, 0xffa00000u,      /* NaNs, one signalling */
        0x00000001u, 0x00008000u, 0x00018000u, 0x807fffffu,
        0x00000000u, 0x80000000u,
    };
    float     v[64], want[64];
    uint32_t  u;
    size_t    i;
    int       ok = 1;

    for (i = 0; i < 64; i++) {
        if (i < sizeof(edge) / sizeof(edge[0])) {
            u = edge[i];
            memcpy(&v[i], &u, sizeof(u));
        } else {
            v[i] = random_float() * 1000.0f;
        }
        want[i] = clef_bf16_to_f32(clef_f32_to_bf16(v[i]));
    }
    /* 61 values: the vector body and the scalar tail both */
    clef_cpu_round_bf16(v, 61);
    for (i = 0; i < 61; i++) {
        ok &= memcmp(&v[i], &want[i], sizeof(float)) == 0;
    }
    CHECK(ok, "clef_cpu_round_bf16 = clef_f32_to_bf16 on ties, NaN, infinities, "
          "denormals and random values");
}

static void
test_shape(clef_cpu_pool **pools, int64_t m, int64_t n, int64_t k, float beta)
{
    float          *x = malloc(sizeof(float) * m * k), *xr = malloc(sizeof(float) * m * k);
    float          *wf = malloc(sizeof(float) * n * k), *y0 = malloc(sizeof(float) * m * n);
    float          *want = malloc(sizeof(float) * m * n), *got = malloc(sizeof(float) * m * n);
    float          *lin = malloc(sizeof(float) * clef_cpu_linear_scratch_floats(k));
    uint16_t       *wh = malloc(sizeof(uint16_t) * n * k);
    clef_cpu_wpack  pf, ph, pf2, ph2;
    int64_t         i;
    int             t, ok;

    for (i = 0; i < n * k; i++) {
        wh[i] = clef_f32_to_bf16(random_float());
        wf[i] = clef_bf16_to_f32(wh[i]);
    }
    for (i = 0; i < m * k; i++) {
        x[i] = random_float();
        xr[i] = clef_bf16_to_f32(clef_f32_to_bf16(x[i]));
    }
    for (i = 0; i < m * n; i++) {
        y0[i] = random_float();
    }
    ok = clef_cpu_wpack_alloc(&pf, n, k) == 0 && clef_cpu_wpack_alloc_bf16(&ph, n, k) == 0
         && clef_cpu_wpack_alloc(&pf2, n, k) == 0
         && clef_cpu_wpack_alloc_bf16(&ph2, n, k) == 0;
    if (!ok) {
        CHECK(0, "packs of %lldx%lld", (long long) n, (long long) k);
        return;
    }
    clef_cpu_wpack_rows(&pf, 0, n, wf, k);
    clef_cpu_wpack_rows_bf16(&ph, 0, n, wh, k);
    clef_cpu_wpack_rows_bf16(&pf2, 0, n, wh, k);
    clef_cpu_wpack_rows(&ph2, 0, n, wf, k);
    CHECK(same_bits(pf.data, pf2.data, (int64_t) clef_cpu_wpack_floats(n, k))
          && memcmp(ph.data, ph2.data, clef_cpu_wpack_bytes(&ph)) == 0
          && clef_cpu_wpack_bytes(&ph) * 2 == clef_cpu_wpack_bytes(&pf),
          "%lldx%lld: bf16 bytes and floats pack alike, in fp32 and in bf16 (half "
          "the bytes)", (long long) n, (long long) k);

    /* the fp32 pack on one thread is the reference */
    memcpy(want, y0, sizeof(float) * m * n);
    clef_cpu_linear(pools[0], x, k, m, &pf, want, n, beta, lin);

    ok = 1;
    for (t = 0; t < 3; t++) {
        memcpy(got, y0, sizeof(float) * m * n);
        clef_cpu_linear(pools[t], x, k, m, &ph, got, n, beta, lin);
        ok &= same_bits(got, want, m * n);
    }
    memcpy(got, y0, sizeof(float) * m * n);
    clef_cpu_gemm_packed(m, x, k, &ph, beta, got, n);
    ok &= same_bits(got, want, m * n);
    CHECK(ok, "%lldx%lldx%lld beta %g: bf16 weights = their fp32 copy, bit for bit "
          "(clef_cpu_linear on 1-3 threads, clef_cpu_gemm_packed)", (long long) m,
          (long long) n, (long long) k, beta);

    /* bf16 precision: the fp32 product of the rounded activations */
    memcpy(want, y0, sizeof(float) * m * n);
    clef_cpu_linear(pools[0], xr, k, m, &pf, want, n, beta, lin);
    ok = 1;
    for (t = 0; t < 3; t++) {
        memcpy(got, y0, sizeof(float) * m * n);
        clef_cpu_linear_prec(pools[t], x, k, m, &ph, got, n, beta, lin, CLEF_PRECISION_BF16);
        ok &= same_bits(got, want, m * n);
    }
    CHECK(ok, "%lldx%lldx%lld beta %g: CLEF_PRECISION_BF16 = fp32 product of x rounded to "
          "bf16, bit for bit, on 1-3 threads", (long long) m, (long long) n,
          (long long) k, beta);

    ok = 1;
    for (i = 0; i < m; i++) {
        memcpy(got, y0 + i * n, sizeof(float) * n);
        clef_cpu_linear_prec(pools[1], x + i * k, k, 1, &ph, got, n, beta, lin,
                             CLEF_PRECISION_BF16);
        ok &= same_bits(got, want + i * n, n);
    }
    for (i = 1; i <= 6 && i < m; i++) {
        memcpy(got, y0 + i * n, sizeof(float) * (m - i) * n);
        clef_cpu_linear_prec(pools[2], x + i * k, k, m - i, &ph, got, n, beta, lin,
                             CLEF_PRECISION_BF16);
        ok &= same_bits(got, want + i * n, (m - i) * n);
    }
    CHECK(ok, "%lldx%lldx%lld: CLEF_PRECISION_BF16, each row alone and the rows from "
          "1 .. 6 on = the whole product, bit for bit", (long long) m,
          (long long) n, (long long) k);

    clef_cpu_wpack_free(&pf);
    clef_cpu_wpack_free(&ph);
    clef_cpu_wpack_free(&pf2);
    clef_cpu_wpack_free(&ph2);
    free(x);
    free(xr);
    free(wf);
    free(wh);
    free(y0);
    free(want);
    free(got);
    free(lin);
}

static void
test_native_shape(clef_cpu_pool **pools, const clef_cpu_bf16_native *nat,
    int64_t m, int64_t n, int64_t k, float beta)
{
    float          *x = malloc(sizeof(float) * m * k), *y0 = malloc(sizeof(float) * m * n);
    float          *want = malloc(sizeof(float) * m * n);
    float          *got = malloc(sizeof(float) * m * n);
    float          *one = malloc(sizeof(float) * m * n);
    float          *lin = malloc(sizeof(float) * clef_cpu_linear_scratch_floats(k));
    uint16_t       *wh = malloc(sizeof(uint16_t) * n * k);
    clef_cpu_wpack  ph, pn;
    double          sum, worst = 0.0;
    int64_t         i, j, l;
    int             t, ok = 1, near = 1;

    for (i = 0; i < n * k; i++) {
        wh[i] = clef_f32_to_bf16(random_float());
    }
    for (i = 0; i < m * k; i++) {
        x[i] = random_float();
    }
    for (i = 0; i < m * n; i++) {
        y0[i] = random_float();
    }
    if (clef_cpu_wpack_alloc_bf16(&ph, n, k) != 0
        || clef_cpu_wpack_alloc_native(&pn, n, k, nat) != 0)
    {
        CHECK(0, "native pack of %lldx%lld", (long long) n, (long long) k);
        return;
    }
    clef_cpu_wpack_rows_bf16(&ph, 0, n, wh, k);
    clef_cpu_wpack_rows_bf16(&pn, 0, n, wh, k);

    memcpy(want, y0, sizeof(float) * m * n);
    clef_cpu_linear_prec(pools[0], x, k, m, &ph, want, n, beta, lin, CLEF_PRECISION_BF16);
    memcpy(one, y0, sizeof(float) * m * n);
    clef_cpu_linear_prec(pools[0], x, k, m, &pn, one, n, beta, lin, CLEF_PRECISION_BF16);
    for (i = 0; i < m; i++) {
        for (j = 0; j < n; j++) {
            sum = fabs(beta * y0[i * n + j]);
            for (l = 0; l < k; l++) {
                sum += fabs((double) clef_bf16_to_f32(clef_f32_to_bf16(x[i * k + l]))
                            * clef_bf16_to_f32(wh[j * k + l]));
            }
            worst = fmax(worst, fabs((double) one[i * n + j] - want[i * n + j]));
            near &= fabs((double) one[i * n + j] - want[i * n + j])
                    <= 2.0 * (double) (k + 3) * ldexp(1.0, -23) * sum;
        }
    }
    CHECK(near, "%lldx%lldx%lld beta %g: native bf16 within an fp32 sum's rounding "
          "of the fallback (max %.3g)", (long long) m, (long long) n, (long long) k,
          beta, worst);

    for (t = 1; t < 3; t++) {
        memcpy(got, y0, sizeof(float) * m * n);
        clef_cpu_linear_prec(pools[t], x, k, m, &pn, got, n, beta, lin,
                             CLEF_PRECISION_BF16);
        ok &= same_bits(got, one, m * n);
    }
    for (i = 0; i < m; i++) {
        memcpy(got, y0 + i * n, sizeof(float) * n);
        clef_cpu_linear_prec(pools[1], x + i * k, k, 1, &pn, got, n, beta, lin,
                             CLEF_PRECISION_BF16);
        ok &= same_bits(got, one + i * n, n);
    }
    for (i = 1; i <= 6 && i < m; i++) {
        memcpy(got, y0 + i * n, sizeof(float) * (m - i) * n);
        clef_cpu_linear_prec(pools[2], x + i * k, k, m - i, &pn, got, n, beta, lin,
                             CLEF_PRECISION_BF16);
        ok &= same_bits(got, one + i * n, (m - i) * n);
    }
    CHECK(ok, "%lldx%lldx%lld: native bf16 on 1-3 threads, each row alone and the "
          "rows from 1 .. 6 on = the whole product, bit for bit", (long long) m,
          (long long) n, (long long) k);

    clef_cpu_wpack_free(&ph);
    clef_cpu_wpack_free(&pn);
    free(x);
    free(y0);
    free(want);
    free(got);
    free(one);
    free(lin);
    free(wh);
}

static void
test_native(clef_cpu_pool **pools)
{
    static const int64_t   ks[] = { 300, 64, 520 };
    clef_cpu_bf16_native  *nat;
    char                   why[256];

    nat = clef_cpu_bf16_native_open(ks, 3, 3, why, sizeof(why));
    if (nat == NULL) {
        printf("# native bf16: %s\n", why);
        CHECK(why[0] != '\0', "native bf16 declines, saying why # SKIP no native "
              "bf16 path on this machine: %s", why);
        return;
    }
    printf("# native bf16: %s\n", clef_cpu_bf16_native_describe(nat));
    test_native_shape(pools, nat, 37, 45, 300, 0.0f);
    test_native_shape(pools, nat, 37, 45, 300, 1.0f);
    test_native_shape(pools, nat, 700, 300, 64, 0.0f);
    test_native_shape(pools, nat, 5, 1100, 520, 1.0f);
    clef_cpu_bf16_native_close(nat);
}

int
main(void)
{
    clef_cpu_pool  *pools[3];
    clef_error      err;
    int             t;

    (void) check_fixtures;
    (void) check_rel_err;
    for (t = 0; t < 3; t++) {
        pools[t] = clef_cpu_pool_create(t + 1, &err);
        if (pools[t] == NULL) {
            CHECK(0, "pool of %d threads: %s", t + 1, err.message);
            return check_done();
        }
    }
    printf("# %s\n# %s\n", clef_cpu_gemm_describe_prec(CLEF_PRECISION_FP32),
           clef_cpu_gemm_describe_prec(CLEF_PRECISION_BF16));

    test_round();
    test_shape(pools, 37, 45, 300, 0.0f);
    test_shape(pools, 37, 45, 300, 1.0f);
    test_shape(pools, 700, 300, 64, 0.0f);
    test_shape(pools, 5, 1100, 520, 1.0f);
    test_shape(pools, 1, 16, 1, 0.0f);
    /* rows past the last 12 on the wide kernel's half tiles: 8 (a whole
     * panel and a part of one) and 6 (one whole panel) */
    test_shape(pools, 20, 96, 300, 1.0f);
    test_shape(pools, 30, 64, 64, 0.0f);
    test_native(pools);

    for (t = 0; t < 3; t++) {
        clef_cpu_pool_destroy(pools[t]);
    }
    return check_done();
}
