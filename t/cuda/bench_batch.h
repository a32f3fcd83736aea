/*
 * The batches the CUDA benchmarks (cuda_bench, cuda_bench_tp) time:
 * records shaped like requests, lengths drawn up to a token budget, packed
 * into one clef_batch; and the comparison their medians sort with.  Random
 * ids come from the benchmark's own generator, seeded by BENCH_SEED
 * (defined before this header), so each benchmark draws what it always did.
 */
#ifndef CLEF_BENCH_BATCH_H
#define CLEF_BENCH_BATCH_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "base/splitmix64.h"

#ifndef BENCH_SEED
#error "define BENCH_SEED before including bench_batch.h"
#endif

static uint64_t  bench_rng = BENCH_SEED;

static uint64_t
rnd(void)
{
    return clef_splitmix64(&bench_rng);
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
    clef_record         *recs;
    const clef_record  **ptrs;
    int32_t             *cu;
    clef_batch           batch;
    int                  n;
    long                 tokens;
} bench_batch;

/* Records of lens[]; with `first` (may be NULL) at index `at`, not owned. */
static int
batch_make(bench_batch *b, const int *lens, int n, int vocab,
    const clef_record *first, int at)
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
        if (first != NULL && i == at) {
            b->ptrs[i] = first;
            b->tokens += (long) first->ids.n;
            continue;
        }
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
        if (b->ptrs != NULL && b->ptrs[i] == &b->recs[i]) {
            clef_record_free(&b->recs[i]);
        }
    }
    free(b->recs);
    free(b->ptrs);
    free(b->cu);
}

/* Records of 256..1024 tokens up to `budget` tokens. */
static int
budget_lens(long budget, int *lens, int cap)
{
    long  used = 0;
    int   n = 0;

    while (used < budget && n < cap) {
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
    return n;
}

static int
cmp_double(const void *a, const void *b)
{
    double  x = *(const double *) a, y = *(const double *) b;

    return x < y ? -1 : x > y;
}

#endif
