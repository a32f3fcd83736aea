/*
 * The CPU weight loader's helpers (weights_parts.h): a role's tensor, this
 * rank's slice of it, converted to fp32 or packed, in parallel over the
 * pool; each tensor's pages of the mapped checkpoint released once it is
 * packed.
 */
#include "cpu/model/weights_parts.h"
#include "cpu/kernels/wqdot.h"

#include <stdatomic.h>
#include <stdio.h>

/* Which part of a tensor (its first dimension by the rest) a rank keeps:
 * rows [row0, row0 + rows) and columns [col0, col0 + cols). */
typedef struct {
    int64_t  row0, rows, col0, cols;
} slice;

typedef struct {
    const clef_tensor  *t;
    int64_t             cols;      /* of the tensor */
    slice               s;
    float              *dst;       /* plain: [s.rows][cols] */
    clef_cpu_wpack     *pack;      /* or packed, slice row r as row row0 + r */
    int64_t             row0;
    atomic_int          failed;
} convert_job;

static void
convert_task(void *ctx, int64_t begin, int64_t end, int worker)
{
    convert_job  *j = ctx;
    int64_t       first = j->s.row0 + begin;

    if (j->pack == NULL) {
        /* plain vectors are cut by rows only */
        clef_tensor_rows_to_f32(j->t, first, end - begin,
                                j->dst + begin * j->cols);
        return;
    }
    if (clef_cpu_wpack_from_tensor(j->pack, j->row0 + begin, j->t, first,
                                   end - begin, j->s.col0) != 0)
    {
        atomic_store(&j->failed, 1);
    }
}

/* Converts slice sl (NULL: all) of role r's tensor into dst, or into rows
 * [row0, row0 + the slice's rows) of pack; the role says which the CPU
 * keeps it as. */
static int
take_slice(clef_cpu_loader *ld, clef_role r, int layer, int expert,
    const slice *sl, float *dst, clef_cpu_wpack *pack, int64_t row0)
{
    const clef_role_info  *ri = clef_role_of(r);
    const clef_tensor     *t;
    int64_t                numel = clef_role_numel(r, &ld->dims);
    char                   name[160];
    convert_job            j;

    t = expert >= 0 ? clef_model_expert_role(ld->m, r, layer, expert)
                    : clef_model_role(ld->m, r, layer);
    clef_role_expert_name(&ld->w->cfg, r, layer, expert, name, sizeof(name));
    if ((pack != NULL) != (ri->keep == CLEF_KEEP_PACKED)) {
        return clef_error_fail(ld->err, CLEF_E_INTERNAL,
                               "tensor %s taken as a %s", name,
                               pack != NULL ? "matrix" : "vector");
    }
    if (t == NULL) {
        return clef_error_fail(ld->err, CLEF_E_MODEL,
                               "tensor %s is missing", name);
    }
    if (!clef_dtype_is_float(t->dtype)) {
        return clef_error_fail(ld->err, CLEF_E_MODEL,
                               "tensor %s is %s, not a float type", name,
                               clef_dtype_name(t->dtype));
    }
    if (t->numel != numel || t->data == NULL || t->ndim < 1
        || (pack != NULL && t->ndim != 2))
    {
        return clef_error_fail(ld->err, CLEF_E_MODEL,
            "tensor %s has %lld elements, the config implies %lld",
            name, (long long) t->numel, (long long) numel);
    }
    j.t = t;
    j.cols = t->numel / t->shape[0];
    if (sl != NULL) {
        j.s = *sl;
        j.s.cols = pack != NULL ? pack->cols : j.cols;
    } else {
        j.s = (slice) { 0, t->shape[0], 0, j.cols };
    }
    if (j.s.row0 < 0 || j.s.rows < 0 || j.s.row0 + j.s.rows > t->shape[0]
        || j.s.col0 < 0 || j.s.col0 + j.s.cols > j.cols
        || (pack == NULL ? j.s.cols != j.cols : j.s.cols != pack->cols))
    {
        return clef_error_fail(ld->err, CLEF_E_MODEL,
                               "tensor %s cannot be cut into rows %lld+%lld, "
                               "columns %lld+%lld", name, (long long) j.s.row0,
                               (long long) j.s.rows, (long long) j.s.col0,
                               (long long) j.s.cols);
    }
    j.dst = dst;
    j.pack = pack;
    j.row0 = row0;
    atomic_init(&j.failed, 0);
    if (pack != NULL && clef_cpu_wpack_is_view(pack)) {
        /* nothing to copy: the view records the range, and the tensor's
         * pages stay where the products read them */
        if (clef_cpu_wpack_view_tensor(pack, ld->pool, row0, t, j.s.row0,
                                       j.s.rows, j.s.col0) != 0)
        {
            return clef_error_fail(ld->err, CLEF_E_INTERNAL,
                                   "%s: too many parts in one matrix", name);
        }
        return 0;
    }
    clef_cpu_pool_for(ld->pool, j.s.rows, 64, convert_task, &j);
    if (atomic_load(&j.failed)) {
        return clef_error_fail(ld->err, CLEF_E_NO_MEMORY,
                               "out of memory converting %s", name);
    }
    if (pack != NULL) {
        clef_tensor_release(t);
    }
    return 0;
}

int
clef_cpu_take_vector(clef_cpu_loader *ld, clef_role r, int layer, float *dst)
{
    return take_slice(ld, r, layer, -1, NULL, dst, NULL, 0);
}

int
clef_cpu_take_norm(clef_cpu_loader *ld, clef_role r, int layer, float *dst)
{
    int64_t  i, n = clef_role_numel(r, &ld->dims);

    if (take_slice(ld, r, layer, -1, NULL, dst, NULL, 0) != 0) {
        return -1;
    }
    if (clef_role_kind_in(&ld->w->cfg, r) == CLEF_RK_NORM_1P) {
        for (i = 0; i < n; i++) {
            dst[i] = 1.0f + dst[i];
        }
    }
    return 0;
}

int
clef_cpu_take_vector_rows(clef_cpu_loader *ld, clef_role r, int layer,
    int64_t row0, int64_t rows, float *dst)
{
    const clef_tensor  *t = clef_model_role(ld->m, r, layer);
    slice               sl;

    if (t == NULL || t->ndim < 1 || t->shape[0] <= 0) {
        return take_slice(ld, r, layer, -1, NULL, dst, NULL, 0);
    }
    sl = (slice) { row0, rows, 0, 0 };
    return take_slice(ld, r, layer, -1, &sl, dst, NULL, 0);
}

int
clef_cpu_take_rows(clef_cpu_loader *ld, clef_role r, int layer, int64_t src0,
    int64_t rows, clef_cpu_wpack *pack, int64_t row0)
{
    slice  sl = { src0, rows, 0, 0 };

    return take_slice(ld, r, layer, -1, &sl, NULL, pack, row0);
}

int
clef_cpu_take_expert_rows(clef_cpu_loader *ld, clef_role r, int layer,
    int expert, clef_cpu_wpack *pack, int64_t row0)
{
    const clef_tensor  *t = clef_model_expert_role(ld->m, r, layer, expert);
    slice               sl = { 0, t != NULL ? t->shape[0] : 0, 0, 0 };

    return take_slice(ld, r, layer, expert, &sl, NULL, pack, row0);
}

int
clef_cpu_alloc_pack(clef_cpu_loader *ld, const clef_role *rs, int n,
    int layer, int64_t rows, int64_t cols, clef_cpu_wpack *pack)
{
    const clef_tensor  *t;
    clef_cpu_wformat    f;
    clef_dtype          stored[16];
    int                 i, k = 0;

    /* a missing tensor is left for the take to report */
    for (i = 0; i < n && k < 12; i++) {
        t = clef_model_role(ld->m, rs[i], layer);
        if (t != NULL) {
            k += clef_tensor_types(t, stored + k, 4);
        }
    }
    f = clef_cpu_wformat_for(stored, k, ld->w->prec, ld->w->native);
    if (f == CLEF_CPU_WBF16_ROWS) {
        return clef_cpu_wpack_alloc_native(pack, rows, cols, ld->w->native);
    }
    return clef_cpu_wpack_alloc_format(pack, f, rows, cols);
}

int
clef_cpu_take_segments(clef_cpu_loader *ld, clef_role r, int layer,
    int64_t rows, int64_t cols, int64_t col0, clef_cpu_wpack *packs)
{
    const clef_tensor  *t = clef_model_role(ld->m, r, layer);
    int64_t             k = cols / ld->w->nseg;
    slice               sl;
    int                 j;

    for (j = 0; j < ld->w->nseg; j++) {
        if (clef_cpu_alloc_pack(ld, &r, 1, layer, rows, k, &packs[j]) != 0) {
            return clef_cpu_loader_nomem(ld);
        }
        if (t != NULL
            && packs[j].traits == clef_cpu_wformat_traits(CLEF_CPU_WQDOT)
            && !clef_cpu_wqdot_cuts(t, col0 + j * k, k))
        {
            /* q8 cannot take these columns apart from the others (a tp
             * rank's value heads of a GGUF's delta rule): its blocks as
             * stored, multiplied at fp32 */
            clef_cpu_wpack_free(&packs[j]);
            if (clef_cpu_wpack_alloc_format(&packs[j], CLEF_CPU_WBLOCKS, rows,
                                            k)
                != 0)
            {
                return clef_cpu_loader_nomem(ld);
            }
        }
        sl = (slice) { 0, rows, col0 + j * k, 0 };
        if (take_slice(ld, r, layer, -1, &sl, NULL, &packs[j], 0) != 0) {
            return -1;
        }
    }
    return 0;
}

void
clef_cpu_free_fused(clef_cpu_wpack *in, clef_cpu_wpack *segs)
{
    int  j;

    clef_cpu_wpack_free(in);
    for (j = 0; j < CLEF_SHARD_SEGS_MAX; j++) {
        clef_cpu_wpack_free(&segs[j]);
    }
}

size_t
clef_cpu_fused_bytes(const clef_cpu_weights *w, const clef_cpu_wpack *in,
    const clef_cpu_wpack *segs)
{
    size_t  n = clef_cpu_wpack_bytes(in);
    int     j;

    for (j = 0; j < w->nseg; j++) {
        n += clef_cpu_wpack_bytes(&segs[j]);
    }
    return n;
}

float *
clef_cpu_loader_floats(clef_cpu_loader *ld, int64_t n)
{
    float  *p = ld->cur;

    ld->cur += n;
    return p;
}

int
clef_cpu_loader_nomem(clef_cpu_loader *ld)
{
    return clef_error_fail(ld->err, CLEF_E_NO_MEMORY,
                           "out of memory for %.1f GB of weights (%.1f GB in "
                           "bf16)",
                           (double) (ld->floats + ld->packed) * 4 / 1e9,
                           (double) (ld->floats * 4 + ld->packed * 2) / 1e9);
}
