/*
 * Python's repr(float), which json.dumps uses for every float.
 *
 * repr is David Gay's dtoa mode 0: the shortest digit string that reads back
 * (round to nearest, ties to even) as the same double, and of those the one
 * nearest to the double's exact value.  It is laid out in fixed notation when
 * the decimal exponent E of the first digit is -4 <= E < 16 (".0" appended to
 * whole values), otherwise as d[.ddd]e+XX / e-XX with at least two exponent
 * digits.
 *
 * The digits are found with glibc's exact conversions instead of a table
 * driven algorithm: snprintf("%.*e") gives the correctly rounded p-digit
 * decimal c(p) of the double and strtod reads a decimal back exactly.
 *
 * Why the search is right:
 *   - c(p+1) is never farther from the double x than c(p) (c(p) is itself a
 *     (p+1)-digit decimal), so when the interval of decimals that read back as
 *     x is symmetric around x, "c(p) reads back" is monotone in p and a binary
 *     search over 1..17 finds the shortest length (17 digits always suffice).
 *     At that length c(p) is the nearest candidate, as dtoa picks.
 *   - The interval is lopsided only for a power of two above the smallest
 *     normal (the gap below it is half the gap above).  There the shortest
 *     decimal in the interval may be the p-digit neighbour of c(p) on the
 *     wide side while c(p) itself, on the narrow side, does not read back
 *     (46 doubles, e.g. 2^-1017, repr 7.120236347223045e-307, whose
 *     correctly rounded 16 digits ...3044e-307 do not read back).  Those
 *     doubles take a linear scan that tries c(p) and that neighbour at each
 *     length.
 *   - A first look at c(16) bounds the search: with k significant digits
 *     left once its trailing zeros go, c(k) is that same decimal, so most
 *     doubles are settled by testing k and k-1 (or 17 when c(16) fails),
 *     and c(k-1) mostly follows from those digits without a conversion.
 *     Short decimals are read back with Clinger's exact fast path.
 * The digit strings handed to strtod carry no decimal point ("12345e-9"), so
 * the result does not depend on the process locale.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/render.h"

#define PYFLOAT_MAX_DIGITS  17

typedef struct {
    char  d[PYFLOAT_MAX_DIGITS + 2];   /* significant digits, no point */
    int   n;                           /* how many */
    int   exp;                         /* decimal exponent of d[0] */
} pyfloat_decimal;


/* c(p): the p-digit decimal nearest to v > 0 (glibc rounds exactly). */
static void
pyfloat_nearest(double v, int p, pyfloat_decimal *dec)
{
    char        buf[64];
    const char  *s;

    snprintf(buf, sizeof(buf), "%.*e", p - 1, v);

    dec->n = 0;
    for (s = buf; *s != '\0' && *s != 'e'; s++) {
        if (*s >= '0' && *s <= '9' && dec->n < PYFLOAT_MAX_DIGITS) {
            dec->d[dec->n++] = *s;
        }
    }
    dec->exp = *s == 'e' ? atoi(s + 1) : 0;
}


/* exact powers of ten: every 10^k with k <= 22 is a double */
static const double  pyfloat_pow10[23] = {
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
    1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22
};


/* The double nearest to dec (round half to even), as strtod reads it. */
static double
pyfloat_value(const pyfloat_decimal *dec)
{
    char      buf[64];
    uint64_t  m = 0;
    int       i, e = dec->exp - (dec->n - 1);

    /*
     * Clinger's fast path: an integer below 2^53 and 10^|e| with |e| <= 22
     * are exact doubles, so one multiplication or division rounds once,
     * correctly.
     */
    if (e >= -22 && e <= 22) {
        for (i = 0; i < dec->n; i++) {
            m = m * 10 + (uint64_t) (dec->d[i] - '0');
        }
        if (m <= (1ULL << 53)) {
            return e >= 0 ? (double) m * pyfloat_pow10[e]
                          : (double) m / pyfloat_pow10[-e];
        }
    }

    memcpy(buf, dec->d, dec->n);
    snprintf(buf + dec->n, sizeof(buf) - dec->n, "e%d", e);
    return strtod(buf, NULL);
}


/*
 * Moves dec one unit of its last digit up (dir > 0) or down.  Returns -1
 * when that reaches zero.  A carry out of "99" gives "10" one decade up, a
 * borrow out of "10" gives "9" (one digit less) one decade down: the value
 * is what counts, the length is recomputed by the caller's trim.
 */
static int
pyfloat_step(pyfloat_decimal *dec, int dir)
{
    int  i;

    if (dir > 0) {
        for (i = dec->n - 1; i >= 0 && dec->d[i] == '9'; i--) {
            dec->d[i] = '0';
        }
        if (i < 0) {
            dec->d[0] = '1';
            dec->exp++;
        } else {
            dec->d[i]++;
        }
        return 0;
    }

    for (i = dec->n - 1; i >= 0 && dec->d[i] == '0'; i--) {
        dec->d[i] = '9';
    }
    if (i < 0) {
        return -1;
    }
    dec->d[i]--;
    if (dec->d[0] == '0') {
        if (dec->n == 1) {
            return -1;
        }
        memmove(dec->d, dec->d + 1, dec->n - 1);
        dec->n--;
        dec->exp--;
    }
    return 0;
}


static void
pyfloat_shortest(double v, pyfloat_decimal *dec)
{
    int              lo, hi, mid, p;
    uint64_t         bits;
    double           back;
    pyfloat_decimal  cand;

    memcpy(&bits, &v, sizeof(bits));

    if ((bits & 0x000fffffffffffffULL) == 0 && (bits >> 52) >= 2) {
        /* a power of two with the narrow gap below it */
        for (p = 1; p < PYFLOAT_MAX_DIGITS; p++) {
            pyfloat_nearest(v, p, dec);
            back = pyfloat_value(dec);
            if (back == v) {
                return;
            }
            cand = *dec;
            if (pyfloat_step(&cand, back < v ? 1 : -1) == 0
                && pyfloat_value(&cand) == v)
            {
                *dec = cand;
                return;
            }
        }
        pyfloat_nearest(v, PYFLOAT_MAX_DIGITS, dec);
        return;
    }

    pyfloat_nearest(v, PYFLOAT_MAX_DIGITS - 1, dec);
    if (pyfloat_value(dec) != v) {
        pyfloat_nearest(v, PYFLOAT_MAX_DIGITS, dec);
        return;
    }
    while (dec->n > 1 && dec->d[dec->n - 1] == '0') {
        dec->n--;
    }
    if (dec->n == 1) {
        return;
    }
    /*
     * c(hi) from the digits at hand: c(16) is the k digits of dec followed by
     * zeros and lies within half a 16th-digit unit of v, so dropping the
     * last digit d rounds down for d < 5 and up for d > 5; only d == 5 needs
     * the exact value.
     */
    hi = dec->n - 1;
    cand = *dec;
    cand.n = hi;
    if (dec->d[hi] == '5') {
        pyfloat_nearest(v, hi, &cand);
    } else if (dec->d[hi] > '5') {
        (void) pyfloat_step(&cand, 1);
    }
    if (pyfloat_value(&cand) != v) {
        return;
    }
    *dec = cand;

    /* dec holds c(hi), which reads back; c(lo - 1) does not */
    lo = 1;
    while (lo < hi) {
        mid = (lo + hi) / 2;
        pyfloat_nearest(v, mid, &cand);
        if (pyfloat_value(&cand) == v) {
            *dec = cand;
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
}


int
clef_render_float(clef_buf *out, double d)
{
    char             buf[64], *s;
    int              i, e;
    pyfloat_decimal  dec;

    /* json.dumps spells the values repr would call nan and inf like this */
    if (isnan(d)) {
        return clef_buf_append(out, "NaN", 3);
    }
    if (isinf(d)) {
        return d > 0 ? clef_buf_append(out, "Infinity", 8)
                     : clef_buf_append(out, "-Infinity", 9);
    }

    s = buf;
    if (signbit(d)) {
        *s++ = '-';
        d = -d;
    }

    if (d == 0.0) {
        memcpy(s, "0.0", 3);
        return clef_buf_append(out, buf, (size_t) (s + 3 - buf));
    }

    pyfloat_shortest(d, &dec);
    while (dec.n > 1 && dec.d[dec.n - 1] == '0') {
        dec.n--;
    }
    e = dec.exp;

    if (e >= -4 && e < 16) {
        if (e >= 0) {
            for (i = 0; i <= e; i++) {
                *s++ = i < dec.n ? dec.d[i] : '0';
            }
            *s++ = '.';
            if (dec.n > e + 1) {
                memcpy(s, dec.d + e + 1, dec.n - e - 1);
                s += dec.n - e - 1;
            } else {
                *s++ = '0';
            }
        } else {
            *s++ = '0';
            *s++ = '.';
            for (i = -1; i > e; i--) {
                *s++ = '0';
            }
            memcpy(s, dec.d, dec.n);
            s += dec.n;
        }
        return clef_buf_append(out, buf, (size_t) (s - buf));
    }

    *s++ = dec.d[0];
    if (dec.n > 1) {
        *s++ = '.';
        memcpy(s, dec.d + 1, dec.n - 1);
        s += dec.n - 1;
    }
    s += snprintf(s, sizeof(buf) - (size_t) (s - buf), "e%c%02d",
                  e < 0 ? '-' : '+', e < 0 ? -e : e);
    return clef_buf_append(out, buf, (size_t) (s - buf));
}
