/*
 * Device helpers shared by the CUDA backend's translation units.
 */
#ifndef CLEF_CUDA_COMMON_CUH
#define CLEF_CUDA_COMMON_CUH

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "kernels.h"

typedef __nv_bfloat16   bf16;
typedef __nv_bfloat162  bf162;

static __device__ __forceinline__ float
bf(bf16 x)
{
    return __bfloat162float(x);
}

static __device__ __forceinline__ bf16
tobf(float x)
{
    return __float2bfloat16_rn(x);
}

/* Round through bf16, the reference's storage precision. */
static __device__ __forceinline__ float
rbf(float x)
{
    return __bfloat162float(__float2bfloat16_rn(x));
}

static __device__ __forceinline__ float
silu(float x)
{
    return x / (1.0f + expf(-x));
}

static __device__ __forceinline__ float
warp_sum(float v)
{
    v += __shfl_xor_sync(0xffffffffu, v, 16);
    v += __shfl_xor_sync(0xffffffffu, v, 8);
    v += __shfl_xor_sync(0xffffffffu, v, 4);
    v += __shfl_xor_sync(0xffffffffu, v, 2);
    v += __shfl_xor_sync(0xffffffffu, v, 1);
    return v;
}

static __device__ __forceinline__ float
warp_max(float v)
{
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 16));
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 8));
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 4));
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 2));
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 1));
    return v;
}

/* Sum over the block (blockDim.x a multiple of 32, at most 1024); every
 * thread gets the result.  red holds 32 floats; callers that reduce twice
 * in a row need the __syncthreads() at the end. */
static __device__ __forceinline__ float
block_sum(float v, float *red)
{
    int  lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    int  nw = blockDim.x >> 5;

    v = warp_sum(v);
    if (lane == 0) {
        red[warp] = v;
    }
    __syncthreads();
    v = lane < nw ? red[lane] : 0.0f;
    v = warp_sum(v);
    __syncthreads();
    return v;
}

static __device__ __forceinline__ float
block_max(float v, float *red)
{
    int  lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    int  nw = blockDim.x >> 5;

    v = warp_max(v);
    if (lane == 0) {
        red[warp] = v;
    }
    __syncthreads();
    v = lane < nw ? red[lane] : -INFINITY;
    v = warp_max(v);
    __syncthreads();
    return v;
}

/* 8 bf16 <-> 8 floats through one 16-byte access. */
static __device__ __forceinline__ void
load8(const bf16 *p, float *f)
{
    uint4        u = *reinterpret_cast<const uint4 *>(p);
    const bf162 *h = reinterpret_cast<const bf162 *>(&u);

#pragma unroll
    for (int i = 0; i < 4; i++) {
        float2  t = __bfloat1622float2(h[i]);

        f[2 * i] = t.x;
        f[2 * i + 1] = t.y;
    }
}

static __device__ __forceinline__ void
store8(bf16 *p, const float *f)
{
    uint4   u;
    bf162  *h = reinterpret_cast<bf162 *>(&u);

#pragma unroll
    for (int i = 0; i < 4; i++) {
        h[i] = __floats2bfloat162_rn(f[2 * i], f[2 * i + 1]);
    }
    *reinterpret_cast<uint4 *>(p) = u;
}

static inline unsigned
cdiv(int64_t a, int64_t b)
{
    return (unsigned) ((a + b - 1) / b);
}

/* Lets `kernel` launch with `dynamic` bytes of dynamic shared memory.  The
 * device's opt-in limit bounds static and dynamic shared memory together
 * (cudaFuncAttributeMaxDynamicSharedMemorySize + sharedSizeBytes <=
 * cudaDevAttrMaxSharedMemoryPerBlockOptin): asking for the whole opt-in
 * fails with cudaErrorInvalidValue as soon as the kernel has one static
 * __shared__ array.  dynamic < 0 asks for all that is left beside the
 * static part.  *granted (may be NULL) receives what was set. */
template <typename K>
static cudaError_t
smem_allow(K *kernel, long dynamic, int *granted)
{
    cudaFuncAttributes  fa;
    cudaError_t         e;
    long                room;
    int                 dev, optin;

    e = cudaGetDevice(&dev);
    if (e == cudaSuccess) {
        e = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);
    }
    if (e == cudaSuccess) {
        e = cudaFuncGetAttributes(&fa, kernel);
    }
    if (e != cudaSuccess) {
        return e;
    }
    room = (long) optin - (long) fa.sharedSizeBytes;
    if (dynamic < 0) {
        dynamic = room;
    }
    if (dynamic > room) {
        return cudaErrorInvalidValue;       /* cannot fit on this device */
    }
    e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             (int) dynamic);
    if (e == cudaSuccess && granted != NULL) {
        *granted = (int) dynamic;
    }
    return e;
}

#endif
