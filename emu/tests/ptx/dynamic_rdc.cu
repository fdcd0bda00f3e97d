// Dynamic parallelism: kernels launching kernels (built with -rdc=true).
#include <cstdio>

__global__ void fill(int *a, int n, int v) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) a[i] = a[i] * 10 + v;
}

// Block b launches a child over its slice, then a tail launch that must run
// after it: every element ends as (0 * 10 + 1) * 10 + 2 = 12.
extern "C" __global__ void parent(int *a, int per_block) {
    if (threadIdx.x == 0) {
        int *slice = a + blockIdx.x * per_block;
        cudaStream_t s;
        cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
        fill<<<(per_block + 31) / 32, 32, 0, s>>>(slice, per_block, 1);
        cudaStreamDestroy(s);
        fill<<<(per_block + 31) / 32, 32, 0, cudaStreamTailLaunch>>>(slice, per_block, 2);
    }
}

// Recursion: every grid counts itself and launches `fan` children until
// `depth` reaches `max_depth`; a launch the device refuses records its error.
extern "C" __global__ void recurse(int *count, int *errors, int depth, int max_depth, int fan) {
    atomicAdd(&count[depth], 1);
    if (threadIdx.x == 0 && blockIdx.x == 0 && depth < max_depth) {
        for (int i = 0; i < fan; ++i) recurse<<<1, 1>>>(count, errors, depth + 1, max_depth, fan);
        cudaError_t e = cudaGetLastError();
        if (e != cudaSuccess) atomicAdd(&errors[depth], 1);
    }
}

// printf from a child appears after the parent's.
extern "C" __global__ void hello_child(int from) { printf("child of block %d\n", from); }
extern "C" __global__ void hello_parent() {
    printf("parent block %d\n", blockIdx.x);
    hello_child<<<1, 1>>>(blockIdx.x);
}

// A launch with a bad configuration fails in the parent, which goes on.
extern "C" __global__ void bad_child_config(int *out) {
    fill<<<1, 2048>>>(out, 1, 5);
    out[1] = (int)cudaGetLastError();
}

// The device runtime's cudaMemcpyAsync and cudaMemsetAsync, in stream order
// with a child launch: fill 7s, copy them to `b`, then zero the first half
// of `a`.
extern "C" __global__ void copy_after_child(int *a, int *b, int n) {
    if (threadIdx.x == 0) {
        fill<<<1, 64>>>(a, n, 7);
        cudaMemcpyAsync(b, a, n * sizeof(int), cudaMemcpyDeviceToDevice, 0);
        cudaMemsetAsync(a, 0, n / 2 * sizeof(int), 0);
    }
}

// The device runtime's cudaGetErrorString: a string in device memory.
extern "C" __global__ void error_string(char *out) {
    const char *s = cudaGetErrorString(cudaErrorInvalidValue);
    int i = 0;
    for (; s[i] != 0 && i < 63; ++i) out[i] = s[i];
    out[i] = 0;
}
