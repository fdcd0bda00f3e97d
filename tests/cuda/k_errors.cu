// Kernel errors, one case per process (argv[1] selects it):
//
// (default, or "fault") A kernel writes 4 GiB past the start of its 1 KiB
//   allocation. The launch itself succeeds; cudaDeviceSynchronize reports
//   a memory fault (cudaErrorIllegalAddress or cudaErrorInvalidAddressSpace),
//   and the error is sticky: later calls (cudaMalloc, cudaMemcpy,
//   cudaMemset, a launch, cudaDeviceSynchronize) return it too. Prints:
//     `launch -> cudaSuccess`
//     `cudaDeviceSynchronize -> a memory fault`
//     `cudaMalloc after the fault -> the same fault`
//     `cudaMemcpy after the fault -> the same fault`
//     `cudaMemset after the fault -> the same fault`
//     `cudaDeviceSynchronize again -> the same fault`
//
// ("config") Invalid launch configurations: 2048 threads per block, a block
//   z dimension of 65, a grid y dimension of 65536, an empty grid, and 2048
//   threads through cudaLaunchKernel. Each is reported by cudaGetLastError
//   right after the launch (or returned by cudaLaunchKernel), is not sticky,
//   and the device keeps working. Prints:
//     `block of 2048 threads -> cudaErrorInvalidValue`
//     `cudaGetLastError again -> cudaSuccess`
//     `cudaDeviceSynchronize -> cudaSuccess`
//     `block z of 65 -> cudaErrorInvalidValue`
//     `grid y of 65536 -> cudaErrorInvalidValue`
//     `empty grid -> cudaErrorInvalidValue`
//     `cudaLaunchKernel with 2048 threads -> cudaErrorInvalidValue`
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

    // A write far outside any allocation. A GPU reports it as
    // cudaErrorIllegalAddress or, where the address is outside the global
    // address space (an H200, at times), cudaErrorInvalidAddressSpace.
    write_at<<<1, 1>>>(p, (size_t)1 << 30, 1);
    EXPECT_ERR_AS("launch", cudaGetLastError(), cudaSuccess);
    cudaError_t fault = cudaDeviceSynchronize();
    bool memory_fault = fault == cudaErrorIllegalAddress || fault == cudaErrorInvalidAddressSpace;
    printf("cudaDeviceSynchronize -> %s\n", memory_fault ? "a memory fault" : cudaGetErrorName(fault));
    EXPECT(memory_fault, "cudaDeviceSynchronize returned %s", cudaGetErrorName(fault));

    // Sticky: everything that touches the device fails the same way.
#define EXPECT_SAME_FAULT(label, call)                                                  \
    do {                                                                                \
        cudaError_t e_ = (call);                                                        \
        printf("%s -> %s\n", label, e_ == fault ? "the same fault" : cudaGetErrorName(e_)); \
        EXPECT(e_ == fault, "%s returned %s", label, cudaGetErrorName(e_));             \
    } while (0)
    void *q = NULL;
    EXPECT_SAME_FAULT("cudaMalloc after the fault", cudaMalloc(&q, 1024));
    EXPECT_SAME_FAULT("cudaMemcpy after the fault",
                      cudaMemcpy(other, host, sizeof host, cudaMemcpyHostToDevice));
    EXPECT_SAME_FAULT("cudaMemset after the fault", cudaMemset(other, 0, 1024));
    fill<<<1, 32>>>(other, 32, 0);
    (void)cudaGetLastError();
    EXPECT_SAME_FAULT("cudaDeviceSynchronize again", cudaDeviceSynchronize());
#undef EXPECT_SAME_FAULT
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
    EXPECT_ERR_AS("block of 2048 threads", cudaGetLastError(), cudaErrorInvalidValue);
    EXPECT_ERR_AS("cudaGetLastError again", cudaGetLastError(), cudaSuccess);
    EXPECT_ERR_AS("cudaDeviceSynchronize", cudaDeviceSynchronize(), cudaSuccess);

    fill<<<1, dim3(1, 1, 65)>>>(d, 4096, 0);
    EXPECT_ERR_AS("block z of 65", cudaGetLastError(), cudaErrorInvalidValue);

    fill<<<dim3(1, 65536), 1>>>(d, 4096, 0);
    EXPECT_ERR_AS("grid y of 65536", cudaGetLastError(), cudaErrorInvalidValue);

    fill<<<0, 32>>>(d, 4096, 0);
    EXPECT_ERR_AS("empty grid", cudaGetLastError(), cudaErrorInvalidValue);

    int n = 4096, value = 0;
    void *args[] = {&d, &n, &value};
    EXPECT_ERR_AS("cudaLaunchKernel with 2048 threads",
                  cudaLaunchKernel((const void *)fill, dim3(1), dim3(2048), args, 0, 0),
                  cudaErrorInvalidValue);

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
