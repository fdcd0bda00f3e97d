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
    // Execution contexts (CUDA 13's runtime face of green contexts).
    cudaExecutionContext_t ctx;
    EXPECT_CODE(cudaDeviceGetExecutionCtx(&ctx, 0), cudaErrorNotSupported);
    EXPECT_CODE(cudaDeviceGetExecutionCtx(&ctx, 0), cudaErrorNotSupported);
    EXPECT_CODE(cudaGetLastError(), cudaErrorNotSupported);
    EXPECT_CODE(cudaGetLastError(), cudaSuccess);
    void *p = nullptr;
    CHECK(cudaMalloc(&p, 64));
    CHECK(cudaFree(p));
    printf("PASS\n");
    return 0;
}
