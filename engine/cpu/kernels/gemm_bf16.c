#include "cpu/kernels/gemm_bf16.h"

#include <dlfcn.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/splitmix64.h"
#include "model/tensor.h"

#define MB  CLEF_BF16_NATIVE_MB
#define NB  CLEF_BF16_NATIVE_NB

#define MAX_SHAPES  8

/* the header gives the types; the library is opened at run time */
#include <oneapi/dnnl/dnnl.h>

/* the library's entry points, looked up in the dlopen()ed libdnnl */
typedef struct {
    __typeof__(dnnl_engine_create)             *engine_create;
    __typeof__(dnnl_engine_destroy)            *engine_destroy;
    __typeof__(dnnl_stream_create)             *stream_create;
    __typeof__(dnnl_stream_destroy)            *stream_destroy;
    __typeof__(dnnl_memory_desc_init_by_tag)   *md_init_by_tag;
    __typeof__(dnnl_matmul_desc_init)          *matmul_desc_init;
    __typeof__(dnnl_primitive_desc_create)     *pd_create;
    __typeof__(dnnl_primitive_desc_query)      *pd_query;
    __typeof__(dnnl_primitive_desc_destroy)    *pd_destroy;
    __typeof__(dnnl_primitive_create)          *prim_create;
    __typeof__(dnnl_primitive_destroy)         *prim_destroy;
    __typeof__(dnnl_memory_create)             *memory_create;
    __typeof__(dnnl_memory_destroy)            *memory_destroy;
    __typeof__(dnnl_primitive_execute)         *execute;
    __typeof__(dnnl_stream_wait)               *stream_wait;
    __typeof__(dnnl_version)                   *version;
    __typeof__(dnnl_primitive_attr_create)     *attr_create;
    __typeof__(dnnl_primitive_attr_destroy)    *attr_destroy;
    __typeof__(dnnl_primitive_attr_set_scratchpad_mode)  *attr_scratchpad;
    __typeof__(dnnl_primitive_desc_query_md)   *pd_query_md;
    __typeof__(dnnl_memory_desc_get_size)      *md_size;
    void                                      (*omp_set_num_threads)(int n);
} dnnl_api;

typedef struct {
    int64_t             k;
    dnnl_primitive_t    prim;
    dnnl_memory_desc_t  src, wei, dst, scratch;
} shape;

struct clef_cpu_bf16_native {
    void           *lib, *omp;
    dnnl_api        api;
    dnnl_engine_t   engine;
    dnnl_stream_t  *streams;         /* one per pool worker */
    float          *tiles;           /* one MB x NB tile per pool worker */
    /* Each worker hands oneDNN a scratchpad of its own: with the library's
     * (the default), running one primitive on several threads at once is
     * not safe unless oneDNN was built for it. */
    char           *scratch;
    size_t          scratch_bytes;   /* per worker, 64-byte multiple */
    int             workers;
    shape           shapes[MAX_SHAPES];
    int             n_shapes;
    char            describe[256];
};

static const shape *
find_shape(const clef_cpu_bf16_native *nat, int64_t k)
{
    int  i;

    for (i = 0; i < nat->n_shapes; i++) {
        if (nat->shapes[i].k == k) {
            return &nat->shapes[i];
        }
    }
    return NULL;
}

/* oneDNN's parallel regions run on OpenMP: held to the calling thread, so
 * that the split of a call never depends on the machine (our pool splits
 * the tiles).  The setting is per thread, hence before every call. */
static void
one_thread(const clef_cpu_bf16_native *nat)
{
    if (nat->api.omp_set_num_threads != NULL) {
        nat->api.omp_set_num_threads(1);
    }
}

/* c[MB][NB] = a[MB][k] (bf16) . w[NB][k]^T (bf16), fp32; 0 on success */
static int
run_tile(const clef_cpu_bf16_native *nat, const shape *s, int worker,
    const uint16_t *a, const uint16_t *w, float *c)
{
    const dnnl_api   *api = &nat->api;
    dnnl_memory_t     ms = NULL, mw = NULL, md = NULL, mp = NULL;
    dnnl_exec_arg_t   args[4];
    int               rc = -1, n = 3;

    one_thread(nat);
    if (api->memory_create(&ms, &s->src, nat->engine, (void *) a) != dnnl_success
        || api->memory_create(&mw, &s->wei, nat->engine, (void *) w) != dnnl_success
        || api->memory_create(&md, &s->dst, nat->engine, c) != dnnl_success
        || (nat->scratch_bytes > 0
            && api->memory_create(&mp, &s->scratch, nat->engine,
                                  nat->scratch + (size_t) worker * nat->scratch_bytes)
               != dnnl_success))
    {
        goto done;
    }
    if (mp != NULL) {
        args[3].arg = DNNL_ARG_SCRATCHPAD;
        args[3].memory = mp;
        n = 4;
    }
    args[0].arg = DNNL_ARG_SRC;
    args[0].memory = ms;
    args[1].arg = DNNL_ARG_WEIGHTS;
    args[1].memory = mw;
    args[2].arg = DNNL_ARG_DST;
    args[2].memory = md;
    if (api->execute(s->prim, nat->streams[worker], n, args) == dnnl_success
        && api->stream_wait(nat->streams[worker]) == dnnl_success)
    {
        rc = 0;
    }
done:
    if (ms != NULL) {
        api->memory_destroy(ms);
    }
    if (mw != NULL) {
        api->memory_destroy(mw);
    }
    if (md != NULL) {
        api->memory_destroy(md);
    }
    if (mp != NULL) {
        api->memory_destroy(mp);
    }
    return rc;
}

static int
load_api(clef_cpu_bf16_native *nat, char *why, size_t why_len)
{
    dnnl_api  *a = &nat->api;

    nat->lib = dlopen("libdnnl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (nat->lib == NULL) {
        snprintf(why, why_len, "oneDNN is not installed (%s)", dlerror());
        return -1;
    }
#define SYM(field, name)                                                     \
    *(void **) &a->field = dlsym(nat->lib, #name);                           \
    if (a->field == NULL) {                                                  \
        snprintf(why, why_len, "libdnnl.so.2 has no %s", #name);             \
        return -1;                                                           \
    }
    SYM(engine_create, dnnl_engine_create);
    SYM(engine_destroy, dnnl_engine_destroy);
    SYM(stream_create, dnnl_stream_create);
    SYM(stream_destroy, dnnl_stream_destroy);
    SYM(md_init_by_tag, dnnl_memory_desc_init_by_tag);
    SYM(matmul_desc_init, dnnl_matmul_desc_init);
    SYM(pd_create, dnnl_primitive_desc_create);
    SYM(pd_query, dnnl_primitive_desc_query);
    SYM(pd_destroy, dnnl_primitive_desc_destroy);
    SYM(prim_create, dnnl_primitive_create);
    SYM(prim_destroy, dnnl_primitive_destroy);
    SYM(memory_create, dnnl_memory_create);
    SYM(memory_destroy, dnnl_memory_destroy);
    SYM(execute, dnnl_primitive_execute);
    SYM(stream_wait, dnnl_stream_wait);
    SYM(version, dnnl_version);
    SYM(attr_create, dnnl_primitive_attr_create);
    SYM(attr_destroy, dnnl_primitive_attr_destroy);
    SYM(attr_scratchpad, dnnl_primitive_attr_set_scratchpad_mode);
    SYM(pd_query_md, dnnl_primitive_desc_query_md);
    SYM(md_size, dnnl_memory_desc_get_size);
#undef SYM
    /* Debian's libdnnl runs on libgomp, loaded with it */
    nat->omp = dlopen("libgomp.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (nat->omp != NULL) {
        *(void **) &a->omp_set_num_threads = dlsym(nat->omp, "omp_set_num_threads");
    }
    return 0;
}

/* The primitive of a MB x NB x k product; refuses an implementation that
 * is not a native bf16 kernel. */
static int
make_shape(clef_cpu_bf16_native *nat, int64_t k, char *why, size_t why_len)
{
    const dnnl_api          *api = &nat->api;
    shape                   *s = &nat->shapes[nat->n_shapes];
    dnnl_dims_t              ds = { MB, k }, dw = { k, NB }, dd = { MB, NB };
    dnnl_matmul_desc_t       desc;
    dnnl_primitive_desc_t    pd = NULL;
    dnnl_primitive_attr_t    attr = NULL;
    const dnnl_memory_desc_t *sp;
    const char              *impl = NULL;
    dnnl_status_t            st;
    size_t                   bytes;

    s->k = k;
    if (api->md_init_by_tag(&s->src, 2, ds, dnnl_bf16, dnnl_ab) != dnnl_success
        || api->md_init_by_tag(&s->wei, 2, dw, dnnl_bf16, dnnl_ba) != dnnl_success
        || api->md_init_by_tag(&s->dst, 2, dd, dnnl_f32, dnnl_ab) != dnnl_success
        || api->matmul_desc_init(&desc, &s->src, &s->wei, NULL, &s->dst)
           != dnnl_success)
    {
        snprintf(why, why_len, "oneDNN refused the descriptors of a bf16 matmul");
        return -1;
    }
    if (api->attr_create(&attr) != dnnl_success
        || api->attr_scratchpad(attr, dnnl_scratchpad_mode_user) != dnnl_success)
    {
        if (attr != NULL) {
            api->attr_destroy(attr);
        }
        snprintf(why, why_len, "oneDNN refused a user scratchpad");
        return -1;
    }
    one_thread(nat);
    st = api->pd_create(&pd, &desc, attr, nat->engine, NULL);
    api->attr_destroy(attr);
    if (st != dnnl_success) {
        snprintf(why, why_len, "oneDNN has no bf16 matmul for this CPU (status %d)",
                 (int) st);
        return -1;
    }
    api->pd_query(pd, dnnl_query_impl_info_str, 0, &impl);
    if (impl == NULL || (strstr(impl, "bf16") == NULL && strstr(impl, "amx") == NULL)) {
        snprintf(why, why_len, "oneDNN's bf16 matmul here is %s, not a native "
                 "bf16 kernel", impl != NULL ? impl : "unnamed");
        api->pd_destroy(pd);
        return -1;
    }
    if (nat->n_shapes == 0) {
        snprintf(nat->describe, sizeof(nat->describe),
                 "gemm: oneDNN %d.%d.%d %s, bf16 x bf16 summed in fp32, "
                 "%dx%d tiles over the whole k, one thread per tile",
                 api->version()->major, api->version()->minor,
                 api->version()->patch, impl, MB, NB);
    }
    memset(&s->scratch, 0, sizeof(s->scratch));
    sp = api->pd_query_md(pd, dnnl_query_scratchpad_md, 0);
    if (sp != NULL) {
        s->scratch = *sp;
        bytes = (api->md_size(sp) + 63) / 64 * 64;
        nat->scratch_bytes = bytes > nat->scratch_bytes ? bytes : nat->scratch_bytes;
    }
    st = api->prim_create(&s->prim, pd);
    api->pd_destroy(pd);
    if (st != dnnl_success) {
        snprintf(why, why_len, "oneDNN could not create its bf16 matmul (status %d)",
                 (int) st);
        return -1;
    }
    nat->n_shapes++;
    return 0;
}

/* The checks the dispatch relies on, on random data of the shape: each
 * product within an fp32 sum's rounding of the fallback's (gemm.h's
 * kernel over the same bf16 values), and every row the same bits in
 * another place of the tile among other rows. */
static int
self_check(clef_cpu_bf16_native *nat, const shape *s, char *why, size_t why_len)
{
    int64_t          k = s->k, i, j, l;
    uint16_t        *a = malloc(sizeof(uint16_t) * MB * k);
    uint16_t        *ar = malloc(sizeof(uint16_t) * MB * k);
    uint16_t        *w = malloc(sizeof(uint16_t) * NB * k);
    float           *xf = malloc(sizeof(float) * MB * k);
    float           *c = aligned_alloc(64, sizeof(float) * MB * NB);
    float           *cr = aligned_alloc(64, sizeof(float) * MB * NB);
    float           *want = malloc(sizeof(float) * MB * NB);
    uint64_t         seed = 0x5eedb16;
    clef_cpu_wpack   p;
    double           bound, sum;
    int              ok = 0;

    p.data = NULL;
    if (a == NULL || ar == NULL || w == NULL || xf == NULL || c == NULL
        || cr == NULL || want == NULL || clef_cpu_wpack_alloc_bf16(&p, NB, k) != 0)
    {
        snprintf(why, why_len, "out of memory checking oneDNN");
        goto done;
    }
    for (i = 0; i < MB * k; i++) {
        a[i] = clef_f32_to_bf16((float) ((double) (clef_splitmix64(&seed) >> 11)
                                         / 4503599627370496.0 - 1.0));
        xf[i] = clef_bf16_to_f32(a[i]);
    }
    for (i = 0; i < NB * k; i++) {
        w[i] = clef_f32_to_bf16((float) ((double) (clef_splitmix64(&seed) >> 11)
                                         / 4503599627370496.0 - 1.0));
    }
    /* the same rows in reverse order */
    for (i = 0; i < MB; i++) {
        memcpy(ar + (MB - 1 - i) * k, a + i * k, sizeof(uint16_t) * (size_t) k);
    }
    clef_cpu_wpack_rows_bf16(&p, 0, NB, w, k);
    clef_cpu_gemm_packed(MB, xf, k, &p, 0.0f, want, NB);

    if (run_tile(nat, s, 0, a, w, c) != 0 || run_tile(nat, s, 0, ar, w, cr) != 0) {
        snprintf(why, why_len, "oneDNN's bf16 matmul failed to run");
        goto done;
    }
    for (i = 0; i < MB; i++) {
        if (memcmp(c + i * NB, cr + (MB - 1 - i) * NB, sizeof(float) * NB) != 0) {
            snprintf(why, why_len, "oneDNN's bf16 matmul gives row %lld other bits "
                     "at another place of a tile: not batch-invariant",
                     (long long) i);
            goto done;
        }
        for (j = 0; j < NB; j++) {
            sum = 0.0;
            for (l = 0; l < k; l++) {
                sum += fabs((double) xf[i * k + l] * clef_bf16_to_f32(w[j * k + l]));
            }
            bound = (double) (k + 2) * ldexp(1.0, -23) * sum + 1e-30;
            if (fabs((double) c[i * NB + j] - want[i * NB + j]) > 2 * bound) {
                snprintf(why, why_len, "oneDNN's bf16 matmul is %.3g from the "
                         "fallback's product at (%lld, %lld), beyond rounding",
                         fabs((double) c[i * NB + j] - want[i * NB + j]),
                         (long long) i, (long long) j);
                goto done;
            }
        }
    }
    ok = 1;
done:
    clef_cpu_wpack_free(&p);
    free(a);
    free(ar);
    free(w);
    free(xf);
    free(c);
    free(cr);
    free(want);
    return ok ? 0 : -1;
}

clef_cpu_bf16_native *
clef_cpu_bf16_native_open(const int64_t *ks, int n_ks, int workers, char *why,
    size_t why_len)
{
    clef_cpu_bf16_native  *nat;
    int                    i;

    nat = calloc(1, sizeof(*nat));
    if (nat == NULL) {
        snprintf(why, why_len, "out of memory");
        return NULL;
    }
    if (load_api(nat, why, why_len) != 0) {
        goto fail;
    }
    if (nat->api.engine_create(&nat->engine, dnnl_cpu, 0) != dnnl_success) {
        snprintf(why, why_len, "oneDNN has no CPU engine");
        goto fail;
    }
    nat->workers = workers > 0 ? workers : 1;
    nat->streams = calloc((size_t) nat->workers, sizeof(*nat->streams));
    nat->tiles = aligned_alloc(64, sizeof(float) * MB * NB * (size_t) nat->workers);
    if (nat->streams == NULL || nat->tiles == NULL) {
        snprintf(why, why_len, "out of memory");
        goto fail;
    }
    for (i = 0; i < nat->workers; i++) {
        if (nat->api.stream_create(&nat->streams[i], nat->engine,
                                   dnnl_stream_default_flags)
            != dnnl_success)
        {
            snprintf(why, why_len, "oneDNN has no CPU stream");
            goto fail;
        }
    }
    for (i = 0; i < n_ks; i++) {
        if (find_shape(nat, ks[i]) != NULL) {
            continue;
        }
        if (nat->n_shapes == MAX_SHAPES) {
            snprintf(why, why_len, "more than %d reduction lengths", MAX_SHAPES);
            goto fail;
        }
        if (make_shape(nat, ks[i], why, why_len) != 0) {
            goto fail;
        }
    }
    if (nat->scratch_bytes > 0) {
        nat->scratch = aligned_alloc(64, nat->scratch_bytes * (size_t) nat->workers);
        if (nat->scratch == NULL) {
            snprintf(why, why_len, "out of memory for oneDNN's scratchpads");
            goto fail;
        }
    }
    for (i = 0; i < nat->n_shapes; i++) {
        if (self_check(nat, &nat->shapes[i], why, why_len) != 0) {
            goto fail;
        }
    }
    return nat;

fail:
    clef_cpu_bf16_native_close(nat);
    return NULL;
}

void
clef_cpu_bf16_native_close(clef_cpu_bf16_native *nat)
{
    int  i;

    if (nat == NULL) {
        return;
    }
    for (i = 0; i < nat->n_shapes; i++) {
        nat->api.prim_destroy(nat->shapes[i].prim);
    }
    for (i = 0; nat->streams != NULL && i < nat->workers; i++) {
        if (nat->streams[i] != NULL) {
            nat->api.stream_destroy(nat->streams[i]);
        }
    }
    free(nat->streams);
    free(nat->tiles);
    free(nat->scratch);
    if (nat->engine != NULL) {
        nat->api.engine_destroy(nat->engine);
    }
    /* libdnnl stays mapped: its OpenMP runtime's threads, if it started
     * any, must not lose their code under them */
    free(nat);
}

const char *
clef_cpu_bf16_native_describe(const clef_cpu_bf16_native *nat)
{
    return nat->describe;
}

/* ---- products ---------------------------------------------------------- */

typedef struct {
    const clef_cpu_bf16_native  *nat;
    const shape                 *s;
    const float                 *x;
    int64_t                      ldx;
    const clef_cpu_wpack        *w;
    float                       *y;
    int64_t                      ldy;
    int                          load_c;
    int64_t                      row0, rows;    /* the group being run */
    int64_t                      col_tiles;
    uint16_t                    *a;             /* its rows in bf16, padded
                                                   to whole MB blocks */
    atomic_int                   failed;
} native_job;

static void
pack_task(void *ctx, int64_t begin, int64_t end, int worker)
{
    const native_job  *j = ctx;
    const float       *src;
    uint16_t          *d;
    int64_t            r, l, K = j->w->cols;

    for (r = begin; r < end; r++) {
        d = j->a + r * K;
        if (r >= j->rows) {
            memset(d, 0, sizeof(uint16_t) * (size_t) K);
            continue;
        }
        src = j->x + (j->row0 + r) * j->ldx;
        for (l = 0; l < K; l++) {
            d[l] = clef_f32_to_bf16(src[l]);
        }
    }
}

static void
tile_task(void *ctx, int64_t begin, int64_t end, int worker)
{
    native_job  *j = ctx;
    float       *c = j->nat->tiles + (size_t) worker * MB * NB;
    float       *yr;
    int64_t      t, i0, jc, r, col, rows, cols, K = j->w->cols;

    for (t = begin; t < end; t++) {
        i0 = t / j->col_tiles * MB;
        jc = t % j->col_tiles * NB;
        if (run_tile(j->nat, j->s, worker, j->a + i0 * K,
                     (const uint16_t *) j->w->data + jc * K, c)
            != 0)
        {
            atomic_store(&j->failed, 1);
            continue;
        }
        rows = j->rows - i0 < MB ? j->rows - i0 : MB;
        cols = j->w->rows - jc < NB ? j->w->rows - jc : NB;
        for (r = 0; r < rows; r++) {
            yr = j->y + (j->row0 + i0 + r) * j->ldy + jc;
            for (col = 0; col < cols; col++) {
                yr[col] = j->load_c ? yr[col] + c[r * NB + col] : c[r * NB + col];
            }
        }
    }
}

void
clef_cpu_bf16_native_linear(clef_cpu_pool *pool, const float *x, int64_t ldx,
    int64_t m, const clef_cpu_wpack *w, float *y, int64_t ldy, float beta,
    float *scratch)
{
    native_job  j;
    int64_t     group, padded;

    j.nat = w->native;
    j.s = find_shape(w->native, w->cols);
    j.x = x;
    j.ldx = ldx;
    j.w = w;
    j.y = y;
    j.ldy = ldy;
    j.load_c = beta != 0.0f;
    j.col_tiles = (w->rows + NB - 1) / NB;
    j.a = (uint16_t *) scratch;
    atomic_init(&j.failed, 0);
    /* rows of x the scratch holds in bf16, in whole blocks */
    group = (int64_t) ((clef_cpu_linear_scratch_floats(w->cols) - 16) * 2
                       / (size_t) w->cols) / MB * MB;

    for (j.row0 = 0; j.row0 < m; j.row0 += group) {
        j.rows = m - j.row0 < group ? m - j.row0 : group;
        padded = (j.rows + MB - 1) / MB * MB;
        clef_cpu_pool_for(pool, padded, 8, pack_task, &j);
        clef_cpu_pool_for(pool, padded / MB * j.col_tiles, 1, tile_task, &j);
    }
    if (atomic_load(&j.failed)) {
        /* the self-check ran this very call: a failure now is the library
         * breaking its contract, which must not pass for an answer */
        fprintf(stderr, "clef: oneDNN's bf16 matmul failed mid-forward\n");
        abort();
    }
}

int
clef_cpu_wpack_alloc_native(clef_cpu_wpack *w, int64_t n, int64_t k,
    const clef_cpu_bf16_native *nat)
{
    if (find_shape(nat, k) == NULL) {
        w->data = NULL;
        return -1;
    }
    if (clef_cpu_wpack_alloc_format(w, CLEF_CPU_WBF16_ROWS, n, k) != 0) {
        return -1;
    }
    w->native = nat;
    return 0;
}
