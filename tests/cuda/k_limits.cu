// Kernels the emulated device refuses to run forever or cannot run at all.
//   k_limits timeout      a kernel that never ends: the launch returns, the
//                         next synchronizing call reports cudaErrorLaunchTimeout
//                         (run with a short kernel time limit)
//   k_limits unsupported  a kernel using PTX the interpreter does not
//                         implement (sparse tensor-core mma): the launch fails
//                         with cudaErrorNotSupported, naming the instruction
#include <cuda_runtime.h>

#include <cstring>

#include "check.h"

__global__ void spin_forever(volatile int *flag) {
    while (*flag == 0) {
    }
}

__global__ void tensor_core(unsigned *out) {
    float d0, d1, d2, d3;
    unsigned a0 = 0, a1 = 0, a2 = 0, a3 = 0, b0 = 0, b1 = 0, b2 = 0, b3 = 0, e = 0;
    float c0 = 0, c1 = 0, c2 = 0, c3 = 0;
    asm volatile(
        "mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9,%10,%11}, {%12,%13,%14,%15}, %16, 0x0;"
        : "=f"(d0), "=f"(d1), "=f"(d2), "=f"(d3)
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1), "r"(b2), "r"(b3), "f"(c0),
          "f"(c1), "f"(c2), "f"(c3), "r"(e));
    out[threadIdx.x] = (unsigned)(d0 + d1 + d2 + d3);
}

static void report(const char *what, cudaError_t e) {
    printf("%s -> %s\n", what, cudaGetErrorName(e));
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    int *flag = nullptr;
    CHECK(cudaMalloc(&flag, 32 * sizeof(unsigned)));
    CHECK(cudaMemset(flag, 0, 32 * sizeof(unsigned)));
    if (strcmp(mode, "timeout") == 0) {
        spin_forever<<<1, 32>>>(flag);
        report("launch", cudaGetLastError());
        cudaError_t e = cudaDeviceSynchronize();
        report("cudaDeviceSynchronize", e);
        EXPECT(e == cudaErrorLaunchTimeout, "expected cudaErrorLaunchTimeout");
        report("cudaMalloc after the timeout", cudaMalloc((void **)&flag, 4));
    } else if (strcmp(mode, "unsupported") == 0) {
        tensor_core<<<1, 32>>>((unsigned *)flag);
        cudaError_t e = cudaGetLastError();
        report("launch", e);
        EXPECT(e == cudaErrorNotSupported, "expected cudaErrorNotSupported");
        e = cudaDeviceSynchronize();
        report("cudaDeviceSynchronize", e);
        EXPECT(e == cudaSuccess, "an unsupported kernel does not corrupt the context");
    } else {
        printf("FAIL: usage: k_limits timeout|unsupported\n");
        return 1;
    }
    printf("PASS\n");
    return 0;
}
