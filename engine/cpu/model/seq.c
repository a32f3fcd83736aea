/*
 * A record's state between its parts on one rank (see seq.h).
 */
#include "cpu/model/seq.h"

#include <stdlib.h>

void
clef_cpu_seq_close(clef_cpu_seq *s)
{
    int  i;

    if (s == NULL) {
        return;
    }
    for (i = 0; i < s->layers; i++) {
        free(s->state[i]);
        free(s->tail[i]);
        free(s->k[i]);
        free(s->v[i]);
    }
    free(s->state);
    free(s->tail);
    free(s->k);
    free(s->v);
    free(s);
}

int
clef_cpu_seq_open(const clef_cpu_weights *w, int64_t tokens,
    clef_cpu_seq **out, clef_error *err)
{
    const clef_text_config  *c = &w->cfg;
    clef_cpu_seq            *s;
    size_t                   n = (size_t) c->num_hidden_layers, kv;
    int                      i, ok = 1;

    s = calloc(1, sizeof(*s));
    if (s == NULL) {
        return clef_error_fail(err, CLEF_E_NO_MEMORY, "out of memory");
    }
    s->tokens = tokens;
    s->layers = (int) n;
    s->state = calloc(n, sizeof(*s->state));
    s->tail = calloc(n, sizeof(*s->tail));
    s->k = calloc(n, sizeof(*s->k));
    s->v = calloc(n, sizeof(*s->v));
    ok = s->state != NULL && s->tail != NULL && s->k != NULL && s->v != NULL;
    kv = (size_t) tokens * (size_t) w->hkv * (size_t) c->head_dim;
    for (i = 0; ok && i < s->layers; i++) {
        if (w->layers[i].mixer == CLEF_MIXER_FULL) {
            /* every row is written by its part before it is read */
            s->k[i] = malloc(sizeof(float) * (kv > 0 ? kv : 1));
            s->v[i] = malloc(sizeof(float) * (kv > 0 ? kv : 1));
            ok = s->k[i] != NULL && s->v[i] != NULL;
        } else {
            s->state[i] = calloc((size_t) w->hv * c->linear_key_head_dim
                                 * c->linear_value_head_dim, sizeof(float));
            s->tail[i] = calloc((size_t) c->linear_conv_kernel_dim
                                * (size_t) w->qkv_dim, sizeof(float));
            ok = s->state[i] != NULL && s->tail[i] != NULL;
        }
    }
    if (!ok) {
        clef_cpu_seq_close(s);
        return clef_error_fail(err, CLEF_E_NO_MEMORY, "out of memory for "
                               "the state of a record of %lld tokens run "
                               "in parts", (long long) tokens);
    }
    *out = s;
    return 0;
}
