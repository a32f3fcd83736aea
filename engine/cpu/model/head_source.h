/*
 * Opening the CPU head from any source of tensors, not only a model
 * directory: the unit tests feed it a bare joint_head.safetensors and a
 * separate lm_head.  clef_cpu_head_open() is this with clef_model_head_tensor
 * and the model's "lm_head.weight".
 */
#ifndef CLEF_CPU_HEAD_SOURCE_H
#define CLEF_CPU_HEAD_SOURCE_H

#include "cpu/model/head.h"

/* Returns the tensor called name ("hidden_norm.weight", ...), NULL when absent. */
typedef const clef_tensor *(*clef_head_tensor_fn)(const void *ctx, const char *name);

/* Checks every one of the head's tensors against cfg (names of §7.1, shapes
 * [out, in]) and lm_head against [*, hidden_size], converts the head's
 * weights to f32 and keeps lm_head as given (rows are gathered and converted
 * per record).  lm_head must outlive the head. */
int clef_cpu_head_open_tensors(const clef_head_config *cfg,
    clef_head_tensor_fn get, const void *ctx, const clef_tensor *lm_head,
    clef_cpu_head **out, clef_error *err);

#endif
