// cudaDeviceSetLimit / cudaDeviceGetLimit: CUDA's defaults, a malloc heap
// large enough for what a kernel asks (and its size fixed once a kernel
// has used it), the limits with no remote meaning kept and reported, and
// the errors CUDA gives.
#include <cuda_runtime.h>

#include "check.h"

__global__ void big_malloc(size_t bytes, int *ok) {
    char *p = (char *)malloc(bytes);
    if (p != nullptr) {
        p[0] = 1;
        p[bytes - 1] = 2;
        *ok = p[0] + p[bytes - 1];
        free(p);
    } else {
        *ok = -1;
    }
}

static size_t limit(cudaLimit which) {
    size_t v = 0;
    CHECK(cudaDeviceGetLimit(&v, which));
    return v;
}

int main() {
    printf("stack size: %zu\n", limit(cudaLimitStackSize));
    printf("printf FIFO: %zu\n", limit(cudaLimitPrintfFifoSize));
    printf("malloc heap: %zu\n", limit(cudaLimitMallocHeapSize));

    // 32 MiB from a kernel does not fit CUDA's default 8 MiB heap...
    int *ok = nullptr;
    CHECK(cudaMalloc(&ok, sizeof(int)));
    // ...so the heap grows first, before any kernel uses it.
    CHECK(cudaDeviceSetLimit(cudaLimitMallocHeapSize, 64 << 20));
    EXPECT(limit(cudaLimitMallocHeapSize) == (64 << 20), "the heap size is kept");
    big_malloc<<<1, 1>>>(32 << 20, ok);
    CHECK(cudaGetLastError());
    int host = 0;
    CHECK(cudaMemcpy(&host, ok, sizeof(int), cudaMemcpyDeviceToHost));
    EXPECT(host == 3, "a 32 MiB malloc in a 64 MiB heap: %d", host);
    printf("32 MiB malloc in a 64 MiB heap: ok\n");
    EXPECT_ERR_AS("heap size after a malloc kernel",
                  cudaDeviceSetLimit(cudaLimitMallocHeapSize, 16 << 20), cudaErrorInvalidValue);

    // Limits without a meaning on a remote device are kept and reported.
    int major = 0;
    CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
    if (major >= 9) {
        // No device-side synchronization to bound from Hopper on.
        cudaError_t e = cudaDeviceSetLimit(cudaLimitDevRuntimeSyncDepth, 4);
        (void)cudaGetLastError();
        EXPECT(e == cudaErrorUnsupportedLimit, "sync depth on sm_%d0: %s", major, cudaGetErrorName(e));
    } else {
        CHECK(cudaDeviceSetLimit(cudaLimitDevRuntimeSyncDepth, 4));
        EXPECT(limit(cudaLimitDevRuntimeSyncDepth) == 4, "sync depth kept");
    }
    EXPECT_ERR_AS("L2 fetch granularity of 256",
                  cudaDeviceSetLimit(cudaLimitMaxL2FetchGranularity, 256), cudaErrorInvalidValue);
    CHECK(cudaDeviceSetLimit(cudaLimitMaxL2FetchGranularity, 128));
    printf("L2 fetch granularity after asking 128: %zu\n", limit(cudaLimitMaxL2FetchGranularity));
    CHECK(cudaDeviceSetLimit(cudaLimitStackSize, 4096));
    EXPECT(limit(cudaLimitStackSize) == 4096, "stack size kept");
    EXPECT_ERR_AS("an unknown limit", cudaDeviceSetLimit((cudaLimit)99, 1), cudaErrorInvalidValue);
    EXPECT_ERR_AS("NULL value", cudaDeviceGetLimit(nullptr, cudaLimitStackSize), cudaErrorInvalidValue);

    // A reset brings CUDA's defaults back, and the heap may change again.
    CHECK(cudaDeviceReset());
    EXPECT(limit(cudaLimitMallocHeapSize) == (8 << 20), "default heap after a reset");
    CHECK(cudaDeviceSetLimit(cudaLimitMallocHeapSize, 16 << 20));
    printf("PASS\n");
    return 0;
}
