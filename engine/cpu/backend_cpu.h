/*
 * The "cpu" backend (engine/backend.h): the backbone (backbone.h) on a
 * thread pool of opts->threads workers, then the joint head (head.h, fp32)
 * per record.  opts->precision chooses how the backbone's linear layers
 * multiply: fp32 (the default: exact against the fp32 reference) or bf16.
 *
 * Deterministic: a record's logits and hidden states are bit-identical
 * whatever it is batched with, wherever it sits in the batch, at any thread
 * count and before or after any other call.  Every matrix product is our own
 * GEMM (gemm.h, no BLAS and no process-wide state), and every other op works
 * on one token, or on one record from its first token (backbone.h).
 */
#ifndef CLEF_CPU_BACKEND_CPU_H
#define CLEF_CPU_BACKEND_CPU_H

#include "backend.h"
#include "cpu/backbone.h"

extern const clef_backend_ops  clef_cpu_backend_ops;

/* For `clef bench` on this backend: the backbone (its per-op profile) and
 * the seconds the last forward spent in the backbone and in the head. */
clef_cpu_backbone *clef_cpu_backend_backbone(clef_backend *b);
void               clef_cpu_backend_last_times(const clef_backend *b,
    double *backbone_s, double *head_s);

/* One line for logs: threads, the GEMM path, and the OpenBLAS build linked
 * into the process (which this backend does not call). */
const char        *clef_cpu_backend_describe(const clef_backend *b);

#endif
