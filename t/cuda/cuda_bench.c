/*
 * cuda_bench: times the CUDA backend on a checkpoint (made for the
 * clef-flash shape: `clef mkmodel --shape clef-flash`) and checks its own
 * results on the way.
 *
 *   cuda_bench MODEL_DIR [--out DIR] [--latency-runs N] [--quick]
 *
 * In this order, each figure printed (and stdout flushed) as soon as it is
 * measured, and DIR/cuda_bench.json rewritten after each section, so that a
 * run stopped by a time limit still reports everything before it:
 *
 *  checks      on the 328-token request with 3 questions (2, 4 and 5
 *              options): finite probabilities (the host's softmax of the
 *              logits, as answers take it) that sum to 1 per question; the
 *              graph replay gives the eager logits bit for bit; the request
 *              packed inside a 4k batch gives its lone logits bit for bit
 *              (cuda/README.md, "Determinism"); no GEMM fell back to a
 *              row-dependent algorithm
 *  images      (a checkpoint with a vision tower) eager, random pixels: the
 *              request with one 224 x 320 image (280 patches, 70 tokens):
 *              p50/p90/p99; with four 1024 x 1024 images (16,384 patches,
 *              4,096 tokens): the forward, and the tower alone
 *              (clef_cuda_vision_features) in patches/s; finite
 *              probabilities
 *  latency     that request end to end (metadata upload, launches, logits
 *              back): p50/p90/p99 over N runs (default 300), eager and graph
 *              replay.  Production sees the eager figure: a graph replays
 *              only when a launch shape repeats (cuda/graphs.c), and packed
 *              production batches almost never do
 *  throughput  packed batches of records of 256..1024 tokens filling 4k,
 *              16k and 64k token budgets, eager: tokens/s and the fraction
 *              of 790 TFLOP/s at 13.84 GFLOP per token (the 9B's dense FLOPs)
 *  long        one record of 65,536 tokens, eager
 *  layers      ms per forward by layer type (embedding, GDN, attention,
 *              MLP, head) from CUDA events, eager
 *
 * Token ids and spans are synthetic: the timing depends only on shapes.
 * Exit status: 0, 1 when a check failed or a forward could not run (the
 * figures measured before are printed), 2 for usage.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "base/clock.h"
#include "base/splitmix64.h"
#include "clef_cuda.h"
#include "protocol/answer.h"
#include "protocol/encode.h"

#define BENCH_SEED  12345
#include "bench_batch.h"

#define GFLOP_PER_TOKEN  13.84
#define PEAK_TFLOPS      790.0
#define REQ_LEN          328

static const char  *prof_names[CLEF_CUDA_PROF_COUNT] = {
    "embed", "gdn", "attention", "mlp", "head", "comm"
};
static const long   budgets[3] = { 4096, 16384, 65536 };

/* ---- results, printed as they come and kept for the JSON ---------------- */

typedef struct {
    int     have;
    double  p50, p90, p99, min;
    int     runs;
} lat_fig;

typedef struct {
    char     device[256];
    int      sms;
    const char *model;
    double   open_s;
    int      checks_run, checks_failed;
    double   prob_sum_err;            /* max |sum - 1| over questions */
    int      probs_finite, graph_equal, batch_equal;
    long     fallbacks, heuristics;
    lat_fig  eager, graph;
    int      have_tput[3];
    long     tput_tokens[3];
    int      tput_records[3];
    double   tput_s[3];
    int      have_long;
    double   long_s;
    int      have_prof[3];
    double   prof[3][CLEF_CUDA_PROF_COUNT];
    long     replays, captures;
    lat_fig  img1;                    /* the request with one image */
    int      have_img4;
    double   img4_s, tower4_s;        /* four 1024 x 1024 images */
    const char *stopped;              /* what failed, NULL when all ran */
} results;

static results     res;
static const char *out_dir;

static void
json_lat(FILE *f, const char *key, const lat_fig *l)
{
    if (!l->have) {
        fprintf(f, "    \"%s\": null", key);
        return;
    }
    fprintf(f, "    \"%s\": {\"runs\": %d, \"p50_ms\": %.4f, \"p90_ms\": %.4f, "
               "\"p99_ms\": %.4f, \"min_ms\": %.4f}", key, l->runs, l->p50 * 1e3,
            l->p90 * 1e3, l->p99 * 1e3, l->min * 1e3);
}

/* The whole file again, through a rename, so that a reader never sees half
 * of it. */
static void
json_write(void)
{
    static const char  *pk[3] = { "request_328", "batch_16k", "record_65536" };
    char                path[1024], tmp[1100];
    FILE               *f;
    int                 k, i;

    if (out_dir == NULL) {
        return;
    }
    snprintf(path, sizeof(path), "%s/cuda_bench.json", out_dir);
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    f = fopen(tmp, "w");
    if (f == NULL) {
        return;
    }
    fprintf(f, "{\n  \"device\": \"%s\",\n  \"sms\": %d,\n  \"model\": \"%s\",\n",
            res.device, res.sms, res.model);
    fprintf(f, "  \"open_s\": %.3f,\n  \"stopped\": %s%s%s,\n", res.open_s,
            res.stopped ? "\"" : "", res.stopped ? res.stopped : "null",
            res.stopped ? "\"" : "");
    fprintf(f, "  \"checks\": {\"run\": %d, \"failed\": %d, \"probs_finite\": %d, "
               "\"prob_sum_max_err\": %.3g, \"graph_equals_eager\": %d, "
               "\"packed_equals_alone\": %d, \"gemm_fallbacks\": %ld},\n",
            res.checks_run, res.checks_failed, res.probs_finite, res.prob_sum_err,
            res.graph_equal, res.batch_equal, res.fallbacks);
    fprintf(f, "  \"latency_328\": {\n    \"production\": \"eager\",\n");
    json_lat(f, "eager", &res.eager);
    fprintf(f, ",\n");
    json_lat(f, "graph", &res.graph);
    fprintf(f, "\n  },\n  \"images\": {\n");
    json_lat(f, "one_image_328", &res.img1);
    if (res.have_img4) {
        fprintf(f, ",\n    \"four_images_ms\": %.3f, \"tower_16384_patches_ms\": %.3f, "
                   "\"tower_patches_per_s\": %.0f", res.img4_s * 1e3,
                res.tower4_s * 1e3, 16384 / res.tower4_s);
    }
    fprintf(f, "\n  },\n  \"gflop_per_token\": %.2f,\n  \"peak_tflops\": %.0f,\n",
            GFLOP_PER_TOKEN, PEAK_TFLOPS);
    fprintf(f, "  \"throughput\": [");
    for (k = 0; k < 3; k++) {
        double  tps;

        if (!res.have_tput[k]) {
            continue;
        }
        tps = res.tput_tokens[k] / res.tput_s[k];
        fprintf(f, "%s\n    {\"budget\": %ld, \"tokens\": %ld, \"records\": %d, "
                   "\"ms\": %.3f, \"tokens_per_s\": %.1f, \"tflops\": %.2f, "
                   "\"mfu\": %.4f}", k ? "," : "", budgets[k], res.tput_tokens[k],
                res.tput_records[k], res.tput_s[k] * 1e3, tps,
                tps * GFLOP_PER_TOKEN / 1e3, tps * GFLOP_PER_TOKEN / 1e3 / PEAK_TFLOPS);
    }
    fprintf(f, "\n  ],\n");
    if (res.have_long) {
        fprintf(f, "  \"long_65536\": {\"ms\": %.3f, \"tokens_per_s\": %.1f},\n",
                res.long_s * 1e3, 65536 / res.long_s);
    } else {
        fprintf(f, "  \"long_65536\": null,\n");
    }
    fprintf(f, "  \"layer_ms_per_forward\": {");
    for (k = 0; k < 3; k++) {
        fprintf(f, "%s\n    \"%s\": ", k ? "," : "", pk[k]);
        if (!res.have_prof[k]) {
            fprintf(f, "null");
            continue;
        }
        fprintf(f, "{");
        for (i = 0; i < CLEF_CUDA_PROF_COUNT; i++) {
            fprintf(f, "%s\"%s\": %.4f", i ? ", " : "", prof_names[i], res.prof[k][i]);
        }
        fprintf(f, "}");
    }
    fprintf(f, "\n  },\n  \"graphs\": {\"captures\": %ld, \"replays\": %ld}\n}\n",
            res.captures, res.replays);
    fclose(f);
    rename(tmp, path);
}

static void
say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void
say(const char *fmt, ...)
{
    va_list  ap;

    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    fflush(stdout);
}

static void
check(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
check(int ok, const char *fmt, ...)
{
    va_list  ap;

    res.checks_run++;
    res.checks_failed += !ok;
    printf("check: %s: ", ok ? "ok" : "FAILED");
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
}

/* ---- timing ------------------------------------------------------------- */

static double
pct(const double *sorted, int n, double p)
{
    int  i = (int) ceil(p / 100.0 * n) - 1;

    return sorted[i < 0 ? 0 : i >= n ? n - 1 : i];
}

static int
forward(clef_backend *g, bench_batch *b, float *logits)
{
    clef_error  err;

    memset(&err, 0, sizeof(err));
    if (clef_cuda_backend_ops.forward(g, &b->batch, logits, &err) != 0) {
        say("cuda_bench: forward of %ld tokens in %d records: %s\n", b->tokens, b->n,
            err.message);
        return -1;
    }
    return 0;
}

/* `runs` timed forwards after `warm` untimed ones; t[runs] sorted. */
static int
time_forward(clef_backend *g, bench_batch *b, int warm, int runs, double *t)
{
    float  *logits = malloc(sizeof(float) * (size_t) clef_batch_options(&b->batch));
    int     i, rc = 0;

    for (i = 0; rc == 0 && i < warm + runs; i++) {
        double  t0 = clef_clock_seconds();

        rc = logits == NULL ? -1 : forward(g, b, logits);
        if (i >= warm) {
            t[i - warm] = clef_clock_seconds() - t0;
        }
    }
    free(logits);
    if (rc == 0) {
        qsort(t, (size_t) runs, sizeof(double), cmp_double);
    }
    return rc;
}

static int
latency(clef_backend *g, bench_batch *req, int warm, int runs, const char *what,
    lat_fig *l)
{
    double  *t = malloc(sizeof(double) * (size_t) runs);

    if (t == NULL || time_forward(g, req, warm, runs, t) != 0) {
        free(t);
        return -1;
    }
    l->have = 1;
    l->runs = runs;
    l->p50 = pct(t, runs, 50);
    l->p90 = pct(t, runs, 90);
    l->p99 = pct(t, runs, 99);
    l->min = t[0];
    say("  %-44s p50 %8.3f  p90 %8.3f  p99 %8.3f  min %8.3f ms  (%d runs)\n", what,
        l->p50 * 1e3, l->p90 * 1e3, l->p99 * 1e3, l->min * 1e3, runs);
    free(t);
    return 0;
}

/* Per-layer-type ms per forward over `runs` profiled (eager) forwards. */
static int
profile(clef_backend *g, bench_batch *b, int runs, const char *what, double *ms)
{
    clef_error  err;
    double     *t = malloc(sizeof(double) * (size_t) runs), total = 0;
    int         i, n = 0, rc;

    memset(&err, 0, sizeof(err));
    clef_cuda_set_profile(g, 1);
    clef_cuda_profile_reset(g);
    rc = t == NULL || time_forward(g, b, 0, runs, t) != 0
         || clef_cuda_profile_read(g, ms, &n, &err) != 0 || n == 0 ? -1 : 0;
    clef_cuda_set_profile(g, 0);
    free(t);
    if (rc != 0) {
        return -1;
    }
    say("  %-22s", what);
    for (i = 0; i < CLEF_CUDA_PROF_COUNT; i++) {
        ms[i] /= n;
        total += ms[i];
        say(" %9.3f", ms[i]);
    }
    say(" %9.3f\n", total);
    return 0;
}

static void
prof_header(void)
{
    int  i;

    say("\nms per forward by layer type (CUDA events, eager)\n%-24s", "");
    for (i = 0; i < CLEF_CUDA_PROF_COUNT; i++) {
        say(" %9s", prof_names[i]);
    }
    say(" %9s\n", "total");
}

/* ---- checks ------------------------------------------------------------- */

static void
check_probs(const bench_batch *b, const float *logits)
{
    int     r, q, o, off = 0, finite = 1;
    double  worst = 0;
    float  *p = malloc(sizeof(float) * (size_t) clef_batch_options(&b->batch));

    if (p == NULL) {
        return;
    }
    for (r = 0; r < b->n; r++) {
        const clef_record  *rec = b->ptrs[r];

        clef_answer_softmax(rec, logits + off, p + off);
        for (q = 0; q < rec->n_questions; q++) {
            double  sum = 0;

            for (o = rec->option_offset[q]; o < rec->option_offset[q + 1]; o++) {
                finite &= isfinite(logits[off + o]) && isfinite(p[off + o]);
                sum += p[off + o];
            }
            worst = fabs(sum - 1) > worst || sum != sum ? fabs(sum - 1) : worst;
        }
        off += rec->n_options;
    }
    res.probs_finite = finite;
    res.prob_sum_err = worst;
    check(finite && worst <= 1e-5, "finite logits and probabilities summing to 1 per "
          "question (max |sum - 1| = %.3g)", worst);
    free(p);
}

/* ---- images -------------------------------------------------------------- */

/* A request with n images of gh x gw patches of random RGB: 10 text
 * tokens, each image's pads between two other tokens, then make_record()'s
 * text and schema (its spans sit in the last 150 tokens, past the images
 * when text_len >= 170). */
static int
make_image_record(clef_record *r, const clef_vision_config *vc, int n, int gh,
    int gw, int text_len, int vocab)
{
    int64_t  tok = (int64_t) gh * gw / (vc->spatial_merge_size * vc->spatial_merge_size);
    int      len = text_len + n * (int) (tok + 2), k, p, c;
    int32_t  pad = vc->image_token_id < vocab ? vc->image_token_id : 0;
    size_t   bytes = (size_t) gh * vc->patch_size * gw * vc->patch_size * 3, i;

    if (make_record(r, len, vocab) != 0) {
        return -1;
    }
    r->media = calloc((size_t) n, sizeof(clef_media_item));
    r->spans = calloc((size_t) n, sizeof(clef_media_span));
    r->positions = malloc(sizeof(int32_t) * 3 * (size_t) len);
    if (r->media == NULL || r->spans == NULL || r->positions == NULL) {
        return -1;
    }
    r->n_media = n;
    r->n_spans = n;
    p = 10;
    for (k = 0; k < n; k++) {
        clef_media_item  *im = &r->media[k];

        im->kind = CLEF_MEDIA_IMAGE;
        im->grid_t = 1;
        im->tokens = tok;
        im->grid_h = gh;
        im->grid_w = gw;
        im->patch = vc->patch_size;
        im->temporal = vc->temporal_patch_size;
        im->merge = vc->spatial_merge_size;
        for (c = 0; c < 3; c++) {
            im->mean[c] = 127.5f;
            im->std[c] = 127.5f;
        }
        im->bytes = malloc(bytes);
        if (im->bytes == NULL) {
            return -1;
        }
        for (i = 0; i < bytes; i++) {
            im->bytes[i] = (uint8_t) (rnd() >> 56);
        }
        r->spans[k].start = p + 1;
        r->spans[k].len = (int32_t) tok;
        r->spans[k].item = k;
        for (i = 0; i < (size_t) tok; i++) {
            r->ids.v[p + 1 + i] = pad;
        }
        p += (int) tok + 2;
    }
    clef_mrope_positions(len, r->media, r->spans, n, r->positions);
    return 0;
}

/* 0, or -1 when a figure could not be measured (a failed check says why). */
static int
images_bench(clef_backend *g, const clef_model *m, int vocab, int quick)
{
    const clef_vision_config  *vc = clef_model_vision_config(m);
    bench_batch                one, four;
    clef_record                r1, r4;
    clef_error                 err;
    double                     t[3], t0;
    float                     *lg = NULL, *feat = NULL;
    int                        i, ok, runs = quick ? 10 : 30;
    uint64_t                   saved = bench_rng;

    if (vc == NULL) {
        say("\nimages: the model has no vision tower\n");
        return 0;
    }
    memset(&err, 0, sizeof(err));
    memset(&one, 0, sizeof(one));
    memset(&four, 0, sizeof(four));
    memset(&r1, 0, sizeof(r1));
    memset(&r4, 0, sizeof(r4));
    say("\nimages, eager (the vision tower, then the backbone with M-RoPE)\n");
    ok = make_image_record(&r1, vc, 1, 14, 20, REQ_LEN, vocab) == 0
         && make_image_record(&r4, vc, 4, 64, 64, REQ_LEN, vocab) == 0
         && batch_make(&one, NULL, 1, vocab, &r1, 0) == 0
         && batch_make(&four, NULL, 1, vocab, &r4, 0) == 0
         && clef_batch_set_media(&one.batch, &err) == 0
         && clef_batch_set_media(&four.batch, &err) == 0;
    ok = ok && latency(g, &one, 3, runs, "1 image (280 patches) + 328 tokens",
                       &res.img1) == 0;
    json_write();
    if (ok) {
        lg = malloc(sizeof(float) * (size_t) clef_batch_options(&four.batch));
        feat = malloc(sizeof(float) * 4096 * (size_t) vc->out_hidden_size);
        ok = lg != NULL && feat != NULL && time_forward(g, &four, 1, 3, t) == 0;
    }
    if (ok) {
        res.img4_s = t[1];
        for (i = 0; ok && i < 3; i++) {
            t0 = clef_clock_seconds();
            ok = clef_cuda_vision_features(g, &four.batch, feat, &err) == 0;
            t[i] = clef_clock_seconds() - t0;
        }
        if (!ok) {
            say("cuda_bench: vision tower: %s\n", err.message);
        }
    }
    if (ok) {
        qsort(t, 3, sizeof(double), cmp_double);
        res.tower4_s = t[1];
        res.have_img4 = 1;
        say("  4 images of 64 x 64 patches (16384 patches, 4096 tokens) + 328 tokens: "
            "forward %.1f ms; the tower alone %.1f ms (%.0f patches/s)\n",
            res.img4_s * 1e3, res.tower4_s * 1e3, 16384 / res.tower4_s);
        ok = forward(g, &four, lg) == 0;
        if (ok) {
            check_probs(&four, lg);
        }
    }
    check(ok, "the image cases ran%s%s", err.message[0] ? ": " : "",
          err.message[0] ? err.message : "");
    json_write();
    clef_batch_free_media(&one.batch);
    clef_batch_free_media(&four.batch);
    batch_free(&one);
    batch_free(&four);
    clef_record_free(&r1);
    clef_record_free(&r4);
    free(lg);
    free(feat);
    /* the batches after this section keep the lengths of runs without it */
    bench_rng = saved;
    return ok ? 0 : -1;
}

static void
stop(const char *what)
{
    res.stopped = what;
    json_write();
}

int
main(int argc, char **argv)
{
    const char        *dir = NULL;
    int                lat_runs = 300, quick = 0, i, k, vocab, req_len = REQ_LEN, n, at;
    int                lens[1024];
    clef_model        *m;
    clef_backend      *g = NULL;
    clef_backend_opts  o = { .threads = 0 };
    clef_error         err;
    struct cudaDeviceProp  prop;
    bench_batch        req, mixed, tb[3], lg;
    float              eager_l[16], graph_l[16], mixed_l[4096];
    double             t[16];

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--out") == 0 && i + 1 < argc) {
            out_dir = argv[++i];
        } else if (strcmp(argv[i], "--latency-runs") == 0 && i + 1 < argc) {
            lat_runs = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--quick") == 0) {
            quick = 1;
        } else if (argv[i][0] != '-' && dir == NULL) {
            dir = argv[i];
        } else {
            dir = NULL;
            break;
        }
    }
    if (dir == NULL || lat_runs < 1) {
        fprintf(stderr, "usage: cuda_bench MODEL_DIR [--out DIR] [--latency-runs N] "
                        "[--quick]\n");
        return 2;
    }
    if (quick && lat_runs > 50) {
        lat_runs = 50;
    }
    res.model = dir;

    memset(&err, 0, sizeof(err));
    res.open_s = clef_clock_seconds();
    m = clef_model_open(dir, 0, &err);
    if (m == NULL || clef_cuda_backend_ops.open(m, &o, &g, &err) != 0) {
        say("cuda_bench: %s\n", err.message);
        res.open_s = 0;
        stop("open");
        return 1;
    }
    res.open_s = clef_clock_seconds() - res.open_s;
    if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess) {
        snprintf(res.device, sizeof(res.device), "%s", prop.name);
        res.sms = prop.multiProcessorCount;
    }
    vocab = clef_model_text_config(m)->vocab_size;
    say("device: %s, %d SMs; model %s opened in %.1f s\n", res.device, res.sms, dir,
        res.open_s);
    json_write();

    /* Checks on the request: eager first (graphs off), then the graph. */
    if (batch_make(&req, &req_len, 1, vocab, NULL, 0) != 0) {
        say("cuda_bench: out of memory\n");
        return 1;
    }
    say("\nchecks, %d-token request with 3 questions\n", REQ_LEN);
    clef_cuda_set_graphs(g, 0);
    if (forward(g, &req, eager_l) != 0) {
        stop("request forward");
        return 1;
    }
    check_probs(&req, eager_l);
    clef_cuda_set_graphs(g, 1);
    for (i = 0; i < 3; i++) {                   /* eager, capture, replay */
        if (forward(g, &req, graph_l) != 0) {
            stop("request forward with graphs");
            return 1;
        }
    }
    clef_cuda_graph_stats(g, &res.replays, &res.captures);
    res.graph_equal = res.replays >= 1 && memcmp(graph_l, eager_l, sizeof(float) * 11) == 0;
    check(res.graph_equal, "graph replay gives the eager logits bit for bit "
          "(%ld captures, %ld replays)", res.captures, res.replays);

    /* The request inside a 4k batch, third of its records (all records
     * have 11 options, so its logits start at 11 * at). */
    n = budget_lens(4096 - REQ_LEN, lens, 1023);
    at = n < 2 ? n : 2;
    for (i = n; i > at; i--) {
        lens[i] = lens[i - 1];
    }
    lens[at] = REQ_LEN;
    n++;
    if (batch_make(&mixed, lens, n, vocab, req.ptrs[0], at) != 0
        || clef_batch_options(&mixed.batch) > 4096)
    {
        say("cuda_bench: out of memory\n");
        return 1;
    }
    if (forward(g, &mixed, mixed_l) != 0) {
        stop("packed forward");
        return 1;
    }
    res.batch_equal = memcmp(mixed_l + 11 * at, eager_l, sizeof(float) * 11) == 0;
    check(res.batch_equal, "the request packed as record %d of %d (%ld tokens) gives "
          "its lone logits bit for bit", at + 1, mixed.n, mixed.tokens);
    clef_cuda_gemm_stats(g, &res.fallbacks, &res.heuristics);
    check(res.fallbacks == 0, "every GEMM ran its shape's row-independent algorithm "
          "(%ld fallbacks, %ld heuristic queries)", res.fallbacks, res.heuristics);
    json_write();

    /* Latency: eager is what production sees; graph is a repeated shape. */
    say("\nlatency, %d tokens, 3 questions, end to end\n", REQ_LEN);
    clef_cuda_set_graphs(g, 0);
    if (latency(g, &req, 5, lat_runs, "eager (production: shapes rarely repeat)",
                &res.eager) != 0)
    {
        stop("latency eager");
        return 1;
    }
    json_write();
    clef_cuda_set_graphs(g, 1);
    if (latency(g, &req, 5, lat_runs, "graph replay (a repeated launch shape)",
                &res.graph) != 0)
    {
        stop("latency graph");
        return 1;
    }
    json_write();
    prof_header();
    if (profile(g, &req, 5, "328-token request", res.prof[0]) == 0) {
        res.have_prof[0] = 1;
        json_write();
    }

    /* Images: a failure is a failed check; the text figures go on. */
    images_bench(g, m, vocab, quick);

    /* Throughput, eager: packed batches at three budgets. */
    clef_cuda_set_graphs(g, 0);
    say("\nthroughput, eager (packed records of 256..1024 tokens)\n");
    say("  %-8s %8s %8s %10s %12s %8s %6s\n", "budget", "tokens", "records", "ms",
        "tokens/s", "TFLOP/s", "MFU");
    for (k = 0; k < 3; k++) {
        int     runs = quick ? 2 : (k < 2 ? 8 : 4);
        double  tps;

        n = budget_lens(budgets[k], lens, 1024);
        if (batch_make(&tb[k], lens, n, vocab, NULL, 0) != 0
            || time_forward(g, &tb[k], 1, runs, t) != 0)
        {
            stop("throughput");
            return 1;
        }
        res.have_tput[k] = 1;
        res.tput_tokens[k] = tb[k].tokens;
        res.tput_records[k] = tb[k].n;
        res.tput_s[k] = pct(t, runs, 50);
        tps = tb[k].tokens / res.tput_s[k];
        say("  %-8ld %8ld %8d %10.2f %12.0f %8.1f %5.1f%%\n", budgets[k], tb[k].tokens,
            tb[k].n, res.tput_s[k] * 1e3, tps, tps * GFLOP_PER_TOKEN / 1e3,
            100.0 * tps * GFLOP_PER_TOKEN / 1e3 / PEAK_TFLOPS);
        json_write();
    }

    /* One long record. */
    {
        int  l = 65536, runs = quick ? 1 : 2;

        if (batch_make(&lg, &l, 1, vocab, NULL, 0) != 0
            || time_forward(g, &lg, 1, runs, t) != 0)
        {
            stop("long record");
            return 1;
        }
        res.have_long = 1;
        res.long_s = pct(t, runs, 50);
        say("\nlong record: 65536 tokens in %.1f ms (%.0f tokens/s), eager\n",
            res.long_s * 1e3, 65536 / res.long_s);
        json_write();
    }

    /* Where the time goes at size. */
    prof_header();
    if (profile(g, &tb[1], 2, "16k batch", res.prof[1]) == 0) {
        res.have_prof[1] = 1;
        json_write();
    }
    if (profile(g, &lg, 1, "65536-token record", res.prof[2]) == 0) {
        res.have_prof[2] = 1;
        json_write();
    }
    clef_cuda_graph_stats(g, &res.replays, &res.captures);
    say("\ngraphs: %ld captures, %ld replays; checks: %d run, %d failed\n",
        res.captures, res.replays, res.checks_run, res.checks_failed);
    json_write();

    batch_free(&req);
    batch_free(&mixed);
    for (k = 0; k < 3; k++) {
        batch_free(&tb[k]);
    }
    batch_free(&lg);
    clef_cuda_backend_ops.close(g);
    clef_model_close(m);
    return res.checks_failed ? 1 : 0;
}
