// Separable compilation (`nvcc -rdc=true`, NVIDIA's CMake default for the
// samples): a kernel calls a __device__ function and reads an extern
// __device__ variable and an extern __constant__ table defined in another
// translation unit (lib.cu), linked by the device linker. The device-
// linked image holds SASS only; rcud links the objects' PTX itself.
#include <cuda_runtime.h>

#include "../check.h"

extern __device__ int scale;
extern __constant__ int offsets[4];
__device__ int twice(int x);
__device__ int count_calls();

__global__ void apply(int *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = twice(i) * scale + offsets[i % 4];
    if (i == 0) count_calls();
}

int main() {
    const int n = 1000;
    int *dev = nullptr;
    CHECK(cudaMalloc(&dev, n * sizeof(int)));
    int host_offsets[4] = {1, 2, 3, 4};
    CHECK(cudaMemcpyToSymbol(offsets, host_offsets, sizeof host_offsets));
    apply<<<(n + 127) / 128, 128>>>(dev, n);
    CHECK(cudaGetLastError());
    int host[n];
    CHECK(cudaMemcpy(host, dev, sizeof host, cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; i++) {
        EXPECT(host[i] == 2 * i * 3 + (i % 4) + 1, "element %d is %d", i, host[i]);
    }
    int s = 0;
    CHECK(cudaMemcpyFromSymbol(&s, scale, sizeof s));
    EXPECT(s == 3, "scale read back as %d", s);
    printf("separate translation units linked: ok\n");
    printf("PASS\n");
    return 0;
}
