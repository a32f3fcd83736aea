/*
 * Tensor parallelism on the CPU (engine/cpu/backend_cpu.h, tp > 1) against
 * the unsharded backend, on t/fixtures/models/tp4.json (its head counts
 * and intermediate size divide by 1, 2 and 4; it has a vision tower):
 *
 *   - tp = 2 and 4 on batches packing every record (text records of the
 *     end-to-end fixtures, short and long, and records with images): option
 *     logits bit-identical to tp = 1 with each record alone, and System One
 *     answers byte-identical: the row-parallel products sum their segments
 *     in one order at every tp (engine/cpu/parallel/rowpar.h; the model's 4 KV heads
 *     make 4 segments, which tp = 1, 2 and 4 divide);
 *   - tp = 1 through the sharded path is the unsharded backend to the bit;
 *   - determinism: at tp = 2 a record's logits are bit-identical alone and
 *     packed with the others, and with 1 or 3 worker threads;
 *   - memory: a rank holds about 1/tp of the backbone's weights;
 *   - progress: a fault injected in rank 1 (or rank 0) mid-forward returns
 *     that rank's error from the forward instead of hanging (an alarm
 *     fails the test if it ever does), and the next forward is right again;
 *   - tp = 3 is refused with clef_shard_check's message.
 */
#include <jansson.h>
#include <unistd.h>

#include "backend/backend.h"
#include "check.h"
#include "cpu/backend_cpu.h"
#include "model/model.h"
#include "protocol/answer.h"
#include "protocol/encode_media.h"
#include "protocol/request.h"
#include "shell.h"
#include "vision_cases.h"

#define MAX_RECORDS   48

/* under the sanitizers a few records of each kind (the logic is the
 * same, the forwards ten times slower) */
#if defined(__SANITIZE_ADDRESS__)
#define TEXT_RECORDS   6
#define IMAGE_RECORDS  2
#else
#define TEXT_RECORDS   24
#define IMAGE_RECORDS  8
#endif
#define MAX_OPTIONS   4096

static char  tmp[] = "/tmp/clef_tp_XXXXXX";

typedef struct {
    clef_request  req;
    clef_record   rec;
    const char   *name;
} item;


static int
encode(const clef_model *m, const char *body, item *it)
{
    clef_error        err;
    clef_encode_opts  eo;
    int               rc;

    clef_encode_opts_default(&eo);
    rc = clef_request_parse(&it->req, body, strlen(body), NULL, &err);
    if (rc != 0) {
        return -1;
    }
    rc = clef_request_check_media(&it->req, 1, &err);
    if (rc == 0) {
        rc = clef_encode_with_media(m, &it->req, &eo, &it->rec, &err);
    }
    if (rc != 0) {
        printf("#   %s: %s\n", it->name, err.message);
        clef_request_free(&it->req);
    }
    return rc;
}


static int
forward_items(const clef_backend_ops *ops, clef_backend *b, item *items, int n,
    float *lg, clef_error *err)
{
    const clef_record  *recs[MAX_RECORDS];
    clef_batch          batch;
    int32_t             cu[MAX_RECORDS + 1];
    int                 i, rc;

    for (i = 0; i < n; i++) {
        recs[i] = &items[i].rec;
    }
    clef_batch_init(&batch, recs, n, cu);
    rc = clef_batch_set_media(&batch, err);
    if (rc == 0) {
        rc = ops->forward(b, &batch, lg, err);
        clef_batch_free_media(&batch);
    }
    return rc;
}


static clef_backend *
open_tp(const clef_backend_ops *ops, const clef_model *m, int tp, int threads)
{
    clef_backend_opts  bo = { 0 };
    clef_backend      *b = NULL;
    clef_error         err;

    bo.threads = threads;
    bo.tp = tp;
    if (ops->open(m, &bo, &b, &err) != 0) {
        printf("#   tp=%d: %s\n", tp, err.message);
        return NULL;
    }
    return b;
}


/* The answers of items[0..n) from logits (packed in item order), a
 * string to free(). */
static char *
answers(item *items, int n, const float *lg)
{
    clef_answer_opts  ao = { NULL, 0 };
    clef_buf          out = { NULL, 0, 0 };
    char             *s;
    int               i, off = 0;

    for (i = 0; i < n; i++) {
        clef_answer_json(&out, &items[i].req, &items[i].rec, lg + off, &ao);
        clef_buf_printf(&out, "\n");
        off += items[i].rec.n_options;
    }
    s = out.data != NULL ? strdup(out.data) : NULL;
    clef_buf_free(&out);
    return s;
}


static double
max_diff(const float *a, const float *b, int n)
{
    double  d = 0;
    int     i;

    for (i = 0; i < n; i++) {
        d = fabs((double) a[i] - b[i]) > d ? fabs((double) a[i] - b[i]) : d;
    }
    return d;
}


int
main(void)
{
    static float             alone[MAX_OPTIONS], lg[MAX_OPTIONS], lg2[MAX_OPTIONS];
    const clef_backend_ops  *ops;
    clef_backend            *b1, *b;
    clef_model              *m;
    clef_error               err;
    item                     items[MAX_RECORDS];
    char                     path[1024], line[1 << 16], dir[1100], *ref, *got;
    FILE                    *f;
    json_t                  *c;
    double                   d;
    size_t                   w1;
    int                      n = 0, n_text, i, off, total = 0, tp, rc, same, r;
    static const int         tps[] = { 2, 4 };

    if (access("build/clef", X_OK) != 0 || mkdtemp(tmp) == NULL) {
        printf("1..0 # SKIP build/clef is not built\n");
        return 0;
    }
    /* a hang is a failure, not a stuck test run */
    alarm(600);

    snprintf(dir, sizeof(dir), "%s/tp4", tmp);
    CHECK_INT(sh("build/clef mkmodel --config '%s/models/tp4.json' --tokenizer '%s' "
                 "--seed 12 --shards 2 --out '%s' > /dev/null", check_fixtures(),
                 check_qwen3_tokenizer(), dir), 0, "mkmodel tp4.json");
    m = clef_model_open(dir, 0, &err);
    ops = clef_backend_find("cpu", &err);
    CHECK(m != NULL && ops != NULL, "tp4 opens");
    if (m == NULL || ops == NULL) {
        return check_done();
    }

    /* text records: the end-to-end fixtures' requests, short and long */
    snprintf(path, sizeof(path), "%s/e2e/r2.jsonl", check_fixtures());
    f = fopen(path, "r");
    while (f != NULL && n < TEXT_RECORDS && fgets(line, sizeof(line), f) != NULL) {
        c = json_loads(line, 0, NULL);
        items[n].name = "text";
        if (c != NULL && encode(m, json_string_value(json_object_get(c, "body")),
                                &items[n]) == 0)
        {
            n++;
        }
        json_decref(c);
    }
    if (f != NULL) {
        fclose(f);
    }
    n_text = n;
    /* records with images */
    snprintf(path, sizeof(path), "%s/vision/cases.jsonl", check_fixtures());
    f = fopen(path, "r");
    while (f != NULL && n < n_text + IMAGE_RECORDS && fgets(line, sizeof(line), f) != NULL) {
        char  *body;

        c = json_loads(line, 0, NULL);
        body = body_of(c);
        items[n].name = "image";
        if (encode(m, body, &items[n]) == 0) {
            n++;
        }
        free(body);
        json_decref(c);
    }
    if (f != NULL) {
        fclose(f);
    }
    for (i = 0; i < n; i++) {
        total += items[i].rec.n_options;
    }
    CHECK(n_text == TEXT_RECORDS && n - n_text == IMAGE_RECORDS
          && total <= MAX_OPTIONS,
          "%d text records and %d with images, %d options", n_text, n - n_text,
          total);

    /* the reference: unsharded, one record per forward */
    b1 = open_tp(ops, m, 1, 2);
    CHECK(b1 != NULL, "tp=1 opens");
    if (b1 == NULL) {
        return check_done();
    }
    w1 = clef_cpu_backend_rank_weight_bytes(b1, 0);
    for (i = 0, off = 0, rc = 0; i < n; i++) {
        rc |= forward_items(ops, b1, &items[i], 1, alone + off, &err);
        off += items[i].rec.n_options;
    }
    CHECK(rc == 0, "tp=1: every record alone");
    ref = answers(items, n, alone);

    for (i = 0; i < (int) (sizeof(tps) / sizeof(tps[0])); i++) {
        tp = tps[i];
        b = open_tp(ops, m, tp, 2);
        CHECK(b != NULL && clef_cpu_backend_tp(b) == tp, "tp=%d opens", tp);
        if (b == NULL) {
            continue;
        }
        for (r = 0, same = 1; r < tp; r++) {
            same &= clef_cpu_backend_rank_weight_bytes(b, r) * tp < w1 * 11 / 10;
        }
        CHECK(same, "tp=%d: each rank holds about 1/%d of the %zu bytes of "
              "weights (rank 0: %zu)", tp, tp, w1,
              clef_cpu_backend_rank_weight_bytes(b, 0));

        /* text and images packed in one batch */
        rc = forward_items(ops, b, items, n, lg, &err);
        d = rc == 0 ? max_diff(lg, alone, total) : 1;
        CHECK(rc == 0 && d == 0
              && memcmp(lg, alone, sizeof(float) * (size_t) total) == 0,
              "tp=%d, %d records packed (%d with images): option logits "
              "bit-identical to tp=1 alone (max |diff| %.3g)", tp, n,
              n - n_text, d);
        printf("# tp=%d max |logit diff| %.3g\n", tp, d);
        got = rc == 0 ? answers(items, n, lg) : NULL;
        CHECK(got != NULL && ref != NULL && strcmp(got, ref) == 0,
              "tp=%d: System One answers byte-identical to tp=1", tp);

        free(got);

        /* a record alone gives the bits it gives packed */
        for (r = 0, off = 0, same = 1; r < n; r++) {
            rc = forward_items(ops, b, &items[r], 1, lg2, &err);
            same &= rc == 0 && memcmp(lg2, lg + off, sizeof(float)
                                      * (size_t) items[r].rec.n_options) == 0;
            off += items[r].rec.n_options;
        }
        CHECK(same, "tp=%d: every record alone has the bits it has packed", tp);
        ops->close(b);
    }

    /* thread counts: 1 (one per rank) and 3 (2 + 1) */
    b = open_tp(ops, m, 2, 2);
    rc = b != NULL ? forward_items(ops, b, items, n, lg, &err) : -1;
    if (b != NULL) {
        ops->close(b);
    }
    for (i = 1; i <= 3; i += 2) {
        b = open_tp(ops, m, 2, i);
        rc |= b != NULL ? forward_items(ops, b, items, n, lg2, &err) : -1;
        CHECK(rc == 0 && memcmp(lg, lg2, sizeof(float) * (size_t) total) == 0,
              "tp=2 with %d worker threads: the same bits as with 2", i);
        if (b != NULL) {
            ops->close(b);
        }
    }

    /* tp=1 as a "sharded" backend is the unsharded one */
    b = open_tp(ops, m, 1, 1);
    rc = b != NULL ? forward_items(ops, b, items, n, lg2, &err) : -1;
    CHECK(rc == 0 && memcmp(lg2, alone, sizeof(float) * (size_t) total) == 0,
          "tp=1, 1 thread, packed: the bits of tp=1 alone");
    if (b != NULL) {
        ops->close(b);
    }

    /* a rank that fails mid-forward: an error, not a hang */
    b = open_tp(ops, m, 2, 2);
    if (b != NULL) {
        clef_cpu_backend_fail_at(b, 1, 2);
        rc = forward_items(ops, b, items, n, lg2, &err);
        CHECK(rc == -1 && strstr(err.message, "rank 1: a fault injected at layer 2")
              != NULL, "rank 1 fails at layer 2: the forward returns its error "
              "(%s)", rc != 0 ? err.message : "none");
        clef_cpu_backend_fail_at(b, 1, -1);
        clef_cpu_backend_fail_at(b, 0, 3);
        rc = forward_items(ops, b, items, n_text, lg2, &err);
        CHECK(rc == -1 && strstr(err.message, "rank 0: a fault injected at layer 3")
              != NULL, "rank 0 fails at layer 3 while rank 1 waits in an "
              "all-reduce: an error (%s)", rc != 0 ? err.message : "none");
        clef_cpu_backend_fail_at(b, 0, -1);
        rc = forward_items(ops, b, items, n, lg2, &err);
        CHECK(rc == 0 && memcmp(lg, lg2, sizeof(float) * (size_t) total) == 0,
              "after the faults the next forward gives the same bits again");
        ops->close(b);
    }

    /* a tp the model cannot be split by */
    {
        clef_backend_opts  bo = { 0 };

        bo.tp = 3;
        b = NULL;
        rc = ops->open(m, &bo, &b, &err);
        CHECK(rc == -1 && b == NULL && strcmp(err.message, "tp=3 does not "
              "divide the 8 attention heads of the model") == 0,
              "tp=3 is refused: %s", rc != 0 ? err.message : "opened");
    }

    free(ref);
    ops->close(b1);
    for (i = 0; i < n; i++) {
        clef_record_free(&items[i].rec);
        clef_request_free(&items[i].req);
    }
    clef_model_close(m);
    sh("rm -rf '%s'", tmp);
    return check_done();
}
