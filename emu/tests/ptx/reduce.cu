// Sum reduction: grid-stride accumulation, warp shuffles, dynamic shared memory.
__inline__ __device__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    return v;
}

extern "C" __global__ void reduce_sum(const float *in, float *out, int n) {
    extern __shared__ float partial[];
    float v = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        v += in[i];
    v = warp_sum(v);
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) partial[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < (blockDim.x + 31) / 32 ? partial[lane] : 0.0f;
        v = warp_sum(v);
        if (lane == 0) out[blockIdx.x] = v;
    }
}

// Integer reduction with the classic shared-memory tree and __syncthreads_count.
extern "C" __global__ void reduce_tree(const int *in, long long *out, int *positives, int n) {
    extern __shared__ long long sdata[];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int x = i < n ? in[i] : 0;
    sdata[threadIdx.x] = x;
    int count = __syncthreads_count(x > 0);
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sdata[threadIdx.x] += sdata[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) { out[blockIdx.x] = sdata[0]; positives[blockIdx.x] = count; }
}
