// Kernel errors, one case per process (argv[1] selects it):
//
// (default, or "fault") A kernel writes 4 GiB past the start of its 1 KiB
//   allocation. The launch itself succeeds; cudaDeviceSynchronize reports
//   cudaErrorIllegalAddress, and the error is sticky: later calls
//   (cudaMalloc, cudaMemcpy, cudaMemset, a launch, cudaDeviceSynchronize)
//   return it too. Prints:
//     `launch -> cudaSuccess`
//     `cudaDeviceSynchronize -> cudaErrorIllegalAddress`
//     `cudaMalloc after the fault -> cudaErrorIllegalAddress`
//     `cudaMemcpy after the fault -> cudaErrorIllegalAddress`
//     `cudaMemset after the fault -> cudaErrorIllegalAddress`
//     `cudaDeviceSynchronize again -> cudaErrorIllegalAddress`
//
// ("config") Invalid launch configurations: 2048 threads per block, a block
//   z dimension of 65, a grid y dimension of 65536, an empty grid, and 2048
//   threads through cudaLaunchKernel. Each is reported by cudaGetLastError
//   right after the launch (or returned by cudaLaunchKernel), is not sticky,
//   and the device keeps working. Prints:
//     `block of 2048 threads -> cudaErrorInvalidConfiguration`
//     `cudaGetLastError again -> cudaSuccess`
//     `cudaDeviceSynchronize -> cudaSuccess`
//     `block z of 65 -> cudaErrorInvalidConfiguration`
//     `grid y of 65536 -> cudaErrorInvalidConfiguration`
//     `empty grid -> cudaErrorInvalidConfiguration`
//     `cudaLaunchKernel with 2048 threads -> cudaErrorInvalidConfiguration`
//     `after the invalid configurations: launch ok`
//
// Self-checking: `FAIL: <reason>` and exit status 1 on any mismatch, `PASS` as
// the last line on success.

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "check.h"

__global__ void write_at(int *p, size_t index, int value) { p[index] = value; }

__global__ void fill(int *p, int n, int value) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] = value + i;
}

static int fault() {
    int *p = NULL, *other = NULL;
    CHECK(cudaMalloc(&p, 1024));
    CHECK(cudaMalloc(&other, 1024));
    int host[256];
    memset(host, 0, sizeof host);

    // A write far outside any allocation.
    write_at<<<1, 1>>>(p, (size_t)1 << 30, 1);
    EXPECT_ERR_AS("launch", cudaGetLastError(), cudaSuccess);
    EXPECT_ERR_AS("cudaDeviceSynchronize", cudaDeviceSynchronize(), cudaErrorIllegalAddress);

    // Sticky: everything that touches the device fails the same way.
    void *q = NULL;
    EXPECT_ERR_AS("cudaMalloc after the fault", cudaMalloc(&q, 1024), cudaErrorIllegalAddress);
    EXPECT_ERR_AS("cudaMemcpy after the fault",
                  cudaMemcpy(other, host, sizeof host, cudaMemcpyHostToDevice),
                  cudaErrorIllegalAddress);
    EXPECT_ERR_AS("cudaMemset after the fault", cudaMemset(other, 0, 1024),
                  cudaErrorIllegalAddress);
    fill<<<1, 32>>>(other, 32, 0);
    (void)cudaGetLastError();
    EXPECT_ERR_AS("cudaDeviceSynchronize again", cudaDeviceSynchronize(),
                  cudaErrorIllegalAddress);
    printf("PASS\n");
    return 0;
}

// A launch that must work, checked end to end.
static void good_launch(const char *when) {
    const int n = 100;
    int *d = NULL;
    CHECK(cudaMalloc(&d, n * sizeof(int)));
    fill<<<(n + 31) / 32, 32>>>(d, n, 1000);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    int host[n];
    CHECK(cudaMemcpy(host, d, sizeof host, cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; i++)
        EXPECT(host[i] == 1000 + i, "%s: element %d = %d, expected %d", when, i, host[i],
               1000 + i);
    CHECK(cudaFree(d));
    printf("%s: launch ok\n", when);
}

static int config() {
    good_launch("before the invalid configurations");
    int *d = NULL;
    CHECK(cudaMalloc(&d, 4096 * sizeof(int)));

    fill<<<1, 2048>>>(d, 4096, 0);
    EXPECT_ERR_AS("block of 2048 threads", cudaGetLastError(), cudaErrorInvalidConfiguration);
    EXPECT_ERR_AS("cudaGetLastError again", cudaGetLastError(), cudaSuccess);
    EXPECT_ERR_AS("cudaDeviceSynchronize", cudaDeviceSynchronize(), cudaSuccess);

    fill<<<1, dim3(1, 1, 65)>>>(d, 4096, 0);
    EXPECT_ERR_AS("block z of 65", cudaGetLastError(), cudaErrorInvalidConfiguration);

    fill<<<dim3(1, 65536), 1>>>(d, 4096, 0);
    EXPECT_ERR_AS("grid y of 65536", cudaGetLastError(), cudaErrorInvalidConfiguration);

    fill<<<0, 32>>>(d, 4096, 0);
    EXPECT_ERR_AS("empty grid", cudaGetLastError(), cudaErrorInvalidConfiguration);

    int n = 4096, value = 0;
    void *args[] = {&d, &n, &value};
    EXPECT_ERR_AS("cudaLaunchKernel with 2048 threads",
                  cudaLaunchKernel((const void *)fill, dim3(1), dim3(2048), args, 0, 0),
                  cudaErrorInvalidConfiguration);

    CHECK(cudaDeviceSynchronize());
    CHECK(cudaFree(d));
    good_launch("after the invalid configurations");
    printf("PASS\n");
    return 0;
}

int main(int argc, char **argv) {
    CHECK(cudaSetDevice(0));
    const char *mode = argc > 1 ? argv[1] : "fault";
    if (strcmp(mode, "fault") == 0) return fault();
    if (strcmp(mode, "config") == 0) return config();
    printf("FAIL: unknown mode %s (expected fault or config)\n", mode);
    return 1;
}
