/*
 * From option logits to the System One answer (docs/spec/protocol.md
 * §3-§4): per-question softmax in fp32, then
 *   noul:   {"type":"noul","noul":p_true}
 *   choice: choice = first argmax in request order, probabilities in request
 *           order, confidence = clip((K*pmax - 1)/(K - 1), 0, 1)
 *   score:  score = sum i*p_i, legend echoes the criteria, probabilities per
 *           level, confidence = max(0, 1 - dist/mad_u) (MAD form)
 * values rounded like Python round(x, 4) on the double of each fp32 value.
 */
#ifndef CLEF_ANSWER_H
#define CLEF_ANSWER_H

#include "base/buf.h"
#include "protocol/encode.h"
#include "protocol/request.h"

/* probs[n_options] = per-question softmax of logits[n_options] (fp32). */
void clef_answer_softmax(const clef_record *rec, const float *logits, float *probs);

typedef struct {
    const char  *model;          /* echoed "model"; NULL = the request's */
    int          raw;            /* add "raw": per question options, logits, probabilities */
} clef_answer_opts;

/* Appends the whole response object
 *   {"model":...,"answers":{...},"usage":{"input_tokens":N,"output_tokens":0}}
 * Returns 0, -1 on allocation failure. */
int clef_answer_json(clef_buf *out, const clef_request *req, const clef_record *rec,
    const float *logits, const clef_answer_opts *opts);

#endif
