/*
 * Helpers of the CUDA tests: the skip when there is no usable device,
 * deterministic random inputs, device copies and the comparison against
 * a reference.
 */
#ifndef CLEF_CUDA_TEST_H
#define CLEF_CUDA_TEST_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include <cuda_runtime_api.h>

#include "backend/backend.h"
#include "base/splitmix64.h"
#include "check.h"
#include "clef_cuda.h"
#include "cpu/parallel/pool.h"
#include "kernels.h"
#include "model/model.h"
#include "model/tensor.h"
#include "protocol/answer.h"
#include "shell.h"

/* The numerics contract of the CUDA backend (docs/architecture.md §5): probabilities
 * within PROB_TOL of the fp32 reference.  If every probability may move by
 * that much, only a question whose top-two margin exceeds twice it must
 * keep its argmax: the others are near-ties (the fixtures have margins down
 * to 7e-4) that may swap without any error beyond the tolerance. */
#define PROB_TOL        2e-2
#define DECIDED_MARGIN  (2 * PROB_TOL)

/* Prints the TAP skip plan and returns 1 when no Hopper-class device can
 * run the kernels (no driver, no device, or compute capability < 9). */
static __attribute__((unused)) int
cuda_test_skip(void)
{
    struct cudaDeviceProp  p;
    cudaError_t            e;
    int                    n = 0;

    e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
        printf("1..0 # SKIP no CUDA device: %s\n",
               e != cudaSuccess ? cudaGetErrorString(e) : "none found");
        return 1;
    }
    if (cudaGetDeviceProperties(&p, 0) != cudaSuccess || p.major < 9) {
        printf("1..0 # SKIP no CUDA device: device 0 is not compute capability 9.x\n");
        return 1;
    }
    return 0;
}

/* Probabilities of a packed batch's logits as the answer builder makes
 * them: the host's per-question softmax, record by record. */
static __attribute__((unused)) void
batch_softmax(const clef_batch *b, const float *logits, float *probs)
{
    int  r, off = 0;

    for (r = 0; r < b->n_records; r++) {
        clef_answer_softmax(b->records[r], logits + off, probs + off);
        off += b->records[r]->n_options;
    }
}

static __attribute__((unused)) int
argmax_of(const float *p, int n)
{
    int  i, best = 0;

    for (i = 1; i < n; i++) {
        if (p[i] > p[best]) {
            best = i;
        }
    }
    return best;
}

/* 1 when ref decides its question (top-two margin above DECIDED_MARGIN);
 * then *same says whether got has the same argmax. */
static __attribute__((unused)) int
decided_question(const float *ref, const float *got, int n, int *same)
{
    int     top = argmax_of(ref, n), k;
    double  second = 0;

    for (k = 0; k < n; k++) {
        second = k != top && ref[k] > second ? ref[k] : second;
    }
    if (n > 1 && ref[top] - second <= DECIDED_MARGIN) {
        return 0;
    }
    *same = argmax_of(got, n) == top;
    return 1;
}

static uint64_t  test_rng = 0x9e3779b97f4a7c15ull;

static __attribute__((unused)) uint64_t
rnd_u64(void)
{
    return clef_splitmix64(&test_rng);
}

/* Uniform in [-a, a), rounded to bf16 so that host and device see the same
 * input values. */
static __attribute__((unused)) float
rnd_bf(float a)
{
    float  u = (float) ((rnd_u64() >> 40) * (1.0 / 16777216.0));

    return clef_bf16_to_f32(clef_f32_to_bf16((2.0f * u - 1.0f) * a));
}

static __attribute__((unused)) void
fill_bf(float *x, size_t n, float a)
{
    size_t  i;

    for (i = 0; i < n; i++) {
        x[i] = rnd_bf(a);
    }
}

static __attribute__((unused)) void
die_cuda(cudaError_t e, const char *what)
{
    if (e != cudaSuccess) {
        printf("Bail out! %s: %s\n", what, cudaGetErrorString(e));
        exit(1);
    }
}

/* Device copy of n host floats as bf16 (or as f32). */
static __attribute__((unused)) void *
up_bf(const float *x, size_t n)
{
    uint16_t  *h = malloc(n * 2 + 2);
    void      *d;
    size_t     i;

    for (i = 0; i < n; i++) {
        h[i] = clef_f32_to_bf16(x[i]);
    }
    die_cuda(cudaMalloc(&d, n * 2 + 2), "cudaMalloc");
    die_cuda(cudaMemcpy(d, h, n * 2, cudaMemcpyHostToDevice), "upload");
    free(h);
    return d;
}

static __attribute__((unused)) void *
up_f32(const float *x, size_t n)
{
    void  *d;

    die_cuda(cudaMalloc(&d, n * 4 + 4), "cudaMalloc");
    die_cuda(cudaMemcpy(d, x, n * 4, cudaMemcpyHostToDevice), "upload");
    return d;
}

static __attribute__((unused)) void *
up_i32(const int32_t *x, size_t n)
{
    void  *d;

    die_cuda(cudaMalloc(&d, n * 4 + 4), "cudaMalloc");
    die_cuda(cudaMemcpy(d, x, n * 4, cudaMemcpyHostToDevice), "upload");
    return d;
}

/* A device buffer of n elements of `size` bytes filled with NaN bits, so
 * that an element a kernel forgets to write fails the comparison. */
static __attribute__((unused)) void *
dev_poison(size_t n, size_t size)
{
    void  *d;

    die_cuda(cudaMalloc(&d, n * size + 4), "cudaMalloc");
    die_cuda(cudaMemset(d, 0xff, n * size + 4), "memset");
    return d;
}

static __attribute__((unused)) float *
down_bf(const void *d, size_t n)
{
    uint16_t  *h = malloc(n * 2 + 2);
    float     *f = malloc(n * 4 + 4);
    size_t     i;

    die_cuda(cudaDeviceSynchronize(), "kernel");
    die_cuda(cudaMemcpy(h, d, n * 2, cudaMemcpyDeviceToHost), "download");
    for (i = 0; i < n; i++) {
        f[i] = clef_bf16_to_f32(h[i]);
    }
    free(h);
    return f;
}

static __attribute__((unused)) float *
down_f32(const void *d, size_t n)
{
    float  *f = malloc(n * 4 + 4);

    die_cuda(cudaDeviceSynchronize(), "kernel");
    die_cuda(cudaMemcpy(f, d, n * 4, cudaMemcpyDeviceToHost), "download");
    return f;
}

/* max |got - want| / max(1e-30, max |want|) over n elements at strides;
 * NaN anywhere counts as an error of infinity. */
static __attribute__((unused)) double
max_rel(const float *got, size_t lg, const float *want, size_t lw, size_t rows,
    size_t cols)
{
    double  scale = 1e-30, e = 0, d;
    size_t  r, c;

    for (r = 0; r < rows; r++) {
        for (c = 0; c < cols; c++) {
            d = fabs((double) want[r * lw + c]);
            scale = d > scale ? d : scale;
        }
    }
    for (r = 0; r < rows; r++) {
        for (c = 0; c < cols; c++) {
            d = fabs((double) got[r * lg + c] - (double) want[r * lw + c]);
            if (d != d) {
                return INFINITY;
            }
            e = d > e ? d : e;
        }
    }
    return e / scale;
}

/* A record of len random tokens with 1-3 questions of 2-4 options (or the
 * counts of `like`), spans anywhere in the record (possibly empty only when
 * len is 1). */
static __attribute__((unused)) void
synth_record(clef_record *r, int len, int vocab, const clef_record *like)
{
    int  q, o, nq, no = 0, i, k;

    nq = like != NULL ? like->n_questions : 1 + (int) (rnd_u64() % 3);
    memset(r, 0, sizeof(*r));
    for (i = 0; i < len; i++) {
        clef_ids_push(&r->ids, (int32_t) (rnd_u64() % (uint64_t) vocab));
    }
    r->n_questions = nq;
    r->question_spans = calloc((size_t) nq, sizeof(clef_span));
    r->question_types = calloc((size_t) nq, sizeof(clef_qtype));
    r->option_offset = calloc((size_t) nq + 1, sizeof(int));
    r->option_spans = calloc((size_t) nq * 4, sizeof(clef_span));
    for (q = 0; q < nq; q++) {
        int  s = (int) (rnd_u64() % (uint64_t) len);

        k = like != NULL ? like->option_offset[q + 1] - like->option_offset[q]
                         : 2 + (int) (rnd_u64() % 3);
        r->question_types[q] = (clef_qtype) (rnd_u64() % 3);
        r->question_spans[q].start = s;
        r->question_spans[q].end = s + 1 + (int) (rnd_u64() % (uint64_t) (len - s));
        r->option_offset[q] = no;
        for (o = 0; o < k; o++) {
            s = (int) (rnd_u64() % (uint64_t) len);
            r->option_spans[no].start = s;
            r->option_spans[no].end = s + 1
                + (int) (rnd_u64() % (uint64_t) (len - s < 9 ? len - s : 9));
            no++;
        }
    }
    r->option_offset[nq] = no;
    r->n_options = no;
}

/* max |a - b| over n values; a NaN in either makes it NaN. */
static __attribute__((unused)) double
max_abs_diff(const float *a, const float *b, int n)
{
    double  worst = 0, d;
    int     i;

    for (i = 0; i < n; i++) {
        d = fabs((double) a[i] - b[i]);
        worst = d > worst || d != d ? d : worst;
    }
    return worst;
}

#define CHECK_REL(got, lg, want, lw, rows, cols, tol, ...)                   \
    do {                                                                     \
        double e_ = max_rel((got), (lg), (want), (lw), (rows), (cols));      \
        CHECK(e_ <= (tol), __VA_ARGS__);                                     \
        printf("#   max error / max |ref| = %.3g (tol %g)\n", e_, (double) (tol)); \
    } while (0)

/* A random checkpoint (build/clef mkmodel --config config) made in a
 * fresh directory /tmp/<prefix>-XXXXXX, whose path goes to dir (at least
 * 64 bytes), and opened; NULL with the reason printed. */
static __attribute__((unused)) clef_model *
cuda_test_mkmodel(const char *prefix, const char *config, int seed,
    int shards, char *dir)
{
    char         cmd[2048];
    clef_error   err;
    clef_model  *m;

    snprintf(dir, 64, "/tmp/%s-XXXXXX", prefix);
    if (mkdtemp(dir) == NULL) {
        printf("# mkdtemp %s failed\n", dir);
        return NULL;
    }
    snprintf(cmd, sizeof(cmd), "build/clef mkmodel --config %s --tokenizer "
             "%s --seed %d --shards %d --out %s > /dev/null",
             config, check_qwen3_tokenizer(), seed, shards, dir);
    if (sh("%s", cmd) != 0) {
        printf("# failed: %s\n", cmd);
        return NULL;
    }
    memset(&err, 0, sizeof(err));
    m = clef_model_open(dir, 0, &err);
    if (m == NULL) {
        printf("# %s: %s\n", dir, err.message);
    }
    return m;
}

static __attribute__((unused)) void
cuda_test_remove_dir(const char *dir)
{
    if (sh("rm -rf %s", dir) != 0) {
        printf("# could not remove %s\n", dir);
    }
}

/* The end of a sub-test that ran a checkpoint on the CPU backend (cb, of
 * cpu) and the CUDA backend (gb): each closed when open, the model
 * closed, its directory removed. */
static __attribute__((unused)) void
cuda_test_close(const clef_backend_ops *cpu, clef_backend *cb,
    clef_backend *gb, clef_model *m, const char *dir)
{
    if (gb != NULL) {
        clef_cuda_backend_ops.close(gb);
    }
    if (cb != NULL) {
        cpu->close(cb);
    }
    if (m != NULL) {
        clef_model_close(m);
    }
    cuda_test_remove_dir(dir);
}

/* Tests split into sub-tests, each runnable alone (the device check runs
 * them one process each): the table, and what the command line picks. */
typedef struct {
    const char  *name;
    void       (*run)(void);
} cuda_subtest;

/* The start of a program of sub-tests.  Reads argv: "--list" prints the
 * names; each other argument names a sub-test to run (want[k] = 1, every
 * want[] 0 meaning all), an unknown one bails out; then the skip without
 * a usable device.  -1 when the sub-tests are to run, else the status to
 * exit with: 0 after --list or the skip, 2 for an unknown name. */
static __attribute__((unused)) int
cuda_test_start(int argc, char **argv, const cuda_subtest *t, size_t n,
    int *want)
{
    size_t  k;
    int     a;

    memset(want, 0, sizeof(int) * n);
    for (a = 1; a < argc; a++) {
        if (strcmp(argv[a], "--list") == 0) {
            for (k = 0; k < n; k++) {
                printf("%s\n", t[k].name);
            }
            return 0;
        }
        for (k = 0; k < n && strcmp(argv[a], t[k].name) != 0; k++) {
            /* void */
        }
        if (k == n) {
            printf("Bail out! unknown sub-test '%s' (--list names them)\n",
                   argv[a]);
            return 2;
        }
        want[k] = 1;
    }
    return cuda_test_skip() ? 0 : -1;
}

/* Runs the picked sub-tests (all when none was named), each under a
 * "# name" line. */
static __attribute__((unused)) void
cuda_test_run(const cuda_subtest *t, size_t n, const int *want)
{
    size_t  k;
    int     any = 0;

    for (k = 0; k < n; k++) {
        any |= want[k];
    }
    for (k = 0; k < n; k++) {
        if (!any || want[k]) {
            printf("# %s\n", t[k].name);
            fflush(stdout);
            t[k].run();
        }
    }
}

/* The whole main of a program of sub-tests that compare against the CPU
 * backend and make checkpoints with build/clef: the start, the skip when
 * build/clef is not built, the kernels' setup, a CPU pool in *pool for
 * the sub-tests, the run, the TAP status. */
static __attribute__((unused)) int
cuda_test_main(int argc, char **argv, const cuda_subtest *t, size_t n,
    clef_cpu_pool **pool)
{
    clef_error  err;
    int         rc, want[64];

    if (n > 64) {
        printf("Bail out! %zu sub-tests, at most 64\n", n);
        return 2;
    }
    if ((rc = cuda_test_start(argc, argv, t, n, want)) >= 0) {
        return rc;
    }
    if (access("build/clef", X_OK) != 0) {
        printf("1..0 # SKIP build/clef is not built\n");
        return 0;
    }
    die_cuda(clef_k_setup(), "kernel setup");
    memset(&err, 0, sizeof(err));
    *pool = clef_cpu_pool_create(0, &err);
    if (*pool == NULL) {
        printf("Bail out! %s\n", err.message);
        return 1;
    }
    cuda_test_run(t, n, want);
    clef_cpu_pool_destroy(*pool);
    return check_done();
}

#endif
