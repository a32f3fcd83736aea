/*
 * The quantized products (engine/cpu/kernels/qdot.h) against the exact
 * fp32 product over bf16 weights (gemm.h) on the shapes of the medium and
 * clef-flash checkpoints' linear layers, one thread, CPU time of that
 * thread, best of R runs: GOP/s (2 m n k per product) of each and the
 * ratio.  Random weights quantized by ngx_clef's own quantizers; the
 * types it reads only (IQ4_XS, Q3_K, Q2_K, MXFP4, ...) blocks of bytes
 * 0x11, whose scales are normal numbers (the speed does not depend on the
 * values, but a subnormal scale, MXFP4's of zero bytes, runs slower on
 * x86).  Built and run by t/bench/cpu-qdot.sh.
 *
 *     cpu-qdot [M [R [TYPE...]]]      (M 256, R 5, all types)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpu/kernels/gemm.h"
#include "cpu/kernels/qdot.h"
#include "cpu/kernels/wpack.h"
#include "cpu/parallel/pool.h"
#include "model/dtype.h"
#include "model/quant.h"

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

    for (i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        p[i] = (((float) ((seed >> 8) & 0xffff)) / 32768.0f - 1.0f) * scale;
    }
    return p;
}

static const struct {
    const char  *name;
    int64_t      n, k;
} shapes[] = {
    { "medium gdn in_proj", 3104, 1024 },
    { "medium attn qkv", 2560, 1024 },
    { "medium mlp gate_up", 6144, 1024 },
    { "medium mlp down (a segment)", 1024, 1536 },
    { "flash mlp gate_up", 24576, 4096 },
    { "flash mlp down (a segment)", 4096, 3072 },
};

int
main(int argc, char **argv)
{
    static const char  *all[] = { "Q8_0", "Q4_K", "Q6_K", "Q5_K", "Q4_0",
                                  "Q5_0" };
    const char        **names = all;
    int64_t             m = argc > 1 ? atoll(argv[1]) : 256;
    int                 rounds = argc > 2 ? atoi(argv[2]) : 5, ntypes = 6;
    clef_cpu_pool      *pool;
    clef_error          err;
    size_t              s, t;
    int                 r;

    if (argc > 3) {
        names = (const char **) argv + 3;
        ntypes = argc - 3;
    }
    pool = clef_cpu_pool_create(1, &err);
    printf("# %s\n# %lld rows, 1 thread, best of %d, GOP/s\n",
           clef_qdot_describe(), (long long) m, rounds);
    for (s = 0; s < sizeof(shapes) / sizeof(shapes[0]); s++) {
        int64_t         n = shapes[s].n, k = shapes[s].k;
        float          *x = random_floats((size_t) (m * k), 1.0f);
        float          *w = random_floats((size_t) (n * k), 0.05f);
        float          *y = malloc(sizeof(float) * (size_t) (m * n));
        float          *scratch = malloc(sizeof(float)
                                         * clef_cpu_linear_scratch_floats(k));
        double          best = 1e30, t0, ops = 2.0 * (double) m * n * k, ref;
        clef_cpu_wpack  wp;

        clef_cpu_wpack_alloc_bf16(&wp, n, k);
        clef_cpu_wpack_rows(&wp, 0, n, w, k);
        for (r = 0; r < rounds; r++) {
            t0 = cpu_seconds();
            clef_cpu_linear(pool, x, k, m, &wp, y, n, 0.0f, scratch);
            t0 = cpu_seconds() - t0;
            best = t0 < best ? t0 : best;
        }
        ref = ops / best / 1e9;
        printf("%-28s %6lld x %5lld  fp32/bf16 %6.1f", shapes[s].name,
               (long long) n, (long long) k, ref);
        clef_cpu_wpack_free(&wp);
        for (t = 0; t < (size_t) ntypes; t++) {
            const clef_dtype_traits  *tr;
            clef_dtype                dt;
            uint32_t                  type;
            clef_qdot_mat             q;
            int64_t                   rb;
            uint8_t                  *blocks;

            if (clef_dtype_from_any_name(names[t], &dt) != 0
                || (tr = clef_dtype_traits_of(dt)) == NULL || tr->ggml < 0
                || k % tr->block != 0)
            {
                continue;
            }
            type = (uint32_t) tr->ggml;
            rb = clef_dtype_bytes(dt, k);
            blocks = malloc((size_t) (rb * n));
            if (tr->from_f32 != NULL) {
                tr->from_f32(w, blocks, n * k);
            } else {
                memset(blocks, 0x11, (size_t) (rb * n));
            }
            clef_qdot_mat_init(&q, k, &type, &n, 1);
            clef_qdot_pack_rows(&q, 0, n, blocks, (size_t) rb);
            best = 1e30;
            for (r = 0; r < rounds; r++) {
                t0 = cpu_seconds();
                clef_qdot_linear(pool, x, k, m, &q, y, n, 0.0f, scratch);
                t0 = cpu_seconds() - t0;
                best = t0 < best ? t0 : best;
            }
            printf("  %s %6.1f (%.2fx)", names[t], ops / best / 1e9,
                   ops / best / 1e9 / ref);
            clef_qdot_mat_free(&q);
            free(blocks);
        }
        printf("\n");
        fflush(stdout);
        free(x);
        free(w);
        free(y);
        free(scratch);
    }
    clef_cpu_pool_destroy(pool);
    return 0;
}
