// Device code of the driver-API test programs (d_vector_add, d_contexts,
// d_mixed, d_dlopen). The harness compiles it, without any host code, into
//   kernels.ptx             nvcc -ptx -arch=compute_80
//   kernels-ptx.fatbin      nvcc -fatbin -gencode arch=compute_80,code=compute_80
//   kernels-full.fatbin     nvcc -fatbin -gencode arch=compute_80,code=[sm_80,compute_80]
// which the programs load at run time with cuModuleLoadData, cuModuleLoad and
// cuModuleLoadFatBinary. Everything is `extern "C"`, so the programs find the
// kernels and variables by their plain names.

#include <cooperative_groups.h>

extern "C" {

// Read and written by the host through cuModuleGetGlobal.
__device__ float g_scale = 1.0f;
__device__ int g_counter = 42;
__constant__ float c_bias[4] = {0.5f, 1.5f, 2.5f, 3.5f};

__global__ void vector_add(const float *a, const float *b, float *c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

// Parameter layout: n at 0, alpha at 4, x at 8, y at 16; 24 bytes in all
// (launched with the `extra` buffer form).
__global__ void axpy(int n, float alpha, const float *x, float *y) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = alpha * x[i] + y[i];
}

// out[i] = in[i] * g_scale + c_bias[i % 4]; thread 0 of every block adds one
// to g_counter.
__global__ void scale_bias(const float *in, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i] * g_scale + c_bias[i & 3];
    if (threadIdx.x == 0) atomicAdd(&g_counter, 1);
}

// out[i] = out[i] * factor + i.
__global__ void mul_add_index(int *out, int n, int factor) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = out[i] * factor + i;
}

// out[i] = in[(i + 1) % n] + 1 after a grid-wide barrier: right only in a
// cooperative launch (cuLaunchCooperativeKernel), where every block is
// resident and grid.sync() waits for all of them.
__global__ void rotate_after_sync(const int *in, int *tmp, int *out, int n) {
    cooperative_groups::grid_group grid = cooperative_groups::this_grid();
    for (int i = grid.thread_rank(); i < n; i += grid.size()) tmp[i] = in[i] + 1;
    grid.sync();
    for (int i = grid.thread_rank(); i < n; i += grid.size()) out[i] = tmp[(i + 1) % n];
}

}  // extern "C"
