#include "cpu/kernels/gemm_pack.h"

#include <stdlib.h>
#include <string.h>

#include <immintrin.h>

#include "model/tensor.h"

#define MR  CLEF_GEMM_MR
#define NR  CLEF_GEMM_NR

#if NR != 16
#error "pack_cols() fills panels of 16 columns"
#endif

static int64_t
min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

/* r[i][j] <-> r[j][i] for an 8 x 8 block in eight vectors */
static inline void
transpose8(__m256 r[8])
{
    __m256  t[8], s[8];
    int     i;

    for (i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    for (i = 0; i < 8; i += 4) {
        s[i] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
        s[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
        s[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
        s[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
    }
    for (i = 0; i < 4; i++) {
        r[i] = _mm256_permute2f128_ps(s[i], s[i + 4], 0x20);
        r[i + 4] = _mm256_permute2f128_ps(s[i], s[i + 4], 0x31);
    }
}

/* One panel of 16 columns of B stored column by column (column c at
 * src + c * cs, contiguous in k; the keys of attention, K^T): 8 x 8 blocks
 * transposed in registers instead of 16 strided gathers. */
static void
pack_cols(const float *src, int64_t cs, int64_t kc, float *d)
{
    __m256   r[8];
    int64_t  k;
    int      h, c;

    for (k = 0; k + 8 <= kc; k += 8) {
        for (h = 0; h < 2; h++) {
            for (c = 0; c < 8; c++) {
                r[c] = _mm256_loadu_ps(src + (h * 8 + c) * cs + k);
            }
            transpose8(r);
            for (c = 0; c < 8; c++) {
                _mm256_storeu_ps(d + (k + c) * NR + h * 8, r[c]);
            }
        }
    }
    for ( ; k < kc; k++) {
        for (c = 0; c < NR; c++) {
            d[k * NR + c] = src[c * cs + k];
        }
    }
}

#if MR != 6
#error "pack_rows() fills panels of 6 rows"
#endif

/* One whole panel of MR rows of a row-major A (row r at src + r * rs):
 * eight steps at a time, the six rows' 8 x 8 block transposed in registers
 * (two rows of it unused) and each step's six values stored under a mask,
 * instead of a strided store per value.  It was 3% of a 1 x 256 forward. */
static void
pack_rows(const float *src, int64_t rs, int64_t kc, float *d)
{
    const __m256i  six = _mm256_setr_epi32(-1, -1, -1, -1, -1, -1, 0, 0);
    __m256         r[8];
    int64_t        k;
    int            c;

    /* rows 6 and 7 of the block only reach lanes 6 and 7, which the mask
     * drops: whatever the last transpose left there will do */
    r[6] = r[7] = _mm256_setzero_ps();
    for (k = 0; k + 8 <= kc; k += 8) {
        for (c = 0; c < MR; c++) {
            r[c] = _mm256_loadu_ps(src + c * rs + k);
        }
        transpose8(r);
        for (c = 0; c < 8; c++) {
            _mm256_maskstore_ps(d + (k + c) * MR, six, r[c]);
        }
    }
    for ( ; k < kc; k++) {
        for (c = 0; c < MR; c++) {
            d[k * MR + c] = src[c * rs + k];
        }
    }
}

void
clef_cpu_pack_a(const clef_cpu_mat *a, int64_t i0, int64_t m, int64_t k0, int64_t kc,
    float *dst, int64_t ps)
{
    const float  *src;
    float        *d;
    int64_t       i, k, end = (m + MR - 1) / MR * MR;

    for (i = 0; i < end; i++) {
        if (i % MR == 0 && i + MR <= m && a->cs == 1) {
            pack_rows(a->p + (i0 + i) * a->rs + k0, a->rs, kc, dst + i / MR * ps);
            i += MR - 1;
            continue;
        }
        d = dst + i / MR * ps + i % MR;
        src = a->p + (i0 + i) * a->rs + k0 * a->cs;
        if (i >= m) {
            for (k = 0; k < kc; k++) {
                d[k * MR] = 0.0f;
            }
        } else if (a->cs == 1) {
            for (k = 0; k < kc; k++) {
                d[k * MR] = src[k];
            }
        } else {
            for (k = 0; k < kc; k++) {
                d[k * MR] = src[k * a->cs];
            }
        }
    }
}

void
clef_cpu_pack_b(const clef_cpu_mat *b, int64_t k0, int64_t kc, int64_t j0, int64_t n,
    float *dst, int64_t ps)
{
    const float  *src;
    float        *d;
    int64_t       p, k, cols;
    int           c;

    for (p = 0; p * NR < n; p++) {
        d = dst + p * ps;
        cols = min64(NR, n - p * NR);
        if (b->cs == 1) {
            for (k = 0; k < kc; k++) {
                src = b->p + (k0 + k) * b->rs + j0 + p * NR;
                memcpy(d + k * NR, src, sizeof(float) * (size_t) cols);
                for (c = (int) cols; c < NR; c++) {
                    d[k * NR + c] = 0.0f;
                }
            }
            continue;
        }
        if (b->rs == 1 && cols == NR) {
            pack_cols(b->p + k0 + (j0 + p * NR) * b->cs, b->cs, kc, d);
            continue;
        }
        for (c = 0; c < NR; c++) {
            if (c >= cols) {
                for (k = 0; k < kc; k++) {
                    d[k * NR + c] = 0.0f;
                }
                continue;
            }
            src = b->p + k0 * b->rs + (j0 + p * NR + c) * b->cs;
            for (k = 0; k < kc; k++) {
                d[k * NR + c] = src[k * b->rs];
            }
        }
    }
}

void
clef_cpu_round_bf16(float *p, int64_t n)
{
    __m256i  u, r, one = _mm256_set1_epi32(1), half = _mm256_set1_epi32(0x7fff);
    __m256i  hi = _mm256_set1_epi32((int) 0xffff0000u);
    __m256i  quiet = _mm256_set1_epi32(0x00400000);
    __m256   x, nan;
    int64_t  i;

    for (i = 0; i + 8 <= n; i += 8) {
        x = _mm256_loadu_ps(p + i);
        u = _mm256_castps_si256(x);
        r = _mm256_and_si256(_mm256_srli_epi32(u, 16), one);
        r = _mm256_add_epi32(u, _mm256_add_epi32(half, r));
        r = _mm256_and_si256(r, hi);
        nan = _mm256_cmp_ps(x, x, _CMP_UNORD_Q);
        x = _mm256_blendv_ps(_mm256_castsi256_ps(r),
                             _mm256_castsi256_ps(_mm256_and_si256(
                                 _mm256_or_si256(u, quiet), hi)),
                             nan);
        _mm256_storeu_ps(p + i, x);
    }
    for ( ; i < n; i++) {
        p[i] = clef_bf16_to_f32(clef_f32_to_bf16(p[i]));
    }
}
