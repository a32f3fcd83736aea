#include "cpu/ops/rope.h"

#include <math.h>

void
clef_cpu_rope_table(int rot, double theta, int64_t positions, float *cos,
    float *sin)
{
    int      half = rot / 2, j;
    int64_t  p;
    float    inv, a;

    for (j = 0; j < half; j++) {
        /* 1 / theta ** (arange(0, rot, 2) / rot), each step in fp32 */
        inv = 1.0f / powf((float) theta, (float) (2 * j) / (float) rot);
        for (p = 0; p < positions; p++) {
            a = (float) p * inv;
            cos[p * half + j] = cosf(a);
            sin[p * half + j] = sinf(a);
        }
    }
}

void
clef_cpu_rope_apply(float *x, int rot, const float *cos, const float *sin)
{
    int    half = rot / 2, j;
    float  a, b;

    for (j = 0; j < half; j++) {
        a = x[j];
        b = x[j + half];
        x[j] = a * cos[j] - b * sin[j];
        x[j + half] = b * cos[j] + a * sin[j];
    }
}
