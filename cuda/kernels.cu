/*
 * Memory-bound kernels of the Qwen3.5 backbone (docs/spec/backbone.md §3):
 * embedding gather, zero-centred RMSNorm, causal depthwise conv + SiLU over
 * packed records, gated RMSNorm, q/k norm + partial RoPE, SwiGLU.
 * fp32 arithmetic on bf16 storage; each output is rounded to bf16 where the
 * reference stores bf16.
 */
#include "common.cuh"

/* ---- embedding ---------------------------------------------------------- */

static __global__ void
embed_kernel(const int32_t *ids, const bf16 *table, bf16 *out, int H)
{
    int          t = blockIdx.x;
    const uint4 *src = reinterpret_cast<const uint4 *>(table + (int64_t) ids[t] * H);
    uint4       *dst = reinterpret_cast<uint4 *>(out + (int64_t) t * H);

    for (int i = threadIdx.x; i < H / 8; i += blockDim.x) {
        dst[i] = src[i];
    }
}

extern "C" cudaError_t
clef_k_embed(const int32_t *ids, const clef_bf16 *table, clef_bf16 *out, int T,
    int H, cudaStream_t s)
{
    if (T > 0) {
        embed_kernel<<<T, 128, 0, s>>>(ids, (const bf16 *) table, (bf16 *) out, H);
    }
    return cudaGetLastError();
}

/* ---- zero-centred RMSNorm ---------------------------------------------- */

static __global__ void __launch_bounds__(256)
rmsnorm_kernel(const bf16 *x, const bf16 *w, float one, bf16 *y, int H,
    float eps)
{
    __shared__ float  red[32];
    const bf16       *xr = x + (int64_t) blockIdx.x * H;
    bf16             *yr = y + (int64_t) blockIdx.x * H;
    float             f[8], g[8], ss = 0.0f, inv;

    for (int i = threadIdx.x * 8; i < H; i += blockDim.x * 8) {
        load8(xr + i, f);
#pragma unroll
        for (int j = 0; j < 8; j++) {
            ss += f[j] * f[j];
        }
    }
    ss = block_sum(ss, red);
    inv = rsqrtf(ss / (float) H + eps);

    for (int i = threadIdx.x * 8; i < H; i += blockDim.x * 8) {
        load8(xr + i, f);
        load8(w + i, g);
#pragma unroll
        for (int j = 0; j < 8; j++) {
            f[j] = (f[j] * inv) * (one + g[j]);
        }
        store8(yr + i, f);
    }
}

extern "C" cudaError_t
clef_k_rmsnorm_form(const clef_bf16 *x, const clef_bf16 *w, int plain,
    clef_bf16 *y, int T, int H, float eps, cudaStream_t s)
{
    if (T > 0) {
        rmsnorm_kernel<<<T, 256, 0, s>>>((const bf16 *) x, (const bf16 *) w,
            plain ? 0.0f : 1.0f, (bf16 *) y, H, eps);
    }
    return cudaGetLastError();
}

extern "C" cudaError_t
clef_k_rmsnorm(const clef_bf16 *x, const clef_bf16 *w, clef_bf16 *y, int T,
    int H, float eps, cudaStream_t s)
{
    return clef_k_rmsnorm_form(x, w, 0, y, T, H, eps, s);
}

/* ---- causal depthwise conv + SiLU -------------------------------------- */

/* One thread per (token, 8 channels).  Tap i multiplies token t - K + 1 + i;
 * taps before the record's first token read zeros, so records never mix. */
static __global__ void
conv_silu_kernel(const bf16 *x, int ldx, const bf16 *wt, int K,
    const int32_t *pos, bf16 *u, int T, int C)
{
    int64_t  idx = (int64_t) blockIdx.x * blockDim.x + threadIdx.x;
    int      groups = C / 8;
    int      t, c, p;
    float    acc[8], xv[8], wv[8];

    if (idx >= (int64_t) T * groups) {
        return;
    }
    t = (int) (idx / groups);
    c = (int) (idx % groups) * 8;
    p = pos[t];

#pragma unroll
    for (int j = 0; j < 8; j++) {
        acc[j] = 0.0f;
    }
    for (int i = 0; i < K; i++) {
        int  back = K - 1 - i;

        if (p - back < 0) {
            continue;
        }
        load8(x + (int64_t) (t - back) * ldx + c, xv);
        load8(wt + (int64_t) i * C + c, wv);
#pragma unroll
        for (int j = 0; j < 8; j++) {
            acc[j] += wv[j] * xv[j];
        }
    }
#pragma unroll
    for (int j = 0; j < 8; j++) {
        acc[j] = silu(acc[j]);
    }
    store8(u + (int64_t) t * C + c, acc);
}

extern "C" cudaError_t
clef_k_conv_silu(const clef_bf16 *x, int ldx, const clef_bf16 *wt, int K,
    const int32_t *pos, clef_bf16 *u, int T, int C, cudaStream_t s)
{
    int64_t  n = (int64_t) T * (C / 8);

    if (n > 0) {
        conv_silu_kernel<<<cdiv(n, 256), 256, 0, s>>>((const bf16 *) x, ldx,
            (const bf16 *) wt, K, pos, (bf16 *) u, T, C);
    }
    return cudaGetLastError();
}

/* ---- gated RMSNorm x SiLU(z) -------------------------------------------- */

/* One warp per (token, v-head) row of dv values. */
static __global__ void __launch_bounds__(256)
gated_norm_kernel(bf16 *o, const bf16 *z, int ldz, const float *w, int T,
    int Hv, int dv, float eps)
{
    int64_t  row = (int64_t) blockIdx.x * 8 + (threadIdx.x >> 5);
    int      lane = threadIdx.x & 31;
    int64_t  t;
    int      h;
    bf16    *orow;
    const bf16 *zrow;
    float    ss = 0.0f, inv;

    if (row >= (int64_t) T * Hv) {
        return;
    }
    t = row / Hv;
    h = (int) (row % Hv);
    orow = o + t * ((int64_t) Hv * dv) + (int64_t) h * dv;
    zrow = z + t * ldz + (int64_t) h * dv;

    for (int d = lane; d < dv; d += 32) {
        float  v = bf(orow[d]);

        ss += v * v;
    }
    ss = warp_sum(ss);
    inv = rsqrtf(ss / (float) dv + eps);
    for (int d = lane; d < dv; d += 32) {
        float  n = rbf(bf(orow[d]) * inv);
        float  t2 = rbf(n * w[d]);

        orow[d] = tobf(t2 * silu(bf(zrow[d])));
    }
}

extern "C" cudaError_t
clef_k_gated_norm(clef_bf16 *o, const clef_bf16 *z, int ldz, const float *w,
    int T, int Hv, int dv, float eps, cudaStream_t s)
{
    int64_t  rows = (int64_t) T * Hv;

    if (rows > 0) {
        gated_norm_kernel<<<cdiv(rows, 8), 256, 0, s>>>((bf16 *) o,
            (const bf16 *) z, ldz, w, T, Hv, dv, eps);
    }
    return cudaGetLastError();
}

/* ---- q/k RMSNorm1p + partial NeoX RoPE ---------------------------------- */

#define ROPE_MAX_HD  256

/* One warp per (token, head slot); slots 0..Hq-1 are q heads, then k heads.
 * The normalised row goes through shared memory because RoPE pairs dim j
 * with dim j + rot/2, held by another lane. */
static __global__ void __launch_bounds__(256)
qk_rope_kernel(clef_k_rope_args a)
{
    __shared__ float  rows[8][ROPE_MAX_HD];
    int               warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    int64_t           slot = (int64_t) blockIdx.x * 8 + warp;
    int               slots = a.Hq + a.Hkv;
    int64_t           t;
    int               h, half, p;
    const bf16       *src, *w;
    bf16             *dst;
    float            *r = rows[warp];
    float             ss = 0.0f, inv;

    if (slot >= (int64_t) a.T * slots) {
        return;
    }
    t = slot / slots;
    h = (int) (slot % slots);
    if (h < a.Hq) {
        src = (const bf16 *) a.proj + t * a.ldp + (int64_t) h * a.q_hstride;
        w = (const bf16 *) a.q_norm;
        dst = (bf16 *) a.q + t * ((int64_t) a.Hq * a.hd) + (int64_t) h * a.hd;
    } else {
        h -= a.Hq;
        src = (const bf16 *) a.proj + t * a.ldp + a.k_off + (int64_t) h * a.hd;
        w = (const bf16 *) a.k_norm;
        dst = (bf16 *) a.k + t * ((int64_t) a.Hkv * a.hd) + (int64_t) h * a.hd;
    }

    for (int d = lane; d < a.hd; d += 32) {
        float  v = bf(src[d]);

        r[d] = v;
        ss += v * v;
    }
    ss = warp_sum(ss);
    inv = rsqrtf(ss / (float) a.hd + a.eps);
    for (int d = lane; d < a.hd; d += 32) {
        r[d] = rbf(r[d] * inv * ((a.plain_norm ? 0.0f : 1.0f) + bf(w[d])));
    }
    __syncwarp();

    half = a.rot / 2;
    p = a.pos[t];
    for (int d = lane; d < a.hd; d += 32) {
        float  out = r[d];

        if (d < a.rot) {
            int    j = d < half ? d : d - half;
            int    pj = p;
            float  th;

            if (a.mpos != NULL) {
                /* M-RoPE: the pair's axis, interleaved (clef_mrope_axis) */
                int  axis = j % 3 == 1 && j < 3 * a.msec[1] ? 1
                            : j % 3 == 2 && j < 3 * a.msec[2] ? 2 : 0;

                pj = a.mpos[(int64_t) axis * a.T + t];
            }
            th = (float) pj * a.inv_freq[j];
            float  c = rbf(cosf(th)), sn = rbf(sinf(th));

            if (d < half) {
                out = rbf(r[d] * c) + rbf(-r[d + half] * sn);
            } else {
                out = rbf(r[d] * c) + rbf(r[d - half] * sn);
            }
        }
        dst[d] = tobf(out);
    }
}

extern "C" cudaError_t
clef_k_qk_norm_rope(const clef_k_rope_args *a, cudaStream_t s)
{
    int64_t  slots = (int64_t) a->T * (a->Hq + a->Hkv);

    if (a->hd > ROPE_MAX_HD) {
        return cudaErrorInvalidValue;
    }
    if (slots > 0) {
        qk_rope_kernel<<<cdiv(slots, 8), 256, 0, s>>>(*a);
    }
    return cudaGetLastError();
}

/* ---- SwiGLU -------------------------------------------------------------- */

static __global__ void
swiglu_kernel(const bf16 *gu, int ld, bf16 *out, int T, int I)
{
    int64_t  idx = (int64_t) blockIdx.x * blockDim.x + threadIdx.x;
    int      groups = I / 8;
    int64_t  t;
    int      c;
    float    g[8], u[8];

    if (idx >= (int64_t) T * groups) {
        return;
    }
    t = idx / groups;
    c = (int) (idx % groups) * 8;
    load8(gu + t * ld + c, g);
    load8(gu + t * ld + I + c, u);
#pragma unroll
    for (int j = 0; j < 8; j++) {
        g[j] = rbf(silu(g[j])) * u[j];
    }
    store8(out + t * I + c, g);
}

extern "C" cudaError_t
clef_k_swiglu(const clef_bf16 *gu, int ld, clef_bf16 *out, int T, int I,
    cudaStream_t s)
{
    int64_t  n = (int64_t) T * (I / 8);

    if (n > 0) {
        swiglu_kernel<<<cdiv(n, 256), 256, 0, s>>>((const bf16 *) gu, ld,
            (bf16 *) out, T, I);
    }
    return cudaGetLastError();
}

/* ---- conversion ------------------------------------------------------------ */

static __global__ void
bf16_to_f32_kernel(const bf16 *src, float *dst, int64_t n)
{
    int64_t  i = (int64_t) blockIdx.x * blockDim.x + threadIdx.x;

    if (i < n) {
        dst[i] = bf(src[i]);
    }
}

extern "C" cudaError_t
clef_k_bf16_to_f32(const clef_bf16 *src, float *dst, int64_t n, cudaStream_t s)
{
    if (n > 0) {
        bf16_to_f32_kernel<<<cdiv(n, 256), 256, 0, s>>>((const bf16 *) src, dst, n);
    }
    return cudaGetLastError();
}

/* ---- sum over ranks on one device (comm_same.c) ------------------------ */

/* Element i of every rank's buffer becomes their sum, taken in fp32 in rank
 * order 0, 1, ... and rounded once (bf16) or not at all (fp32): the same
 * bits in every buffer, whatever the launch geometry. */
static __global__ void
sum_ranks_kernel(clef_k_rank_bufs b, int n_ranks, int64_t n, int is_bf16)
{
    int64_t  i = (int64_t) blockIdx.x * blockDim.x + threadIdx.x;
    int64_t  step = (int64_t) gridDim.x * blockDim.x;
    float    acc;
    int      r;

    for (; i < n; i += step) {
        acc = 0.0f;
        if (is_bf16) {
            for (r = 0; r < n_ranks; r++) {
                acc += bf(((const bf16 *) b.buf[r])[i]);
            }
            for (r = 0; r < n_ranks; r++) {
                ((bf16 *) b.buf[r])[i] = tobf(acc);
            }
        } else {
            for (r = 0; r < n_ranks; r++) {
                acc += ((const float *) b.buf[r])[i];
            }
            for (r = 0; r < n_ranks; r++) {
                ((float *) b.buf[r])[i] = acc;
            }
        }
    }
}

extern "C" cudaError_t
clef_k_sum_ranks(const clef_k_rank_bufs *b, int n_ranks, int64_t n, int is_bf16,
    cudaStream_t s)
{
    int64_t  blocks = (n + 255) / 256;

    if (n_ranks < 1 || n_ranks > CLEF_K_RANKS_MAX) {
        return cudaErrorInvalidValue;
    }
    if (n > 0) {
        /* a grid-stride loop past 64k blocks: no limit on n */
        sum_ranks_kernel<<<(unsigned) (blocks < 65536 ? blocks : 65536), 256, 0, s>>>(
            *b, n_ranks, n, is_bf16);
    }
    return cudaGetLastError();
}

/* ---- setup ------------------------------------------------------------------ */

extern "C" cudaError_t
clef_k_setup(void)
{
    cudaError_t  e = clef_k_setup_gdn();

    if (e == cudaSuccess) {
        e = clef_k_setup_attention();
    }
    if (e == cudaSuccess) {
        e = clef_k_setup_head();
    }
    return e;
}
