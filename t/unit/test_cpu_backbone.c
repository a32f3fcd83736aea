/*
 * The CPU backbone over packed batches, on a checkpoint made by
 * `build/clef mkmodel --shape tiny --seed 1` (random bf16 weights, the real
 * Qwen3 tokenizer's vocabulary):
 *   - a packed batch of records of 1, 37, 64, 65, 130 and 600 tokens gives
 *     each record the hidden states it gets alone (tolerance 1e-6 of the
 *     tensor's scale: only GEMM blocking may differ between the two runs);
 *   - 1 and 2 threads agree within 1e-5;
 *   - bad input is refused as data (ids outside the vocabulary, decreasing
 *     cu_seqlens);
 *   - the "cpu" backend: hidden() is the backbone's output, forward() gives
 *     one finite logit per option, the same packed as record by record;
 *     clef_backend_find() names what it cannot find.
 * Agreement with transformers itself is checked by the end-to-end goldens
 * (t/fixtures/model/) and per op by test_cpu_ops.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "check.h"
#include "cpu/backbone.h"
#include "cpu/pool.h"
#include "model.h"
#include "splitmix64.h"

#define ALONE_TOL    1e-6
#define THREADS_TOL  1e-5

static const int  lens[] = { 1, 37, 64, 65, 130, 600 };
#define N_RECORDS  ((int) (sizeof(lens) / sizeof(lens[0])))

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

/* A record of ids with one choice question of 3 options in its second
 * half (spans as the encoder would give them). */
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

static void
test_backend(const clef_model *m, const int32_t *ids, const float *hidden_want)
{
    const clef_backend_ops  *ops;
    clef_backend            *be = NULL;
    clef_backend_opts        opts = { .threads = 2 };
    clef_error               err;
    clef_record              rec[2];
    const clef_record       *ptrs[2] = { &rec[0], &rec[1] };
    clef_span                qs[2][1], os[2][3];
    clef_qtype               qt[2][1];
    int                      off[2][2], i, rc, finite = 1;
    int32_t                  cu[3];
    clef_batch               batch, one;
    float                   *hidden, logits[6], alone[6];
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

    /* records 2 and 3 of main()'s batch: 64 and 65 tokens */
    record_init(&rec[0], (int32_t *) ids + 1 + 37, 64, qs[0], qt[0], off[0], os[0]);
    record_init(&rec[1], (int32_t *) ids + 1 + 37 + 64, 65, qs[1], qt[1], off[1], os[1]);
    clef_batch_init(&batch, ptrs, 2, cu);
    CHECK(cu[0] == 0 && cu[1] == 64 && cu[2] == 129 && clef_batch_tokens(&batch) == 129
          && clef_batch_options(&batch) == 6, "clef_batch_init: cu_seqlens, tokens, options");

    hidden = malloc(sizeof(float) * 129 * H);
    rc = ops->hidden(be, &batch, hidden, &err);
    CHECK(rc == 0 && check_rel_err(hidden, hidden_want, 129 * H) <= ALONE_TOL,
          "backend hidden() = the backbone's hidden states");

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
    CHECK(rc == 0 && check_rel_err(logits, alone, 6) <= ALONE_TOL,
          "forward() packed = record by record, in record order");

    free(hidden);
    ops->close(be);
}

int
main(void)
{
    char                 dir[256], mdir[300];
    clef_model          *m = NULL;
    clef_cpu_pool       *pool1 = NULL, *pool2 = NULL;
    clef_cpu_backbone   *b1 = NULL, *b2 = NULL;
    clef_error           err;
    const clef_text_config *tc;
    int32_t              cu[N_RECORDS + 1], one[2], bad[3];
    int32_t             *ids;
    float               *packed, *alone, *threads1;
    uint64_t             seed = 7;
    double               mean = 0, var = 0;
    int64_t              T, i, H;
    int                  r, rc, finite = 1;

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

    pool1 = clef_cpu_pool_create(1, &err);
    pool2 = clef_cpu_pool_create(2, &err);
    CHECK(pool1 != NULL && pool2 != NULL, "pools of 1 and 2 threads");
    rc = clef_cpu_backbone_open(m, pool2, &b2, &err);
    CHECK_INT(rc, 0, "backbone opens on 2 threads");
    rc |= clef_cpu_backbone_open(m, pool1, &b1, &err);
    CHECK_INT(rc, 0, "backbone opens on 1 thread");
    if (rc != 0) {
        printf("# %s\n", err.message);
        goto done;
    }
    CHECK_INT(clef_cpu_backbone_hidden_size(b2), H, "hidden size from the config");

    cu[0] = 0;
    for (r = 0; r < N_RECORDS; r++) {
        cu[r + 1] = cu[r] + lens[r];
    }
    T = cu[N_RECORDS];
    ids = malloc(sizeof(int32_t) * T);
    packed = malloc(sizeof(float) * T * H);
    alone = malloc(sizeof(float) * T * H);
    threads1 = malloc(sizeof(float) * T * H);
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
        double  e;

        one[0] = 0;
        one[1] = lens[r];
        rc = clef_cpu_backbone_forward(b2, ids + cu[r], one, 1, alone + (int64_t) cu[r] * H,
                                       &err);
        e = check_rel_err(packed + (int64_t) cu[r] * H, alone + (int64_t) cu[r] * H,
                          (int64_t) lens[r] * H);
        CHECK(rc == 0 && e <= ALONE_TOL,
              "record of %d tokens: packed = alone (max error %.3g, tolerance %g)",
              lens[r], e, ALONE_TOL);
    }

    test_backend(m, ids, packed + (int64_t) cu[2] * H);

    rc = clef_cpu_backbone_forward(b1, ids, cu, N_RECORDS, threads1, &err);
    {
        double  e = check_rel_err(threads1, packed, T * H);

        CHECK(rc == 0 && e <= THREADS_TOL,
              "1 thread = 2 threads (max error %.3g, tolerance %g)", e, THREADS_TOL);
    }

    /* a record's hidden states depend on its own tokens: changing one token
     * of record 2 leaves records 0, 1 and 3.. as they were and changes 2 */
    ids[cu[2] + 10] = (ids[cu[2] + 10] + 1) % tc->vocab_size;
    rc = clef_cpu_backbone_forward(b2, ids, cu, N_RECORDS, alone, &err);
    CHECK(rc == 0 && check_rel_err(alone, packed, (int64_t) cu[2] * H) == 0
          && check_rel_err(alone + (int64_t) cu[3] * H, packed + (int64_t) cu[3] * H,
                           (T - cu[3]) * H) == 0,
          "a changed token in record 2 leaves the other records bit for bit");
    CHECK(check_rel_err(alone + (int64_t) (cu[2] + 10) * H,
                        packed + (int64_t) (cu[2] + 10) * H,
                        (int64_t) (lens[2] - 10) * H) > 1e-3
          && check_rel_err(alone + (int64_t) cu[2] * H, packed + (int64_t) cu[2] * H,
                           10 * H) == 0,
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
    free(threads1);

done:
    clef_cpu_backbone_close(b1);
    clef_cpu_backbone_close(b2);
    clef_cpu_pool_destroy(pool1);
    clef_cpu_pool_destroy(pool2);
    clef_model_close(m);
    remove_model(dir);
    return check_done();
}
