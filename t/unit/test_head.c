/*
 * The CPU joint schema head against the reference JointSchemaHead in fp32
 * (t/fixtures/head, written by t/reference/gen_head_fixtures.py): logits
 * within 1e-5 on every case, nn.MultiheadAttention's layout on its own, and
 * the refusals (missing tensor, wrong shape, bad records).
 */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "cpu/model/head.h"
#include "cpu/model/head_source.h"
#include "cpu/ops/head_mha.h"
#include "model/safetensors.h"

#define LOGIT_TOL  1e-5

static char  dir[512];

static clef_safetensors *
open_fixture(const char *name)
{
    char               path[768];
    clef_error         err;
    clef_safetensors  *st;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    st = clef_safetensors_open(path, 0, &err);
    CHECK(st != NULL, "open %s", name);
    if (st == NULL) {
        printf("#   %s\n", err.message);
    }
    return st;
}

static const clef_tensor *
st_get(const void *ctx, const char *name)
{
    return clef_safetensors_find(ctx, name);
}

/* A source that hides one tensor, to see the refusal name it. */
static const char  *hidden_name;

static const clef_tensor *
st_get_hiding(const void *ctx, const char *name)
{
    return strcmp(name, hidden_name) == 0 ? NULL : clef_safetensors_find(ctx, name);
}

static clef_head_config
read_config(json_t *doc)
{
    json_t            *c = json_object_get(doc, "config");
    clef_head_config   cfg;

    cfg.hidden_size = (int) json_integer_value(json_object_get(c, "hidden_size"));
    cfg.width = (int) json_integer_value(json_object_get(c, "width"));
    cfg.routing_layers = (int) json_integer_value(json_object_get(c, "routing_layers"));
    cfg.layers = (int) json_integer_value(json_object_get(c, "layers"));
    cfg.heads = (int) json_integer_value(json_object_get(c, "heads"));
    cfg.feedforward = (int) json_integer_value(json_object_get(c, "feedforward"));
    return cfg;
}

/* A clef_record from a case of cases.json; its arrays are malloc'd. */
typedef struct {
    clef_record  rec;
    clef_span    qspans[16];
    clef_qtype   qtypes[16];
    int          offsets[17];
    clef_span    ospans[64];
} fixture_record;

static void
build_record(fixture_record *fr, json_t *c, const clef_tensor *ids)
{
    json_t  *qs = json_object_get(c, "questions"), *q, *os;
    size_t   i, j;
    int      n = 0;

    memset(fr, 0, sizeof(*fr));
    fr->rec.ids.v = (int32_t *) ids->data;
    fr->rec.ids.n = (size_t) ids->numel;
    fr->rec.n_questions = (int) json_array_size(qs);
    fr->rec.question_spans = fr->qspans;
    fr->rec.question_types = fr->qtypes;
    fr->rec.option_offset = fr->offsets;
    fr->rec.option_spans = fr->ospans;
    json_array_foreach(qs, i, q) {
        fr->qtypes[i] = (clef_qtype) json_integer_value(json_object_get(q, "type"));
        fr->qspans[i].start = (int32_t) json_integer_value(
            json_array_get(json_object_get(q, "span"), 0));
        fr->qspans[i].end = (int32_t) json_integer_value(
            json_array_get(json_object_get(q, "span"), 1));
        fr->offsets[i] = n;
        os = json_object_get(q, "options");
        for (j = 0; j < json_array_size(os); j++) {
            fr->ospans[n].start = (int32_t) json_integer_value(
                json_array_get(json_array_get(os, j), 0));
            fr->ospans[n].end = (int32_t) json_integer_value(
                json_array_get(json_array_get(os, j), 1));
            n++;
        }
    }
    fr->offsets[fr->rec.n_questions] = n;
    fr->rec.n_options = n;
}

static void
test_cases(json_t *doc, clef_cpu_head *h, clef_safetensors *in)
{
    json_t             *cases = json_object_get(doc, "cases"), *c, *want;
    size_t              i, k;
    char                name[128];
    const char         *cname;
    const clef_tensor  *hid, *ids;
    fixture_record      fr;
    float               logits[64];
    double              d, worst = 0.0;
    clef_error          err;
    int                 rc;

    json_array_foreach(cases, i, c) {
        cname = json_string_value(json_object_get(c, "name"));
        snprintf(name, sizeof(name), "%s.hidden", cname);
        hid = clef_safetensors_find(in, name);
        snprintf(name, sizeof(name), "%s.input_ids", cname);
        ids = clef_safetensors_find(in, name);
        CHECK(hid != NULL && ids != NULL, "%s: inputs present", cname);
        if (hid == NULL || ids == NULL) {
            continue;
        }
        build_record(&fr, c, ids);
        want = json_object_get(c, "logits");

        rc = clef_cpu_head_forward(h, hid->data, &fr.rec, logits, &err);
        CHECK_INT(rc, 0, "%s: forward (%d tokens, %d questions, %d options)",
                  cname, (int) fr.rec.ids.n, fr.rec.n_questions, fr.rec.n_options);
        if (rc != 0) {
            printf("#   %s\n", err.message);
            continue;
        }
        CHECK_INT(json_array_size(want), fr.rec.n_options, "%s: option count", cname);
        d = 0.0;
        for (k = 0; k < json_array_size(want) && k < (size_t) fr.rec.n_options; k++) {
            double  e = fabs(logits[k] - json_real_value(json_array_get(want, k)));

            d = e > d ? e : d;
        }
        worst = d > worst ? d : worst;
        CHECK(d <= LOGIT_TOL, "%s: logits within %g of the reference (max %.3g)",
              cname, LOGIT_TOL, d);
    }
    printf("# head: max |logit - reference| = %.3g over %zu cases\n", worst,
           json_array_size(cases));
}

static void
test_mha(void)
{
    clef_safetensors   *st = open_fixture("mha.safetensors");
    const clef_tensor  *q, *m, *e, *en;
    clef_head_mha       a;
    clef_head_ln        ln;
    float               out[5 * 32];
    double              d, dn;
    clef_error          err;
    int64_t             i;

    if (st == NULL) {
        return;
    }
    a.width = 32;
    a.heads = 4;
    a.in_weight = clef_safetensors_find(st, "in_proj_weight")->data;
    a.in_bias = clef_safetensors_find(st, "in_proj_bias")->data;
    a.out_weight = clef_safetensors_find(st, "out_proj.weight")->data;
    a.out_bias = clef_safetensors_find(st, "out_proj.bias")->data;
    ln.n = 32;
    ln.weight = clef_safetensors_find(st, "memory_norm.weight")->data;
    ln.bias = clef_safetensors_find(st, "memory_norm.bias")->data;
    q = clef_safetensors_find(st, "query");
    m = clef_safetensors_find(st, "memory");
    e = clef_safetensors_find(st, "expected");
    en = clef_safetensors_find(st, "expected_normed");
    CHECK(q->shape[0] == 5 && q->shape[1] == 32 && m->shape[0] > CLEF_HEAD_MHA_CHUNK,
          "mha fixture: 5 queries, %lld keys (more than one chunk)",
          (long long) m->shape[0]);

    CHECK_INT(clef_head_mha_forward(&a, q->data, 5, m->data, (size_t) m->shape[0],
                                    NULL, out, &err), 0, "mha: forward");
    d = 0.0;
    for (i = 0; i < e->numel; i++) {
        double  x = fabs(out[i] - ((const float *) e->data)[i]);

        d = x > d ? x : d;
    }
    CHECK(d <= 1e-5, "mha: q/k/v rows and head columns as nn.MultiheadAttention "
          "(max %.3g)", d);

    CHECK_INT(clef_head_mha_forward(&a, q->data, 5, m->data, (size_t) m->shape[0],
                                    &ln, out, &err), 0, "mha: forward, normed memory");
    dn = 0.0;
    for (i = 0; i < en->numel; i++) {
        double  x = fabs(out[i] - ((const float *) en->data)[i]);

        dn = x > dn ? x : dn;
    }
    CHECK(dn <= 1e-5, "mha: LayerNorm'd memory (max %.3g)", dn);

    CHECK_INT(clef_head_mha_forward(&a, q->data, 5, m->data, 0, NULL, out, &err), -1,
              "mha: no keys is refused");
    clef_safetensors_close(st);
}

static void
test_refusals(json_t *doc, clef_safetensors *weights, clef_safetensors *in,
    clef_head_config cfg, clef_cpu_head *h)
{
    clef_cpu_head      *bad;
    clef_error          err;
    clef_head_config    c2 = cfg;
    const clef_tensor  *lm = clef_safetensors_find(in, "lm_head.weight");
    const clef_tensor  *hid = clef_safetensors_find(in, "basic.hidden");
    const clef_tensor  *ids = clef_safetensors_find(in, "basic.input_ids");
    fixture_record      fr;
    float               logits[64];
    int32_t             idv[256];

    hidden_name = "layers.1.norm2.bias";
    CHECK_INT(clef_cpu_head_open_tensors(&cfg, st_get_hiding, weights, lm, &bad, &err),
              -1, "a missing tensor is refused");
    CHECK(strstr(err.message, "layers.1.norm2.bias") != NULL,
          "the refusal names it: %s", err.message);
    CHECK(bad == NULL, "and returns no head");

    hidden_name = "residual_gate";
    CHECK_INT(clef_cpu_head_open_tensors(&cfg, st_get_hiding, weights, lm, &bad, &err),
              -1, "a missing scalar is refused");

    c2.feedforward = cfg.feedforward + 1;
    CHECK_INT(clef_cpu_head_open_tensors(&c2, st_get, weights, lm, &bad, &err), -1,
              "a shape the config does not imply is refused");
    CHECK(strstr(err.message, "evidence_layers.0.feedforward.0.weight") != NULL
          && strstr(err.message, "[49,32]") != NULL,
          "the refusal names tensor and shape: %s", err.message);

    c2 = cfg;
    c2.hidden_size = cfg.hidden_size + 2;
    CHECK_INT(clef_cpu_head_open_tensors(&c2, st_get, weights, lm, &bad, &err), -1,
              "an lm_head of another hidden size is refused");

    c2 = cfg;
    c2.heads = 5;
    CHECK_INT(clef_cpu_head_open_tensors(&c2, st_get, weights, lm, &bad, &err), -1,
              "a width that is no multiple of heads is refused");

    build_record(&fr, json_array_get(json_object_get(doc, "cases"), 0), ids);
    CHECK((size_t) ids->numel <= sizeof(idv) / sizeof(idv[0]), "basic case fits");
    memcpy(idv, ids->data, (size_t) ids->numel * sizeof(int32_t));
    fr.rec.ids.v = idv;
    idv[fr.ospans[0].start] = (int32_t) lm->shape[0];
    CHECK_INT(clef_cpu_head_forward(h, hid->data, &fr.rec, logits, &err), -1,
              "a token id outside lm_head is refused");
    idv[fr.ospans[0].start] = ((const int32_t *) ids->data)[fr.ospans[0].start];

    fr.qspans[1].end = fr.qspans[1].start;
    CHECK_INT(clef_cpu_head_forward(h, hid->data, &fr.rec, logits, &err), -1,
              "an empty question span is refused (the reference gives NaN)");
    CHECK_INT(err.status, 400, "with status 400");
    CHECK_STR(err.type, "empty_span", "and type empty_span");

    build_record(&fr, json_array_get(json_object_get(doc, "cases"), 0), ids);
    fr.ospans[2].end = (int32_t) ids->numel + 1;
    CHECK_INT(clef_cpu_head_forward(h, hid->data, &fr.rec, logits, &err), -1,
              "an option span past the record is refused");
}

int
main(void)
{
    char               path[768];
    json_t            *doc;
    json_error_t       jerr;
    clef_safetensors  *weights, *in;
    clef_head_config   cfg;
    clef_cpu_head     *h = NULL;
    clef_error         err;

    snprintf(dir, sizeof(dir), "%s/head", check_fixtures());
    snprintf(path, sizeof(path), "%s/cases.json", dir);
    doc = json_load_file(path, 0, &jerr);
    CHECK(doc != NULL, "read %s", path);
    if (doc == NULL) {
        return check_done();
    }
    cfg = read_config(doc);
    weights = open_fixture("joint_head.safetensors");
    in = open_fixture("inputs.safetensors");
    if (weights == NULL || in == NULL) {
        json_decref(doc);
        return check_done();
    }

    CHECK_INT(clef_cpu_head_open_tensors(&cfg, st_get, weights,
                                         clef_safetensors_find(in, "lm_head.weight"),
                                         &h, &err), 0,
              "open the head (W %d, %d heads, F %d, H %d)", cfg.width, cfg.heads,
              cfg.feedforward, cfg.hidden_size);
    if (h == NULL) {
        printf("#   %s\n", err.message);
    } else {
        test_cases(doc, h, in);
        test_refusals(doc, weights, in, cfg, h);
        clef_cpu_head_close(h);
    }
    test_mha();

    clef_safetensors_close(weights);
    clef_safetensors_close(in);
    json_decref(doc);
    return check_done();
}
