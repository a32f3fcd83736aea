/*
 * The quantized products (engine/cpu/kernels/qdot.h) against a scalar
 * model of their arithmetic written from the GGUF blocks themselves (not
 * from the kernels' panels, so the repacking is checked too), bit for bit:
 *
 *   - every type (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K, and the
 *     ones read as another's blocks: IQ4_NL, Q3_K, IQ3_S, TQ1_0, TQ2_0,
 *     Q1_0, Q2_0, Q2_K, IQ4_XS, IQ3_XXS, IQ2_XXS, IQ2_XS, IQ2_S, IQ1_S,
 *     IQ1_M)
 *     on random blocks: every code, fp16 scales of random finite values,
 *     Q8_0 codes of -128, K scales over their whole 6 bits, Q6_K scales
 *     -128, the model written from each type's own definition (quant.h's
 *     integer forms: code times scale), not from the type it is read as;
 *   - every kernel the CPU has (AVX512-VNNI, the 256-bit VNNI code,
 *     AVX2), each in the same process;
 *   - tails: activation rows that are not a multiple of a tile's (1, 5,
 *     13, past the 576 of a run), weight rows that are not a multiple of
 *     a panel (1, 7, 17, 40), beta 0 and 1, strides wider than the rows;
 *   - matrices of several groups of different types;
 *   - 1 and 3 threads; a row alone and inside a batch (the model makes
 *     each row's result depend on nothing else, so equality with it is
 *     batch invariance);
 *   - the activations' codes, scales and sums against the model's, and
 *     rows with infinities and NaN (both give NaN where the model does).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/splitmix64.h"
#include "check.h"
#include "cpu/kernels/qdot.h"
#include "cpu/kernels/qdot_kernel.h"
#include "cpu/parallel/pool.h"
#include "model/dtype.h"
#include "model/quant.h"
#include "model/tensor.h"

static uint64_t  seed = 20;

/* 1: every weight byte 0xff (each type's largest codes) and every value
 * of an activation row +1 or -1 (codes all 127 or all -127): the largest
 * integer sums a kernel's narrow lanes must hold (qdot_tile.h's 16-bit
 * groups) */
static int       extremes;

static uint32_t
rnd(void)
{
    return (uint32_t) (clef_splitmix64(&seed) >> 32);
}

static float
urand(void)
{
    return (float) (rnd() >> 8) / 16777216.0f;
}

/* ---- random blocks ------------------------------------------------------ */

static const uint32_t  types[] = {
    CLEF_GGML_Q8_0, CLEF_GGML_Q4_0, CLEF_GGML_Q4_1, CLEF_GGML_Q5_0,
    CLEF_GGML_Q5_1, CLEF_GGML_Q4_K, CLEF_GGML_Q5_K, CLEF_GGML_Q6_K,
    CLEF_GGML_IQ4_NL, CLEF_GGML_Q3_K, CLEF_GGML_IQ3_S, CLEF_GGML_TQ1_0,
    CLEF_GGML_TQ2_0, CLEF_GGML_Q2_K, CLEF_GGML_IQ4_XS, CLEF_GGML_IQ3_XXS,
    CLEF_GGML_IQ2_XXS, CLEF_GGML_IQ2_XS, CLEF_GGML_IQ2_S, CLEF_GGML_IQ1_S,
    CLEF_GGML_IQ1_M, CLEF_GGML_Q1_0, CLEF_GGML_Q2_0, CLEF_GGML_MXFP4
};
#define NTYPES  (int) (sizeof(types) / sizeof(types[0]))

static void
put_f16(uint8_t *p, float v)
{
    uint16_t  h = clef_f32_to_f16(v);

    memcpy(p, &h, 2);
}

/* a finite scale of random sign and magnitude 2^-12 .. 1 */
static float
scale(void)
{
    float  v = ldexpf(0.5f + urand() / 2, -(int) (rnd() % 12));

    return rnd() & 1 ? -v : v;
}

/* The dtype table's row of a GGUF type. */
static const clef_dtype_traits *
gtraits(uint32_t type)
{
    clef_dtype  dt = CLEF_DTYPE_COUNT;

    (void) clef_dtype_from_ggml((int) type, &dt);
    return clef_dtype_traits_of(dt);
}

/* n blocks of type t of random bytes, their fp16 fields finite */
static void
random_blocks(uint32_t type, uint8_t *b, int64_t n)
{
    const clef_dtype_traits  *tr = gtraits(type);
    int64_t                  i, j;
    uint16_t                 h;

    for (i = 0; i < n; i++, b += tr->block_bytes) {
        for (j = 0; j < (int64_t) tr->block_bytes; j++) {
            b[j] = extremes ? 0xff : (uint8_t) rnd();
        }
        switch (type) {
        case CLEF_GGML_Q4_1:
        case CLEF_GGML_Q5_1:
        case CLEF_GGML_Q4_K:
        case CLEF_GGML_Q5_K:
            put_f16(b + 2, scale());
            put_f16(b, scale());
            break;
        case CLEF_GGML_Q6_K:
            put_f16(b + 208, scale());
            break;
        case CLEF_GGML_Q3_K:
            put_f16(b + 108, scale());
            break;
        case CLEF_GGML_TQ1_0:
            put_f16(b + 52, scale());
            break;
        case CLEF_GGML_TQ2_0:
            put_f16(b + 64, scale());
            break;
        case CLEF_GGML_Q2_K:
            put_f16(b + 80, scale());
            put_f16(b + 82, scale());
            break;
        case CLEF_GGML_MXFP4:
            /* scales 2^-18 .. 2^-3, and now and then the subnormal
             * 2^-128 and 2^-127 */
            b[0] = (uint8_t) (i % 7 == 3 ? i % 2 : 110 + rnd() % 16);
            break;
        case CLEF_GGML_IQ1_M:
            /* d in the top nibbles of the four u16 scales */
            h = clef_f32_to_f16(scale());
            for (j = 0; j < 4; j++) {
                b[49 + 2 * j] = (uint8_t) ((b[49 + 2 * j] & 0x0f)
                                           | ((h >> (4 * j)) & 0x0f) << 4);
            }
            break;
        default:
            put_f16(b, scale());
            break;
        }
    }
}

/* ---- the model ------------------------------------------------------------ */

typedef struct {
    int8_t  q[32];
    float   d, dsa;
    int     s, s0;
} ablock;

static float
f16at(const uint8_t *p)
{
    uint16_t  h;

    memcpy(&h, p, 2);
    return clef_f16_to_f32(h);
}

/* cvtps2dq: nearest, ties to even; NaN and out of range to INT32_MIN */
static int32_t
cvt(float v)
{
    if (isnan(v) || v >= 2147483648.0f || v < -2147483648.0f) {
        return INT32_MIN;
    }
    return (int32_t) nearbyintf(v);
}

static void
model_quantize(const float *x, ablock *a)
{
    uint32_t  bits, mx = 0;
    float     amax, id;
    int32_t   q;
    int       j;

    for (j = 0; j < 32; j++) {
        memcpy(&bits, &x[j], 4);
        bits &= 0x7fffffff;
        mx = bits > mx ? bits : mx;
    }
    memcpy(&amax, &mx, 4);
    a->d = amax / 127.0f;
    id = a->d != 0.0f ? 1.0f / a->d : 0.0f;
    a->s = a->s0 = 0;
    for (j = 0; j < 32; j++) {
        q = cvt(x[j] * id);
        q = q > 127 ? 127 : q < -127 ? -127 : q;
        a->q[j] = (int8_t) q;
        a->s += q;
        a->s0 += j < 16 ? q : 0;
    }
    a->dsa = a->d * (float) a->s;
}

/* value v's code (the integer the dequantizers scale) of a block */
static int
code(uint32_t type, const uint8_t *b, int v)
{
    uint32_t  qh;
    int       s = v / 32, l = v % 32, h = v / 128, r = v % 128, q;

    switch (type) {
    case CLEF_GGML_Q8_0:
        return (int8_t) b[2 + v];
    case CLEF_GGML_Q4_0:
        return v < 16 ? b[2 + v] & 15 : b[2 + v - 16] >> 4;
    case CLEF_GGML_Q4_1:
        return v < 16 ? b[4 + v] & 15 : b[4 + v - 16] >> 4;
    case CLEF_GGML_Q5_0:
        memcpy(&qh, b + 2, 4);
        return (v < 16 ? b[6 + v] & 15 : b[6 + v - 16] >> 4)
               | (int) ((qh >> v) & 1) << 4;
    case CLEF_GGML_Q5_1:
        memcpy(&qh, b + 4, 4);
        return (v < 16 ? b[8 + v] & 15 : b[8 + v - 16] >> 4)
               | (int) ((qh >> v) & 1) << 4;
    case CLEF_GGML_Q4_K:
        return (b[16 + (s / 2) * 32 + l] >> (4 * (s & 1))) & 15;
    case CLEF_GGML_Q5_K:
        return ((b[48 + (s / 2) * 32 + l] >> (4 * (s & 1))) & 15)
               | ((b[16 + l] >> s) & 1) << 4;
    default:                                      /* Q6_K */
        q = r < 64 ? b[h * 64 + r] & 15 : b[h * 64 + r - 64] >> 4;
        return q | ((b[128 + h * 32 + r % 32] >> (2 * (r / 32))) & 3) << 4;
    }
}

static void
k_scale(const uint8_t *b, int s, int *sc, int *mn)
{
    const uint8_t  *p = b + 4;

    if (s < 4) {
        *sc = p[s] & 63;
        *mn = p[4 + s] & 63;
    } else {
        *sc = (p[s + 4] & 15) | (p[s - 4] >> 6) << 4;
        *mn = (p[s + 4] >> 4) | (p[s] >> 6) << 4;
    }
}

/* The integer form (quant.h) of a block of the types read as another's:
 * 0 for another type.  IQ4_NL's, Q1_0's, Q2_0's, MXFP4's: its codes, scale 1,
 * d its fp16 field (MXFP4's 2^(e - 128), by ldexpf). */
static int
int_form(uint32_t type, const uint8_t *b, clef_qk_int *f)
{
    static const struct {
        uint32_t        type;
        clef_qk_int_fn  form;
    } forms[] = {
        { CLEF_GGML_Q3_K, clef_q3_k_int }, { CLEF_GGML_IQ3_S, clef_iq3_s_int },
        { CLEF_GGML_TQ1_0, clef_tq1_0_int }, { CLEF_GGML_TQ2_0, clef_tq2_0_int },
        { CLEF_GGML_Q2_K, clef_q2_k_int }, { CLEF_GGML_IQ4_XS, clef_iq4_xs_int },
        { CLEF_GGML_IQ3_XXS, clef_iq3_xxs_int },
        { CLEF_GGML_IQ2_XXS, clef_iq2_xxs_int },
        { CLEF_GGML_IQ2_XS, clef_iq2_xs_int }, { CLEF_GGML_IQ2_S, clef_iq2_s_int },
        { CLEF_GGML_IQ1_S, clef_iq1_s_int }, { CLEF_GGML_IQ1_M, clef_iq1_m_int },
    };
    size_t  i;

    if (type == CLEF_GGML_IQ4_NL || type == CLEF_GGML_Q1_0
        || type == CLEF_GGML_Q2_0 || type == CLEF_GGML_MXFP4)
    {
        f->d = f16at(b);
        if (type == CLEF_GGML_IQ4_NL) {
            clef_iq4_nl_codes(b, f->q);
        } else if (type == CLEF_GGML_MXFP4) {
            /* the doubled e2m1 values, times 2^(e - 128) */
            for (i = 0; i < 16; i++) {
                f->q[i] = clef_mxfp4_values[b[1 + i] & 0x0f];
                f->q[i + 16] = clef_mxfp4_values[b[1 + i] >> 4];
            }
            f->d = ldexpf(1.0f, b[0] - 128);
        } else if (type == CLEF_GGML_Q1_0) {
            clef_q1_0_codes(b, f->q);
        } else {
            clef_q2_0_codes(b, f->q);
        }
        memset(f->sc, 1, sizeof(f->sc));
        memset(f->mn, 0, sizeof(f->mn));
        f->dmin = 0;
        f->mins = 0;
        return 1;
    }
    for (i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
        if (forms[i].type == type) {
            forms[i].form(b, f);
            return 1;
        }
    }
    return 0;
}

/* The integer-form types: per 32 values the integer sum of each 16-value
 * half's codes times the activation's, times its scale, added (I), then t
 * = (float) I * d and y = fma(t, da, y); with minima M = mn0 s0 + mn1 (s -
 * s0), y = fma(-((float) M * dmin), da, y): the arithmetic of the kernels'
 * type they are read as (I8's and Q6_K's, and Q8_0's for Q1_0 and Q2_0,
 * whose scale is 1 and whose halves add as one sum); IQ4_NL and IQ4_XS
 * (NL4): t = (float) I * (d * sc), one scale per 32 values. */
static float
model_int_form(uint32_t type, const uint8_t *w, const ablock *a, int64_t k,
    float y)
{
    const clef_dtype_traits  *tr = gtraits(type);
    const uint8_t            *b;
    clef_qk_int               f;
    int64_t                   j;
    int                       v, off, i, h[2];
    float                     t;

    for (j = 0; j < k / 32; j++) {
        b = w + (j * 32 / tr->block) * (int64_t) tr->block_bytes;
        v = (int) (j * 32 % tr->block);
        int_form(type, b, &f);
        h[0] = h[1] = 0;
        for (off = 0; off < 32; off++) {
            h[off / 16] += f.q[v + off] * a[j].q[off];
        }
        if (type == CLEF_GGML_IQ4_NL || type == CLEF_GGML_IQ4_XS
            || type == CLEF_GGML_MXFP4)
        {
            /* NL4, X4, MX4: one scale per 32 values, d * sc as an f32 */
            t = (float) (h[0] + h[1]) * (f.d * (float) f.sc[v / 16]);
            y = fmaf(t, a[j].d, y);
            continue;
        }
        i = f.sc[v / 16] * h[0] + f.sc[v / 16 + 1] * h[1];
        t = (float) i * f.d;
        y = fmaf(t, a[j].d, y);
        if (f.mins) {
            i = f.mn[v / 16] * a[j].s0 + f.mn[v / 16 + 1] * (a[j].s - a[j].s0);
            t = (float) i * f.dmin;
            y = fmaf(-t, a[j].d, y);
        }
    }
    return y;
}

/* y[n] of row a (k / 32 blocks) against weight row w, from y0 */
static float
model_dot(uint32_t type, const uint8_t *w, const ablock *a, int64_t k,
    float y)
{
    const clef_dtype_traits  *tr = gtraits(type);
    const uint8_t           *b;
    int64_t                  j;
    int                      v, sc, mn, off, i, i0, i1;
    clef_qk_int              f;
    float                    ws, wm, t;

    if (int_form(type, w, &f)) {
        return model_int_form(type, w, a, k, y);
    }
    for (j = 0; j < k / 32; j++) {
        b = w + (j * 32 / tr->block) * (int64_t) tr->block_bytes;
        v = (int) (j * 32 % tr->block);          /* first value in the block */
        i = 0;
        for (off = 0; off < 32; off++) {
            i += code(type, b, v + off) * a[j].q[off];
        }
        wm = 0;
        switch (type) {
        case CLEF_GGML_Q8_0:
            ws = f16at(b);
            break;
        case CLEF_GGML_Q4_0:
            i -= 8 * a[j].s;
            ws = f16at(b);
            break;
        case CLEF_GGML_Q5_0:
            i -= 16 * a[j].s;
            ws = f16at(b);
            break;
        case CLEF_GGML_Q4_1:
        case CLEF_GGML_Q5_1:
            ws = f16at(b);
            wm = f16at(b + 2);
            break;
        case CLEF_GGML_Q4_K:
        case CLEF_GGML_Q5_K:
            k_scale(b, v / 32, &sc, &mn);
            ws = f16at(b) * (float) sc;
            wm = -(f16at(b + 2) * (float) mn);
            break;
        default:                                  /* Q6_K */
            i0 = i1 = 0;
            for (off = 0; off < 32; off++) {
                if (off < 16) {
                    i0 += (code(type, b, v + off) - 32) * a[j].q[off];
                } else {
                    i1 += (code(type, b, v + off) - 32) * a[j].q[off];
                }
            }
            i = (int8_t) b[192 + v / 16] * i0 + (int8_t) b[192 + v / 16 + 1] * i1;
            ws = f16at(b + 208);
            break;
        }
        t = (float) i * ws;
        y = fmaf(t, a[j].d, y);
        if (wm != 0 || type == CLEF_GGML_Q4_1 || type == CLEF_GGML_Q5_1
            || type == CLEF_GGML_Q4_K || type == CLEF_GGML_Q5_K)
        {
            y = fmaf(wm, a[j].dsa, y);
        }
    }
    return y;
}

/* ---- a case ----------------------------------------------------------- */

typedef struct {
    const clef_qdot_isa  *isa[4];
    const char           *name[4];
    int                   n;
    clef_cpu_pool        *pools[2];
    void                 *scratch;
} env;

static int
same_bits(float a, float b)
{
    return memcmp(&a, &b, 4) == 0 || (isnan(a) && isnan(b));
}

/* A matrix of ng groups (types t[i], rows r[i]) of k columns times m rows
 * of x, beta 0 or 1, on every kernel and both pools. */
static void
one_case(env *e, const uint32_t *t, const int64_t *r, int ng, int64_t k,
    int64_t m, float beta, int specials)
{
    int64_t         rows = 0, ldx = k + 5, ldy, i, n, g, bad = 0, first = -1;
    size_t          rb[CLEF_QDOT_GROUPS_MAX];
    uint8_t        *blocks[CLEF_QDOT_GROUPS_MAX];
    clef_qdot_mat   q, qs, *use;
    ablock         *a;
    float          *x, *y0, *want, *got;
    char            what[160];
    int             p, s, len, v;

    for (g = 0; g < ng; g++) {
        rows += r[g];
    }
    ldy = rows + 3;
    x = malloc(sizeof(float) * (size_t) (m * ldx));
    y0 = malloc(sizeof(float) * (size_t) (m * ldy));
    want = malloc(sizeof(float) * (size_t) (m * ldy));
    got = malloc(sizeof(float) * (size_t) (m * ldy));
    a = malloc(sizeof(ablock) * (size_t) (m * (k / 32)));
    for (i = 0; i < m * ldx; i++) {
        /* blocks of very different scales; some rows all zero */
        x[i] = (urand() - 0.5f) * ldexpf(1.0f, (int) ((i / 32) % 9) - 4);
        x[i] = i / ldx % 7 == 3 ? 0.0f : x[i];
        x[i] = extremes ? (i / ldx % 2 ? -1.0f : 1.0f) : x[i];
        if (specials && i / ldx == 1 && i % ldx == 40) {
            x[i] = INFINITY;
        }
        if (specials && i / ldx == 2 && i % ldx == 3) {
            x[i] = NAN;
        }
    }
    for (i = 0; i < m * ldy; i++) {
        y0[i] = urand() - 0.5f;
    }
    for (i = 0; i < m; i++) {
        for (n = 0; n < k / 32; n++) {
            model_quantize(x + i * ldx + n * 32, &a[i * (k / 32) + n]);
        }
    }
    len = snprintf(what, sizeof(what), "k %lld m %lld beta %g:", (long long) k,
                   (long long) m, beta);
    for (g = 0; g < ng; g++) {
        rb[g] = (size_t) clef_ggml_row_bytes(t[g], k);
        blocks[g] = malloc(rb[g] * (size_t) r[g]);
        random_blocks(t[g], blocks[g], (int64_t) (rb[g] / (size_t)
                      gtraits(t[g])->block_bytes) * r[g]);
        len += snprintf(what + len, sizeof(what) - (size_t) len, " %s x %lld",
                        gtraits(t[g])->name, (long long) r[g]);
    }
    if (clef_qdot_mat_init(&q, k, t, r, ng) != 0) {
        CHECK(0, "%s: the matrix is set up", what);
        return;
    }
    /* packed in two pieces per group, from the end, as threads may */
    for (g = 0, n = 0; g < ng; n += r[g], g++) {
        clef_qdot_pack_rows(&q, n + r[g] / 2, r[g] - r[g] / 2,
                            blocks[g] + rb[g] * (size_t) (r[g] / 2), rb[g]);
        clef_qdot_pack_rows(&q, n, r[g] / 2, blocks[g], rb[g]);
    }
    /* the same groups read in place (a routed expert's), from the end */
    memset(&qs, 0, sizeof(qs));
    qs.cols = k;
    qs.rows = rows;
    for (g = ng - 1, n = rows; g >= 0; g--) {
        n -= r[g];
        CHECK(clef_qdot_mat_add_src(&qs, t[g], n, r[g], blocks[g], rb[g]) == 0,
              "%s: group %lld read in place", what, (long long) g);
    }

    memcpy(want, y0, sizeof(float) * (size_t) (m * ldy));
    for (i = 0; i < m; i++) {
        for (g = 0, n = 0; g < ng; g++) {
            int64_t  j;

            for (j = 0; j < r[g]; j++, n++) {
                want[i * ldy + n] = model_dot(t[g], blocks[g] + rb[g] * (size_t) j,
                                              a + i * (k / 32), k,
                                              beta != 0 ? y0[i * ldy + n] : 0.0f);
            }
        }
    }
    for (s = 0; s < e->n * 2; s++) {
        v = s >= e->n;
        use = v ? &qs : &q;
        for (p = 0; p < 2; p++) {
            memcpy(got, y0, sizeof(float) * (size_t) (m * ldy));
            clef_qdot_linear_isa(e->isa[s % e->n], e->pools[p], x, ldx, m,
                                 use, got, ldy, beta, e->scratch);
            bad = 0;
            first = -1;
            for (i = 0; i < m * ldy; i++) {
                if (!same_bits(got[i], want[i])) {
                    bad++;
                    first = first < 0 ? i : first;
                }
            }
            CHECK(bad == 0, "%s, %s, %d thread(s)%s: every element the"
                  " model's bits", what, e->name[s % e->n], p ? 3 : 1,
                  v ? ", read in place" : "");
            if (bad) {
                printf("#   %lld differ, first (%lld, %lld): got %.9g want %.9g\n",
                       (long long) bad, (long long) (first / ldy),
                       (long long) (first % ldy), got[first], want[first]);
            }
        }
    }
    clef_qdot_mat_free(&q);
    clef_qdot_mat_free(&qs);
    for (g = 0; g < ng; g++) {
        free(blocks[g]);
    }
    free(x);
    free(y0);
    free(want);
    free(got);
    free(a);
}

/* The activations' codes, scales and sums against the model's. */
static void
check_quantizer(void)
{
    enum { K = 96, M = 5, AB = 12 };
    float            x[M * K];
    int8_t           aq[K / 32 * AB * 32];
    clef_qdot_ameta  am[K / 32 * AB];
    ablock           a;
    int              i, b, bad = 0;

    for (i = 0; i < M * K; i++) {
        x[i] = (urand() - 0.5f) * 3;
    }
    x[7] = 127.0f;                 /* a block whose codes are its values */
    for (i = 32; i < 64; i++) {
        x[i] = (float) (i - 48) * 0.25f;       /* ties: 127 / 4 steps */
    }
    x[K + 5] = -INFINITY;
    x[2 * K + 70] = NAN;
    x[3 * K + 33] = 1e-40f;
    clef_qdot_quantize_rows(x, K, M, K, NULL, 0, AB, aq, am, AB);
    for (i = 0; i < AB; i++) {
        for (b = 0; b < K / 32; b++) {
            const int8_t           *q = aq + (b * AB + i) * 32;
            const clef_qdot_ameta  *mt = &am[b * AB + i];

            if (i >= M) {
                bad += mt->d != 0 || mt->s != 0 || q[0] != 0 || q[31] != 0;
                continue;
            }
            model_quantize(x + i * K + b * 32, &a);
            bad += memcmp(q, a.q, 32) != 0 || !same_bits(mt->d, a.d)
                   || !same_bits(mt->dsa, a.dsa) || mt->s != a.s
                   || mt->s0 != a.s0;
        }
    }
    CHECK(bad == 0, "activation blocks: codes, scales and sums are the "
          "model's (ties, infinity, NaN, subnormal; padding rows zero)");
}

/* The panels of the types kept as stored (qdot_kernel.h): bytes of 16
 * rows of 4096 values, and a block of each at its largest codes and
 * scales (the integer sums far from any limit, still the model's). */
static void
check_native(env *e)
{
    static const struct {
        uint32_t  type;
        size_t    bytes;           /* of one panel's 256-value block */
    } native[] = {
        { CLEF_GGML_IQ4_XS, 2208 },      /* 0.539 bytes a value */
        { CLEF_GGML_Q3_K, 1824 },        /* 0.445 */
        { CLEF_GGML_Q2_K, 1344 },        /* 0.328 */
        { CLEF_GGML_IQ4_NL, 8 * 320 },   /* NL4, as before: 0.625 */
    };
    uint8_t      mx[17 * 16];
    float        f[32 * 16];
    clef_qk_int  form;
    int64_t      r = 17;
    size_t       i;
    int          bad = 0, v;

    /* MXFP4's integer form (the model's) is its dequantization */
    random_blocks(CLEF_GGML_MXFP4, mx, 16);
    clef_mxfp4_to_f32(mx, f, 32 * 16);
    for (i = 0; i < 16; i++) {
        int_form(CLEF_GGML_MXFP4, mx + 17 * i, &form);
        for (v = 0; v < 32; v++) {
            bad += !same_bits(form.d * (float) form.q[v], f[32 * i + v]);
        }
    }
    CHECK(bad == 0, "MXFP4: codes times 2^(e - 128) are its values");
    for (i = 0; i < sizeof(native) / sizeof(native[0]); i++) {
        CHECK(clef_qdot_group_bytes(native[i].type, 16, 4096)
              == 16 * native[i].bytes,
              "%s: %zu bytes a panel's 256 values",
              gtraits(native[i].type)->name, native[i].bytes);
        extremes = 1;
        one_case(e, &native[i].type, &r, 1, 512, 13, 1.0f, 0);
        extremes = 0;
    }
}

/* The bytes model/model_types.c says q8 keeps of each type (what nginx -t
 * and /v1/models report, and what picks the default precision) are the
 * panels' bytes here, type by type; a float type and NVFP4 (multiplied at
 * fp32) as stored. */
static void
check_q8_bytes(void)
{
    int64_t     cols = 4096, want;
    clef_dtype  dt;
    const clef_dtype_traits  *tr;
    int         bad = 0, n = 0;

    for (dt = 0; dt < CLEF_DTYPE_COUNT; dt++) {
        tr = clef_dtype_traits_of(dt);
        if (tr == NULL || tr->ggml < 0 || tr->to_f32 == NULL) {
            continue;
        }
        want = clef_qdot_type_ok((uint32_t) tr->ggml, cols)
               ? (int64_t) clef_qdot_group_bytes((uint32_t) tr->ggml, 16, cols)
                 / 16
               : clef_dtype_bytes(dt, cols);
        if (clef_dtype_q8_bytes(dt, cols) != want) {
            printf("# %s: model_types.c says %lld bytes a row of %lld, the "
                   "kernels keep %lld\n", tr->name,
                   (long long) clef_dtype_q8_bytes(dt, cols), (long long) cols,
                   (long long) want);
            bad++;
        }
        n++;
    }
    CHECK(bad == 0 && n >= 28, "q8 bytes of each of %d types: the panels'", n);
}

int
main(void)
{
    static const int64_t  ms[] = { 1, 5, 13, 40, 600 };
    static const int64_t  rs[] = { 1, 7, 17, 40 };
    const clef_qdot_isa  *k;
    clef_error            err;
    env                   e;
    int64_t               r, kk;
    int                   ti, mi, ri;
    uint32_t              mt[4];
    int64_t               mr[4];

    memset(&e, 0, sizeof(e));
    if ((k = clef_qdot_kernels_avx512vnni()) != NULL) {
        e.isa[e.n] = k;
        e.name[e.n++] = "avx512vnni";
    }
    if ((k = clef_qdot_kernels_avxvnni()) != NULL) {
        e.isa[e.n] = k;
        e.name[e.n++] = k->what;
    }
    if ((k = clef_qdot_kernels_avx2()) != NULL) {
        e.isa[e.n] = k;
        e.name[e.n++] = "avx2";
    }
    printf("# kernels: %d; the one that runs: %s\n", e.n,
           clef_qdot_kernel_name());
    e.pools[0] = clef_cpu_pool_create(1, &err);
    e.pools[1] = clef_cpu_pool_create(3, &err);
    e.scratch = malloc(clef_qdot_scratch_bytes(1024));

    check_quantizer();
    check_native(&e);

    /* each type: every activation-row tail with one weight-row tail, and
     * every weight-row tail with one activation-row count */
    for (ti = 0; ti < NTYPES; ti++) {
        kk = gtraits(types[ti])->block == 32 ? 96
             : gtraits(types[ti])->block == 64 ? 192 : 512;
        for (mi = 0; mi < 5; mi++) {
            r = rs[mi % 4];
            one_case(&e, &types[ti], &r, 1, kk, ms[mi], mi % 2 ? 1.0f : 0.0f,
                     mi == 2);
        }
        for (ri = 0; ri < 4; ri++) {
            r = rs[ri] + 32;
            one_case(&e, &types[ti], &r, 1, kk * 2, 12, ri % 2 ? 0.0f : 1.0f, 0);
        }
    }

    /* fused matrices: a Q4_K_M-like mix, and 32-value types together */
    mt[0] = CLEF_GGML_Q4_K;
    mt[1] = CLEF_GGML_Q6_K;
    mt[2] = CLEF_GGML_Q5_K;
    mt[3] = CLEF_GGML_Q8_0;
    mr[0] = 40;
    mr[1] = 9;
    mr[2] = 16;
    mr[3] = 3;
    one_case(&e, mt, mr, 4, 256, 29, 0.0f, 0);
    one_case(&e, mt, mr, 4, 1024, 7, 1.0f, 0);
    /* the same types' largest sums, both signs */
    extremes = 1;
    one_case(&e, mt, mr, 4, 512, 7, 0.0f, 0);
    extremes = 0;
    mt[0] = CLEF_GGML_Q5_0;
    mt[1] = CLEF_GGML_Q4_1;
    mt[2] = CLEF_GGML_Q5_1;
    mt[3] = CLEF_GGML_Q4_0;
    one_case(&e, mt, mr, 4, 64, 19, 0.0f, 1);
    /* a dynamic mix's: the types read as others' beside those */
    mt[0] = CLEF_GGML_Q3_K;
    mt[1] = CLEF_GGML_IQ4_NL;
    mt[2] = CLEF_GGML_Q4_K;
    mt[3] = CLEF_GGML_IQ3_S;
    one_case(&e, mt, mr, 4, 512, 13, 1.0f, 0);
    mt[0] = CLEF_GGML_IQ4_XS;
    mt[1] = CLEF_GGML_Q2_K;
    mt[2] = CLEF_GGML_Q6_K;
    mt[3] = CLEF_GGML_IQ2_XXS;
    one_case(&e, mt, mr, 4, 768, 21, 0.0f, 1);
    check_q8_bytes();

    free(e.scratch);
    clef_cpu_pool_destroy(e.pools[0]);
    clef_cpu_pool_destroy(e.pools[1]);
    return check_done();
}
