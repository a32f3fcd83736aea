#include "cpu/backend_cpu.h"

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "cpu/gemm.h"
#include "cpu/head.h"
#include "cpu/pool.h"
#include "cpu/vision.h"

struct clef_backend {
    clef_cpu_pool      *pool;
    clef_cpu_backbone  *backbone;
    clef_cpu_head      *head;
    clef_cpu_vision    *vision;         /* NULL: a model without a tower */
    int                 hidden_size;
    clef_cpu_precision  prec;
    double              backbone_s, head_s;
    char                describe[768];
};

static void
cpu_close(clef_backend *b)
{
    if (b == NULL) {
        return;
    }
    clef_cpu_head_close(b->head);
    clef_cpu_vision_close(b->vision);
    clef_cpu_backbone_close(b->backbone);
    clef_cpu_pool_destroy(b->pool);
    free(b);
}

static int
cpu_open(const clef_model *m, const clef_backend_opts *o, clef_backend **out,
    clef_error *err)
{
    clef_backend  *b;

    b = calloc(1, sizeof(*b));
    if (b == NULL) {
        return clef_error_set(err, 500, "out_of_memory", NULL, "out of memory");
    }
    b->pool = clef_cpu_pool_create(o != NULL ? o->threads : 0, err);
    if (b->pool == NULL) {
        free(b);
        return -1;
    }
    b->prec = o != NULL && o->precision == CLEF_PRECISION_BF16 ? CLEF_CPU_BF16
                                                              : CLEF_CPU_FP32;
    if (clef_cpu_backbone_open_prec(m, b->pool, b->prec, &b->backbone, err) != 0
        || clef_cpu_vision_open(m, b->pool, &b->vision, err) != 0
        || clef_cpu_head_open(m, &b->head, err) != 0)
    {
        cpu_close(b);
        return -1;
    }
    b->hidden_size = clef_cpu_backbone_hidden_size(b->backbone);
    if (o != NULL && o->progress != NULL) {
        clef_cpu_backbone_set_progress(b->backbone, o->progress,
                                       o->progress_ctx);
        if (b->vision != NULL) {
            clef_cpu_vision_set_progress(b->vision, o->progress,
                                         o->progress_ctx);
        }
    }
    /* OpenBLAS is linked into the process but never called here: its core
     * is named so that a log shows the numbers cannot depend on it */
    snprintf(b->describe, sizeof(b->describe),
             "cpu backend: precision %s, %d threads, %.2f GB of weights; %s; "
             "OpenBLAS not used (%s, core %s)",
             b->prec == CLEF_CPU_BF16 ? "bf16" : "fp32",
             clef_cpu_pool_size(b->pool),
             (double) clef_cpu_backbone_weight_bytes(b->backbone) / 1e9,
             clef_cpu_backbone_gemm_describe(b->backbone),
             openblas_get_config(), openblas_get_corename());
    *out = b;
    return 0;
}

/* The vision tower over every image of the batch at once, then the
 * spans' rows of its output in place of their tokens' embeddings. */
static int
cpu_media(clef_backend *b, const clef_batch *batch, const int32_t *ids,
    float *hidden, clef_error *err)
{
    const clef_image  **images;
    clef_media_span    *spans;
    clef_cpu_media      media;
    int64_t            *first, rows = 0;
    float              *features;
    int                 m, rc = -1;

    if (b->vision == NULL) {
        return clef_error_set(err, 400, "images_unsupported", NULL,
                              "This model does not accept images.");
    }
    if (batch->positions == NULL) {
        return clef_error_set(err, 500, "backend", NULL, "a batch with images "
                              "needs its media (clef_batch_set_media)");
    }
    images = calloc((size_t) batch->n_media + 1, sizeof(*images));
    first = calloc((size_t) batch->n_media + 1, sizeof(*first));
    spans = calloc((size_t) batch->n_media + 1, sizeof(*spans));
    if (images == NULL || first == NULL || spans == NULL) {
        clef_error_set(err, 500, "out_of_memory", NULL, "out of memory");
        goto done;
    }
    for (m = 0; m < batch->n_media; m++) {
        images[m] = clef_batch_image(batch, m);
        first[m] = rows;
        rows += clef_image_tokens(images[m]);
    }
    features = malloc(sizeof(float) * (size_t) (rows > 0 ? rows : 1)
                      * (size_t) b->hidden_size);
    if (features == NULL) {
        clef_error_set(err, 500, "out_of_memory", NULL,
                       "out of memory for %lld image tokens", (long long) rows);
        goto done;
    }
    if (clef_cpu_vision_forward(b->vision, images, batch->n_media, features,
                                err) == 0)
    {
        for (m = 0; m < batch->n_media; m++) {
            spans[m] = batch->media[m];
            spans[m].row = (int32_t) (first[batch->media[m].media]
                                      + batch->media[m].row);
        }
        media.positions = batch->positions;
        media.spans = spans;
        media.n_spans = batch->n_media;
        media.features = features;
        rc = clef_cpu_backbone_forward_media(b->backbone, ids, batch->cu_seqlens,
                                             batch->n_records, &media, hidden,
                                             err);
    }
    free(features);

done:
    free(images);
    free(first);
    free(spans);
    return rc;
}

static int
cpu_hidden(clef_backend *b, const clef_batch *batch, float *hidden, clef_error *err)
{
    int64_t   T = clef_batch_tokens(batch);
    int32_t  *ids;
    int       r, rc, any = 0;
    double    t0 = clef_clock_seconds();

    for (r = 0; r < batch->n_records; r++) {
        any |= batch->records[r]->n_images > 0;
    }
    if (T == 0) {
        b->backbone_s = 0;
        return 0;
    }
    ids = malloc(sizeof(int32_t) * (size_t) T);
    if (ids == NULL) {
        return clef_error_set(err, 500, "out_of_memory", NULL, "out of memory");
    }
    for (r = 0; r < batch->n_records; r++) {
        memcpy(ids + batch->cu_seqlens[r], batch->records[r]->ids.v,
               sizeof(int32_t) * (batch->cu_seqlens[r + 1] - batch->cu_seqlens[r]));
    }
    rc = any || batch->n_media > 0
         ? cpu_media(b, batch, ids, hidden, err)
         : clef_cpu_backbone_forward(b->backbone, ids, batch->cu_seqlens,
                                     batch->n_records, hidden, err);
    free(ids);
    b->backbone_s = clef_clock_seconds() - t0;
    return rc;
}

static int
cpu_forward(clef_backend *b, const clef_batch *batch, float *logits, clef_error *err)
{
    int64_t  T = clef_batch_tokens(batch);
    float   *hidden;
    double   t0;
    int      r, off = 0, rc = 0;

    hidden = malloc(sizeof(float) * (size_t) (T > 0 ? T : 1) * b->hidden_size);
    if (hidden == NULL) {
        return clef_error_set(err, 500, "out_of_memory", NULL, "out of memory");
    }
    if (cpu_hidden(b, batch, hidden, err) != 0) {
        free(hidden);
        return -1;
    }

    t0 = clef_clock_seconds();
    for (r = 0; r < batch->n_records && rc == 0; r++) {
        rc = clef_cpu_head_forward(b->head,
                                   hidden + (int64_t) batch->cu_seqlens[r] * b->hidden_size,
                                   batch->records[r], logits + off, err);
        off += batch->records[r]->n_options;
    }
    b->head_s = clef_clock_seconds() - t0;

    free(hidden);
    return rc;
}

clef_cpu_backbone *
clef_cpu_backend_backbone(clef_backend *b)
{
    return b->backbone;
}

const char *
clef_cpu_backend_describe(const clef_backend *b)
{
    return b->describe;
}

void
clef_cpu_backend_last_times(const clef_backend *b, double *backbone_s, double *head_s)
{
    *backbone_s = b->backbone_s;
    *head_s = b->head_s;
}

const clef_backend_ops  clef_cpu_backend_ops = {
    "cpu",
    cpu_open,
    cpu_forward,
    cpu_hidden,
    cpu_close,
    clef_cpu_backend_describe,
};
