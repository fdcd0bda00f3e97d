// Smallest useful CUDA program for tracing what the runtime asks of the
// driver: device count, an allocation, a kernel launch, a copy back.  Every
// step prints its cudaError_t instead of stopping, so a trace shows how far
// the runtime gets and what it reports.
#include <cuda_runtime.h>
#include <cstdio>

__global__ void fill(int *out, int v) { out[threadIdx.x] = v + threadIdx.x; }

static void report(const char *what, cudaError_t e) {
    std::printf("trace_min: %-28s -> %d (%s)\n", what, (int)e, cudaGetErrorName(e));
    std::fflush(stdout);
}

int main() {
    int n = -1;
    report("cudaGetDeviceCount", cudaGetDeviceCount(&n));
    std::printf("trace_min: device count %d\n", n);
    int *d = nullptr;
    report("cudaMalloc", cudaMalloc(&d, 32 * sizeof(int)));
    fill<<<1, 32>>>(d, 100);
    report("kernel launch (GetLastError)", cudaGetLastError());
    int h[32] = {0};
    report("cudaMemcpy DtoH", cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
    std::printf("trace_min: h[0]=%d h[31]=%d (expect 100, 131 on a real GPU)\n", h[0], h[31]);
    report("cudaFree", cudaFree(d));
    return 0;
}
