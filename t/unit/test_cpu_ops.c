/*
 * The CPU backend's ops against transformers' Qwen3.5 functions in fp32
 * (fixtures from t/reference/gen_op_fixtures.py, t/fixtures/ops/).
 *
 * Tolerance: an op passes when max |got - want| <= TOL * max(1, max |want|),
 * i.e. 1e-5 relative to the tensor's scale (the outputs here are O(1)).
 * The differences come only from the order of fp32 sums (and, for the
 * chunked delta rule, from the chunked algebra itself).
 */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cpu/ops/attention.h"
#include "cpu/ops/conv.h"
#include "cpu/ops/gdn.h"
#include "cpu/ops/norm.h"
#include "cpu/ops/rope.h"
#include "cpu/parallel/pool.h"

#define TOL  1e-5

/* ---- a minimal safetensors reader (F32 and I32 only) -------------------- */

typedef struct {
    char    *data;
    size_t   size;
    size_t   base;          /* offset of the tensor data */
    json_t  *header;
} fixture;

static int
fixture_open(fixture *f, const char *name)
{
    char      path[1024];
    FILE     *fp;
    uint64_t  hlen;
    long      size;

    memset(f, 0, sizeof(*f));
    snprintf(path, sizeof(path), "%s/ops/%s.safetensors", check_fixtures(), name);
    fp = fopen(path, "rb");
    if (fp == NULL) {
        printf("# cannot open %s\n", path);
        return -1;
    }
    fseek(fp, 0, SEEK_END);
    size = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    f->data = malloc((size_t) size);
    if (f->data == NULL || fread(f->data, 1, (size_t) size, fp) != (size_t) size) {
        fclose(fp);
        free(f->data);
        return -1;
    }
    fclose(fp);
    f->size = (size_t) size;
    memcpy(&hlen, f->data, 8);
    f->base = 8 + (size_t) hlen;
    f->header = json_loadb(f->data + 8, (size_t) hlen, 0, NULL);
    return f->header != NULL ? 0 : -1;
}

static void
fixture_close(fixture *f)
{
    json_decref(f->header);
    free(f->data);
}

/* The tensor's data; shape[] (up to 4) and the element count filled. */
static const void *
fixture_get(const fixture *f, const char *name, int64_t *shape, int64_t *numel)
{
    json_t  *t = json_object_get(f->header, name);
    json_t  *sh, *off;
    size_t   i;
    int64_t  n = 1;

    if (t == NULL) {
        printf("# fixture tensor %s missing\n", name);
        exit(1);
    }
    sh = json_object_get(t, "shape");
    off = json_object_get(t, "data_offsets");
    for (i = 0; i < json_array_size(sh); i++) {
        if (shape != NULL && i < 4) {
            shape[i] = json_integer_value(json_array_get(sh, i));
        }
        n *= json_integer_value(json_array_get(sh, i));
    }
    if (numel != NULL) {
        *numel = n;
    }
    return f->data + f->base + json_integer_value(json_array_get(off, 0));
}

static const float *
fget(const fixture *f, const char *name, int64_t *shape, int64_t *numel)
{
    return fixture_get(f, name, shape, numel);
}

#define CHECK_CLOSE(got, want, n, tol, ...)                                  \
    do {                                                                     \
        double e_ = check_rel_err(got, want, n);                             \
        CHECK(e_ <= (tol), __VA_ARGS__);                                     \
        printf("#   max error %.3g (tolerance %g)\n", e_, (double) (tol));   \
    } while (0)

static void
cu_from_lens(const int32_t *lens, int n, int32_t *cu)
{
    int  r;

    cu[0] = 0;
    for (r = 0; r < n; r++) {
        cu[r + 1] = cu[r] + lens[r];
    }
}

/* ---- norms ------------------------------------------------------------- */

static void
test_norms(clef_cpu_pool *pool)
{
    fixture       f;
    int64_t       sh[4], n;
    const float  *x, *z, *w1p, *wg;
    float        *y;

    if (fixture_open(&f, "norms") != 0) {
        CHECK(0, "norms fixture");
        return;
    }
    x = fget(&f, "x", sh, &n);
    z = fget(&f, "z", NULL, NULL);
    w1p = fget(&f, "w1p", NULL, NULL);
    wg = fget(&f, "wg", NULL, NULL);
    y = malloc(sizeof(float) * n);

    clef_cpu_rmsnorm1p(pool, x, sh[1], y, sh[1], sh[0], (int) sh[1], w1p, 1e-6f);
    CHECK_CLOSE(y, fget(&f, "out_1p", NULL, NULL), n, TOL,
                "zero-centred RMSNorm x/rms * (1 + w) = Qwen3_5RMSNorm");

    clef_cpu_rmsnorm_gated(pool, x, sh[1], z, sh[1], y, sh[1], sh[0], 1,
                           (int) sh[1], wg, 1e-6f);
    CHECK_CLOSE(y, fget(&f, "out_gated", NULL, NULL), n, TOL,
                "gated RMSNorm w * x/rms * silu(z) = Qwen3_5RMSNormGated");

    /* in place, as the backbone runs them */
    memcpy(y, x, sizeof(float) * n);
    clef_cpu_rmsnorm1p(pool, y, sh[1], y, sh[1], sh[0], (int) sh[1], w1p, 1e-6f);
    CHECK_CLOSE(y, fget(&f, "out_1p", NULL, NULL), n, TOL, "RMSNorm1p in place");

    free(y);
    fixture_close(&f);
}

/* ---- causal conv + SiLU over 3 packed records -------------------------- */

static void
test_conv(clef_cpu_pool *pool)
{
    fixture        f;
    int64_t        sh[4], wsh[4], n, nr;
    const float   *x, *w;
    const int32_t *lens;
    float         *wt, *y;
    int32_t        cu[8];
    int            C, K, c, i;

    if (fixture_open(&f, "conv") != 0) {
        CHECK(0, "conv fixture");
        return;
    }
    x = fget(&f, "x", sh, &n);
    w = fget(&f, "w", wsh, NULL);
    lens = fixture_get(&f, "lens", NULL, &nr);
    C = (int) wsh[0];
    K = (int) wsh[1];
    cu_from_lens(lens, (int) nr, cu);

    /* conv1d.weight [C][K] -> tap-major [K][C] */
    wt = malloc(sizeof(float) * C * K);
    for (c = 0; c < C; c++) {
        for (i = 0; i < K; i++) {
            wt[i * C + c] = w[c * K + i];
        }
    }
    y = malloc(sizeof(float) * n);
    clef_cpu_conv_silu(pool, x, C, y, C, C, wt, K, cu, (int) nr);
    CHECK_CLOSE(y, fget(&f, "out", NULL, NULL), n, TOL,
                "causal depthwise conv + SiLU over records of %d, %d, %d tokens "
                "= causal_conv1d_fn on each alone", lens[0], lens[1], lens[2]);
    CHECK_INT(sh[0], cu[nr], "conv fixture tokens");

    free(wt);
    free(y);
    fixture_close(&f);
}

/* ---- RoPE -------------------------------------------------------------- */

static void
test_rope(const char *name)
{
    fixture        f;
    int64_t        qs[4], ks[4], nq, nk, np, p;
    const float   *q, *k, *theta, *factor;
    const int32_t *pos;
    float         *qo, *ko, *cs, *sn;
    int            rot, half, maxpos = 0, h;

    if (fixture_open(&f, name) != 0) {
        CHECK(0, "%s fixture", name);
        return;
    }
    q = fget(&f, "q", qs, &nq);
    k = fget(&f, "k", ks, &nk);
    pos = fixture_get(&f, "pos", NULL, &np);
    theta = fget(&f, "theta", NULL, NULL);
    factor = fget(&f, "factor", NULL, NULL);
    rot = (int) (qs[2] * (double) factor[0]);
    half = rot / 2;
    for (p = 0; p < np; p++) {
        maxpos = pos[p] > maxpos ? pos[p] : maxpos;
    }

    cs = malloc(sizeof(float) * (size_t) (maxpos + 1) * half);
    sn = malloc(sizeof(float) * (size_t) (maxpos + 1) * half);
    clef_cpu_rope_table(rot, theta[0], maxpos + 1, cs, sn);

    qo = malloc(sizeof(float) * nq);
    ko = malloc(sizeof(float) * nk);
    memcpy(qo, q, sizeof(float) * nq);
    memcpy(ko, k, sizeof(float) * nk);
    for (p = 0; p < np; p++) {
        for (h = 0; h < qs[1]; h++) {
            clef_cpu_rope_apply(qo + (p * qs[1] + h) * qs[2], rot,
                                cs + (int64_t) pos[p] * half, sn + (int64_t) pos[p] * half);
        }
        for (h = 0; h < ks[1]; h++) {
            clef_cpu_rope_apply(ko + (p * ks[1] + h) * ks[2], rot,
                                cs + (int64_t) pos[p] * half, sn + (int64_t) pos[p] * half);
        }
    }
    CHECK_CLOSE(qo, fget(&f, "q_out", NULL, NULL), nq, TOL,
                "%s: partial NeoX RoPE on %d of %d dims (theta %g), q, positions to %d",
                name, rot, (int) qs[2], theta[0], maxpos);
    CHECK_CLOSE(ko, fget(&f, "k_out", NULL, NULL), nk, TOL, "%s: k", name);

    free(cs);
    free(sn);
    free(qo);
    free(ko);
    fixture_close(&f);
}

/* ---- attention --------------------------------------------------------- */

static void
test_attention(clef_cpu_pool *pool)
{
    fixture         f;
    int64_t         qs[4], ks[4], nq, nr;
    const int32_t  *lens;
    float          *q, *k, *o, *scratch;
    clef_attn_args  a;
    int32_t         cu[8];
    int             rc;

    if (fixture_open(&f, "attention") != 0) {
        CHECK(0, "attention fixture");
        return;
    }
    /* the op takes non-const q and k (prepare runs in place on them) */
    {
        int64_t  nk;
        const float *fq = fget(&f, "q", qs, &nq), *fk = fget(&f, "k", ks, &nk);

        q = malloc(sizeof(float) * nq);
        k = malloc(sizeof(float) * nk);
        memcpy(q, fq, sizeof(float) * nq);
        memcpy(k, fk, sizeof(float) * nk);
    }
    lens = fixture_get(&f, "lens", NULL, &nr);
    cu_from_lens(lens, (int) nr, cu);

    o = malloc(sizeof(float) * nq);
    scratch = malloc(sizeof(float) * clef_cpu_pool_size(pool)
                     * clef_cpu_attention_scratch_floats((int) (qs[1] / ks[1]),
                                                         (int) qs[2]));
    a.q = q;
    a.ldq = qs[1] * qs[2];
    a.q_head_stride = qs[2];
    a.k = k;
    a.ldk = ks[1] * ks[2];
    a.v = fget(&f, "v", NULL, NULL);
    a.ldv = ks[1] * ks[2];
    a.o = o;
    a.ldo = qs[1] * qs[2];
    a.hq = (int) qs[1];
    a.hkv = (int) ks[1];
    a.hd = (int) qs[2];
    a.scale = 1.0f / sqrtf((float) a.hd);

    rc = clef_cpu_attention(pool, &a, cu, (int) nr, scratch);
    CHECK_INT(rc, 0, "attention runs");
    CHECK_CLOSE(o, fget(&f, "out", NULL, NULL), nq, TOL,
                "blockwise causal GQA attention (%d q heads on %d kv heads), "
                "records of %d, %d, %d packed = eager attention on each alone",
                a.hq, a.hkv, lens[0], lens[1], lens[2]);

    free(q);
    free(k);
    free(o);
    free(scratch);
    fixture_close(&f);
}

/* ---- Gated DeltaNet ---------------------------------------------------- */

typedef struct {
    int      T, hk, hv, dk, dv;
    float   *qk;         /* [T][2 hk dk]: q heads then k heads */
    float   *ba;         /* [T][2 hv] */
    float   *v;          /* [T][hv dv] */
    float   *beta, *g;
    fixture  f;
} gdn_case;

static int
gdn_load(gdn_case *c, int T)
{
    char          name[32];
    int64_t       sh[4], vsh[4];
    const float  *q, *k, *b, *a, *v;
    int           t, w;

    snprintf(name, sizeof(name), "gdn_T%d", T);
    if (fixture_open(&c->f, name) != 0) {
        return -1;
    }
    q = fget(&c->f, "q", sh, NULL);
    k = fget(&c->f, "k", NULL, NULL);
    v = fget(&c->f, "v", vsh, NULL);
    b = fget(&c->f, "b", NULL, NULL);
    a = fget(&c->f, "a", NULL, NULL);
    c->T = (int) sh[0];
    c->hk = (int) sh[1];
    c->dk = (int) sh[2];
    c->hv = (int) vsh[1];
    c->dv = (int) vsh[2];
    w = c->hk * c->dk;
    c->qk = malloc(sizeof(float) * c->T * 2 * w);
    c->ba = malloc(sizeof(float) * c->T * 2 * c->hv);
    c->v = malloc(sizeof(float) * c->T * c->hv * c->dv);
    c->beta = malloc(sizeof(float) * c->T * c->hv);
    c->g = malloc(sizeof(float) * c->T * c->hv);
    for (t = 0; t < c->T; t++) {
        memcpy(c->qk + (size_t) t * 2 * w, q + (size_t) t * w, sizeof(float) * w);
        memcpy(c->qk + (size_t) t * 2 * w + w, k + (size_t) t * w, sizeof(float) * w);
        memcpy(c->ba + (size_t) t * 2 * c->hv, b + (size_t) t * c->hv, sizeof(float) * c->hv);
        memcpy(c->ba + (size_t) t * 2 * c->hv + c->hv, a + (size_t) t * c->hv,
               sizeof(float) * c->hv);
    }
    memcpy(c->v, v, sizeof(float) * c->T * c->hv * c->dv);
    return 0;
}

static void
gdn_free(gdn_case *c)
{
    free(c->qk);
    free(c->ba);
    free(c->v);
    free(c->beta);
    free(c->g);
    fixture_close(&c->f);
}

static void
gdn_args(clef_gdn_args *a, gdn_case *c, float *o, int recurrent)
{
    a->q = c->qk;
    a->k = c->qk + c->hk * c->dk;
    a->ldqk = 2 * c->hk * c->dk;
    a->v = c->v;
    a->ldv = c->hv * c->dv;
    a->g = c->g;
    a->beta = c->beta;
    a->o = o;
    a->ldo = c->hv * c->dv;
    a->hk = c->hk;
    a->hv = c->hv;
    a->dk = c->dk;
    a->dv = c->dv;
    a->recurrent = recurrent;
}

static void
test_gdn(clef_cpu_pool *pool, int T, float *scratch)
{
    gdn_case       c;
    clef_gdn_args  a;
    float         *oc, *orc;
    int64_t        n;
    int32_t        cu[2];

    if (gdn_load(&c, T) != 0) {
        CHECK(0, "gdn_T%d fixture", T);
        return;
    }
    clef_cpu_gdn_prepare(pool, c.qk, 2 * c.hk * c.dk, c.T, c.hk, c.dk, c.ba,
                         2 * c.hv, c.hv, fget(&c.f, "A_log", NULL, NULL),
                         fget(&c.f, "dt_bias", NULL, NULL), c.beta, c.g);
    CHECK_CLOSE(c.beta, fget(&c.f, "beta", NULL, NULL), (int64_t) T * c.hv, TOL,
                "T=%d: beta = sigmoid(b)", T);
    CHECK_CLOSE(c.g, fget(&c.f, "g", NULL, NULL), (int64_t) T * c.hv, TOL,
                "T=%d: g = -exp(A_log) softplus(a + dt_bias)", T);

    n = (int64_t) T * c.hv * c.dv;
    oc = malloc(sizeof(float) * n);
    orc = malloc(sizeof(float) * n);
    cu[0] = 0;
    cu[1] = T;

    gdn_args(&a, &c, oc, 0);
    clef_cpu_gdn(pool, &a, cu, 1, scratch);
    gdn_args(&a, &c, orc, 1);
    clef_cpu_gdn(pool, &a, cu, 1, scratch);

    CHECK_CLOSE(oc, fget(&c.f, "chunk", NULL, NULL), n, TOL,
                "T=%d: chunked delta rule (chunk %d, %d v-heads on %d k-heads, "
                "dk %d, dv %d) = torch_chunk_gated_delta_rule", T, CLEF_GDN_CHUNK,
                c.hv, c.hk, c.dk, c.dv);
    CHECK_CLOSE(orc, fget(&c.f, "recurrent", NULL, NULL), n, TOL,
                "T=%d: recurrent delta rule = torch_recurrent_gated_delta_rule", T);
    CHECK_CLOSE(oc, orc, n, TOL, "T=%d: chunked = recurrent", T);
    CHECK_CLOSE(oc, fget(&c.f, "recurrent", NULL, NULL), n, TOL,
                "T=%d: chunked = torch_recurrent_gated_delta_rule", T);

    free(oc);
    free(orc);
    gdn_free(&c);
}

/* All five sequences packed into one batch: each must come out as alone. */
static void
test_gdn_packed(clef_cpu_pool *pool, float *scratch)
{
    static const int  lens[] = { 1, 63, 64, 65, 1000 };
    gdn_case          c[5];
    clef_gdn_args     a;
    float            *qk, *ba, *v, *beta, *g, *o;
    int32_t           cu[6];
    int64_t           tot;
    int               r, w, hv, dv;

    for (r = 0; r < 5; r++) {
        if (gdn_load(&c[r], lens[r]) != 0) {
            CHECK(0, "gdn fixtures");
            return;
        }
    }
    w = 2 * c[0].hk * c[0].dk;
    hv = c[0].hv;
    dv = c[0].dv;
    cu[0] = 0;
    for (r = 0; r < 5; r++) {
        cu[r + 1] = cu[r] + lens[r];
    }
    tot = cu[5];
    qk = malloc(sizeof(float) * tot * w);
    ba = malloc(sizeof(float) * tot * 2 * hv);
    v = malloc(sizeof(float) * tot * hv * dv);
    beta = malloc(sizeof(float) * tot * hv);
    g = malloc(sizeof(float) * tot * hv);
    o = malloc(sizeof(float) * tot * hv * dv);
    for (r = 0; r < 5; r++) {
        memcpy(qk + (int64_t) cu[r] * w, c[r].qk, sizeof(float) * lens[r] * w);
        memcpy(ba + (int64_t) cu[r] * 2 * hv, c[r].ba, sizeof(float) * lens[r] * 2 * hv);
        memcpy(v + (int64_t) cu[r] * hv * dv, c[r].v, sizeof(float) * lens[r] * hv * dv);
    }
    /* every fixture shares A_log and dt_bias */
    clef_cpu_gdn_prepare(pool, qk, w, tot, c[0].hk, c[0].dk, ba, 2 * hv, hv,
                         fget(&c[0].f, "A_log", NULL, NULL),
                         fget(&c[0].f, "dt_bias", NULL, NULL), beta, g);
    a.q = qk;
    a.k = qk + w / 2;
    a.ldqk = w;
    a.v = v;
    a.ldv = hv * dv;
    a.g = g;
    a.beta = beta;
    a.o = o;
    a.ldo = hv * dv;
    a.hk = c[0].hk;
    a.hv = hv;
    a.dk = c[0].dk;
    a.dv = dv;
    a.recurrent = 0;
    clef_cpu_gdn(pool, &a, cu, 5, scratch);

    for (r = 0; r < 5; r++) {
        CHECK_CLOSE(o + (int64_t) cu[r] * hv * dv, fget(&c[r].f, "chunk", NULL, NULL),
                    (int64_t) lens[r] * hv * dv, TOL,
                    "packed batch 1+63+64+65+1000: record of %d tokens = "
                    "torch_chunk_gated_delta_rule alone", lens[r]);
    }

    free(qk);
    free(ba);
    free(v);
    free(beta);
    free(g);
    free(o);
    for (r = 0; r < 5; r++) {
        gdn_free(&c[r]);
    }
}

int
main(void)
{
    static const int  lens[] = { 1, 63, 64, 65, 1000 };
    clef_cpu_pool    *pool;
    clef_error        err;
    float            *scratch;
    size_t            i;

    pool = clef_cpu_pool_create(2, &err);
    CHECK(pool != NULL, "thread pool of 2");
    if (pool == NULL) {
        return check_done();
    }

    test_norms(pool);
    test_conv(pool);
    test_rope("rope_f0.25");
    test_rope("rope_f0.5");
    test_attention(pool);

    scratch = malloc(sizeof(float) * clef_cpu_gdn_scratch_floats(32, 32) * 2);
    for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
        test_gdn(pool, lens[i], scratch);
    }
    test_gdn_packed(pool, scratch);
    free(scratch);

    clef_cpu_pool_destroy(pool);
    return check_done();
}
