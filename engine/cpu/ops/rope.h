/*
 * Partial rotary position embedding, NeoX half-split (spec §3.2 steps 3-4):
 * only the first rot = int(head_dim * partial_rotary_factor) dims of a head
 * rotate; pair j is (d_j, d_{j + rot/2}) with angle pos * inv_freq_j,
 * inv_freq_j = 1 / theta^(2j / rot).  The rest of the head passes through.
 * For text-only input the interleaved M-RoPE axes all equal the token's
 * position, so this is plain RoPE; positions restart at 0 in every record.
 *
 * Angles, cos and sin are fp32 computed exactly as the reference does
 * (fp32 inv_freq, fp32 product pos * inv_freq): at positions in the
 * thousands a one-ulp difference in the angle would already show.
 */
#ifndef CLEF_CPU_ROPE_H
#define CLEF_CPU_ROPE_H

#include <stdint.h>

/* rot: rotated dims (even).  cos, sin: [positions][rot / 2]. */
void clef_cpu_rope_table(int rot, double theta, int64_t positions, float *cos,
    float *sin);

/* Rotates the first rot dims of x in place with one position's table row. */
void clef_cpu_rope_apply(float *x, int rot, const float *cos, const float *sin);

#endif
