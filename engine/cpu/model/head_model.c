/*
 * The head of a model directory: its joint_head.safetensors and the
 * backbone's lm_head.weight (rows of which the options' lexical means use).
 */
#include "cpu/model/head_source.h"
#include "model/roles.h"

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
                                      clef_model_role(m, CLEF_ROLE_LM_HEAD, 0),
                                      out, err);
}

