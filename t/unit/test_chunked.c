/*
 * Chunked prefill on the CPU backend (backend/backend.h's clef_batch_part):
 * a record run in parts, its delta-rule states, conv tails, attention keys
 * and values, final-norm rows and media encoder rows carried from part to
 * part, gives the option logits of the record run whole, to the bit
 * (memcmp), on:
 *
 *   - t/fixtures/models/tp4.json (text records of the end-to-end fixtures
 *     and records with images) at fp32, tp 1 and 2, and at bf16;
 *   - the Clef GGUF fixture gg1.q8_0.gguf (with its mmproj) at q8, tp 1
 *     and 2;
 *   - Clef Omni (t/fixtures/models/omni1.json: MoE, DeepStack, the audio
 *     tower) on requests with audio clips, images and videos;
 *
 * in parts of 64, 128 and 320 tokens, every record's next part packed in
 * one batch, and in a mix where whole records share the batches of
 * others' parts (each of those the bits of itself alone).  Some image
 * span crosses a part boundary (checked, so that the case is covered).
 * A part that does not start where its record stopped, or not at a
 * multiple of CLEF_PART_ALIGN, is refused.
 */
#include <jansson.h>
#include <unistd.h>

#include "backend/backend.h"
#include "check.h"
#include "model/model.h"
#include "protocol/encode_media.h"
#include "protocol/request.h"
#include "shell.h"
#include "vision_cases.h"
#include "e2e_cases.h"

#define MAX_RECORDS   24
#define MAX_OPTIONS   4096

#if defined(__SANITIZE_ADDRESS__)
#define TEXT_RECORDS   3
#define IMAGE_RECORDS  2
#define OMNI_RECORDS   3
#else
#define TEXT_RECORDS   8
#define IMAGE_RECORDS  4
#define OMNI_RECORDS   8
#endif

static char  tmp[] = "/tmp/clef_chunked_XXXXXX";

typedef struct {
    const clef_record  *recs[MAX_RECORDS];
    clef_record         store[MAX_RECORDS];
    int                 n;
    int                 options;
} records;


/* The records of t/fixtures/REL (a body per line, at "body" or built by
 * vision_cases.h's body_of()), up to max of them, encoded for m. */
static void
load(records *rs, const clef_model *m, const char *rel, int max,
    unsigned accepts)
{
    json_t      *cases = e2e_cases(rel), *c;
    clef_error   err;
    char        *body;
    size_t       i;

    json_array_foreach(cases, i, c) {
        if (rs->n >= MAX_RECORDS || max == 0) {
            break;
        }
        body = json_is_string(json_object_get(c, "body"))
               ? strdup(json_string_value(json_object_get(c, "body")))
               : body_of(c);
        if (body != NULL
            && e2e_encode(m, body, accepts, &rs->store[rs->n], &err) == 0)
        {
            rs->recs[rs->n] = &rs->store[rs->n];
            rs->options += rs->store[rs->n].n_options;
            rs->n++;
            max--;
        }
        free(body);
    }
    json_decref(cases);
}


static void
records_free(records *rs)
{
    int  i;

    for (i = 0; i < rs->n; i++) {
        clef_record_free(&rs->store[i]);
    }
    rs->n = 0;
}


/* Runs one batch (its media set) into lg. */
static int
run_batch(const clef_backend_ops *ops, clef_backend *b,
    const clef_record *const *recs, const clef_batch_part *parts, int n,
    float *lg, clef_error *err)
{
    clef_batch  batch;
    int32_t     cu[MAX_RECORDS + 1];
    int         rc;

    clef_batch_init_parts(&batch, recs, parts, n, cu);
    rc = clef_batch_set_media(&batch, err);
    if (rc == 0) {
        rc = ops->forward(b, &batch, lg, err);
        clef_batch_free_media(&batch);
    }
    return rc;
}


/* Every record alone and whole: the reference. */
static int
run_alone(const clef_backend_ops *ops, clef_backend *b, const records *rs,
    float *lg)
{
    clef_error  err;
    int         i, off = 0, rc = 0;

    for (i = 0; i < rs->n; i++) {
        rc |= run_batch(ops, b, &rs->recs[i], NULL, 1, lg + off, &err);
        off += rs->recs[i]->n_options;
    }
    return rc;
}


/*
 * Runs the records in rounds: record i in parts of part[i] tokens (0:
 * whole, in the first round), each round one batch of every unfinished
 * record's next part.  A record's logits, from the round of its last
 * part, land at its place in lg (record order).
 */
static int
run_parts(const clef_backend_ops *ops, clef_backend *b, const records *rs,
    const int64_t *part, float *lg, clef_error *err)
{
    static float        out[MAX_OPTIONS];
    clef_backend_seq   *seq[MAX_RECORDS];
    clef_batch_part     parts[MAX_RECORDS];
    const clef_record  *br[MAX_RECORDS];
    int64_t             done[MAX_RECORDS], n, len;
    int                 first[MAX_RECORDS], idx[MAX_RECORDS];
    int                 i, j, k, o, rc = 0, off = 0;

    for (i = 0; i < rs->n; i++) {
        seq[i] = NULL;
        done[i] = 0;
        first[i] = off;
        off += rs->recs[i]->n_options;
        if (part[i] > 0 && rc == 0) {
            rc = ops->seq_open(b, rs->recs[i], &seq[i], err);
        }
    }
    while (rc == 0) {
        for (i = 0, k = 0; i < rs->n; i++) {
            n = (int64_t) rs->recs[i]->ids.n;
            if (done[i] >= n) {
                continue;
            }
            len = part[i] > 0 && n - done[i] > part[i] ? part[i] : n - done[i];
            parts[k].seq = seq[i];
            parts[k].offset = done[i];
            parts[k].len = len;
            parts[k].last = done[i] + len == n;
            br[k] = rs->recs[i];
            idx[k++] = i;
        }
        if (k == 0) {
            break;
        }
        rc = run_batch(ops, b, br, parts, k, out, err);
        for (j = 0, o = 0; rc == 0 && j < k; j++) {
            if (parts[j].last) {
                memcpy(lg + first[idx[j]], out + o,
                       sizeof(float) * (size_t) br[j]->n_options);
                o += br[j]->n_options;
            }
            done[idx[j]] += parts[j].len;
        }
    }
    for (i = 0; i < rs->n; i++) {
        if (seq[i] != NULL) {
            ops->seq_close(b, seq[i]);
        }
    }
    return rc;
}


/* The records in parts of each size, and mixed with whole records: the
 * bits of each record alone. */
static void
check_parts(const char *name, const clef_backend_ops *ops, clef_backend *b,
    const records *rs, const float *alone)
{
    static const int64_t  sizes[] = { 64, 128, 320 };
    static float          lg[MAX_OPTIONS];
    clef_error            err;
    int64_t               part[MAX_RECORDS];
    size_t                s;
    int                   i, rc;

    for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        for (i = 0; i < rs->n; i++) {
            part[i] = sizes[s];
        }
        memset(lg, 0, sizeof(lg));
        rc = run_parts(ops, b, rs, part, lg, &err);
        CHECK(rc == 0 && memcmp(lg, alone, sizeof(float)
                                * (size_t) rs->options) == 0,
              "%s: %d records in parts of %lld, packed a part each: "
              "logits bit-identical to each whole and alone%s%s", name,
              rs->n, (long long) sizes[s], rc != 0 ? ": " : "",
              rc != 0 ? err.message : "");
    }
    /* whole records in the batches of others' parts, parts of sizes that
     * differ from record to record */
    for (i = 0; i < rs->n; i++) {
        part[i] = i % 3 == 1 ? 0 : 64 * (1 + i % 4);
    }
    memset(lg, 0, sizeof(lg));
    rc = run_parts(ops, b, rs, part, lg, &err);
    CHECK(rc == 0 && memcmp(lg, alone, sizeof(float) * (size_t) rs->options)
                     == 0,
          "%s: whole records packed with others' parts of 64 to 256: "
          "logits bit-identical to each alone%s%s", name,
          rc != 0 ? ": " : "", rc != 0 ? err.message : "");
}


/* The longest record: a part out of place is refused, and its seq is
 * unusable after (it ran nothing). */
static void
check_refusals(const clef_backend_ops *ops, clef_backend *b,
    const records *rs)
{
    static float         lg[MAX_OPTIONS];
    const clef_record   *rec = rs->recs[0];
    clef_backend_seq    *seq = NULL;
    clef_batch_part      p;
    clef_error           err;
    int                  i, rc;

    for (i = 1; i < rs->n; i++) {
        rec = rs->recs[i]->ids.n > rec->ids.n ? rs->recs[i] : rec;
    }
    if (rec->ids.n < 3 * CLEF_PART_ALIGN
        || ops->seq_open(b, rec, &seq, &err) != 0)
    {
        CHECK(0, "a record of %zu tokens opened in parts", rec->ids.n);
        return;
    }
    p.seq = seq;
    p.offset = CLEF_PART_ALIGN;
    p.len = CLEF_PART_ALIGN;
    p.last = 0;
    rc = run_batch(ops, b, &rec, &p, 1, lg, &err);
    CHECK(rc != 0 && strstr(err.message, "does not follow") != NULL,
          "a first part at %d is refused: %s", CLEF_PART_ALIGN,
          rc != 0 ? err.message : "ran");
    p.offset = 0;
    p.len = CLEF_PART_ALIGN / 2;
    rc = run_batch(ops, b, &rec, &p, 1, lg, &err);
    p.offset = CLEF_PART_ALIGN / 2;
    rc = rc == 0 ? run_batch(ops, b, &rec, &p, 1, lg, &err) : 0;
    CHECK(rc != 0 && strstr(err.message, "does not follow") != NULL,
          "a part at %d (not a multiple of %d) is refused: %s",
          CLEF_PART_ALIGN / 2, CLEF_PART_ALIGN,
          rc != 0 ? err.message : "ran");
    ops->seq_close(b, seq);
}


/* Whether some image span of the records crosses a multiple of size. */
static int
span_crosses(const records *rs, int64_t size)
{
    const clef_media_span  *s;
    int                     i, k;

    for (i = 0; i < rs->n; i++) {
        for (k = 0; k < rs->recs[i]->n_spans; k++) {
            s = &rs->recs[i]->spans[k];
            if (s->start / size != (s->start + s->len - 1) / size) {
                return 1;
            }
        }
    }
    return 0;
}


static clef_backend *
open_backend(const clef_backend_ops *ops, const clef_model *m, int tp,
    clef_precision prec)
{
    clef_backend_opts  bo = { 0 };
    clef_backend      *b = NULL;
    clef_error         err;

    bo.threads = 2;
    bo.tp = tp;
    bo.precision = prec;
    if (ops->open(m, &bo, &b, &err) != 0) {
        CHECK(0, "tp=%d %s opens: %s", tp, clef_precision_name(prec),
              err.message);
        return NULL;
    }
    return b;
}


/* The records at each (tp, precision) of the list. */
static void
check_model(const char *name, const clef_model *m, const records *rs,
    const int *tps, const clef_precision *precs, int n)
{
    static float             alone[MAX_OPTIONS];
    const clef_backend_ops  *ops;
    clef_backend            *b;
    clef_error               err;
    char                     what[128];
    int                      i;

    ops = clef_backend_find("cpu", &err);
    for (i = 0; i < n; i++) {
        snprintf(what, sizeof(what), "%s tp=%d %s", name, tps[i],
                 clef_precision_name(precs[i]));
        b = open_backend(ops, m, tps[i], precs[i]);
        if (b == NULL) {
            continue;
        }
        CHECK(run_alone(ops, b, rs, alone) == 0, "%s: %d records alone",
              what, rs->n);
        check_parts(what, ops, b, rs, alone);
        if (i == 0) {
            check_refusals(ops, b, rs);
        }
        ops->close(b);
    }
}


int
main(void)
{
    static records    rs;
    clef_model       *m;
    clef_error        err;
    char              dir[1100], gg[1100], mm[1100];
    unsigned          img = CLEF_MEDIA_BIT(CLEF_MEDIA_IMAGE);
    unsigned          all = img | CLEF_MEDIA_BIT(CLEF_MEDIA_AUDIO)
                            | CLEF_MEDIA_BIT(CLEF_MEDIA_VIDEO);
    static const int  tp4_tps[] = { 1, 2, 1 }, q8_tps[] = { 1, 2 };
    static const clef_precision  tp4_precs[] = {
        CLEF_PRECISION_FP32, CLEF_PRECISION_FP32, CLEF_PRECISION_BF16
    };
    static const clef_precision  q8_precs[] = {
        CLEF_PRECISION_Q8, CLEF_PRECISION_Q8
    };
    static const int             omni_tps[] = { 1 };
    static const clef_precision  omni_precs[] = { CLEF_PRECISION_FP32 };

    if (e2e_start(tmp, 1) != 0) {
        return 0;
    }
    alarm(1200);

    /* tp4: text and images, fp32 at tp 1 and 2, bf16 */
    snprintf(dir, sizeof(dir), "%s/tp4", tmp);
    CHECK_INT(sh("build/clef mkmodel --config '%s/models/tp4.json' "
                 "--tokenizer '%s' --seed 12 --shards 2 --out '%s' "
                 "> /dev/null", check_fixtures(), check_qwen3_tokenizer(),
                 dir), 0, "mkmodel tp4.json");
    m = clef_model_open(dir, 0, &err);
    CHECK(m != NULL, "tp4 opens");
    if (m != NULL) {
        load(&rs, m, "e2e/r2.jsonl", TEXT_RECORDS, img);
        load(&rs, m, "vision/cases.jsonl", IMAGE_RECORDS, img);
        CHECK(rs.n == TEXT_RECORDS + IMAGE_RECORDS && span_crosses(&rs, 64)
              && span_crosses(&rs, 128),
              "tp4: %d records, an image span across a part boundary", rs.n);
        check_model("tp4", m, &rs, tp4_tps, tp4_precs, 3);
        records_free(&rs);
        clef_model_close(m);
    }

    /* q8 on the GGUF fixture's Q8_0 blocks, tp 1 and 2 */
    snprintf(gg, sizeof(gg), "%s/gguf/gg1.q8_0.gguf", check_fixtures());
    snprintf(mm, sizeof(mm), "%s/gguf/gg1.mmproj.gguf", check_fixtures());
    m = clef_model_open_files(gg, mm, 0, &err);
    CHECK(m != NULL, "gg1.q8_0.gguf opens%s%s", m == NULL ? ": " : "",
          m == NULL ? err.message : "");
    if (m != NULL) {
        load(&rs, m, "e2e/r2.jsonl", TEXT_RECORDS, img);
        load(&rs, m, "vision/cases.jsonl", IMAGE_RECORDS, img);
        CHECK(rs.n == TEXT_RECORDS + IMAGE_RECORDS, "gg1: %d records", rs.n);
        check_model("gg1 q8_0", m, &rs, q8_tps, q8_precs, 2);
        records_free(&rs);
        clef_model_close(m);
    }

    /* Clef Omni: MoE, DeepStack, audio clips, images and videos */
    e2e_mkmodel(tmp, "omni1", "tokenizer/qwen3-omni", 21, dir, sizeof(dir));
    m = clef_model_open(dir, 0, &err);
    CHECK(m != NULL, "omni1 opens");
    if (m != NULL) {
        load(&rs, m, "e2e/omni1_audio.jsonl", OMNI_RECORDS, all);
        CHECK(rs.n == OMNI_RECORDS && span_crosses(&rs, 64),
              "omni1: %d records, a media span across a part boundary",
              rs.n);
        check_model("omni1", m, &rs, omni_tps, omni_precs, 1);
        records_free(&rs);
        clef_model_close(m);
    }

    sh("rm -rf '%s'", tmp);
    return check_done();
}
