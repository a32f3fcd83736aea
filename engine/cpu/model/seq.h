/*
 * What one rank keeps of a record run in parts (chunked prefill,
 * backend/backend.h's clef_batch_part) from one part to the next, per
 * layer of its shard: a Gated DeltaNet layer's delta-rule state S of each
 * of its value heads and the causal conv's last (kernel - 1) input rows;
 * a full-attention layer's keys (after the q/k norm and RoPE) and values
 * of the record's tokens so far.  Sized for the whole record when opened,
 * so that the keys of every part land where the attention reads them.
 */
#ifndef CLEF_CPU_SEQ_H
#define CLEF_CPU_SEQ_H

#include <stdint.h>

#include "base/error.h"
#include "cpu/model/weights.h"

typedef struct {
    int64_t   tokens;       /* the record's */
    int64_t   done;         /* tokens its parts ran so far */
    int       failed;       /* a forward failed midway: nothing usable */
    int       layers;
    float   **state;        /* [layers] GDN: [hv][dk][dv], zero at first */
    float   **tail;         /* [layers] GDN: [kernel - 1][qkv_dim] */
    float   **k, **v;       /* [layers] attention: [tokens][hkv head_dim] */
} clef_cpu_seq;

/* The state of a record of `tokens` tokens on the shard of w. */
int  clef_cpu_seq_open(const clef_cpu_weights *w, int64_t tokens,
    clef_cpu_seq **out, clef_error *err);
void clef_cpu_seq_close(clef_cpu_seq *s);

#endif
