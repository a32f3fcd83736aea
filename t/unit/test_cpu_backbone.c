/*
 * The CPU backbone over packed batches, on a checkpoint made by
 * `build/clef mkmodel --shape tiny --seed 1` (random bf16 weights, the real
 * Qwen3 tokenizer's vocabulary).  The backend is deterministic, so every
 * comparison here is equality of bits, never a tolerance:
 *   - records of 1, 37, 64, 65, 130 and 600 tokens give the hidden states
 *     they get alone, packed in order, in reverse order, and behind a
 *     record of 7 tokens in rotated order;
 *   - 1, 2 and 3 threads give the same bits, and a forward after other
 *     calls (another backend's forwards) gives what it gave before them;
 *   - a changed token in one record leaves the others bit for bit and
 *     changes its own record from that token on;
 *   - bad input is refused as data (ids outside the vocabulary, decreasing
 *     cu_seqlens);
 *   - the "cpu" backend: hidden() is the backbone's output, forward() gives
 *     a record's option logits alone, inside a batch of 16 records in two
 *     orders, and on 1, 2 or 3 threads, bit for bit; clef_backend_find()
 *     names what it cannot find.
 * Agreement with transformers itself is checked by the end-to-end goldens
 * (t/fixtures/model/) and per op by test_cpu_ops.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/backend.h"
#include "base/splitmix64.h"
#include "check.h"
#include "cpu/backend_cpu.h"
#include "cpu/model/backbone.h"
#include "cpu/parallel/pool.h"
#include "model/model.h"

static const int  lens[] = { 1, 37, 64, 65, 130, 600 };
#define N_RECORDS  ((int) (sizeof(lens) / sizeof(lens[0])))

/* records of the backend tests: a choice question of 3 options each */
#define BE_RECORDS  16
#define BE_OPTIONS  (3 * BE_RECORDS)

static int
make_model(char *dir, size_t size)
{
    char  cmd[2048];

    snprintf(dir, size, "/tmp/clef-test-backbone-XXXXXX");
    if (mkdtemp(dir) == NULL) {
        return -1;
    }
    snprintf(cmd, sizeof(cmd),
             "build/clef mkmodel --shape tiny --tokenizer %s "
             "--seed 1 --out %s/m > /dev/null", check_qwen3_tokenizer(), dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void
remove_model(const char *dir)
{
    char  cmd[1024];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    if (system(cmd) != 0) {
        printf("# could not remove %s\n", dir);
    }
}

/* n floats equal bit for bit */
static int
same_bits(const float *a, const float *b, int64_t n)
{
    return memcmp(a, b, sizeof(float) * (size_t) n) == 0;
}

/* A record of ids with one choice question of 3 options in its second
 * half (spans as the encoder would give them); len >= 24. */
static void
record_init(clef_record *rec, int32_t *ids, int len, clef_span *qs, clef_qtype *qt,
    int *off, clef_span *os)
{
    int  o;

    memset(rec, 0, sizeof(*rec));
    rec->ids.v = ids;
    rec->ids.n = (size_t) len;
    rec->n_questions = 1;
    qs[0].start = len / 2;
    qs[0].end = len / 2 + 3;
    qt[0] = CLEF_QTYPE_CHOICE;
    off[0] = 0;
    off[1] = 3;
    for (o = 0; o < 3; o++) {
        os[o].start = len / 2 + 4 + 3 * o;
        os[o].end = os[o].start + 2;
    }
    rec->question_spans = qs;
    rec->question_types = qt;
    rec->option_offset = off;
    rec->n_options = 3;
    rec->option_spans = os;
}

/* forward() of records recs[order[0]], recs[order[1]], ...; logits[3 r]
 * are record r's whatever its place in the batch. */
static int
forward_records(const clef_backend_ops *ops, clef_backend *be,
    const clef_record *recs, const int *order, int n, float *logits,
    clef_error *err)
{
    const clef_record  *ptrs[BE_RECORDS] = { NULL };
    int32_t             cu[BE_RECORDS + 1];
    float               packed[BE_OPTIONS];
    clef_batch          batch;
    int                 i;

    for (i = 0; i < n; i++) {
        ptrs[i] = &recs[order[i]];
    }
    clef_batch_init(&batch, ptrs, n, cu);
    if (ops->forward(be, &batch, packed, err) != 0) {
        return -1;
    }
    for (i = 0; i < n; i++) {
        memcpy(logits + 3 * order[i], packed + 3 * i, sizeof(float) * 3);
    }
    return 0;
}

static void
test_backend(const clef_model *m, const int32_t *ids, int64_t T,
    const float *hidden_want)
{
    const clef_backend_ops  *ops;
    clef_backend            *be = NULL, *be1 = NULL, *be3 = NULL;
    clef_backend_opts        opts = { .threads = 2 }, opts1 = { .threads = 1 },
                             opts3 = { .threads = 3 };
    clef_error               err;
    clef_record              rec[BE_RECORDS];
    const clef_record       *ptrs[2] = { &rec[0], &rec[1] };
    clef_span                qs[BE_RECORDS][1], os[BE_RECORDS][3];
    clef_qtype               qt[BE_RECORDS][1];
    int                      off[BE_RECORDS][2], order[BE_RECORDS], i, rc, finite = 1;
    int                      same;
    int32_t                  cu[3];
    int64_t                  start;
    clef_batch               batch, one;
    float                   *hidden, logits[6], alone[BE_OPTIONS];
    float                    packed[BE_OPTIONS], other[BE_OPTIONS];
    int64_t                  H = clef_model_text_config(m)->hidden_size;

    ops = clef_backend_find("nope", &err);
    CHECK(ops == NULL && strstr(err.message, "unknown backend 'nope'") != NULL,
          "clef_backend_find(\"nope\"): %s", err.message);
    ops = clef_backend_find("cuda", &err);
    CHECK(ops != NULL ? strcmp(ops->name, "cuda") == 0
                      : strncmp(err.message, "the CUDA backend is not available: ", 35) == 0,
          "clef_backend_find(\"cuda\"): %s", ops != NULL ? "found" : err.message);

    ops = clef_backend_find("cpu", &err);
    CHECK(ops != NULL && strcmp(ops->name, "cpu") == 0, "clef_backend_find(\"cpu\")");
    if (ops == NULL) {
        return;
    }
    rc = ops->open(m, &opts, &be, &err);
    CHECK_INT(rc, 0, "cpu backend opens with 2 threads");
    if (rc != 0) {
        printf("# %s\n", err.message);
        return;
    }
    printf("# %s\n", clef_cpu_backend_describe(be));
    CHECK(strstr(clef_cpu_backend_describe(be), "2 threads") != NULL
          && strstr(clef_cpu_backend_describe(be), "gemm") != NULL,
          "clef_cpu_backend_describe() names the threads and the GEMM");

    /* records 2 and 3 of main()'s batch: 64 and 65 tokens */
    record_init(&rec[0], (int32_t *) ids + 1 + 37, 64, qs[0], qt[0], off[0], os[0]);
    record_init(&rec[1], (int32_t *) ids + 1 + 37 + 64, 65, qs[1], qt[1], off[1], os[1]);
    clef_batch_init(&batch, ptrs, 2, cu);
    CHECK(cu[0] == 0 && cu[1] == 64 && cu[2] == 129 && clef_batch_tokens(&batch) == 129
          && clef_batch_options(&batch) == 6, "clef_batch_init: cu_seqlens, tokens, options");

    hidden = malloc(sizeof(float) * 129 * H);
    rc = ops->hidden(be, &batch, hidden, &err);
    CHECK(rc == 0 && same_bits(hidden, hidden_want, 129 * H),
          "backend hidden() = the backbone's hidden states, bit for bit");

    rc = ops->forward(be, &batch, logits, &err);
    for (i = 0; i < 6; i++) {
        finite &= isfinite(logits[i]);
    }
    CHECK(rc == 0 && finite, "backend forward(): 6 finite logits");
    for (i = 0; i < 2 && rc == 0; i++) {
        int32_t  c1[2];

        clef_batch_init(&one, &ptrs[i], 1, c1);
        rc = ops->forward(be, &one, alone + 3 * i, &err);
    }
    CHECK(rc == 0 && same_bits(logits, alone, 6),
          "forward() packed = record by record, in record order, bit for bit");

    /* 16 records of 24 .. 129 tokens from the ids, in a batch of 129 .. 24
     * tokens each: alone, packed in order, packed in reverse order */
    start = 0;
    for (i = 0; i < BE_RECORDS; i++) {
        int  len = 24 + 7 * i;

        if (start + len > T) {
            start = 0;
        }
        record_init(&rec[i], (int32_t *) ids + start, len, qs[i], qt[i], off[i], os[i]);
        start += len;
    }
    rc = 0;
    for (i = 0; i < BE_RECORDS && rc == 0; i++) {
        order[0] = i;
        rc = forward_records(ops, be, rec, order, 1, alone, &err);
    }
    CHECK_INT(rc, 0, "16 records alone");
    for (i = 0; i < BE_RECORDS; i++) {
        order[i] = i;
    }
    rc = forward_records(ops, be, rec, order, BE_RECORDS, packed, &err);
    CHECK(rc == 0 && same_bits(packed, alone, BE_OPTIONS),
          "option logits: every record alone = inside a batch of 16, bit for bit");
    for (i = 0; i < BE_RECORDS; i++) {
        order[i] = BE_RECORDS - 1 - i;
    }
    rc = forward_records(ops, be, rec, order, BE_RECORDS, other, &err);
    CHECK(rc == 0 && same_bits(other, alone, BE_OPTIONS),
          "and inside the batch of 16 in reverse order, bit for bit");

    /* other thread counts */
    rc = ops->open(m, &opts1, &be1, &err);
    rc |= ops->open(m, &opts3, &be3, &err);
    CHECK_INT(rc, 0, "cpu backends on 1 and 3 threads open");
    if (rc == 0) {
        for (i = 0; i < BE_RECORDS; i++) {
            order[i] = (i * 5) % BE_RECORDS;
        }
        rc = forward_records(ops, be1, rec, order, BE_RECORDS, other, &err);
        same = rc == 0 && same_bits(other, alone, BE_OPTIONS);
        /* 7 of them: records 0, 5, 10, 15, 4, 9, 14 */
        rc = forward_records(ops, be3, rec, order, 7, other, &err);
        for (i = 0; i < 7; i++) {
            same &= rc == 0 && same_bits(other + 3 * order[i], alone + 3 * order[i], 3);
        }
        CHECK(same, "option logits on 1 and 3 threads, in other batches, as alone "
              "on 2 threads, bit for bit");
    }
    ops->close(be1);
    ops->close(be3);

    free(hidden);
    ops->close(be);
}

/* The packed batch of main() laid out another way: records order[0],
 * order[1], ... behind a record of `lead` tokens (0: none).  Checks that
 * every record's rows are those it gets alone. */
static int
relaid_as_alone(clef_cpu_backbone *b, const int32_t *ids, const int32_t *cu,
    const int *order, int lead, const float *alone, int64_t H, clef_error *err)
{
    int32_t  cu2[N_RECORDS + 2], *ids2;
    float   *out;
    int64_t  T = cu[N_RECORDS] + lead;
    int      r, n = 0, ok;

    ids2 = malloc(sizeof(int32_t) * (size_t) T);
    out = malloc(sizeof(float) * (size_t) (T * H));
    if (ids2 == NULL || out == NULL) {
        free(ids2);
        free(out);
        return 0;
    }
    cu2[0] = 0;
    if (lead > 0) {
        memcpy(ids2, ids + cu[4], sizeof(int32_t) * (size_t) lead);
        cu2[++n] = lead;
    }
    for (r = 0; r < N_RECORDS; r++) {
        memcpy(ids2 + cu2[n], ids + cu[order[r]], sizeof(int32_t) * lens[order[r]]);
        cu2[n + 1] = cu2[n] + lens[order[r]];
        n++;
    }
    ok = clef_cpu_backbone_forward(b, ids2, cu2, n, out, err) == 0;
    for (r = 0; r < N_RECORDS && ok; r++) {
        ok = same_bits(out + (int64_t) cu2[r + (lead > 0)] * H,
                       alone + (int64_t) cu[order[r]] * H,
                       (int64_t) lens[order[r]] * H);
    }
    free(ids2);
    free(out);
    return ok;
}

int
main(void)
{
    static const int     reversed[N_RECORDS] = { 5, 4, 3, 2, 1, 0 };
    static const int     rotated[N_RECORDS] = { 3, 4, 5, 0, 1, 2 };
    char                 dir[256], mdir[300];
    clef_model          *m = NULL;
    clef_cpu_pool       *pool[3] = { NULL, NULL, NULL };
    clef_cpu_backbone   *bb[3] = { NULL, NULL, NULL }, *b2;
    clef_error           err;
    const clef_text_config *tc;
    int32_t              cu[N_RECORDS + 1], one[2], bad[3];
    int32_t             *ids;
    float               *packed, *alone, *other;
    uint64_t             seed = 7;
    double               mean = 0, var = 0;
    int64_t              T, i, H;
    int                  r, rc = 0, finite = 1, same;

    (void) check_fixtures;
    if (make_model(dir, sizeof(dir)) != 0) {
        CHECK(0, "build/clef mkmodel --shape tiny (run from the repository root)");
        return check_done();
    }
    snprintf(mdir, sizeof(mdir), "%s/m", dir);
    m = clef_model_open(mdir, 0, &err);
    CHECK(m != NULL, "tiny checkpoint opens");
    if (m == NULL) {
        printf("# %s\n", err.message);
        remove_model(dir);
        return check_done();
    }
    tc = clef_model_text_config(m);
    H = tc->hidden_size;

    for (r = 0; r < 3; r++) {
        pool[r] = clef_cpu_pool_create(r + 1, &err);
        if (pool[r] == NULL
            || clef_cpu_backbone_open(m, pool[r], &bb[r], &err) != 0)
        {
            printf("# %s\n", err.message);
            rc = -1;
        }
    }
    CHECK_INT(rc, 0, "backbones open on 1, 2 and 3 threads");
    if (rc != 0) {
        goto done;
    }
    b2 = bb[1];
    CHECK_INT(clef_cpu_backbone_hidden_size(b2), H, "hidden size from the config");

    cu[0] = 0;
    for (r = 0; r < N_RECORDS; r++) {
        cu[r + 1] = cu[r] + lens[r];
    }
    T = cu[N_RECORDS];
    ids = malloc(sizeof(int32_t) * T);
    packed = malloc(sizeof(float) * T * H);
    alone = malloc(sizeof(float) * T * H);
    other = malloc(sizeof(float) * T * H);
    for (i = 0; i < T; i++) {
        ids[i] = (int32_t) (clef_splitmix64(&seed) % (uint64_t) tc->vocab_size);
    }

    rc = clef_cpu_backbone_forward(b2, ids, cu, N_RECORDS, packed, &err);
    CHECK_INT(rc, 0, "packed batch of %lld tokens in %d records", (long long) T,
              N_RECORDS);

    for (i = 0; i < T * H; i++) {
        finite &= isfinite(packed[i]);
        mean += packed[i];
    }
    mean /= (double) (T * H);
    for (i = 0; i < T * H; i++) {
        var += (packed[i] - mean) * (packed[i] - mean);
    }
    var /= (double) (T * H);
    CHECK(finite, "hidden states are finite");
    /* the final norm's output of random weights: unit-ish scale, not zeros */
    CHECK(var > 0.1 && var < 10, "hidden states have unit-ish variance (%.3f)", var);

    for (r = 0; r < N_RECORDS; r++) {
        one[0] = 0;
        one[1] = lens[r];
        rc = clef_cpu_backbone_forward(b2, ids + cu[r], one, 1, alone + (int64_t) cu[r] * H,
                                       &err);
        CHECK(rc == 0 && same_bits(packed + (int64_t) cu[r] * H,
                                   alone + (int64_t) cu[r] * H, (int64_t) lens[r] * H),
              "record of %d tokens: packed = alone, bit for bit", lens[r]);
    }
    CHECK(relaid_as_alone(b2, ids, cu, reversed, 0, alone, H, &err),
          "records packed in reverse order: each as alone, bit for bit");
    CHECK(relaid_as_alone(b2, ids, cu, rotated, 7, alone, H, &err),
          "records packed behind a 7-token record, rotated: each as alone, bit for bit");

    for (r = 0; r < 3; r += 2) {
        rc = clef_cpu_backbone_forward(bb[r], ids, cu, N_RECORDS, other, &err);
        CHECK(rc == 0 && same_bits(other, packed, T * H),
              "%d thread%s = 2 threads, bit for bit", r + 1, r ? "s" : "");
    }

    test_backend(m, ids, T, packed + (int64_t) cu[2] * H);

    /* nothing a forward leaves behind (another backend's head and backbone
     * ran in between) changes the next one */
    same = 1;
    for (r = 0; r < 3; r++) {
        rc = clef_cpu_backbone_forward(bb[r], ids, cu, N_RECORDS, other, &err);
        same &= rc == 0 && same_bits(other, packed, T * H);
    }
    CHECK(same, "forwards on 1, 2 and 3 threads after the backend's calls = before, "
          "bit for bit");

    /* a record's hidden states depend on its own tokens: changing one token
     * of record 2 leaves records 0, 1 and 3.. as they were and changes 2 */
    ids[cu[2] + 10] = (ids[cu[2] + 10] + 1) % tc->vocab_size;
    rc = clef_cpu_backbone_forward(b2, ids, cu, N_RECORDS, alone, &err);
    CHECK(rc == 0 && same_bits(alone, packed, (int64_t) cu[2] * H)
          && same_bits(alone + (int64_t) cu[3] * H, packed + (int64_t) cu[3] * H,
                       (T - cu[3]) * H),
          "a changed token in record 2 leaves the other records bit for bit");
    CHECK(check_rel_err(alone + (int64_t) (cu[2] + 10) * H,
                        packed + (int64_t) (cu[2] + 10) * H,
                        (int64_t) (lens[2] - 10) * H) > 1e-3
          && same_bits(alone + (int64_t) cu[2] * H, packed + (int64_t) cu[2] * H,
                       10 * H),
          "and changes record 2 from that token on, causally");

    /* errors are data */
    ids[5] = tc->vocab_size;
    clef_error_clear(&err);
    rc = clef_cpu_backbone_forward(b2, ids, cu, N_RECORDS, alone, &err);
    CHECK(rc != 0 && err.status == 400 && strcmp(err.type, "invalid_token") == 0,
          "an id outside the vocabulary is refused (%d %s: %s)", err.status, err.type,
          err.message);
    ids[5] = -1;
    rc = clef_cpu_backbone_forward(b2, ids, cu, N_RECORDS, alone, &err);
    CHECK(rc != 0 && err.status == 400, "a negative id is refused");
    ids[5] = 0;
    bad[0] = 0;
    bad[1] = 10;
    bad[2] = 5;
    rc = clef_cpu_backbone_forward(b2, ids, bad, 2, alone, &err);
    CHECK(rc != 0 && err.status == 500, "decreasing cu_seqlens are refused (%s)",
          err.message);

    free(ids);
    free(packed);
    free(alone);
    free(other);

done:
    for (r = 0; r < 3; r++) {
        clef_cpu_backbone_close(bb[r]);
        clef_cpu_pool_destroy(pool[r]);
    }
    clef_model_close(m);
    remove_model(dir);
    return check_done();
}
