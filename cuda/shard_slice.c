/*
 * The rank's rows and columns of each sharded tensor (shard_slice.h).
 */
#include "shard_slice.h"

#include <string.h>

static int
one(cuda_range *r, int64_t start, int64_t count)
{
    r[0].start = start;
    r[0].count = count;
    return 1;
}

int
cuda_slice_ranges(const clef_text_config *c, const clef_shard *s,
    cuda_slice_kind k, cuda_range r[CUDA_SLICE_MAX])
{
    int64_t  hd = c->head_dim, dk = c->linear_key_head_dim;
    int64_t  dv = c->linear_value_head_dim;
    int64_t  qh = hd * (c->attn_output_gate ? 2 : 1);    /* q_proj rows a head */
    int64_t  qk = (int64_t) c->linear_num_key_heads * dk;

    switch (k) {
    case CUDA_SLICE_Q_PROJ:
        return one(r, s->q_head0 * qh, s->q_heads * qh);
    case CUDA_SLICE_KV_PROJ:
        return one(r, s->kv_head0 * hd, s->kv_heads * hd);
    case CUDA_SLICE_O_PROJ:
        return one(r, s->q_head0 * hd, s->q_heads * hd);
    case CUDA_SLICE_GDN_QKV:
        r[0].start = s->k_head0 * dk;
        r[0].count = s->k_heads * dk;
        r[1].start = qk + s->k_head0 * dk;
        r[1].count = s->k_heads * dk;
        r[2].start = 2 * qk + s->v_head0 * dv;
        r[2].count = s->v_heads * dv;
        return 3;
    case CUDA_SLICE_GDN_Z:
    case CUDA_SLICE_GDN_OUT:
        return one(r, s->v_head0 * dv, s->v_heads * dv);
    case CUDA_SLICE_GDN_HEAD:
        return one(r, s->v_head0, s->v_heads);
    case CUDA_SLICE_MLP_IN:
    case CUDA_SLICE_MLP_DOWN:
        return one(r, s->inter0, s->inter);
    }
    return one(r, 0, 0);
}

int
cuda_slice_columns(cuda_slice_kind k)
{
    return k == CUDA_SLICE_O_PROJ || k == CUDA_SLICE_GDN_OUT
           || k == CUDA_SLICE_MLP_DOWN;
}

int64_t
cuda_slice_total(const cuda_range *r, int n)
{
    int64_t  t = 0;
    int      i;

    for (i = 0; i < n; i++) {
        t += r[i].count;
    }
    return t;
}

int64_t
cuda_slice_stack(const clef_text_config *c, const clef_shard *s,
    const cuda_slice_kind *kinds, int n, int64_t *off)
{
    cuda_range  r[CUDA_SLICE_MAX];
    int64_t     at = 0;
    int         i;

    for (i = 0; i < n; i++) {
        off[i] = at;
        at += cuda_slice_total(r, cuda_slice_ranges(c, s, kinds[i], r));
    }
    return at;
}

void
cuda_slice_rows(const void *src, int64_t cols, size_t esz, const cuda_range *r,
    int n, void *dst)
{
    size_t  row = (size_t) cols * esz;
    char   *d = dst;
    int     i;

    for (i = 0; i < n; i++) {
        memcpy(d, (const char *) src + (size_t) r[i].start * row,
               (size_t) r[i].count * row);
        d += (size_t) r[i].count * row;
    }
}

void
cuda_slice_cols(const void *src, int64_t rows, int64_t cols, size_t esz,
    const cuda_range *r, int n, void *dst)
{
    const char  *s;
    char        *d = dst;
    int64_t      y;
    int          i;

    for (y = 0; y < rows; y++) {
        s = (const char *) src + (size_t) y * (size_t) cols * esz;
        for (i = 0; i < n; i++) {
            memcpy(d, s + (size_t) r[i].start * esz, (size_t) r[i].count * esz);
            d += (size_t) r[i].count * esz;
        }
    }
}
