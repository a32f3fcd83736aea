/*
 * The CPU GEMM (engine/cpu/kernels/gemm.h):
 *   - clef_cpu_gemm() against a double-precision product, for every
 *     transpose of A and B, alpha 1 and 0.5, beta 0 and 1, and shapes with
 *     tail tiles on every side and more than one block of k, rows and
 *     columns; the error bound is the one of a recursive fp32 sum;
 *   - the determinism the backend is built on, as equality of bits: a row
 *     of y is the same computed alone, at any row of a bigger product, by
 *     clef_cpu_gemm() on W^T (packed, or read in place from a row-major
 *     copy), by clef_cpu_gemm_packed(), and by
 *     clef_cpu_linear() on 1, 2 or 3 threads; a column is the same whatever
 *     the other columns; a NaN in one row of x stays in that row;
 *   - a weight packed in parts (concatenated projections) is the weight
 *     packed whole.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/splitmix64.h"
#include "check.h"
#include "cpu/kernels/gemm.h"
#include "cpu/parallel/pool.h"

static uint64_t  seed = 11;

static float *
random_floats(int64_t n)
{
    float    *p = malloc(sizeof(float) * (size_t) (n > 0 ? n : 1));
    int64_t   i;

    for (i = 0; p != NULL && i < n; i++) {
        p[i] = (float) ((double) (clef_splitmix64(&seed) >> 11) / 9007199254740992.0
                        * 2.0 - 1.0);
    }
    return p;
}

static int
same_bits(const float *a, const float *b, int64_t n)
{
    return memcmp(a, b, sizeof(float) * (size_t) n) == 0;
}

/* c = alpha a b + beta c in every layout, against a double product: the
 * error of a recursive fp32 sum of k terms is below (k + 2) eps sum |.|. */
static void
test_against_double(int64_t m, int64_t n, int64_t k, int ta, int tb, float alpha,
    float beta, float *scratch)
{
    float         *a = random_floats(m * k), *b = random_floats(k * n);
    float         *c = random_floats(m * n), *c0 = malloc(sizeof(float) * m * n);
    clef_cpu_mat   av, bv;
    double         s, bound, worst = 0.0;
    int64_t        i, j, l;
    int            ok = 1;

    memcpy(c0, c, sizeof(float) * m * n);
    av = ta ? clef_cpu_trans(a, m) : clef_cpu_rows(a, k);
    bv = tb ? clef_cpu_trans(b, k) : clef_cpu_rows(b, n);
    clef_cpu_gemm(m, n, k, alpha, av, bv, beta, c, n, scratch);

    for (i = 0; i < m; i++) {
        for (j = 0; j < n; j++) {
            double  x, y;

            s = 0.0;
            bound = 0.0;
            for (l = 0; l < k; l++) {
                x = av.p[i * av.rs + l * av.cs];
                y = bv.p[l * bv.rs + j * bv.cs];
                s += x * y;
                bound += fabs(x * y);
            }
            s = alpha * s + (beta != 0.0f ? c0[i * n + j] : 0.0);
            bound = (double) (k + 2) * FLT_EPSILON
                    * (fabs(alpha) * bound + fabs(beta * c0[i * n + j]));
            if (!(fabs(c[i * n + j] - s) <= bound)) {
                ok = 0;
            }
            worst = fabs(c[i * n + j] - s) > worst ? fabs(c[i * n + j] - s) : worst;
        }
    }
    CHECK(ok, "gemm %lldx%lldx%lld A%s B%s alpha %g beta %g: within the fp32 "
          "bound of a double product (max error %.3g)", (long long) m, (long long) n,
          (long long) k, ta ? "^T" : "", tb ? "^T" : "", alpha, beta, worst);
    free(a);
    free(b);
    free(c);
    free(c0);
}

/* y = x W^T + beta y for rows of x and W, by every path, bit for bit */
static void
test_paths(clef_cpu_pool **pools, int64_t m, int64_t n, int64_t k, float beta,
    float *scratch)
{
    float          *x = random_floats(m * k), *w = random_floats(n * k);
    float          *y0 = random_floats(m * n);
    float          *want = malloc(sizeof(float) * m * n);
    float          *got = malloc(sizeof(float) * m * n);
    float          *lin = malloc(sizeof(float) * clef_cpu_linear_scratch_floats(k));
    float          *wt;
    clef_cpu_wpack  wp, part;
    int64_t         i, j0, j1;
    int             t, ok;

    CHECK(clef_cpu_wpack_alloc(&wp, n, k) == 0, "pack %lldx%lld", (long long) n,
          (long long) k);
    clef_cpu_wpack_rows(&wp, 0, n, w, k);

    /* clef_cpu_gemm() on W^T is the reference of the others */
    memcpy(want, y0, sizeof(float) * m * n);
    clef_cpu_gemm(m, n, k, 1.0f, clef_cpu_rows(x, k), clef_cpu_trans(w, k), beta,
                  want, n, scratch);

    /* B = W^T stored row-major: read in place but for its last panel */
    wt = malloc(sizeof(float) * n * k);
    for (i = 0; i < n * k; i++) {
        wt[i % k * n + i / k] = w[i];
    }
    memcpy(got, y0, sizeof(float) * m * n);
    clef_cpu_gemm(m, n, k, 1.0f, clef_cpu_rows(x, k), clef_cpu_rows(wt, n), beta,
                  got, n, scratch);
    CHECK(same_bits(got, want, m * n), "%lldx%lldx%lld beta %g: W^T read in place "
          "= packed, bit for bit", (long long) m, (long long) n, (long long) k, beta);
    free(wt);

    memcpy(got, y0, sizeof(float) * m * n);
    clef_cpu_gemm_packed(m, x, k, &wp, beta, got, n);
    CHECK(same_bits(got, want, m * n), "%lldx%lldx%lld beta %g: packed W = W^T, "
          "bit for bit", (long long) m, (long long) n, (long long) k, beta);

    for (t = 0; t < 3; t++) {
        memcpy(got, y0, sizeof(float) * m * n);
        clef_cpu_linear(pools[t], x, k, m, &wp, got, n, beta, lin);
        CHECK(same_bits(got, want, m * n), "%lldx%lldx%lld beta %g: clef_cpu_linear "
              "on %d thread%s = on the caller, bit for bit", (long long) m,
              (long long) n, (long long) k, beta, t + 1, t ? "s" : "");
    }

    /* every row alone, and each in a product of rows shifted by 1..6 */
    ok = 1;
    for (i = 0; i < m; i++) {
        memcpy(got, y0 + i * n, sizeof(float) * n);
        clef_cpu_gemm_packed(1, x + i * k, k, &wp, beta, got, n);
        ok &= same_bits(got, want + i * n, n);
    }
    for (i = 1; i <= 6 && i < m; i++) {
        memcpy(got, y0 + i * n, sizeof(float) * (m - i) * n);
        clef_cpu_linear(pools[1], x + i * k, k, m - i, &wp, got, n, beta, lin);
        ok &= same_bits(got, want + i * n, (m - i) * n);
    }
    CHECK(ok, "%lldx%lldx%lld: each row alone, and the rows from 1 .. 6 on, as in "
          "the whole product, bit for bit", (long long) m, (long long) n, (long long) k);

    /* the columns j0 .. j1 of W alone (their own packing, other tails) */
    j0 = n / 3;
    j1 = n - n / 4;
    ok = clef_cpu_wpack_alloc(&part, j1 - j0, k) == 0;
    if (ok) {
        clef_cpu_wpack_rows(&part, 0, j1 - j0, w + j0 * k, k);
        for (i = 0; i < m; i++) {
            memcpy(got + i * (j1 - j0), y0 + i * n + j0, sizeof(float) * (j1 - j0));
        }
        clef_cpu_linear(pools[2], x, k, m, &part, got, j1 - j0, beta, lin);
        for (i = 0; i < m; i++) {
            ok &= same_bits(got + i * (j1 - j0), want + i * n + j0, j1 - j0);
        }
        clef_cpu_wpack_free(&part);
    }
    CHECK(ok, "%lldx%lldx%lld: columns %lld .. %lld alone as in the whole product, "
          "bit for bit", (long long) m, (long long) n, (long long) k, (long long) j0,
          (long long) j1);

    /* a NaN in row 0 stays in row 0 */
    if (m > 1) {
        x[0] = NAN;
        memcpy(got, y0, sizeof(float) * m * n);
        clef_cpu_linear(pools[1], x, k, m, &wp, got, n, beta, lin);
        CHECK(isnan(got[0]) && same_bits(got + n, want + n, (m - 1) * n),
              "%lldx%lldx%lld: a NaN in row 0 of x leaves the other rows bit for bit",
              (long long) m, (long long) n, (long long) k);
    }

    clef_cpu_wpack_free(&wp);
    free(x);
    free(w);
    free(y0);
    free(want);
    free(got);
    free(lin);
}

static void
test_pack_parts(void)
{
    const int64_t   n = 37, k = 29, cut[] = { 0, 5, 16, 17, 37 };
    float          *w = random_floats(n * k);
    clef_cpu_wpack  whole, parts;
    int             i, ok;

    ok = clef_cpu_wpack_alloc(&whole, n, k) == 0 && clef_cpu_wpack_alloc(&parts, n, k) == 0;
    if (ok) {
        clef_cpu_wpack_rows(&whole, 0, n, w, k);
        for (i = 0; i < 4; i++) {
            clef_cpu_wpack_rows(&parts, cut[i], cut[i + 1] - cut[i], w + cut[i] * k, k);
        }
        ok = same_bits(whole.data, parts.data, (int64_t) clef_cpu_wpack_floats(n, k));
        clef_cpu_wpack_free(&whole);
        clef_cpu_wpack_free(&parts);
    }
    CHECK(ok, "a 37x29 weight packed in 4 parts = packed whole (zero-padded tail)");
    free(w);
}

int
main(void)
{
    static const int64_t  shapes[][3] = {
        { 1, 1, 1 }, { 5, 17, 3 }, { 6, 16, 256 }, { 7, 33, 257 },
        { 13, 50, 600 }, { 150, 530, 70 }, { 64, 64, 0 },
    };
    clef_cpu_pool        *pools[3];
    clef_error            err;
    float                *scratch = malloc(sizeof(float) * CLEF_GEMM_SCRATCH_FLOATS);
    size_t                s;
    int                   t, ta, tb;

    (void) check_fixtures;
    (void) check_rel_err;
    for (t = 0; t < 3; t++) {
        pools[t] = clef_cpu_pool_create(t + 1, &err);
        if (pools[t] == NULL) {
            CHECK(0, "pool of %d threads: %s", t + 1, err.message);
            return check_done();
        }
    }
    printf("# %s\n", clef_cpu_gemm_describe());

    for (s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
        for (ta = 0; ta < 2; ta++) {
            for (tb = 0; tb < 2; tb++) {
                test_against_double(shapes[s][0], shapes[s][1], shapes[s][2], ta, tb,
                                    ta ? 0.5f : 1.0f, tb ? 1.0f : 0.0f, scratch);
            }
        }
    }

    test_paths(pools, 37, 45, 300, 0.0f, scratch);
    test_paths(pools, 37, 45, 300, 1.0f, scratch);
    test_paths(pools, 700, 300, 64, 0.0f, scratch);
    test_paths(pools, 5, 1100, 520, 1.0f, scratch);
    test_pack_parts();

    for (t = 0; t < 3; t++) {
        clef_cpu_pool_destroy(pools[t]);
    }
    free(scratch);
    return check_done();
}
