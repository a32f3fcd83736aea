/*
 * The vectorised activation loops (engine/cpu/kernels/act.h) and the causal conv
 * (conv.h) against scalar references written here in the order the ops
 * promise: bit for bit, at every length around the vector width (a tail
 * element must get the bits a lane gets), on inputs that reach the clamps
 * of clef_exp(), zeros of both signs, -inf (a masked score) and
 * subnormals.  The scalar
 * functions come from vec.h compiled without AVX (this file is built
 * without -march), so the comparison is also one between two compilations
 * of the same IEEE operations.  clef_exp() itself is checked against libm's
 * double exp within its stated 1.4 ulp (asserted at 2 ulp).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cpu/kernels/act.h"
#include "cpu/kernels/vec.h"
#include "cpu/ops/conv.h"
#include "cpu/parallel/pool.h"

static const int  lengths[] = { 0, 1, 7, 8, 9, 15, 16, 17, 63, 64, 65, 100, 1029 };

#define N_LENGTHS  (int) (sizeof(lengths) / sizeof(lengths[0]))
#define MAX_N      1029

static uint32_t  rng = 12345;

static float
rnd(void)
{
    rng = rng * 1664525u + 1013904223u;
    return (float) ((rng >> 8) & 0xffff) / 65536.0f;
}

/* values over the whole range the ops see, and the edges */
static void
fill(float *x, int n, float scale)
{
    static const float  special[] = { 0.0f, -0.0f, 88.5f, -88.5f, 87.0f,
                                      -87.0f, 100.0f, -100.0f, 1e-40f,
                                      -1e-40f, 20.0f, -20.0f };
    int                 i;

    for (i = 0; i < n; i++) {
        x[i] = (rnd() * 2.0f - 1.0f) * scale;
        if (i % 13 == 5) {
            x[i] = special[(i / 13) % (int) (sizeof(special) / sizeof(special[0]))];
        }
    }
    /* no NaN: the scalar clef_exp() converts n to int, undefined in C for
     * NaN (UBSan says so); the lanes' cvttps gives INT_MIN */
}

/* the same bits, or both NaN: which NaN an op returns when an operand is
 * one depends on the operand order the compiler picks for a commutative
 * op, and the ops promise nothing about NaN payloads */
static int
same_bits(const float *a, const float *b, int n)
{
    int  i;

    for (i = 0; i < n; i++) {
        if (memcmp(a + i, b + i, sizeof(float)) != 0
            && !(isnan(a[i]) && isnan(b[i])))
        {
            printf("#   element %d of %d: %a, want %a\n", i, n, a[i], b[i]);
            return 0;
        }
    }
    return 1;
}

static void
test_loops(void)
{
    float   g[MAX_N], u[MAX_N], z[MAX_N], w[MAX_N], got[MAX_N], want[MAX_N];
    float   sg, sw;
    int     li, n, i, ok_silu = 1, ok_sig = 1, ok_gate = 1, ok_exp = 1, ok_decay = 1;
    float   kk[MAX_N], qk[MAX_N], gam[MAX_N], e;

    for (li = 0; li < N_LENGTHS; li++) {
        n = lengths[li];
        fill(g, n, 30.0f);
        fill(u, n, 3.0f);
        fill(z, n, 12.0f);
        fill(w, n, 2.0f);

        memcpy(got, g, sizeof(float) * (size_t) n);
        clef_cpu_silu_mul(got, u, n);
        for (i = 0; i < n; i++) {
            want[i] = clef_silu(g[i]) * u[i];
        }
        ok_silu &= same_bits(got, want, n);

        memcpy(got, u, sizeof(float) * (size_t) n);
        clef_cpu_sigmoid_mul(got, g, n);
        for (i = 0; i < n; i++) {
            want[i] = u[i] * clef_sigmoid(g[i]);
        }
        ok_sig &= same_bits(got, want, n);

        clef_cpu_scale_gate_silu(u, z, got, n, w, 0.37f);
        for (i = 0; i < n; i++) {
            want[i] = (w[i] * (u[i] * 0.37f)) * clef_silu(z[i]);
        }
        ok_gate &= same_bits(got, want, n);

        /* a row of the decay masks: gamma non-increasing, from 0 */
        gam[0] = -0.0f;
        for (i = 1; i < n; i++) {
            gam[i] = gam[i - 1] - rnd() * 0.5f;
        }
        fill(kk, n, 1.0f);
        fill(qk, n, 1.0f);
        memcpy(got, kk, sizeof(float) * (size_t) n);
        memcpy(want, qk, sizeof(float) * (size_t) n);
        clef_cpu_decay_row(kk, qk, gam, n > 0 ? gam[n - 1] : 0.0f, 0.8f, n);
        for (i = 0; i < n; i++) {
            e = clef_exp(gam[n - 1] - gam[i]);
            got[i] *= 0.8f * e;
            want[i] *= e;
        }
        ok_decay &= same_bits(kk, got, n) && same_bits(qk, want, n);

        /* a softmax row: scores below a maximum, some far below */
        fill(got, n, 60.0f);
        if (n > 40) {
            got[37] = -INFINITY;        /* a masked score */
        }
        memcpy(want, got, sizeof(float) * (size_t) n);
        sg = clef_cpu_exp_sum(got, n, 61.0f);
        for (i = 0; i < n; i++) {
            want[i] = clef_exp(want[i] - 61.0f);
        }
        sw = clef_vec_sum(want, n);
        ok_exp &= same_bits(got, want, n) && memcmp(&sg, &sw, sizeof(sg)) == 0;
    }
    CHECK(ok_decay, "the delta rule's decay of a mask row: the bits of the scalar loop");
    CHECK(ok_silu, "silu(g) * u: the bits of the scalar expression at every length");
    CHECK(ok_sig, "o * sigmoid(g): the bits of the scalar expression");
    CHECK(ok_gate, "(w * (x * r)) * silu(z): the bits of the scalar expression");
    CHECK(ok_exp, "exp(s - m) and its sum: the bits of clef_exp and clef_vec_sum");
}

static void
test_exp_accuracy(void)
{
    double  worst = 0, want, err;
    float   x, got[8];
    int     i;

    for (i = 0; i <= 1750000; i++) {
        x = -87.0f + (float) i * 1e-4f;
        got[0] = x;
        clef_cpu_exp_sum(got, 1, 0.0f);
        want = exp((double) x);
        err = fabs((double) got[0] - want) / (ldexp(1.0, ilogb(want) - 23));
        if (err > worst) {
            worst = err;
        }
    }
    CHECK(worst <= 2.0, "clef_exp within 2 ulp of exp on [-87, 88] (worst %.2f ulp)",
          worst);
}

/* the old scalar conv: y = silu(sum of taps in order), taps before the
 * record skipped */
static void
conv_ref(const float *x, int64_t ldx, float *y, int64_t ldy, int C,
    const float *w, int K, const int32_t *cu, int n_records)
{
    int64_t  t, s;
    int      r, i, c;

    for (r = 0; r < n_records; r++) {
        for (t = cu[r]; t < cu[r + 1]; t++) {
            for (c = 0; c < C; c++) {
                y[t * ldy + c] = 0.0f;
            }
            for (i = 0; i < K; i++) {
                s = t - (K - 1) + i;
                if (s < cu[r]) {
                    continue;
                }
                for (c = 0; c < C; c++) {
                    y[t * ldy + c] += w[(int64_t) i * C + c] * x[s * ldx + c];
                }
            }
            for (c = 0; c < C; c++) {
                y[t * ldy + c] = clef_silu(y[t * ldy + c]);
            }
        }
    }
}

static void
test_conv(clef_cpu_pool *pool)
{
    static const int      channels[] = { 1, 7, 8, 9, 63, 64, 65 };
    static const int32_t  cu[] = { 0, 1, 3, 6, 11, 20, 57 };
    const int             n_records = 6, K = 4, T = 57;
    float                *x, *w, *got, *want;
    int                   ci, C, ld, ok = 1;

    for (ci = 0; ci < (int) (sizeof(channels) / sizeof(channels[0])); ci++) {
        C = channels[ci];
        ld = C + 3;
        x = malloc(sizeof(float) * (size_t) T * ld);
        w = malloc(sizeof(float) * (size_t) K * C);
        got = malloc(sizeof(float) * (size_t) T * ld);
        want = malloc(sizeof(float) * (size_t) T * ld);
        fill(x, T * ld, 4.0f);
        fill(w, K * C, 1.0f);
        memset(got, 0, sizeof(float) * (size_t) T * ld);
        memset(want, 0, sizeof(float) * (size_t) T * ld);
        clef_cpu_conv_silu(pool, x, ld, got, ld, C, w, K, cu, n_records);
        conv_ref(x, ld, want, ld, C, w, K, cu, n_records);
        if (!same_bits(got, want, T * ld)) {
            ok = 0;
            printf("# conv differs at %d channels\n", C);
        }
        free(x);
        free(w);
        free(got);
        free(want);
    }
    CHECK(ok, "conv + silu: the bits of the scalar taps-in-order loop, "
          "1..65 channels, records of 1..37 tokens");
}

int
main(void)
{
    clef_cpu_pool  *pool;
    clef_error      err;

    test_loops();
    test_exp_accuracy();
    pool = clef_cpu_pool_create(2, &err);
    if (pool == NULL) {
        CHECK(0, "pool: %s", err.message);
        return check_done();
    }
    test_conv(pool);
    clef_cpu_pool_destroy(pool);
    return check_done();
}
