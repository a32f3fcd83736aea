/*
 * Log-mel features (see audio_features.h): a real FFT of n_fft points as
 * one complex FFT of n_fft / 2 (mixed radix 2, 3, 4, 5; 400 points: 200 =
 * 4 x 2 x 5 x 5), the Slaney mel
 * filters over the power spectrum, log10, the record's padding and the
 * max - 8 floor, in double; each value rounded to float once at the end.
 * The reference computes in float32; the difference is far below the
 * 1e-4 the fixtures allow (t/unit/test_audio.c states it).
 */
#include "media/audio_features.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FFT      4096
#define MAX_FACTORS  16

typedef struct {
    double  re, im;
} cpx;

/* One plan per configuration, built on first use: the window, the
 * twiddles, the factors of the half size, the mel filters as runs of
 * non-zero weights. */
typedef struct {
    clef_audio_config   ac;
    int                 half;             /* n_fft / 2 */
    int                 bins;             /* n_fft / 2 + 1 */
    int                 factors[MAX_FACTORS];
    int                 n_factors;
    double             *window;           /* [n_fft] */
    cpx                *tw_half;          /* [half]: e^(-2 pi i k / half) */
    cpx                *tw_full;          /* [bins]: e^(-2 pi i k / n_fft) */
    int                *mel_lo, *mel_len; /* [n_mels] */
    double             *mel_w;            /* [n_mels][bins] */
} plan;

static pthread_mutex_t  plan_lock = PTHREAD_MUTEX_INITIALIZER;
static plan            *cached;


/* ---- the plan ----------------------------------------------------------- */

/* transformers' audio_utils: Slaney's mel scale */
static double
hz_to_mel(double f)
{
    return f >= 1000.0 ? 15.0 + log(f / 1000.0) * (27.0 / log(6.4))
                       : 3.0 * f / 200.0;
}


static double
mel_to_hz(double m)
{
    return m >= 15.0 ? 1000.0 * exp(log(6.4) / 27.0 * (m - 15.0))
                     : 200.0 * m / 3.0;
}


static void
plan_free(plan *p)
{
    if (p != NULL) {
        free(p->window);
        free(p->tw_half);
        free(p->tw_full);
        free(p->mel_lo);
        free(p->mel_len);
        free(p->mel_w);
        free(p);
    }
}


/* mel_filter_bank(bins, n_mels, 0, 8000 or Nyquist, rate, "slaney",
 * "slaney"): triangles between consecutive filter frequencies, scaled by
 * 2 / (upper - lower); the reference keeps them as float32 */
static int
plan_mel(plan *p)
{
    const clef_audio_config  *ac = &p->ac;
    double                    top, lo, hi, *ff, fft_f, down, up, w;
    int                       m, k, first, last;

    top = ac->sampling_rate / 2 < 8000 ? ac->sampling_rate / 2 : 8000.0;
    ff = malloc(sizeof(double) * (size_t) (ac->n_mels + 2));
    if (ff == NULL) {
        return -1;
    }
    lo = hz_to_mel(0.0);
    hi = hz_to_mel(top);
    for (m = 0; m < ac->n_mels + 2; m++) {
        /* numpy's linspace: start + i * step, the last exactly stop */
        ff[m] = mel_to_hz(m == ac->n_mels + 1
                          ? hi : lo + m * ((hi - lo) / (ac->n_mels + 1)));
    }
    for (m = 0; m < ac->n_mels; m++) {
        first = -1;
        last = -1;
        for (k = 0; k < p->bins; k++) {
            fft_f = (double) (ac->sampling_rate / 2) * k / (p->bins - 1);
            down = (fft_f - ff[m]) / (ff[m + 1] - ff[m]);
            up = (ff[m + 2] - fft_f) / (ff[m + 2] - ff[m + 1]);
            w = down < up ? down : up;
            w = w > 0.0 ? w * (2.0 / (ff[m + 2] - ff[m])) : 0.0;
            w = (double) (float) w;
            p->mel_w[(size_t) m * p->bins + k] = w;
            if (w != 0.0) {
                first = first < 0 ? k : first;
                last = k;
            }
        }
        p->mel_lo[m] = first < 0 ? 0 : first;
        p->mel_len[m] = first < 0 ? 0 : last - first + 1;
    }
    free(ff);
    return 0;
}


static plan *
plan_make(const clef_audio_config *ac)
{
    plan    *p;
    int      n, r, k;
    double   a;
    float    step, x, c;

    if (ac->n_fft < 4 || ac->n_fft > MAX_FFT || ac->n_fft % 2 != 0
        || ac->hop_length < 1 || ac->n_mels < 1 || ac->n_mels > 1024
        || ac->sampling_rate < 1000)
    {
        return NULL;
    }
    p = calloc(1, sizeof(*p));
    if (p == NULL) {
        return NULL;
    }
    p->ac = *ac;
    p->half = ac->n_fft / 2;
    p->bins = p->half + 1;
    for (n = p->half; n > 1 && p->n_factors < MAX_FACTORS; ) {
        for (r = 4; r >= 2; r--) {
            if (n % r == 0) {
                break;
            }
        }
        if (r < 2) {
            r = n % 5 == 0 ? 5 : n;
        }
        if (r > 5 && r != n) {
            break;
        }
        p->factors[p->n_factors++] = r;
        n /= r;
    }
    p->window = malloc(sizeof(double) * (size_t) ac->n_fft);
    p->tw_half = malloc(sizeof(cpx) * (size_t) p->half);
    p->tw_full = malloc(sizeof(cpx) * (size_t) p->bins);
    p->mel_lo = malloc(sizeof(int) * (size_t) ac->n_mels);
    p->mel_len = malloc(sizeof(int) * (size_t) ac->n_mels);
    p->mel_w = malloc(sizeof(double) * (size_t) ac->n_mels * p->bins);
    if (n != 1 || p->window == NULL || p->tw_half == NULL
        || p->tw_full == NULL || p->mel_lo == NULL || p->mel_len == NULL
        || p->mel_w == NULL || plan_mel(p) != 0)
    {
        plan_free(p);
        return NULL;
    }
    /* torch.hann_window(n_fft), periodic, as ATen computes it in float32:
     * k * (float) (2 pi / n), its cosine, times -0.5, plus 0.5.  Near the
     * max - 8 floor a bin's power is mostly window leakage, so the
     * window's own rounding shows there (the double formula's window
     * differs from torch's in 320 of 400 values; this one in 12, by one
     * ulp: torch's vectorised cosine is not correctly rounded) */
    step = (float) (2.0 * M_PI / ac->n_fft);
    for (k = 0; k < ac->n_fft; k++) {
        x = (float) k * step;
        c = (float) cos((double) x);
        p->window[k] = (double) (c * -0.5f + 0.5f);
    }
    for (k = 0; k < p->half; k++) {
        a = -2.0 * M_PI * k / p->half;
        p->tw_half[k].re = cos(a);
        p->tw_half[k].im = sin(a);
    }
    for (k = 0; k < p->bins; k++) {
        a = -2.0 * M_PI * k / ac->n_fft;
        p->tw_full[k].re = cos(a);
        p->tw_full[k].im = sin(a);
    }
    return p;
}


/* The plan of ac, kept while the configuration stays (every model has
 * the same); NULL when ac is out of bounds or memory is short. */
static plan *
plan_get(const clef_audio_config *ac)
{
    plan  *p;

    pthread_mutex_lock(&plan_lock);
    if (cached == NULL || memcmp(&cached->ac, ac, sizeof(*ac)) != 0) {
        p = plan_make(ac);
        if (p != NULL) {
            /* an older plan may be in use by another thread: kept */
            cached = p;
        }
    }
    p = cached != NULL && memcmp(&cached->ac, ac, sizeof(*ac)) == 0
        ? cached : NULL;
    pthread_mutex_unlock(&plan_lock);
    return p;
}


/* ---- the FFT ------------------------------------------------------------ */

/* The DFT of radix r (2, 3, 4 or 5) of t[0..r) into y[0..r). */
static void
butterfly(const plan *p, int r, const cpx *t, cpx *y)
{
    static const double  c1 = 0.30901699437494742410,   /* cos(2 pi / 5) */
                         c2 = -0.80901699437494742410,  /* cos(4 pi / 5) */
                         s1 = 0.95105651629515357212,   /* sin(2 pi / 5) */
                         s2 = 0.58778525229247312917;   /* sin(4 pi / 5) */
    cpx                  a0, a1, a2, a3, b1, b2, d1, d2, u, v, w;
    int                  q, j, e;

    switch (r) {
    case 2:
        y[0].re = t[0].re + t[1].re;
        y[0].im = t[0].im + t[1].im;
        y[1].re = t[0].re - t[1].re;
        y[1].im = t[0].im - t[1].im;
        return;
    case 4:
        a0.re = t[0].re + t[2].re;
        a0.im = t[0].im + t[2].im;
        a1.re = t[0].re - t[2].re;
        a1.im = t[0].im - t[2].im;
        a2.re = t[1].re + t[3].re;
        a2.im = t[1].im + t[3].im;
        /* (t1 - t3) times -i */
        a3.re = t[1].im - t[3].im;
        a3.im = t[3].re - t[1].re;
        y[0].re = a0.re + a2.re;
        y[0].im = a0.im + a2.im;
        y[2].re = a0.re - a2.re;
        y[2].im = a0.im - a2.im;
        y[1].re = a1.re + a3.re;
        y[1].im = a1.im + a3.im;
        y[3].re = a1.re - a3.re;
        y[3].im = a1.im - a3.im;
        return;
    case 5:
        b1.re = t[1].re + t[4].re;
        b1.im = t[1].im + t[4].im;
        b2.re = t[2].re + t[3].re;
        b2.im = t[2].im + t[3].im;
        d1.re = t[1].re - t[4].re;
        d1.im = t[1].im - t[4].im;
        d2.re = t[2].re - t[3].re;
        d2.im = t[2].im - t[3].im;
        y[0].re = t[0].re + b1.re + b2.re;
        y[0].im = t[0].im + b1.im + b2.im;
        /* u, v: the even parts; w: the odd part before its -i */
        u.re = t[0].re + c1 * b1.re + c2 * b2.re;
        u.im = t[0].im + c1 * b1.im + c2 * b2.im;
        w.re = s1 * d1.re + s2 * d2.re;
        w.im = s1 * d1.im + s2 * d2.im;
        y[1].re = u.re + w.im;
        y[1].im = u.im - w.re;
        y[4].re = u.re - w.im;
        y[4].im = u.im + w.re;
        v.re = t[0].re + c2 * b1.re + c1 * b2.re;
        v.im = t[0].im + c2 * b1.im + c1 * b2.im;
        w.re = s2 * d1.re - s1 * d2.re;
        w.im = s2 * d1.im - s1 * d2.im;
        y[2].re = v.re + w.im;
        y[2].im = v.im - w.re;
        y[3].re = v.re - w.im;
        y[3].im = v.im + w.re;
        return;
    default:
        for (q = 0; q < r; q++) {
            y[q] = t[0];
            for (j = 1; j < r; j++) {
                e = ((j * q) % r) * (p->half / r);
                w = p->tw_half[e];
                y[q].re += t[j].re * w.re - t[j].im * w.im;
                y[q].im += t[j].re * w.im + t[j].im * w.re;
            }
        }
    }
}


/* Decimation in time, out of place: out[0..n) = DFT of in[0, s, 2s, ...],
 * n = the product of factors; twiddles e^(-2 pi i k / half) at step
 * half / n (j k step < half: no reduction). */
static void
fft(const plan *p, const cpx *in, size_t s, cpx *out, int n,
    const int *factors)
{
    cpx     t[5], y[5], w;
    int     r = factors[0], m = n / r, j, k, q, step;

    if (m == 1) {
        for (j = 0; j < r; j++) {
            t[j] = in[j * s];
        }
        butterfly(p, r, t, out);
        return;
    }
    for (j = 0; j < r; j++) {
        fft(p, in + j * s, s * r, out + j * m, m, factors + 1);
    }
    step = p->half / n;
    for (k = 0; k < m; k++) {
        t[0] = out[k];
        for (j = 1; j < r; j++) {
            /* out[j m + k] times e^(-2 pi i j k / n) */
            w = p->tw_half[j * k * step];
            t[j].re = out[j * m + k].re * w.re - out[j * m + k].im * w.im;
            t[j].im = out[j * m + k].re * w.im + out[j * m + k].im * w.re;
        }
        butterfly(p, r, t, y);
        for (q = 0; q < r; q++) {
            out[k + q * m] = y[q];
        }
    }
}


/* |X[k]|^2 for k = 0..half of the real frame f[0..n_fft), through the
 * complex FFT of z[m] = f[2m] + i f[2m + 1]. */
static void
power_spectrum(const plan *p, const double *f, cpx *z, cpx *zf,
    double *power)
{
    cpx     a, b, c, w, x;
    int     k, h = p->half;

    for (k = 0; k < h; k++) {
        z[k].re = f[2 * k];
        z[k].im = f[2 * k + 1];
    }
    fft(p, z, 1, zf, h, p->factors);
    for (k = 0; k <= h; k++) {
        /* Z[k] and conj(Z[h - k]), indices taken modulo h */
        a = zf[k < h ? k : 0];
        b.re = zf[k > 0 ? h - k : 0].re;
        b.im = -zf[k > 0 ? h - k : 0].im;
        /* even part (a + b) / 2, odd part (a - b) / 2i */
        c.re = (a.im - b.im) / 2;
        c.im = -(a.re - b.re) / 2;
        w = p->tw_full[k];
        x.re = (a.re + b.re) / 2 + c.re * w.re - c.im * w.im;
        x.im = (a.im + b.im) / 2 + c.re * w.im + c.im * w.re;
        power[k] = x.re * x.re + x.im * x.im;
    }
}


/* ---- features ----------------------------------------------------------- */

/* Sample q of the clip padded to L and reflected by n_fft / 2 at both
 * ends (torch.stft's center=True, pad_mode "reflect"). */
static double
padded_sample(const float *x, int64_t n, int64_t L, int64_t q)
{
    if (q < 0) {
        q = -q;
    } else if (q >= L) {
        q = 2 * (L - 1) - q;
    }
    return q < n ? (double) x[q] : 0.0;
}


/* Whether frame i's window holds any of the clip's own samples (else its
 * power is 0 everywhere). */
static int
frame_touches(const plan *p, int64_t n, int64_t L, int64_t i)
{
    int64_t  a = i * p->ac.hop_length - p->half;
    int64_t  b = a + p->ac.n_fft;       /* exclusive */

    if (a < n) {
        return 1;
    }
    /* [a, b) past the clip: only the end's reflection, 2(L-1) - q for
     * q >= L, can reach back into it */
    return b - 1 >= L && 2 * (L - 1) - (b - 1) < n;
}


static void
frame_mels(const plan *p, const float *x, int64_t n, int64_t L, int64_t i,
    double *f, cpx *z, cpx *zf, double *power, double *mel)
{
    int64_t  a = i * p->ac.hop_length - p->half, q;
    double   s;
    int      m, k;

    if (a >= 0 && a + p->ac.n_fft <= n) {
        for (k = 0; k < p->ac.n_fft; k++) {
            f[k] = (double) x[a + k] * p->window[k];
        }
    } else {
        for (k = 0; k < p->ac.n_fft; k++) {
            q = a + k;
            f[k] = padded_sample(x, n, L, q) * p->window[k];
        }
    }
    power_spectrum(p, f, z, zf, power);
    for (m = 0; m < p->ac.n_mels; m++) {
        const double  *w = p->mel_w + (size_t) m * p->bins + p->mel_lo[m];
        const double  *pw = power + p->mel_lo[m];

        s = 0.0;
        for (k = 0; k < p->mel_len[m]; k++) {
            s += w[k] * pw[k];
        }
        mel[m] = s > 1e-10 ? s : 1e-10;
    }
}


int
clef_audio_clip_features(const clef_audio_config *ac, const float *x,
    int64_t n, int64_t padded, float **out, int32_t *frames,
    clef_error *err)
{
    plan     *p = plan_get(ac);
    double   *f = NULL, *power = NULL, *mel = NULL, *v = NULL, top, floor;
    double    thr;
    cpx      *z = NULL, *zf = NULL;
    int64_t   F, V, i;
    float    *o = NULL;
    int       m;

    *out = NULL;
    *frames = 0;
    if (p == NULL) {
        return clef_error_fail(err, CLEF_E_NO_MEMORY, "Out of memory (or "
                               "an audio configuration out of bounds).");
    }
    F = padded / ac->hop_length;
    V = clef_audio_valid_frames(ac, n, padded);
    if (padded < clef_audio_min_samples(ac) || n > padded || V < 1
        || V > INT32_MAX / ac->n_mels)
    {
        return clef_error_fail(err, CLEF_E_INTERNAL, "audio features of %lld "
                               "samples padded to %lld", (long long) n,
                               (long long) padded);
    }
    f = malloc(sizeof(double) * (size_t) ac->n_fft);
    power = malloc(sizeof(double) * (size_t) p->bins);
    mel = malloc(sizeof(double) * (size_t) ac->n_mels);
    z = malloc(sizeof(cpx) * (size_t) p->half);
    zf = malloc(sizeof(cpx) * (size_t) p->half);
    v = malloc(sizeof(double) * (size_t) ac->n_mels * (size_t) V);
    o = malloc(sizeof(float) * (size_t) ac->n_mels * (size_t) V);
    if (f == NULL || power == NULL || mel == NULL || z == NULL || zf == NULL
        || v == NULL || o == NULL)
    {
        free(o);
        o = NULL;
        clef_error_fail(err, CLEF_E_NO_MEMORY, "Out of memory.");
        goto done;
    }

    /* the floor's maximum is over all F padded frames: a frame without
     * any of the clip's samples is 1e-10 (log10: -10) everywhere */
    top = 1e-10;
    for (i = 0; i < F; i++) {
        if (i >= V && !frame_touches(p, n, padded, i)) {
            continue;
        }
        frame_mels(p, x, n, padded, i, f, z, zf, power, mel);
        for (m = 0; m < ac->n_mels; m++) {
            top = mel[m] > top ? mel[m] : top;
            if (i < V) {
                v[(size_t) m * V + i] = mel[m];
            }
        }
    }
    /* the floor in the power domain (log10 is monotonic): a value under
     * it needs no logarithm */
    floor = log10(top) - 8.0;
    thr = pow(10.0, floor);
    for (i = 0; i < ac->n_mels * V; i++) {
        o[i] = (float) (((v[i] > thr ? log10(v[i]) : floor) + 4.0) / 4.0);
    }
    *out = o;
    *frames = (int32_t) V;

done:
    free(f);
    free(power);
    free(mel);
    free(z);
    free(zf);
    free(v);
    return o != NULL ? 0 : -1;
}


int
clef_audio_record_features(const clef_audio_config *ac,
    const float *const *samples, const int64_t *n, int count, float **out,
    int32_t *frames, clef_error *err)
{
    return clef_audio_record_features_of(ac, samples, n, count, NULL, NULL,
                                         out, frames, err);
}


int
clef_audio_record_features_of(const clef_audio_config *ac,
    const float *const *samples, const int64_t *n, int count,
    const char *who, const char *loc, float **out, int32_t *frames,
    clef_error *err)
{
    int64_t  L = 0;
    int      k, j;

    for (k = 0; k < count; k++) {
        L = n[k] > L ? n[k] : L;
        out[k] = NULL;
    }
    if (count > 0 && L < clef_audio_min_samples(ac)) {
        return clef_error_set(err, 400, "audio_too_short",
            loc != NULL ? loc : "[\"body\",\"audio\",0]", "%s of this "
            "request are too short: the longest has %lld samples at %d Hz "
            "(%.1f ms); the least is %lld samples (%.1f ms).",
            who != NULL ? who : "The audio clips", (long long) L,
            (int) ac->sampling_rate, 1000.0 * L / ac->sampling_rate,
            (long long) clef_audio_min_samples(ac),
            1000.0 * clef_audio_min_samples(ac) / ac->sampling_rate);
    }
    for (k = 0; k < count; k++) {
        if (clef_audio_clip_features(ac, samples[k], n[k], L, &out[k],
                                     &frames[k], err) != 0)
        {
            for (j = 0; j < k; j++) {
                free(out[j]);
                out[j] = NULL;
            }
            return -1;
        }
    }
    return 0;
}
