/*
 * The head of a model directory: its joint_head.safetensors and the
 * backbone's lm_head.weight (rows of which the options' lexical means use).
 */
#include "cpu/model/head_source.h"

static const clef_tensor *
model_head_tensor(const void *ctx, const char *name)
{
    return clef_model_head_tensor(ctx, name);
}

int
clef_cpu_head_open(const clef_model *m, clef_cpu_head **out, clef_error *err)
{
    return clef_cpu_head_open_tensors(clef_model_head_config(m),
                                      model_head_tensor, m,
                                      clef_model_tensor(m, "lm_head.weight"),
                                      out, err);
}

