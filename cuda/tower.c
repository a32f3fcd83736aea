/*
 * The media towers' frame (see tower.h): the table of towers, and the
 * loops the backend runs over it, as the CPU backend loops over its
 * encoders.
 */
#include <stdio.h>
#include <stdlib.h>

#include "cuda_backend.h"
#include "media/kinds.h"
#include "tower.h"

static const cuda_tower_ops *const  towers[CUDA_TOWERS] = {
    &cuda_vision_tower,             /* images and videos (vision.c) */
    &cuda_audio_tower               /* audio clips (audio.c) */
};

/* The row that takes kind, or -1. */
static int
tower_of(clef_media_kind kind)
{
    int  t;

    for (t = 0; t < CUDA_TOWERS; t++) {
        if (cuda_tower_takes(towers[t], kind)) {
            return t;
        }
    }
    return -1;
}

int
cuda_tower_takes(const cuda_tower_ops *ops, clef_media_kind kind)
{
    return kind > 0 && kind < CLEF_MEDIA_KINDS
           && (ops->kinds & CLEF_MEDIA_BIT(kind)) != 0;
}

/* The first of the batch's items that tower t takes, or NULL. */
static const clef_media_item *
first_item(const clef_batch *batch, int t)
{
    const clef_media_item  *it;
    int                     m;

    for (m = 0; m < batch->n_items; m++) {
        it = clef_batch_item(batch, m);
        if (it != NULL && tower_of(it->kind) == t) {
            return it;
        }
    }
    return NULL;
}

/* The refusal of a batch with tower t's items for a model without that
 * tower, in the words of the first such item's kind (the tower's first
 * kind when the batch has none). */
static int
no_tower(const clef_batch *batch, int t, clef_error *err)
{
    const clef_media_item       *it = first_item(batch, t);
    const clef_media_kind_info  *info;
    int                          k;

    for (k = 1; it == NULL && k < CLEF_MEDIA_KINDS; k++) {
        if (towers[t]->kinds & CLEF_MEDIA_BIT(k)) {
            break;
        }
    }
    info = clef_media_kind_of(it != NULL ? (int) it->kind : k);
    return clef_error_set(err, 400, info->unsupported, NULL,
                          "This model does not accept %s.", info->many);
}

int
cuda_towers_open(clef_backend *b, clef_error *err)
{
    int  t;

    for (t = 0; t < CUDA_TOWERS; t++) {
        if (towers[t]->open(b, &b->towers[t].state, err) != 0) {
            return -1;
        }
    }
    return 0;
}

void
cuda_towers_close(clef_backend *b)
{
    int  t;

    for (t = 0; t < CUDA_TOWERS; t++) {
        if (b->towers[t].state != NULL) {
            towers[t]->close(b->towers[t].state);
            b->towers[t].state = NULL;
        }
        b->towers[t].active = 0;
    }
}

int
cuda_towers_check(const clef_batch *batch, clef_error *err)
{
    const clef_media_kind_info  *info;
    const clef_media_item       *it;
    int                          m;

    for (m = 0; m < batch->n_items; m++) {
        it = clef_batch_item(batch, m);
        if (tower_of(it->kind) < 0) {
            info = clef_media_kind_of(it->kind);
            return clef_error_set(err, 400, info != NULL ? info->unsupported
                                                         : "media_unsupported",
                                  NULL, "The cuda backend has no encoder for "
                                  "%s.", info != NULL ? info->many
                                                      : "this media");
        }
    }
    return 0;
}

/* Tower t readied for the batch: inactive without items of its kinds. */
static int
tower_prepare(clef_backend *b, int t, const clef_batch *batch,
    clef_error *err)
{
    cuda_tower_slot  *slot = &b->towers[t];

    slot->active = 0;
    if (first_item(batch, t) == NULL) {
        return 0;
    }
    if (slot->state == NULL) {
        return no_tower(batch, t, err);
    }
    if (towers[t]->prepare(b, slot->state, batch, err) != 0) {
        return -1;
    }
    slot->active = 1;
    return 0;
}

int
cuda_towers_prepare(clef_backend *b, const clef_batch *batch,
    clef_error *err)
{
    int  t;

    for (t = 0; t < CUDA_TOWERS; t++) {
        if (tower_prepare(b, t, batch, err) != 0) {
            return -1;
        }
    }
    return 0;
}

int
cuda_towers_active(const clef_backend *b)
{
    int  t;

    for (t = 0; t < CUDA_TOWERS; t++) {
        if (b->towers[t].active) {
            return 1;
        }
    }
    return 0;
}

int
cuda_towers_embed(clef_backend *b, clef_error *err)
{
    cuda_tower_out  out;
    char            what[64];
    int             t;

    for (t = 0; t < CUDA_TOWERS; t++) {
        if (!b->towers[t].active) {
            continue;
        }
        if (towers[t]->embed(b, b->towers[t].state, &out, err) != 0) {
            return -1;
        }
        if (out.rows == 0) {
            continue;
        }
        snprintf(what, sizeof(what), "%s features", towers[t]->name);
        if (cuda_check(clef_k_vscatter(out.feat, out.bias, out.dst, b->ws.hid,
                                       (int) out.rows, out.width, b->stream),
                       what, err) != 0)
        {
            return -1;
        }
    }
    return 0;
}

void
cuda_towers_rope(const clef_backend *b, clef_k_rope_args *r)
{
    int  t;

    /* the text rope unless a tower's items turn it */
    r->mpos = NULL;
    r->msec[0] = r->msec[1] = r->msec[2] = 0;
    for (t = 0; t < CUDA_TOWERS; t++) {
        if (b->towers[t].active && towers[t]->rope != NULL) {
            towers[t]->rope(b->towers[t].state, r);
        }
    }
}

int
cuda_towers_layer(clef_backend *b, int l, int *cur, clef_error *err)
{
    int  t;

    for (t = 0; t < CUDA_TOWERS; t++) {
        if (!b->towers[t].active || towers[t]->layer == NULL) {
            continue;
        }
        if (cuda_rank_device(b, 0, cur, err) != 0
            || towers[t]->layer(b, b->towers[t].state, l, err) != 0)
        {
            return -1;
        }
    }
    return 0;
}

/* The tower of kind alone over the batch's items, its rows copied back
 * with the last bias added in fp32 (clef_cuda.h). */
static int
tower_features(clef_backend *b, clef_media_kind kind,
    const clef_batch *batch, float *features, clef_error *err)
{
    const int        t = tower_of(kind);
    cuda_tower_out   out;
    uint16_t        *h = NULL;
    float           *bias = NULL;
    size_t           n;
    int64_t          j;
    int              i, rc = -1;
    char             what[64];

    if (b->towers[t].state == NULL) {
        return no_tower(batch, t, err);
    }
    if (cuda_check(cudaSetDevice(b->device), "cudaSetDevice", err) != 0
        || tower_prepare(b, t, batch, err) != 0)
    {
        return -1;
    }
    if (!b->towers[t].active) {
        return 0;
    }
    if (towers[t]->embed(b, b->towers[t].state, &out, err) == 0) {
        if (out.rows == 0) {
            b->towers[t].active = 0;
            return 0;
        }
        n = (size_t) out.rows * (size_t) out.width;
        h = malloc(n * sizeof(uint16_t));
        bias = malloc((size_t) out.width * sizeof(float));
        snprintf(what, sizeof(what), "%s features", towers[t]->name);
        if (h == NULL || bias == NULL) {
            clef_error_fail(err, CLEF_E_NO_MEMORY, "out of memory");
        } else if (cuda_check(cudaMemcpyAsync(h, out.feat, n * 2,
                                              cudaMemcpyDeviceToHost,
                                              b->stream), what, err) == 0)
        {
            snprintf(what, sizeof(what), "%s bias", towers[t]->name);
            if (cuda_check(cudaMemcpyAsync(bias, out.bias,
                                           (size_t) out.width * sizeof(float),
                                           cudaMemcpyDeviceToHost, b->stream),
                           what, err) == 0)
            {
                rc = 0;
            }
        }
    }
    /* wait even after a failed enqueue: the staging buffer is reused */
    snprintf(what, sizeof(what), "%s tower", towers[t]->name);
    if (cuda_check(cudaStreamSynchronize(b->stream), what, err) != 0) {
        rc = -1;
    }
    if (rc == 0) {
        for (j = 0; j < out.rows; j++) {
            for (i = 0; i < out.width; i++) {
                features[j * out.width + i] =
                    clef_bf16_to_f32(h[j * out.width + i]) + bias[i];
            }
        }
    }
    b->towers[t].active = 0;
    free(h);
    free(bias);
    return rc;
}

int
clef_cuda_vision_features(clef_backend *b, const clef_batch *batch,
    float *features, clef_error *err)
{
    return tower_features(b, CLEF_MEDIA_IMAGE, batch, features, err);
}

int
clef_cuda_audio_features(clef_backend *b, const clef_batch *batch,
    float *features, clef_error *err)
{
    return tower_features(b, CLEF_MEDIA_AUDIO, batch, features, err);
}
