/*
 * The "cpu" backend (engine/backend.h): the fp32 backbone (backbone.h) on a
 * thread pool of opts->threads workers, then the joint head (head.h) per
 * record.
 *
 * OpenBLAS: the backbone runs it single-threaded and splits its GEMMs over
 * the pool (gemm.h); the head calls it directly, so for the head OpenBLAS
 * gets the pool's thread count while the pool sleeps.  The cores are never
 * asked for twice.  openblas_set_num_threads() is process-wide: a process
 * runs one CPU backend forward at a time.
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

#endif
