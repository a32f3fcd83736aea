/*
 * The CPU head's weights, converted to f32 at open (head_load.c), the
 * matrices packed for the GEMM, and read by the forward (head.c).  Private
 * to engine/cpu/head*.c.
 */
#ifndef CLEF_CPU_HEAD_WEIGHTS_H
#define CLEF_CPU_HEAD_WEIGHTS_H

#include "cpu/model/head.h"
#include "cpu/ops/head_mha.h"
#include "cpu/ops/head_ops.h"

typedef struct {
    clef_head_ln      query_norm;
    clef_head_ln      memory_norm;
    clef_head_attn    attention;
    clef_head_ln      feedforward_norm;
    clef_head_linear  up;             /* feedforward.0 */
    clef_head_linear  down;           /* feedforward.3 */
} routing_layer;

typedef struct {
    clef_head_ln      norm1;
    clef_head_attn    self_attn;
    clef_head_ln      norm2;
    clef_head_attn    cross_attn;
    clef_head_ln      norm3;
    clef_head_linear  up;             /* linear1 */
    clef_head_linear  down;           /* linear2 */
} decoder_layer;

struct clef_cpu_head {
    clef_head_config    cfg;
    const clef_tensor  *lm_head;

    clef_head_ln        hidden_norm;
    clef_head_linear    memory_projection;
    clef_head_linear    question_projection;
    clef_head_linear    option_question_projection;
    clef_head_linear    global_projection;
    clef_head_linear    option_context_projection;
    clef_head_linear    option_lexical_projection;
    const float        *type_embedding;   /* [3][W] */
    routing_layer      *routing;
    clef_head_ln        option_summary_norm;
    decoder_layer      *decoder;
    clef_head_ln        field_norm;
    clef_head_ln        option_norm;
    clef_head_linear    scorer_up;        /* residual_scorer.0 */
    clef_head_linear    scorer_down;      /* residual_scorer.3 */

    /* the three scalars as the forward uses them */
    float               prior_scale;      /* exp(min(prior_logit_scale, ln 100)) */
    float               joint_scale;      /* exp(min(joint_logit_scale, ln 100)) */
    float               gate;             /* sigmoid(residual_gate) */

    float             **blobs;            /* every converted or packed weight,
                                             to free */
    int                 n_blobs;
    int                 cap_blobs;
};

#endif
