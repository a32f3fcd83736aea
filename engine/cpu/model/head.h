/*
 * The joint schema head on the CPU in fp32 (docs/spec/encoder-and-head.md §5),
 * one record at a time: the head's attentions run over that record's tokens
 * only.
 */
#ifndef CLEF_CPU_HEAD_H
#define CLEF_CPU_HEAD_H

#include "base/error.h"
#include "model/model.h"
#include "protocol/encode.h"

typedef struct clef_cpu_head clef_cpu_head;

int  clef_cpu_head_open(const clef_model *m, clef_cpu_head **out, clef_error *err);

/* hidden: [rec->ids.n][hidden_size], the backbone's final-norm output for this
 * record.  logits: rec->n_options floats, question order then encoder order. */
int  clef_cpu_head_forward(clef_cpu_head *h, const float *hidden,
    const clef_record *rec, float *logits, clef_error *err);

void clef_cpu_head_close(clef_cpu_head *h);

#endif
