// Functions rcud does not implement fail loudly with cudaErrorNotSupported
// (and are named once in the log when RCUD_LOG asks for it); the runtime
// stays usable afterwards.
#include <cuda_runtime.h>

#include "check.h"

#define EXPECT_CODE(call, code)                                                \
    do {                                                                       \
        cudaError_t e_ = (call);                                               \
        printf("%s -> %s\n", #call, cudaGetErrorName(e_));                     \
        EXPECT(e_ == (code), "expected %s", cudaGetErrorName(code));          \
    } while (0)

int main() {
    // Device resources (CUDA 13's partitioning of a GPU's SMs). NVIDIA's
    // static runtime passes the call to the driver's cuDeviceGetDevResource,
    // a stub of rcud's libcuda.so.1 too.
#if CUDART_VERSION > 13000  // not in CUDA 13.0's runtime
    cudaDevResource res;
    EXPECT_CODE(cudaDeviceGetDevResource(0, &res, cudaDevResourceTypeSm), cudaErrorNotSupported);
    EXPECT_CODE(cudaDeviceGetDevResource(0, &res, cudaDevResourceTypeSm), cudaErrorNotSupported);
    EXPECT_CODE(cudaGetLastError(), cudaErrorNotSupported);
    EXPECT_CODE(cudaGetLastError(), cudaSuccess);
#else
    printf("no probe: CUDA 13.0's runtime has no cudaDeviceGetDevResource\n");
#endif
    void *p = nullptr;
    CHECK(cudaMalloc(&p, 64));
    CHECK(cudaFree(p));
    printf("PASS\n");
    return 0;
}
