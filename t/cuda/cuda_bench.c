/*
 * cuda_bench: times the CUDA backend on a checkpoint (made for the
 * clef-flash shape: `clef mkmodel --shape clef-flash`).
 *
 *   cuda_bench MODEL_DIR [--out DIR] [--latency-runs N] [--quick]
 *
 *  latency     one 328-token request with 3 questions (2, 4 and 5 options),
 *              end to end (metadata upload, graph replay, logits back):
 *              p50/p90/p99 over N runs (default 300) after 20 warm-ups, and
 *              the same without CUDA graphs
 *  throughput  packed batches of records of 256..1024 tokens filling 4k, 16k
 *              and 64k token budgets: tokens/s and the fraction of 790 TFLOP/s
 *              at 13.84 GFLOP per token (the 9B's dense FLOPs)
 *  long        one record of 65,536 tokens
 *  layers      time per layer type (embedding, GDN, attention, MLP, head)
 *              from CUDA events, per forward
 *
 * The table goes to stdout, the numbers as JSON to DIR/cuda_bench.json.
 * Token ids and spans are synthetic: the timing depends only on shapes.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "clef_cuda.h"
#include "clock.h"
#include "splitmix64.h"

#define GFLOP_PER_TOKEN  13.84
#define PEAK_TFLOPS      790.0

static const char  *prof_names[CLEF_CUDA_PROF_COUNT] = {
    "embed", "gdn", "attention", "mlp", "head"
};

static uint64_t  rng = 12345;

static uint64_t
rnd(void)
{
    return clef_splitmix64(&rng);
}

static int
cmp_double(const void *a, const void *b)
{
    double  x = *(const double *) a, y = *(const double *) b;

    return x < y ? -1 : x > y;
}

static double
pct(const double *sorted, int n, double p)
{
    int  i = (int) ceil(p / 100.0 * n) - 1;

    return sorted[i < 0 ? 0 : i >= n ? n - 1 : i];
}

/* A record of len tokens shaped like a request: 3 questions (noul with 2
 * options, choice with 4, score with 5) whose spans sit in the schema at
 * the end, 8 tokens per instruction and 10 per option. */
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
    clef_record  *recs;
    const clef_record **ptrs;
    int32_t      *cu;
    clef_batch    batch;
    int           n;
    long          tokens;
} bench_batch;

static int
batch_make(bench_batch *b, const int *lens, int n, int vocab)
{
    int  i;

    memset(b, 0, sizeof(*b));
    b->recs = calloc((size_t) n, sizeof(clef_record));
    b->ptrs = calloc((size_t) n, sizeof(*b->ptrs));
    b->cu = calloc((size_t) n + 1, sizeof(int32_t));
    if (b->recs == NULL || b->ptrs == NULL || b->cu == NULL) {
        return -1;
    }
    for (i = 0; i < n; i++) {
        if (make_record(&b->recs[i], lens[i], vocab) != 0) {
            return -1;
        }
        b->ptrs[i] = &b->recs[i];
        b->tokens += lens[i];
    }
    b->n = n;
    clef_batch_init(&b->batch, b->ptrs, n, b->cu);
    return 0;
}

static void
batch_free(bench_batch *b)
{
    int  i;

    for (i = 0; i < b->n; i++) {
        clef_record_free(&b->recs[i]);
    }
    free(b->recs);
    free(b->ptrs);
    free(b->cu);
}

/* Median seconds of `runs` forwards after `warm` untimed ones. */
static int
time_forward(clef_backend *g, bench_batch *b, int warm, int runs, double *out,
    double *sorted_all)
{
    float       *probs = malloc(sizeof(float) * (size_t) clef_batch_options(&b->batch));
    double      *t = sorted_all != NULL ? sorted_all : malloc(sizeof(double) * (size_t) runs);
    clef_error   err;
    int          i;

    memset(&err, 0, sizeof(err));
    for (i = 0; i < warm + runs; i++) {
        double  t0 = clef_clock_seconds();

        if (clef_cuda_forward_probs(g, &b->batch, NULL, probs, &err) != 0) {
            fprintf(stderr, "cuda_bench: forward of %ld tokens: %s\n", b->tokens,
                    err.message);
            free(probs);
            if (sorted_all == NULL) {
                free(t);
            }
            return -1;
        }
        if (i >= warm) {
            t[i - warm] = clef_clock_seconds() - t0;
        }
    }
    qsort(t, (size_t) runs, sizeof(double), cmp_double);
    *out = pct(t, runs, 50);
    free(probs);
    if (sorted_all == NULL) {
        free(t);
    }
    return 0;
}

/* Per-layer-type milliseconds per forward over `runs` profiled forwards. */
static int
profile(clef_backend *g, bench_batch *b, int runs, double ms[CLEF_CUDA_PROF_COUNT])
{
    clef_error  err;
    double      dummy;
    int         i, n;

    memset(&err, 0, sizeof(err));
    clef_cuda_set_profile(g, 1);
    clef_cuda_profile_reset(g);
    if (time_forward(g, b, 0, runs, &dummy, NULL) != 0
        || clef_cuda_profile_read(g, ms, &n, &err) != 0 || n == 0)
    {
        clef_cuda_set_profile(g, 0);
        return -1;
    }
    for (i = 0; i < CLEF_CUDA_PROF_COUNT; i++) {
        ms[i] /= n;
    }
    clef_cuda_set_profile(g, 0);
    return 0;
}

static void
json_layers(FILE *f, const char *key, const double *ms)
{
    int  i;

    fprintf(f, "  \"%s\": {", key);
    for (i = 0; i < CLEF_CUDA_PROF_COUNT; i++) {
        fprintf(f, "%s\"%s\": %.4f", i ? ", " : "", prof_names[i], ms[i]);
    }
    fprintf(f, "}");
}

static void
print_layers(const char *what, const double *ms)
{
    double  total = 0;
    int     i;

    for (i = 0; i < CLEF_CUDA_PROF_COUNT; i++) {
        total += ms[i];
    }
    printf("%-22s", what);
    for (i = 0; i < CLEF_CUDA_PROF_COUNT; i++) {
        printf(" %9.3f", ms[i]);
    }
    printf(" %9.3f\n", total);
}

int
main(int argc, char **argv)
{
    static const long  budgets[3] = { 4096, 16384, 65536 };
    const char        *dir = NULL, *out = NULL;
    int                lat_runs = 300, quick = 0, i, k, vocab;
    clef_model        *m;
    clef_backend      *g = NULL;
    clef_backend_opts  o = { 0, 0 };
    clef_error         err;
    struct cudaDeviceProp  prop;
    bench_batch        req, tb[3], lg;
    double            *lat, lat_eager, p50, t_open, tput_s[3], long_s;
    double             prof_req[CLEF_CUDA_PROF_COUNT], prof_16k[CLEF_CUDA_PROF_COUNT];
    double             prof_long[CLEF_CUDA_PROF_COUNT];
    int                req_len = 328;
    long               replays, captures;
    FILE              *jf = NULL;

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--out") == 0 && i + 1 < argc) {
            out = argv[++i];
        } else if (strcmp(argv[i], "--latency-runs") == 0 && i + 1 < argc) {
            lat_runs = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--quick") == 0) {
            quick = 1;
        } else if (argv[i][0] != '-' && dir == NULL) {
            dir = argv[i];
        } else {
            fprintf(stderr, "usage: cuda_bench MODEL_DIR [--out DIR] "
                            "[--latency-runs N] [--quick]\n");
            return 2;
        }
    }
    if (dir == NULL || lat_runs < 1) {
        fprintf(stderr, "usage: cuda_bench MODEL_DIR [--out DIR] [--latency-runs N] "
                        "[--quick]\n");
        return 2;
    }

    memset(&err, 0, sizeof(err));
    t_open = clef_clock_seconds();
    m = clef_model_open(dir, 0, &err);
    if (m == NULL || clef_cuda_backend_ops.open(m, &o, &g, &err) != 0) {
        fprintf(stderr, "cuda_bench: %s\n", err.message);
        return 1;
    }
    t_open = clef_clock_seconds() - t_open;
    cudaGetDeviceProperties(&prop, 0);
    vocab = clef_model_text_config(m)->vocab_size;

    /* Latency: one request, graphs (default), then eager. */
    if (batch_make(&req, &req_len, 1, vocab) != 0) {
        fprintf(stderr, "cuda_bench: out of memory\n");
        return 1;
    }
    lat = malloc(sizeof(double) * (size_t) lat_runs);
    if (lat == NULL || time_forward(g, &req, 20, lat_runs, &p50, lat) != 0) {
        return 1;
    }
    clef_cuda_set_graphs(g, 0);
    if (time_forward(g, &req, 5, quick ? 20 : 50, &lat_eager, NULL) != 0) {
        return 1;
    }
    clef_cuda_set_graphs(g, 1);
    if (profile(g, &req, 10, prof_req) != 0) {
        return 1;
    }

    /* Throughput: records of 256..1024 tokens up to each budget. */
    for (k = 0; k < 3; k++) {
        int   lens[1024], n = 0;
        long  used = 0;

        while (used < budgets[k] && n < 1024) {
            int  l = 256 + (int) (rnd() % 769);

            if (used + l > budgets[k]) {
                l = (int) (budgets[k] - used);
                if (l < 160) {
                    break;
                }
            }
            lens[n++] = l;
            used += l;
        }
        if (batch_make(&tb[k], lens, n, vocab) != 0
            || time_forward(g, &tb[k], 2, quick ? 3 : (k < 2 ? 10 : 5), &tput_s[k], NULL) != 0)
        {
            return 1;
        }
    }
    if (profile(g, &tb[1], 3, prof_16k) != 0) {
        return 1;
    }

    /* One long record. */
    {
        int  l = 65536;

        if (batch_make(&lg, &l, 1, vocab) != 0
            || time_forward(g, &lg, 1, quick ? 1 : 3, &long_s, NULL) != 0
            || profile(g, &lg, 1, prof_long) != 0)
        {
            return 1;
        }
    }
    clef_cuda_graph_stats(g, &replays, &captures);

    /* Table. */
    printf("device: %s, %d SMs; model %s opened in %.1f s\n", prop.name,
           prop.multiProcessorCount, dir, t_open);
    printf("\nlatency, 328 tokens, 3 questions (end to end, ms)\n");
    printf("  graphs: p50 %.3f  p90 %.3f  p99 %.3f  min %.3f  (%d runs)\n",
           pct(lat, lat_runs, 50) * 1e3, pct(lat, lat_runs, 90) * 1e3,
           pct(lat, lat_runs, 99) * 1e3, lat[0] * 1e3, lat_runs);
    printf("  eager:  p50 %.3f\n", lat_eager * 1e3);
    printf("\nthroughput (packed records of 256..1024 tokens)\n");
    printf("  %-8s %8s %8s %10s %12s %8s %6s\n", "budget", "tokens", "records", "ms",
           "tokens/s", "TFLOP/s", "MFU");
    for (k = 0; k < 3; k++) {
        double  tps = tb[k].tokens / tput_s[k];

        printf("  %-8ld %8ld %8d %10.2f %12.0f %8.1f %5.1f%%\n", budgets[k], tb[k].tokens,
               tb[k].n, tput_s[k] * 1e3, tps, tps * GFLOP_PER_TOKEN / 1e3,
               100.0 * tps * GFLOP_PER_TOKEN / 1e3 / PEAK_TFLOPS);
    }
    printf("\nlong record: 65536 tokens in %.1f ms (%.0f tokens/s)\n", long_s * 1e3,
           65536 / long_s);
    printf("\nms per forward by layer type (CUDA events, eager)\n");
    printf("%-22s", "");
    for (i = 0; i < CLEF_CUDA_PROF_COUNT; i++) {
        printf(" %9s", prof_names[i]);
    }
    printf(" %9s\n", "total");
    print_layers("  328-token request", prof_req);
    print_layers("  16k batch", prof_16k);
    print_layers("  65536-token record", prof_long);
    printf("\ngraphs: %ld captures, %ld replays\n", captures, replays);

    if (out != NULL) {
        char  path[1024];

        snprintf(path, sizeof(path), "%s/cuda_bench.json", out);
        jf = fopen(path, "w");
    }
    if (jf != NULL) {
        fprintf(jf, "{\n  \"device\": \"%s\",\n  \"sms\": %d,\n  \"model\": \"%s\",\n",
                prop.name, prop.multiProcessorCount, dir);
        fprintf(jf, "  \"open_s\": %.3f,\n", t_open);
        fprintf(jf, "  \"latency_328\": {\"runs\": %d, \"p50_ms\": %.4f, \"p90_ms\": %.4f, "
                    "\"p99_ms\": %.4f, \"min_ms\": %.4f, \"eager_p50_ms\": %.4f},\n",
                lat_runs, pct(lat, lat_runs, 50) * 1e3, pct(lat, lat_runs, 90) * 1e3,
                pct(lat, lat_runs, 99) * 1e3, lat[0] * 1e3, lat_eager * 1e3);
        fprintf(jf, "  \"gflop_per_token\": %.2f,\n  \"peak_tflops\": %.0f,\n",
                GFLOP_PER_TOKEN, PEAK_TFLOPS);
        fprintf(jf, "  \"throughput\": [\n");
        for (k = 0; k < 3; k++) {
            double  tps = tb[k].tokens / tput_s[k];

            fprintf(jf, "    {\"budget\": %ld, \"tokens\": %ld, \"records\": %d, "
                        "\"ms\": %.3f, \"tokens_per_s\": %.1f, \"tflops\": %.2f, "
                        "\"mfu\": %.4f}%s\n", budgets[k], tb[k].tokens, tb[k].n,
                    tput_s[k] * 1e3, tps, tps * GFLOP_PER_TOKEN / 1e3,
                    tps * GFLOP_PER_TOKEN / 1e3 / PEAK_TFLOPS, k < 2 ? "," : "");
        }
        fprintf(jf, "  ],\n  \"long_65536\": {\"ms\": %.3f, \"tokens_per_s\": %.1f},\n",
                long_s * 1e3, 65536 / long_s);
        fprintf(jf, "  \"layer_ms_per_forward\": {\n");
        json_layers(jf, "request_328", prof_req);
        fprintf(jf, ",\n");
        json_layers(jf, "batch_16k", prof_16k);
        fprintf(jf, ",\n");
        json_layers(jf, "record_65536", prof_long);
        fprintf(jf, "\n  },\n  \"graphs\": {\"captures\": %ld, \"replays\": %ld}\n}\n",
                captures, replays);
        fclose(jf);
    }

    batch_free(&req);
    for (k = 0; k < 3; k++) {
        batch_free(&tb[k]);
    }
    batch_free(&lg);
    free(lat);
    clef_cuda_backend_ops.close(g);
    clef_model_close(m);
    return 0;
}
