/*
 * The census of the types a model's weights are stored in (model.h's
 * clef_model_weight_types): what `/v1/models` lists, and what decides
 * whether a block-quantized model gets the CPU's integer products by
 * default (backend/registry.h's clef_backend_precision).
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

/*
 * Bytes the CPU's integer products (precision=q8) keep of 256 values of a
 * row in each block type: the panels of cpu/kernels/qpack.c, whose
 * clef_qdot_group_bytes() these numbers must equal (test_cpu_qdot checks
 * every row against it; the client library, which nginx -t runs, links
 * no kernel).  0: a type q8 multiplies as at fp32, over the file's own
 * pages (NVFP4).  Most types are kept as stored; the i-quants of grids
 * and the ternary and 1-2 bit types are expanded to int8 codes.
 */
static const uint16_t  q8_bytes_256[CLEF_DTYPE_COUNT] = {
    [CLEF_DTYPE_Q4_0] = 144,    [CLEF_DTYPE_Q4_1] = 160,
    [CLEF_DTYPE_Q5_0] = 176,    [CLEF_DTYPE_Q5_1] = 192,
    [CLEF_DTYPE_Q8_0] = 272,    [CLEF_DTYPE_Q4_K] = 148,
    [CLEF_DTYPE_Q5_K] = 180,    [CLEF_DTYPE_Q6_K] = 210,
    [CLEF_DTYPE_Q2_K] = 84,     [CLEF_DTYPE_Q3_K] = 114,
    [CLEF_DTYPE_IQ4_NL] = 160,  [CLEF_DTYPE_IQ4_XS] = 138,
    [CLEF_DTYPE_IQ3_XXS] = 296, [CLEF_DTYPE_IQ3_S] = 210,
    [CLEF_DTYPE_IQ2_XXS] = 296, [CLEF_DTYPE_IQ2_XS] = 296,
    [CLEF_DTYPE_IQ2_S] = 296,   [CLEF_DTYPE_IQ1_S] = 296,
    [CLEF_DTYPE_IQ1_M] = 296,   [CLEF_DTYPE_TQ1_0] = 210,
    [CLEF_DTYPE_TQ2_0] = 210,   [CLEF_DTYPE_MXFP4] = 160,
    [CLEF_DTYPE_Q1_0] = 272,    [CLEF_DTYPE_Q2_0] = 272
};

int64_t
clef_dtype_q8_bytes(clef_dtype dt, int64_t n)
{
    if ((unsigned) dt >= CLEF_DTYPE_COUNT || !clef_dtype_is_block(dt)
        || q8_bytes_256[dt] == 0)
    {
        return clef_dtype_bytes(dt, n);
    }
    return n / 256 * q8_bytes_256[dt] + n % 256 * q8_bytes_256[dt] / 256;
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
    s->q8_bytes += b > 0 ? rows * clef_dtype_q8_bytes(dt, cols) : 0;
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

clef_weights_kind
clef_weight_types_kind(const clef_weight_type *types, int n, int64_t *bytes,
    int64_t *q8_bytes)
{
    int  i, block = 0;

    *bytes = *q8_bytes = 0;
    for (i = 0; i < n; i++) {
        block |= clef_dtype_is_block(types[i].dtype);
        *bytes += types[i].bytes;
        *q8_bytes += types[i].q8_bytes;
    }
    if (!block) {
        return CLEF_WEIGHTS_FLOAT;
    }
    /* q8 by default where its panels cost about what the file's pages
     * do; a file of grid or 1-2 bit types, which q8 expands to int8
     * codes (3-7x), stays exact over its own pages rather than surprise
     * its user with several times its size in memory */
    return *q8_bytes * 5 <= *bytes * 6 ? CLEF_WEIGHTS_BLOCKS
                                       : CLEF_WEIGHTS_BLOCKS_EXPANDED;
}

clef_weights_kind
clef_model_weights_kind(const clef_model *m)
{
    clef_weight_type  types[CLEF_DTYPE_COUNT];
    int64_t           bytes, q8;

    return clef_weight_types_kind(types,
                                  clef_model_weight_types(m, types,
                                                          CLEF_DTYPE_COUNT),
                                  &bytes, &q8);
}
