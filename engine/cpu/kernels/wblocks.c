#include "cpu/kernels/wblocks.h"

#include <string.h>

#include "cpu/kernels/gemm.h"

#define NR  CLEF_GEMM_NR
#define KC  CLEF_GEMM_KC

size_t
clef_cpu_wblocks_bytes(int64_t rows, int64_t cols)
{
    return sizeof(clef_cpu_wblocks);
}

/* The bytes of the file it reads: its rows' blocks (whole rows: a
 * segment of columns reads the blocks its columns fall in). */
size_t
clef_cpu_wblocks_held(const clef_cpu_wpack *w)
{
    const clef_cpu_wblocks  *v = w->data;
    clef_dtype               dt;
    size_t                   n = 0;
    int64_t                  r;
    int                      i;

    for (i = 0; v != NULL && i < v->n; i++) {
        for (r = 0; r < v->run[i].n; r++) {
            (void) clef_tensor_row(v->run[i].t, v->run[i].t_row + r, &dt);
            n += (size_t) clef_dtype_bytes(dt, clef_tensor_cols(v->run[i].t));
        }
    }
    return n;
}

int
clef_cpu_wblocks_add(clef_cpu_wpack *w, clef_cpu_pool *pool, int64_t row,
    const clef_tensor *t, int64_t t_row, int64_t n, int64_t t_col)
{
    clef_cpu_wblocks      *v = w->data;
    clef_cpu_wblocks_run  *r;
    int                    i;

    if (v->n == CLEF_CPU_WBLOCKS_RUNS || n <= 0) {
        return n <= 0 ? 0 : -1;
    }
    /* kept by row: a binary search finds a row's run */
    for (i = v->n; i > 0 && v->run[i - 1].row > row; i--) {
        v->run[i] = v->run[i - 1];
    }
    r = &v->run[i];
    r->row = row;
    r->n = n;
    r->t = t;
    r->t_row = t_row;
    r->t_col = t_col;
    v->n++;
    return 0;
}

static const clef_cpu_wblocks_run *
find_run(const clef_cpu_wblocks *v, int64_t r)
{
    int  lo = 0, hi = v->n - 1, mid;

    while (lo < hi) {
        mid = (lo + hi + 1) / 2;
        if (v->run[mid].row <= r) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    return lo <= hi && r >= v->run[lo].row && r < v->run[lo].row + v->run[lo].n
           ? &v->run[lo] : NULL;
}

/*
 * Panels of rows [j0, j0 + n) of W (n <= 2 NR), columns [k0, k0 + kc):
 * panel p (rows j0 + p NR ..) at panels + p kc NR, [kc][NR], as
 * gemm_kernel.h reads an fp32 panel; rows past n or past W are zeros.
 */
void
clef_cpu_wblocks_fill(const clef_cpu_wpack *w, int64_t j0, int64_t n,
    int64_t k0, int64_t kc, float *panels)
{
    const clef_cpu_wblocks      *v = w->data;
    const clef_cpu_wblocks_run  *run;
    float                        row[KC];
    float                       *p;
    int64_t                      i, k, r, width = (n + NR - 1) / NR * NR;

    for (i = 0; i < width; i++) {
        p = panels + i / NR * kc * NR + i % NR;
        r = j0 + i;
        run = i < n && r < w->rows ? find_run(v, r) : NULL;
        if (run == NULL) {
            for (k = 0; k < kc; k++) {
                p[k * NR] = 0.0f;
            }
            continue;
        }
        clef_tensor_row_to_f32(run->t, run->t_row + (r - run->row),
                               run->t_col + k0, kc, row);
        for (k = 0; k < kc; k++) {
            p[k * NR] = row[k];
        }
    }
}
