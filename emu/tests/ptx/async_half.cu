#include <cuda_fp16.h>
#include <cuda_pipeline.h>
// Half-precision atomics and asynchronous global-to-shared copies (sm_80).
extern "C" __global__ void half_atomics_and_cp_async(__half *h, __half2 *h2, float *dst,
                                                     const float *src) {
    atomicAdd(h, __float2half(1.0f));
    atomicAdd(h2, __floats2half2_rn(1.0f, 2.0f));
    __shared__ float4 buf[32];
    __pipeline_memcpy_async(&buf[threadIdx.x], &((const float4 *)src)[threadIdx.x], 16);
    __pipeline_commit();
    __pipeline_wait_prior(0);
    __syncthreads();
    dst[blockIdx.x * 32 + threadIdx.x] = buf[31 - threadIdx.x].x + buf[threadIdx.x].w;
}
