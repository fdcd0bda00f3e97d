// Mapped page-locked memory (zero copy, as NVIDIA's simpleZeroCopy uses it):
// cudaHostAlloc(cudaHostAllocMapped), the device pointer from
// cudaHostGetDevicePointer, a kernel that reads and writes host memory, and
// the host seeing its results after a synchronization, twice.
#include <cuda_runtime.h>

#include "check.h"

__global__ void vector_add(const float *a, const float *b, float *c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

int main() {
    int can = 0;
    CHECK(cudaDeviceGetAttribute(&can, cudaDevAttrCanMapHostMemory, 0));
    EXPECT(can == 1, "the device maps host memory");
    CHECK(cudaSetDeviceFlags(cudaDeviceMapHost));
    const int n = 1 << 20;
    float *a, *b, *c;
    CHECK(cudaHostAlloc(&a, n * sizeof(float), cudaHostAllocMapped));
    CHECK(cudaHostAlloc(&b, n * sizeof(float), cudaHostAllocMapped | cudaHostAllocPortable));
    CHECK(cudaHostAlloc(&c, n * sizeof(float), cudaHostAllocMapped));
    unsigned flags = 0;
    CHECK(cudaHostGetFlags(&flags, b));
    EXPECT(flags == (cudaHostAllocMapped | cudaHostAllocPortable), "flags %u", flags);
    float *da, *db, *dc;
    CHECK(cudaHostGetDevicePointer(&da, a, 0));
    CHECK(cudaHostGetDevicePointer(&db, b, 0));
    CHECK(cudaHostGetDevicePointer(&dc, c, 0));
    for (int round = 1; round <= 2; ++round) {
        for (int i = 0; i < n; ++i) {
            a[i] = (float)i * round;
            b[i] = 0.5f * round;
        }
        vector_add<<<(n + 255) / 256, 256>>>(da, db, dc, n);
        CHECK(cudaGetLastError());
        CHECK(cudaDeviceSynchronize());
        for (int i = 0; i < n; ++i) {
            EXPECT(c[i] == (float)i * round + 0.5f * round, "round %d: c[%d] = %f", round, i, c[i]);
        }
        printf("zero-copy vector add, round %d: ok\n", round);
    }
    CHECK(cudaFreeHost(a));
    CHECK(cudaFreeHost(b));
    CHECK(cudaFreeHost(c));
    printf("PASS\n");
    return 0;
}
