/*
 * Memory-bound kernels of the vision tower (docs/spec/backbone.md §5.2,
 * engine/cpu/model/vision.c is the reference): LayerNorm into the GEMMs' bf16
 * input, the patch embedding's bias with the resampled position table,
 * qkv bias with the 2D rotary, bias + GELU, the residual adds, and the
 * scatter of the merged features over the image-pad tokens.
 *
 * The residual stream is fp32 (the CPU tower's precision); what enters a
 * GEMM is bf16, as everywhere in this backend.  Every reduction is one
 * block over one row in a fixed order, so a patch's values depend on its
 * image alone (cuda/README.md, "Determinism").
 */
#include "common.cuh"

#define VLN_THREADS  256

/* ---- LayerNorm: fp32 rows -> bf16 ---------------------------------------- */

static __global__ void __launch_bounds__(VLN_THREADS)
vlayernorm_kernel(const float *x, const float *w, const float *b, bf16 *y,
    int n, float eps)
{
    __shared__ float  red[32];
    const float      *xr = x + (int64_t) blockIdx.x * n;
    bf16             *yr = y + (int64_t) blockIdx.x * n;
    float             s = 0.0f, mean, var, inv;

    for (int i = threadIdx.x; i < n; i += VLN_THREADS) {
        s += xr[i];
    }
    mean = block_sum(s, red) / (float) n;
    s = 0.0f;
    for (int i = threadIdx.x; i < n; i += VLN_THREADS) {
        float  d = xr[i] - mean;

        s += d * d;
    }
    var = block_sum(s, red) / (float) n;
    inv = rsqrtf(var + eps);
    for (int i = threadIdx.x; i < n; i += VLN_THREADS) {
        yr[i] = tobf((xr[i] - mean) * inv * w[i] + b[i]);
    }
}

extern "C" cudaError_t
clef_k_vlayernorm(const float *x, const float *w, const float *b, clef_bf16 *y,
    int rows, int n, float eps, cudaStream_t s)
{
    if (rows > 0) {
        vlayernorm_kernel<<<rows, VLN_THREADS, 0, s>>>(x, w, b, (bf16 *) y, n,
                                                       eps);
    }
    return cudaGetLastError();
}

/* ---- patch rows ---------------------------------------------------------- */

/* One block per patch.  The division is IEEE's (nvcc's default
 * -prec-div=true), so a value is the CPU's bit for bit before the bf16
 * rounding. */
static __global__ void
vpatchify_kernel(clef_k_patch_args a)
{
    int64_t      p = blockIdx.x;
    int          plane = a.ps * a.ps, n = 3 * a.temporal * plane;
    bf16        *dst = (bf16 *) a.rows + p * n;
    const bf16  *st;
    int32_t      k, r, col;
    int64_t      off, W;

    if (a.src[p] >= 0) {
        st = (const bf16 *) a.staged + (int64_t) a.src[p] * n;
        for (int e = threadIdx.x; e < n; e += blockDim.x) {
            dst[e] = st[e];
        }
        return;
    }
    k = a.img[p];
    r = a.rc[2 * p];
    col = a.rc[2 * p + 1];
    off = a.imeta[4 * k];
    W = a.imeta[4 * k + 3];
    for (int e = threadIdx.x; e < n; e += blockDim.x) {
        int      c = e / (a.temporal * plane), yx = e % plane;
        int      t = e / plane % a.temporal;
        int64_t  fr = t < a.imeta[4 * k + 2] ? t : a.imeta[4 * k + 2] - 1;
        int      y = yx / a.ps, x = yx % a.ps;
        uint8_t  px = a.rgb[off + fr * a.imeta[4 * k + 1]
                            + (((int64_t) r * a.ps + y) * W
                               + (int64_t) col * a.ps + x) * 3 + c];

        dst[e] = tobf(((float) px - a.inorm[6 * k + c]) / a.inorm[6 * k + 3 + c]);
    }
}

extern "C" cudaError_t
clef_k_vpatchify(const clef_k_patch_args *a, cudaStream_t s)
{
    if (a->P > 0) {
        vpatchify_kernel<<<a->P, 256, 0, s>>>(*a);
    }
    return cudaGetLastError();
}

/* ---- patch bias + resampled position embedding ------------------------ */

/* One block per patch; the four taps' sum in the CPU tower's order. */
static __global__ void
vpos_kernel(const bf16 *y, const float *bias, const float *pos,
    const int32_t *tap, const float *pw, float *x, int H)
{
    int64_t       p = blockIdx.x;
    const float  *e0 = pos + (int64_t) tap[4 * p] * H;
    const float  *e1 = pos + (int64_t) tap[4 * p + 1] * H;
    const float  *e2 = pos + (int64_t) tap[4 * p + 2] * H;
    const float  *e3 = pos + (int64_t) tap[4 * p + 3] * H;
    float         w0 = pw[4 * p], w1 = pw[4 * p + 1], w2 = pw[4 * p + 2];
    float         w3 = pw[4 * p + 3];

    for (int i = threadIdx.x; i < H; i += blockDim.x) {
        float  acc = e0[i] * w0;

        acc += e1[i] * w1;
        acc += e2[i] * w2;
        acc += e3[i] * w3;
        x[p * H + i] = (bf(y[p * H + i]) + bias[i]) + acc;
    }
}

extern "C" cudaError_t
clef_k_vpos_embed(const clef_bf16 *y, const float *bias, const float *pos,
    const int32_t *tap, const float *pw, float *x, int P, int H, cudaStream_t s)
{
    if (P > 0) {
        vpos_kernel<<<P, 256, 0, s>>>((const bf16 *) y, bias, pos, tap, pw, x, H);
    }
    return cudaGetLastError();
}

/* ---- qkv bias + 2D rotary ---------------------------------------------- */

/* One block per patch.  Thread u of [0, H) adds v's bias at column u and,
 * when u is in the first half of its head, turns the pair (u, u + hd/2) of
 * q and of k; the second-half columns are written by their partner, so no
 * two threads touch one element. */
static __global__ void
vqkv_rotary_kernel(bf16 *qkv, const float *bias, const int32_t *rc,
    const float *cos, const float *sin, int H, int hd)
{
    int64_t  p = blockIdx.x;
    bf16    *row = qkv + p * 3 * H;
    int      half = hd / 2, quarter = hd / 4, r = rc[2 * p], c = rc[2 * p + 1];

    for (int u = threadIdx.x; u < H; u += blockDim.x) {
        int  d = u % hd;

        row[2 * H + u] = tobf(bf(row[2 * H + u]) + bias[2 * H + u]);
        if (d < half) {
            int    at = d < quarter ? r : c, f = d < quarter ? d : d - quarter;
            float  cs = cos[(int64_t) at * quarter + f];
            float  sn = sin[(int64_t) at * quarter + f];

#pragma unroll
            for (int k = 0; k < 2; k++) {
                int    i = k * H + u, j = i + half;
                float  a = rbf(bf(row[i]) + bias[i]);
                float  b2 = rbf(bf(row[j]) + bias[j]);

                row[i] = tobf(a * cs - b2 * sn);
                row[j] = tobf(b2 * cs + a * sn);
            }
        }
    }
}

extern "C" cudaError_t
clef_k_vqkv_rotary(clef_bf16 *qkv, const float *bias, const int32_t *rc,
    const float *cos, const float *sin, int P, int heads, int hd,
    cudaStream_t s)
{
    if (hd % 4 != 0) {
        return cudaErrorInvalidValue;
    }
    if (P > 0) {
        vqkv_rotary_kernel<<<P, 256, 0, s>>>((bf16 *) qkv, bias, rc, cos, sin,
                                             heads * hd, hd);
    }
    return cudaGetLastError();
}

/* ---- bias + GELU ---------------------------------------------------------- */

static __global__ void
vbias_gelu_kernel(bf16 *y, const float *b, int64_t total, int n, int tanh_form)
{
    int64_t  i = (int64_t) blockIdx.x * blockDim.x + threadIdx.x;
    float    v;

    if (i >= total) {
        return;
    }
    v = bf(y[i]) + b[i % n];
    if (tanh_form) {
        /* torch's gelu(approximate="tanh") */
        v = 0.5f * v * (1.0f + tanhf(0.7978845608028654f
                                     * (v + 0.044715f * v * v * v)));
    } else {
        v = 0.5f * v * (1.0f + erff(v * 0.7071067811865476f));
    }
    y[i] = tobf(v);
}

extern "C" cudaError_t
clef_k_vbias_gelu(clef_bf16 *y, const float *b, int rows, int n, int tanh_form,
    cudaStream_t s)
{
    int64_t  total = (int64_t) rows * n;

    if (total > 0) {
        vbias_gelu_kernel<<<cdiv(total, 256), 256, 0, s>>>((bf16 *) y, b, total,
                                                           n, tanh_form);
    }
    return cudaGetLastError();
}

/* ---- residual ------------------------------------------------------------- */

static __global__ void
vresidual_kernel(float *x, const bf16 *y, const float *b, int64_t total, int n)
{
    int64_t  i = (int64_t) blockIdx.x * blockDim.x + threadIdx.x;

    if (i < total) {
        x[i] += bf(y[i]) + b[i % n];
    }
}

extern "C" cudaError_t
clef_k_vresidual(float *x, const clef_bf16 *y, const float *b, int rows, int n,
    cudaStream_t s)
{
    int64_t  total = (int64_t) rows * n;

    if (total > 0) {
        vresidual_kernel<<<cdiv(total, 256), 256, 0, s>>>(x, (const bf16 *) y, b,
                                                          total, n);
    }
    return cudaGetLastError();
}

/* ---- merged features over the image pads ------------------------------------ */

static __global__ void
vscatter_kernel(const bf16 *f, const float *b, const int32_t *dst, bf16 *hid,
    int n, int add)
{
    int64_t  j = blockIdx.x, t = dst[j];

    if (t < 0) {
        return;
    }
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        float  v = bf(f[j * n + i]) + b[i];

        hid[t * n + i] = add ? tobf(bf(hid[t * n + i]) + rbf(v)) : tobf(v);
    }
}

static cudaError_t
vscatter(const clef_bf16 *f, const float *b, const int32_t *dst,
    clef_bf16 *hid, int rows, int n, int add, cudaStream_t s)
{
    if (rows > 0) {
        vscatter_kernel<<<rows, 256, 0, s>>>((const bf16 *) f, b, dst,
                                             (bf16 *) hid, n, add);
    }
    return cudaGetLastError();
}

extern "C" cudaError_t
clef_k_vscatter(const clef_bf16 *f, const float *b, const int32_t *dst,
    clef_bf16 *hid, int rows, int n, cudaStream_t s)
{
    return vscatter(f, b, dst, hid, rows, n, 0, s);
}

extern "C" cudaError_t
clef_k_vscatter_add(const clef_bf16 *f, const float *b, const int32_t *dst,
    clef_bf16 *hid, int rows, int n, cudaStream_t s)
{
    return vscatter(f, b, dst, hid, rows, n, 1, s);
}
