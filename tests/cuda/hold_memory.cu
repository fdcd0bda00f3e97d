// Holds 64 MiB of device memory until its standard input closes, for the
// `rcud smi` test: prints `holding <bytes> pid <pid>` once the memory is
// allocated and written, then `PASS` after freeing it.
#include <cuda_runtime.h>
#include <unistd.h>

#include "check.h"

__global__ void fill(unsigned *p, size_t n, unsigned value) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) p[i] = value + (unsigned)i;
}

int main() {
    const size_t bytes = 64u << 20;
    const size_t n = 1024;
    unsigned *p = nullptr;
    CHECK(cudaMalloc(&p, bytes));
    CHECK(cudaMemset(p, 0, bytes));
    fill<<<(n + 255) / 256, 256>>>(p, n, 7);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    unsigned first = 0;
    CHECK(cudaMemcpy(&first, p, sizeof first, cudaMemcpyDeviceToHost));
    EXPECT(first == 7, "fill wrote %u, expected 7", first);
    printf("holding %zu pid %d\n", bytes, (int)getpid());
    fflush(stdout);
    char buf[64];
    while (read(0, buf, sizeof buf) > 0) {
    }
    CHECK(cudaFree(p));
    printf("PASS\n");
    return 0;
}
