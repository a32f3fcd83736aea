/*
 * The reference processor's resampling: torchvision's resize of a uint8
 * image with BICUBIC and antialias=True on the CPU, which PyTorch computes
 * in fixed point as Pillow does (aten UpSampleKernel.cpp,
 * _compute_index_ranges_int16_weights and the separable uint8 passes):
 *
 *   - per axis, scale = in / out; the cubic kernel (a = -0.5) is widened by
 *     the scale when shrinking (the antialias), its taps for output i span
 *     [int(center - support + 0.5), int(center + support + 0.5)) clamped to
 *     the image, center = scale (i + 0.5), and are normalized to sum to 1,
 *     all in double;
 *   - the weights become int16 at the largest precision P under which the
 *     axis's largest weight still fits (below 2^15 at P + 1), rounded half
 *     away from zero;
 *   - a pass sums 2^(P-1) + sum of pixel x weight in 32-bit integers,
 *     shifts right by P and clamps to 0..255;
 *   - width first (into a uint8 image), then height; an axis whose size
 *     does not change is not resampled.
 *
 * The result is the reference's, byte for byte: t/unit/test_image.c checks
 * it on the corpus of t/fixtures/images.
 */
#ifndef CLEF_RESIZE_H
#define CLEF_RESIZE_H

#include <stdint.h>

/* src [sh][sw][3] to dst [dh][dw][3].  -1 when out of memory. */
int clef_resize_bicubic_aa(const uint8_t *src, int sw, int sh, uint8_t *dst,
    int dw, int dh);

#endif
