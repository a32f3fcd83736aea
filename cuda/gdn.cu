/*
 * Chunked gated delta rule over packed records (docs/spec/backbone.md
 * §3.1, steps 4-7 and "Chunked prefill").
 *
 * One block per (record, v-head, slice of BV value columns): the columns of
 * the state S [dk x dv] evolve independently, so slicing dv multiplies the
 * parallelism of a single long record by dv / BV at the cost of recomputing
 * the chunk's key products per slice.  The state stays in shared memory in
 * fp32 for the whole record; products run on TF32 tensor cores (wmma) with
 * fp32 accumulation.  For a chunk of C = 64 tokens with local log-decay
 * prefix sums gamma:
 *
 *   A  = strict_lower(diag(beta) K K^T . Gamma)        Gamma_sr = e^(g_s - g_r)
 *   Y  = diag(beta) (V - diag(e^gamma) K S)
 *   V' = (I + A)^-1 Y                (blocked forward substitution)
 *   O  = diag(e^gamma) Q S + lower(Q K^T . Gamma) V'
 *   S  = e^gamma_C S + (diag(e^(gamma_C - gamma)) K)^T V'
 *
 * which is the recurrence S_t = e^g_t (I - beta_t k_t k_t^T) S_{t-1} +
 * beta_t k_t v_t^T, o_t = S_t^T q_t, unrolled over the chunk.  Rows past the
 * record's end are zero (beta = 0, g = 0), which makes them no-ops.
 */
#include <mma.h>

#include "common.cuh"

using namespace nvcuda;

#define GDN_C        64
#define GDN_THREADS  256
#define GDN_MAX_DK   128

typedef wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32,
                       wmma::row_major>  frag_a_row;
typedef wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32,
                       wmma::col_major>  frag_a_col;
typedef wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32,
                       wmma::row_major>  frag_b_row;
typedef wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32,
                       wmma::col_major>  frag_b_col;
typedef wmma::fragment<wmma::accumulator, 16, 16, 8, float>  frag_c;

template <class F>
static __device__ __forceinline__ void
load_tf32(F &f, const float *p, unsigned ld)
{
    wmma::load_matrix_sync(f, p, ld);
#pragma unroll
    for (int i = 0; i < f.num_elements; i++) {
        f.x[i] = wmma::__float_to_tf32(f.x[i]);
    }
}

/* Shared-memory layout (floats).  Every matrix starts 32-byte aligned and
 * has a leading dimension that is a multiple of 4, as wmma requires; the
 * +4 padding spreads rows over the banks. */
typedef struct {
    int  ldk, ldv, lda;
    int  q, k, s, v, w, o, a, m, dinv, gam, bet, total;
} gdn_layout;

static __host__ __device__ gdn_layout
gdn_layout_for(int dkp, int bv)
{
    gdn_layout  l;

    l.ldk = dkp + 4;
    l.ldv = bv + 4;
    l.lda = GDN_C + 4;
    l.q = 0;
    l.k = l.q + GDN_C * l.ldk;
    l.s = l.k + GDN_C * l.ldk;
    l.v = l.s + dkp * l.ldv;
    l.w = l.v + GDN_C * l.ldv;
    l.o = l.w + GDN_C * l.ldv;
    l.a = l.o + GDN_C * l.ldv;
    l.m = l.a + GDN_C * l.lda;
    l.dinv = l.m + GDN_C * l.lda;
    l.gam = l.dinv + 4 * 16 * 17;
    l.bet = l.gam + GDN_C;
    l.total = l.bet + GDN_C;
    return l;
}

/* The kernel's shared-memory matrices, at gdn_layout's offsets. */
typedef struct {
    float  *Qs, *Ks, *Ss;
    float  *Vs;                 /* V, then Y, reduced in place to Z */
    float  *Ws;                 /* K S, then V' */
    float  *Os;
    float  *As;                 /* K K^T, then A */
    float  *Ms;                 /* Q K^T, then its masked, decayed form */
    float  *Dinv, *gam, *bet;
} gdn_smem;

/* What a block knows of its record, v-head and value slice. */
typedef struct {
    int            tid, lane, warp, j, base, kh, c0, nb;
    int64_t        ldo;
    float          qscale, neg_a, dtb;
    const bf16    *u, *ba;
    bf16          *out;
} gdn_block;

/* Load q, k (L2-normalised per row, q scaled), v, g, beta of the chunk at
 * t0 (n valid rows). */
template <int BV>
static __device__ __forceinline__ void
gdn_load_chunk(const clef_k_gdn_args &p, const gdn_layout &L,
    const gdn_smem &m, const gdn_block &k, int dkp, int t0, int n)
{
    for (int s = k.warp; s < GDN_C; s += GDN_THREADS / 32) {
        const bool     valid = s < n;
        const int64_t  tok = (int64_t) k.base + t0 + s;
        const bf16    *row = k.u + tok * p.ldu;
        float          qv[GDN_MAX_DK / 32], kv[GDN_MAX_DK / 32];
        float          qq = 0.0f, kk = 0.0f, qi, ki;

#pragma unroll
        for (int i = 0; i < GDN_MAX_DK / 32; i++) {
            int  d = k.lane + 32 * i;

            qv[i] = 0.0f;
            kv[i] = 0.0f;
            if (valid && d < p.dk) {
                qv[i] = bf(row[k.kh * p.dk + d]);
                kv[i] = bf(row[p.Hk * p.dk + k.kh * p.dk + d]);
            }
            qq += qv[i] * qv[i];
            kk += kv[i] * kv[i];
        }
        qq = warp_sum(qq);
        kk = warp_sum(kk);
        qi = rsqrtf(qq + 1e-6f) * k.qscale;
        ki = rsqrtf(kk + 1e-6f);
#pragma unroll
        for (int i = 0; i < GDN_MAX_DK / 32; i++) {
            int  d = k.lane + 32 * i;

            if (d < dkp) {
                m.Qs[s * L.ldk + d] = qv[i] * qi;
                m.Ks[s * L.ldk + d] = kv[i] * ki;
            }
        }
        if (k.lane < BV) {
            int  c = k.c0 + k.lane;

            m.Vs[s * L.ldv + k.lane] = (valid && c < p.dv)
                ? bf(row[2 * p.Hk * p.dk + k.j * p.dv + c]) : 0.0f;
        }
        if (k.lane == 0) {
            float  g = 0.0f, b = 0.0f;

            if (valid) {
                float  x = bf(k.ba[tok * p.ldba + p.a_off + k.j]) + k.dtb;
                float  sp = x > 20.0f ? x : log1pf(expf(x));

                g = k.neg_a * sp;
                b = 1.0f / (1.0f + expf(-bf(k.ba[tok * p.ldba + p.b_off + k.j])));
            }
            m.gam[s] = g;
            m.bet[s] = b;
        }
    }
}

/* Warp 0: gamma = inclusive prefix sum of g over the chunk. */
static __device__ __forceinline__ void
gdn_gamma(const gdn_smem &m, const gdn_block &k)
{
    if (k.warp == 0) {
        float  g0 = m.gam[2 * k.lane], g1 = m.gam[2 * k.lane + 1];
        float  x = g0 + g1;

#pragma unroll
        for (int off = 1; off < 32; off <<= 1) {
            float  y = __shfl_up_sync(0xffffffffu, x, off);

            if (k.lane >= off) {
                x += y;
            }
        }
        m.gam[2 * k.lane] = x - g1;
        m.gam[2 * k.lane + 1] = x;
    }
}

/* K K^T and Q K^T (lower 16x16 tiles only), K S. */
static __device__ __forceinline__ void
gdn_key_products(const gdn_layout &L, const gdn_smem &m, const gdn_block &k,
    int dkp)
{
    for (int ti = k.warp; ti < 20 + 4 * k.nb; ti += GDN_THREADS / 32) {
        frag_c  acc;

        wmma::fill_fragment(acc, 0.0f);
        if (ti < 20) {
            int           l = ti % 10;
            int           bi = l >= 6 ? 3 : l >= 3 ? 2 : l >= 1 ? 1 : 0;
            int           bj = l - bi * (bi + 1) / 2;
            const float  *lhs = ti < 10 ? m.Ks : m.Qs;
            float        *dst = ti < 10 ? m.As : m.Ms;

            for (int k0 = 0; k0 < dkp; k0 += 8) {
                frag_a_row  fa;
                frag_b_col  fb;

                load_tf32(fa, lhs + bi * 16 * L.ldk + k0, L.ldk);
                load_tf32(fb, m.Ks + bj * 16 * L.ldk + k0, L.ldk);
                wmma::mma_sync(acc, fa, fb, acc);
            }
            wmma::store_matrix_sync(dst + bi * 16 * L.lda + bj * 16, acc,
                L.lda, wmma::mem_row_major);
        } else {
            int  bi = (ti - 20) / k.nb, bj = (ti - 20) % k.nb;

            for (int k0 = 0; k0 < dkp; k0 += 8) {
                frag_a_row  fa;
                frag_b_row  fb;

                load_tf32(fa, m.Ks + bi * 16 * L.ldk + k0, L.ldk);
                load_tf32(fb, m.Ss + k0 * L.ldv + bj * 16, L.ldv);
                wmma::mma_sync(acc, fa, fb, acc);
            }
            wmma::store_matrix_sync(m.Ws + bi * 16 * L.ldv + bj * 16, acc,
                L.ldv, wmma::mem_row_major);
        }
    }
}

/* Decay masks (upper triangle masked before exponentiating), Y, and the
 * row scalings of Q and K used by the output and the update. */
template <int BV>
static __device__ __forceinline__ void
gdn_decay(const gdn_layout &L, const gdn_smem &m, const gdn_block &k,
    int dkp, float g_last)
{
    for (int i = k.tid; i < GDN_C * GDN_C; i += GDN_THREADS) {
        int  s = i / GDN_C, rr = i % GDN_C;

        m.As[s * L.lda + rr] = rr < s
            ? m.bet[s] * m.As[s * L.lda + rr] * expf(m.gam[s] - m.gam[rr]) : 0.0f;
        m.Ms[s * L.lda + rr] = rr <= s
            ? m.Ms[s * L.lda + rr] * expf(m.gam[s] - m.gam[rr]) : 0.0f;
    }
    for (int i = k.tid; i < GDN_C * BV; i += GDN_THREADS) {
        int  s = i / BV, c = i % BV;

        m.Vs[s * L.ldv + c] = m.bet[s]
            * (m.Vs[s * L.ldv + c] - expf(m.gam[s]) * m.Ws[s * L.ldv + c]);
    }
    for (int i = k.tid; i < GDN_C * dkp; i += GDN_THREADS) {
        int  s = i / dkp, d = i % dkp;

        m.Qs[s * L.ldk + d] *= expf(m.gam[s]);
        m.Ks[s * L.ldk + d] *= expf(g_last - m.gam[s]);
    }
}

/* Inverses of the four 16x16 unit lower diagonal blocks of I + A, one
 * column per thread: X_sc = -sum_{c<=r<s} A_sr X_rc. */
static __device__ __forceinline__ void
gdn_block_inverses(const gdn_layout &L, const gdn_smem &m, const gdn_block &k)
{
    if (k.tid < 64) {
        const int  b = k.tid / 16, c = k.tid % 16;
        const float *Ab = m.As + (b * 16) * L.lda + b * 16;
        float      x[16];

#pragma unroll
        for (int i = 0; i < 16; i++) {
            x[i] = i == c ? 1.0f : 0.0f;
        }
#pragma unroll
        for (int s = 1; s < 16; s++) {
            if (s > c) {
                float  acc = 0.0f;

#pragma unroll
                for (int rr = 0; rr < s; rr++) {
                    if (rr >= c) {
                        acc += Ab[s * L.lda + rr] * x[rr];
                    }
                }
                x[s] = -acc;
            }
        }
#pragma unroll
        for (int s = 0; s < 16; s++) {
            m.Dinv[(b * 16 + s) * 17 + c] = x[s];
        }
    }
}

/* V' = (I + A)^-1 Y by blocks of 16 rows:
 *   V'_b = Dinv_b Z_b,  then Z_{b'} -= A_{b'b} V'_b for b' > b. */
template <int BV>
static __device__ __forceinline__ void
gdn_solve(const gdn_layout &L, const gdn_smem &m, const gdn_block &k)
{
    for (int b = 0; b < 4; b++) {
        for (int i = k.tid; i < 16 * BV; i += GDN_THREADS) {
            int    s = i / BV, c = i % BV;
            float  acc = 0.0f;

            for (int rr = 0; rr <= s; rr++) {
                acc += m.Dinv[(b * 16 + s) * 17 + rr]
                    * m.Vs[(b * 16 + rr) * L.ldv + c];
            }
            m.Ws[(b * 16 + s) * L.ldv + c] = acc;
        }
        __syncthreads();
        if (b < 3) {
            int  rows = GDN_C - 16 * (b + 1);

            for (int i = k.tid; i < rows * BV; i += GDN_THREADS) {
                int    s = 16 * (b + 1) + i / BV, c = i % BV;
                float  acc = 0.0f;

#pragma unroll
                for (int rr = 0; rr < 16; rr++) {
                    acc += m.As[s * L.lda + b * 16 + rr]
                        * m.Ws[(b * 16 + rr) * L.ldv + c];
                }
                m.Vs[s * L.ldv + c] -= acc;
            }
            __syncthreads();
        }
    }
}

/* O = (e^gamma Q) S + M V', written to global by the same warp. */
static __device__ __forceinline__ void
gdn_output(const clef_k_gdn_args &p, const gdn_layout &L, const gdn_smem &m,
    const gdn_block &k, int dkp, int t0, int n)
{
    if (k.warp < 4 * k.nb) {
        int     bi = k.warp / k.nb, bj = k.warp % k.nb;
        frag_c  acc;

        wmma::fill_fragment(acc, 0.0f);
        for (int k0 = 0; k0 < dkp; k0 += 8) {
            frag_a_row  fa;
            frag_b_row  fb;

            load_tf32(fa, m.Qs + bi * 16 * L.ldk + k0, L.ldk);
            load_tf32(fb, m.Ss + k0 * L.ldv + bj * 16, L.ldv);
            wmma::mma_sync(acc, fa, fb, acc);
        }
        for (int k0 = 0; k0 < GDN_C; k0 += 8) {
            frag_a_row  fa;
            frag_b_row  fb;

            load_tf32(fa, m.Ms + bi * 16 * L.lda + k0, L.lda);
            load_tf32(fb, m.Ws + k0 * L.ldv + bj * 16, L.ldv);
            wmma::mma_sync(acc, fa, fb, acc);
        }
        wmma::store_matrix_sync(m.Os + bi * 16 * L.ldv + bj * 16, acc, L.ldv,
            wmma::mem_row_major);
        __syncwarp();
        for (int e = k.lane; e < 256; e += 32) {
            int  row = bi * 16 + e / 16;
            int  col = k.c0 + bj * 16 + e % 16;

            if (row < n && col < p.dv) {
                k.out[((int64_t) k.base + t0 + row) * k.ldo
                      + (int64_t) k.j * p.dv + col]
                    = tobf(m.Os[row * L.ldv + bj * 16 + e % 16]);
            }
        }
    }
}

/* S = e^gamma_C S + Kd^T V' (Kd already scaled by e^(gamma_C - gamma)). */
static __device__ __forceinline__ void
gdn_update_state(const gdn_layout &L, const gdn_smem &m, const gdn_block &k,
    int dkp, float g_last)
{
    const float  eg = expf(g_last);

    for (int ti = k.warp; ti < (dkp / 16) * k.nb; ti += GDN_THREADS / 32) {
        int     bi = ti / k.nb, bj = ti % k.nb;
        float  *st = m.Ss + bi * 16 * L.ldv + bj * 16;
        frag_c  acc;

        wmma::load_matrix_sync(acc, st, L.ldv, wmma::mem_row_major);
#pragma unroll
        for (int e = 0; e < acc.num_elements; e++) {
            acc.x[e] *= eg;
        }
        for (int k0 = 0; k0 < GDN_C; k0 += 8) {
            frag_a_col  fa;
            frag_b_row  fb;

            load_tf32(fa, m.Ks + k0 * L.ldk + bi * 16, L.ldk);
            load_tf32(fb, m.Ws + k0 * L.ldv + bj * 16, L.ldv);
            wmma::mma_sync(acc, fa, fb, acc);
        }
        wmma::store_matrix_sync(st, acc, L.ldv, wmma::mem_row_major);
    }
}

template <int BV>
static __global__ void __launch_bounds__(GDN_THREADS, 1)
gdn_kernel(clef_k_gdn_args p, int dkp)
{
    extern __shared__ __align__(128) float  sm[];
    const gdn_layout  L = gdn_layout_for(dkp, BV);
    float             *Qs = sm + L.q, *Ks = sm + L.k, *Ss = sm + L.s;
    float             *Vs = sm + L.v, *Ws = sm + L.w, *Os = sm + L.o;
    float             *As = sm + L.a, *Ms = sm + L.m;
    float             *Dinv = sm + L.dinv, *gam = sm + L.gam, *bet = sm + L.bet;

    const int  tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int  slice = blockIdx.x, j = blockIdx.y, r = blockIdx.z;
    const int  base = p.cu[r], len = p.cu[r + 1] - base;
    const int  kh = j / (p.Hv / p.Hk);
    const int  c0 = slice * BV;
    const int  nb = BV / 16;
    const int64_t  ldo = (int64_t) p.Hv * p.dv;
    const float    qscale = rsqrtf((float) p.dk);
    const float    neg_a = p.neg_a[j], dtb = p.dt_bias[j];
    const bf16    *u = (const bf16 *) p.u;
    const bf16    *ba = (const bf16 *) p.ba;
    bf16          *out = (bf16 *) p.o;

    const gdn_smem   m = { Qs, Ks, Ss, Vs, Ws, Os, As, Ms, Dinv, gam, bet };
    const gdn_block  k = { tid, lane, warp, j, base, kh, c0, nb, ldo, qscale,
                           neg_a, dtb, u, ba, out };

    for (int i = tid; i < dkp * L.ldv; i += GDN_THREADS) {
        Ss[i] = 0.0f;
    }

    for (int t0 = 0; t0 < len; t0 += GDN_C) {
        const int  n = min(GDN_C, len - t0);
        float      g_last;

        gdn_load_chunk<BV>(p, L, m, k, dkp, t0, n);
        __syncthreads();
        gdn_gamma(m, k);
        gdn_key_products(L, m, k, dkp);
        __syncthreads();
        g_last = gam[GDN_C - 1];
        gdn_decay<BV>(L, m, k, dkp, g_last);
        __syncthreads();
        gdn_block_inverses(L, m, k);
        __syncthreads();
        gdn_solve<BV>(L, m, k);
        gdn_output(p, L, m, k, dkp, t0, n);
        __syncthreads();
        gdn_update_state(L, m, k, dkp, g_last);
        __syncthreads();
    }
}

extern "C" int
clef_k_gdn_supported(int dk, int dv)
{
    return dk >= 1 && dk <= GDN_MAX_DK && dv >= 1;
}

/* Each slice width's largest launch (dk = 128): 150 KB for BV = 32.  The
 * kernel has no static shared memory; smem_allow() checks the sum anyway. */
extern "C" cudaError_t
clef_k_setup_gdn(void)
{
    cudaError_t  e;

    e = smem_allow(gdn_kernel<32>,
                   (long) gdn_layout_for(GDN_MAX_DK, 32).total * (long) sizeof(float), NULL);
    if (e == cudaSuccess) {
        e = smem_allow(gdn_kernel<16>,
                       (long) gdn_layout_for(GDN_MAX_DK, 16).total * (long) sizeof(float),
                       NULL);
    }
    return e;
}

template <int BV>
static cudaError_t
gdn_launch(const clef_k_gdn_args *a, int dkp, cudaStream_t s)
{
    size_t  bytes = (size_t) gdn_layout_for(dkp, BV).total * sizeof(float);
    dim3    grid(cdiv(a->dv, BV), a->Hv, a->n_records);

    gdn_kernel<BV><<<grid, GDN_THREADS, bytes, s>>>(*a, dkp);
    return cudaGetLastError();
}

extern "C" cudaError_t
clef_k_gdn(const clef_k_gdn_args *a, cudaStream_t s)
{
    int  dkp = (a->dk + 15) / 16 * 16;

    if (!clef_k_gdn_supported(a->dk, a->dv) || a->Hv % a->Hk != 0) {
        return cudaErrorInvalidValue;
    }
    if (a->n_records <= 0) {
        return cudaSuccess;
    }
    return a->dv >= 32 ? gdn_launch<32>(a, dkp, s) : gdn_launch<16>(a, dkp, s);
}
