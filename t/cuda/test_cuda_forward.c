/*
 * The whole CUDA forward (bf16 backbone, fp32 head) on the tiny checkpoints
 * of t/fixtures/models (regenerated with build/clef mkmodel):
 *
 *  - every request of t/fixtures/e2e/<config>.jsonl (the fp32 reference's
 *    golden outputs): probabilities within 2e-2 absolute, the same argmax on
 *    every question, final-norm hidden rows within 5e-2 relative;
 *  - a packed synthetic batch (records of 1, 63, 64, 65, 700 and 3 tokens)
 *    against the fp32 CPU backend: probabilities within 2e-2, hidden states
 *    within 3e-2 relative per record; each record run alone gives what it
 *    gives packed (within 5e-3); the third run of the batch replays a CUDA
 *    graph and reproduces the eager result.
 *
 * Without a device: "1..0 # SKIP no CUDA device: <reason>".
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "answer.h"
#include "clef_cuda.h"
#include "cuda_test.h"
#include "encode.h"
#include "request.h"

typedef struct {
    const char  *name;
    int          seed, shards;
} config;

static const config  configs[] = { { "r2", 2, 2 }, { "r3", 3, 1 } };

/* The seed the golden fixtures were made with (t/fixtures/e2e/manifest.json),
 * else the one t/fixtures/models/README.md gives. */
static int
fixture_seed(const config *c)
{
    char     path[1024];
    json_t  *j, *s;
    int      seed = c->seed;

    snprintf(path, sizeof(path), "%s/e2e/manifest.json", check_fixtures());
    j = json_load_file(path, 0, NULL);
    s = json_object_get(json_object_get(json_object_get(j, "models"), c->name), "seed");
    if (json_is_integer(s)) {
        seed = (int) json_integer_value(s);
    }
    json_decref(j);
    return seed;
}

static clef_model *
make_model(const config *c, char *dir)
{
    char         cmd[2048];
    clef_error   err;
    clef_model  *m;

    strcpy(dir, "/tmp/clef-cuda-fwd-XXXXXX");
    if (mkdtemp(dir) == NULL) {
        return NULL;
    }
    snprintf(cmd, 2048, "build/clef mkmodel --config %s/models/%s.json --tokenizer "
             "%s/tokenizers/qwen3 --seed %d --shards %d --out %s > /dev/null",
             check_fixtures(), c->name, check_shared(), fixture_seed(c), c->shards, dir);
    if (system(cmd) != 0) {
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

static void
remove_dir(const char *dir)
{
    char  cmd[1100];

    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    if (system(cmd) != 0) {
        printf("# could not remove %s\n", dir);
    }
}

static int
argmax(const float *p, int n)
{
    int  i, best = 0;

    for (i = 1; i < n; i++) {
        if (p[i] > p[best]) {
            best = i;
        }
    }
    return best;
}

/* ---- golden end-to-end fixtures --------------------------------------- */

static void
run_fixtures(const config *c, clef_model *m, clef_backend *gb)
{
    char          path[1024], *line = NULL;
    size_t        cap = 0;
    FILE         *f;
    int           cases = 0;
    const int     H = clef_model_text_config(m)->hidden_size;

    snprintf(path, sizeof(path), "%s/e2e/%s.jsonl", check_fixtures(), c->name);
    f = fopen(path, "r");
    if (f == NULL) {
        printf("# %s: no golden fixtures (t/reference/gen_model_fixtures.py writes them)\n",
               path);
        return;
    }
    while (getline(&line, &cap, f) > 0) {
        json_t            *j = json_loads(line, 0, NULL), *qs, *hid;
        const char        *name, *body, *trunc;
        clef_request       req;
        clef_record        rec;
        clef_encode_opts   eo;
        clef_batch         batch;
        const clef_record *rp = &rec;
        int32_t            cu[2];
        clef_error         err;
        float             *logits, *probs, *hidden;
        double             worst = 0, hworst = 0;
        size_t             qi, k;
        int                same = 1, o = 0;

        if (j == NULL || (qs = json_object_get(j, "questions")) == NULL) {
            json_decref(j);
            continue;
        }
        name = json_string_value(json_object_get(j, "name"));
        body = json_string_value(json_object_get(j, "body"));
        trunc = json_string_value(json_object_get(j, "truncate"));
        memset(&err, 0, sizeof(err));
        if (clef_request_parse(&req, body, strlen(body), NULL, &err) != 0) {
            CHECK(0, "%s/%s parses: %s", c->name, name, err.message);
            json_decref(j);
            continue;
        }
        clef_encode_opts_default(&eo);
        eo.max_length = (int) json_integer_value(json_object_get(j, "max_length"));
        eo.truncate = trunc != NULL && strcmp(trunc, "state") == 0
                      ? CLEF_TRUNCATE_STATE : CLEF_TRUNCATE_REJECT;
        if (clef_encode(clef_model_tokenizer(m), &req, &eo, &rec, &err) != 0) {
            CHECK(0, "%s/%s encodes: %s", c->name, name, err.message);
            clef_request_free(&req);
            json_decref(j);
            continue;
        }
        clef_batch_init(&batch, &rp, 1, cu);
        logits = calloc((size_t) rec.n_options + 1, sizeof(float));
        probs = calloc((size_t) rec.n_options + 1, sizeof(float));
        hidden = calloc(rec.ids.n * (size_t) H + 1, sizeof(float));
        CHECK(clef_cuda_forward_probs(gb, &batch, logits, probs, &err) == 0
              && clef_cuda_backend_ops.hidden(gb, &batch, hidden, &err) == 0,
              "%s/%s: forward on the GPU: %s", c->name, name, err.message);

        for (qi = 0; qi < json_array_size(qs); qi++) {
            json_t  *want = json_object_get(json_array_get(qs, qi), "probabilities");
            float    wp[512];
            size_t   no = json_array_size(want);

            for (k = 0; k < no && k < 512; k++) {
                double  d;

                wp[k] = (float) json_number_value(json_array_get(want, k));
                d = fabs((double) probs[o + k] - wp[k]);
                worst = d > worst || d != d ? d : worst;
            }
            same &= argmax(probs + o, (int) no) == argmax(wp, (int) no);
            o += (int) no;
        }
        hid = json_object_get(j, "hidden");
        for (k = 0; hid != NULL && k < json_array_size(json_object_get(hid, "positions")); k++) {
            size_t   p = (size_t) json_integer_value(
                json_array_get(json_object_get(hid, "positions"), k));
            json_t  *row = json_array_get(json_object_get(hid, "rows"), k);
            double   num = 0, den = 0;
            int      d;

            for (d = 0; d < H; d++) {
                double  w = json_number_value(json_array_get(row, (size_t) d));
                double  g = hidden[p * (size_t) H + (size_t) d];

                num += (g - w) * (g - w);
                den += w * w;
            }
            num = sqrt(num / (den > 0 ? den : 1));
            hworst = num > hworst || num != num ? num : hworst;
        }
        CHECK(o == rec.n_options && worst <= 2e-2,
              "%s/%s: probabilities within 2e-2 of the fp32 reference (%.3g)",
              c->name, name, worst);
        CHECK(same, "%s/%s: same argmax on every question", c->name, name);
        CHECK(hworst <= 5e-2, "%s/%s: hidden rows within 5e-2 (%.3g)", c->name, name,
              hworst);
        cases++;
        free(logits);
        free(probs);
        free(hidden);
        clef_record_free(&rec);
        clef_request_free(&req);
        json_decref(j);
    }
    free(line);
    fclose(f);
    printf("# %s: %d golden requests\n", c->name, cases);
}

/* ---- synthetic packed batch against the CPU backend ---------------------- */

#define NREC  6

static const int  lens[NREC] = { 1, 63, 64, 65, 700, 3 };

/* A record of len random tokens with 1-3 questions of 2-4 options, spans
 * anywhere in the record (possibly empty only when len is 1). */
static void
synth_record(clef_record *r, int len, int vocab)
{
    int  q, o, nq = 1 + (int) (rnd_u64() % 3), no = 0, i;

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

        r->question_types[q] = (clef_qtype) (rnd_u64() % 3);
        r->question_spans[q].start = s;
        r->question_spans[q].end = s + 1 + (int) (rnd_u64() % (uint64_t) (len - s));
        r->option_offset[q] = no;
        for (o = 0; o < 2 + (int) (rnd_u64() % 3); o++) {
            s = (int) (rnd_u64() % (uint64_t) len);
            r->option_spans[no].start = s;
            r->option_spans[no].end = s + 1 + (int) (rnd_u64() % (uint64_t) (len - s < 9 ? len - s : 9));
            no++;
        }
    }
    r->option_offset[nq] = no;
    r->n_options = no;
}

static void
softmax_record(const clef_record *r, const float *logits, float *probs)
{
    clef_answer_softmax(r, logits, probs);
}

static void
run_synthetic(const config *c, clef_model *m, clef_backend *cb, clef_backend *gb)
{
    const clef_backend_ops  *cpu = clef_backend_find("cpu", NULL);
    const int                H = clef_model_text_config(m)->hidden_size;
    const int                V = clef_model_text_config(m)->vocab_size;
    clef_record              recs[NREC];
    const clef_record       *rp[NREC];
    int32_t                  cu[NREC + 1], cu1[2];
    clef_batch               batch, one;
    clef_error               err;
    float                   *lc, *pc, *pg, *pg2, *pg3, *pa, *hc, *hg;
    double                   worst = 0, alone = 0, rep = 0, hw = 0;
    long                     replays, captures;
    int                      r, i, N, off, T, margin_ok = 1, decided = 0, rc;

    for (r = 0; r < NREC; r++) {
        synth_record(&recs[r], lens[r], V);
        rp[r] = &recs[r];
    }
    clef_batch_init(&batch, rp, NREC, cu);
    N = clef_batch_options(&batch);
    T = (int) clef_batch_tokens(&batch);
    lc = calloc((size_t) N, sizeof(float));
    pc = calloc((size_t) N, sizeof(float));
    pg = calloc((size_t) N, sizeof(float));
    pg2 = calloc((size_t) N, sizeof(float));
    pg3 = calloc((size_t) N, sizeof(float));
    pa = calloc((size_t) N, sizeof(float));
    hc = calloc((size_t) T * H, sizeof(float));
    hg = calloc((size_t) T * H, sizeof(float));
    memset(&err, 0, sizeof(err));

    rc = cpu->forward(cb, &batch, lc, &err);
    CHECK(rc == 0, "%s: CPU forward of the packed batch: %s", c->name, err.message);
    for (r = 0, off = 0; r < NREC; r++) {
        softmax_record(&recs[r], lc + off, pc + off);
        off += recs[r].n_options;
    }
    rc = clef_cuda_forward_probs(gb, &batch, NULL, pg, &err);
    CHECK(rc == 0, "%s: GPU forward of the packed batch (eager): %s", c->name, err.message);
    for (i = 0; i < N; i++) {
        double  d = fabs((double) pg[i] - pc[i]);

        worst = d > worst || d != d ? d : worst;
    }
    CHECK(worst <= 2e-2, "%s: probabilities within 2e-2 of the CPU backend (%.3g)",
          c->name, worst);
    for (r = 0, off = 0; r < NREC; r++) {
        int  q;

        for (q = 0; q < recs[r].n_questions; q++) {
            int     b = off + recs[r].option_offset[q];
            int     n = recs[r].option_offset[q + 1] - recs[r].option_offset[q];
            int     top = argmax(pc + b, n), k;
            double  second = 0;

            for (k = 0; k < n; k++) {
                second = k != top && pc[b + k] > second ? pc[b + k] : second;
            }
            if (pc[b + top] - second > 4e-2) {      /* a decided question */
                decided++;
                margin_ok &= argmax(pg + b, n) == top;
            }
        }
        off += recs[r].n_options;
    }
    CHECK(margin_ok, "%s: same argmax as the CPU on the %d questions it decides by "
          "more than 4e-2", c->name, decided);

    /* Each record alone gives what it gives packed. */
    for (r = 0, off = 0; r < NREC; r++) {
        clef_batch_init(&one, &rp[r], 1, cu1);
        rc |= clef_cuda_forward_probs(gb, &one, NULL, pa + off, &err);
        off += recs[r].n_options;
    }
    for (i = 0; i < N; i++) {
        double  d = fabs((double) pa[i] - pg[i]);

        alone = d > alone || d != d ? d : alone;
    }
    CHECK(rc == 0 && alone <= 5e-3,
          "%s: records run alone match the packed batch (%.3g): nothing crosses records",
          c->name, alone);

    /* Second run captures a graph, third replays it. */
    clef_cuda_graph_stats(gb, &replays, &captures);
    rc = clef_cuda_forward_probs(gb, &batch, NULL, pg2, &err)
         | clef_cuda_forward_probs(gb, &batch, NULL, pg3, &err);
    {
        long  r2, c2;

        clef_cuda_graph_stats(gb, &r2, &c2);
        CHECK(rc == 0 && c2 == captures + 1 && r2 == replays + 1,
              "%s: the repeated batch shape is captured once, then replayed", c->name);
    }
    for (i = 0; i < N; i++) {
        double  d = fmax(fabs((double) pg2[i] - pg[i]), fabs((double) pg3[i] - pg[i]));

        rep = d > rep || d != d ? d : rep;
    }
    CHECK(rep <= 1e-6, "%s: capture and replay reproduce the eager forward (%.3g)",
          c->name, rep);

    /* Hidden states, record by record. */
    rc = cpu->hidden(cb, &batch, hc, &err) | clef_cuda_backend_ops.hidden(gb, &batch, hg, &err);
    for (r = 0; r < NREC; r++) {
        double  num = 0, den = 0;
        size_t  k;

        for (k = (size_t) cu[r] * H; k < (size_t) cu[r + 1] * H; k++) {
            num += ((double) hg[k] - hc[k]) * ((double) hg[k] - hc[k]);
            den += (double) hc[k] * hc[k];
        }
        num = sqrt(num / (den > 0 ? den : 1));
        hw = num > hw || num != num ? num : hw;
    }
    CHECK(rc == 0 && hw <= 3e-2, "%s: final-norm hidden states within 3e-2 of the "
          "CPU backend per record (%.3g)", c->name, hw);

    for (r = 0; r < NREC; r++) {
        clef_record_free(&recs[r]);
    }
    free(lc);
    free(pc);
    free(pg);
    free(pg2);
    free(pg3);
    free(pa);
    free(hc);
    free(hg);
}

int
main(void)
{
    size_t  i;

    if (cuda_test_skip()) {
        return 0;
    }
    for (i = 0; i < sizeof(configs) / sizeof(configs[0]); i++) {
        char                dir[64];
        clef_model         *m = make_model(&configs[i], dir);
        clef_backend       *cb = NULL, *gb = NULL;
        clef_backend_opts   o = { 0, 0 };
        clef_error          err;

        CHECK(m != NULL, "%s: checkpoint from clef mkmodel opens", configs[i].name);
        if (m == NULL) {
            continue;
        }
        memset(&err, 0, sizeof(err));
        CHECK(clef_backend_find("cpu", &err)->open(m, &o, &cb, &err) == 0,
              "%s: CPU backend opens: %s", configs[i].name, err.message);
        CHECK(clef_cuda_backend_ops.open(m, &o, &gb, &err) == 0,
              "%s: CUDA backend opens: %s", configs[i].name, err.message);
        if (cb != NULL && gb != NULL) {
            run_fixtures(&configs[i], m, gb);
            run_synthetic(&configs[i], m, cb, gb);
        }
        if (gb != NULL) {
            clef_cuda_backend_ops.close(gb);
        }
        if (cb != NULL) {
            clef_backend_find("cpu", NULL)->close(cb);
        }
        clef_model_close(m);
        remove_dir(dir);
    }
    return check_done();
}
