#include "cpu/kernels/gemm.h"
#include "cpu/kernels/gemm_bf16.h"
#include "cpu/kernels/gemm_kernel.h"
#include "cpu/kernels/gemm_pack.h"

#include <stdlib.h>
#include <string.h>

#define MR  CLEF_GEMM_MR
#define NR  CLEF_GEMM_NR
#define KC  CLEF_GEMM_KC
#define MC  CLEF_GEMM_MC
#define NC  CLEF_GEMM_NC

/* clef_cpu_linear(): rows of x packed at a time (the size of its scratch),
 * and the columns of y one task computes.  A task takes as many blocks of
 * MC rows of the group as leave two tasks per thread: each of its columns
 * of W is then read once for all of them.  Cache blocking only: none of it
 * changes a result. */
#define LINEAR_ROWS  576
#define LINEAR_COLS  256

/* clef_cpu_gemm() reads a row-major B in place when its rows are at most
 * this many floats apart.  Farther apart, the kc rows a kernel call reads
 * fall into few L1 sets (a stride of 10 KB maps them onto 2 of 64) and
 * evict each other: copying B into panels is cheaper. */
#define B_IN_PLACE_LD  256

#if MC % MR != 0 || LINEAR_ROWS % MC != 0 || LINEAR_COLS % NR != 0 || NC % NR != 0
#error "the blocking sizes must be multiples of the micro-tile"
#endif

static float *
align64(float *p)
{
    return (float *) (((uintptr_t) p + 63) & ~(uintptr_t) 63);
}

static int64_t
min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

/* ---- where the kernel reads its operands ------------------------------ */

/* A: packed (panel i / MR at p + (i / MR) * ps, each [kc][MR], zero-padded)
 * or read in place (row i, step k at p + i * rs + k * cs). */
typedef struct {
    const float  *p;
    int64_t       ps, rs, cs;
    int           packed;
} a_view;

/* B: column j, step k at p + (j / NR) * ps + k * ks + j % NR, for every
 * panel of NR columns but the last partial one when tail is not NULL: that
 * one is read from tail, packed [kc][NR] with zeros past n.  Or bf16
 * weight panels (h not NULL): panel j / NR at h + (j / NR) * ps, each
 * [kc][NR], interleaved as gemm_kernel.h says. */
typedef struct {
    const float     *p;
    int64_t          ps, ks;
    const float     *tail;
    const uint16_t  *h;
} b_view;

/* ---- which micro-kernel ------------------------------------------------ */

/* 1 when the wide AVX-512 kernel runs: where the CPU has it, unless
 * CLEF_CPU_GEMM_KERNEL=avx2 asks for the 6 x 16 kernel everywhere (the
 * tests run both and compare).  Either gives the same bits (gemm_kernel.h),
 * so this process-wide choice is one of speed only.  Decided once; threads
 * that race to decide it decide the same. */
static int
wide_kernel(void)
{
    static int   decided = -1;
    const char  *force;
    int          w;

    w = __atomic_load_n(&decided, __ATOMIC_RELAXED);
    if (w < 0) {
        force = getenv("CLEF_CPU_GEMM_KERNEL");
        w = (force == NULL || strcmp(force, "avx2") != 0)
            && clef_cpu_gemm_wide_supported();
        __atomic_store_n(&decided, w, __ATOMIC_RELAXED);
    }
    return w;
}

/* ---- the macro-kernel -------------------------------------------------- */

/* rows x cols floats from src (row stride lds) to dst (row stride ldd): a
 * tail tile's part of C into and out of its whole-size stand-in */
static void
copy_rows(float *dst, int64_t ldd, const float *src, int64_t lds, int64_t rows,
    int64_t cols)
{
    int64_t  r;

    for (r = 0; r < rows; r++) {
        memcpy(dst + r * ldd, src + r * lds, sizeof(float) * (size_t) cols);
    }
}

/* The first of the two bf16 panels the next column step of the wide kernel
 * reads, for the first row of tiles (i = 0) to prefetch while it runs, when
 * the block (n columns) has that step whole; else NULL. */
static const uint16_t *
next_pair(const b_view *b, int64_t i, int64_t j, int64_t n)
{
    return i == 0 && j + 4 * NR <= n ? b->h + (j / NR + 2) * b->ps : NULL;
}

/* One MR x NR tile of C at (i, j) of a macro block.  A tail tile (fewer
 * than MR rows or NR columns) reads zeros past the last row of A and the
 * last column of B (packed with them when A or B is read in place) and goes
 * through a full-size tile of C: its elements are computed by the very
 * code of a full tile, and the lanes that are not kept never touch another
 * lane. */
static void
tile(int64_t i, int64_t j, int64_t m, int64_t n, int64_t kc, const a_view *a,
    const b_view *b, const float *atail, float alpha, int load_c, float *c,
    int64_t ldc)
{
    float            t[MR * NR] __attribute__((aligned(64)));
    const float     *bp;
    const uint16_t  *bh, *next;
    float           *ct, *cc;
    int64_t          mr, nr, bks, ldcc;

    nr = min64(NR, n - j);
    mr = min64(MR, m - i);
    bh = b->h != NULL ? b->h + j / NR * b->ps : NULL;
    /* the first row of tiles pulls in the bf16 panel two to the right: the
     * one the next column step reads (wide_tile() says why) */
    next = bh != NULL && i == 0 && j + 2 * NR < n ? bh + 2 * b->ps : NULL;
    if (nr < NR && b->tail != NULL) {
        bp = b->tail;
        bks = NR;
    } else {
        bp = b->p + j / NR * b->ps;
        bks = b->ks;
    }
    ct = c + i * ldc + j;
    cc = ct;
    ldcc = ldc;
    if (mr < MR || nr < NR) {
        if (load_c) {
            copy_rows(t, NR, ct, ldc, mr, nr);
        }
        cc = t;
        ldcc = NR;
    }
    if (bh != NULL) {
        if (a->packed || mr < MR) {
            clef_cpu_gemm_kernel_bf16w(kc, a->packed ? a->p + i / MR * a->ps : atail,
                                       bh, next, alpha, cc, ldcc, load_c);
        } else {
            clef_cpu_gemm_kernel_bf16w_strided(kc, a->p + i * a->rs, a->rs, a->cs,
                                               bh, next, alpha, cc, ldcc, load_c);
        }
    } else if (a->packed) {
        clef_cpu_gemm_kernel(kc, a->p + i / MR * a->ps, bp, bks, alpha, cc, ldcc,
                             load_c);
    } else if (mr < MR) {
        clef_cpu_gemm_kernel(kc, atail, bp, bks, alpha, cc, ldcc, load_c);
    } else {
        clef_cpu_gemm_kernel_strided(kc, a->p + i * a->rs, a->rs, a->cs, bp, bks,
                                     alpha, cc, ldcc, load_c);
    }
    if (cc == t) {
        copy_rows(ct, ldc, t, NR, mr, nr);
    }
}

/* The 2 MR x 2 NR tile at (i, j), whole rows and columns, on the wide
 * kernel: two panels of A, two of B, none of them a tail.  With bf16
 * weights, the first tile of a column prefetches the next column step's
 * panels (next_pair()): that step's first tile would otherwise wait on
 * memory for them. */
static void
wide_tile(int64_t i, int64_t j, int64_t n, int64_t kc, const a_view *a,
    const b_view *b, float alpha, int load_c, float *c, int64_t ldc)
{
    const float  *a0 = a->p + i / MR * a->ps;
    float        *ct = c + i * ldc + j;

    if (b->h != NULL) {
        const uint16_t  *h = b->h + j / NR * b->ps, *next = next_pair(b, i, j, n);

        if (a->packed) {
            clef_cpu_gemm_kernel_wide_bf16w(kc, a0, a0 + a->ps, h, h + b->ps,
                                            next, next ? next + b->ps : NULL,
                                            alpha, ct, ldc, load_c);
        } else {
            clef_cpu_gemm_kernel_wide_bf16w_strided(kc, a->p + i * a->rs, a->rs,
                                                    a->cs, h, h + b->ps, next,
                                                    next ? next + b->ps : NULL,
                                                    alpha, ct, ldc, load_c);
        }
        return;
    }
    if (a->packed) {
        clef_cpu_gemm_kernel_wide(kc, a0, a0 + a->ps, b->p + j / NR * b->ps,
                                  b->p + (j / NR + 1) * b->ps, b->ks, alpha, ct,
                                  ldc, load_c);
    } else {
        clef_cpu_gemm_kernel_wide_strided(kc, a->p + i * a->rs, a->rs, a->cs,
                                          b->p + j / NR * b->ps,
                                          b->p + (j / NR + 1) * b->ps, b->ks,
                                          alpha, ct, ldc, load_c);
    }
}

/* The rows [i, m) past the last whole 2 MR of a block (fewer than 2 MR),
 * columns [j, j + 2 NR), on half tiles of the wide kernel: bf16 weights and
 * a packed A, whose panels are zero-padded to MR rows.  A panel with fewer
 * than MR rows goes through a whole tile of its own, as in tile(). */
static void
half_tiles(int64_t i, int64_t j, int64_t m, int64_t n, int64_t kc,
    const a_view *a, const b_view *b, float alpha, int load_c, float *c,
    int64_t ldc)
{
    float            t[MR * 2 * NR] __attribute__((aligned(64)));
    const uint16_t  *h = b->h + j / NR * b->ps, *next = next_pair(b, i, j, n);
    float           *ct, *cc;
    int64_t          mr, row, ldcc;

    for (row = i; row < m; row += MR) {
        mr = min64(MR, m - row);
        ct = c + row * ldc + j;
        cc = ct;
        ldcc = ldc;
        if (mr < MR) {
            if (load_c) {
                copy_rows(t, 2 * NR, ct, ldc, mr, 2 * NR);
            }
            cc = t;
            ldcc = 2 * NR;
        }
        clef_cpu_gemm_kernel_half_bf16w(kc, a->p + row / MR * a->ps, h, h + b->ps,
                                        next, next ? next + b->ps : NULL, alpha,
                                        cc, ldcc, load_c);
        next = NULL;
        if (cc == t) {
            copy_rows(ct, ldc, t, 2 * NR, mr, 2 * NR);
        }
    }
}

/* C[m][n] (+)= alpha * A . B over one block of kc, in steps of 2 MR rows
 * and 2 NR columns: on the wide kernel where the CPU has it and the step
 * is whole (or on its half tiles for the last rows), else as MR x NR
 * tiles.  Which tile or kernel computes an element changes nothing in it
 * (gemm_kernel.h). */
static void
macro(int64_t m, int64_t n, int64_t kc, const a_view *a, const b_view *b,
    float alpha, int load_c, float *c, int64_t ldc)
{
    float    atail[KC * MR] __attribute__((aligned(64)));
    int64_t  i, j, full = m / MR * MR;
    int      wide = wide_kernel();
    clef_cpu_mat  rows;

    if (!a->packed && full < m) {
        rows.p = a->p;
        rows.rs = a->rs;
        rows.cs = a->cs;
        clef_cpu_pack_a(&rows, full, m - full, 0, kc, atail, kc * MR);
    }

    for (j = 0; j < n; j += 2 * NR) {
        for (i = 0; i < m; i += 2 * MR) {
            if (wide && i + 2 * MR <= m && j + 2 * NR <= n) {
                wide_tile(i, j, n, kc, a, b, alpha, load_c, c, ldc);
                continue;
            }
            if (wide && j + 2 * NR <= n && b->h != NULL && a->packed) {
                half_tiles(i, j, m, n, kc, a, b, alpha, load_c, c, ldc);
                continue;
            }
            tile(i, j, m, n, kc, a, b, atail, alpha, load_c, c, ldc);
            if (i + MR < m) {
                tile(i + MR, j, m, n, kc, a, b, atail, alpha, load_c, c, ldc);
            }
            if (j + NR < n) {
                tile(i, j + NR, m, n, kc, a, b, atail, alpha, load_c, c, ldc);
                if (i + MR < m) {
                    tile(i + MR, j + NR, m, n, kc, a, b, atail, alpha, load_c, c,
                         ldc);
                }
            }
        }
    }
}

/* ---- on the calling thread --------------------------------------------- */

static void
zero_rows(float *c, int64_t ldc, int64_t m, int64_t n)
{
    int64_t  i;

    for (i = 0; i < m; i++) {
        memset(c + i * ldc, 0, sizeof(float) * (size_t) n);
    }
}

/* A read in place, rows [i0, ..) from step k0 on */
static a_view
a_in_place(const clef_cpu_mat *a, int64_t i0, int64_t k0)
{
    a_view  v;

    v.p = a->p + i0 * a->rs + k0 * a->cs;
    v.ps = 0;
    v.rs = a->rs;
    v.cs = a->cs;
    v.packed = 0;
    return v;
}

void
clef_cpu_gemm(int64_t m, int64_t n, int64_t k, float alpha, clef_cpu_mat a,
    clef_cpu_mat b, float beta, float *c, int64_t ldc, float *scratch)
{
    float    *bbuf = align64(scratch), *tail = bbuf + NC * KC;
    int64_t   jc, pc, ic, nc, kc, mc, whole;
    a_view    av;
    b_view    bv;

    if (m <= 0 || n <= 0) {
        return;
    }
    if (k <= 0) {
        if (beta == 0.0f) {
            zero_rows(c, ldc, m, n);
        }
        return;
    }
    for (jc = 0; jc < n; jc += NC) {
        nc = min64(NC, n - jc);
        for (pc = 0; pc < k; pc += KC) {
            kc = min64(KC, k - pc);
            if (b.cs == 1 && b.rs <= B_IN_PLACE_LD) {
                /* rows of B hold NR adjacent columns, close together: read
                 * in place, but for a partial last panel */
                bv.p = b.p + pc * b.rs + jc;
                bv.ps = NR;
                bv.ks = b.rs;
                bv.tail = NULL;
                bv.h = NULL;
                whole = nc / NR * NR;
                if (whole < nc) {
                    clef_cpu_pack_b(&b, pc, kc, jc + whole, nc - whole, tail,
                                    kc * NR);
                    bv.tail = tail;
                }
            } else {
                clef_cpu_pack_b(&b, pc, kc, jc, nc, bbuf, kc * NR);
                bv.p = bbuf;
                bv.ps = kc * NR;
                bv.ks = NR;
                bv.tail = NULL;
                bv.h = NULL;
            }
            for (ic = 0; ic < m; ic += MC) {
                mc = min64(MC, m - ic);
                av = a_in_place(&a, ic, pc);
                macro(mc, nc, kc, &av, &bv, alpha, pc > 0 || beta != 0.0f,
                      c + ic * ldc + jc, ldc);
            }
        }
    }
}

/* B's panels from step pc on, for y = x . W^T */
static b_view
b_packed(const clef_cpu_wpack *w, int64_t pc)
{
    b_view  v;

    v.p = w->format == CLEF_CPU_WF32 ? (const float *) w->data + pc * NR : NULL;
    v.h = w->format == CLEF_CPU_WBF16 ? (const uint16_t *) w->data + pc * NR
                                       : NULL;
    v.ps = w->cols * NR;
    v.ks = NR;
    v.tail = NULL;
    return v;
}

/* A product with no rows, no columns or no reduction: y is left alone, or
 * zeroed when nothing is to be added to it.  1 when there is nothing else
 * to do. */
static int
empty_product(int64_t m, const clef_cpu_wpack *w, float beta, float *y,
    int64_t ldy)
{
    if (m <= 0 || w->rows <= 0) {
        return 1;
    }
    if (w->cols <= 0) {
        if (beta == 0.0f) {
            zero_rows(y, ldy, m, w->rows);
        }
        return 1;
    }
    return 0;
}


void
clef_cpu_gemm_packed(int64_t m, const float *x, int64_t ldx,
    const clef_cpu_wpack *w, float beta, float *y, int64_t ldy)
{
    clef_cpu_mat  xv = { x, ldx, 1 };
    int64_t       pc, ic, kc, mc;
    a_view        av;
    b_view        bv;

    if (empty_product(m, w, beta, y, ldy)) {
        return;
    }
    for (pc = 0; pc < w->cols; pc += KC) {
        kc = min64(KC, w->cols - pc);
        bv = b_packed(w, pc);
        for (ic = 0; ic < m; ic += MC) {
            mc = min64(MC, m - ic);
            av = a_in_place(&xv, ic, pc);
            macro(mc, w->rows, kc, &av, &bv, 1.0f, pc > 0 || beta != 0.0f,
                  y + ic * ldy, ldy);
        }
    }
}

/* ---- over the pool ----------------------------------------------------- */

typedef struct {
    clef_cpu_mat           x;
    const clef_cpu_wpack  *w;
    float                 *y;
    int64_t                ldy;
    int                    load_c;
    int                    round_bf16;     /* CLEF_PRECISION_BF16 */
    int64_t                row0, rows;     /* the group of rows being run */
    int64_t                col_tiles;
    int64_t                task_rows;      /* a multiple of MC */
    float                 *ap;             /* the group's rows, packed */
} linear_job;

static void
pack_task(void *ctx, int64_t begin, int64_t end, int worker)
{
    const linear_job  *j = ctx;
    int64_t            p, K = j->w->cols;

    for (p = begin; p < end; p++) {
        clef_cpu_pack_a(&j->x, j->row0 + p * MR, min64(MR, j->rows - p * MR), 0,
                        K, j->ap + p * K * MR, K * MR);
        if (j->round_bf16) {
            clef_cpu_round_bf16(j->ap + p * K * MR, K * MR);
        }
    }
}

static void
tile_task(void *ctx, int64_t begin, int64_t end, int worker)
{
    const linear_job  *j = ctx;
    int64_t            t, ic, jc, mc, nc, pc, kc, K = j->w->cols, i0, i1;
    a_view             av;
    b_view             bv;

    for (t = begin; t < end; t++) {
        i0 = t / j->col_tiles * j->task_rows;
        i1 = min64(i0 + j->task_rows, j->rows);
        jc = t % j->col_tiles * LINEAR_COLS;
        nc = min64(LINEAR_COLS, j->w->rows - jc);
        for (pc = 0; pc < K; pc += KC) {
            kc = min64(KC, K - pc);
            bv = b_packed(j->w, pc);
            if (bv.h != NULL) {
                bv.h += jc / NR * bv.ps;
            } else {
                bv.p += jc / NR * bv.ps;
            }
            for (ic = i0; ic < i1; ic += MC) {
                mc = min64(MC, i1 - ic);
                av.p = j->ap + ic / MR * K * MR + pc * MR;
                av.ps = K * MR;
                av.rs = 0;
                av.cs = 0;
                av.packed = 1;
                macro(mc, nc, kc, &av, &bv, 1.0f, pc > 0 || j->load_c,
                      j->y + (j->row0 + ic) * j->ldy + jc, j->ldy);
            }
        }
    }
}

/* tile_task() for a format that fills its panels (clef_cpu_filled_linear):
 * the same tiles, with W's panels for 2 NR columns of y and one block of
 * the reduction filled at a time into bp, then every row block of the
 * task's rows run over them. */
static void
filled_tile_task(void *ctx, int64_t begin, int64_t end, int worker)
{
    const linear_job  *j = ctx;
    float              bp[2 * NR * KC] __attribute__((aligned(64)));
    int64_t            t, ic, jc, nc, pc, kc, K = j->w->cols, i0, i1, jj, n2;
    int64_t            mc;
    a_view             av;
    b_view             bv;

    for (t = begin; t < end; t++) {
        i0 = t / j->col_tiles * j->task_rows;
        i1 = min64(i0 + j->task_rows, j->rows);
        jc = t % j->col_tiles * LINEAR_COLS;
        nc = min64(LINEAR_COLS, j->w->rows - jc);
        for (pc = 0; pc < K; pc += KC) {
            kc = min64(KC, K - pc);
            for (jj = 0; jj < nc; jj += 2 * NR) {
                n2 = min64(2 * NR, nc - jj);
                j->w->traits->fill(j->w, jc + jj, n2, pc, kc, bp);
                bv.p = bp;
                bv.ps = kc * NR;
                bv.ks = NR;
                bv.tail = NULL;
                bv.h = NULL;
                for (ic = i0; ic < i1; ic += MC) {
                    mc = min64(MC, i1 - ic);
                    av.p = j->ap + ic / MR * K * MR + pc * MR;
                    av.ps = K * MR;
                    av.rs = 0;
                    av.cs = 0;
                    av.packed = 1;
                    macro(mc, n2, kc, &av, &bv, 1.0f, pc > 0 || j->load_c,
                          j->y + (j->row0 + ic) * j->ldy + jc + jj, j->ldy);
                }
            }
        }
    }
}

size_t
clef_cpu_linear_scratch_floats(int64_t k)
{
    return (size_t) LINEAR_ROWS * (size_t) (k > 0 ? k : 1) + 16;
}

void
clef_cpu_linear(clef_cpu_pool *pool, const float *x, int64_t ldx, int64_t m,
    const clef_cpu_wpack *w, float *y, int64_t ldy, float beta, float *scratch)
{
    clef_cpu_linear_prec(pool, x, ldx, m, w, y, ldy, beta, scratch,
                         CLEF_PRECISION_FP32);
}

void
clef_cpu_linear_prec(clef_cpu_pool *pool, const float *x, int64_t ldx, int64_t m,
    const clef_cpu_wpack *w, float *y, int64_t ldy, float beta, float *scratch,
    clef_precision prec)
{
    if (empty_product(m, w, beta, y, ldy)) {
        return;
    }
    w->traits->linear(pool, x, ldx, m, w, y, ldy, beta, scratch, prec);
}

static void
run_linear(clef_cpu_pool *pool, const float *x, int64_t ldx, int64_t m,
    const clef_cpu_wpack *w, float *y, int64_t ldy, float beta,
    float *scratch, clef_precision prec, clef_cpu_task tiles);

void
clef_cpu_panels_linear(clef_cpu_pool *pool, const float *x, int64_t ldx,
    int64_t m, const clef_cpu_wpack *w, float *y, int64_t ldy, float beta,
    float *scratch, clef_precision prec)
{
    run_linear(pool, x, ldx, m, w, y, ldy, beta, scratch, prec, tile_task);
}

void
clef_cpu_filled_linear(clef_cpu_pool *pool, const float *x, int64_t ldx,
    int64_t m, const clef_cpu_wpack *w, float *y, int64_t ldy, float beta,
    float *scratch, clef_precision prec)
{
    run_linear(pool, x, ldx, m, w, y, ldy, beta, scratch, prec,
               filled_tile_task);
}

static void
run_linear(clef_cpu_pool *pool, const float *x, int64_t ldx, int64_t m,
    const clef_cpu_wpack *w, float *y, int64_t ldy, float beta,
    float *scratch, clef_precision prec, clef_cpu_task tiles)
{
    linear_job  j;
    int64_t     blocks, per, threads = clef_cpu_pool_size(pool);

    j.round_bf16 = prec == CLEF_PRECISION_BF16;
    j.x.p = x;
    j.x.rs = ldx;
    j.x.cs = 1;
    j.w = w;
    j.y = y;
    j.ldy = ldy;
    j.load_c = beta != 0.0f;
    j.col_tiles = (w->rows + LINEAR_COLS - 1) / LINEAR_COLS;
    j.ap = align64(scratch);

    /* Pack a group of rows, then compute its tiles of C; each phase is
     * split over the pool however it likes, as no split changes a value. */
    for (j.row0 = 0; j.row0 < m; j.row0 += LINEAR_ROWS) {
        j.rows = min64(LINEAR_ROWS, m - j.row0);
        blocks = (j.rows + MC - 1) / MC;
        per = blocks * j.col_tiles / (2 * threads);
        per = per < 1 ? 1 : per > blocks ? blocks : per;
        j.task_rows = per * MC;
        clef_cpu_pool_for(pool, (j.rows + MR - 1) / MR, 4, pack_task, &j);
        clef_cpu_pool_for(pool, (blocks + per - 1) / per * j.col_tiles, 1,
                          tiles, &j);
    }
}

#define STR_(x)  #x
#define STR(x)   STR_(x)

/* the kernel that runs, for the lines below */
#define AVX2_KERNEL  "AVX2+FMA " STR(MR) "x" STR(NR) " kernel"
#define WIDE_KERNEL  "AVX-512 12x32 kernel (the AVX2 " STR(MR) "x" STR(NR) \
                     " kernel's bits)"

const char *
clef_cpu_gemm_describe(void)
{
    return wide_kernel()
           ? "gemm: clef fp32, " WIDE_KERNEL ", k summed in blocks of " STR(KC)
           : "gemm: clef fp32, " AVX2_KERNEL ", k summed in blocks of " STR(KC);
}

const char *
clef_cpu_gemm_describe_prec(clef_precision prec)
{
    if (prec != CLEF_PRECISION_BF16) {
        return wide_kernel()
               ? "gemm: clef fp32 over bf16 weights widened in the kernel, "
                 WIDE_KERNEL ", k summed in blocks of " STR(KC)
               : "gemm: clef fp32 over bf16 weights widened in the kernel, "
                 AVX2_KERNEL ", k summed in blocks of " STR(KC);
    }
    return wide_kernel()
           ? "gemm: clef bf16 x bf16 (activations rounded to bf16 as they are "
             "packed) summed in fp32, " WIDE_KERNEL " over bf16 weights, k summed "
             "in blocks of " STR(KC)
           : "gemm: clef bf16 x bf16 (activations rounded to bf16 as they are "
             "packed) summed in fp32, " AVX2_KERNEL " over bf16 weights, k summed "
             "in blocks of " STR(KC);
}
