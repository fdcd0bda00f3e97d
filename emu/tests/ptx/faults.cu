#include <cassert>
// Kernels that fail: out-of-bounds access, an infinite loop, a trap, an assert.
extern "C" __global__ void out_of_bounds(int *p, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    p[i + n] = i; // writes past the end when n == allocation length
}

extern "C" __global__ void read_null(const int *p, int *out) { out[threadIdx.x] = p[threadIdx.x]; }

extern "C" __global__ void spin(volatile int *flag) {
    while (*flag == 0) {}
}

extern "C" __global__ void shared_oob(int *out, int idx) {
    __shared__ int s[32];
    s[threadIdx.x] = threadIdx.x;
    __syncthreads();
    out[threadIdx.x] = s[idx];
}

extern "C" __global__ void do_trap(int x) {
    if (x == 3) __trap();
}

extern "C" __global__ void do_assert(int x) { assert(x != 3); }
