/*
 * The audio tower's convolutions, fp32 (transformers 5.10.2's
 * Qwen3OmniMoeAudioEncoder: Conv2d(kernel 3, stride 2, padding 1) over
 * (mel, time), three times).  Activations are channel-last, [h][w][C], so
 * that the second and third convolutions are one GEMM each over their
 * im2col rows (the weight [C][C][3][3] read as a [C][9 C] matrix) and
 * the bias and GELU a row op (vision_ops.h).  Each op splits rows over the
 * pool; nothing depends on how.
 */
#ifndef CLEF_CPU_AUDIO_OPS_H
#define CLEF_CPU_AUDIO_OPS_H

#include <stdint.h>

#include "cpu/parallel/pool.h"

/* A stride-2 convolution's output side for an input side n (padding 1). */
#define CLEF_AUDIO_HALF(n)  (((n) - 1) / 2 + 1)

/* The first convolution (one input channel) over a chunk: the frames
 * [first, first + frames) of the clip's features mel ([mels][ld]),
 * zero-padded to width frames and by the convolution's own padding;
 * out[h][w][C] = weight . window, before the bias and GELU (mels / 2
 * rounded up by width / 2 rounded up positions).  weight: [C][1][3][3]. */
void clef_cpu_audio_conv1(clef_cpu_pool *pool, const float *mel, int64_t ld,
    int64_t first, int64_t frames, int mels, int width, const float *weight,
    int C, float *out);

/* The im2col rows of a 3 x 3 stride-2 padding-1 convolution over x
 * ([h][w][C]): cols[(oh, ow)][c * 9 + kh * 3 + kw], the weight's own
 * order, zeros outside x. */
void clef_cpu_audio_im2col(clef_cpu_pool *pool, const float *x, int h,
    int w, int C, float *cols);

#endif
