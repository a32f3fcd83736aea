/*
 * The CPU backend's media towers (see towers.h): the vision tower takes
 * images and videos (cpu/model/vision.c: an image one temporal group, a
 * video one per frame pair), the audio tower Clef Omni's audio clips
 * (cpu/model/audio.c, each record's clips padded alike).
 */
#include "cpu/towers.h"

#include "cpu/model/audio.h"
#include "cpu/model/vision.h"

static int
vision_open(const clef_model *m, clef_cpu_pool *pool, void **out,
    clef_error *err)
{
    clef_cpu_vision  *v = NULL;
    int               rc;

    rc = clef_cpu_vision_open(m, pool, &v, err);
    *out = v;
    return rc;
}

static void
vision_close(void *t)
{
    clef_cpu_vision_close(t);
}

static void
vision_set_progress(void *t, void (*fn)(void *ctx), void *ctx)
{
    clef_cpu_vision_set_progress(t, fn, ctx);
}

/* Every item of the batch's kind at once (the caller groups by kind). */
static int
vision_encode(void *t, const clef_media_item *const *items,
    const int32_t *group, int n, float *features, int64_t level_stride,
    clef_error *err)
{
    return clef_cpu_vision_forward_levels(t, items, n, features,
                                          level_stride, err);
}

static int
vision_deepstack(const void *t)
{
    return clef_cpu_vision_deepstack(t);
}

static int
audio_open(const clef_model *m, clef_cpu_pool *pool, void **out,
    clef_error *err)
{
    clef_cpu_audio  *a = NULL;
    int              rc;

    rc = clef_cpu_audio_open(m, pool, &a, err);
    *out = a;
    return rc;
}

static void
audio_close(void *t)
{
    clef_cpu_audio_close(t);
}

static void
audio_set_progress(void *t, void (*fn)(void *ctx), void *ctx)
{
    clef_cpu_audio_set_progress(t, fn, ctx);
}

/* Rows at the text stack's width, no DeepStack levels. */
static int
audio_encode(void *t, const clef_media_item *const *items,
    const int32_t *group, int n, float *features, int64_t level_stride,
    clef_error *err)
{
    return clef_cpu_audio_forward(t, items, group, n, features, err);
}

const clef_cpu_tower  clef_cpu_towers[CLEF_CPU_TOWERS] = {
    { CLEF_MEDIA_BIT(CLEF_MEDIA_IMAGE) | CLEF_MEDIA_BIT(CLEF_MEDIA_VIDEO),
      vision_open, vision_close, vision_set_progress, vision_encode,
      vision_deepstack },
    { CLEF_MEDIA_BIT(CLEF_MEDIA_AUDIO),
      audio_open, audio_close, audio_set_progress, audio_encode, NULL },
};

int
clef_cpu_tower_of(clef_media_kind kind)
{
    int  t;

    for (t = 0; t < CLEF_CPU_TOWERS; t++) {
        if (kind > 0 && kind < CLEF_MEDIA_KINDS
            && (clef_cpu_towers[t].kinds & CLEF_MEDIA_BIT(kind)))
        {
            return t;
        }
    }
    return -1;
}
