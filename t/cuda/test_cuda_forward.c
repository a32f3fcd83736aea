/*
 * The whole CUDA forward (bf16 backbone, fp32 head) on checkpoints that
 * `clef mkmodel` writes:
 *
 *   r2, r3   t/fixtures/models: tiny shapes with golden outputs of the fp32
 *            reference (t/fixtures/e2e/<config>.jsonl);
 *   hd256    t/cuda/models/hd256.json: the 9B's head sizes, where the real
 *            model runs other kernel instances than the tiny shapes do
 *            (attention head_dim 256 with rotary 0.25, delta rule dk = dv =
 *            128 in four 32-column value slices, head attention d = 64);
 *   gg1-*    t/fixtures/gguf: llama.cpp's GGUF files of the gg1 checkpoint
 *            (Q4_K_M, Q8_0, F16, BF16; and of t/fixtures/gguf/types, the
 *            types read only: IQ4_XS, Q3_K_M, Q2_K, IQ2_XXS, the dynamic
 *            mix and the Q1_0/Q2_0 mix), their blocks dequantized to bf16
 *            at upload, its value heads reordered back from the file's
 *            runs; against the CPU backend on the same file (which
 *            computes on the exact dequantized values in fp32).
 *
 *  - every golden request: probabilities (the host's softmax of the
 *    logits, as answers take it) within PROB_TOL absolute; the same argmax
 *    on each question the reference decides by more than DECIDED_MARGIN;
 *    final-norm hidden rows within 5e-2 relative;
 *  - a packed synthetic batch (records of 1, 63, 64, 65, 700 and 3 tokens)
 *    against the fp32 CPU backend: probabilities within PROB_TOL, the same
 *    argmax where decided, hidden states within 3e-2 relative per record;
 *  - determinism (cuda/README.md): each record alone gives the logits it
 *    gives packed, bit for bit, and no GEMM shape needed a row-dependent
 *    algorithm;
 *  - graphs: the second run of a batch is captured, the third replays it,
 *    both with the eager bits; a batch of the same launch shape with other
 *    lengths, spans and ids replays that graph and gets its own eager bits.
 *
 * Without a device: "1..0 # SKIP no CUDA device: <reason>".
 */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clef_cuda.h"
#include "cuda_test.h"
#include "protocol/encode.h"
#include "protocol/request.h"

typedef struct {
    const char  *name;
    const char  *config;        /* mkmodel --config; NULL: fixtures/models/<name>.json */
    int          seed, shards;
    int          golden;        /* t/fixtures/e2e/<name>.jsonl exists */
    const char  *gguf;          /* t/fixtures/<gguf> */
} config;

static const config  configs[] = {
    { "r2", NULL, 2, 2, 1, NULL },
    { "r3", NULL, 3, 1, 1, NULL },
    { "hd256", "t/cuda/models/hd256.json", 5, 1, 0, NULL },
    { "gg1-q4_k_m", NULL, 0, 0, 0, "gguf/gg1.q4_k_m.gguf" },
    { "gg1-q8_0", NULL, 0, 0, 0, "gguf/gg1.q8_0.gguf" },
    { "gg1-f16", NULL, 0, 0, 0, "gguf/gg1.f16.gguf" },
    { "gg1-bf16", NULL, 0, 0, 0, "gguf/gg1.bf16.gguf" },
    { "gg1-iq4_xs", NULL, 0, 0, 0, "gguf/types/gg1.iq4_xs.gguf" },
    { "gg1-q3_k_m", NULL, 0, 0, 0, "gguf/types/gg1.q3_k_m.gguf" },
    { "gg1-q2_k", NULL, 0, 0, 0, "gguf/types/gg1.q2_k.gguf" },
    { "gg1-iq2_xxs", NULL, 0, 0, 0, "gguf/types/gg1.iq2_xxs.gguf" },
    { "gg1-ud-mix", NULL, 0, 0, 0, "gguf/types/gg1.ud-mix.gguf" },
    { "gg1-q1-mix", NULL, 0, 0, 0, "gguf/types/gg1.q1-mix.gguf" },
};

/* The seed the golden fixtures were made with (t/fixtures/e2e/manifest.json),
 * else the one t/fixtures/models/README.md gives. */
static int
fixture_seed(const config *c)
{
    char     path[1024];
    json_t  *j, *s;
    int      seed = c->seed;

    if (!c->golden) {
        return seed;
    }
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
    char         cfg[1024];
    clef_error   err;
    clef_model  *m;

    if (c->gguf != NULL) {
        /* a committed file: nothing to remove afterwards */
        snprintf(cfg, sizeof(cfg), "%s/%s", check_fixtures(), c->gguf);
        dir[0] = '\0';
        m = clef_model_open(cfg, 0, &err);
        if (m == NULL) {
            printf("# %s: %s\n", cfg, err.message);
        }
        return m;
    }
    if (c->config != NULL) {
        snprintf(cfg, sizeof(cfg), "%s", c->config);
    } else {
        snprintf(cfg, sizeof(cfg), "%s/models/%s.json", check_fixtures(), c->name);
    }
    return cuda_test_mkmodel("clef-cuda-fwd", cfg, fixture_seed(c), c->shards, dir);
}

/* ---- golden end-to-end fixtures --------------------------------------- */

static void
run_fixtures(const config *c, clef_model *m, clef_backend *gb)
{
    char          path[1024], *line = NULL;
    size_t        cap = 0;
    FILE         *f;
    int           cases = 0, decided_all = 0;
    const int     H = clef_model_text_config(m)->hidden_size;

    snprintf(path, sizeof(path), "%s/e2e/%s.jsonl", check_fixtures(), c->name);
    f = fopen(path, "r");
    if (f == NULL) {
        CHECK(0, "%s: golden fixtures %s (t/reference/gen_model_fixtures.py writes them)",
              c->name, path);
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
        int                same = 1, o = 0, decided = 0;

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
        CHECK(clef_cuda_backend_ops.forward(gb, &batch, logits, &err) == 0
              && clef_cuda_backend_ops.hidden(gb, &batch, hidden, &err) == 0,
              "%s/%s: forward on the GPU: %s", c->name, name, err.message);
        batch_softmax(&batch, logits, probs);

        for (qi = 0; qi < json_array_size(qs); qi++) {
            json_t  *want = json_object_get(json_array_get(qs, qi), "probabilities");
            float    wp[512];
            size_t   no = json_array_size(want);
            int      s = 1;

            for (k = 0; k < no && k < 512; k++) {
                double  d;

                wp[k] = (float) json_number_value(json_array_get(want, k));
                d = fabs((double) probs[o + k] - wp[k]);
                worst = d > worst || d != d ? d : worst;
            }
            if (decided_question(wp, probs + o, (int) no, &s)) {
                decided++;
                same &= s;
            }
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
        CHECK(o == rec.n_options && worst <= PROB_TOL,
              "%s/%s: probabilities within %g of the fp32 reference (%.3g)",
              c->name, name, PROB_TOL, worst);
        CHECK(same, "%s/%s: same argmax on the %d of %d questions the reference "
              "decides by more than %g", c->name, name, decided,
              (int) json_array_size(qs), DECIDED_MARGIN);
        CHECK(hworst <= 5e-2, "%s/%s: hidden rows within 5e-2 (%.3g)", c->name, name,
              hworst);
        cases++;
        decided_all += decided;
        free(logits);
        free(probs);
        free(hidden);
        clef_record_free(&rec);
        clef_request_free(&req);
        json_decref(j);
    }
    free(line);
    fclose(f);
    printf("# %s: %d golden requests, %d decided questions\n", c->name, cases,
           decided_all);
}

/* ---- synthetic packed batch against the CPU backend ---------------------- */

#define NREC  6

/* Two batches of one launch shape (cuda/graphs.c): the same token total,
 * attention tiles, key splits, questions and options per record, but other
 * record boundaries, spans and ids. */
static const int  lens[NREC] = { 1, 63, 64, 65, 700, 3 };
static const int  lens_b[NREC] = { 2, 62, 64, 65, 700, 3 };

/* GPU logits of a batch, eagerly (graphs off for this call). */
static int
eager(clef_backend *gb, const clef_batch *batch, float *logits, clef_error *err)
{
    int  rc;

    clef_cuda_set_graphs(gb, 0);
    rc = clef_cuda_backend_ops.forward(gb, batch, logits, err);
    clef_cuda_set_graphs(gb, 1);
    return rc;
}

static void
run_synthetic(const config *c, clef_model *m, clef_backend *cb, clef_backend *gb)
{
    const clef_backend_ops  *cpu = clef_backend_find("cpu", NULL);
    const int                H = clef_model_text_config(m)->hidden_size;
    const int                V = clef_model_text_config(m)->vocab_size;
    clef_record              recs[NREC], recs_b[NREC];
    const clef_record       *rp[NREC], *rp_b[NREC];
    int32_t                  cu[NREC + 1], cu_b[NREC + 1], cu1[2];
    clef_batch               batch, batch_b, one;
    clef_error               err;
    float                   *lc, *pc, *lg, *pg, *lg2, *lg3, *la, *lb, *lb2, *hc, *hg;
    double                   worst, alone, hw = 0;
    long                     replays, captures, r2, c2, fallbacks, heur;
    int                      r, N, off, T, same = 1, decided = 0, rc, q, s;

    for (r = 0; r < NREC; r++) {
        synth_record(&recs[r], lens[r], V, NULL);
        synth_record(&recs_b[r], lens_b[r], V, &recs[r]);
        rp[r] = &recs[r];
        rp_b[r] = &recs_b[r];
    }
    clef_batch_init(&batch, rp, NREC, cu);
    clef_batch_init(&batch_b, rp_b, NREC, cu_b);
    N = clef_batch_options(&batch);
    T = (int) clef_batch_tokens(&batch);
    lc = calloc((size_t) N, sizeof(float));
    pc = calloc((size_t) N, sizeof(float));
    lg = calloc((size_t) N, sizeof(float));
    pg = calloc((size_t) N, sizeof(float));
    lg2 = calloc((size_t) N, sizeof(float));
    lg3 = calloc((size_t) N, sizeof(float));
    la = calloc((size_t) N, sizeof(float));
    lb = calloc((size_t) N, sizeof(float));
    lb2 = calloc((size_t) N, sizeof(float));
    hc = calloc((size_t) T * H, sizeof(float));
    hg = calloc((size_t) T * H, sizeof(float));
    memset(&err, 0, sizeof(err));

    /* Against the CPU backend (fp32).  The first sight of a shape is eager. */
    rc = cpu->forward(cb, &batch, lc, &err);
    CHECK(rc == 0, "%s: CPU forward of the packed batch: %s", c->name, err.message);
    batch_softmax(&batch, lc, pc);
    rc = clef_cuda_backend_ops.forward(gb, &batch, lg, &err);
    CHECK(rc == 0, "%s: GPU forward of the packed batch (eager): %s", c->name, err.message);
    batch_softmax(&batch, lg, pg);
    worst = max_abs_diff(pg, pc, N);
    CHECK(worst <= PROB_TOL, "%s: probabilities within %g of the CPU backend (%.3g)",
          c->name, PROB_TOL, worst);
    for (r = 0, off = 0; r < NREC; r++) {
        for (q = 0; q < recs[r].n_questions; q++) {
            int  b = off + recs[r].option_offset[q];
            int  n = recs[r].option_offset[q + 1] - recs[r].option_offset[q];

            if (decided_question(pc + b, pg + b, n, &s)) {
                decided++;
                same &= s;
            }
        }
        off += recs[r].n_options;
    }
    CHECK(same, "%s: same argmax as the CPU on the %d questions it decides by more "
          "than %g", c->name, decided, DECIDED_MARGIN);

    /* Determinism: each record alone gives the bits it gives packed. */
    rc = 0;
    for (r = 0, off = 0; r < NREC; r++) {
        clef_batch_init(&one, &rp[r], 1, cu1);
        rc |= clef_cuda_backend_ops.forward(gb, &one, la + off, &err);
        off += recs[r].n_options;
    }
    alone = max_abs_diff(la, lg, N);
    CHECK(rc == 0 && alone <= 5e-3,
          "%s: records run alone match the packed batch (logits %.3g): nothing crosses "
          "records", c->name, alone);
    CHECK(rc == 0 && memcmp(la, lg, (size_t) N * sizeof(float)) == 0,
          "%s: ... bit for bit: a record's logits do not depend on its batch", c->name);

    /* Graphs: second run captures, third replays; same bits as eager. */
    clef_cuda_graph_stats(gb, &replays, &captures);
    rc = clef_cuda_backend_ops.forward(gb, &batch, lg2, &err)
         | clef_cuda_backend_ops.forward(gb, &batch, lg3, &err);
    clef_cuda_graph_stats(gb, &r2, &c2);
    CHECK(rc == 0 && c2 == captures + 1 && r2 == replays + 1,
          "%s: the repeated batch shape is captured once, then replayed", c->name);
    CHECK(rc == 0 && memcmp(lg2, lg, (size_t) N * sizeof(float)) == 0
          && memcmp(lg3, lg, (size_t) N * sizeof(float)) == 0,
          "%s: capture and replay give the eager logits bit for bit (%.3g)", c->name,
          fmax(max_abs_diff(lg2, lg, N), max_abs_diff(lg3, lg, N)));

    /* Another batch of that launch shape replays the graph, which reads
     * the new boundaries, spans and ids from the metadata. */
    rc = clef_cuda_backend_ops.forward(gb, &batch_b, lb, &err);
    clef_cuda_graph_stats(gb, &replays, &captures);
    CHECK(rc == 0 && replays == r2 + 1 && captures == c2,
          "%s: a batch of the same launch shape with other lengths replays the graph",
          c->name);
    rc = eager(gb, &batch_b, lb2, &err);
    CHECK(rc == 0 && memcmp(lb, lb2, (size_t) N * sizeof(float)) == 0,
          "%s: ... and gets its own eager logits bit for bit (%.3g)", c->name,
          max_abs_diff(lb, lb2, N));

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

    clef_cuda_gemm_stats(gb, &fallbacks, &heur);
    CHECK_INT(fallbacks, 0, "%s: every GEMM ran its shape's row-independent algorithm "
              "(%ld heuristic queries)", c->name, heur);

    for (r = 0; r < NREC; r++) {
        clef_record_free(&recs[r]);
        clef_record_free(&recs_b[r]);
    }
    free(lc);
    free(pc);
    free(lg);
    free(pg);
    free(lg2);
    free(lg3);
    free(la);
    free(lb);
    free(lb2);
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
        clef_backend_opts   o = { .threads = 0 };
        /* the exact CPU products: a GGUF block file's default is q8 */
        clef_backend_opts   co = { .threads = 0,
                                   .precision = CLEF_PRECISION_FP32 };
        clef_error          err;

        CHECK(m != NULL, "%s: checkpoint from clef mkmodel opens", configs[i].name);
        if (m == NULL) {
            continue;
        }
        memset(&err, 0, sizeof(err));
        CHECK(clef_backend_find("cpu", &err)->open(m, &co, &cb, &err) == 0,
              "%s: CPU backend opens: %s", configs[i].name, err.message);
        CHECK(clef_cuda_backend_ops.open(m, &o, &gb, &err) == 0,
              "%s: CUDA backend opens: %s", configs[i].name, err.message);
        if (cb != NULL && gb != NULL) {
            if (configs[i].golden) {
                run_fixtures(&configs[i], m, gb);
            }
            run_synthetic(&configs[i], m, cb, gb);
        }
        if (gb != NULL) {
            clef_cuda_backend_ops.close(gb);
        }
        if (cb != NULL) {
            clef_backend_find("cpu", NULL)->close(cb);
        }
        clef_model_close(m);
        if (dir[0] != '\0') {
            cuda_test_remove_dir(dir);
        }
        fflush(stdout);
    }
    return check_done();
}
