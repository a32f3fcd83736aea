#include "cpu/ops/moe.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int
clef_cpu_moe_route_alloc(clef_cpu_moe_routing *r, int64_t tokens, int experts,
    int k)
{
    size_t  n = (size_t) (tokens * k + 1);

    memset(r, 0, sizeof(*r));
    r->experts = experts;
    r->k = k;
    r->expert = malloc(n * sizeof(int32_t));
    r->weight = malloc(n * sizeof(float));
    r->slot = malloc(n * sizeof(int32_t));
    r->row_token = malloc(n * sizeof(int32_t));
    r->offset = malloc((size_t) (experts + 1) * sizeof(int32_t));
    if (r->expert == NULL || r->weight == NULL || r->slot == NULL
        || r->row_token == NULL || r->offset == NULL)
    {
        clef_cpu_moe_route_free(r);
        return -1;
    }
    return 0;
}

void
clef_cpu_moe_route_free(clef_cpu_moe_routing *r)
{
    free(r->expert);
    free(r->weight);
    free(r->slot);
    free(r->row_token);
    free(r->offset);
    memset(r, 0, sizeof(*r));
}

typedef struct {
    const float         *logits;
    int64_t              ld;
    int                  renorm;
    clef_cpu_moe_routing  *r;
} route_job;

/* One token: softmax over its logits, its top k, their weights. */
static void
route_token(const route_job *j, int64_t t)
{
    const float  *z = j->logits + t * j->ld;
    int           E = j->r->experts, k = j->r->k, e, i, n, best;
    int32_t       pick[64], *ex = j->r->expert + t * k;
    float         p[64], *w = j->r->weight + t * k;
    float         mx = z[0], sum = 0.0f, top = 0.0f, v;
    float         prob[4096];

    for (e = 1; e < E; e++) {
        mx = z[e] > mx ? z[e] : mx;
    }
    for (e = 0; e < E; e++) {
        prob[e] = expf(z[e] - mx);
        sum += prob[e];
    }
    for (e = 0; e < E; e++) {
        prob[e] = prob[e] / sum;
    }
    /* the k largest, in falling order, the lower index first on a tie */
    for (n = 0; n < k; n++) {
        best = -1;
        for (e = 0; e < E; e++) {
            for (i = 0; i < n && pick[i] != e; i++) {
            }
            if (i == n && (best < 0 || prob[e] > prob[best])) {
                best = e;
            }
        }
        pick[n] = best;
        p[n] = prob[best];
        top += p[n];
    }
    /* their weights, renormalised over the k as picked; then in
     * increasing expert order, the order their outputs are summed in */
    for (n = 0; n < k; n++) {
        v = j->renorm ? p[n] / top : p[n];
        for (i = n; i > 0 && ex[i - 1] > pick[n]; i--) {
            ex[i] = ex[i - 1];
            w[i] = w[i - 1];
        }
        ex[i] = pick[n];
        w[i] = v;
    }
}

static void
route_task(void *ctx, int64_t begin, int64_t end, int worker)
{
    int64_t  t;

    for (t = begin; t < end; t++) {
        route_token(ctx, t);
    }
}

void
clef_cpu_moe_route(clef_cpu_pool *pool, const float *logits, int64_t ld,
    int64_t T, int renorm, clef_cpu_moe_routing *r)
{
    route_job  j = { logits, ld, renorm, r };
    int64_t    t, i;
    int        e, k = r->k;

    clef_cpu_pool_for(pool, T, 16, route_task, &j);

    /* counting sort by expert, tokens in order within each */
    memset(r->offset, 0, (size_t) (r->experts + 1) * sizeof(int32_t));
    for (i = 0; i < T * k; i++) {
        r->offset[r->expert[i] + 1]++;
    }
    for (e = 0; e < r->experts; e++) {
        r->offset[e + 1] += r->offset[e];
    }
    for (t = 0; t < T; t++) {
        for (i = 0; i < k; i++) {
            e = r->expert[t * k + i];
            r->slot[t * k + i] = r->offset[e];
            r->row_token[r->offset[e]++] = (int32_t) t;
        }
    }
    for (e = r->experts; e > 0; e--) {
        r->offset[e] = r->offset[e - 1];
    }
    r->offset[0] = 0;
}

typedef struct {
    const clef_cpu_moe_routing  *r;
    const float               *src;
    float                     *dst;
    int64_t                    ld;
    int                        H;
} move_job;

static void
gather_task(void *ctx, int64_t begin, int64_t end, int worker)
{
    const move_job  *j = ctx;
    int64_t          i;

    for (i = begin; i < end; i++) {
        memcpy(j->dst + i * j->H, j->src + j->r->row_token[i] * j->ld,
               sizeof(float) * (size_t) j->H);
    }
}

void
clef_cpu_moe_gather(clef_cpu_pool *pool, const clef_cpu_moe_routing *r,
    int64_t T, const float *x, int64_t ldx, int H, float *rows)
{
    move_job  j = { r, x, rows, ldx, H };

    clef_cpu_pool_for(pool, T * r->k, 64, gather_task, &j);
}

static void
combine_task(void *ctx, int64_t begin, int64_t end, int worker)
{
    const move_job  *j = ctx;
    const float     *o;
    float           *x, acc, wt;
    int64_t          t;
    int              h, i, k = j->r->k;

    for (t = begin; t < end; t++) {
        x = j->dst + t * j->ld;
        for (h = 0; h < j->H; h++) {
            acc = 0.0f;
            for (i = 0; i < k; i++) {
                wt = j->r->weight[t * k + i];
                o = j->src + (int64_t) j->r->slot[t * k + i] * j->H;
                acc += o[h] * wt;
            }
            x[h] += acc;
        }
    }
}

void
clef_cpu_moe_combine(clef_cpu_pool *pool, const clef_cpu_moe_routing *r,
    int64_t T, const float *out, int H, float *x, int64_t ldx)
{
    move_job  j = { r, out, x, ldx, H };

    clef_cpu_pool_for(pool, T, 4, combine_task, &j);
}
