/*
 * cuda_bench_tp: tensor parallelism on a checkpoint (the clef-flash shape
 * of device-check.sh): tokens/s at a fixed token budget for tp = 1 and
 * tp = 2, and the share of each forward spent in the all-reduces.
 *
 *   cuda_bench_tp MODEL_DIR [--budget TOKENS] [--runs N]
 *
 * Configurations, one after another (one replica open at a time, so that
 * one H200 holds each):
 *   tp=1               the unsharded backend (the baseline)
 *   tp=2 same-device   two logical ranks of device 0: the sharded forward
 *                      and its all-reduces (a sum kernel on one GPU, with
 *                      cross-stream events); on one GPU the two ranks share
 *                      its SMs, so this measures overhead, not speed-up
 *   tp=2 nccl          devices 0 and 1, where at least two GPUs exist
 * For each: open time; the packed batch (records of 256..1024 tokens up to
 * the budget, default 16384) timed eagerly over N runs (default 4) after
 * one warm-up: median ms and tokens/s; one profiled forward: ms per layer
 * type from CUDA events on rank 0's stream and the all-reduce share =
 * comm / total (the wait for the slowest rank included); and a check that
 * the probabilities stay within 2e-2 of tp=1's (the bf16 contract).
 * Figures are printed as measured (stdout flushed); exit 1 when a check
 * failed or a configuration could not run, 2 for usage.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "answer.h"
#include "clef_cuda.h"
#include "clock.h"
#include "splitmix64.h"

#define PROB_TOL  2e-2

static uint64_t  rng = 4242;
static int       failed;

static uint64_t
rnd(void)
{
    return clef_splitmix64(&rng);
}

/* A record of len tokens with 3 questions (2, 4 and 5 options) near its
 * end, as cuda_bench's records. */
static int
make_record(clef_record *r, int len, int vocab)
{
    static const int  nopt[3] = { 2, 4, 5 };
    int               q, o, i, p, no = 0;

    memset(r, 0, sizeof(*r));
    for (i = 0; i < len; i++) {
        if (clef_ids_push(&r->ids, (int32_t) (rnd() % (uint64_t) vocab)) != 0) {
            return -1;
        }
    }
    r->n_questions = 3;
    r->n_options = 11;
    r->question_spans = calloc(3, sizeof(clef_span));
    r->question_types = calloc(3, sizeof(clef_qtype));
    r->option_offset = calloc(4, sizeof(int));
    r->option_spans = calloc(11, sizeof(clef_span));
    if (r->question_spans == NULL || r->question_types == NULL
        || r->option_offset == NULL || r->option_spans == NULL)
    {
        return -1;
    }
    p = len > 150 ? len - 150 : 0;
    for (q = 0; q < 3; q++) {
        r->question_types[q] = (clef_qtype) q;
        r->question_spans[q].start = p < len ? p : len - 1;
        p += 8;
        r->question_spans[q].end = p < len ? p : len;
        r->option_offset[q] = no;
        for (o = 0; o < nopt[q]; o++) {
            r->option_spans[no].start = p < len ? p : len - 1;
            p += 10;
            r->option_spans[no].end = p < len ? p : len;
            no++;
        }
    }
    r->option_offset[3] = no;
    return 0;
}

typedef struct {
    clef_record         *recs;
    const clef_record  **ptrs;
    int32_t             *cu;
    clef_batch           batch;
    int                  n, N;
    long                 tokens;
} batch_t;

static int
batch_make(batch_t *b, long budget, int vocab)
{
    int   lens[4096], n = 0, i;
    long  used = 0;

    while (used < budget && n < 4096) {
        int  l = 256 + (int) (rnd() % 769);

        if (used + l > budget) {
            l = (int) (budget - used);
            if (l < 160) {
                break;
            }
        }
        lens[n++] = l;
        used += l;
    }
    memset(b, 0, sizeof(*b));
    b->recs = calloc((size_t) n + 1, sizeof(clef_record));
    b->ptrs = calloc((size_t) n + 1, sizeof(*b->ptrs));
    b->cu = calloc((size_t) n + 1, sizeof(int32_t));
    if (b->recs == NULL || b->ptrs == NULL || b->cu == NULL) {
        return -1;
    }
    for (i = 0; i < n; i++) {
        if (make_record(&b->recs[i], lens[i], vocab) != 0) {
            return -1;
        }
        b->ptrs[i] = &b->recs[i];
    }
    b->n = n;
    b->tokens = used;
    clef_batch_init(&b->batch, b->ptrs, n, b->cu);
    b->N = clef_batch_options(&b->batch);
    return 0;
}

static void
batch_free(batch_t *b)
{
    int  i;

    for (i = 0; i < b->n; i++) {
        clef_record_free(&b->recs[i]);
    }
    free(b->recs);
    free(b->ptrs);
    free(b->cu);
}

static void
probs(const batch_t *b, const float *logits, float *p)
{
    int  r, off = 0;

    for (r = 0; r < b->n; r++) {
        clef_answer_softmax(b->ptrs[r], logits + off, p + off);
        off += b->ptrs[r]->n_options;
    }
}

static int
cmp_double(const void *a, const void *b)
{
    double  x = *(const double *) a, y = *(const double *) b;

    return x < y ? -1 : x > y;
}

/* One configuration: open, time, profile; is_ref: its probabilities
 * become ref_p, else they are compared with it. */
static int
run(clef_model *m, const char *name, int tp, const int *devs, const char *comm,
    batch_t *b, int runs, float *ref_p, int is_ref)
{
    static const char  *names[CLEF_CUDA_PROF_COUNT] = {
        "embed", "gdn", "attention", "mlp", "head", "comm"
    };
    clef_backend_opts   o = { .threads = 0 };
    clef_backend       *g = NULL;
    clef_error          err;
    double              t0, open_s, t[64], ms[CLEF_CUDA_PROF_COUNT], total = 0, d = 0;
    float              *l = malloc(sizeof(float) * (size_t) b->N);
    float              *p = malloc(sizeof(float) * (size_t) b->N);
    int                 i, n = 0, rc = 0;

    memset(&err, 0, sizeof(err));
    o.device = devs[0];
    o.tp = tp;
    o.n_devices = tp;
    o.devices = devs;
    t0 = clef_clock_seconds();
    if (l == NULL || p == NULL || clef_cuda_open_tp(m, &o, comm, &g, &err) != 0) {
        printf("%-20s could not open: %s\n", name, err.message);
        free(l);
        free(p);
        failed = 1;
        return -1;
    }
    open_s = clef_clock_seconds() - t0;
    printf("%-20s opened in %.1f s: %s\n", name, open_s,
           clef_cuda_backend_ops.describe(g));
    fflush(stdout);
    clef_cuda_set_graphs(g, 0);

    for (i = 0; rc == 0 && i < runs + 1; i++) {
        t0 = clef_clock_seconds();
        rc = clef_cuda_backend_ops.forward(g, &b->batch, l, &err);
        if (i > 0) {
            t[i - 1] = clef_clock_seconds() - t0;
        }
    }
    if (rc != 0) {
        printf("%-20s forward failed: %s\n", name, err.message);
        failed = 1;
        clef_cuda_backend_ops.close(g);
        free(l);
        free(p);
        return -1;
    }
    qsort(t, (size_t) runs, sizeof(double), cmp_double);
    printf("  %-18s %ld tokens in %d records: %9.2f ms median of %d, %10.0f tokens/s\n",
           name, b->tokens, b->n, t[runs / 2] * 1e3, runs, b->tokens / t[runs / 2]);

    probs(b, l, p);
    if (is_ref) {
        memcpy(ref_p, p, sizeof(float) * (size_t) b->N);
    } else {
        for (i = 0; i < b->N; i++) {
            double  e = fabs((double) p[i] - ref_p[i]);

            d = e > d || e != e ? e : d;
        }
        printf("check: %s: %s probabilities within %g of tp=1 (%.3g)\n",
               d <= PROB_TOL ? "ok" : "FAILED", name, PROB_TOL, d);
        failed |= !(d <= PROB_TOL);
    }

    clef_cuda_profile_reset(g);
    clef_cuda_set_profile(g, 1);
    rc = clef_cuda_backend_ops.forward(g, &b->batch, l, &err);
    if (rc == 0) {
        rc = clef_cuda_profile_read(g, ms, &n, &err);
    }
    clef_cuda_set_profile(g, 0);
    if (rc == 0 && n > 0) {
        printf("  %-18s ms by layer type (CUDA events, rank 0):", name);
        for (i = 0; i < CLEF_CUDA_PROF_COUNT; i++) {
            total += ms[i] / n;
            printf(" %s %.2f", names[i], ms[i] / n);
        }
        printf("; all-reduce share %.1f%%\n",
               total > 0 ? 100.0 * ms[CLEF_CUDA_PROF_COMM] / n / total : 0.0);
    } else {
        printf("  %-18s profile failed: %s\n", name, err.message);
        failed = 1;
    }
    fflush(stdout);
    clef_cuda_backend_ops.close(g);
    free(l);
    free(p);
    return 0;
}

int
main(int argc, char **argv)
{
    static const int   zeros[2] = { 0, 0 }, pair[2] = { 0, 1 };
    const char        *dir = NULL;
    long               budget = 16384;
    int                runs = 4, i, n_dev = 0;
    clef_model        *m;
    clef_error         err;
    batch_t            b;
    float             *ref_p;

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--budget") == 0 && i + 1 < argc) {
            budget = atol(argv[++i]);
        } else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) {
            runs = atoi(argv[++i]);
        } else if (argv[i][0] != '-' && dir == NULL) {
            dir = argv[i];
        } else {
            dir = NULL;
            break;
        }
    }
    if (dir == NULL || budget < 256 || runs < 1 || runs > 64) {
        fprintf(stderr, "usage: cuda_bench_tp MODEL_DIR [--budget TOKENS] "
                        "[--runs 1..64]\n");
        return 2;
    }
    memset(&err, 0, sizeof(err));
    m = clef_model_open(dir, 0, &err);
    if (m == NULL) {
        printf("cuda_bench_tp: %s\n", err.message);
        return 1;
    }
    if (batch_make(&b, budget, clef_model_text_config(m)->vocab_size) != 0
        || (ref_p = malloc(sizeof(float) * (size_t) b.N)) == NULL)
    {
        printf("cuda_bench_tp: out of memory\n");
        return 1;
    }
    if (cudaGetDeviceCount(&n_dev) != cudaSuccess) {
        n_dev = 0;
    }
    printf("tensor parallelism, %ld-token budget, eager, %d device%s\n", budget, n_dev,
           n_dev == 1 ? "" : "s");
    fflush(stdout);

    if (run(m, "tp=1", 1, zeros, NULL, &b, runs, ref_p, 1) == 0) {
        run(m, "tp=2 same-device", 2, zeros, NULL, &b, runs, ref_p, 0);
        if (n_dev >= 2) {
            run(m, "tp=2 nccl", 2, pair, NULL, &b, runs, ref_p, 0);
        } else {
            printf("tp=2 nccl           not run: one GPU (NCCL needs a device per "
                   "rank)\n");
        }
    }
    free(ref_p);
    batch_free(&b);
    clef_model_close(m);
    return failed ? 1 : 0;
}
