/*
 * Small inline float loops shared by the CPU ops.  Reductions keep eight
 * partial sums so that the compiler can vectorise them without being allowed
 * to reassociate floating point (the build uses no -ffast-math).
 */
#ifndef CLEF_CPU_VEC_H
#define CLEF_CPU_VEC_H

#include <math.h>
#include <stdint.h>

static inline float
clef_vec_dot(const float *a, const float *b, int n)
{
    float  acc[8] = { 0 };
    float  s;
    int    i, j;

    for (i = 0; i + 8 <= n; i += 8) {
        for (j = 0; j < 8; j++) {
            acc[j] += a[i + j] * b[i + j];
        }
    }
    s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
    for ( ; i < n; i++) {
        s += a[i] * b[i];
    }
    return s;
}

static inline float
clef_vec_sumsq(const float *a, int n)
{
    return clef_vec_dot(a, a, n);
}

static inline float
clef_sigmoid(float x)
{
    return 1.0f / (1.0f + expf(-x));
}

static inline float
clef_silu(float x)
{
    return x / (1.0f + expf(-x));
}

/* torch.nn.functional.softplus with its default threshold of 20: above it
 * the result is x itself (exp would overflow long before it mattered). */
static inline float
clef_softplus(float x)
{
    return x > 20.0f ? x : log1pf(expf(x));
}

#endif
