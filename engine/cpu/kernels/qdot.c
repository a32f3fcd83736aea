/*
 * The quantized products' driver (qdot.h): activations quantized a run of
 * rows at a time, then the run's tiles, every group of the matrix, split
 * over the pool in blocks of rows and weight rows.  How the work is split
 * and which kernel runs change no value (qdot.h).
 */
#include "cpu/kernels/qdot_kernel.h"

#include <stdlib.h>
#include <stdio.h>
#include <string.h>

/* Activation rows quantized at a time (the scratch holds them: at most
 * 1.5 bytes a value, against the fp32 GEMM's 4 for its 576 rows), and a
 * task's rows and weight rows: its activations (48 x 1.5 k bytes) stay in
 * L2 while its weight tiles pass, each tile reused by all its rows. */
#define RUN_ROWS   576
#define TASK_ROWS  48
#define TASK_COLS  64

#if RUN_ROWS % QD_ROWS_ALIGN != 0 || TASK_ROWS % QD_ROWS_ALIGN != 0
#error "runs and tasks must hold whole tiles of rows"
#endif
#if TASK_COLS % 32 != 0
#error "a task's weight rows must be whole tiles"
#endif

static int64_t
min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

/* ---- which kernels -------------------------------------------------- */

static const clef_qdot_isa *
choose(void)
{
    const clef_qdot_isa  *k = NULL;
    const char               *force = getenv("CLEF_CPU_QDOT_KERNEL");

    if (force != NULL && strcmp(force, "avx2") == 0) {
        k = clef_qdot_kernels_avx2();
    } else if (force != NULL && strcmp(force, "avxvnni") == 0) {
        k = clef_qdot_kernels_avxvnni();
    }
    if (k == NULL) {
        k = clef_qdot_kernels_avx512vnni();
    }
    if (k == NULL) {
        k = clef_qdot_kernels_avxvnni();
    }
    return k != NULL ? k : clef_qdot_kernels_avx2();
}

const clef_qdot_isa *
clef_qdot_kernels(void)
{
    static const clef_qdot_isa  *decided;
    const clef_qdot_isa  *k;

    k = __atomic_load_n(&decided, __ATOMIC_ACQUIRE);
    if (k == NULL) {
        k = choose();
        __atomic_store_n(&decided, k, __ATOMIC_RELEASE);
    }
    return k;
}

const char *
clef_qdot_kernel_name(void)
{
    return clef_qdot_kernels()->name;
}

const char *
clef_qdot_describe(void)
{
    static char  line[256];

    if (line[0] == '\0') {
        /* the same text whichever thread writes it first */
        snprintf(line, sizeof(line), "qdot: int8 activations in blocks of 32 "
                 "(fp32 scales) x the weights' own blocks, %s",
                 clef_qdot_kernels()->what);
    }
    return line;
}

/* ---- the product ------------------------------------------------------ */

typedef struct {
    const clef_qdot_mat      *q;
    const clef_qdot_isa  *kern;
    const float              *x;
    int64_t                   ldx, m;
    float                    *y;
    int64_t                   ldy;
    int                       load;
    int64_t                   row0, rows, ab;   /* the run */
    int8_t                   *aq;
    clef_qdot_ameta          *am;
    int64_t                   row_tasks, task_rows;
    int64_t                   col_tasks[CLEF_QDOT_GROUPS_MAX + 1];
    uint8_t                  *panels;   /* groups read in place: a task's
                                           panels, per worker */
    size_t                    panels_bytes;
} qd_job;

static void
quantize_task(void *ctx, int64_t begin, int64_t end, int worker)
{
    const qd_job  *j = ctx;

    clef_qdot_quantize_rows(j->x + j->row0 * j->ldx, j->ldx, j->rows,
                            j->q->cols, j->q->amap, begin, end, j->aq, j->am,
                            j->ab);
}

/* Rows [i, i + mr) of the run times weight rows [c, c + nr) of group g,
 * through a tile of its own size when the tile runs past either. */
static void
one_tile(const qd_job *j, const clef_qdot_group *g, const uint8_t *w,
    clef_qdot_tile_fn fn, int t, int mr, int64_t i, int64_t c, int nr)
{
    float            tmp[QD_ROWS_ALIGN * 32] __attribute__((aligned(64)));
    clef_qdot_tile   tl;
    float           *y = j->y + (j->row0 + i) * j->ldy + g->row0 + c;
    int64_t          rows = min64(mr, j->rows - i), cols = min64(nr, g->rows - c);
    int64_t          r;

    tl.aq = j->aq + i * CLEF_QDOT_QK;
    tl.am = j->am + i;
    tl.ab = j->ab;
    tl.w = w + (size_t) (c / CLEF_QDOT_PANEL) * g->panel_bytes;
    tl.ps = g->panel_bytes;
    tl.h0 = (int) (c / 8 % 2);
    tl.nb = j->q->cols / qd_block_values[t];
    tl.load = j->load;
    if (rows == mr && cols == nr) {
        tl.y = y;
        tl.ldy = j->ldy;
        fn(&tl);
        return;
    }
    tl.y = tmp;
    tl.ldy = nr;
    for (r = 0; r < rows && j->load; r++) {
        memcpy(tmp + r * nr, y + r * j->ldy, sizeof(float) * (size_t) cols);
    }
    fn(&tl);
    for (r = 0; r < rows; r++) {
        memcpy(y + r * j->ldy, tmp + r * nr, sizeof(float) * (size_t) cols);
    }
}

static void
tile_task(void *ctx, int64_t begin, int64_t end, int worker)
{
    const qd_job             *j = ctx;
    const clef_qdot_isa  *k = j->kern;
    const clef_qdot_group    *g;
    const uint8_t            *w;
    int64_t                   task, col, gi, i0, i1, c0, c1, c, i;
    int                       t, mr, nr;

    for (task = begin; task < end; task++) {
        col = task / j->row_tasks;
        for (gi = 0; col >= j->col_tasks[gi + 1]; gi++) {
            /* the group of this column block */
        }
        g = &j->q->groups[gi];
        t = qd_type_of(g->type);
        mr = k->mr[t];
        i0 = task % j->row_tasks * j->task_rows;
        i1 = min64(i0 + j->task_rows, j->rows);
        c0 = (col - j->col_tasks[gi]) * TASK_COLS;
        c1 = min64(c0 + TASK_COLS, g->rows);
        w = g->data;
        if (w == NULL) {
            /* read in place: this task's panels, as the packed group
             * holds them, then its tiles over them */
            w = j->panels + (size_t) worker * j->panels_bytes;
            clef_qdot_pack_panels(g, j->q->cols, c0, c1 - c0,
                                  (uint8_t *) w);
            w -= (size_t) (c0 / CLEF_QDOT_PANEL) * g->panel_bytes;
        }
        for (c = c0; c < c1; c += k->nr) {
            /* a 32-row kernel's last odd panel on its 16-row tile */
            nr = k->nr == 32 && g->rows - c <= 16 ? 16 : k->nr;
            for (i = i0; i < i1; i += mr) {
                one_tile(j, g, w, nr == k->nr ? k->tile[t] : k->half[t], t,
                         mr, i, c, nr);
            }
        }
    }
}

size_t
clef_qdot_scratch_bytes(int64_t k)
{
    k = k > 0 ? k : CLEF_QDOT_QK;
    return (size_t) RUN_ROWS * (size_t) k
           + (size_t) RUN_ROWS * (size_t) (k / CLEF_QDOT_QK)
             * sizeof(clef_qdot_ameta) + 128;
}

void
clef_qdot_linear(clef_cpu_pool *pool, const float *x, int64_t ldx, int64_t m,
    const clef_qdot_mat *q, float *y, int64_t ldy, float beta, void *scratch)
{
    clef_qdot_linear_isa(clef_qdot_kernels(), pool, x, ldx, m, q, y, ldy, beta,
                         scratch);
}

void
clef_qdot_linear_isa(const clef_qdot_isa *k, clef_cpu_pool *pool,
    const float *x, int64_t ldx, int64_t m, const clef_qdot_mat *q, float *y,
    int64_t ldy, float beta, void *scratch)
{
    qd_job   j;
    int64_t  nb = q->cols / CLEF_QDOT_QK;
    int      gi, workers;

    if (m <= 0 || q->rows <= 0) {
        return;
    }
    memset(&j, 0, sizeof(j));
    j.q = q;
    j.kern = k;
    j.x = x;
    j.ldx = ldx;
    j.m = m;
    j.y = y;
    j.ldy = ldy;
    j.load = beta != 0.0f;
    j.aq = (int8_t *) (((uintptr_t) scratch + 63) & ~(uintptr_t) 63);
    for (gi = 0; gi < q->ngroups; gi++) {
        j.col_tasks[gi + 1] = j.col_tasks[gi]
                              + (q->groups[gi].rows + TASK_COLS - 1) / TASK_COLS;
        if (q->groups[gi].data == NULL
            && q->groups[gi].panel_bytes * (TASK_COLS / CLEF_QDOT_PANEL)
               > j.panels_bytes)
        {
            j.panels_bytes = q->groups[gi].panel_bytes
                             * (TASK_COLS / CLEF_QDOT_PANEL);
        }
    }
    if (j.panels_bytes > 0) {
        /* groups read in place: a task packs its panels once for all the
         * run's rows (a routed expert's few tokens) */
        workers = clef_cpu_pool_size(pool);
        j.panels_bytes = (j.panels_bytes + 63) / 64 * 64;
        j.panels = aligned_alloc(64, j.panels_bytes * (size_t) workers);
        if (j.panels == NULL) {
            /* a few hundred kB per worker: no product can go on without
             * them, and none may pass for an answer */
            fprintf(stderr, "clef: out of memory for a product's panels\n");
            abort();
        }
    }
    for (j.row0 = 0; j.row0 < m; j.row0 += RUN_ROWS) {
        j.rows = min64(RUN_ROWS, m - j.row0);
        j.ab = (j.rows + QD_ROWS_ALIGN - 1) / QD_ROWS_ALIGN * QD_ROWS_ALIGN;
        j.am = (clef_qdot_ameta *) (j.aq + j.ab * nb * CLEF_QDOT_QK);
        j.task_rows = j.panels != NULL ? j.ab : TASK_ROWS;
        j.row_tasks = (j.rows + j.task_rows - 1) / j.task_rows;
        clef_cpu_pool_for(pool, j.ab, 4, quantize_task, &j);
        clef_cpu_pool_for(pool, j.row_tasks * j.col_tasks[q->ngroups], 1,
                          tile_task, &j);
    }
    free(j.panels);
}
