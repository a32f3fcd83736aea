/*
 * Memory-bound kernels of Clef Omni's audio tower (engine/cpu/model/audio.c
 * is the reference; chunks and windows are backend/audio_layout.h's): the
 * first convolution with its bias and GELU, the im2col rows of the other
 * two (their products are GEMMs), the (channel, mel) flattening of the
 * kept time steps, the sinusoidal positions, and a bias add.
 *
 * Activations are channel-last [chunk][h][w][C] in bf16, as every GEMM
 * input of this backend; a chunk's valid width at each stage is its own
 * (its record's padding), and everything past it is read as the zeros the
 * reference's convolution pads with.  Each value depends on its chunk
 * alone.
 */
#include "common.cuh"

/* a stride-2, padding-1 convolution's output side for input side n */
static __host__ __device__ __forceinline__ int
half_side(int n)
{
    return (n - 1) / 2 + 1;
}

/* ---- the first convolution ---------------------------------------------- */

/* One thread per output channel value: chunk ch, mel oh, time ow, channel
 * c; feat [nc][mels][w0] fp32, zero past the chunk's frames. */
static __global__ void
aconv1_kernel(const float *feat, const int32_t *cw, const float *w,
    const float *b, bf16 *out, int mels, int w0, int C, int64_t total)
{
    int64_t  i = (int64_t) blockIdx.x * blockDim.x + threadIdx.x, r;
    int      c, ow, oh, ch, h1 = half_side(mels), w1 = half_side(w0), valid;
    float    acc = 0.0f, v;

    if (i >= total) {
        return;
    }
    c = (int) (i % C);
    r = i / C;
    ow = (int) (r % w1);
    r /= w1;
    oh = (int) (r % h1);
    ch = (int) (r / h1);
    valid = cw[ch];
    if (ow >= half_side(valid)) {
        out[i] = tobf(0.0f);
        return;
    }
    for (int kh = 0; kh < 3; kh++) {
        int  h = 2 * oh - 1 + kh;

        for (int kw = 0; kw < 3; kw++) {
            int  t = 2 * ow - 1 + kw;

            if (h >= 0 && h < mels && t >= 0 && t < valid) {
                acc += w[c * 9 + kh * 3 + kw]
                       * feat[((int64_t) ch * mels + h) * w0 + t];
            }
        }
    }
    v = acc + b[c];
    out[i] = tobf(0.5f * v * (1.0f + erff(v * 0.7071067811865476f)));
}

extern "C" cudaError_t
clef_k_aconv1(const float *feat, const int32_t *cw, const float *w,
    const float *b, clef_bf16 *out, int nc, int mels, int w0, int C,
    cudaStream_t s)
{
    int64_t  total = (int64_t) nc * half_side(mels) * half_side(w0) * C;

    if (total > 0) {
        aconv1_kernel<<<cdiv(total, 256), 256, 0, s>>>(feat, cw, w, b,
                                                       (bf16 *) out, mels, w0,
                                                       C, total);
    }
    return cudaGetLastError();
}

/* ---- im2col ---------------------------------------------------------------- */

/* cols[ch][oh][ow][c * 9 + kh * 3 + kw] = x[ch][2oh-1+kh][2ow-1+kw][c], zero
 * outside the chunk's valid input width (its width halved `level` times)
 * and outside x. */
static __global__ void
aim2col_kernel(const bf16 *x, const int32_t *cw, int level, int h, int w,
    int C, bf16 *cols, int64_t total)
{
    int64_t  i = (int64_t) blockIdx.x * blockDim.x + threadIdx.x, r;
    int      k9 = 9 * C, j, c, kk, kh, kw, ow, oh, ch, valid, hi, ti;
    int      ho = half_side(h), wo = half_side(w);

    if (i >= total) {
        return;
    }
    j = (int) (i % k9);
    r = i / k9;
    ow = (int) (r % wo);
    r /= wo;
    oh = (int) (r % ho);
    ch = (int) (r / ho);
    c = j / 9;
    kk = j % 9;
    kh = kk / 3;
    kw = kk % 3;
    valid = cw[ch];
    for (int l = 0; l < level; l++) {
        valid = half_side(valid);
    }
    hi = 2 * oh - 1 + kh;
    ti = 2 * ow - 1 + kw;
    cols[i] = hi >= 0 && hi < h && ti >= 0 && ti < valid && ti < w
              ? x[(((int64_t) ch * h + hi) * w + ti) * C + c] : tobf(0.0f);
}

extern "C" cudaError_t
clef_k_aim2col(const clef_bf16 *x, const int32_t *cw, int level, int nc,
    int h, int w, int C, clef_bf16 *cols, cudaStream_t s)
{
    int64_t  total = (int64_t) nc * half_side(h) * half_side(w) * 9 * C;

    if (total > 0) {
        aim2col_kernel<<<cdiv(total, 256), 256, 0, s>>>((const bf16 *) x, cw,
                                                        level, h, w, C,
                                                        (bf16 *) cols, total);
    }
    return cudaGetLastError();
}

/* ---- the kept steps, flattened ------------------------------------------- */

/* flat[r][c * F + f] = act3[ch - c0][f][t][c] for row r = (ch, t) of
 * rowmeta: act3 holds chunks c0 onwards. */
static __global__ void
aflatten_kernel(const bf16 *act3, const int32_t *rowmeta, int c0, int F,
    int w3, int C, bf16 *flat, int64_t total)
{
    int64_t  i = (int64_t) blockIdx.x * blockDim.x + threadIdx.x, r;
    int      j, c, f, ch, t;

    if (i >= total) {
        return;
    }
    j = (int) (i % ((int64_t) C * F));
    r = i / ((int64_t) C * F);
    c = j / F;
    f = j % F;
    ch = rowmeta[2 * r] - c0;
    t = rowmeta[2 * r + 1];
    flat[i] = act3[(((int64_t) ch * F + f) * w3 + t) * C + c];
}

extern "C" cudaError_t
clef_k_aflatten(const clef_bf16 *act3, const int32_t *rowmeta, int P,
    int c0, int F, int w3, int C, clef_bf16 *flat, cudaStream_t s)
{
    int64_t  total = (int64_t) P * C * F;

    if (total > 0) {
        aflatten_kernel<<<cdiv(total, 256), 256, 0, s>>>((const bf16 *) act3,
                                                         rowmeta, c0, F, w3,
                                                         C, (bf16 *) flat,
                                                         total);
    }
    return cudaGetLastError();
}

/* ---- positions, bias ------------------------------------------------------ */

static __global__ void
apos_kernel(const bf16 *y, const float *pos, const int32_t *rowmeta,
    float *x, int n, int64_t total)
{
    int64_t  i = (int64_t) blockIdx.x * blockDim.x + threadIdx.x;

    if (i < total) {
        x[i] = bf(y[i]) + pos[(int64_t) rowmeta[2 * (i / n) + 1] * n + i % n];
    }
}

extern "C" cudaError_t
clef_k_apos(const clef_bf16 *y, const float *pos, const int32_t *rowmeta,
    float *x, int P, int n, cudaStream_t s)
{
    int64_t  total = (int64_t) P * n;

    if (total > 0) {
        apos_kernel<<<cdiv(total, 256), 256, 0, s>>>((const bf16 *) y, pos,
                                                     rowmeta, x, n, total);
    }
    return cudaGetLastError();
}

static __global__ void
abias_kernel(bf16 *y, const float *b, int n, int64_t total)
{
    int64_t  i = (int64_t) blockIdx.x * blockDim.x + threadIdx.x;

    if (i < total) {
        y[i] = tobf(bf(y[i]) + b[i % n]);
    }
}

extern "C" cudaError_t
clef_k_abias(clef_bf16 *y, const float *b, int rows, int n, cudaStream_t s)
{
    int64_t  total = (int64_t) rows * n;

    if (total > 0) {
        abias_kernel<<<cdiv(total, 256), 256, 0, s>>>((bf16 *) y, b, n, total);
    }
    return cudaGetLastError();
}
