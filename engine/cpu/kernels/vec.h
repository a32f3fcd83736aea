/*
 * Small inline float loops shared by the CPU ops.  Reductions keep eight
 * partial sums so that the compiler can vectorise them without being allowed
 * to reassociate floating point (the build uses no -ffast-math).
 */
#ifndef CLEF_CPU_VEC_H
#define CLEF_CPU_VEC_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#ifdef __AVX2__
#include <immintrin.h>
#endif

/* The ops never look at floating-point exception flags, so the compiler may
 * evaluate both sides of a select and vectorise loops with clamps and
 * compares in them (GCC otherwise keeps them as branches).  Results are
 * unchanged: this permits no reassociation and no contraction. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize ("no-trapping-math")
#endif

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
clef_vec_sum(const float *a, int n)
{
    float  acc[8] = { 0 };
    float  s;
    int    i, j;

    for (i = 0; i + 8 <= n; i += 8) {
        for (j = 0; j < 8; j++) {
            acc[j] += a[i + j];
        }
    }
    s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
    for ( ; i < n; i++) {
        s += a[i];
    }
    return s;
}

/* max(m, a[0..n)).  GCC does not vectorise a float max reduction without
 * -ffast-math, and the softmax runs one over every score. */
static inline float
clef_vec_max(const float *a, int n, float m)
{
    int      i = 0;
#ifdef __AVX2__
    __m256   acc = _mm256_set1_ps(m);
    float    lanes[8];
    int      j;

    for ( ; i + 8 <= n; i += 8) {
        acc = _mm256_max_ps(acc, _mm256_loadu_ps(a + i));
    }
    _mm256_storeu_ps(lanes, acc);
    for (j = 0; j < 8; j++) {
        m = lanes[j] > m ? lanes[j] : m;
    }
#endif
    for ( ; i < n; i++) {
        m = a[i] > m ? a[i] : m;
    }
    return m;
}

static inline float
clef_vec_sumsq(const float *a, int n)
{
    return clef_vec_dot(a, a, n);
}

/*
 * e^x in a form the compiler vectorises (libm's expf is a scalar call, and
 * the activations call it for every element): x = n ln2 + r with
 * |r| <= ln2/2 (ln2 in two parts, so r is exact), e^r by the Cephes
 * polynomial, 2^n put into the exponent bits.  Within 1.4 ulp of e^x for
 * x in [-87, 88]; e^-87 (1.6e-38) below and e^88 above.  Every use here is
 * a decay, a softmax weight or a sigmoid, where neither end matters (a
 * weight of 1e-38 next to the row's maximum, weight 1, is nothing).
 */
static inline float
clef_exp(float x)
{
    float    n, r, p, y;
    int32_t  bits;

    x = x > 88.0f ? 88.0f : x;
    y = x < -87.0f ? -87.0f : x;
    /* round to nearest by adding and removing 1.5 * 2^23 */
    n = (y * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
    r = y - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    bits = ((int32_t) n + 127) << 23;
    memcpy(&y, &bits, sizeof(y));
    return p * y;
}

static inline float
clef_sigmoid(float x)
{
    return 1.0f / (1.0f + clef_exp(-x));
}

static inline float
clef_silu(float x)
{
    return x / (1.0f + clef_exp(-x));
}

#ifdef __AVX2__
/*
 * clef_exp(), clef_sigmoid() and clef_silu() on eight lanes, the scalar
 * functions' operations in the same order (a multiply then an add, never a
 * fused one), so that every lane has the bits of the scalar function and a
 * loop's tail may run the scalar code.  Written out because GCC, left to
 * vectorise the scalar forms, splits silu on the clamp into cases and
 * evaluates them all: x / (1 + e^88) is subnormal for |x| < 2, and
 * subnormal results cost ~10x on the divider (swiglu ran at 3 ns an
 * element).  min(88, x) and max(-87, x) are the scalar selects, NaN
 * included (the second operand is returned when one is NaN).
 */
static inline __m256
clef_exp8(__m256 x)
{
    __m256   n, r, p, y;
    __m256i  bits;

    x = _mm256_min_ps(_mm256_set1_ps(88.0f), x);
    y = _mm256_max_ps(_mm256_set1_ps(-87.0f), x);
    n = _mm256_sub_ps(_mm256_add_ps(_mm256_mul_ps(y,
            _mm256_set1_ps(1.44269504088896341f)), _mm256_set1_ps(12582912.0f)),
        _mm256_set1_ps(12582912.0f));
    r = _mm256_sub_ps(y, _mm256_mul_ps(n, _mm256_set1_ps(0.693359375f)));
    r = _mm256_sub_ps(r, _mm256_mul_ps(n, _mm256_set1_ps(-2.12194440e-4f)));
    p = _mm256_set1_ps(1.9875691500e-4f);
    p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(1.3981999507e-3f));
    p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(8.3334519073e-3f));
    p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(4.1665795894e-2f));
    p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(1.6666665459e-1f));
    p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(5.0000001201e-1f));
    p = _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(_mm256_mul_ps(p, r), r), r),
                      _mm256_set1_ps(1.0f));
    bits = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvttps_epi32(n),
                                              _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(bits));
}

static inline __m256
clef_neg8(__m256 x)
{
    return _mm256_xor_ps(x, _mm256_set1_ps(-0.0f));
}

static inline __m256
clef_sigmoid8(__m256 x)
{
    const __m256  one = _mm256_set1_ps(1.0f);

    return _mm256_div_ps(one, _mm256_add_ps(one, clef_exp8(clef_neg8(x))));
}

static inline __m256
clef_silu8(__m256 x)
{
    return _mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.0f),
                                          clef_exp8(clef_neg8(x))));
}
#endif

/* torch.nn.functional.softplus with its default threshold of 20: above it
 * the result is x itself (exp would overflow long before it mattered). */
static inline float
clef_softplus(float x)
{
    return x > 20.0f ? x : log1pf(expf(x));
}

#endif
