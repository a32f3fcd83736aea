/*
 * The runner the end-to-end tests against a reference share
 * (test_vision_e2e, test_video_e2e, test_omni_e2e, test_omni_video,
 * test_omni_avideo, test_audio_tower): the checkpoint `clef mkmodel` makes
 * of a fixture's config, the fixture's cases, the model opened on the CPU
 * backend, a record's ids and spans against the reference's, its
 * probabilities against the reference's, and the records packed into one
 * batch against each alone.  Include after check.h.
 */
#ifndef CLEF_TEST_E2E_CASES_H
#define CLEF_TEST_E2E_CASES_H

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/backend.h"
#include "check.h"
#include "jsonl.h"
#include "model/model.h"
#include "protocol/encode.h"
#include "protocol/encode_media.h"
#include "protocol/request.h"
#include "shell.h"
#include "vision_cases.h"

/* Whether the test can run: build/clef built (and build/clef-decoder when
 * decoder, which the engine is then told to use), the scratch directory
 * tmp made; 0 when it can, else the skip plan printed. */
static int __attribute__((unused))
e2e_start(char *tmp, int decoder)
{
    if (access("build/clef", X_OK) != 0
        || (decoder && access("build/clef-decoder", X_OK) != 0)
        || mkdtemp(tmp) == NULL)
    {
        printf("1..0 # SKIP build/clef%s is not built\n",
               decoder ? " or build/clef-decoder" : "");
        return -1;
    }
    if (decoder) {
        use_build_decoder();
    }
    return 0;
}


/* The checkpoint of t/fixtures/models/NAME.json with the tokenizer
 * t/fixtures/TOKENIZER and SEED in two shards, written to TMP/NAME (its
 * path in dir); two checks: it is made, and its files are NAME.sha256's. */
static void __attribute__((unused))
e2e_mkmodel(const char *tmp, const char *name, const char *tokenizer,
    int seed, char *dir, size_t size)
{
    char  cwd[1024];

    snprintf(dir, size, "%s/%s", tmp, name);
    CHECK_INT(sh("build/clef mkmodel --config '%s/models/%s.json' "
                 "--tokenizer '%s/%s' --seed %d --shards 2 --out '%s' "
                 "> /dev/null", check_fixtures(), name, check_fixtures(),
                 tokenizer, seed, dir),
              0, "mkmodel %s", name);
    CHECK_INT(sh("cd '%s' && sha256sum --quiet -c '%s/%s/models/%s.sha256'",
                 dir, getcwd(cwd, sizeof(cwd)), check_fixtures(), name), 0,
              "%s: files as t/fixtures/models/%s.sha256", name, name);
}


/* The cases of the fixture file t/fixtures/REL, one a line. */
static __attribute__((unused)) json_t *
e2e_cases(const char *rel)
{
    char  path[1024];

    snprintf(path, sizeof(path), "%s/%s", check_fixtures(), rel);
    return read_jsonl(path);
}


/* The checkpoint in dir opened on the CPU backend with two threads; one
 * check, naming it NAME; 0 when it opens. */
static int __attribute__((unused))
e2e_open(const char *dir, const char *name, clef_model **m,
    const clef_backend_ops **ops, clef_backend **b)
{
    clef_backend_opts  bo = { 0 };
    clef_error         err;

    *b = NULL;
    *m = clef_model_open(dir, 0, &err);
    *ops = clef_backend_find("cpu", &err);
    bo.threads = 2;
    CHECK(*m != NULL && *ops != NULL && (*ops)->open(*m, &bo, b, &err) == 0,
          "%s opens on the CPU backend", name);
    return *b == NULL ? -1 : 0;
}


static int __attribute__((unused))
e2e_ids_equal(json_t *ids, const clef_record *rec)
{
    size_t  i;
    int     ok = json_array_size(ids) == rec->ids.n;

    for (i = 0; ok && i < rec->ids.n; i++) {
        ok = json_integer_value(json_array_get(ids, i)) == rec->ids.v[i];
    }
    return ok;
}


/* Each question's span and its options' spans the reference's
 * ("questions": [{"span": [s, e], "options": [[s, e], ...]}, ...]). */
static int __attribute__((unused))
e2e_spans_equal(json_t *qs, const clef_record *rec)
{
    json_t  *q, *opts, *s;
    int      ok = (int) json_array_size(qs) == rec->n_questions, qi, o, off;

    for (qi = 0; ok && qi < rec->n_questions; qi++) {
        q = json_array_get(qs, (size_t) qi);
        s = json_object_get(q, "span");
        ok = json_integer_value(json_array_get(s, 0))
                 == rec->question_spans[qi].start
             && json_integer_value(json_array_get(s, 1))
                 == rec->question_spans[qi].end;
        opts = json_object_get(q, "options");
        off = rec->option_offset[qi];
        for (o = 0; ok && o < rec->option_offset[qi + 1] - off; o++) {
            s = json_array_get(opts, (size_t) o);
            ok = json_integer_value(json_array_get(s, 0))
                     == rec->option_spans[off + o].start
                 && json_integer_value(json_array_get(s, 1))
                     == rec->option_spans[off + o].end;
        }
    }
    return ok;
}


/* A body encoded with its media (of the kinds in accepts, the
 * CLEF_MEDIA_BIT()s) as the engine does; the refusal in err. */
static int __attribute__((unused))
e2e_encode(const clef_model *m, const char *body, unsigned accepts,
    clef_record *rec, clef_error *err)
{
    clef_request      req;
    clef_encode_opts  eo;
    int               rc;

    memset(err, 0, sizeof(*err));
    clef_encode_opts_default(&eo);
    rc = clef_request_parse(&req, body, strlen(body), NULL, err);
    if (rc == 0) {
        rc = clef_request_check_media(&req, accepts, err);
        if (rc == 0) {
            rc = clef_encode_with_media(m, &req, &eo, rec, err);
        }
        clef_request_free(&req);
    }
    return rc;
}


/* A question's logits as probabilities (in double, as the reference's
 * softmax). */
static void __attribute__((unused))
e2e_probs(const float *logits, int n, double *p)
{
    double  mx = logits[0], s = 0;
    int     i;

    for (i = 1; i < n; i++) {
        mx = logits[i] > mx ? logits[i] : mx;
    }
    for (i = 0; i < n; i++) {
        p[i] = exp((double) logits[i] - mx);
        s += p[i];
    }
    for (i = 0; i < n; i++) {
        p[i] /= s;
    }
}


/* max |p - reference| over every option, the reference's probabilities
 * in c[key] (one array a question); *argmax_ok 0 when a question has
 * another argmax than the reference's, or the reference another count of
 * questions or options. */
static double __attribute__((unused))
e2e_compare(json_t *c, const char *key, const clef_record *rec,
    const float *lg, int *argmax_ok)
{
    json_t  *rp = json_object_get(c, key), *q;
    double   p[256], d = 0, ref, best, rbest;
    int      qi, o, n, arg, rarg;

    *argmax_ok = json_array_size(rp) == (size_t) rec->n_questions;
    for (qi = 0; qi < rec->n_questions; qi++) {
        q = json_array_get(rp, (size_t) qi);
        n = rec->option_offset[qi + 1] - rec->option_offset[qi];
        if (n > 256) {
            *argmax_ok = 0;
            return 1;
        }
        e2e_probs(lg + rec->option_offset[qi], n, p);
        arg = rarg = 0;
        best = rbest = -1;
        *argmax_ok &= json_array_size(q) == (size_t) n;
        for (o = 0; o < n; o++) {
            ref = json_number_value(json_array_get(q, (size_t) o));
            d = fabs(p[o] - ref) > d ? fabs(p[o] - ref) : d;
            if (p[o] > best) {
                best = p[o];
                arg = o;
            }
            if (ref > rbest) {
                rbest = ref;
                rarg = o;
            }
        }
        *argmax_ok &= arg == rarg;
    }
    return d;
}


/* The n records packed into one batch (between two text-only records of
 * the state STATE, none when NULL) give every logit of each alone
 * (alone[k], as run by itself) bit for bit; 1 when they do. */
static int __attribute__((unused))
e2e_packed(const clef_model *m, const clef_backend_ops *ops,
    clef_backend *b, const char *state, const clef_record *recs, int n,
    float *const *alone)
{
    clef_request         req;
    clef_encode_opts     eo;
    clef_error           err;
    clef_record          text[2];
    const clef_record  **ptrs;
    clef_buf             t = { NULL, 0, 0 };
    float               *packed, tl[2][8];
    int                  k, o, off, total = 0, ok, ends = state != NULL;

    memset(text, 0, sizeof(text));
    ptrs = malloc(sizeof(*ptrs) * (size_t) (n + 2));
    if (ends) {
        clef_buf_printf(&t, "{\"model\":\"m\",\"state\":\"%s\","
                        "\"questions\":{\"q\":{\"type\":\"noul\"}}}", state);
        clef_encode_opts_default(&eo);
        for (k = 0; k < 2; k++) {
            clef_request_parse(&req, t.data, t.len, NULL, &err);
            clef_encode(clef_model_tokenizer(m), &req, &eo, &text[k], &err);
            clef_request_free(&req);
            forward(ops, b, (const clef_record *const []) { &text[k] }, 1,
                    tl[k]);
            total += 2;
        }
        clef_buf_free(&t);
    }
    for (k = 0; ptrs != NULL && k < n; k++) {
        ptrs[k + ends] = &recs[k];
        total += recs[k].n_options;
    }
    if (ptrs != NULL && ends) {
        ptrs[0] = &text[0];
        ptrs[n + 1] = &text[1];
    }
    packed = malloc(sizeof(float) * (size_t) (total + 1));
    ok = ptrs != NULL && packed != NULL && n + 2 * ends > 0
         && forward(ops, b, ptrs, n + 2 * ends, packed) == 0;
    ok = ok && (!ends || memcmp(packed, tl[0], sizeof(float) * 2) == 0);
    off = 2 * ends;
    for (k = 0; ok && k < n; k++) {
        for (o = 0; o < recs[k].n_options; o++) {
            ok &= packed[off + o] == alone[k][o];
        }
        off += recs[k].n_options;
    }
    ok = ok && (!ends || memcmp(packed + off, tl[1], sizeof(float) * 2) == 0);
    free(packed);
    free(ptrs);
    if (ends) {
        clef_record_free(&text[0]);
        clef_record_free(&text[1]);
    }
    return ok;
}


/* The records and their logits freed, the backend and the model closed,
 * the scratch directory removed; the plan printed and the exit status. */
static int __attribute__((unused))
e2e_done(const char *tmp, clef_model *m, const clef_backend_ops *ops,
    clef_backend *b, json_t *cases, clef_record *recs, float **alone, int n)
{
    int  k;

    for (k = 0; k < n; k++) {
        clef_record_free(&recs[k]);
        free(alone[k]);
    }
    ops->close(b);
    clef_model_close(m);
    json_decref(cases);
    sh("rm -rf '%s'", tmp);
    return check_done();
}

#endif
