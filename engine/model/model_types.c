/*
 * The census of the types a model's weights are stored in (model.h's
 * clef_model_weight_types): what `/v1/models` lists, and what decides
 * whether a block-quantized model gets the CPU's integer products by
 * default (backend/registry.h's clef_backend_default_precision).
 */
#include "model/model.h"

#include <string.h>


/* The slot of dt in out[0 .. *n), added when new (and there is room). */
static clef_weight_type *
census_slot(clef_weight_type *out, int *n, int max, clef_dtype dt)
{
    int  i;

    for (i = 0; i < *n; i++) {
        if (out[i].dtype == dt) {
            return &out[i];
        }
    }
    if (*n == max) {
        return NULL;
    }
    memset(&out[*n], 0, sizeof(out[*n]));
    out[*n].dtype = dt;
    return &out[(*n)++];
}

/* Rows [row, row + rows) of t, `cols` values each, stored as dt. */
static void
census_add(clef_weight_type *out, int *n, int max, clef_dtype dt,
    int64_t rows, int64_t cols, int first)
{
    clef_weight_type  *s = census_slot(out, n, max, dt);
    int64_t            b = clef_dtype_bytes(dt, cols);

    if (s == NULL) {
        return;
    }
    s->tensors += first;
    s->values += rows * cols;
    s->bytes += b > 0 ? rows * b : 0;
}

int
clef_model_weight_types(const clef_model *m, clef_weight_type *out, int max)
{
    const clef_tensor  *t;
    const char         *name;
    int64_t             cols, rows;
    int                 i, r, n = 0;

    for (i = 0; i < clef_model_tensor_count(m); i++) {
        t = clef_model_tensor_at(m, i, &name);
        /* lm_head is never read by a decision model: its type is not
         * what the model computes with, nor memory it takes (a tied
         * model's entry is the embedding, which is counted under its own
         * name) */
        if (t == NULL || t->ndim < 2 || t->numel == 0
            || strcmp(name, "lm_head.weight") == 0)
        {
            continue;
        }
        cols = clef_tensor_cols(t);
        rows = t->numel / cols;
        if (t->n_runs == 0) {
            census_add(out, &n, max, t->dtype, rows, cols, 1);
            continue;
        }
        for (r = 0; r < t->n_runs; r++) {
            census_add(out, &n, max, t->runs[r].dtype, t->runs[r].n, cols,
                       r == 0 || t->runs[r].dtype != t->runs[0].dtype);
        }
    }
    return n;
}

int
clef_model_block_quantized(const clef_model *m)
{
    clef_weight_type  types[CLEF_DTYPE_COUNT];
    int               i, n;

    n = clef_model_weight_types(m, types, CLEF_DTYPE_COUNT);
    for (i = 0; i < n; i++) {
        if (clef_dtype_is_block(types[i].dtype)) {
            return 1;
        }
    }
    return 0;
}
