/*
 * Row-parallel products in the order every tp shares (engine/cpu/parallel/rowpar.h,
 * shard.h "segments"), against a scalar reference of that order:
 *
 *   P_j[t][h] = sum over segment j's columns, from zero, in KC blocks from
 *               the segment's first column (each block summed from zero by
 *               fused multiply-adds, then added: gemm.h),
 *   x[t][h]   = x[t][h] + (((P_0 + P_1) + P_2) + ... + P_{S-1}),
 *
 * bit for bit, unsharded (tp = 1) and with tp rank threads over the CPU
 * communicator, every rank holding its own segments and ending with the
 * same bits: S = 4 at tp = 1, 2, 4, S = 8 at tp = 8, S = 3 at tp = 3 (a tp
 * that does not divide the model's S runs one segment a rank), over
 * weights packed in fp32 and in bf16, with several tiles of rows
 * (CLEF_CPU_ROWPAR_TILE) and segments longer than one KC block; and with
 * a communicator that has no all_gather (the zero-filled all-reduce).
 */
#include <math.h>
#include <pthread.h>

#include "base/splitmix64.h"
#include "check.h"
#include "cpu/parallel/comm_cpu.h"
#include "cpu/parallel/rowpar.h"
#include "model/tensor.h"

#define M     (2 * CLEF_CPU_ROWPAR_TILE + 37)
#define N     40
#define KSEG  (CLEF_GEMM_KC + 84)
#define SMAX  8

static float  in[M * SMAX * KSEG], wt[N * SMAX * KSEG], x0[M * N];
static float  want[M * N], got[SMAX][M * N];

typedef struct {
    int                 segs, tp, rank, bf16;
    clef_comm          *comm;
    int                 rc;
} rank_arg;

static void
fill(float *p, int64_t n, uint64_t seed, int round_bf16)
{
    int64_t  i;

    for (i = 0; i < n; i++) {
        p[i] = (float) ((double) (clef_splitmix64(&seed) >> 11)
                        / 9007199254740992.0 * 2.0 - 1.0);
        if (round_bf16) {
            p[i] = clef_bf16_to_f32(clef_f32_to_bf16(p[i]));
        }
    }
}

static void
reference(int segs)
{
    int64_t  t, h, j, k, kb, end, K = segs * KSEG;
    float    p[SMAX], blk, s;

    for (t = 0; t < M; t++) {
        for (h = 0; h < N; h++) {
            for (j = 0; j < segs; j++) {
                p[j] = 0.0f;
                for (kb = j * KSEG; kb < (j + 1) * KSEG; kb += CLEF_GEMM_KC) {
                    end = kb + CLEF_GEMM_KC < (j + 1) * KSEG ? kb + CLEF_GEMM_KC
                                                             : (j + 1) * KSEG;
                    blk = 0.0f;
                    for (k = kb; k < end; k++) {
                        blk = fmaf(in[t * K + k], wt[h * K + k], blk);
                    }
                    p[j] = p[j] + blk;
                }
            }
            s = p[0];
            for (j = 1; j < segs; j++) {
                s = s + p[j];
            }
            want[t * N + h] = x0[t * N + h] + s;
        }
    }
}

static void *
rank_main(void *arg)
{
    rank_arg         *a = arg;
    clef_cpu_rowpar   rp;
    clef_cpu_wpack    w[SMAX];
    clef_cpu_pool    *pool;
    clef_error        err;
    float            *part, *gemm;
    double            ex = 0;
    int64_t           K = a->segs * KSEG;
    int               j;

    rp.segs = a->segs;
    rp.nseg = a->segs / a->tp;
    rp.seg0 = a->rank * rp.nseg;
    rp.rank = a->rank;
    rp.comm = a->comm;
    rp.prec = CLEF_PRECISION_FP32;
    memset(w, 0, sizeof(w));
    pool = clef_cpu_pool_create(a->tp == 1 ? 2 : 1, &err);
    part = malloc(sizeof(float) * clef_cpu_rowpar_floats(&rp, M, N));
    gemm = malloc(sizeof(float) * clef_cpu_linear_scratch_floats(KSEG));
    a->rc = pool == NULL || part == NULL || gemm == NULL ? -1 : 0;
    for (j = 0; a->rc == 0 && j < rp.nseg; j++) {
        a->rc = a->bf16 ? clef_cpu_wpack_alloc_bf16(&w[j], N, KSEG)
                        : clef_cpu_wpack_alloc(&w[j], N, KSEG);
        if (a->rc == 0) {
            clef_cpu_wpack_rows(&w[j], 0, N, wt + (rp.seg0 + j) * KSEG, K);
        }
    }
    memcpy(got[a->rank], x0, sizeof(x0));
    if (a->rc == 0) {
        a->rc = clef_cpu_rowpar_add(pool, &rp, in + rp.seg0 * KSEG, K, M, w,
                                    got[a->rank], N, part, gemm, &ex, &err);
    }
    for (j = 0; j < rp.nseg; j++) {
        clef_cpu_wpack_free(&w[j]);
    }
    free(part);
    free(gemm);
    if (pool != NULL) {
        clef_cpu_pool_destroy(pool);
    }
    return NULL;
}

static void
run(int segs, int tp, int bf16, int gather)
{
    pthread_t       th[SMAX];
    rank_arg        a[SMAX];
    clef_comm_ops   ops;
    clef_comm      *comm = NULL;
    clef_error      err;
    int             r, rc = 0, same = 1;

    fill(in, (int64_t) M * segs * KSEG, 1, 0);
    fill(wt, (int64_t) N * segs * KSEG, 2, bf16);
    fill(x0, (int64_t) M * N, 3, 0);
    reference(segs);
    if (tp > 1) {
        comm = clef_comm_cpu_create(tp, &err);
        if (comm != NULL && !gather) {
            ops = *comm->ops;
            ops.all_gather = NULL;
            comm->ops = &ops;
        }
    }
    for (r = 0; r < tp; r++) {
        a[r] = (rank_arg) { segs, tp, r, bf16, comm, 0 };
        pthread_create(&th[r], NULL, rank_main, &a[r]);
    }
    for (r = 0; r < tp; r++) {
        pthread_join(th[r], NULL);
        rc |= a[r].rc;
        same &= memcmp(got[r], want, sizeof(want)) == 0;
    }
    CHECK(rc == 0 && same, "S=%d, tp=%d, %s weights%s: every rank's x has the "
          "bits of the scalar reference", segs, tp, bf16 ? "bf16" : "fp32",
          tp > 1 && !gather ? ", no all_gather" : "");
    if (comm != NULL) {
        comm->ops->destroy(comm);
    }
}

int
main(void)
{
    run(4, 1, 0, 1);
    run(4, 1, 1, 1);
    run(4, 2, 0, 1);
    run(4, 4, 1, 1);
    run(8, 8, 0, 1);
    run(8, 2, 1, 1);
    run(3, 3, 0, 1);
    run(1, 1, 0, 1);
    run(4, 2, 0, 0);
    return check_done();
}
