#include "model/shard.h"

#include <stddef.h>

int
clef_shard_check(const clef_text_config *c, int tp, clef_error *err)
{
    static const struct {
        const char  *what;
        size_t       offset;
    } counts[] = {
        { "attention heads", offsetof(clef_text_config, num_attention_heads) },
        { "KV heads", offsetof(clef_text_config, num_key_value_heads) },
        { "DeltaNet key heads",
          offsetof(clef_text_config, linear_num_key_heads) },
        { "DeltaNet value heads",
          offsetof(clef_text_config, linear_num_value_heads) },
        { "intermediate size", offsetof(clef_text_config, intermediate_size) },
    };
    size_t  i;
    int     n;

    if (tp < 1) {
        return clef_error_set(err, 500, "bad_layout", NULL,
                              "tp=%d: the tensor-parallel size is at least 1",
                              tp);
    }
    if (tp > 1 && c->num_experts > 0) {
        return clef_error_set(err, 500, "bad_layout", NULL,
                              "tp=%d: a model with routed experts (Clef "
                              "Omni) is not split by tensor parallelism",
                              tp);
    }
    for (i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
        n = *(const int *) ((const char *) c + counts[i].offset);
        if (n % tp != 0) {
            return clef_error_set(err, 500, "bad_layout", NULL,
                                  "tp=%d does not divide the %d %s of the "
                                  "model", tp, n, counts[i].what);
        }
    }
    return 0;
}

void
clef_shard_of(const clef_text_config *c, int size, int rank, clef_shard *s)
{
    s->rank = rank;
    s->size = size;
    s->q_heads = c->num_attention_heads / size;
    s->q_head0 = rank * s->q_heads;
    s->kv_heads = c->num_key_value_heads / size;
    s->kv_head0 = rank * s->kv_heads;
    s->k_heads = c->linear_num_key_heads / size;
    s->k_head0 = rank * s->k_heads;
    s->v_heads = c->linear_num_value_heads / size;
    s->v_head0 = rank * s->v_heads;
    s->inter = c->intermediate_size / size;
    s->inter0 = rank * s->inter;
}

int
clef_shard_segments_of_model(const clef_text_config *c)
{
    int  s;

    for (s = 8; s > 1; s /= 2) {
        if (clef_shard_check(c, s, NULL) == 0) {
            return s;
        }
    }
    return 1;
}

int
clef_shard_segments(const clef_text_config *c, int tp)
{
    int  s = clef_shard_segments_of_model(c);

    return tp >= 1 && s % tp == 0 ? s : tp;
}
