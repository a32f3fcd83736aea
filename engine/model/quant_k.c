/*
 * The 256-value block types (GGML's "K" quants): Q4_K, Q5_K, Q6_K.
 *
 *   Q4_K  f16 d, f16 dmin, 12 bytes of 6-bit scales and mins (8 of each,
 *         one per 32 values), 128 bytes of nibbles
 *         x = (d * sc) * q - (dmin * m)
 *   Q5_K  as Q4_K, with 32 bytes of fifth bits before the nibbles
 *   Q6_K  128 bytes of low nibbles, 64 bytes of high 2-bit pairs, 16 int8
 *         scales (one per 16 values), f16 d
 *         x = (d * sc) * (q - 32)
 *
 * Where the bits of value v live:
 *   Q4_K/Q5_K  sub-block s = v / 32, l = v % 32: nibble of qs[(s / 2) * 32
 *              + l], low for even s, high for odd; Q5_K's fifth bit is bit
 *              s of qh[l].  Scales: sc[j] = b[j] & 63 and m[j] = b[4 + j]
 *              & 63 for j < 4; sc[j + 4] = (b[8 + j] & 15) | (b[j] >> 6)
 *              << 4 and m[j + 4] = (b[8 + j] >> 4) | (b[4 + j] >> 6) << 4.
 *   Q6_K       half h = v / 128, r = v % 128: low nibble of ql[h * 64 + r]
 *              for r < 64, else the high nibble of ql[h * 64 + r - 64];
 *              bits 4-5 are qh[h * 32 + r % 32] >> 2 (r / 32); scale v / 16.
 *
 * The sub-block scale (d * sc) is rounded to f32 before it multiplies q,
 * and the product before the minimum is subtracted: gguf-py's order.
 */
#include "model/quant_impl.h"

#define QK  CLEF_QK_K

static void
k_scales(const uint8_t *b, int sc[8], int m[8])
{
    int  j;

    for (j = 0; j < 4; j++) {
        sc[j] = b[j] & 0x3f;
        m[j] = b[4 + j] & 0x3f;
        sc[j + 4] = (b[8 + j] & 0x0f) | ((b[j] >> 2) & 0x30);
        m[j + 4] = (b[8 + j] >> 4) | ((b[4 + j] >> 2) & 0x30);
    }
}

static void
k_pack_scales(const int sc[8], const int m[8], uint8_t *b)
{
    int  j;

    for (j = 0; j < 4; j++) {
        b[j] = (uint8_t) (sc[j] | ((sc[j + 4] & 0x30) << 2));
        b[4 + j] = (uint8_t) (m[j] | ((m[j + 4] & 0x30) << 2));
        b[8 + j] = (uint8_t) ((sc[j + 4] & 0x0f) | ((m[j + 4] & 0x0f) << 4));
    }
}

/* Q4_K and Q5_K: qh NULL for Q4_K. */
static void
k_dequant(const uint8_t *b, const uint8_t *qh, const uint8_t *qs,
    float *dst)
{
    float  d, dmin, ds, dm, t;
    int    sc[8], m[8], s, l, q;

    d = q_rd_f16(b);
    dmin = q_rd_f16(b + 2);
    k_scales(b + 4, sc, m);
    for (s = 0; s < 8; s++) {
        ds = d * (float) sc[s];
        dm = dmin * (float) m[s];
        for (l = 0; l < 32; l++) {
            q = (qs[(s / 2) * 32 + l] >> (4 * (s & 1))) & 0x0f;
            if (qh != NULL) {
                q |= ((qh[l] >> s) & 1) << 4;
            }
            t = ds * (float) q;
            dst[s * 32 + l] = t - dm;
        }
    }
}

void
clef_q4_k_to_f32(const void *blocks, float *dst, int64_t n)
{
    const uint8_t  *b = blocks;
    int64_t         i;

    for (i = 0; i < n / QK; i++, b += 144, dst += QK) {
        k_dequant(b, NULL, b + 16, dst);
    }
}

void
clef_q5_k_to_f32(const void *blocks, float *dst, int64_t n)
{
    const uint8_t  *b = blocks;
    int64_t         i;

    for (i = 0; i < n / QK; i++, b += 176, dst += QK) {
        k_dequant(b, b + 16, b + 48, dst);
    }
}

void
clef_q6_k_to_f32(const void *blocks, float *dst, int64_t n)
{
    const uint8_t  *b = blocks, *ql, *qh;
    const int8_t   *sc;
    float           d, ds = 0;
    int64_t         i;
    int             v, h, r, q;

    for (i = 0; i < n / QK; i++, b += 210, dst += QK) {
        ql = b;
        qh = b + 128;
        sc = (const int8_t *) (b + 192);
        d = q_rd_f16(b + 208);
        for (v = 0; v < QK; v++) {
            if (v % 16 == 0) {
                ds = d * (float) sc[v / 16];
            }
            h = v / 128;
            r = v % 128;
            q = r < 64 ? ql[h * 64 + r] & 0x0f : ql[h * 64 + r - 64] >> 4;
            q |= ((qh[h * 32 + r % 32] >> (2 * (r / 32))) & 3) << 4;
            dst[v] = ds * (float) (q - 32);
        }
    }
}

/* ---- quantizers ------------------------------------------------------ */

/*
 * Q4_K and Q5_K: per 32 values, the range [min(0, lowest), highest] in
 * `levels` steps; the steps and the minima are 6-bit multiples of the two
 * f16 super-block scales, and each value is then rounded against the
 * step and minimum it will be read back with.
 */
static void
k_quantize(const float *x, uint8_t *b, int levels, int q[QK])
{
    float  step[8], low[8], maxstep = 0, maxlow = 0, d, dmin, ds, dm, mn, mx;
    int    sc[8], m[8], s, l;

    for (s = 0; s < 8; s++) {
        mn = 0;
        mx = x[s * 32];
        for (l = 0; l < 32; l++) {
            mn = x[s * 32 + l] < mn ? x[s * 32 + l] : mn;
            mx = x[s * 32 + l] > mx ? x[s * 32 + l] : mx;
        }
        step[s] = mx > mn ? (mx - mn) / (float) levels : 0;
        low[s] = -mn;
        maxstep = step[s] > maxstep ? step[s] : maxstep;
        maxlow = low[s] > maxlow ? low[s] : maxlow;
    }
    d = q_wr_f16(b, maxstep / 63.0f);
    dmin = q_wr_f16(b + 2, maxlow / 63.0f);
    for (s = 0; s < 8; s++) {
        sc[s] = q_nearest(step[s] * q_inv(d), 0, 63);
        m[s] = q_nearest(low[s] * q_inv(dmin), 0, 63);
    }
    k_pack_scales(sc, m, b + 4);
    for (s = 0; s < 8; s++) {
        ds = d * (float) sc[s];
        dm = dmin * (float) m[s];
        for (l = 0; l < 32; l++) {
            q[s * 32 + l] = q_nearest((x[s * 32 + l] + dm) * q_inv(ds), 0,
                                      levels);
        }
    }
}

static void
k_pack_nibbles(const int q[QK], uint8_t *qs)
{
    int  s, l;

    memset(qs, 0, QK / 2);
    for (s = 0; s < 8; s++) {
        for (l = 0; l < 32; l++) {
            qs[(s / 2) * 32 + l] |= (uint8_t) ((q[s * 32 + l] & 0x0f)
                                               << (4 * (s & 1)));
        }
    }
}

void
clef_q4_k_from_f32(const float *src, void *blocks, int64_t n)
{
    uint8_t  *b = blocks;
    int64_t   i;
    int       q[QK];

    for (i = 0; i < n / QK; i++, b += 144, src += QK) {
        k_quantize(src, b, 15, q);
        k_pack_nibbles(q, b + 16);
    }
}

void
clef_q5_k_from_f32(const float *src, void *blocks, int64_t n)
{
    uint8_t  *b = blocks;
    int64_t   i;
    int       q[QK], s, l;

    for (i = 0; i < n / QK; i++, b += 176, src += QK) {
        k_quantize(src, b, 31, q);
        memset(b + 16, 0, 32);
        for (s = 0; s < 8; s++) {
            for (l = 0; l < 32; l++) {
                b[16 + l] |= (uint8_t) (((q[s * 32 + l] >> 4) & 1) << s);
            }
        }
        k_pack_nibbles(q, b + 48);
    }
}

/*
 * Q6_K: per 16 values a signed step that maps the largest magnitude onto
 * 31 levels, stored as an int8 multiple of the f16 super-block scale.
 */
void
clef_q6_k_from_f32(const float *src, void *blocks, int64_t n)
{
    uint8_t  *b = blocks;
    float     step[16], maxstep, a, d, ds;
    int64_t   i;
    int       s, v, h, r, q;

    for (i = 0; i < n / QK; i++, b += 210, src += QK) {
        maxstep = 0;
        for (s = 0; s < 16; s++) {
            a = 0;
            for (v = s * 16; v < s * 16 + 16; v++) {
                a = src[v] > a ? src[v] : -src[v] > a ? -src[v] : a;
            }
            step[s] = a / 31.0f;
            maxstep = step[s] > maxstep ? step[s] : maxstep;
        }
        d = q_wr_f16(b + 208, maxstep / 127.0f);
        memset(b, 0, 192);
        for (s = 0; s < 16; s++) {
            b[192 + s] = (uint8_t) (int8_t) q_nearest(step[s] * q_inv(d), 0,
                                                      127);
        }
        for (v = 0; v < QK; v++) {
            ds = d * (float) (int8_t) b[192 + v / 16];
            q = q_nearest(src[v] * q_inv(ds), -32, 31) + 32;
            h = v / 128;
            r = v % 128;
            if (r < 64) {
                b[h * 64 + r] |= (uint8_t) (q & 0x0f);
            } else {
                b[h * 64 + r - 64] |= (uint8_t) ((q & 0x0f) << 4);
            }
            b[128 + h * 32 + r % 32] |= (uint8_t) ((q >> 4) << (2 * (r / 32)));
        }
    }
}
