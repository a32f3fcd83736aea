/*
 * clef bench MODEL --tokens N --records R [-t THREADS] [--backend NAME]
 *            [--repeat K] [--max-scaling N] [--profile] [--seed S]
 *
 * Times a backend on synthetic records: R records of random token ids from
 * the model's vocabulary, N tokens in all, each with a few questions whose
 * spans lie in the record so that the head runs.  One warm-up forward, then
 * K timed ones; prints tokens/s of the backbone and of the head apart, then
 * how the backbone's cost per token grows with the length of one record
 * (64, 256, 1k, 4k, 16k tokens, capped by --max-scaling; the faster of two
 * forwards each).  --profile adds
 * the CPU backbone's time per op.
 *
 * Speed is only ever compared within one run on one machine
 * (t/bench/cpu-vs-transformers.sh).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "base/buf.h"
#include "base/clock.h"
#include "base/splitmix64.h"
#include "commands.h"
#include "cpu/backend_cpu.h"
#include "cpu/parallel/pool.h"
#include "model/model.h"
#include "protocol/encode.h"

#define MIN_RECORD  24

typedef struct {
    const char  *dir;
    const char  *backend;
    clef_precision precision;
    int64_t      tokens;
    int          records;
    int          threads;
    int          tp;
    int          repeat;
    int64_t      max_scaling;
    int          profile;
    uint64_t     seed;
} bench_args;

static void
usage(FILE *f)
{
    fprintf(f,
        "usage: clef bench MODEL --tokens N --records R [-t THREADS]\n"
        "                  [--backend cpu|cuda] [--repeat K] [--max-scaling N]\n"
        "                  [--profile] [--seed S] [--precision fp32|bf16|q8]\n"
        "                  [--tp N]\n"
        "  MODEL             a Clef release directory or a Clef GGUF file\n"
        "  --tokens N        tokens in the timed batch (default 2048)\n"
        "  --records R       records it is split into (default 4)\n"
        "  -t, --threads T   CPU worker threads, 0 = one per core (default 0)\n"
        "  --repeat K        timed forwards after one warm-up (default 3)\n"
        "  --max-scaling N   longest record of the scaling table (default 16384,\n"
        "                    0 = no table)\n"
        "  --profile         the CPU backbone's time per op\n"
        "  --precision P     fp32, bf16 or q8 (default: the backend's own)\n"
        "  --tp N            tensor-parallel ranks (default 1); the CPU splits\n"
        "                    the threads between them and reports the share of\n"
        "                    time its ranks spend in the all-reduce\n");
}

static void
record_free(clef_record *r)
{
    clef_ids_free(&r->ids);
    free(r->question_spans);
    free(r->question_types);
    free(r->option_offset);
    free(r->option_spans);
    memset(r, 0, sizeof(*r));
}

/* A record of len tokens: random ids, then in its second half up to three
 * questions (choice with 3 options, score with 4, noul with 2), each an
 * instruction span of 3 tokens followed by option spans of 2 tokens. */
static int
record_make(clef_record *r, int64_t len, int vocab, uint64_t *seed)
{
    static const clef_qtype  types[3] = {
        CLEF_QTYPE_CHOICE, CLEF_QTYPE_SCORE, CLEF_QTYPE_NOUL
    };
    static const int         n_opts[3] = { 3, 4, 2 };
    int64_t                  i, cur;
    int                      q, o, nq, k;

    memset(r, 0, sizeof(*r));
    if (clef_ids_reserve(&r->ids, (size_t) len) != 0) {
        return -1;
    }
    for (i = 0; i < len; i++) {
        r->ids.v[i] = (int32_t) (clef_splitmix64(seed) % (uint64_t) vocab);
    }
    r->ids.n = (size_t) len;

    /* a question with its options takes 4 + 3 * options tokens */
    nq = len >= 2 * (13 + 16 + 10) ? 3 : 1;
    r->n_questions = nq;
    r->question_spans = calloc((size_t) nq, sizeof(clef_span));
    r->question_types = calloc((size_t) nq, sizeof(clef_qtype));
    r->option_offset = calloc((size_t) nq + 1, sizeof(int));
    r->option_spans = calloc(9, sizeof(clef_span));
    if (r->question_spans == NULL || r->question_types == NULL
        || r->option_offset == NULL || r->option_spans == NULL)
    {
        record_free(r);
        return -1;
    }

    cur = len / 2;
    k = 0;
    for (q = 0; q < nq; q++) {
        int  kind = nq == 1 ? 2 : q;

        r->question_types[q] = types[kind];
        r->question_spans[q].start = (int32_t) cur;
        r->question_spans[q].end = (int32_t) (cur + 3);
        cur += 4;
        r->option_offset[q] = k;
        for (o = 0; o < n_opts[kind]; o++) {
            r->option_spans[k].start = (int32_t) cur;
            r->option_spans[k].end = (int32_t) (cur + 2);
            cur += 3;
            k++;
        }
    }
    r->option_offset[nq] = k;
    r->n_options = k;
    r->state_tokens = (size_t) (len / 2);
    r->state_kept = r->state_tokens;
    return 0;
}

static int
parse_args(int argc, char **argv, bench_args *a)
{
    int  i;

    memset(a, 0, sizeof(*a));
    a->backend = "cpu";
    a->tokens = 2048;
    a->records = 4;
    a->repeat = 3;
    a->max_scaling = 16384;
    a->seed = 1;

    for (i = 1; i < argc; i++) {
        const char  *s = argv[i];
        const char  *v = i + 1 < argc ? argv[i + 1] : NULL;

        if (strcmp(s, "--help") == 0 || strcmp(s, "-h") == 0) {
            usage(stdout);
            exit(0);
        } else if (strcmp(s, "--profile") == 0) {
            a->profile = 1;
        } else if (s[0] == '-' && v == NULL) {
            fprintf(stderr, "clef bench: %s needs a value\n", s);
            return -1;
        } else if (strcmp(s, "--tokens") == 0) {
            a->tokens = atoll(v);
            i++;
        } else if (strcmp(s, "--records") == 0) {
            a->records = atoi(v);
            i++;
        } else if (strcmp(s, "-t") == 0 || strcmp(s, "--threads") == 0) {
            a->threads = atoi(v);
            i++;
        } else if (strcmp(s, "--tp") == 0) {
            a->tp = atoi(v);
            i++;
        } else if (strcmp(s, "--backend") == 0) {
            a->backend = v;
            i++;
        } else if (strcmp(s, "--precision") == 0) {
            if (clef_precision_parse(v, strlen(v), &a->precision) != 0) {
                fprintf(stderr, "clef bench: --precision is fp32, bf16 or q8\n");
                return -1;
            }
            i++;
        } else if (strcmp(s, "--repeat") == 0) {
            a->repeat = atoi(v);
            i++;
        } else if (strcmp(s, "--max-scaling") == 0) {
            a->max_scaling = atoll(v);
            i++;
        } else if (strcmp(s, "--seed") == 0) {
            a->seed = strtoull(v, NULL, 10);
            i++;
        } else if (s[0] == '-') {
            fprintf(stderr, "clef bench: unknown option %s\n", s);
            return -1;
        } else if (a->dir == NULL) {
            a->dir = s;
        } else {
            fprintf(stderr, "clef bench: one model, not '%s' too\n", s);
            return -1;
        }
    }
    if (a->dir == NULL) {
        fprintf(stderr, "clef bench: a model directory is needed\n");
        return -1;
    }
    if (a->records < 1 || a->tokens < (int64_t) a->records * MIN_RECORD
        || a->tokens > INT32_MAX || a->repeat < 1 || a->threads < 0
        || a->tp < 0
        || a->max_scaling < 0)
    {
        fprintf(stderr, "clef bench: need --records >= 1, --tokens >= %d per "
                "record, --repeat >= 1, --threads >= 0\n", MIN_RECORD);
        return -1;
    }
    return 0;
}

typedef struct {
    const clef_backend_ops  *ops;
    clef_backend            *be;
    int                      cpu;
    int                      hidden_size;
} bench_ctx;

/* One forward of the batch: seconds in the backbone and in the head.  The
 * CPU backend times both itself; another backend runs hidden() and
 * forward() and the head is the difference. */
static int
run_once(bench_ctx *c, const clef_batch *batch, float *hidden, float *logits,
    double *backbone_s, double *head_s, clef_error *err)
{
    double  t0, t1, t2;

    if (c->cpu) {
        if (c->ops->forward(c->be, batch, logits, err) != 0) {
            return -1;
        }
        clef_cpu_backend_last_times(c->be, backbone_s, head_s);
        return 0;
    }
    t0 = clef_clock_seconds();
    if (c->ops->hidden(c->be, batch, hidden, err) != 0) {
        return -1;
    }
    t1 = clef_clock_seconds();
    if (c->ops->forward(c->be, batch, logits, err) != 0) {
        return -1;
    }
    t2 = clef_clock_seconds();
    *backbone_s = t1 - t0;
    *head_s = (t2 - t1) - (t1 - t0);
    if (*head_s < 0) {
        *head_s = 0;
    }
    return 0;
}

static int
bench_batch(bench_ctx *c, clef_record *recs, int n, int repeat, double *backbone_s,
    double *head_s, clef_error *err)
{
    const clef_record  **ptrs;
    clef_batch           batch;
    int32_t             *cu;
    float               *hidden = NULL, *logits;
    double               bb, hd;
    int                  i, rc = -1;

    ptrs = malloc(sizeof(*ptrs) * (size_t) n);
    cu = malloc(sizeof(*cu) * (size_t) (n + 1));
    for (i = 0; ptrs != NULL && i < n; i++) {
        ptrs[i] = &recs[i];
    }
    if (ptrs == NULL || cu == NULL) {
        goto done;
    }
    clef_batch_init(&batch, ptrs, n, cu);
    logits = malloc(sizeof(float) * (size_t) (clef_batch_options(&batch) + 1));
    if (!c->cpu) {
        hidden = malloc(sizeof(float) * (size_t) clef_batch_tokens(&batch)
                        * (size_t) c->hidden_size);
    }
    if (logits == NULL || (!c->cpu && hidden == NULL)) {
        free(logits);
        goto done;
    }
    *backbone_s = 0;
    *head_s = 0;
    for (i = 0; i < repeat; i++) {
        if (run_once(c, &batch, hidden, logits, &bb, &hd, err) != 0) {
            free(logits);
            goto done;
        }
        *backbone_s += bb;
        *head_s += hd;
    }
    *backbone_s /= repeat;
    *head_s /= repeat;
    free(logits);
    rc = 0;

done:
    if (rc != 0 && err->message[0] == '\0') {
        clef_error_fail(err, CLEF_E_NO_MEMORY, "out of memory");
    }
    free(hidden);
    free(ptrs);
    free(cu);
    return rc;
}

static void
print_profile(clef_cpu_backbone *bb, double forwards)
{
    double  s[CLEF_PROF_COUNT], total = 0;
    int     i;

    clef_cpu_backbone_profile(bb, s);
    for (i = 0; i < CLEF_PROF_COUNT; i++) {
        total += s[i];
    }
    printf("\nbackbone time per op (mean of %g forwards):\n", forwards);
    printf("  %-20s %10s %7s\n", "op", "ms", "share");
    for (i = 0; i < CLEF_PROF_COUNT; i++) {
        if (s[i] > 0) {
            printf("  %-20s %10.2f %6.1f%%\n", clef_cpu_prof_name(i),
                   s[i] / forwards * 1e3, total > 0 ? 100 * s[i] / total : 0);
        }
    }
    printf("  %-20s %10.2f\n", "sum", total / forwards * 1e3);
}

/* What a timed run of the batch gave: tokens a second of the backbone, the
 * head and both, the all-reduce's share at tp > 1, the profile. */
static void
bench_report(bench_ctx *c, const bench_args *a, double bb, double hd)
{
    printf("backbone: %.1f tokens/s (%.4f s per forward)\n", a->tokens / bb, bb);
    printf("head: %.1f tokens/s (%.4f s per forward)\n",
           hd > 0 ? a->tokens / hd : 0.0, hd);
    printf("total: %.1f tokens/s (%.4f s per forward)\n", a->tokens / (bb + hd), bb + hd);
    if (c->cpu && clef_cpu_backend_tp(c->be) > 1) {
        double  ar = clef_cpu_backend_allreduce_seconds(c->be)
                     / clef_cpu_backend_tp(c->be) / a->repeat;

        printf("tp %d: all-reduce %.1f%% of the backbone time (%.4f s per "
               "forward per rank, waiting for the other ranks included)\n",
               clef_cpu_backend_tp(c->be), bb > 0 ? 100 * ar / bb : 0.0, ar);
    }
    if (a->profile && c->cpu) {
        print_profile(clef_cpu_backend_backbone(c->be), a->repeat);
    }
    fflush(stdout);
}


/* One record per length up to --max-scaling, backbone only: how the cost
 * of a token grows with the record's length. */
static int
bench_scaling(bench_ctx *c, const bench_args *a, int vocab, uint64_t *seed,
    clef_error *err)
{
    static const int64_t  lengths[] = { 64, 256, 1024, 4096, 16384 };
    clef_record           rec;
    double                bb, bb2, hd, base = 0;
    int                   i;

    if (a->max_scaling < lengths[0]) {
        return 0;
    }
    printf("\nscaling: one record per length, backbone only, the faster of 2 forwards\n");
    printf("  %8s %10s %12s %10s\n", "tokens", "seconds", "us/token", "x 64-cost");
    for (i = 0; i < (int) (sizeof(lengths) / sizeof(lengths[0]))
                && lengths[i] <= a->max_scaling; i++)
    {
        memset(&rec, 0, sizeof(rec));
        if (record_make(&rec, lengths[i], vocab, seed) != 0) {
            record_free(&rec);
            clef_error_fail(err, CLEF_E_NO_MEMORY, "out of memory");
            return -1;
        }
        /* the faster of two: the first also warms the new sizes up, and
         * on a shared machine the faster one is the less disturbed */
        if (bench_batch(c, &rec, 1, 1, &bb, &hd, err) != 0
            || bench_batch(c, &rec, 1, 1, &bb2, &hd, err) != 0)
        {
            record_free(&rec);
            return -1;
        }
        bb = bb2 < bb ? bb2 : bb;
        record_free(&rec);
        if (i == 0) {
            base = bb / lengths[0];
        }
        printf("  %8lld %10.4f %12.2f %10.2f\n", (long long) lengths[i], bb,
               bb / lengths[i] * 1e6, bb / lengths[i] / base);
        fflush(stdout);
    }
    return 0;
}


/* Opens the backend named by the arguments on m into c. */
static int
bench_open(bench_ctx *c, const bench_args *a, clef_model *m, clef_error *err)
{
    clef_backend_opts  opts;

    c->ops = clef_backend_find(a->backend, err);
    if (c->ops == NULL) {
        return -1;
    }
    c->cpu = strcmp(c->ops->name, "cpu") == 0;
    c->hidden_size = clef_model_text_config(m)->hidden_size;
    memset(&opts, 0, sizeof(opts));
    opts.threads = a->threads;
    opts.tp = a->tp;
    opts.device = 0;
    opts.precision = a->precision;
    return c->ops->open(m, &opts, &c->be, err);
}


int
clef_cmd_bench(int argc, char **argv)
{
    bench_args               a;
    bench_ctx                c;
    clef_model              *m;
    const clef_text_config  *tc;
    clef_record             *recs = NULL;
    clef_error               err;
    uint64_t                 seed;
    double                   bb, hd;
    int64_t                  per, left;
    int                      i, full = 0, rc = 1, options = 0, n_recs = 0;

    if (parse_args(argc, argv, &a) != 0) {
        usage(stderr);
        return 2;
    }
    clef_error_clear(&err);
    memset(&c, 0, sizeof(c));

    m = clef_model_open(a.dir, 0, &err);
    if (m == NULL) {
        fprintf(stderr, "clef bench: %s\n", err.message);
        return 1;
    }
    tc = clef_model_text_config(m);
    for (i = 0; i < tc->num_hidden_layers; i++) {
        full += tc->layer_full[i] != 0;
    }

    if (bench_open(&c, &a, m, &err) != 0) {
        fprintf(stderr, "clef bench: %s\n", err.message);
        goto done;
    }

    recs = calloc((size_t) a.records, sizeof(*recs));
    if (recs == NULL) {
        goto oom;
    }
    n_recs = a.records;
    seed = a.seed;
    left = a.tokens;
    for (i = 0; i < a.records; i++) {
        per = left / (a.records - i);
        left -= per;
        if (record_make(&recs[i], per, tc->vocab_size, &seed) != 0) {
            goto oom;
        }
        options += recs[i].n_options;
    }

    printf("model: %s (hidden %d, %d layers: %d gated deltanet + %d attention)\n",
           a.dir, tc->hidden_size, tc->num_hidden_layers,
           tc->num_hidden_layers - full, full);
    printf("backend: %s, threads %d%s\n", c.ops->name,
           a.threads == 0 ? clef_cpu_count() : a.threads,
           a.threads == 0 ? " (one per core)" : "");
    if (c.cpu) {
        printf("%s\n", clef_cpu_backend_describe(c.be));
    }
    printf("batch: %lld tokens in %d records, %d options; 1 warm-up + %d timed forwards\n",
           (long long) a.tokens, a.records, options, a.repeat);
    fflush(stdout);

    if (bench_batch(&c, recs, a.records, 1, &bb, &hd, &err) != 0) {
        goto fail;
    }
    if (c.cpu) {
        clef_cpu_backbone_profile_reset(clef_cpu_backend_backbone(c.be));
        clef_cpu_backend_allreduce_reset(c.be);
    }
    if (bench_batch(&c, recs, a.records, a.repeat, &bb, &hd, &err) != 0) {
        goto fail;
    }
    bench_report(&c, &a, bb, hd);

    for (i = 0; i < n_recs; i++) {
        record_free(&recs[i]);
    }
    free(recs);
    recs = NULL;
    n_recs = 0;

    if (bench_scaling(&c, &a, tc->vocab_size, &seed, &err) != 0) {
        goto fail;
    }
    rc = 0;
    goto done;

oom:
    clef_error_fail(&err, CLEF_E_NO_MEMORY, "out of memory");
fail:
    fprintf(stderr, "clef bench: %s\n", err.message);
done:
    for (i = 0; i < n_recs; i++) {
        record_free(&recs[i]);
    }
    free(recs);
    if (c.be != NULL) {
        c.ops->close(c.be);
    }
    clef_model_close(m);
    return rc;
}
