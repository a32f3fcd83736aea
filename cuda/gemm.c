/*
 * The cuBLASLt products of gemm.h: a plan per exact shape (descriptors and
 * layouts for its row count) over an algorithm per shape without its row
 * count, which is what keeps rows independent of the batch.
 */
#include "gemm.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cublasLt.h>

#include "backend/device_plan.h"

#include "kernels.h"

#define GEMM_WORKSPACE   ((size_t) CLEF_DEVPLAN_GEMM_WS)  /* the memory plan's */
#define GEMM_SLOTS       1024           /* per table, a power of two */

/* The row count a shape's algorithm is chosen for: between a lone
 * 328-token request and a packed batch of many thousand rows, leaning to
 * the request, whose few row tiles would leave SMs idle under the large
 * tiles a 64k-row choice brings; the large batches lose less with smaller
 * tiles.  cuda_bench's latency and MFU figures are what to weigh before
 * changing it; any value keeps batch invariance. */
#define GEMM_REF_ROWS    512

typedef struct {
    int32_t  mode, rows, n, k, ldw, ldx, ldd;
    int32_t  beta, bias, align_w, align_x, align_d, align_b;
} gemm_key;

/* The leading part of both tables' slots. */
typedef struct {
    int                      used;
    gemm_key                 key;
} gemm_head;

typedef struct {
    gemm_head                h;
    cublasLtMatmulDesc_t     desc;
    cublasLtMatrixLayout_t   lw, lx, ld;
    cublasLtMatmulAlgo_t     algo;
    int                      bias_kernel;   /* epilogue refused: add bias after */
} gemm_plan;

/* A shape's algorithm, whatever the row count (rows = 0 in the key). */
typedef struct {
    gemm_head                h;
    cublasLtMatmulAlgo_t     algo;
    int                      bias_kernel;
    int                      none;          /* no one-pass algorithm exists */
} gemm_algo;

struct clef_gemm {
    cublasLtHandle_t  lt;
    void             *ws;
    gemm_plan        *plans;
    gemm_algo        *algos;
    long              heuristic_calls;
    long              fallbacks;
};

static int
lt_error(clef_error *err, const char *what, cublasStatus_t st)
{
    return clef_error_fail(err, CLEF_E_INTERNAL, "%s: %s", what,
        cublasLtGetStatusString(st));
}

int
clef_gemm_create(clef_gemm **out, clef_error *err)
{
    clef_gemm       *g;
    cublasStatus_t   st;
    cudaError_t      ce;

    g = calloc(1, sizeof(*g));
    if (g == NULL) {
        return clef_error_fail(err, CLEF_E_NO_MEMORY, "out of memory");
    }
    g->plans = calloc(GEMM_SLOTS, sizeof(*g->plans));
    g->algos = calloc(GEMM_SLOTS, sizeof(*g->algos));
    if (g->plans == NULL || g->algos == NULL) {
        clef_gemm_destroy(g);
        return clef_error_fail(err, CLEF_E_NO_MEMORY, "out of memory");
    }
    st = cublasLtCreate(&g->lt);
    if (st != CUBLAS_STATUS_SUCCESS) {
        g->lt = NULL;
        clef_gemm_destroy(g);
        return lt_error(err, "cublasLtCreate", st);
    }
    ce = cudaMalloc(&g->ws, GEMM_WORKSPACE);
    if (ce != cudaSuccess) {
        g->ws = NULL;
        clef_gemm_destroy(g);
        return clef_error_fail(err, CLEF_E_INTERNAL, "cuBLASLt workspace: %s",
            cudaGetErrorString(ce));
    }
    *out = g;
    return 0;
}

static void
plan_release(gemm_plan *p)
{
    if (!p->h.used) {
        return;
    }
    cublasLtMatrixLayoutDestroy(p->lw);
    cublasLtMatrixLayoutDestroy(p->lx);
    cublasLtMatrixLayoutDestroy(p->ld);
    cublasLtMatmulDescDestroy(p->desc);
    p->h.used = 0;
}

void
clef_gemm_destroy(clef_gemm *g)
{
    int  i;

    if (g == NULL) {
        return;
    }
    if (g->plans != NULL) {
        for (i = 0; i < GEMM_SLOTS; i++) {
            plan_release(&g->plans[i]);
        }
    }
    if (g->ws != NULL) {
        cudaFree(g->ws);
    }
    if (g->lt != NULL) {
        cublasLtDestroy(g->lt);
    }
    free(g->plans);
    free(g->algos);
    free(g);
}

long
clef_gemm_heuristic_calls(const clef_gemm *g)
{
    return g->heuristic_calls;
}

long
clef_gemm_fallbacks(const clef_gemm *g)
{
    return g->fallbacks;
}

static uint32_t
key_hash(const gemm_key *k)
{
    const unsigned char  *p = (const unsigned char *) k;
    uint32_t              h = 2166136261u;
    size_t                i;

    for (i = 0; i < sizeof(*k); i++) {
        h = (h ^ p[i]) * 16777619u;
    }
    return h;
}

static int32_t
alignment(const void *p)
{
    uintptr_t  a = (uintptr_t) p;
    int32_t    al = 256;

    while (al > 1 && (a & (uintptr_t) (al - 1)) != 0) {
        al >>= 1;
    }
    return al;
}

/* Open addressing over slots of `stride` bytes that start with a gemm_head.
 * Returns the slot of k (found = 1) or the free slot where it goes, -1 when
 * the table is full. */
static int
slot_find(void *table, size_t stride, const gemm_key *k, int *found)
{
    uint32_t  h = key_hash(k) & (GEMM_SLOTS - 1);
    int       i, at;

    for (i = 0; i < GEMM_SLOTS; i++) {
        const gemm_head  *e;

        at = (int) ((h + (uint32_t) i) & (GEMM_SLOTS - 1));
        e = (const gemm_head *) ((const char *) table + stride * (size_t) at);
        if (!e->used) {
            *found = 0;
            return at;
        }
        if (memcmp(&e->key, k, sizeof(*k)) == 0) {
            *found = 1;
            return at;
        }
    }
    *found = 0;
    return -1;
}

static void
types_for(clef_gemm_mode mode, cudaDataType_t *dt, cublasComputeType_t *ct)
{
    switch (mode) {
    case CLEF_GEMM_BF16:
        *dt = CUDA_R_16BF;
        *ct = CUBLAS_COMPUTE_32F;
        break;
    case CLEF_GEMM_TF32:
        *dt = CUDA_R_32F;
        *ct = CUBLAS_COMPUTE_32F_FAST_TF32;
        break;
    default:
        *dt = CUDA_R_32F;
        *ct = CUBLAS_COMPUTE_32F;
        break;
    }
}

/* bias: only its address matters here (the heuristics read its alignment
 * from it); the pointer of each call is set before that call. */
static int
make_desc(const gemm_key *k, int with_bias, const float *bias, gemm_plan *p,
    clef_error *err)
{
    cudaDataType_t         dt;
    cublasComputeType_t    ct;
    cublasOperation_t      opT = CUBLAS_OP_T, opN = CUBLAS_OP_N;
    cublasLtEpilogue_t     epi = with_bias ? CUBLASLT_EPILOGUE_BIAS
                                           : CUBLASLT_EPILOGUE_DEFAULT;
    cudaDataType_t         bias_t = CUDA_R_32F;
    cublasStatus_t         st;

    types_for((clef_gemm_mode) k->mode, &dt, &ct);
    st = cublasLtMatmulDescCreate(&p->desc, ct, CUDA_R_32F);
    if (st != CUBLAS_STATUS_SUCCESS) {
        return lt_error(err, "cublasLtMatmulDescCreate", st);
    }
    cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &opT, sizeof(opT));
    cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &opN, sizeof(opN));
    cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi));
    if (with_bias) {
        cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
            &bias_t, sizeof(bias_t));
        cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
            &bias, sizeof(bias));
    }
    /* Column-major view: D^T [n x rows] = W [n x k] . X^T [k x rows]. */
    st = cublasLtMatrixLayoutCreate(&p->lw, dt, (uint64_t) k->k, (uint64_t) k->n, k->ldw);
    if (st == CUBLAS_STATUS_SUCCESS) {
        st = cublasLtMatrixLayoutCreate(&p->lx, dt, (uint64_t) k->k, (uint64_t) k->rows, k->ldx);
    }
    if (st == CUBLAS_STATUS_SUCCESS) {
        st = cublasLtMatrixLayoutCreate(&p->ld, dt, (uint64_t) k->n, (uint64_t) k->rows, k->ldd);
    }
    if (st != CUBLAS_STATUS_SUCCESS) {
        cublasLtMatmulDescDestroy(p->desc);
        return lt_error(err, "cublasLtMatrixLayoutCreate", st);
    }
    return 0;
}

static void
destroy_desc(gemm_plan *p)
{
    cublasLtMatrixLayoutDestroy(p->lw);
    cublasLtMatrixLayoutDestroy(p->lx);
    cublasLtMatrixLayoutDestroy(p->ld);
    cublasLtMatmulDescDestroy(p->desc);
}

/* The heuristics' best algorithm for p's shape, asked first among those
 * that compute every dot product in one sequence (reduction mask NONE),
 * then without that filter in case this cuBLASLt reads a zero mask as
 * "none allowed". */
static int
heuristic_query(clef_gemm *g, const gemm_key *k, gemm_plan *p, int one_pass_only)
{
    cublasLtMatmulPreference_t       pref;
    cublasLtMatmulHeuristicResult_t  res;
    uint64_t                         ws = GEMM_WORKSPACE;
    uint32_t                         aw = (uint32_t) k->align_w;
    uint32_t                         ax = (uint32_t) k->align_x;
    uint32_t                         ad = (uint32_t) k->align_d;
    uint32_t                         mask = CUBLASLT_REDUCTION_SCHEME_NONE;
    int                              n = 0;
    cublasStatus_t                   st;

    g->heuristic_calls++;
    if (cublasLtMatmulPreferenceCreate(&pref) != CUBLAS_STATUS_SUCCESS) {
        return -1;
    }
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
        &ws, sizeof(ws));
    if (one_pass_only) {
        cublasLtMatmulPreferenceSetAttribute(pref,
            CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &mask, sizeof(mask));
    }
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
        &aw, sizeof(aw));
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        &ax, sizeof(ax));
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
        &ad, sizeof(ad));
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES,
        &ad, sizeof(ad));
    st = cublasLtMatmulAlgoGetHeuristic(g->lt, p->desc, p->lw, p->lx, p->ld, p->ld,
        pref, 1, &res, &n);
    cublasLtMatmulPreferenceDestroy(pref);
    if (st != CUBLAS_STATUS_SUCCESS || n < 1) {
        return -1;
    }
    p->algo = res.algo;
    return 0;
}

/* An algorithm for p's shape pinned to one pass over k: split-K 1, no
 * reduction scheme, whatever the heuristics preferred.  A split-K count
 * chosen per shape would add a row's partial sums in an order that the
 * row count decides (cuda/README.md, "Determinism"). */
static int
heuristic(clef_gemm *g, const gemm_key *k, gemm_plan *p)
{
    uint32_t  none = CUBLASLT_REDUCTION_SCHEME_NONE;
    int32_t   splits = 0, one = 1;
    size_t    wr;

    if (heuristic_query(g, k, p, 1) != 0 && heuristic_query(g, k, p, 0) != 0) {
        return -1;
    }
    if (cublasLtMatmulAlgoConfigGetAttribute(&p->algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM,
                                             &splits, sizeof(splits), &wr)
        != CUBLAS_STATUS_SUCCESS)
    {
        splits = 0;
    }
    if (splits != 1
        && (cublasLtMatmulAlgoConfigSetAttribute(&p->algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM,
                                                 &one, sizeof(one))
                != CUBLAS_STATUS_SUCCESS
            || cublasLtMatmulAlgoConfigSetAttribute(&p->algo,
                   CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &none, sizeof(none))
                != CUBLAS_STATUS_SUCCESS))
    {
        return -1;
    }
    return 0;
}

static int
algo_fits(clef_gemm *g, gemm_plan *p)
{
    cublasLtMatmulHeuristicResult_t  res;

    return cublasLtMatmulAlgoCheck(g->lt, p->desc, p->lw, p->lx, p->ld, p->ld,
               &p->algo, &res) == CUBLAS_STATUS_SUCCESS
           && res.workspaceSize <= GEMM_WORKSPACE;
}

/* The row-independent algorithm of k's shape (k->rows ignored): chosen
 * once, for GEMM_REF_ROWS rows, with the bias epilogue when cuBLASLt has
 * one and a separate bias kernel otherwise.  NULL when none exists. */
static gemm_algo *
shape_algo(clef_gemm *g, const gemm_key *k, const float *bias, clef_error *err)
{
    gemm_key    sk = *k;
    gemm_algo  *a;
    gemm_plan   tmp;
    int         ai, found, want_bias;

    sk.rows = 0;
    ai = slot_find(g->algos, sizeof(gemm_algo), &sk, &found);
    if (ai < 0) {
        memset(g->algos, 0, GEMM_SLOTS * sizeof(*g->algos));
        ai = slot_find(g->algos, sizeof(gemm_algo), &sk, &found);
    }
    a = &g->algos[ai];
    if (found) {
        return a->none ? NULL : a;
    }

    a->h.key = sk;
    a->h.used = 1;
    a->none = 1;
    sk.rows = GEMM_REF_ROWS;
    for (want_bias = k->bias; want_bias >= 0; want_bias--) {
        memset(&tmp, 0, sizeof(tmp));
        if (make_desc(&sk, want_bias, bias, &tmp, err) != 0) {
            return NULL;
        }
        if (heuristic(g, &sk, &tmp) == 0 && algo_fits(g, &tmp)) {
            a->algo = tmp.algo;
            a->bias_kernel = k->bias && !want_bias;
            a->none = 0;
            destroy_desc(&tmp);
            return a;
        }
        destroy_desc(&tmp);
    }
    return NULL;
}

/* Builds the plan of k: its shape's algorithm when cuBLASLt accepts it for
 * this row count; otherwise (counted as a fallback: this shape's rows then
 * depend on the batch) the heuristics' choice for this row count. */
static int
plan_build(clef_gemm *g, const gemm_key *k, const float *bias, gemm_plan *p,
    clef_error *err)
{
    gemm_algo  *a = shape_algo(g, k, bias, err);
    int         want_bias;

    if (a != NULL) {
        if (make_desc(k, k->bias && !a->bias_kernel, bias, p, err) != 0) {
            return -1;
        }
        p->algo = a->algo;
        p->bias_kernel = a->bias_kernel;
        if (algo_fits(g, p)) {
            p->h.key = *k;
            p->h.used = 1;
            return 0;
        }
        destroy_desc(p);
    }

    for (want_bias = k->bias; want_bias >= 0; want_bias--) {
        if (make_desc(k, want_bias, bias, p, err) != 0) {
            return -1;
        }
        if (heuristic(g, k, p) == 0 && algo_fits(g, p)) {
            p->bias_kernel = k->bias && !want_bias;
            p->h.key = *k;
            p->h.used = 1;
            g->fallbacks++;
            return 0;
        }
        destroy_desc(p);
    }
    return clef_error_fail(err, CLEF_E_INTERNAL,
        "cuBLASLt has no algorithm for mode %d, %d x %d x %d", k->mode,
        k->rows, k->n, k->k);
}

int
clef_gemm_run(clef_gemm *g, cudaStream_t s, clef_gemm_mode mode, int rows,
    int n, int k, const void *W, int ldw, const void *X, int ldx, void *D,
    int ldd, float beta, const float *bias, clef_error *err)
{
    gemm_key         key;
    gemm_plan       *p;
    int              pi, found;
    float            alpha = 1.0f;
    cublasStatus_t   st;

    if (rows <= 0 || n <= 0) {
        return 0;
    }
    if (bias != NULL && mode == CLEF_GEMM_BF16) {
        return clef_error_fail(err, CLEF_E_INTERNAL, "bf16 GEMM with a bias");
    }
    memset(&key, 0, sizeof(key));
    key.mode = mode;
    key.rows = rows;
    key.n = n;
    key.k = k;
    key.ldw = ldw;
    key.ldx = ldx;
    key.ldd = ldd;
    key.beta = beta != 0.0f;
    key.bias = bias != NULL;
    key.align_w = alignment(W);
    key.align_x = alignment(X);
    key.align_d = alignment(D);
    key.align_b = bias != NULL ? alignment(bias) : 0;

    pi = slot_find(g->plans, sizeof(gemm_plan), &key, &found);
    if (pi < 0) {
        for (pi = 0; pi < GEMM_SLOTS; pi++) {
            plan_release(&g->plans[pi]);
        }
        pi = slot_find(g->plans, sizeof(gemm_plan), &key, &found);
    }
    p = &g->plans[pi];
    if (!found && plan_build(g, &key, bias, p, err) != 0) {
        return -1;
    }

    if (bias != NULL && !p->bias_kernel) {
        cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
            &bias, sizeof(bias));
    }
    st = cublasLtMatmul(g->lt, p->desc, &alpha, W, p->lw, X, p->lx, &beta, D, p->ld,
        D, p->ld, &p->algo, g->ws, GEMM_WORKSPACE, s);
    if (st != CUBLAS_STATUS_SUCCESS) {
        return lt_error(err, "cublasLtMatmul", st);
    }
    if (bias != NULL && p->bias_kernel) {
        cudaError_t  ce = clef_k_bias_add((float *) D, ldd, bias, rows, n, s);

        if (ce != cudaSuccess) {
            return clef_error_fail(err, CLEF_E_INTERNAL, "bias: %s",
                cudaGetErrorString(ce));
        }
    }
    return 0;
}
