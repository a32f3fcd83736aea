/*
 * Option logits -> the System One response (docs/spec/protocol.md §3-§4,
 * docs/spec/encoder-and-head.md §6).  Probabilities are the per-question fp32
 * softmax; confidences and the score are computed from those unrounded
 * values promoted to double; every printed value is Python's round(x, 4)
 * written as Python's repr (so 1 -> 1.0, 0 -> 0.0).
 */
#include "protocol/answer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/mem.h"
#include "text/render.h"

void
clef_answer_softmax(const clef_record *rec, const float *logits, float *probs)
{
    int    q, o, o0, o1;
    float  m, sum;

    for (q = 0; q < rec->n_questions; q++) {
        o0 = rec->option_offset[q];
        o1 = rec->option_offset[q + 1];
        if (o1 <= o0) {
            continue;
        }
        m = logits[o0];
        for (o = o0 + 1; o < o1; o++) {
            m = logits[o] > m ? logits[o] : m;
        }
        sum = 0.0f;
        for (o = o0; o < o1; o++) {
            probs[o] = expf(logits[o] - m);
            sum += probs[o];
        }
        for (o = o0; o < o1; o++) {
            probs[o] /= sum;
        }
    }
}

/* Python's round(x, 4): the correctly rounded decimal of the exact binary
 * value (glibc's printf is exact and breaks ties to even, as CPython's
 * dtoa does), read back as the nearest double. */
static double
round4(double x)
{
    char  b[64];

    snprintf(b, sizeof(b), "%.4f", x);
    return strtod(b, NULL);
}

/* A value as the reference would print it; JSON has no NaN, so a non-finite
 * value (which only a broken model produces) is written as null. */
static int
put_value(clef_buf *out, double x, int rounded)
{
    if (!isfinite(x)) {
        return clef_buf_append(out, "null", 4);
    }
    return clef_render_float(out, rounded ? round4(x) : x);
}

static int
put_str(clef_buf *out, clef_str s)
{
    return clef_render_string(out, s.s, s.len);
}

static int
put_lit(clef_buf *out, const char *s)
{
    return clef_buf_append(out, s, strlen(s));
}

typedef struct {
    const clef_question  *q;
    const float          *p;       /* the question's probabilities, encoder order */
    int                   K;
} question_probs;

/* Probability of the option at request position i. */
static double
p_at(const question_probs *qp, int i)
{
    int  o = clef_question_option_by_request_index(qp->q, i);

    return o >= 0 && o < qp->K ? (double) qp->p[o] : NAN;
}

/* {"label":p,...} in request order */
static int
put_probabilities(clef_buf *out, const question_probs *qp)
{
    int  i, o, rc = put_lit(out, "{");

    for (i = 0; rc == 0 && i < qp->K; i++) {
        o = clef_question_option_by_request_index(qp->q, i);
        rc = (i ? put_lit(out, ",") : 0)
             || put_str(out, qp->q->options[o < 0 ? 0 : o].id)
             || put_lit(out, ":")
             || put_value(out, p_at(qp, i), 1);
    }
    return rc || put_lit(out, "}");
}

static int
answer_noul(clef_buf *out, const question_probs *qp)
{
    int  o, t = 0;

    for (o = 0; o < qp->K; o++) {
        if (qp->q->options[o].id.len == 4
            && memcmp(qp->q->options[o].id.s, "true", 4) == 0)
        {
            t = o;
            break;
        }
    }
    return put_lit(out, "{\"type\":\"noul\",\"noul\":")
           || put_value(out, (double) qp->p[t], 1);
}

static int
answer_choice(clef_buf *out, const question_probs *qp)
{
    int     i, best = 0, K = qp->K;
    double  pmax = p_at(qp, 0), c;

    /* Python max(): the first maximum in request order wins */
    for (i = 1; i < K; i++) {
        if (p_at(qp, i) > pmax) {
            pmax = p_at(qp, i);
            best = i;
        }
    }
    if (K == 1) {
        c = 1.0;
    } else {
        c = (K * pmax - 1.0) / (K - 1);
        c = c < 0.0 ? 0.0 : (c > 1.0 ? 1.0 : c);
    }

    i = clef_question_option_by_request_index(qp->q, best);
    return put_lit(out, "{\"type\":\"choice\",\"choice\":")
           || put_str(out, qp->q->options[i < 0 ? 0 : i].id)
           || put_lit(out, ",\"probabilities\":")
           || put_probabilities(out, qp)
           || put_lit(out, ",\"confidence\":")
           || put_value(out, c, 1);
}

static int
answer_score(clef_buf *out, const question_probs *qp)
{
    int                 i, m = 0, K = qp->K, o, rc;
    double              score = 0.0, dist = 0.0, mad = 0.0, pm = p_at(qp, 0), c;
    const clef_option  *opt;

    for (i = 0; i < K; i++) {
        score += i * p_at(qp, i);
        if (p_at(qp, i) > pm) {
            pm = p_at(qp, i);
            m = i;
        }
    }
    if (K == 1) {
        c = 1.0;
    } else {
        /* mean absolute deviation from the mode, against the uniform's */
        for (i = 0; i < K; i++) {
            dist += p_at(qp, i) * abs(i - m);
            mad += fabs(i - (K - 1) / 2.0);
        }
        mad /= K;
        c = 1.0 - dist / mad;
        c = c < 0.0 ? 0.0 : c;
    }

    rc = put_lit(out, "{\"type\":\"score\",\"score\":")
         || put_value(out, score, 1)
         || put_lit(out, ",\"legend\":{");
    for (i = 0; rc == 0 && i < K; i++) {
        o = clef_question_option_by_request_index(qp->q, i);
        opt = &qp->q->options[o < 0 ? 0 : o];
        rc = (i ? put_lit(out, ",") : 0)
             || put_str(out, opt->id)
             || put_lit(out, ":")
             || (opt->description ? clef_render_json(out, opt->description)
                                  : put_lit(out, "null"));
    }
    return rc
           || put_lit(out, "},\"probabilities\":")
           || put_probabilities(out, qp)
           || put_lit(out, ",\"confidence\":")
           || put_value(out, c, 1);
}

/* "raw":{"options":[...],"logits":[...],"probabilities":[...]}, encoder order */
static int
put_raw(clef_buf *out, const question_probs *qp, const float *logits)
{
    int  o, rc = put_lit(out, ",\"raw\":{\"options\":[");

    for (o = 0; rc == 0 && o < qp->K; o++) {
        rc = (o ? put_lit(out, ",") : 0) || put_str(out, qp->q->options[o].id);
    }
    rc = rc || put_lit(out, "],\"logits\":[");
    for (o = 0; rc == 0 && o < qp->K; o++) {
        rc = (o ? put_lit(out, ",") : 0) || put_value(out, (double) logits[o], 0);
    }
    rc = rc || put_lit(out, "],\"probabilities\":[");
    for (o = 0; rc == 0 && o < qp->K; o++) {
        rc = (o ? put_lit(out, ",") : 0) || put_value(out, (double) qp->p[o], 0);
    }
    return rc || put_lit(out, "]}");
}

int
clef_answer_json(clef_buf *out, const clef_request *req, const clef_record *rec,
    const float *logits, const clef_answer_opts *opts)
{
    int             q, n, rc;
    float          *probs;
    question_probs  qp;

    n = rec->n_options > 0 ? rec->n_options : 1;
    probs = clef_mem_alloc((size_t) n * sizeof(float));
    if (probs == NULL) {
        return -1;
    }
    clef_answer_softmax(rec, logits, probs);

    rc = put_lit(out, "{\"model\":");
    if (rc == 0 && opts != NULL && opts->model != NULL) {
        rc = clef_render_string(out, opts->model, strlen(opts->model));
    } else if (rc == 0) {
        rc = put_str(out, req->model);
    }
    rc = rc || put_lit(out, ",\"answers\":{");

    for (q = 0; rc == 0 && q < req->n_questions && q < rec->n_questions; q++) {
        qp.q = &req->questions[q];
        qp.p = probs + rec->option_offset[q];
        qp.K = rec->option_offset[q + 1] - rec->option_offset[q];
        if (qp.K != qp.q->n_options || qp.K <= 0) {
            clef_mem_free(probs);
            return -1;
        }

        rc = (q ? put_lit(out, ",") : 0) || put_str(out, qp.q->id) || put_lit(out, ":");
        if (rc == 0) {
            switch (qp.q->type) {
            case CLEF_QTYPE_NOUL:
                rc = answer_noul(out, &qp);
                break;
            case CLEF_QTYPE_CHOICE:
                rc = answer_choice(out, &qp);
                break;
            default:
                rc = answer_score(out, &qp);
                break;
            }
        }
        if (rc == 0 && opts != NULL && opts->raw) {
            rc = put_raw(out, &qp, logits + rec->option_offset[q]);
        }
        rc = rc || put_lit(out, "}");
    }

    rc = rc || clef_buf_printf(out, "},\"usage\":{\"input_tokens\":%zu,"
                               "\"output_tokens\":0}}", rec->ids.n) < 0;
    clef_mem_free(probs);
    return rc ? -1 : 0;
}
