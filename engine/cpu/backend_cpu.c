#include "cpu/backend_cpu.h"

#include <cblas.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "cpu/kernels/gemm.h"
#include "cpu/model/head.h"
#include "cpu/parallel/comm_cpu.h"
#include "cpu/parallel/pool.h"
#include "cpu/parallel/ranks.h"
#include "backend/registry.h"
#include "cpu/towers.h"
#include "media/kinds.h"
#include "model/shard.h"

struct clef_backend {
    clef_cpu_pool      *pool;           /* rank 0's: the towers' too */
    clef_cpu_backbone  *backbone;       /* rank 0's */
    clef_cpu_head      *head;
    void               *towers[CLEF_CPU_TOWERS];  /* clef_cpu_towers' rows
                                           (towers.h); NULL: the model has
                                           no such tower */
    int                 hidden_size;
    clef_precision  prec;
    double              backbone_s, head_s;
    char                describe[768];

    /* tensor parallelism (tp > 1): rank r's workers and backbone shard,
     * the ranks' threads and their all-reduce; tp 1: [0] only, no
     * threads, no communicator */
    int                 tp;
    clef_cpu_pool     **pools;
    clef_cpu_backbone **backbones;
    clef_cpu_ranks     *ranks;
    clef_comm          *comm;
};

/* A record run in parts (backend.h's clef_batch_part): each rank's state
 * of it, the final-norm rows of its tokens so far (the head reads the
 * whole record's), and its media items' encoder rows, computed with its
 * first part and sliced by the spans of each part. */
struct clef_backend_seq {
    const clef_record  *rec;
    clef_cpu_seq      **ranks;          /* [tp] */
    float              *hidden;         /* [ids.n][hidden_size] */
    float              *features;       /* [levels][rows][hidden_size] */
    int64_t             rows;
    int64_t            *first;          /* [n_media]: item's first row */
    int                 encoded;
};

/* One forward as every rank runs it. */
typedef struct {
    clef_backend          *b;
    const int32_t         *ids;
    const int32_t         *cu_seqlens;
    int                    n_records;
    const clef_cpu_part   *parts;          /* [tp][n_records], or NULL */
    const clef_cpu_media  *media;
    float                 *hidden;         /* rank 0's output */
    atomic_int             first_failed;   /* the rank that failed first */
    clef_error             first_err;
} tp_forward;

static void
cpu_close(clef_backend *b)
{
    int  r, t;

    if (b == NULL) {
        return;
    }
    clef_cpu_head_close(b->head);
    for (t = 0; t < CLEF_CPU_TOWERS; t++) {
        if (b->towers[t] != NULL) {
            clef_cpu_towers[t].close(b->towers[t]);
        }
    }
    /* the rank threads first: none may still use a backbone */
    clef_cpu_ranks_destroy(b->ranks);
    for (r = 0; b->backbones != NULL && r < b->tp; r++) {
        clef_cpu_backbone_close(b->backbones[r]);
    }
    for (r = 0; b->pools != NULL && r < b->tp; r++) {
        clef_cpu_pool_destroy(b->pools[r]);
    }
    if (b->comm != NULL) {
        b->comm->ops->destroy(b->comm);
    }
    free(b->backbones);
    free(b->pools);
    free(b);
}

/* Rank r's share of the worker threads: all of them split as evenly as
 * they go, the first ranks taking the remainder, each at least one. */
static int
rank_threads(int threads, int tp, int r)
{
    int  n;

    threads = threads > 0 ? threads : clef_cpu_count();
    n = threads / tp + (r < threads % tp);
    return n > 0 ? n : 1;
}

/* The pools, shards and rank threads of tp ranks; the backbone of rank 0
 * is b->backbone. */
static int
cpu_open_ranks(clef_backend *b, const clef_model *m, const clef_backend_opts *o,
    clef_error *err)
{
    clef_shard  s;
    int         r, threads = o != NULL ? o->threads : 0;

    b->pools = calloc((size_t) b->tp, sizeof(*b->pools));
    b->backbones = calloc((size_t) b->tp, sizeof(*b->backbones));
    if (b->pools == NULL || b->backbones == NULL) {
        return clef_error_fail(err, CLEF_E_NO_MEMORY, "out of memory");
    }
    if (b->tp > 1) {
        if (clef_shard_check(clef_model_text_config(m), b->tp, err) != 0) {
            return -1;
        }
        b->comm = clef_comm_cpu_create(b->tp, err);
        if (b->comm == NULL) {
            return -1;
        }
    }
    for (r = 0; r < b->tp; r++) {
        /* tp 1: the configured threads as they always were (0: one per
         * CPU, which the pool counts itself) */
        b->pools[r] = clef_cpu_pool_create(b->tp > 1 ? rank_threads(threads, b->tp, r)
                                                     : threads, err);
        if (b->pools[r] == NULL) {
            return -1;
        }
        /* loaded one rank after the other: each keeps only its slices, so
         * loading peaks at the largest rank's share, not the whole model */
        clef_shard_of(clef_model_text_config(m), b->tp, r, &s);
        if (clef_cpu_backbone_open_shard(m, b->pools[r], b->prec, &s, b->comm,
                                         &b->backbones[r], err) != 0)
        {
            return -1;
        }
    }
    if (b->tp > 1) {
        b->ranks = clef_cpu_ranks_create(b->tp, err);
        if (b->ranks == NULL) {
            return -1;
        }
    }
    b->pool = b->pools[0];
    b->backbone = b->backbones[0];
    return 0;
}

static int
cpu_open(const clef_model *m, const clef_backend_opts *o, clef_backend **out,
    clef_error *err)
{
    clef_backend  *b;
    int            t;

    b = calloc(1, sizeof(*b));
    if (b == NULL) {
        return clef_error_fail(err, CLEF_E_NO_MEMORY, "out of memory");
    }
    b->tp = o != NULL && o->tp > 1 ? o->tp : 1;
    /* the CPU's own precision: exact (fp32), or the integer products on
     * a block-quantized model (backend/registry.c says why) */
    b->prec = clef_backend_precision("cpu", 3, o != NULL ? o->precision
                                                         : CLEF_PRECISION_DEFAULT,
                                     clef_model_weights_kind(m));
    /* the media towers and the joint head are not sharded: they run once,
     * on rank 0's thread and workers, before and after the ranks' forward */
    if (cpu_open_ranks(b, m, o, err) != 0) {
        cpu_close(b);
        return -1;
    }
    for (t = 0; t < CLEF_CPU_TOWERS; t++) {
        if (clef_cpu_towers[t].open(m, b->pool, &b->towers[t], err) != 0) {
            cpu_close(b);
            return -1;
        }
    }
    if (clef_cpu_head_open(m, &b->head, err) != 0) {
        cpu_close(b);
        return -1;
    }
    b->hidden_size = clef_cpu_backbone_hidden_size(b->backbone);
    if (o != NULL && o->progress != NULL) {
        clef_cpu_backbone_set_progress(b->backbone, o->progress,
                                       o->progress_ctx);
        for (t = 0; t < CLEF_CPU_TOWERS; t++) {
            if (b->towers[t] != NULL) {
                clef_cpu_towers[t].set_progress(b->towers[t], o->progress,
                                                o->progress_ctx);
            }
        }
    }
    /* OpenBLAS is linked into the process but never called here: its core
     * is named so that a log shows the numbers cannot depend on it */
    if (b->tp > 1) {
        snprintf(b->describe, sizeof(b->describe),
                 "cpu backend: precision %s, tensor parallel over %d ranks "
                 "(%d threads on rank 0, %d on rank %d), %.2f GB of weights on "
                 "rank 0; %s; OpenBLAS not used (%s, core %s)",
                 clef_precision_name(b->prec), b->tp,
                 clef_cpu_pool_size(b->pools[0]),
                 clef_cpu_pool_size(b->pools[b->tp - 1]), b->tp - 1,
                 (double) clef_cpu_backbone_weight_bytes(b->backbone) / 1e9,
                 clef_cpu_backbone_gemm_describe(b->backbone),
                 openblas_get_config(), openblas_get_corename());
    } else {
        snprintf(b->describe, sizeof(b->describe),
                 "cpu backend: precision %s, %d threads, %.2f GB of weights; %s; "
                 "OpenBLAS not used (%s, core %s)",
                 clef_precision_name(b->prec),
                 clef_cpu_pool_size(b->pool),
                 (double) clef_cpu_backbone_weight_bytes(b->backbone) / 1e9,
                 clef_cpu_backbone_gemm_describe(b->backbone),
                 openblas_get_config(), openblas_get_corename());
    }
    *out = b;
    return 0;
}

/* Rank `rank`'s forward; a rank that fails is recorded (the first one to
 * fail is the cause: the others fail after it, released by the abort) and
 * releases every rank waiting in an all-reduce. */
static int
tp_rank(void *ctx, int rank, clef_error *err)
{
    tp_forward  *f = ctx;
    int          none = -1, rc;

    rc = clef_cpu_backbone_forward_parts(f->b->backbones[rank], f->ids,
                                         f->cu_seqlens, f->n_records, f->media,
                                         f->parts != NULL
                                         ? f->parts + rank * f->n_records
                                         : NULL,
                                         rank == 0 ? f->hidden : NULL, err);
    if (rc != 0) {
        if (atomic_compare_exchange_strong(&f->first_failed, &none, rank)) {
            f->first_err = *err;
        }
        clef_comm_cpu_abort(f->b->comm);
    }
    return rc;
}

/* The backbone over a batch: on this thread alone (tp 1), or on every
 * rank, the hidden states coming from rank 0 (they are the same on every
 * rank: each one adds the same gathered partials in the same order).
 * Parts of records run with each rank's own state of their records. */
static int
cpu_backbone(clef_backend *b, const clef_batch *batch, const int32_t *ids,
    const clef_cpu_media *media, float *hidden, clef_error *err)
{
    clef_cpu_part  *parts = NULL;
    tp_forward      f;
    int             n = batch->n_records, r, k, rc;

    if (batch->parts != NULL) {
        parts = malloc(sizeof(*parts) * (size_t) (b->tp * n));
        if (parts == NULL) {
            return clef_error_fail(err, CLEF_E_NO_MEMORY, "out of memory");
        }
        for (k = 0; k < b->tp; k++) {
            for (r = 0; r < n; r++) {
                parts[k * n + r].seq = batch->parts[r].seq != NULL
                                       ? batch->parts[r].seq->ranks[k] : NULL;
                parts[k * n + r].offset = batch->parts[r].offset;
            }
        }
    }
    if (b->tp == 1) {
        rc = clef_cpu_backbone_forward_parts(b->backbone, ids,
                                             batch->cu_seqlens, n, media,
                                             parts, hidden, err);
        free(parts);
        return rc;
    }
    f.b = b;
    f.ids = ids;
    f.cu_seqlens = batch->cu_seqlens;
    f.n_records = n;
    f.parts = parts;
    f.media = media;
    f.hidden = hidden;
    atomic_init(&f.first_failed, -1);
    /* no rank is inside the communicator between forwards: a past abort
     * can be cleared */
    clef_comm_cpu_reset(b->comm);
    rc = clef_cpu_ranks_run(b->ranks, tp_rank, &f, err);
    if (rc != 0 && atomic_load(&f.first_failed) >= 0) {
        *err = f.first_err;
    }
    free(parts);
    return rc != 0 ? -1 : 0;
}

/* Whether a kind's tokens take the DeepStack additions (the reference's
 * visual_pos_masks: image and video pads). */
static int
cpu_visual(clef_media_kind k)
{
    return k == CLEF_MEDIA_IMAGE || k == CLEF_MEDIA_VIDEO;
}

/* The encoder of media kind k (towers.h): its tower over items, all of
 * the kind, refused by name for a model without that tower.  group[k]:
 * item k's record in the batch (the audio tower pads a record's clips
 * alike). */
static int
cpu_encode_kind(clef_backend *b, clef_media_kind k,
    const clef_media_item *const *items, const int32_t *group, int n,
    float *features, int64_t level_stride, clef_error *err)
{
    const clef_media_kind_info  *info = clef_media_kind_of(k);
    int                          t = clef_cpu_tower_of(k);

    if (b->towers[t] == NULL) {
        return clef_error_set(err, 400, info->unsupported, NULL,
                              "This model does not accept %s.", info->many);
    }
    return clef_cpu_towers[t].encode(b->towers[t], items, group, n, features,
                                     level_stride, err);
}

/* 1 + the DeepStack levels of the model's towers (the vision tower's,
 * Clef Omni): the feature planes an encoding writes. */
static int
cpu_levels(clef_backend *b)
{
    int  t, d, levels = 0;

    for (t = 0; t < CLEF_CPU_TOWERS; t++) {
        if (b->towers[t] != NULL && clef_cpu_towers[t].deepstack != NULL) {
            d = clef_cpu_towers[t].deepstack(b->towers[t]);
            levels = d > levels ? d : levels;
        }
    }
    return 1 + levels;
}

/* The encoders over the media items of a batch (those of its records run
 * in parts left out when skip_parts: their seqs hold their rows), each
 * kind's items together, in kind order, then batch order: *out holds
 * [levels][*stride][hidden_size] floats, the encoded rows first (*rows of
 * them), then `extra` rows for the caller; first[m] is item m's first row
 * (-1: left out). */
static int
cpu_encode(clef_backend *b, const clef_batch *batch, int skip_parts,
    int64_t extra, float **out, int64_t *stride, int64_t *rows_out,
    int64_t *first, clef_error *err)
{
    const clef_media_kind_info  *info;
    const clef_media_item      **items;
    const clef_media_item       *it;
    int64_t                      rows = 0, krow[CLEF_MEDIA_KINDS];
    int32_t                     *group;
    float                       *features = NULL;
    int                          m, k, n, at[CLEF_MEDIA_KINDS], rc = -1;
    int                          levels, r, rm, left = 0;

    items = calloc((size_t) batch->n_items + 1, sizeof(*items));
    group = calloc((size_t) batch->n_items + 1, sizeof(*group));
    if (items == NULL || group == NULL) {
        clef_error_fail(err, CLEF_E_NO_MEMORY, "out of memory");
        goto done;
    }
    /* items[] by kind, group[]: their records; first[m]: item m's first
     * row of features */
    for (m = 0; m < batch->n_items; m++) {
        first[m] = -1;
    }
    for (k = 1, n = 0; k < CLEF_MEDIA_KINDS; k++) {
        at[k] = n;
        krow[k] = rows;
        for (m = 0, r = 0, rm = 0; m < batch->n_items; m++) {
            while (r < batch->n_records
                   && m - rm >= batch->records[r]->n_media)
            {
                rm += batch->records[r++]->n_media;
            }
            it = clef_batch_item(batch, m);
            if (it->kind != (clef_media_kind) k) {
                continue;
            }
            if (skip_parts && batch->parts != NULL
                && batch->parts[r].seq != NULL)
            {
                left++;
                continue;
            }
            if (clef_cpu_tower_of(k) < 0) {
                info = clef_media_kind_of(k);
                clef_error_set(err, 400, info->unsupported, NULL,
                               "The cpu backend has no encoder for %s.",
                               info->many);
                goto done;
            }
            group[n] = r;
            items[n++] = it;
            first[m] = rows;
            rows += it->tokens;
        }
    }
    if (n + left != batch->n_items) {
        clef_error_fail(err, CLEF_E_INTERNAL, "a media item of no kind");
        goto done;
    }
    levels = cpu_levels(b);
    features = calloc((size_t) levels * (size_t) (rows + extra > 0
                                                  ? rows + extra : 1)
                      * (size_t) b->hidden_size, sizeof(float));
    if (features == NULL) {
        clef_error_fail(err, CLEF_E_NO_MEMORY,
            "out of memory for %lld media tokens", (long long) rows);
        goto done;
    }
    for (k = 1; k < CLEF_MEDIA_KINDS; k++) {
        n = (k + 1 < CLEF_MEDIA_KINDS ? at[k + 1] : batch->n_items - left)
            - at[k];
        if (n > 0
            && cpu_encode_kind(b, k, items + at[k], group + at[k], n,
                               features + krow[k] * b->hidden_size,
                               (rows + extra) * b->hidden_size, err) != 0)
        {
            goto done;
        }
    }
    *out = features;
    features = NULL;
    *stride = rows + extra;
    *rows_out = rows;
    rc = 0;

done:
    free(features);
    free(group);
    free(items);
    return rc;
}

/* A record run in parts: its items through the encoders once, alone, with
 * its first part (an item's rows do not depend on the items encoded with
 * it: a record's logits are those of the record alone). */
static int
cpu_seq_encode(clef_backend *b, clef_backend_seq *s, clef_error *err)
{
    clef_batch  one;
    int32_t     cu[2];
    int64_t     rows;

    if (s->encoded || s->rec->n_media == 0) {
        return 0;
    }
    clef_batch_init(&one, &s->rec, 1, cu);
    one.n_items = s->rec->n_media;
    s->first = calloc((size_t) s->rec->n_media, sizeof(*s->first));
    if (s->first == NULL) {
        return clef_error_fail(err, CLEF_E_NO_MEMORY, "out of memory");
    }
    if (cpu_encode(b, &one, 0, 0, &s->features, &s->rows, &rows, s->first,
                   err) != 0)
    {
        return -1;
    }
    s->encoded = 1;
    return 0;
}

/* The batch's items through their kinds' encoders (cpu_encode), those of
 * its parts from their records' seqs, then the spans' rows of their
 * output in place of their tokens' embeddings. */
static int
cpu_media(clef_backend *b, const clef_batch *batch, const int32_t *ids,
    float *hidden, clef_error *err)
{
    const clef_backend_seq      *sq;
    clef_media_span             *spans, *visual;
    clef_cpu_media               media;
    int64_t                     *first, rows = 0, stride = 0, extra = 0, at;
    int32_t                     *rec_of, *item0;
    float                       *features = NULL;
    size_t                       H = (size_t) b->hidden_size;
    int                          m, r, it, d, levels, nv = 0, rc = -1;

    if (batch->positions == NULL) {
        return clef_error_fail(err, CLEF_E_INTERNAL, "a batch with media "
                               "needs its media (clef_batch_set_media)");
    }
    first = calloc((size_t) batch->n_items + 1, sizeof(*first));
    spans = calloc((size_t) batch->n_spans + 1, sizeof(*spans));
    visual = calloc((size_t) batch->n_spans + 1, sizeof(*visual));
    rec_of = calloc((size_t) batch->n_items + 1, sizeof(*rec_of));
    item0 = calloc((size_t) batch->n_records + 1, sizeof(*item0));
    if (first == NULL || spans == NULL || visual == NULL || rec_of == NULL
        || item0 == NULL)
    {
        clef_error_fail(err, CLEF_E_NO_MEMORY, "out of memory");
        goto done;
    }
    for (r = 0, m = 0; r < batch->n_records; r++) {
        item0[r] = m;
        for (it = 0; it < batch->records[r]->n_media; it++) {
            rec_of[m++] = r;
        }
        if (batch->parts != NULL && batch->parts[r].seq != NULL
            && cpu_seq_encode(b, batch->parts[r].seq, err) != 0)
        {
            goto done;
        }
    }
    /* the parts' spans take rows after the encoded ones */
    for (m = 0; m < batch->n_spans; m++) {
        r = rec_of[batch->spans[m].item];
        if (batch->parts != NULL && batch->parts[r].seq != NULL) {
            extra += batch->spans[m].len;
        }
    }
    if (cpu_encode(b, batch, 1, extra, &features, &stride, &rows, first, err)
        != 0)
    {
        goto done;
    }
    levels = cpu_levels(b);
    at = rows;
    for (m = 0; m < batch->n_spans; m++) {
        spans[m] = batch->spans[m];
        it = batch->spans[m].item;
        r = rec_of[it];
        sq = batch->parts != NULL ? batch->parts[r].seq : NULL;
        if (sq != NULL) {
            for (d = 0; d < levels; d++) {
                memcpy(features + ((size_t) d * stride + at) * H,
                       sq->features + ((size_t) d * sq->rows
                                       + sq->first[it - item0[r]]
                                       + spans[m].row) * H,
                       sizeof(float) * H * (size_t) spans[m].len);
            }
            spans[m].row = (int32_t) at;
            at += spans[m].len;
        } else {
            spans[m].row = (int32_t) (first[it] + spans[m].row);
        }
        if (cpu_visual(clef_batch_item(batch, it)->kind)) {
            visual[nv++] = spans[m];
        }
    }
    media.positions = batch->positions;
    media.spans = spans;
    media.n_spans = batch->n_spans;
    media.features = features;
    media.n_deepstack = levels - 1;
    media.deepstack = features + stride * b->hidden_size;
    media.level_stride = stride * b->hidden_size;
    media.visual = visual;
    media.n_visual = nv;
    rc = cpu_backbone(b, batch, ids, &media, hidden, err);

done:
    free(features);
    free(first);
    free(spans);
    free(visual);
    free(rec_of);
    free(item0);
    return rc;
}

/* The final-norm rows of the batch's parts join their records' (the head
 * reads the whole record). */
static void
cpu_keep_hidden(clef_backend *b, const clef_batch *batch, const float *hidden)
{
    const clef_batch_part  *p;
    size_t                  H = (size_t) b->hidden_size;
    int                     r;

    for (r = 0; batch->parts != NULL && r < batch->n_records; r++) {
        p = &batch->parts[r];
        if (p->seq != NULL) {
            memcpy(p->seq->hidden + (size_t) p->offset * H,
                   hidden + (size_t) batch->cu_seqlens[r] * H,
                   sizeof(float) * H * (size_t) p->len);
        }
    }
}

static int
cpu_hidden(clef_backend *b, const clef_batch *batch, float *hidden, clef_error *err)
{
    int64_t   T = clef_batch_tokens(batch), off;
    int32_t  *ids;
    int       r, rc, any = 0;
    double    t0 = clef_clock_seconds();

    for (r = 0; r < batch->n_records; r++) {
        any |= batch->records[r]->n_media > 0;
    }
    if (T == 0) {
        b->backbone_s = 0;
        return 0;
    }
    ids = malloc(sizeof(int32_t) * (size_t) T);
    if (ids == NULL) {
        return clef_error_fail(err, CLEF_E_NO_MEMORY, "out of memory");
    }
    for (r = 0; r < batch->n_records; r++) {
        off = batch->parts != NULL ? batch->parts[r].offset : 0;
        memcpy(ids + batch->cu_seqlens[r], batch->records[r]->ids.v + off,
               sizeof(int32_t) * (batch->cu_seqlens[r + 1] - batch->cu_seqlens[r]));
    }
    rc = any || batch->n_spans > 0
         ? cpu_media(b, batch, ids, hidden, err)
         : cpu_backbone(b, batch, ids, NULL, hidden, err);
    if (rc == 0) {
        cpu_keep_hidden(b, batch, hidden);
    }
    free(ids);
    b->backbone_s = clef_clock_seconds() - t0;
    return rc;
}

/* The heads of a batch's records, one record per pool task: a record's
 * head reads only its own rows and the head's weights, so which worker runs
 * it changes nothing in its logits (one thread still runs each record's
 * head start to end). */
typedef struct {
    const float *hidden;        /* the record's rows; NULL: no logits yet */
    int          first_logit;
    int          rc;
    clef_error   err;
} head_slot;

typedef struct {
    clef_cpu_head      *head;
    const clef_batch   *batch;
    float              *logits;
    head_slot          *slots;         /* [n_records] */
} heads_job;

static void
head_task(void *ctx, int64_t begin, int64_t end, int worker)
{
    const heads_job  *j = ctx;
    head_slot        *s;
    int64_t           r;

    for (r = begin; r < end; r++) {
        s = &j->slots[r];
        if (s->hidden != NULL) {
            s->rc = clef_cpu_head_forward(j->head, s->hidden,
                                          j->batch->records[r],
                                          j->logits + s->first_logit, &s->err);
        }
    }
}

static int
cpu_heads(clef_backend *b, const clef_batch *batch, const float *hidden,
    float *logits, clef_error *err)
{
    heads_job  j;
    int        r, n = batch->n_records, off = 0, rc = 0;

    j.slots = calloc((size_t) (n > 0 ? n : 1), sizeof(head_slot));
    if (j.slots == NULL) {
        return clef_error_fail(err, CLEF_E_NO_MEMORY, "out of memory");
    }
    /* a record's head runs with its last part, over its whole rows */
    for (r = 0; r < n; r++) {
        if (!clef_batch_last(batch, r)) {
            continue;
        }
        j.slots[r].hidden = batch->parts != NULL && batch->parts[r].seq != NULL
                            ? batch->parts[r].seq->hidden
                            : hidden + (int64_t) batch->cu_seqlens[r]
                                       * b->hidden_size;
        j.slots[r].first_logit = off;
        off += batch->records[r]->n_options;
    }
    j.head = b->head;
    j.batch = batch;
    j.logits = logits;
    clef_cpu_pool_for(b->pool, n, 1, head_task, &j);

    /* the first record that failed speaks for the batch, as when they ran
     * one after another */
    for (r = 0; r < n; r++) {
        if (j.slots[r].rc != 0) {
            *err = j.slots[r].err;
            rc = -1;
            break;
        }
    }
    free(j.slots);
    return rc;
}

static int
cpu_forward(clef_backend *b, const clef_batch *batch, float *logits, clef_error *err)
{
    int64_t  T = clef_batch_tokens(batch);
    float   *hidden;
    double   t0;
    int      rc;

    hidden = malloc(sizeof(float) * (size_t) (T > 0 ? T : 1) * b->hidden_size);
    if (hidden == NULL) {
        return clef_error_fail(err, CLEF_E_NO_MEMORY, "out of memory");
    }
    if (cpu_hidden(b, batch, hidden, err) != 0) {
        free(hidden);
        return -1;
    }

    t0 = clef_clock_seconds();
    rc = cpu_heads(b, batch, hidden, logits, err);
    b->head_s = clef_clock_seconds() - t0;

    free(hidden);
    return rc;
}

static void
cpu_seq_close(clef_backend *b, clef_backend_seq *s)
{
    int  k;

    if (s == NULL) {
        return;
    }
    for (k = 0; s->ranks != NULL && k < b->tp; k++) {
        clef_cpu_seq_close(s->ranks[k]);
    }
    free(s->ranks);
    free(s->hidden);
    free(s->features);
    free(s->first);
    free(s);
}

static int
cpu_seq_open(clef_backend *b, const clef_record *rec, clef_backend_seq **out,
    clef_error *err)
{
    clef_backend_seq  *s;
    int64_t            n = (int64_t) rec->ids.n;
    int                k;

    s = calloc(1, sizeof(*s));
    if (s == NULL) {
        return clef_error_fail(err, CLEF_E_NO_MEMORY, "out of memory");
    }
    s->rec = rec;
    s->ranks = calloc((size_t) b->tp, sizeof(*s->ranks));
    s->hidden = malloc(sizeof(float) * (size_t) (n > 0 ? n : 1)
                       * (size_t) b->hidden_size);
    if (s->ranks == NULL || s->hidden == NULL) {
        cpu_seq_close(b, s);
        return clef_error_fail(err, CLEF_E_NO_MEMORY, "out of memory for "
                               "a record of %lld tokens run in parts",
                               (long long) n);
    }
    /* each rank keeps its shard's state */
    for (k = 0; k < b->tp; k++) {
        if (clef_cpu_backbone_seq_open(b->backbones[k], n, &s->ranks[k], err)
            != 0)
        {
            cpu_seq_close(b, s);
            return -1;
        }
    }
    *out = s;
    return 0;
}

clef_cpu_backbone *
clef_cpu_backend_backbone(clef_backend *b)
{
    return b->backbone;
}

int
clef_cpu_backend_tp(const clef_backend *b)
{
    return b->tp;
}

double
clef_cpu_backend_allreduce_seconds(const clef_backend *b)
{
    double  s = 0;
    int     r;

    for (r = 0; b->comm != NULL && r < b->tp; r++) {
        s += clef_comm_cpu_seconds(b->comm, r);
    }
    return s;
}

void
clef_cpu_backend_allreduce_reset(clef_backend *b)
{
    if (b->comm != NULL) {
        clef_comm_cpu_reset_time(b->comm);
    }
}

size_t
clef_cpu_backend_rank_weight_bytes(const clef_backend *b, int rank)
{
    return rank >= 0 && rank < b->tp
           ? clef_cpu_backbone_weight_bytes(b->backbones[rank]) : 0;
}

void
clef_cpu_backend_fail_at(clef_backend *b, int rank, int layer)
{
    if (rank >= 0 && rank < b->tp) {
        clef_cpu_backbone_fail_at(b->backbones[rank], layer);
    }
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
    cpu_seq_open,
    cpu_seq_close,
};
