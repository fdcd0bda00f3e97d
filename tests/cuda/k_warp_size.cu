// `warpSize` in kernels (nvcc writes PTX's WARP_SZ): as a loop bound, in
// arithmetic and in a shuffle reduction, as NVIDIA's reduction and
// shfl_scan samples use it.
#include <cuda_runtime.h>

#include "check.h"

__global__ void warp_facts(int *out) {
    const int lane = threadIdx.x % warpSize;
    const int warp = threadIdx.x / warpSize;
    int sum = lane;
    for (int offset = warpSize / 2; offset > 0; offset /= 2) {
        sum += __shfl_down_sync(0xffffffffu, sum, offset);
    }
    int count = 0;
    for (int i = 0; i < warpSize; i++) count++;
    if (lane == 0) {
        out[3 * warp] = warpSize;
        out[3 * warp + 1] = sum;
        out[3 * warp + 2] = count;
    }
}

int main() {
    int *dev = nullptr;
    CHECK(cudaMalloc(&dev, 4 * 3 * sizeof(int)));
    warp_facts<<<1, 128>>>(dev);
    CHECK(cudaGetLastError());
    int host[12];
    CHECK(cudaMemcpy(host, dev, sizeof host, cudaMemcpyDeviceToHost));
    for (int w = 0; w < 4; w++) {
        EXPECT(host[3 * w] == 32, "warpSize %d", host[3 * w]);
        EXPECT(host[3 * w + 1] == 496, "lane sum %d", host[3 * w + 1]);
        EXPECT(host[3 * w + 2] == 32, "loop count %d", host[3 * w + 2]);
    }
    printf("warpSize in kernels: ok\n");
    printf("PASS\n");
    return 0;
}
