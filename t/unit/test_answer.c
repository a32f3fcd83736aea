/*
 * From logits to the System One answer: the protocol's conformance examples
 * (docs/spec/protocol.md §9: 2, 3, 4, 5, 6), the confidence formulas,
 * first-in-request-order ties, K = 1, Python round(x, 4) (ties to even on
 * exact binary values), whole values as 1.0/0.0, and the raw block.
 */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "protocol/answer.h"

#define NEG  (-100.0f)          /* a logit whose probability rounds to 0.0 */

typedef struct {
    clef_request  req;
    clef_record   rec;
    int           offsets[65];
    int           ok;
} parsed;

/* Parses body and builds the record the answer needs: question count,
 * option offsets and the number of tokens. */
static void
parse(parsed *p, const char *body, const clef_limits *lim, size_t tokens)
{
    clef_error  err;
    int         q, n = 0;

    memset(p, 0, sizeof(*p));
    p->ok = clef_request_parse(&p->req, body, strlen(body), lim, &err) == 0;
    CHECK(p->ok, "parse %.60s...", body);
    if (!p->ok) {
        printf("#   %s\n", err.message);
        return;
    }
    for (q = 0; q < p->req.n_questions; q++) {
        p->offsets[q] = n;
        n += p->req.questions[q].n_options;
    }
    p->offsets[p->req.n_questions] = n;
    p->rec.n_questions = p->req.n_questions;
    p->rec.option_offset = p->offsets;
    p->rec.n_options = n;
    p->rec.ids.n = tokens;
}

/* The whole response for body with logits in encoder order. */
static void
expect(const char *name, const char *body, const clef_limits *lim,
    const float *logits, const clef_answer_opts *opts, const char *want)
{
    parsed    p;
    clef_buf  out = { 0 };

    parse(&p, body, lim, 123);
    if (!p.ok) {
        return;
    }
    CHECK_INT(clef_answer_json(&out, &p.req, &p.rec, logits, opts), 0, "%s: answer", name);
    CHECK_STR(out.data, want, "%s: exact response", name);
    clef_buf_free(&out);
    clef_request_free(&p.req);
}

static void
test_examples(void)
{
    /* §9.2: request order billing, technical, sales; encoder order
     * billing, sales, technical.  .88/.12/0 -> confidence (3*.88-1)/2 = .82 */
    float  ex2[] = { logf(0.88f), NEG, logf(0.12f) };
    /* §9.3: object levels, {0,.9,.1} -> score 1.1, MAD confidence .85; a
     * noul with instructions null */
    float  ex3[] = { NEG, logf(0.9f), logf(0.1f), logf(0.3f), logf(0.7f) };
    /* §9.4: noul with criteria, .6/.3/.1/0 over refund, shipping, account,
     * other (encoder order account, other, refund, shipping) -> .4667 */
    float  ex4[] = { logf(0.95f), logf(0.05f),
                     logf(0.1f), NEG, logf(0.6f), logf(0.3f) };
    /* §9.5: {.7,.2,.1,0,0} -> score .4, MAD .6667; {.05,.15,.8} -> 1.75, .625 */
    float  ex5[] = { logf(0.7f), logf(0.2f), logf(0.1f), NEG, NEG,
                     logf(0.05f), logf(0.15f), logf(0.8f) };
    /* §9.6: one level; uniform 4-way choice, first label in request order */
    float  ex6[] = { 3.5f, 0.0f, 0.0f, 0.0f, 0.0f };

    expect("example 2",
        "{\"model\":\"jev-latest\",\"state\":\"x\",\"questions\":{\"dept\":{"
        "\"type\":\"choice\",\"instructions\":\"Which team?\",\"criteria\":{"
        "\"billing\":null,\"technical\":\"Bugs, outages\",\"sales\":null}}}}",
        NULL, ex2, NULL,
        "{\"model\":\"jev-latest\",\"answers\":{\"dept\":{\"type\":\"choice\","
        "\"choice\":\"billing\",\"probabilities\":{\"billing\":0.88,"
        "\"technical\":0.12,\"sales\":0.0},\"confidence\":0.82}},"
        "\"usage\":{\"input_tokens\":123,\"output_tokens\":0}}");

    expect("example 3",
        "{\"model\":\"m\",\"state\":\"x\",\"questions\":{\"sev\":{\"type\":"
        "\"score\",\"instructions\":\"How severe?\",\"criteria\":[{\"what\":"
        "\"Cosmetic\"},{\"what\":\"Workaround exists\",\"examples\":[\"fails "
        "in one browser\"]},{\"what\":\"Blocking\"}]},\"q\":{\"type\":\"noul\","
        "\"instructions\":null}}}",
        NULL, ex3, NULL,
        "{\"model\":\"m\",\"answers\":{\"sev\":{\"type\":\"score\",\"score\":1.1,"
        "\"legend\":{\"0\":{\"what\":\"Cosmetic\"},\"1\":{\"examples\":[\"fails "
        "in one browser\"],\"what\":\"Workaround exists\"},\"2\":{\"what\":"
        "\"Blocking\"}},\"probabilities\":{\"0\":0.0,\"1\":0.9,\"2\":0.1},"
        "\"confidence\":0.85},\"q\":{\"type\":\"noul\",\"noul\":0.3}},"
        "\"usage\":{\"input_tokens\":123,\"output_tokens\":0}}");

    expect("example 4",
        "{\"model\":\"m\",\"state\":{\"ticket\":{\"subject\":\"Refund?\","
        "\"body\":\"Charged twice\"}},\"questions\":{\"refund\":{\"type\":"
        "\"noul\",\"instructions\":{\"question\":\"Is `ticket` a refund "
        "request?\"},\"criteria\":{\"true\":\"asks for money back\",\"false\":"
        "\"anything else\"}},\"topic\":{\"type\":\"choice\",\"instructions\":"
        "\"Topic?\",\"criteria\":{\"refund\":null,\"shipping\":null,\"account\":"
        "null,\"other\":null}}}}",
        NULL, ex4, NULL,
        "{\"model\":\"m\",\"answers\":{\"refund\":{\"type\":\"noul\",\"noul\":0.95},"
        "\"topic\":{\"type\":\"choice\",\"choice\":\"refund\",\"probabilities\":{"
        "\"refund\":0.6,\"shipping\":0.3,\"account\":0.1,\"other\":0.0},"
        "\"confidence\":0.4667}},\"usage\":{\"input_tokens\":123,"
        "\"output_tokens\":0}}");

    expect("example 5",
        "{\"model\":\"m\",\"state\":\"x\",\"questions\":{\"five\":{\"type\":"
        "\"score\",\"criteria\":[\"a\",\"b\",\"c\",\"d\",\"e\"]},\"three\":{"
        "\"type\":\"score\",\"criteria\":[\"lo\",\"mid\",\"hi\"]}}}",
        NULL, ex5, NULL,
        "{\"model\":\"m\",\"answers\":{\"five\":{\"type\":\"score\",\"score\":0.4,"
        "\"legend\":{\"0\":\"a\",\"1\":\"b\",\"2\":\"c\",\"3\":\"d\",\"4\":\"e\"},"
        "\"probabilities\":{\"0\":0.7,\"1\":0.2,\"2\":0.1,\"3\":0.0,\"4\":0.0},"
        "\"confidence\":0.6667},\"three\":{\"type\":\"score\",\"score\":1.75,"
        "\"legend\":{\"0\":\"lo\",\"1\":\"mid\",\"2\":\"hi\"},\"probabilities\":{"
        "\"0\":0.05,\"1\":0.15,\"2\":0.8},\"confidence\":0.625}},"
        "\"usage\":{\"input_tokens\":123,\"output_tokens\":0}}");

    expect("example 6",
        "{\"model\":\"m\",\"state\":\"x\",\"questions\":{\"one\":{\"type\":"
        "\"score\",\"instructions\":\"x\",\"criteria\":[\"only\"]},\"u\":{"
        "\"type\":\"choice\",\"criteria\":{\"zeta\":null,\"alpha\":null,"
        "\"mid\":null,\"beta\":null}}}}",
        NULL, ex6, NULL,
        "{\"model\":\"m\",\"answers\":{\"one\":{\"type\":\"score\",\"score\":0.0,"
        "\"legend\":{\"0\":\"only\"},\"probabilities\":{\"0\":1.0},"
        "\"confidence\":1.0},\"u\":{\"type\":\"choice\",\"choice\":\"zeta\","
        "\"probabilities\":{\"zeta\":0.25,\"alpha\":0.25,\"mid\":0.25,"
        "\"beta\":0.25},\"confidence\":0.0}},\"usage\":{\"input_tokens\":123,"
        "\"output_tokens\":0}}");
}

static void
test_edges(void)
{
    char              body[4096], want[8192];
    size_t            n, m;
    int               i;
    float             zeros[32] = { 0 };
    clef_limits       lim;
    clef_answer_opts  opts = { "clef-flash", 0 };
    /* a tie between b and a (request order b, a, c; encoder a, b, c) */
    float             tie[] = { 1.0f, 1.0f, 0.0f };
    /* a certain noul, and a noul at exactly one half */
    float             sure[] = { 0.0f, NEG, 0.0f, 0.0f };

    expect("ties: the first in request order wins",
        "{\"model\":\"m\",\"state\":\"x\",\"questions\":{\"t\":{\"type\":"
        "\"choice\",\"criteria\":{\"b\":null,\"a\":null,\"c\":null}}}}",
        NULL, tie, NULL,
        "{\"model\":\"m\",\"answers\":{\"t\":{\"type\":\"choice\",\"choice\":\"b\","
        "\"probabilities\":{\"b\":0.4223,\"a\":0.4223,\"c\":0.1554},"
        "\"confidence\":0.1335}},\"usage\":{\"input_tokens\":123,"
        "\"output_tokens\":0}}");

    expect("whole values print as 1.0 / 0.0; noul has no confidence; model override",
        "{\"model\":\"jev-latest\",\"state\":\"x\",\"questions\":{\"a\":{\"type\":"
        "\"noul\"},\"b\":{\"type\":\"noul\",\"instructions\":\"?\"}}}",
        NULL, sure, &opts,
        "{\"model\":\"clef-flash\",\"answers\":{\"a\":{\"type\":\"noul\","
        "\"noul\":1.0},\"b\":{\"type\":\"noul\",\"noul\":0.5}},"
        "\"usage\":{\"input_tokens\":123,\"output_tokens\":0}}");

    /* K = 1 choice (when the limits allow it): confidence 1.0 */
    clef_limits_default(&lim);
    lim.min_choices = 1;
    expect("a one-option choice has confidence 1.0",
        "{\"model\":\"m\",\"state\":\"x\",\"questions\":{\"k\":{\"type\":"
        "\"choice\",\"criteria\":{\"only\":\"the one\"}}}}",
        &lim, zeros, NULL,
        "{\"model\":\"m\",\"answers\":{\"k\":{\"type\":\"choice\",\"choice\":"
        "\"only\",\"probabilities\":{\"only\":1.0},\"confidence\":1.0}},"
        "\"usage\":{\"input_tokens\":123,\"output_tokens\":0}}");

    /* 32 equal options: p = 0.03125 exactly, and round(0.03125, 4) is
     * 0.0312 in Python (ties to even), not 0.0313 */
    n = (size_t) snprintf(body, sizeof(body), "{\"model\":\"m\",\"state\":\"x\","
                          "\"questions\":{\"w\":{\"type\":\"choice\",\"criteria\":{");
    m = (size_t) snprintf(want, sizeof(want), "{\"model\":\"m\",\"answers\":{\"w\":"
                          "{\"type\":\"choice\",\"choice\":\"o10\","
                          "\"probabilities\":{");
    for (i = 0; i < 32; i++) {
        n += (size_t) snprintf(body + n, sizeof(body) - n, "%s\"o%d\":null",
                               i ? "," : "", i + 10);
        m += (size_t) snprintf(want + m, sizeof(want) - m, "%s\"o%d\":0.0312",
                               i ? "," : "", i + 10);
    }
    snprintf(body + n, sizeof(body) - n, "}}}}");
    snprintf(want + m, sizeof(want) - m, "},\"confidence\":0.0}},\"usage\":{"
             "\"input_tokens\":123,\"output_tokens\":0}}");
    expect("round(0.03125, 4) = 0.0312 (ties to even)", body, NULL, zeros, NULL, want);

    /* two equal score levels: score 0.5, the mode is level 0, dist = mad_u */
    expect("an even two-level score has confidence 0.0",
        "{\"model\":\"m\",\"state\":\"x\",\"questions\":{\"s\":{\"type\":"
        "\"score\",\"criteria\":[\"no\",[\"yes\",1]]}}}",
        NULL, zeros, NULL,
        "{\"model\":\"m\",\"answers\":{\"s\":{\"type\":\"score\",\"score\":0.5,"
        "\"legend\":{\"0\":\"no\",\"1\":[\"yes\",1]},\"probabilities\":{"
        "\"0\":0.5,\"1\":0.5},\"confidence\":0.0}},\"usage\":{"
        "\"input_tokens\":123,\"output_tokens\":0}}");

    /* labels and ids are JSON strings, non-ASCII written raw */
    expect("unicode labels and escapes",
        "{\"model\":\"m\\u00e9\",\"state\":\"x\",\"questions\":{\"q.1\":{"
        "\"type\":\"choice\",\"criteria\":{\"caf\\u00e9\":null,\"\\\"q\\\"\":"
        "null}}}}",
        NULL, tie, NULL,
        "{\"model\":\"m\xc3\xa9\",\"answers\":{\"q.1\":{\"type\":\"choice\","
        "\"choice\":\"caf\xc3\xa9\",\"probabilities\":{\"caf\xc3\xa9\":0.5,"
        "\"\\\"q\\\"\":0.5},\"confidence\":0.0}},\"usage\":{\"input_tokens\":123,"
        "\"output_tokens\":0}}");
}

static void
test_softmax(void)
{
    parsed  p;
    float   logits[] = { 2.0f, -1.0f, 0.5f, 0.5f, 0.5f, 3.0f, 3.0f };
    float   probs[7];
    double  s0, s1;

    parse(&p, "{\"model\":\"m\",\"state\":\"x\",\"questions\":{\"a\":{\"type\":"
          "\"noul\"},\"b\":{\"type\":\"score\",\"criteria\":[\"x\",\"y\",\"z\"]},"
          "\"c\":{\"type\":\"choice\",\"criteria\":{\"u\":\"1\",\"v\":\"2\"}}}}", NULL, 9);
    if (!p.ok) {
        return;
    }
    clef_answer_softmax(&p.rec, logits, probs);
    s0 = 1.0 / (1.0 + exp(-3.0));
    CHECK_NEAR(probs[0], s0, 1e-7, "softmax over the noul's own two options");
    s1 = (double) probs[2] + probs[3] + probs[4];
    CHECK_NEAR(s1, 1.0, 1e-6, "each question sums to one");
    CHECK(probs[2] == probs[3] && probs[3] == probs[4], "equal logits, equal p");
    CHECK(probs[5] == 0.5f && probs[6] == 0.5f, "a tie is exactly 1/2");
    clef_request_free(&p.req);
}

static void
test_raw(void)
{
    parsed            p;
    clef_buf          out = { 0 };
    clef_answer_opts  opts = { NULL, 1 };
    float             logits[] = { 1.5f, -0.25f, 0.1f, 0.2f, -7.0f };
    float             probs[5];
    json_t           *doc, *raw, *a;
    json_error_t      jerr;
    size_t            k;
    int               exact = 1;

    parse(&p, "{\"model\":\"m\",\"state\":\"x\",\"questions\":{\"n\":{\"type\":"
          "\"noul\"},\"c\":{\"type\":\"choice\",\"criteria\":{\"z\":\"1\",\"a\":\"2\","
          "\"m\":\"3\"}}}}", NULL, 77);
    if (!p.ok) {
        return;
    }
    CHECK_INT(clef_answer_json(&out, &p.req, &p.rec, logits, &opts), 0, "raw answer");
    clef_answer_softmax(&p.rec, logits, probs);
    CHECK(strstr(out.data, "\"noul\":{\"type\":\"noul\"") == NULL
          && strstr(out.data, "\"raw\":{\"options\":[\"true\",\"false\"],"
                    "\"logits\":[1.5,-0.25],\"probabilities\":[") != NULL,
          "noul raw: options in encoder order, logits as repr");
    CHECK(strstr(out.data, "\"raw\":{\"options\":[\"a\",\"m\",\"z\"],"
                 "\"logits\":[0.10000000149011612,0.20000000298023224,-7.0]") != NULL,
          "choice raw: encoder order (sorted labels), the double of each float");

    doc = json_loads(out.data, 0, &jerr);
    CHECK(doc != NULL, "raw response is JSON");
    raw = json_object_get(json_object_get(json_object_get(doc, "answers"), "c"), "raw");
    a = json_object_get(raw, "probabilities");
    CHECK_INT(json_array_size(a), 3, "three raw probabilities");
    for (k = 0; k < json_array_size(a); k++) {
        exact &= json_real_value(json_array_get(a, k)) == (double) probs[2 + k];
    }
    CHECK(exact, "raw probabilities are the unrounded fp32 values, exactly");
    CHECK(json_integer_value(json_object_get(json_object_get(doc, "usage"),
                                             "input_tokens")) == 77, "input_tokens");
    json_decref(doc);
    clef_buf_free(&out);
    clef_request_free(&p.req);
}

int
main(void)
{
    (void) check_fixtures;      /* check.h helpers this test has no use for */
    test_examples();
    test_edges();
    test_softmax();
    test_raw();
    return check_done();
}
