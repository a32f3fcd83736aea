/*
 * The vision tower's ops (see vision_ops.h).
 */
#include "cpu/ops/vision_ops.h"

#include <math.h>
#include <string.h>

#include "cpu/kernels/gemm.h"

#define VQ  64          /* queries of a block: scores are [VQ][n] */

typedef struct {
    const float  *x;
    float        *y;
    int64_t       ldx, ldy;
    int           dim;
    const float  *w, *b;
    float         eps;
    int           tanh_form;
} rows_job;


static void
layernorm_task(void *ctx, int64_t begin, int64_t end, int worker)
{
    const rows_job  *j = ctx;
    const float     *x;
    float           *y;
    double           s, s2, mean, var;
    float            m, inv;
    int64_t          r;
    int              i;

    (void) worker;
    for (r = begin; r < end; r++) {
        x = j->x + r * j->ldx;
        y = j->y + r * j->ldy;
        s = 0;
        for (i = 0; i < j->dim; i++) {
            s += x[i];
        }
        mean = s / j->dim;
        s2 = 0;
        for (i = 0; i < j->dim; i++) {
            s2 += (x[i] - mean) * (x[i] - mean);
        }
        var = s2 / j->dim;
        m = (float) mean;
        inv = (float) (1.0 / sqrt(var + (double) j->eps));
        for (i = 0; i < j->dim; i++) {
            y[i] = (x[i] - m) * inv * j->w[i] + j->b[i];
        }
    }
}


void
clef_cpu_layernorm(clef_cpu_pool *pool, const float *x, int64_t ldx,
    float *y, int64_t ldy, int64_t rows, int dim, const float *w,
    const float *b, float eps)
{
    rows_job  j = { x, y, ldx, ldy, dim, w, b, eps, 0 };

    clef_cpu_pool_for(pool, rows, 16, layernorm_task, &j);
}


static void
bias_task(void *ctx, int64_t begin, int64_t end, int worker)
{
    const rows_job  *j = ctx;
    float           *y;
    int64_t          r;
    int              i;

    (void) worker;
    for (r = begin; r < end; r++) {
        y = j->y + r * j->ldy;
        for (i = 0; i < j->dim; i++) {
            y[i] += j->b[i];
        }
    }
}


void
clef_cpu_add_bias(clef_cpu_pool *pool, float *y, int64_t ldy, int64_t rows,
    int dim, const float *b)
{
    rows_job  j = { NULL, y, 0, ldy, dim, NULL, b, 0, 0 };

    clef_cpu_pool_for(pool, rows, 64, bias_task, &j);
}


static void
add_rows_task(void *ctx, int64_t begin, int64_t end, int worker)
{
    const rows_job  *j = ctx;
    int64_t          r;
    int              i;

    (void) worker;
    for (r = begin; r < end; r++) {
        for (i = 0; i < j->dim; i++) {
            j->y[r * j->ldy + i] += j->x[r * j->ldx + i];
        }
    }
}


void
clef_cpu_add_rows(clef_cpu_pool *pool, float *y, const float *x, int64_t ld,
    int64_t rows, int dim)
{
    rows_job  j = { x, y, ld, ld, dim, NULL, NULL, 0, 0 };

    clef_cpu_pool_for(pool, rows, 64, add_rows_task, &j);
}


static void
gelu_task(void *ctx, int64_t begin, int64_t end, int worker)
{
    const rows_job  *j = ctx;
    float           *y, v;
    int64_t          r;
    int              i;

    (void) worker;
    for (r = begin; r < end; r++) {
        y = j->y + r * j->ldy;
        for (i = 0; i < j->dim; i++) {
            v = y[i] + j->b[i];
            if (j->tanh_form) {
                /* torch's gelu(approximate="tanh") */
                y[i] = 0.5f * v * (1.0f + tanhf(0.7978845608028654f
                                                * (v + 0.044715f * v * v * v)));
            } else {
                y[i] = 0.5f * v * (1.0f + erff(v * 0.7071067811865476f));
            }
        }
    }
}


void
clef_cpu_bias_gelu(clef_cpu_pool *pool, float *y, int64_t ldy, int64_t rows,
    int dim, const float *b, int tanh_form)
{
    rows_job  j = { NULL, y, 0, ldy, dim, NULL, b, 0, tanh_form };

    clef_cpu_pool_for(pool, rows, 16, gelu_task, &j);
}


typedef struct {
    float        *qkv;
    int64_t       ld, k_offset;
    int           heads, hd;
    const float  *cos, *sin;
} rot_job;


static void
rotate(float *x, int hd, const float *c, const float *s)
{
    int    half = hd / 2, i;
    float  a, b;

    for (i = 0; i < half; i++) {
        a = x[i];
        b = x[i + half];
        x[i] = a * c[i] - b * s[i];
        x[i + half] = b * c[i] + a * s[i];
    }
}


static void
rotary_task(void *ctx, int64_t begin, int64_t end, int worker)
{
    const rot_job  *j = ctx;
    int64_t         r;
    int             h, half = j->hd / 2;

    (void) worker;
    for (r = begin; r < end; r++) {
        for (h = 0; h < j->heads; h++) {
            rotate(j->qkv + r * j->ld + (int64_t) h * j->hd, j->hd,
                   j->cos + r * half, j->sin + r * half);
            rotate(j->qkv + r * j->ld + j->k_offset + (int64_t) h * j->hd,
                   j->hd, j->cos + r * half, j->sin + r * half);
        }
    }
}


void
clef_cpu_vision_rotary(clef_cpu_pool *pool, float *qkv, int64_t ld,
    int64_t rows, int heads, int hd, int64_t k_offset, const float *cos,
    const float *sin)
{
    rot_job  j = { qkv, ld, k_offset, heads, hd, cos, sin };

    clef_cpu_pool_for(pool, rows, 16, rotary_task, &j);
}


size_t
clef_cpu_vision_attention_scratch(int64_t n, int hd)
{
    /* scores, the output block, the GEMM's packing */
    return (size_t) VQ * (size_t) n + (size_t) VQ * (size_t) hd
           + CLEF_GEMM_SCRATCH_FLOATS;
}


typedef struct {
    const float    *qkv;
    float          *o;
    int64_t         ld, ldo, H;
    const int64_t  *cu;
    const int64_t  *blocks;      /* [n_images + 1] prefix of query blocks */
    int             n_images, heads, hd;
    float           scale;
    float          *scratch;
    size_t          per_worker;
} attn_job;


/* One block of up to VQ queries of one head of one image, against all of
 * the image's keys: two GEMMs around an exact (not online) softmax. */
static void
attend(const attn_job *j, int img, int h, int64_t q0, float *scratch)
{
    int64_t       t0 = j->cu[img], n = j->cu[img + 1] - t0, nq, r, c;
    const float  *q = j->qkv + (t0 + q0) * j->ld + (int64_t) h * j->hd;
    const float  *k = j->qkv + t0 * j->ld + j->H + (int64_t) h * j->hd;
    const float  *v = j->qkv + t0 * j->ld + 2 * j->H + (int64_t) h * j->hd;
    float        *S = scratch, *O = S + (size_t) VQ * n;
    float        *gs = O + (size_t) VQ * j->hd, *row, mx, sum, inv;

    nq = n - q0 < VQ ? n - q0 : VQ;
    clef_cpu_gemm(nq, n, j->hd, j->scale, clef_cpu_rows(q, j->ld),
                  clef_cpu_trans(k, j->ld), 0.0f, S, n, gs);
    for (r = 0; r < nq; r++) {
        row = S + r * n;
        mx = -INFINITY;
        for (c = 0; c < n; c++) {
            mx = row[c] > mx ? row[c] : mx;
        }
        sum = 0.0f;
        for (c = 0; c < n; c++) {
            row[c] = expf(row[c] - mx);
            sum += row[c];
        }
        inv = 1.0f / sum;
        for (c = 0; c < n; c++) {
            row[c] *= inv;
        }
    }
    clef_cpu_gemm(nq, j->hd, n, 1.0f, clef_cpu_rows(S, n),
                  clef_cpu_rows(v, j->ld), 0.0f, O, j->hd, gs);
    for (r = 0; r < nq; r++) {
        memcpy(j->o + (t0 + q0 + r) * j->ldo + (int64_t) h * j->hd,
               O + r * j->hd, sizeof(float) * (size_t) j->hd);
    }
}


static void
attn_task(void *ctx, int64_t begin, int64_t end, int worker)
{
    const attn_job  *j = ctx;
    float           *scratch = j->scratch + (size_t) worker * j->per_worker;
    int64_t          it, blk;
    int              img, h;

    for (it = begin; it < end; it++) {
        /* item = (head, query block of the whole batch) */
        h = (int) (it % j->heads);
        blk = it / j->heads;
        img = 0;
        while (blk >= j->blocks[img + 1]) {
            img++;
        }
        attend(j, img, h, (blk - j->blocks[img]) * VQ, scratch);
    }
}


void
clef_cpu_vision_attention(clef_cpu_pool *pool, const float *qkv, int64_t ld,
    float *o, int64_t ldo, const int64_t *cu, int n_images, int heads, int hd,
    float scale, float *scratch, size_t per_worker, int64_t *scratch_blocks)
{
    int64_t  *blocks = scratch_blocks;
    attn_job  j;
    int       i;

    blocks[0] = 0;
    for (i = 0; i < n_images; i++) {
        blocks[i + 1] = blocks[i] + (cu[i + 1] - cu[i] + VQ - 1) / VQ;
    }
    j.qkv = qkv;
    j.o = o;
    j.ld = ld;
    j.ldo = ldo;
    j.H = (int64_t) heads * hd;
    j.cu = cu;
    j.blocks = blocks;
    j.n_images = n_images;
    j.heads = heads;
    j.hd = hd;
    j.scale = scale;
    j.scratch = scratch;
    j.per_worker = per_worker;
    clef_cpu_pool_for(pool, blocks[n_images] * heads, 1, attn_task, &j);
}
