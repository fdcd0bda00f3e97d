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
