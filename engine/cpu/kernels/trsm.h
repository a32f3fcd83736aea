/*
 * The unit lower-triangular solve of the chunked delta rule (gdn.c):
 * X = (I + L)^-1 X by forward substitution, in a fixed order, so that a
 * column's result depends on its own column and L only.
 */
#ifndef CLEF_CPU_TRSM_H
#define CLEF_CPU_TRSM_H

#include <stdint.h>

/* x[n][cols] (row stride ldx) = (I + L)^-1 x with L the strict lower
 * triangle of l (n x n, row stride ldl; its diagonal and upper triangle are
 * not read): row s of x less l[s][r] times row r, for r = 0 .. s-1 in that
 * order, each step one fused multiply-add. */
void clef_cpu_trsm_unit_lower(int n, const float *l, int64_t ldl, float *x,
    int64_t ldx, int cols);

#endif
