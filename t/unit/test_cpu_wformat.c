/*
 * The CPU's weight formats and layer parts:
 *
 *   - clef_cpu_wformat_for(): bf16 panels for bf16 weights or bf16
 *     products, fp32 panels as soon as a part of a fused matrix is stored
 *     in another type at fp32 precision;
 *   - clef_cpu_wpack_from_tensor(): a tensor stored in F32, F16 or BF16,
 *     cut by rows and columns, packs to the same bits as its values
 *     converted to fp32 by hand and packed with clef_cpu_wpack_rows();
 *   - a layer's parts (weights_parts.h): norms, its mixer, the dense MLP;
 *     a MoE layer's routed experts, an unknown kind refused by name;
 *   - the thread crew (crew.h) runs a function on every member, again and
 *     again, the caller as member 0.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "base/splitmix64.h"
#include "check.h"
#include "cpu/kernels/wpack.h"
#include "cpu/model/weights_parts.h"
#include "cpu/parallel/crew.h"
#include "model/dtype.h"

static void
test_format_for(void)
{
    clef_dtype  bf[2] = { CLEF_DTYPE_BF16, CLEF_DTYPE_BF16 };
    clef_dtype  mixed[2] = { CLEF_DTYPE_BF16, CLEF_DTYPE_F32 };
    clef_dtype  f16[1] = { CLEF_DTYPE_F16 };

    CHECK_INT(clef_cpu_wformat_for(bf, 2, CLEF_PRECISION_FP32, NULL),
              CLEF_CPU_WBF16, "bf16 weights at fp32: bf16 panels");
    CHECK_INT(clef_cpu_wformat_for(mixed, 2, CLEF_PRECISION_FP32, NULL),
              CLEF_CPU_WF32, "a part in f32 at fp32: fp32 panels (exact)");
    CHECK_INT(clef_cpu_wformat_for(mixed, 2, CLEF_PRECISION_DEFAULT, NULL),
              CLEF_CPU_WF32, "the default precision is fp32's");
    CHECK_INT(clef_cpu_wformat_for(f16, 1, CLEF_PRECISION_BF16, NULL),
              CLEF_CPU_WBF16, "bf16 products: bf16 panels whatever the type");
    CHECK(clef_cpu_wformat_traits(CLEF_CPU_WFORMAT_COUNT) == NULL,
          "no format past the table");
}

/* rows x cols values, stored in dt, and the same values in fp32. */
static void
fill(clef_dtype dt, int64_t n, void *stored, float *f, uint64_t *seed)
{
    int64_t  i;
    float    v;

    for (i = 0; i < n; i++) {
        v = (float) ((double) (clef_splitmix64(seed) >> 40) * 0x1p-24 - 0.5);
        if (dt == CLEF_DTYPE_F32) {
            ((float *) stored)[i] = v;
        } else if (dt == CLEF_DTYPE_BF16) {
            ((uint16_t *) stored)[i] = clef_f32_to_bf16(v);
        } else {
            /* an f16 of the value's top bits: any f16 will do */
            ((uint16_t *) stored)[i] = (uint16_t) (clef_splitmix64(seed) & 0x7bff);
        }
    }
    clef_dtype_traits_of(dt)->to_f32(stored, f, n);
}

static void
test_from_tensor(clef_dtype dt, clef_cpu_wformat fmt)
{
    enum { ROWS = 37, COLS = 70, R0 = 5, N = 23, C0 = 9, K = 40 };
    static uint16_t  h[ROWS * COLS * 2];
    static float     f[ROWS * COLS];
    clef_tensor      t;
    clef_cpu_wpack   got, want;
    uint64_t         seed = 0x5eed0000u + (uint64_t) dt * 7 + (uint64_t) fmt;
    int              rc;

    fill(dt, ROWS * COLS, h, f, &seed);
    memset(&t, 0, sizeof(t));
    t.name = "w";
    t.dtype = dt;
    t.ndim = 2;
    t.shape[0] = ROWS;
    t.shape[1] = COLS;
    t.numel = ROWS * COLS;
    t.data = h;
    t.nbytes = (size_t) clef_dtype_bytes(dt, t.numel);

    rc = clef_cpu_wpack_alloc_format(&got, fmt, N + 3, K);
    rc |= clef_cpu_wpack_alloc_format(&want, fmt, N + 3, K);
    rc |= clef_cpu_wpack_from_tensor(&got, 3, &t, R0, N, C0);
    clef_cpu_wpack_rows(&want, 3, N, f + R0 * COLS + C0, COLS);
    CHECK(rc == 0 && clef_cpu_wpack_bytes(&got) == clef_cpu_wpack_bytes(&want)
          && memcmp(got.data, want.data, clef_cpu_wpack_bytes(&got)) == 0,
          "%s rows %d+%d, columns %d+%d into %s: the bits of its fp32 values "
          "packed", clef_dtype_name(dt), R0, N, C0, K,
          clef_cpu_wformat_traits(fmt)->name);
    clef_cpu_wpack_free(&got);
    clef_cpu_wpack_free(&want);
}

static void
test_parts(void)
{
    const clef_cpu_part  *parts[4];
    clef_layer_desc       d;
    clef_error            err;
    int                   n;

    memset(&d, 0, sizeof(d));
    memset(&err, 0, sizeof(err));
    d.mixer = CLEF_MIXER_LINEAR;
    d.mlp = CLEF_MLP_DENSE;
    n = clef_cpu_layer_parts(&d, 0, parts, &err);
    CHECK(n == 3 && parts[0] == &clef_cpu_part_norms
          && parts[1] == &clef_cpu_part_gdn && parts[2] == &clef_cpu_part_dense,
          "a GDN layer: norms, the GDN mixer, the dense MLP");
    d.mixer = CLEF_MIXER_FULL;
    n = clef_cpu_layer_parts(&d, 0, parts, &err);
    CHECK(n == 3 && parts[1] == &clef_cpu_part_attn,
          "an attention layer: the attention mixer");
    d.mlp = CLEF_MLP_MOE;
    n = clef_cpu_layer_parts(&d, 7, parts, &err);
    CHECK(n == 3 && parts[2] == &clef_cpu_part_moe,
          "a MoE layer: the routed experts");
    d.mlp = (clef_mlp_kind) 9;
    n = clef_cpu_layer_parts(&d, 7, parts, &err);
    CHECK(n < 0 && err.code == CLEF_E_MODEL, "an MLP kind it does not know "
          "is refused");
    CHECK_STR(err.message, "layer 7 has an MLP of kind 9, which the CPU "
              "backend does not run", "by name");
}

typedef struct {
    atomic_int  calls[8];
    atomic_int  total;
} crew_seen;

static void
count_member(void *ctx, int member)
{
    crew_seen  *s = ctx;

    atomic_fetch_add(&s->calls[member], 1);
    atomic_fetch_add(&s->total, 1);
}

static void
test_crew(int size)
{
    clef_cpu_crew  *c;
    clef_error      err;
    crew_seen       s;
    int             i, runs = 500, ok = 1;

    memset(&err, 0, sizeof(err));
    memset(&s, 0, sizeof(s));
    c = clef_cpu_crew_create(size, "test", &err);
    CHECK(c != NULL && clef_cpu_crew_size(c) == size, "a crew of %d", size);
    if (c == NULL) {
        return;
    }
    for (i = 0; i < runs; i++) {
        clef_cpu_crew_run(c, count_member, &s);
        /* every member has returned when the run does */
        ok &= atomic_load(&s.total) == (i + 1) * size;
    }
    for (i = 0; i < size; i++) {
        ok &= atomic_load(&s.calls[i]) == runs;
    }
    CHECK(ok, "crew of %d: each of %d runs calls every member once, and "
          "returns after the last", size, runs);
    clef_cpu_crew_destroy(c);
}

int
main(void)
{
    static const clef_dtype        dts[3] = {
        CLEF_DTYPE_F32, CLEF_DTYPE_F16, CLEF_DTYPE_BF16
    };
    static const clef_cpu_wformat  fmts[2] = { CLEF_CPU_WF32, CLEF_CPU_WBF16 };
    int                            i, j;

    test_format_for();
    for (i = 0; i < 3; i++) {
        for (j = 0; j < 2; j++) {
            test_from_tensor(dts[i], fmts[j]);
        }
    }
    test_parts();
    test_crew(1);
    test_crew(2);
    test_crew(5);
    return check_done();
}
