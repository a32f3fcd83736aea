/*
 * Antialiased bicubic resampling of RGB bytes (see resize.h).
 */
#include "media/resize.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int64_t   taps;        /* weights per output (the widest support) */
    int64_t  *first;       /* [out] first source index */
    int64_t  *count;       /* [out] source indexes used */
    int16_t  *w;           /* [out][taps] */
    int       precision;
} axis;


/* Keys' cubic with a = -0.5, in PyTorch's evaluation order */
static double
cubic(double x)
{
    const double  a = -0.5;

    x = fabs(x);
    if (x < 1.0) {
        return ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0;
    }
    if (x < 2.0) {
        return ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a;
    }
    return 0.0;
}


static void
axis_free(axis *ax)
{
    free(ax->first);
    free(ax->count);
    free(ax->w);
}


static int
axis_make(axis *ax, int64_t in, int64_t out)
{
    double   scale = (double) in / (double) out;
    double   support = scale >= 1.0 ? 2.0 * scale : 2.0;
    double   invscale = scale >= 1.0 ? 1.0 / scale : 1.0;
    double   center, total, max = 0.0, v, *wd;
    int64_t  i, j, lo, n;

    memset(ax, 0, sizeof(*ax));
    ax->taps = (int64_t) ceil(support) * 2 + 1;
    ax->first = malloc(sizeof(int64_t) * (size_t) out);
    ax->count = malloc(sizeof(int64_t) * (size_t) out);
    ax->w = malloc(sizeof(int16_t) * (size_t) (out * ax->taps));
    wd = malloc(sizeof(double) * (size_t) (out * ax->taps));
    if (ax->first == NULL || ax->count == NULL || ax->w == NULL || wd == NULL) {
        free(wd);
        axis_free(ax);
        return -1;
    }

    for (i = 0; i < out; i++) {
        center = scale * ((double) i + 0.5);
        /* C++ casts truncate toward zero; the values are positive but for
         * the first outputs of an enlargement, where the clamp to 0 is
         * what counts */
        lo = (int64_t) (center - support + 0.5);
        lo = lo > 0 ? lo : 0;
        n = (int64_t) (center + support + 0.5);
        n = (n < in ? n : in) - lo;
        n = n < 0 ? 0 : n > ax->taps ? ax->taps : n;

        total = 0.0;
        for (j = 0; j < n; j++) {
            v = cubic(((double) (j + lo) - center + 0.5) * invscale);
            wd[i * ax->taps + j] = v;
            total += v;
        }
        for (j = 0; j < n; j++) {
            if (total != 0.0) {
                wd[i * ax->taps + j] /= total;
                max = wd[i * ax->taps + j] > max ? wd[i * ax->taps + j] : max;
            }
        }
        for (; j < ax->taps; j++) {
            wd[i * ax->taps + j] = 0.0;
        }
        ax->first[i] = lo;
        ax->count[i] = n;
    }

    /* the largest precision whose largest weight, doubled, stays in int16 */
    for (ax->precision = 0; ax->precision < 22; ax->precision++) {
        if ((int) (0.5 + max * (double) (1 << (ax->precision + 1))) >= 1 << 15) {
            break;
        }
    }
    for (i = 0; i < out * ax->taps; i++) {
        v = wd[i] * (double) (1 << ax->precision);
        ax->w[i] = (int16_t) (v < 0 ? (int) (-0.5 + v) : (int) (0.5 + v));
    }
    free(wd);
    return 0;
}


static uint8_t
clip8(int32_t v, int precision)
{
    v >>= precision;
    return (uint8_t) (v < 0 ? 0 : v > 255 ? 255 : v);
}


/* dst[y][ox] from src[y][first ..] for every row: width pass */
static void
pass_width(const axis *ax, const uint8_t *src, int64_t sw, int64_t h,
    uint8_t *dst, int64_t dw)
{
    const int16_t  *k;
    const uint8_t  *s;
    int64_t         y, x, j;
    int32_t         r, g, b;
    int32_t         half = ax->precision > 0 ? 1 << (ax->precision - 1) : 0;

    for (y = 0; y < h; y++) {
        for (x = 0; x < dw; x++) {
            k = ax->w + x * ax->taps;
            s = src + (y * sw + ax->first[x]) * 3;
            r = g = b = half;
            for (j = 0; j < ax->count[x]; j++) {
                r += s[3 * j] * k[j];
                g += s[3 * j + 1] * k[j];
                b += s[3 * j + 2] * k[j];
            }
            dst[(y * dw + x) * 3] = clip8(r, ax->precision);
            dst[(y * dw + x) * 3 + 1] = clip8(g, ax->precision);
            dst[(y * dw + x) * 3 + 2] = clip8(b, ax->precision);
        }
    }
}


/* dst[oy][x] from src[first ..][x]: height pass, a row of sums at a time
 * so that the source is read along its rows */
static void
pass_height(const axis *ax, const uint8_t *src, int64_t w, uint8_t *dst,
    int64_t dh, int32_t *acc)
{
    const uint8_t  *s;
    int64_t         y, x, j, row = w * 3;
    int32_t         k, half = ax->precision > 0 ? 1 << (ax->precision - 1) : 0;

    for (y = 0; y < dh; y++) {
        for (x = 0; x < row; x++) {
            acc[x] = half;
        }
        for (j = 0; j < ax->count[y]; j++) {
            k = ax->w[y * ax->taps + j];
            s = src + (ax->first[y] + j) * row;
            for (x = 0; x < row; x++) {
                acc[x] += s[x] * k;
            }
        }
        for (x = 0; x < row; x++) {
            dst[y * row + x] = clip8(acc[x], ax->precision);
        }
    }
}


int
clef_resize_bicubic_aa(const uint8_t *src, int sw, int sh, uint8_t *dst,
    int dw, int dh)
{
    axis      ax;
    uint8_t  *mid = NULL;
    int32_t  *acc;
    int       rc = -1;

    if (sw == dw && sh == dh) {
        memcpy(dst, src, (size_t) sw * sh * 3);
        return 0;
    }
    if (sw != dw) {
        if (axis_make(&ax, sw, dw) != 0) {
            return -1;
        }
        if (sh == dh) {
            pass_width(&ax, src, sw, sh, dst, dw);
            axis_free(&ax);
            return 0;
        }
        mid = malloc((size_t) dw * sh * 3);
        if (mid == NULL) {
            axis_free(&ax);
            return -1;
        }
        pass_width(&ax, src, sw, sh, mid, dw);
        axis_free(&ax);
        src = mid;
    }
    acc = malloc(sizeof(int32_t) * (size_t) dw * 3);
    if (acc != NULL && axis_make(&ax, sh, dh) == 0) {
        pass_height(&ax, src, dw, dst, dh, acc);
        axis_free(&ax);
        rc = 0;
    }
    free(acc);
    free(mid);
    return rc;
}
