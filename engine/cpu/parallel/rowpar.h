/*
 * A row-parallel product (o_proj, out_proj, down_proj) added to the
 * residual stream in the one order every tp shares (shard.h, "segments"),
 * so that tp = 1, 2, 4, 8 give the same bits:
 *
 *   x = x + (((P_0 + P_1) + P_2) + ... + P_{S-1}),
 *
 * P_j the product of the input's columns of segment j by that segment's
 * weight columns, summed from zero by our GEMM (gemm.h: in KC blocks from
 * the segment's first column).  Each segment's weights are packed apart
 * (weights.h), so a P_j is the same product on whichever rank runs it;
 * a rank computes its own segments, the ranks gather every segment
 * (comm.h all_gather), and each rank adds them to x in the order above.
 * Why the sum of the partials first, then x: it is what an all-reduce of
 * per-rank partials computes, so the sharded path has nothing to add.
 *
 * Memory: the partials are computed and exchanged CLEF_CPU_ROWPAR_TILE
 * rows at a time, so the scratch is S x tile x n floats whatever the
 * batch (S = 8, n = 4096: 32 MiB), not S copies of the residual stream.
 */
#ifndef CLEF_CPU_ROWPAR_H
#define CLEF_CPU_ROWPAR_H

#include <stddef.h>
#include <stdint.h>

#include "base/comm.h"
#include "base/error.h"
#include "cpu/kernels/gemm.h"
#include "cpu/parallel/pool.h"

#define CLEF_CPU_ROWPAR_TILE  256

typedef struct {
    int                  segs;       /* S at this tp (shard.h) */
    int                  seg0, nseg; /* this rank's segments */
    int                  rank;
    clef_comm           *comm;       /* NULL: unsharded, nseg == segs */
    clef_precision   prec;
} clef_cpu_rowpar;

/* Floats of `part` clef_cpu_rowpar_add() needs for m rows of width n. */
size_t clef_cpu_rowpar_floats(const clef_cpu_rowpar *rp, int64_t m, int64_t n);

/* x[m][n] (row stride ldx) += the product of in[m][nseg k] (row stride
 * ldin; this rank's segments side by side) by the nseg packed segment
 * weights w[j] ([n][k] each), in the order above.  part: scratch of
 * clef_cpu_rowpar_floats(); gemm: clef_cpu_linear_scratch_floats(k).
 * *exchange_seconds grows by the time spent in the communicator.  -1 with
 * err set when the exchange fails (another rank's error); every rank of a
 * communicator calls it with the same m. */
int    clef_cpu_rowpar_add(clef_cpu_pool *pool, const clef_cpu_rowpar *rp,
    const float *in, int64_t ldin, int64_t m, const clef_cpu_wpack *w,
    float *x, int64_t ldx, float *part, float *gemm, double *exchange_seconds,
    clef_error *err);

#endif
