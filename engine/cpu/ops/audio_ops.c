/*
 * The audio tower's convolutions (see audio_ops.h).
 */
#include "cpu/ops/audio_ops.h"

#include <math.h>
#include <string.h>

typedef struct {
    const float  *mel, *w;
    int64_t       ld, first, frames;
    int           mels, width, C, wo;
    float        *out;
} conv1_job;


/* one output row (a mel position oh) of every channel */
static void
conv1_task(void *ctx, int64_t begin, int64_t end, int worker)
{
    const conv1_job  *j = ctx;
    int64_t           oh;
    int               ow, c, kh, kw, h, t;
    float             x[9], acc, *o;

    (void) worker;
    for (oh = begin; oh < end; oh++) {
        for (ow = 0; ow < j->wo; ow++) {
            for (kh = 0; kh < 3; kh++) {
                for (kw = 0; kw < 3; kw++) {
                    h = (int) (2 * oh - 1 + kh);
                    t = 2 * ow - 1 + kw;
                    x[kh * 3 + kw] =
                        h >= 0 && h < j->mels && t >= 0 && t < j->frames
                        ? j->mel[(int64_t) h * j->ld + j->first + t] : 0.0f;
                }
            }
            o = j->out + (oh * j->wo + ow) * j->C;
            for (c = 0; c < j->C; c++) {
                acc = 0.0f;
                for (kh = 0; kh < 9; kh++) {
                    acc += j->w[c * 9 + kh] * x[kh];
                }
                o[c] = acc;
            }
        }
    }
}


void
clef_cpu_audio_conv1(clef_cpu_pool *pool, const float *mel, int64_t ld,
    int64_t first, int64_t frames, int mels, int width, const float *weight,
    int C, float *out)
{
    conv1_job  j;

    j.mel = mel;
    j.w = weight;
    j.ld = ld;
    j.first = first;
    /* the chunk's frames, then zeros up to its padded width (and the
     * convolution's padding past it: zeros too) */
    j.frames = frames < width ? frames : width;
    j.mels = mels;
    j.width = width;
    j.C = C;
    j.wo = CLEF_AUDIO_HALF(width);
    j.out = out;
    clef_cpu_pool_for(pool, CLEF_AUDIO_HALF(mels), 1, conv1_task, &j);
}


typedef struct {
    const float  *x;
    int           h, w, C, wo;
    float        *cols;
} im2col_job;


static void
im2col_task(void *ctx, int64_t begin, int64_t end, int worker)
{
    const im2col_job  *j = ctx;
    const float       *src;
    int64_t            p;
    int                oh, ow, kh, kw, h, t, c, k9 = 9 * j->C;
    float             *dst;

    (void) worker;
    for (p = begin; p < end; p++) {
        oh = (int) (p / j->wo);
        ow = (int) (p % j->wo);
        dst = j->cols + p * k9;
        for (kh = 0; kh < 3; kh++) {
            for (kw = 0; kw < 3; kw++) {
                h = 2 * oh - 1 + kh;
                t = 2 * ow - 1 + kw;
                if (h < 0 || h >= j->h || t < 0 || t >= j->w) {
                    for (c = 0; c < j->C; c++) {
                        dst[c * 9 + kh * 3 + kw] = 0.0f;
                    }
                    continue;
                }
                src = j->x + ((int64_t) h * j->w + t) * j->C;
                for (c = 0; c < j->C; c++) {
                    dst[c * 9 + kh * 3 + kw] = src[c];
                }
            }
        }
    }
}


void
clef_cpu_audio_im2col(clef_cpu_pool *pool, const float *x, int h, int w,
    int C, float *cols)
{
    im2col_job  j = { x, h, w, C, CLEF_AUDIO_HALF(w), cols };

    clef_cpu_pool_for(pool, (int64_t) CLEF_AUDIO_HALF(h) * j.wo, 4,
                      im2col_task, &j);
}
