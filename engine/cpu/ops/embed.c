#include "cpu/ops/embed.h"

typedef struct {
    const clef_tensor  *table;
    const int32_t      *ids;
    float              *out;
    int64_t             ldo;
} embed_job;

static void
embed_task(void *ctx, int64_t begin, int64_t end, int worker)
{
    const embed_job  *j = ctx;
    int64_t           t;

    for (t = begin; t < end; t++) {
        clef_tensor_rows_to_f32(j->table, j->ids[t], 1, j->out + t * j->ldo);
    }
}

int
clef_cpu_embed(clef_cpu_pool *pool, const clef_tensor *table,
    const int32_t *ids, int64_t tokens, float *out, int64_t ldo,
    clef_error *err)
{
    embed_job  j = { table, ids, out, ldo };
    int64_t    t;

    for (t = 0; t < tokens; t++) {
        if (ids[t] < 0 || ids[t] >= table->shape[0]) {
            return clef_error_set(err, 400, "invalid_token", NULL,
                                  "token id %d at position %lld is outside the "
                                  "vocabulary of %lld", (int) ids[t],
                                  (long long) t, (long long) table->shape[0]);
        }
    }
    clef_cpu_pool_for(pool, tokens, 64, embed_task, &j);
    return 0;
}
