/*
 * The SwiGLU MLP's activation, down(silu(gate x) * (up x)): the gate and up
 * projections run as one GEMM whose rows are [gate (I) | up (I)], and this
 * turns each row's first half into silu(gate) * up in place.
 */
#ifndef CLEF_CPU_MLP_H
#define CLEF_CPU_MLP_H

#include <stdint.h>

#include "cpu/parallel/pool.h"

void clef_cpu_swiglu(clef_cpu_pool *pool, float *gate_up, int64_t ld,
    int64_t rows, int inter);

#endif
