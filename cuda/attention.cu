/*
 * Causal varlen attention with GQA and the sigmoid output gate
 * (docs/spec/backbone.md §3.2 steps 5-6), flash style: the L x L score
 * matrix never exists; each block keeps a 64-row query tile of one record
 * and streams that record's key/value blocks through shared memory
 * (cp.async, double-buffered), with an online softmax in fp32.
 *
 * Products are bf16 mma.sync m16n8k16 with fp32 accumulation.  Each of the
 * 4 warps owns 16 query rows; thread (g = lane/4, t = lane%4) holds rows g
 * and g+8 of every accumulator tile, columns 2t and 2t+1, which is also the
 * A-operand layout of the next product, so P never leaves registers.
 */
#include "common.cuh"

#define ATTN_BR       CLEF_K_ATTN_TILE
#define ATTN_THREADS  128

static __device__ __forceinline__ void
cp_async16(void *dst, const void *src, int src_bytes)
{
    unsigned  d = (unsigned) __cvta_generic_to_shared(dst);

    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n"
                 :: "r"(d), "l"(src), "r"(src_bytes) : "memory");
}

static __device__ __forceinline__ void
cp_async_commit(void)
{
    asm volatile("cp.async.commit_group;\n" ::: "memory");
}

template <int N>
static __device__ __forceinline__ void
cp_async_wait(void)
{
    asm volatile("cp.async.wait_group %0;\n" :: "n"(N) : "memory");
}

static __device__ __forceinline__ void
ldsm_x4(uint32_t *r, const bf16 *p)
{
    unsigned  a = (unsigned) __cvta_generic_to_shared(p);

    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(a) : "memory");
}

static __device__ __forceinline__ void
ldsm_x4_t(uint32_t *r, const bf16 *p)
{
    unsigned  a = (unsigned) __cvta_generic_to_shared(p);

    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(a) : "memory");
}

/* d += a * b for one m16n8k16 tile. */
static __device__ __forceinline__ void
mma16816(float *d, const uint32_t *a, uint32_t b0, uint32_t b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]),
                   "r"(b0), "r"(b1));
}

static __device__ __forceinline__ uint32_t
pack_bf16(float lo, float hi)
{
    bf162  h = __floats2bfloat162_rn(lo, hi);

    return *reinterpret_cast<uint32_t *>(&h);
}

/* Rows [r0, r0 + ROWS) of a record into shared memory; rows at or past len
 * and dims at or past hd are zero-filled. */
template <int ROWS, int HD>
static __device__ __forceinline__ void
load_rows(bf16 *dst, const bf16 *src, int ld, int r0, int len, int hd)
{
    constexpr int  LDS = HD + 8, CPR = HD / 8;

    for (int c = threadIdx.x; c < ROWS * CPR; c += ATTN_THREADS) {
        int          row = c / CPR, col = (c % CPR) * 8;
        bool         ok = r0 + row < len && col < hd;
        const bf16  *g = ok ? src + (int64_t) (r0 + row) * ld + col : src;

        cp_async16(dst + row * LDS + col, g, ok ? 16 : 0);
    }
}

/* S = Q K^T for this warp's 16 rows and BC keys. */
template <int HD, int BC>
static __device__ __forceinline__ void
attn_scores(float (&sc)[BC / 8][4], const bf16 *Qs, const bf16 *Kb, int warp,
    int lane)
{
    constexpr int  LDS = HD + 8;

#pragma unroll
    for (int i = 0; i < BC / 8; i++) {
        sc[i][0] = sc[i][1] = sc[i][2] = sc[i][3] = 0.0f;
    }
#pragma unroll
    for (int kk = 0; kk < HD / 16; kk++) {
        uint32_t  qa[4];

        ldsm_x4(qa, Qs + (warp * 16 + (lane & 7) + ((lane >> 3) & 1) * 8) * LDS
                    + kk * 16 + (lane >> 4) * 8);
#pragma unroll
        for (int np = 0; np < BC / 16; np++) {
            uint32_t  kf[4];

            ldsm_x4(kf, Kb + (np * 16 + (lane & 7) + (lane >> 4) * 8) * LDS
                        + kk * 16 + ((lane >> 3) & 1) * 8);
            mma16816(sc[2 * np], qa, kf[0], kf[1]);
            mma16816(sc[2 * np + 1], qa, kf[2], kf[3]);
        }
    }
}

/* The online softmax of one key block: scores scaled and masked (the
 * causal mask, and keys past the record, only where they can bite), the
 * running maxima m and sums l of rows a and b moved on, sc turned into P
 * and the output o rescaled by the maxima's change. */
template <int HD, int BC, bool CAUSAL>
static __device__ __forceinline__ void
attn_online_softmax(float (&sc)[BC / 8][4], float (&o)[HD / 8][4], float &m_a,
    float &m_b, float &l_a, float &l_b, float scale_log2, int kbase,
    int qbase, int len, int warp, int row_a, int row_b, int t4)
{
    float  mx_a = -INFINITY, mx_b = -INFINITY, base_a, base_b;
    float  corr_a, corr_b;
    bool   mask;

    mask = (CAUSAL && kbase + BC - 1 > qbase + warp * 16) || kbase + BC > len;
#pragma unroll
    for (int i = 0; i < BC / 8; i++) {
#pragma unroll
        for (int e = 0; e < 4; e++) {
            float  v = sc[i][e] * scale_log2;

            if (mask) {
                int  key = kbase + i * 8 + 2 * t4 + (e & 1);
                int  row = e < 2 ? row_a : row_b;

                if ((CAUSAL && key > row) || key >= len) {
                    v = -INFINITY;
                }
            }
            sc[i][e] = v;
            if (e < 2) {
                mx_a = fmaxf(mx_a, v);
            } else {
                mx_b = fmaxf(mx_b, v);
            }
        }
    }
    mx_a = fmaxf(mx_a, __shfl_xor_sync(0xffffffffu, mx_a, 1));
    mx_a = fmaxf(mx_a, __shfl_xor_sync(0xffffffffu, mx_a, 2));
    mx_b = fmaxf(mx_b, __shfl_xor_sync(0xffffffffu, mx_b, 1));
    mx_b = fmaxf(mx_b, __shfl_xor_sync(0xffffffffu, mx_b, 2));

    mx_a = fmaxf(m_a, mx_a);
    mx_b = fmaxf(m_b, mx_b);
    base_a = mx_a == -INFINITY ? 0.0f : mx_a;
    base_b = mx_b == -INFINITY ? 0.0f : mx_b;
    corr_a = exp2f(m_a - base_a);
    corr_b = exp2f(m_b - base_b);
    m_a = mx_a;
    m_b = mx_b;
    l_a *= corr_a;
    l_b *= corr_b;
#pragma unroll
    for (int i = 0; i < BC / 8; i++) {
        sc[i][0] = exp2f(sc[i][0] - base_a);
        sc[i][1] = exp2f(sc[i][1] - base_a);
        sc[i][2] = exp2f(sc[i][2] - base_b);
        sc[i][3] = exp2f(sc[i][3] - base_b);
        l_a += sc[i][0] + sc[i][1];
        l_b += sc[i][2] + sc[i][3];
    }
#pragma unroll
    for (int i = 0; i < HD / 8; i++) {
        o[i][0] *= corr_a;
        o[i][1] *= corr_a;
        o[i][2] *= corr_b;
        o[i][3] *= corr_b;
    }
}

/* O += P V, P straight from the score registers. */
template <int HD, int BC>
static __device__ __forceinline__ void
attn_pv(float (&o)[HD / 8][4], const float (&sc)[BC / 8][4], const bf16 *Vb,
    int lane)
{
    constexpr int  LDS = HD + 8;

#pragma unroll
    for (int kk = 0; kk < BC / 16; kk++) {
        uint32_t  pa[4];

        pa[0] = pack_bf16(sc[2 * kk][0], sc[2 * kk][1]);
        pa[1] = pack_bf16(sc[2 * kk][2], sc[2 * kk][3]);
        pa[2] = pack_bf16(sc[2 * kk + 1][0], sc[2 * kk + 1][1]);
        pa[3] = pack_bf16(sc[2 * kk + 1][2], sc[2 * kk + 1][3]);
#pragma unroll
        for (int np = 0; np < HD / 16; np++) {
            uint32_t  vf[4];

            ldsm_x4_t(vf, Vb + (kk * 16 + (lane & 7) + ((lane >> 3) & 1) * 8) * LDS
                          + np * 16 + (lane >> 4) * 8);
            mma16816(o[2 * np], pa, vf[0], vf[1]);
            mma16816(o[2 * np + 1], pa, vf[2], vf[3]);
        }
    }
}

/* Normalise, gate, store rows a and b of the warp's 16. */
template <int HD, bool CAUSAL>
static __device__ __forceinline__ void
attn_store(const clef_k_attn_args &a, const float (&o)[HD / 8][4], float l_a,
    float l_b, int start, int len, int row_a, int row_b, int h, int t4)
{
    l_a += __shfl_xor_sync(0xffffffffu, l_a, 1);
    l_a += __shfl_xor_sync(0xffffffffu, l_a, 2);
    l_b += __shfl_xor_sync(0xffffffffu, l_b, 1);
    l_b += __shfl_xor_sync(0xffffffffu, l_b, 2);
    {
        const float  inv[2] = { l_a > 0.0f ? 1.0f / l_a : 0.0f,
                                l_b > 0.0f ? 1.0f / l_b : 0.0f };
        const int    rows[2] = { row_a, row_b };

#pragma unroll
        for (int half = 0; half < 2; half++) {
            int64_t  tok = (int64_t) start + rows[half];

            if (rows[half] >= len) {
                continue;
            }
#pragma unroll
            for (int i = 0; i < HD / 8; i++) {
                int    d = i * 8 + 2 * t4;
                float  x0, x1;

                if (d >= a.hd) {
                    continue;
                }
                x0 = rbf(o[i][2 * half] * inv[half]);
                x1 = rbf(o[i][2 * half + 1] * inv[half]);
                if (CAUSAL && a.gate != NULL) {
                    bf162   gv = *reinterpret_cast<const bf162 *>(
                        (const bf16 *) a.gate + tok * a.ldg + (int64_t) h * a.g_hs + d);
                    float2  gf = __bfloat1622float2(gv);

                    x0 *= rbf(1.0f / (1.0f + expf(-gf.x)));
                    x1 *= rbf(1.0f / (1.0f + expf(-gf.y)));
                }
                *reinterpret_cast<bf162 *>((bf16 *) a.out + tok * a.ldo
                    + (int64_t) h * a.o_hs + d) = __floats2bfloat162_rn(x0, x1);
            }
        }
    }
}

/* CAUSAL false: the vision tower's attention inside an image (every key
 * of the tile's record, no gate). */
template <int HD, int BC, bool CAUSAL>
static __global__ void __launch_bounds__(ATTN_THREADS)
attn_kernel(clef_k_attn_args a, float scale_log2)
{
    constexpr int  LDS = HD + 8;
    extern __shared__ __align__(128) unsigned char  smraw[];
    bf16          *Qs = reinterpret_cast<bf16 *>(smraw);
    bf16          *Ks = Qs + ATTN_BR * LDS;
    bf16          *Vs = Ks + 2 * BC * LDS;

    const int  h = blockIdx.x % a.Hq, tile = blockIdx.x / a.Hq;
    const int  start = a.tiles[3 * tile], len = a.tiles[3 * tile + 1];
    const int  qbase = a.tiles[3 * tile + 2];
    const int  kvh = h / (a.Hq / a.Hkv);
    const int  lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int  g = lane >> 2, t4 = lane & 3;
    const int  row_a = qbase + warp * 16 + g, row_b = row_a + 8;
    const int  kend = CAUSAL ? min(len, qbase + ATTN_BR) : len;
    const int  nkb = (kend + BC - 1) / BC;

    const bf16  *qg = (const bf16 *) a.q + (int64_t) start * a.ldq + (int64_t) h * a.q_hs;
    const bf16  *kg = (const bf16 *) a.k + (int64_t) start * a.ldk + (int64_t) kvh * a.k_hs;
    const bf16  *vg = (const bf16 *) a.v + (int64_t) start * a.ldv + (int64_t) kvh * a.v_hs;

    float  o[HD / 8][4];
    float  m_a = -INFINITY, m_b = -INFINITY, l_a = 0.0f, l_b = 0.0f;

#pragma unroll
    for (int i = 0; i < HD / 8; i++) {
        o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.0f;
    }

    load_rows<ATTN_BR, HD>(Qs, qg, a.ldq, qbase, len, a.hd);
    load_rows<BC, HD>(Ks, kg, a.ldk, 0, len, a.hd);
    load_rows<BC, HD>(Vs, vg, a.ldv, 0, len, a.hd);
    cp_async_commit();

    for (int kb = 0; kb < nkb; kb++) {
        const int    buf = kb & 1, kbase = kb * BC;
        const bf16  *Kb = Ks + buf * BC * LDS, *Vb = Vs + buf * BC * LDS;
        float        sc[BC / 8][4];

        if (kb + 1 < nkb) {
            load_rows<BC, HD>(Ks + (buf ^ 1) * BC * LDS, kg, a.ldk, kbase + BC, len, a.hd);
            load_rows<BC, HD>(Vs + (buf ^ 1) * BC * LDS, vg, a.ldv, kbase + BC, len, a.hd);
            cp_async_commit();
            cp_async_wait<1>();
        } else {
            cp_async_wait<0>();
        }
        __syncthreads();

        attn_scores<HD, BC>(sc, Qs, Kb, warp, lane);
        attn_online_softmax<HD, BC, CAUSAL>(sc, o, m_a, m_b, l_a, l_b,
                                            scale_log2, kbase, qbase, len,
                                            warp, row_a, row_b, t4);
        attn_pv<HD, BC>(o, sc, Vb, lane);
        __syncthreads();
    }

    attn_store<HD, CAUSAL>(a, o, l_a, l_b, start, len, row_a, row_b, h, t4);
}

template <int HD, int BC>
static size_t
attn_smem(void)
{
    return (size_t) (ATTN_BR + 4 * BC) * (HD + 8) * sizeof(bf16);
}

template <int HD, int BC>
static cudaError_t
attn_setup(void)
{
    cudaError_t  e = smem_allow(attn_kernel<HD, BC, true>,
                                (long) attn_smem<HD, BC>(), NULL);

    if (e == cudaSuccess) {
        e = smem_allow(attn_kernel<HD, BC, false>, (long) attn_smem<HD, BC>(),
                       NULL);
    }
    return e;
}

extern "C" cudaError_t
clef_k_setup_attention(void)
{
    cudaError_t  e = attn_setup<64, 64>();

    if (e == cudaSuccess) {
        e = attn_setup<128, 64>();
    }
    if (e == cudaSuccess) {
        e = attn_setup<256, 32>();
    }
    return e;
}

template <int HD, int BC, bool CAUSAL>
static cudaError_t
attn_launch(const clef_k_attn_args *a, cudaStream_t s)
{
    float  scale_log2 = 1.4426950408889634f / sqrtf((float) a->hd);

    attn_kernel<HD, BC, CAUSAL><<<(unsigned) a->n_tiles * a->Hq, ATTN_THREADS,
                                  attn_smem<HD, BC>(), s>>>(*a, scale_log2);
    return cudaGetLastError();
}

extern "C" int
clef_k_attention_supported(int hd)
{
    return hd >= 8 && hd <= 256 && hd % 8 == 0;
}

extern "C" cudaError_t
clef_k_attention(const clef_k_attn_args *a, cudaStream_t s)
{
    if (!clef_k_attention_supported(a->hd) || a->Hkv <= 0 || a->Hq % a->Hkv != 0) {
        return cudaErrorInvalidValue;
    }
    if (a->n_tiles <= 0) {
        return cudaSuccess;
    }
    if (a->hd <= 64) {
        return attn_launch<64, 64, true>(a, s);
    }
    if (a->hd <= 128) {
        return attn_launch<128, 64, true>(a, s);
    }
    return attn_launch<256, 32, true>(a, s);
}

extern "C" cudaError_t
clef_k_attention_bidir(const clef_k_attn_args *a, cudaStream_t s)
{
    if (!clef_k_attention_supported(a->hd) || a->Hkv <= 0 || a->Hq % a->Hkv != 0
        || a->gate != NULL)
    {
        return cudaErrorInvalidValue;
    }
    if (a->n_tiles <= 0) {
        return cudaSuccess;
    }
    /* head_dim 72 (Clef's tower) runs the 128 instance: the dims past 72
     * load as zeros and cost 44 % of the products, nothing else */
    if (a->hd <= 64) {
        return attn_launch<64, 64, false>(a, s);
    }
    if (a->hd <= 128) {
        return attn_launch<128, 64, false>(a, s);
    }
    return attn_launch<256, 32, false>(a, s);
}
