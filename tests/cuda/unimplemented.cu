// Functions rcud does not implement fail loudly with cudaErrorNotSupported
// (and are named once in the log when RCUD_LOG asks for it); the runtime
// stays usable afterwards.
#include <cstdio>
#include <cuda_runtime.h>

#define EXPECT(call, code)                                                     \
    do {                                                                       \
        cudaError_t e_ = (call);                                               \
        printf("%s -> %s\n", #call, cudaGetErrorName(e_));                     \
        if (e_ != (code)) {                                                    \
            printf("FAIL: expected %s\n", cudaGetErrorName(code));            \
            return 1;                                                          \
        }                                                                      \
    } while (0)

int main() {
    cudaGraph_t graph;
    EXPECT(cudaGraphCreate(&graph, 0), cudaErrorNotSupported);
    EXPECT(cudaGraphCreate(&graph, 0), cudaErrorNotSupported);
    EXPECT(cudaGetLastError(), cudaErrorNotSupported);
    EXPECT(cudaGetLastError(), cudaSuccess);
    void *p = nullptr;
    EXPECT(cudaMalloc(&p, 64), cudaSuccess);
    EXPECT(cudaFree(p), cudaSuccess);
    printf("PASS\n");
    return 0;
}
