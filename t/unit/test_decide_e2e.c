/*
 * End to end against the reference (t/fixtures/e2e, written by
 * t/reference/gen_model_fixtures.py from transformers' Qwen3.5 and
 * Cloudflare's ClefModel in fp32, and by gen_omni_fixtures.py from
 * transformers 5.10.2's Qwen3-Omni thinker and Cloudflare's Clef Omni
 * ClefModel in fp32, the MoE text stack of t/fixtures/models/omni1.json):
 *
 *   - the tiny checkpoints are written again by `build/clef mkmodel` with the
 *     fixture's seeds and their files checked against
 *     t/fixtures/models/<name>.sha256;
 *   - `build/clef decide --raw` answers every fixture request: input_tokens
 *     identical, option logits within 1e-4 and probabilities within 1e-5 of
 *     the reference, the reference's choice, score, legend and rounded
 *     probabilities, and the protocol's confidences computed from the
 *     reference's probabilities;
 *   - in this process, the CPU backend's final hidden states at the
 *     fixture's positions within 5e-5, and a record run alone gives the very
 *     logits the CLI printed for it;
 *   - `--batch 16` (records packed into one forward) gives the very logits
 *     of one record per forward, and `--batch N` and `-t N` print the same
 *     bytes as the defaults (the CPU backend is deterministic), and so does
 *     the AVX2 kernel where the CPU picks the wide AVX-512 one;
 *   - `--precision fp32` prints the bytes of the default; `--precision bf16`
 *     (bf16 activations into the linear layers) gives probabilities within
 *     BF16_TOL of the reference and its argmax wherever the reference's top
 *     two are more than BF16_TOL apart, and is deterministic too: the same
 *     bytes with `--batch 16` and `-t 1`;
 *   - the CLI's refusals: an error line per bad request, usage errors, a
 *     missing CUDA backend.
 *
 * Under the sanitizers the in-process part runs on a few records only (the
 * CLI it starts is the optimised build).
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/backend.h"
#include "check.h"
#include "jsonl.h"
#include "cpu/kernels/gemm.h"
#include "model/model.h"
#include "protocol/answer.h"
#include "protocol/encode.h"
#include "protocol/encode_media.h"
#include "protocol/request.h"
#include "shell.h"

#define LOGIT_TOL    1e-4
#define PROB_TOL     1e-5
/* the bf16 contract, the CUDA backend's too (docs/architecture.md §5) */
#define BF16_TOL     2e-2
#define HIDDEN_TOL   5e-5
/* two values rounded to 4 decimals from inputs within PROB_TOL */
#define ROUNDED_TOL  (1e-4 + 2 * PROB_TOL)

#if defined(__SANITIZE_ADDRESS__)
#define INPROCESS_CASES  3
#else
#define INPROCESS_CASES  1000
#endif

static char    root[1024];
static char    tmp[1024];
static double  max_logit, max_prob, max_hidden;

static double
num(json_t *v)
{
    return json_number_value(v);
}

static double
track(double *worst, double d)
{
    *worst = d > *worst ? d : *worst;
    return d;
}

/* ---- what an answer must say, from the reference's numbers ------------- */

static double
round4(double x)
{
    char  b[64];

    snprintf(b, sizeof(b), "%.4f", x);
    return strtod(b, NULL);
}

static void
check_answer(const char *cname, json_t *q, json_t *got, json_t *ref)
{
    const char  *id = json_string_value(json_object_get(q, "id"));
    const char  *type = json_string_value(json_object_get(ref, "type"));
    json_t      *opts = json_object_get(q, "options");
    json_t      *probs = json_object_get(q, "probabilities");
    json_t      *gp = json_object_get(got, "probabilities");
    json_t      *rp = json_object_get(ref, "probabilities");
    const char  *key;
    json_t      *v;
    int          K = (int) json_array_size(opts), i, ok, m;
    double       pmax, want, dist, mad, p;

    CHECK_STR(json_string_value(json_object_get(got, "type")), type,
              "%s/%s: type %s", cname, id, type);

    if (strcmp(type, "noul") == 0) {
        CHECK(fabs(num(json_object_get(got, "noul")) - num(json_object_get(ref, "noul")))
              <= ROUNDED_TOL && json_object_get(got, "confidence") == NULL,
              "%s/%s: noul %.4f as the reference, no confidence", cname, id,
              num(json_object_get(got, "noul")));
        return;
    }

    /* rounded probabilities, same labels in the same (request) order */
    ok = json_object_size(gp) == json_object_size(rp);
    json_object_foreach(rp, key, v) {
        ok &= json_object_get(gp, key) != NULL
              && fabs(num(json_object_get(gp, key)) - num(v)) <= ROUNDED_TOL;
    }
    CHECK(ok, "%s/%s: rounded probabilities as the reference's", cname, id);

    if (strcmp(type, "choice") == 0) {
        /* the generator keeps the reference's top two more than 1e-4 apart */
        pmax = -1.0;
        for (i = 0; i < K; i++) {
            p = num(json_array_get(probs, i));
            pmax = p > pmax ? p : pmax;
        }
        CHECK_STR(json_string_value(json_object_get(got, "choice")),
                  json_string_value(json_object_get(ref, "choice")),
                  "%s/%s: the reference's choice", cname, id);
        want = K == 1 ? 1.0 : (K * pmax - 1.0) / (K - 1);
        want = want < 0.0 ? 0.0 : (want > 1.0 ? 1.0 : want);
    } else {
        CHECK(fabs(num(json_object_get(got, "score")) - num(json_object_get(ref, "score")))
              <= ROUNDED_TOL, "%s/%s: score %.4f as the reference", cname, id,
              num(json_object_get(got, "score")));
        CHECK(json_equal(json_object_get(got, "legend"), json_object_get(ref, "legend")),
              "%s/%s: legend echoes the criteria", cname, id);
        m = 0;
        for (i = 1; i < K; i++) {
            if (num(json_array_get(probs, i)) > num(json_array_get(probs, m))) {
                m = i;
            }
        }
        dist = 0.0;
        mad = 0.0;
        for (i = 0; i < K; i++) {
            dist += num(json_array_get(probs, i)) * abs(i - m);
            mad += fabs(i - (K - 1) / 2.0);
        }
        mad /= K;
        want = K == 1 ? 1.0 : 1.0 - dist / mad;
        want = want < 0.0 ? 0.0 : want;
    }
    CHECK(fabs(num(json_object_get(got, "confidence")) - round4(want)) <= ROUNDED_TOL,
          "%s/%s: confidence %.4f, the protocol's formula on the reference's "
          "probabilities (%.4f)", cname, id, num(json_object_get(got, "confidence")),
          round4(want));
}

static void
check_response(json_t *c, json_t *resp)
{
    const char  *cname = json_string_value(json_object_get(c, "name"));
    json_t      *qs = json_object_get(c, "questions"), *q, *answers, *a, *raw;
    json_t      *ref = json_object_get(json_object_get(c, "answer"), "answers");
    size_t       i, k;
    int          ok_opts;
    double       dl, dp;

    CHECK(resp != NULL && json_is_object(resp) && json_object_get(resp, "error") == NULL,
          "%s: answered", cname);
    if (resp == NULL || json_object_get(resp, "error") != NULL) {
        char  *s = resp ? json_dumps(resp, 0) : NULL;

        printf("#   %s\n", s ? s : "(no line)");
        free(s);
        return;
    }
    CHECK_INT(json_integer_value(json_object_get(json_object_get(resp, "usage"),
                                                 "input_tokens")),
              json_integer_value(json_object_get(c, "input_tokens")),
              "%s: input_tokens", cname);
    answers = json_object_get(resp, "answers");
    CHECK_INT(json_object_size(answers), json_array_size(qs), "%s: one answer per question",
              cname);

    json_array_foreach(qs, i, q) {
        const char  *id = json_string_value(json_object_get(q, "id"));
        json_t      *opts = json_object_get(q, "options");
        json_t      *rl = json_object_get(q, "logits"), *rp = json_object_get(q, "probabilities");

        a = json_object_get(answers, id);
        raw = json_object_get(a, "raw");
        CHECK(a != NULL && raw != NULL, "%s/%s: answer with raw", cname, id);
        if (raw == NULL) {
            continue;
        }
        ok_opts = json_array_size(json_object_get(raw, "options")) == json_array_size(opts);
        for (k = 0; ok_opts && k < json_array_size(opts); k++) {
            ok_opts = strcmp(json_string_value(json_array_get(json_object_get(raw, "options"), k)),
                             json_string_value(json_array_get(opts, k))) == 0;
        }
        CHECK(ok_opts, "%s/%s: options in the encoder's order", cname, id);
        if (!ok_opts) {
            continue;
        }
        dl = dp = 0.0;
        for (k = 0; k < json_array_size(opts); k++) {
            double  x = fabs(num(json_array_get(json_object_get(raw, "logits"), k))
                             - num(json_array_get(rl, k)));
            double  y = fabs(num(json_array_get(json_object_get(raw, "probabilities"), k))
                             - num(json_array_get(rp, k)));

            dl = x > dl ? x : dl;
            dp = y > dp ? y : dp;
        }
        track(&max_logit, dl);
        track(&max_prob, dp);
        CHECK(dl <= LOGIT_TOL, "%s/%s: logits within %g (max %.3g)", cname, id,
              LOGIT_TOL, dl);
        CHECK(dp <= PROB_TOL, "%s/%s: probabilities within %g (max %.3g)", cname, id,
              PROB_TOL, dp);
        check_answer(cname, q, a, json_object_get(ref, id));
    }
}

/* ---- the CLI --------------------------------------------------------- */

/* Runs decide over the cases that share (max_length, truncate); returns the
 * responses by case index (a JSON array, null where none). */
/* Appends the bytes of file path to *text (malloc'd, NUL-terminated). */
static void
append_file(char **text, const char *path)
{
    FILE    *f = fopen(path, "rb");
    size_t   have = *text != NULL ? strlen(*text) : 0, n;
    char     chunk[4096], *p;

    while (f != NULL && (n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
        p = realloc(*text, have + n + 1);
        if (p == NULL) {
            break;
        }
        memcpy(p + have, chunk, n);
        have += n;
        p[have] = '\0';
        *text = p;
    }
    if (f != NULL) {
        fclose(f);
    }
}

/* The exact products: "--precision fp32 " for a block-quantized GGUF file
 * (whose default is the integer products, q8), "" where fp32 is the
 * default; added to every run that names no precision. */
static const char  *exact_flag = "";

/* Answers the cases with `clef decide --raw EXTRA`, a run per max-length
 * and truncation; their output, in that order, is appended to *text. */
static void
run_cli(const char *model, json_t *cases, json_t *responses, const char *extra,
    char **text)
{
    size_t   i, j, n;
    char     in[1200], out[1200], flags[128];
    FILE    *f;
    json_t  *c, *lines, *done = json_array();
    int      rc;

    json_array_foreach(cases, i, c) {
        json_array_append_new(done, json_false());
        json_array_append_new(responses, json_null());
    }
    snprintf(in, sizeof(in), "%s/in.jsonl", tmp);
    snprintf(out, sizeof(out), "%s/out.jsonl", tmp);

    json_array_foreach(cases, i, c) {
        int          ml = (int) json_integer_value(json_object_get(c, "max_length"));
        const char  *tr = json_string_value(json_object_get(c, "truncate"));
        size_t       idx[256];

        if (json_is_true(json_array_get(done, i))) {
            continue;
        }
        f = fopen(in, "w");
        n = 0;
        for (j = i; j < json_array_size(cases) && f != NULL; j++) {
            json_t  *d = json_array_get(cases, j);

            if (json_integer_value(json_object_get(d, "max_length")) == ml
                && strcmp(json_string_value(json_object_get(d, "truncate")), tr) == 0
                && n < 256)
            {
                fprintf(f, "%s\n", json_string_value(json_object_get(d, "body")));
                json_array_set_new(done, j, json_true());
                idx[n++] = j;
            }
        }
        if (f != NULL) {
            fclose(f);
        }
        snprintf(flags, sizeof(flags), "--max-length %d%s", ml,
                 strcmp(tr, "state") == 0 ? " --truncate-state" : "");
        rc = sh("'%s/build/clef' decide '%s' --raw %s %s%s < '%s' > '%s'", root,
                model, flags,
                strstr(extra, "--precision") == NULL ? exact_flag : "", extra,
                in, out);
        CHECK_INT(rc, 0, "clef decide --raw %s %s: %zu requests", flags, extra, n);
        append_file(text, out);
        lines = read_jsonl(out);
        CHECK_INT(json_array_size(lines), n, "one response line per request");
        for (j = 0; j < n && j < json_array_size(lines); j++) {
            json_array_set(responses, idx[j], json_array_get(lines, j));
        }
        json_decref(lines);
    }
    json_decref(done);
}

/* ---- in this process: hidden states and a record alone ---------------- */

static void
check_inprocess(const char *model, json_t *cases, json_t *responses)
{
    clef_error               err;
    clef_model              *m = clef_model_open(model, 0, &err);
    const clef_backend_ops  *ops;
    clef_backend            *b = NULL;
    clef_backend_opts        bo = { .threads = 0,
                                    .precision = CLEF_PRECISION_FP32 };
    json_t                  *c;
    size_t                   i, n = 0;
    int                      H;

    CHECK(m != NULL, "open %s in process", model);
    if (m == NULL) {
        printf("#   %s\n", err.message);
        return;
    }
    H = clef_model_text_config(m)->hidden_size;
    ops = clef_backend_find("cpu", &err);
    CHECK(ops != NULL && ops->open(m, &bo, &b, &err) == 0, "cpu backend");
    if (b == NULL) {
        clef_model_close(m);
        return;
    }

    json_array_foreach(cases, i, c) {
        const char        *cname = json_string_value(json_object_get(c, "name"));
        const char        *body = json_string_value(json_object_get(c, "body"));
        json_t            *hid = json_object_get(c, "hidden"), *pos, *rows, *resp;
        clef_request       req;
        clef_record        rec;
        clef_encode_opts   eo;
        const clef_record *one[1];
        int32_t            cu[2];
        clef_batch         batch;
        float             *hs, *lg;
        size_t             k, j;
        int                q, same = 1, o;
        double             d = 0.0;

        if (n++ >= INPROCESS_CASES) {
            break;
        }
        clef_encode_opts_default(&eo);
        eo.max_length = (int) json_integer_value(json_object_get(c, "max_length"));
        eo.truncate = strcmp(json_string_value(json_object_get(c, "truncate")), "state") == 0
                      ? CLEF_TRUNCATE_STATE : CLEF_TRUNCATE_REJECT;
        if (clef_request_parse(&req, body, strlen(body), NULL, &err) != 0) {
            CHECK(0, "%s: parse (%s)", cname, err.message);
            continue;
        }
        /* the media read and processed as the engine does (Clef Omni's
         * images) */
        if (clef_request_check_media(&req, 1, &err) != 0
            || clef_encode_with_media(m, &req, &eo, &rec, &err) != 0)
        {
            CHECK(0, "%s: encode (%s)", cname, err.message);
            clef_request_free(&req);
            continue;
        }
        one[0] = &rec;
        clef_batch_init(&batch, one, 1, cu);
        if (clef_batch_set_media(&batch, &err) != 0) {
            CHECK(0, "%s: the batch's media (%s)", cname, err.message);
        }
        hs = malloc(rec.ids.n * (size_t) H * sizeof(float));
        lg = malloc((size_t) rec.n_options * sizeof(float));

        CHECK(hs && ops->hidden(b, &batch, hs, &err) == 0, "%s: hidden states", cname);
        pos = json_object_get(hid, "positions");
        rows = json_object_get(hid, "rows");
        for (k = 0; k < json_array_size(pos); k++) {
            size_t  p = (size_t) json_integer_value(json_array_get(pos, k));
            json_t *row = json_array_get(rows, k);

            for (j = 0; j < (size_t) H && j < json_array_size(row) && p < rec.ids.n; j++) {
                double  x = fabs(hs[p * H + j] - num(json_array_get(row, j)));

                d = x > d ? x : d;
            }
        }
        track(&max_hidden, d);
        CHECK(d <= HIDDEN_TOL, "%s: hidden rows at %zu positions within %g (max %.3g)",
              cname, json_array_size(pos), HIDDEN_TOL, d);

        /* alone, the record gives the very logits the CLI printed */
        CHECK(lg && ops->forward(b, &batch, lg, &err) == 0, "%s: forward alone", cname);
        resp = json_array_get(responses, i);
        for (q = 0; resp != NULL && q < req.n_questions; q++) {
            json_t  *raw = json_object_get(json_object_get(json_object_get(resp, "answers"),
                                                           req.questions[q].id.s), "raw");
            json_t  *l = json_object_get(raw, "logits");

            for (o = rec.option_offset[q]; o < rec.option_offset[q + 1]; o++) {
                same &= l != NULL
                        && num(json_array_get(l, (size_t) (o - rec.option_offset[q])))
                           == (double) lg[o];
            }
        }
        CHECK(resp != NULL && same, "%s: in process and from the CLI, the same logits",
              cname);

        free(hs);
        free(lg);
        clef_batch_free_media(&batch);
        clef_record_free(&rec);
        clef_request_free(&req);
    }
    ops->close(b);
    clef_model_close(m);
}

/* --batch: packed forwards against one record per forward */
static void
check_packed(json_t *cases, json_t *single, json_t *packed, const char *text,
    const char *packed_text)
{
    size_t       i, k, n = 0, differ = 0;
    const char  *id;
    json_t      *c, *a, *b, *la, *lb;
    double       d, worst = 0.0;
    int          ok = 1;

    json_array_foreach(cases, i, c) {
        a = json_object_get(json_array_get(single, i), "answers");
        b = json_object_get(json_array_get(packed, i), "answers");
        ok &= json_object_size(a) > 0 && json_object_size(a) == json_object_size(b);
        json_object_foreach(a, id, la) {
            lb = json_object_get(json_object_get(json_object_get(b, id), "raw"), "logits");
            la = json_object_get(json_object_get(la, "raw"), "logits");
            ok &= json_array_size(la) == json_array_size(lb);
            for (k = 0; k < json_array_size(la) && k < json_array_size(lb); k++) {
                d = fabs(num(json_array_get(la, k)) - num(json_array_get(lb, k)));
                worst = d > worst ? d : worst;
                differ += d != 0.0;
                n++;
            }
        }
    }
    printf("# --batch 16: %zu of %zu logits differ from one record per forward "
           "(max %.3g)\n", differ, n, worst);
    CHECK(ok && differ == 0 && n > 0, "--batch 16: the logits of one record per "
          "forward, bit for bit");
    CHECK(text != NULL && packed_text != NULL && strcmp(text, packed_text) == 0,
          "--batch 16: the same bytes as the defaults");
}

/* -t and --batch change where and with what a record runs, never its
 * answer: the output is byte for byte that of the defaults */
static void
check_invariant(const char *model, json_t *cases, const char *text)
{
    static const char  *flags[] = { "-t 1", "-t 3 --batch 5", "--batch 64 -t 2" };
    json_t             *responses;
    char               *other, *kernel;
    const char         *picked;
    size_t              i;

    for (i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
        responses = json_array();
        other = NULL;
        run_cli(model, cases, responses, flags[i], &other);
        CHECK(text != NULL && other != NULL && strcmp(text, other) == 0,
              "clef decide %s: the same bytes as the defaults (%zu bytes)", flags[i],
              text != NULL ? strlen(text) : 0);
        free(other);
        json_decref(responses);
    }

    /* the AVX2 kernel where the wide AVX-512 one would run (gemm_kernel.h):
     * a choice of speed, so the same bytes */
    picked = clef_cpu_gemm_describe();      /* before the variable is set */
    kernel = getenv("CLEF_CPU_GEMM_KERNEL");
    kernel = kernel != NULL ? strdup(kernel) : NULL;
    setenv("CLEF_CPU_GEMM_KERNEL", "avx2", 1);
    responses = json_array();
    other = NULL;
    run_cli(model, cases, responses, "", &other);
    CHECK(text != NULL && other != NULL && strcmp(text, other) == 0,
          "clef decide on the AVX2 kernel: the same bytes as on the kernel this "
          "CPU picks (%s)", picked);
    free(other);
    json_decref(responses);
    if (kernel != NULL) {
        setenv("CLEF_CPU_GEMM_KERNEL", kernel, 1);
        free(kernel);
    } else {
        unsetenv("CLEF_CPU_GEMM_KERNEL");
    }
}

/* --precision: fp32 is the default (on a block-quantized file: the exact
 * mode the runs before were made in), bf16 within its tolerance and as
 * deterministic */
static void
check_precision(const char *model, json_t *cases, const char *text)
{
    static const char  *same[] = { "--batch 16", "-t 1 --batch 3" };
    json_t             *resp, *other, *c, *q, *raw, *rp, *gp;
    char               *fp32 = NULL, *bf16 = NULL, *again, flags[64];
    size_t              i, j, k, K, n = 0;
    double              worst = 0.0, d, top1, top2, p;
    int                 ok = 1, arg_ok = 1, rk, gk;

    other = json_array();
    run_cli(model, cases, other, "--precision fp32", &fp32);
    CHECK(text != NULL && fp32 != NULL && strcmp(text, fp32) == 0,
          "--precision fp32: the bytes of the default");
    json_decref(other);

    resp = json_array();
    run_cli(model, cases, resp, "--precision bf16", &bf16);
    json_array_foreach(cases, i, c) {
        json_array_foreach(json_object_get(c, "questions"), j, q) {
            raw = json_object_get(json_object_get(json_object_get(
                      json_object_get(json_array_get(resp, i), "answers"),
                      json_string_value(json_object_get(q, "id"))), "raw"),
                  "probabilities");
            rp = json_object_get(q, "probabilities");
            K = json_array_size(rp);
            if (raw == NULL || json_array_size(raw) != K) {
                ok = 0;
                continue;
            }
            top1 = top2 = -1.0;
            rk = gk = 0;
            for (k = 0; k < K; k++) {
                p = num(json_array_get(rp, k));
                gp = json_array_get(raw, k);
                d = fabs(num(gp) - p);
                worst = d > worst ? d : worst;
                ok &= d <= BF16_TOL;
                if (p > top1) {
                    top2 = top1;
                    top1 = p;
                    rk = (int) k;
                } else if (p > top2) {
                    top2 = p;
                }
                if (num(gp) > num(json_array_get(raw, gk))) {
                    gk = (int) k;
                }
            }
            if (K > 1 && top1 - top2 > BF16_TOL) {
                arg_ok &= rk == gk;
            }
            n++;
        }
    }
    printf("# --precision bf16: max |probability| diff %.3g over %zu questions\n",
           worst, n);
    CHECK(ok && n > 0, "--precision bf16: probabilities within %g of the reference "
          "(max %.3g)", BF16_TOL, worst);
    CHECK(arg_ok, "--precision bf16: the reference's argmax where its top two are "
          "more than %g apart", BF16_TOL);
    json_decref(resp);

    for (i = 0; i < sizeof(same) / sizeof(same[0]); i++) {
        other = json_array();
        again = NULL;
        snprintf(flags, sizeof(flags), "--precision bf16 %s", same[i]);
        run_cli(model, cases, other, flags, &again);
        CHECK(bf16 != NULL && again != NULL && strcmp(bf16, again) == 0,
              "clef decide %s: the bytes of --precision bf16 alone", flags);
        free(again);
        json_decref(other);
    }
    free(fp32);
    free(bf16);
}

/* ---- refusals -------------------------------------------------------- */

static void
check_refusals(const char *model)
{
    char     in[1200], out[1200], err[1200];
    FILE    *f;
    json_t  *lines, *e;
    int      rc;

    snprintf(in, sizeof(in), "%s/bad.jsonl", tmp);
    snprintf(out, sizeof(out), "%s/bad.out", tmp);
    snprintf(err, sizeof(err), "%s/bad.err", tmp);
    f = fopen(in, "w");
    if (f == NULL) {
        CHECK(0, "write %s", in);
        return;
    }
    fprintf(f, "not json\n"
               "{\"model\":\"m\",\"state\":\"x\"}\n"
               "\n"
               "{\"model\":\"m\",\"state\":\"%0300d\",\"questions\":{\"q\":{\"type\":\"noul\"}}}\n"
               "{\"model\":\"m\",\"state\":\"x\",\"questions\":{\"q\":{\"type\":\"noul\"}}}",
            0);
    fclose(f);
    rc = sh("'%s/build/clef' decide '%s' --max-length 200 < '%s' > '%s'", root, model, in, out);
    CHECK_INT(rc, 0, "decide goes on after refused requests");
    lines = read_jsonl(out);
    CHECK_INT(json_array_size(lines), 4, "one line per non-blank request line");
    e = json_object_get(json_array_get(lines, 0), "error");
    CHECK(json_integer_value(json_object_get(e, "status")) == 422
          && strcmp(json_string_value(json_object_get(e, "type")), "json_invalid") == 0
          && json_is_array(json_object_get(e, "loc")),
          "bad JSON: 422 json_invalid with a loc array");
    e = json_object_get(json_array_get(lines, 1), "error");
    CHECK(json_integer_value(json_object_get(e, "status")) == 422
          && strcmp(json_string_value(json_object_get(e, "type")), "missing") == 0
          && json_string_value(json_array_get(json_object_get(e, "loc"), 1)) != NULL
          && strcmp(json_string_value(json_array_get(json_object_get(e, "loc"), 1)),
                    "questions") == 0,
          "no questions: 422 missing at [\"body\",\"questions\"]");
    e = json_object_get(json_array_get(lines, 2), "error");
    CHECK(json_integer_value(json_object_get(e, "status")) == 400
          && strcmp(json_string_value(json_object_get(e, "type")), "max_tokens_exceeded") == 0,
          "a state over --max-length: 400 max_tokens_exceeded");
    CHECK(json_object_get(json_object_get(json_array_get(lines, 3), "answers"), "q") != NULL
          && json_object_get(json_object_get(json_object_get(json_array_get(lines, 3),
                                                              "answers"), "q"), "raw") == NULL,
          "the last line (no newline) is answered, without raw");
    json_decref(lines);

    CHECK_INT(sh("'%s/build/clef' decide > /dev/null 2> '%s'", root, err), 2,
              "no MODEL_DIR: exit 2");
    CHECK_INT(sh("'%s/build/clef' decide '%s' --bogus > /dev/null 2> '%s'", root, model, err),
              2, "an unknown option: exit 2");
    CHECK_INT(sh("'%s/build/clef' decide '%s' -t x > /dev/null 2> '%s'", root, model, err),
              2, "a bad thread count: exit 2");
    CHECK_INT(sh("'%s/build/clef' decide --help > '%s'", root, out), 0, "--help: exit 0");
    CHECK_INT(sh("grep -q -- --truncate-state '%s'", out), 0, "--help lists the options");
    if (access("build/libclef_cuda.so", F_OK) != 0) {
        CHECK_INT(sh("echo '{}' | '%s/build/clef' decide '%s' --backend cuda > '%s' 2> '%s'",
                     root, model, out, err), 1, "no CUDA backend: exit 1");
        CHECK_INT(sh("grep -qi cuda '%s' && ! grep -qi -e abort -e segmentation '%s'",
                     err, err), 0, "with a message that says so");
    }
}

/* A block-quantized file's default is the integer products: the bytes of
 * --precision q8, not those of fp32 (backend/registry.c says why). */
static void
check_default_q8(const char *model, json_t *cases)
{
    json_t      *resp = json_array();
    char        *def = NULL, *q8 = NULL, *fp32 = NULL;
    const char  *exact = exact_flag;

    exact_flag = "";
    run_cli(model, cases, resp, "", &def);
    run_cli(model, cases, resp, "--precision q8", &q8);
    run_cli(model, cases, resp, "--precision fp32", &fp32);
    exact_flag = exact;
    CHECK(def != NULL && q8 != NULL && strcmp(def, q8) == 0,
          "the default on a block-quantized file: the bytes of --precision q8");
    CHECK(def != NULL && fp32 != NULL && strcmp(def, fp32) != 0,
          "which are not those of --precision fp32");
    free(def);
    free(q8);
    free(fp32);
    json_decref(resp);
}

/* Every check of one model (a checkpoint directory or a GGUF file) on the
 * reference's answers in jsonl; all: the invariance, precision and
 * in-process checks too, besides the answers and the packed batch. */
static void
check_model(const char *name, const char *model, const char *jsonl,
    json_t *mv, int all)
{
    json_t  *cases, *responses, *packed, *c;
    char    *text = NULL, *packed_text = NULL;
    size_t   i;
    double   logit = max_logit, prob = max_prob;

    max_logit = max_prob = 0.0;
    cases = read_jsonl(jsonl);
    CHECK_INT(json_array_size(cases), json_integer_value(json_object_get(mv, "cases")),
              "%s: %zu fixture requests", name, json_array_size(cases));
    responses = json_array();
    packed = json_array();
    run_cli(model, cases, responses, "", &text);
    run_cli(model, cases, packed, "--batch 16", &packed_text);
    check_packed(cases, responses, packed, text, packed_text);
    if (all) {
        check_invariant(model, cases, text);
        check_precision(model, cases, text);
    }
    if (*exact_flag != '\0') {
        check_default_q8(model, cases);
    }
    free(text);
    free(packed_text);
    json_array_foreach(cases, i, c) {
        check_response(c, json_array_get(responses, i));
    }
    printf("# %s: max |logit| diff %.3g, max |probability| diff %.3g\n", name,
           max_logit, max_prob);
    max_logit = max_logit > logit ? max_logit : logit;
    max_prob = max_prob > prob ? max_prob : prob;
    if (all) {
        check_inprocess(model, cases, responses);
    }
    json_decref(responses);
    json_decref(packed);
    json_decref(cases);
}

int
main(void)
{
    char         path[2048], dir[2048];
    static const char  *manifests[] = {
        "manifest.json",        /* Clef: gen_model_fixtures.py */
        "manifest-omni.json"    /* Clef Omni: gen_omni_fixtures.py */
    };
    json_t      *manifest, *models, *mv, *gguf;
    json_error_t jerr;
    size_t       m;
    const char  *name;

    if (getcwd(root, sizeof(root)) == NULL) {
        CHECK(0, "getcwd");
        return check_done();
    }
    snprintf(tmp, sizeof(tmp), "/tmp/clef-e2e-XXXXXX");
    if (mkdtemp(tmp) == NULL) {
        CHECK(0, "mkdtemp");
        return check_done();
    }
    for (m = 0; m < sizeof(manifests) / sizeof(manifests[0]); m++) {
        snprintf(path, sizeof(path), "%s/e2e/%s", check_fixtures(), manifests[m]);
        manifest = json_load_file(path, 0, &jerr);
        CHECK(manifest != NULL, "read %s", path);
        models = json_object_get(manifest, "models");

        json_object_foreach(models, name, mv) {
            int          seed = (int) json_integer_value(json_object_get(mv, "seed"));
            int          shards = (int) json_integer_value(json_object_get(mv, "shards"));
            const char  *tk = json_string_value(json_object_get(mv, "tokenizer"));
            char         tokenizer[2048];

            /* a model made with another tokenizer names it (Clef Omni's) */
            if (tk != NULL) {
                snprintf(tokenizer, sizeof(tokenizer), "%s/%s/%s", root,
                         check_fixtures(), tk);
            } else {
                snprintf(tokenizer, sizeof(tokenizer), "%s",
                         check_qwen3_tokenizer());
            }
            snprintf(dir, sizeof(dir), "%s/%s", tmp, name);
            CHECK_INT(sh("'%s/build/clef' mkmodel --config '%s/%s/models/%s.json' "
                         "--tokenizer '%s' --seed %d --shards %d "
                         "--out '%s' > /dev/null", root, root, check_fixtures(), name,
                         tokenizer, seed, shards, dir), 0,
                      "%s: mkmodel --seed %d --shards %d", name, seed, shards);
            CHECK_INT(sh("cd '%s' && sha256sum --quiet -c '%s/%s/models/%s.sha256'", dir, root,
                         check_fixtures(), name), 0, "%s: files as t/fixtures/models/%s.sha256",
                      name, name);

            snprintf(path, sizeof(path), "%s/e2e/%s.jsonl", check_fixtures(), name);
            check_model(name, dir, path, mv, 1);
        }
        if (m == 0 && json_object_size(models) > 0) {
            snprintf(dir, sizeof(dir), "%s/%s", tmp,
                     json_object_iter_key(json_object_iter(models)));
            check_refusals(dir);
        }
        json_decref(manifest);
    }

    /* the Clef GGUF fixtures (t/fixtures/gguf: llama.cpp's converter and
     * llama-quantize), against the reference run on their dequantized
     * weights (t/reference/gen_gguf_reference.py); every type answers and
     * batches exactly, two (a K mix and Q8_0) go through every check */
    snprintf(path, sizeof(path), "%s/gguf/e2e/manifest.json", check_fixtures());
    gguf = json_load_file(path, 0, &jerr);
    CHECK(gguf != NULL && json_object_size(json_object_get(gguf, "models")) >= 7,
          "read %s: the reference of every GGUF fixture", path);
    json_object_foreach(json_object_get(gguf, "models"), name, mv) {
        snprintf(dir, sizeof(dir), "%s/%s/gguf/%s", root, check_fixtures(),
                 json_string_value(json_object_get(mv, "gguf")));
        snprintf(path, sizeof(path), "%s/gguf/e2e/%s.jsonl", check_fixtures(),
                 name);
        exact_flag = strcmp(name, "f32") == 0 || strcmp(name, "f16") == 0
                     || strcmp(name, "bf16") == 0 ? "" : "--precision fp32 ";
        check_model(name, dir, path, mv,
                    strcmp(name, "q4_k_m") == 0 || strcmp(name, "q8_0") == 0);
    }
    exact_flag = "";
    json_decref(gguf);
    printf("# e2e: max |logit| diff %.3g, max |probability| diff %.3g, "
           "max |hidden| diff %.3g\n", max_logit, max_prob, max_hidden);

    sh("rm -rf '%s'", tmp);
    return check_done();
}
