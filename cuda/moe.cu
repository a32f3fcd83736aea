/*
 * Clef Omni's routed experts on the device (docs/spec/backbone.md §6; the
 * CPU's cpu/ops/moe.h says what they compute): the router's logits in
 * fp32, each token's softmax, top k and renormalised weights, the
 * permutation that groups the tokens by expert (tokens in order within
 * each), one grouped GEMM launch that runs every expert's product over its
 * own rows (bf16 tensor cores, fp32 accumulation), and each token's
 * weighted sum of its experts' outputs in increasing expert index.
 *
 * Nothing here reads the routing on the host: the grouped GEMM's grid is
 * sized by the most row tiles T k rows can need, and a block past the
 * batch's tiles returns, so the sequence can be captured into a graph.
 * Every sum runs in a fixed order over its own row: a token's output does
 * not depend on what it is batched with (cuda/README.md, "Determinism").
 */
#include <mma.h>

#include "common.cuh"

using namespace nvcuda;

#define MOE_K_MAX     32          /* experts per token */
#define MOE_BM        64          /* grouped GEMM tile: rows */
#define MOE_BN        64          /*                    columns */
#define MOE_BK        32          /*                    reduction step */
#define MOE_LDS       (MOE_BK + 8)
#define MOE_LDC       (MOE_BN + 4)

/* ---- router ------------------------------------------------------------ */

/* One warp per (token, expert): logits[t][e] = <xn[t], w[e]>, the lanes'
 * partial sums in a fixed order. */
static __global__ void __launch_bounds__(256)
router_kernel(const bf16 *xn, const float *w, float *logits, int T, int E,
    int H)
{
    int64_t      job = (int64_t) blockIdx.x * 8 + (threadIdx.x >> 5);
    int          lane = threadIdx.x & 31;
    int64_t      t, e;
    const bf16  *x;
    const float *wr;
    float        acc = 0.0f;

    if (job >= (int64_t) T * E) {
        return;
    }
    t = job / E;
    e = job % E;
    x = xn + t * H;
    wr = w + e * H;
    for (int i = lane; i < H; i += 32) {
        acc += bf(x[i]) * wr[i];
    }
    acc = warp_sum(acc);
    if (lane == 0) {
        logits[t * E + e] = acc;
    }
}

extern "C" cudaError_t
clef_k_moe_router(const clef_bf16 *xn, const float *w, float *logits, int T,
    int E, int H, cudaStream_t s)
{
    if (T > 0) {
        router_kernel<<<cdiv((int64_t) T * E, 8), 256, 0, s>>>(
            (const bf16 *) xn, w, logits, T, E, H);
    }
    return cudaGetLastError();
}

/* ---- routing ----------------------------------------------------------- */

/* One thread per token: softmax over its E logits, the k largest (the
 * lower index first on a tie), renormalised when renorm, then stored in
 * increasing expert order. */
static __global__ void
route_kernel(const float *logits, int T, int E, int k, int renorm,
    int32_t *expert, float *weight)
{
    int          t = blockIdx.x * blockDim.x + threadIdx.x;
    const float *z;
    int32_t      pick[MOE_K_MAX];
    float        p[MOE_K_MAX], mx, sum = 0.0f, top = 0.0f, v, pe, pb;
    int          n, e, i, best;

    if (t >= T) {
        return;
    }
    z = logits + (int64_t) t * E;
    mx = z[0];
    for (e = 1; e < E; e++) {
        mx = fmaxf(mx, z[e]);
    }
    for (e = 0; e < E; e++) {
        sum += expf(z[e] - mx);
    }
    for (n = 0; n < k; n++) {
        best = -1;
        pb = 0.0f;
        for (e = 0; e < E; e++) {
            for (i = 0; i < n && pick[i] != e; i++) {
            }
            if (i < n) {
                continue;
            }
            pe = expf(z[e] - mx) / sum;
            if (best < 0 || pe > pb) {
                best = e;
                pb = pe;
            }
        }
        pick[n] = best;
        p[n] = pb;
        top += pb;
    }
    for (n = 0; n < k; n++) {
        v = renorm ? p[n] / top : p[n];
        for (i = n; i > 0 && expert[(int64_t) t * k + i - 1] > pick[n]; i--) {
            expert[(int64_t) t * k + i] = expert[(int64_t) t * k + i - 1];
            weight[(int64_t) t * k + i] = weight[(int64_t) t * k + i - 1];
        }
        expert[(int64_t) t * k + i] = pick[n];
        weight[(int64_t) t * k + i] = v;
    }
}

/* One block per expert: how many of the T k choices name it. */
static __global__ void __launch_bounds__(256)
count_kernel(const int32_t *expert, int64_t n, int32_t *count)
{
    int64_t  i;
    int      c = 0;

    for (i = 0; i < n; i += blockDim.x) {
        c += __syncthreads_count(i + threadIdx.x < n
                                 && expert[i + threadIdx.x] == (int) blockIdx.x);
    }
    if (threadIdx.x == 0) {
        count[blockIdx.x] = c;
    }
}

/* One block per expert e: its first grouped row (the counts before it)
 * and first row tile, then its rows in token order: the choices naming e,
 * numbered by a block-wide prefix count over the choices in order. */
static __global__ void __launch_bounds__(256)
place_kernel(const int32_t *expert, int64_t n, int k, int E,
    const int32_t *count, int32_t *offset, int32_t *tile_off, int32_t *slot,
    int32_t *row_token)
{
    __shared__ int  warp_n[8];
    __shared__ int  base;
    int             e = blockIdx.x, lane = threadIdx.x & 31;
    int             warp = threadIdx.x >> 5, before, mine, j, tiles = 0;
    int64_t         i;

    if (threadIdx.x == 0) {
        base = 0;
        for (j = 0; j < e; j++) {
            base += count[j];
            tiles += (count[j] + MOE_BM - 1) / MOE_BM;
        }
        offset[e] = base;
        tile_off[e] = tiles;
        if (e == E - 1) {
            offset[E] = base + count[e];
            tile_off[E] = tiles + (count[e] + MOE_BM - 1) / MOE_BM;
        }
    }
    __syncthreads();
    for (i = 0; i < n; i += blockDim.x) {
        int       hit = i + threadIdx.x < n && expert[i + threadIdx.x] == e;
        unsigned  ballot = __ballot_sync(0xffffffffu, hit);

        if (lane == 0) {
            warp_n[warp] = __popc(ballot);
        }
        __syncthreads();
        before = base;
        for (j = 0; j < warp; j++) {
            before += warp_n[j];
        }
        mine = before + __popc(ballot & ((1u << lane) - 1));
        if (hit) {
            slot[i + threadIdx.x] = mine;
            row_token[mine] = (int32_t) ((i + threadIdx.x) / k);
        }
        __syncthreads();
        if (threadIdx.x == 0) {
            for (j = 0; j < (int) (blockDim.x >> 5); j++) {
                base += warp_n[j];
            }
        }
        __syncthreads();
    }
}

extern "C" cudaError_t
clef_k_moe_route(const clef_k_moe_args *a, cudaStream_t s)
{
    int64_t      n = (int64_t) a->T * a->k;
    cudaError_t  e;

    if (a->k < 1 || a->k > MOE_K_MAX || a->k > a->E) {
        return cudaErrorInvalidValue;
    }
    if (a->T <= 0) {
        return cudaSuccess;
    }
    route_kernel<<<cdiv(a->T, 128), 128, 0, s>>>(a->logits, a->T, a->E, a->k,
        a->renorm, a->expert, a->weight);
    count_kernel<<<a->E, 256, 0, s>>>(a->expert, n, a->count);
    place_kernel<<<a->E, 256, 0, s>>>(a->expert, n, a->k, a->E, a->count,
        a->offset, a->tile_off, a->slot, a->row_token);
    e = cudaGetLastError();
    return e;
}

int
clef_k_moe_max_tiles(int T, int k, int E)
{
    return (int) cdiv((int64_t) T * k, MOE_BM) + E;
}

/* ---- grouped GEMM ------------------------------------------------------ */

/*
 * D[r][0..N) = X[src(r)] . W_e^T for the grouped rows r of each expert e
 * (W_e = W + e N K, [N][K] row-major): block (x, y) takes row tile x of
 * the batch's tiles and columns y BN .. (tile_off: expert e's tiles
 * are [tile_off[e], tile_off[e + 1])), 64 x 64 outputs with four warps of
 * 16 rows each, K in steps of 32 in order.  src(r) = row_token[r] when
 * gathering (the router's input rows), else r.
 */
static __global__ void __launch_bounds__(128)
grouped_gemm_kernel(clef_k_moe_gemm_args a)
{
    __shared__ __align__(32) bf16   As[MOE_BM][MOE_LDS];
    __shared__ __align__(32) bf16   Bs[MOE_BN][MOE_LDS];
    __shared__ __align__(32) float  Cs[MOE_BM][MOE_LDC];
    wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::row_major>  fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::col_major>  fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float>               fc[4];
    int          tile = blockIdx.x, lo = 0, hi = a.E, e, r0, rows, c0;
    int          warp = threadIdx.x >> 5, j, k0;
    const bf16  *W;

    if (tile >= a.tile_off[a.E]) {
        return;
    }
    /* the expert of this tile: tile_off[e] <= tile < tile_off[e + 1] */
    while (hi - lo > 1) {
        int  mid = (lo + hi) / 2;

        if (a.tile_off[mid] <= tile) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    e = lo;
    r0 = a.offset[e] + (tile - a.tile_off[e]) * MOE_BM;
    rows = min(MOE_BM, a.offset[e + 1] - r0);
    c0 = blockIdx.y * MOE_BN;
    W = (const bf16 *) a.W + (int64_t) e * a.N * a.K;

    for (j = 0; j < 4; j++) {
        wmma::fill_fragment(fc[j], 0.0f);
    }
    for (k0 = 0; k0 < a.K; k0 += MOE_BK) {
        /* 64 x 32 of X and of W: 256 groups of 8 each, two per thread */
        for (j = threadIdx.x; j < 2 * MOE_BM * MOE_BK / 8; j += blockDim.x) {
            int    half = j >= MOE_BM * MOE_BK / 8;
            int    g = half ? j - MOE_BM * MOE_BK / 8 : j;
            int    r = g / (MOE_BK / 8), c = (g % (MOE_BK / 8)) * 8;
            uint4  u = make_uint4(0, 0, 0, 0);

            if (!half) {
                if (r < rows && k0 + c < a.K) {
                    int64_t  src = a.row_token != NULL ? a.row_token[r0 + r]
                                                       : r0 + r;

                    u = *reinterpret_cast<const uint4 *>(
                        (const bf16 *) a.X + src * a.ldx + k0 + c);
                }
                *reinterpret_cast<uint4 *>(&As[r][c]) = u;
            } else {
                if (c0 + r < a.N && k0 + c < a.K) {
                    u = *reinterpret_cast<const uint4 *>(
                        W + (int64_t) (c0 + r) * a.K + k0 + c);
                }
                *reinterpret_cast<uint4 *>(&Bs[r][c]) = u;
            }
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < MOE_BK; kk += 16) {
            wmma::load_matrix_sync(fa, &As[warp * 16][kk], MOE_LDS);
#pragma unroll
            for (j = 0; j < 4; j++) {
                wmma::load_matrix_sync(fb, &Bs[j * 16][kk], MOE_LDS);
                wmma::mma_sync(fc[j], fa, fb, fc[j]);
            }
        }
        __syncthreads();
    }
    for (j = 0; j < 4; j++) {
        wmma::store_matrix_sync(&Cs[warp * 16][j * 16], fc[j], MOE_LDC,
                                wmma::mem_row_major);
    }
    __syncthreads();
    for (j = threadIdx.x; j < MOE_BM * MOE_BN; j += blockDim.x) {
        int  r = j / MOE_BN, c = j % MOE_BN;

        if (r < rows && c0 + c < a.N) {
            ((bf16 *) a.D)[(int64_t) (r0 + r) * a.ldd + c0 + c] = tobf(Cs[r][c]);
        }
    }
}

extern "C" cudaError_t
clef_k_moe_gemm(const clef_k_moe_gemm_args *a, cudaStream_t s)
{
    dim3  grid;

    if (a->K % 8 || a->ldx % 8 || a->max_tiles <= 0
        || cdiv(a->N, MOE_BN) > 65535)
    {
        return a->max_tiles == 0 ? cudaSuccess : cudaErrorInvalidValue;
    }
    grid = dim3((unsigned) a->max_tiles, cdiv(a->N, MOE_BN));
    grouped_gemm_kernel<<<grid, 128, 0, s>>>(*a);
    return cudaGetLastError();
}

/* ---- combine ----------------------------------------------------------- */

/* hid[t] = bf16(hid[t] + sum_i weight[t][i] out[slot[t][i]]), the sum in
 * fp32 over the token's experts in increasing index. */
static __global__ void
combine_kernel(const bf16 *out, int ldo, const int32_t *slot,
    const float *weight, int k, bf16 *hid, int H)
{
    int64_t  t = blockIdx.x;
    float    acc;

    for (int h = threadIdx.x; h < H; h += blockDim.x) {
        acc = 0.0f;
        for (int i = 0; i < k; i++) {
            acc += bf(out[(int64_t) slot[t * k + i] * ldo + h])
                   * weight[t * k + i];
        }
        hid[t * H + h] = tobf(bf(hid[t * H + h]) + acc);
    }
}

extern "C" cudaError_t
clef_k_moe_combine(const clef_bf16 *out, int ldo, const int32_t *slot,
    const float *weight, int T, int k, clef_bf16 *hid, int H, cudaStream_t s)
{
    if (T > 0) {
        combine_kernel<<<T, 256, 0, s>>>((const bf16 *) out, ldo, slot, weight,
                                         k, (bf16 *) hid, H);
    }
    return cudaGetLastError();
}
