/*
 * The CPU backbone's ops other than the linear layers, timed alone at the
 * medium shape (conv + silu over 2048 channels, the gated norm over 16
 * heads of 64, the delta rule over 16 heads of 64 x 64, attention with 8
 * query and 2 kv heads of 128 and its output gate, SwiGLU over 3072) on one
 * record of T tokens and one thread, in CPU time of that thread (on a
 * shared machine the wall clock measures the neighbours): best of R runs,
 * in ms.  Built and run by t/bench/cpu-ops.sh against this tree's and
 * another revision's libclef.a.
 *
 *     cpu-ops T [R]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpu/ops/attention.h"
#include "cpu/ops/conv.h"
#include "cpu/ops/gdn.h"
#include "cpu/ops/mlp.h"
#include "cpu/ops/norm.h"
#include "cpu/parallel/pool.h"

static uint32_t  seed = 1;

static double
cpu_seconds(void)
{
    struct timespec  ts;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

static float *
random_floats(size_t n, float scale)
{
    float   *p = malloc(sizeof(float) * n);
    size_t   i;

    if (p == NULL) {
        exit(1);
    }
    for (i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        p[i] = (((float) ((seed >> 8) & 0xffff)) / 32768.0f - 1.0f) * scale;
    }
    return p;
}

/* best of R runs of CALL, each after RESET (not timed) */
#define TIME(name, reset, call)                                              \
    do {                                                                     \
        double  best_ = 1e30, t_;                                            \
        int     r_;                                                          \
        for (r_ = 0; r_ < rounds; r_++) {                                    \
            reset;                                                           \
            t_ = cpu_seconds();                                              \
            call;                                                            \
            t_ = cpu_seconds() - t_;                                         \
            best_ = t_ < best_ ? t_ : best_;                                 \
        }                                                                    \
        printf("%-12s %10.3f\n", name, best_ * 1e3);                         \
        fflush(stdout);                                                      \
    } while (0)

int
main(int argc, char **argv)
{
    clef_cpu_pool   *pool;
    clef_error       err;
    clef_attn_args   a;
    clef_gdn_args    g;
    int64_t          T, i;
    int32_t          cu[2];
    int              rounds, inter = 3072, C = 2048, ld = 4128;
    float           *gu0, *gu, *x, *y, *w, *z, *nw, *ny, *o0, *o, *gt;
    float           *q, *k, *v, *scratch, *qk, *gv, *gg, *gb, *go;

    if (argc < 2) {
        fprintf(stderr, "usage: cpu-ops T [R]\n");
        return 2;
    }
    T = atoll(argv[1]);
    rounds = argc > 2 ? atoi(argv[2]) : 5;
    cu[0] = 0;
    cu[1] = (int32_t) T;
    pool = clef_cpu_pool_create(1, &err);
    if (pool == NULL) {
        fprintf(stderr, "pool: %s\n", err.message);
        return 1;
    }

    x = random_floats((size_t) (T * ld), 2.0f);
    y = malloc(sizeof(float) * (size_t) (T * C));
    w = random_floats(4 * (size_t) C, 0.5f);
    TIME("conv+silu", , clef_cpu_conv_silu(pool, x, ld, y, C, C, w, 4, cu, 1));

    z = random_floats((size_t) (T * 1024), 3.0f);
    nw = random_floats(64, 1.0f);
    ny = malloc(sizeof(float) * (size_t) (T * 1024));
    TIME("gated norm", , clef_cpu_rmsnorm_gated(pool, x, ld, z, 1024, ny, 1024, T,
                                                16, 64, nw, 1e-6f));

    qk = random_floats((size_t) (T * 1024), 0.125f);
    gv = random_floats((size_t) (T * 1024), 1.0f);
    gg = random_floats((size_t) (T * 16), 0.05f);
    gb = random_floats((size_t) (T * 16), 0.4f);
    go = malloc(sizeof(float) * (size_t) (T * 1024));
    for (i = 0; i < T * 16; i++) {
        gg[i] = gg[i] - 0.1f;           /* decays in (-0.15, -0.05) */
        gb[i] = gb[i] + 0.5f;
    }
    memset(&g, 0, sizeof(g));
    g.q = qk;
    g.k = qk + 512;
    g.ldqk = 1024;
    g.v = gv;
    g.ldv = 1024;
    g.g = gg;
    g.beta = gb;
    g.o = go;
    g.ldo = 1024;
    g.hk = 8;
    g.hv = 16;
    g.dk = 64;
    g.dv = 64;
    scratch = malloc(sizeof(float) * clef_cpu_gdn_scratch_floats(64, 64));
    TIME("delta rule", , clef_cpu_gdn(pool, &g, cu, 1, scratch));
    free(scratch);

    q = random_floats((size_t) (T * 2048), 1.0f);
    k = random_floats((size_t) (T * 256), 1.0f);
    v = random_floats((size_t) (T * 256), 1.0f);
    o = malloc(sizeof(float) * (size_t) (T * 1024));
    a.q = q;
    a.ldq = 2048;
    a.q_head_stride = 256;
    a.k = k;
    a.ldk = 256;
    a.v = v;
    a.ldv = 256;
    a.o = o;
    a.ldo = 1024;
    a.hq = 8;
    a.hkv = 2;
    a.hd = 128;
    a.scale = 0.08838835f;
    scratch = malloc(sizeof(float) * clef_cpu_attention_scratch_floats(4, 128));
    TIME("attention", , clef_cpu_attention(pool, &a, cu, 1, scratch));
    free(scratch);

    o0 = random_floats((size_t) (T * 1024), 1.0f);
    gt = random_floats((size_t) (T * 2048), 3.0f);
    TIME("attn gate", memcpy(o, o0, sizeof(float) * (size_t) (T * 1024)),
         clef_cpu_attention_gate(pool, o, 1024, gt, 2048, 256, T, 8, 128));

    gu0 = random_floats((size_t) (T * inter * 2), 4.0f);
    gu = malloc(sizeof(float) * (size_t) (T * inter * 2));
    TIME("silu*up", memcpy(gu, gu0, sizeof(float) * (size_t) (T * inter * 2)),
         clef_cpu_swiglu(pool, gu, 2 * inter, T, inter));

    clef_cpu_pool_destroy(pool);
    return 0;
}
