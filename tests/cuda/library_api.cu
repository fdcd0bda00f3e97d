// The runtime's library API: device code the program loads itself (here
// PTX text it carries), its kernels launched through cudaLaunchKernel and
// its variables reached by address; cudaGetKernel for the program's own
// kernels; and the errors CUDA gives.
#include <cuda_runtime.h>

#include "check.h"

static const char *kPtx =
    ".version 8.0\n"
    ".target sm_80\n"
    ".address_size 64\n"
    ".visible .global .align 4 .u32 calls;\n"
    ".visible .entry add_k(.param .u64 p, .param .u32 k)\n"
    "{\n"
    "  .reg .b32 %r<6>;\n"
    "  .reg .b64 %rd<5>;\n"
    "  ld.param.u64 %rd1, [p];\n"
    "  ld.param.u32 %r1, [k];\n"
    "  cvta.to.global.u64 %rd2, %rd1;\n"
    "  mov.u32 %r2, %tid.x;\n"
    "  mul.wide.u32 %rd3, %r2, 4;\n"
    "  add.s64 %rd4, %rd2, %rd3;\n"
    "  ld.global.u32 %r3, [%rd4];\n"
    "  add.s32 %r4, %r3, %r1;\n"
    "  st.global.u32 [%rd4], %r4;\n"
    "  atom.global.add.u32 %r5, [calls], 1;\n"
    "  ret;\n"
    "}\n";

__global__ void mine(int *p) { p[threadIdx.x] = 7; }

int main() {
    cudaLibrary_t lib;
    CHECK(cudaLibraryLoadData(&lib, kPtx, nullptr, nullptr, 0, nullptr, nullptr, 0));
    cudaKernel_t add_k;
    CHECK(cudaLibraryGetKernel(&add_k, lib, "add_k"));
    int *data = nullptr;
    CHECK(cudaMalloc(&data, 32 * sizeof(int)));
    CHECK(cudaMemset(data, 0, 32 * sizeof(int)));
    unsigned k = 5;
    void *args[] = {&data, &k};
    CHECK(cudaLaunchKernel((const void *)add_k, dim3(1), dim3(32), args, 0, 0));
    int host[32];
    CHECK(cudaMemcpy(host, data, sizeof host, cudaMemcpyDeviceToHost));
    for (int i = 0; i < 32; i++) EXPECT(host[i] == 5, "element %d is %d", i, host[i]);
    printf("library kernel launched: ok\n");
    unsigned count = 0;
    CHECK(cudaLibraryGetKernelCount(&count, lib));
    cudaKernel_t listed[4] = {};
    CHECK(cudaLibraryEnumerateKernels(listed, 4, lib));
    EXPECT(count == 1 && listed[0] == add_k, "kernels listed: %u", count);
    printf("kernels of the library: %u\n", count);

    void *calls = nullptr;
    size_t size = 0;
    CHECK(cudaLibraryGetGlobal(&calls, &size, lib, "calls"));
    unsigned n = 0;
    CHECK(cudaMemcpy(&n, calls, sizeof n, cudaMemcpyDeviceToHost));
    EXPECT(size == 4 && n == 32, "calls %u, size %zu", n, size);
    printf("library variable: ok\n");

    cudaKernel_t own;
    CHECK(cudaGetKernel(&own, (const void *)mine));
    void *own_args[] = {&data};
    CHECK(cudaLaunchKernel((const void *)own, dim3(1), dim3(32), own_args, 0, 0));
    CHECK(cudaMemcpy(host, data, sizeof host, cudaMemcpyDeviceToHost));
    EXPECT(host[31] == 7, "cudaGetKernel's kernel ran: %d", host[31]);
    CHECK(cudaKernelSetAttributeForDevice(own, cudaFuncAttributeMaxDynamicSharedMemorySize, 1024, 0));
    printf("cudaGetKernel: ok\n");

    cudaKernel_t none;
    EXPECT_ERR_AS("a kernel the library lacks", cudaLibraryGetKernel(&none, lib, "nope"), cudaErrorSymbolNotFound);
    EXPECT_ERR_AS("a variable the library lacks", cudaLibraryGetGlobal(&calls, &size, lib, "nope"),
                  cudaErrorSymbolNotFound);
    EXPECT_ERR_AS("a file that is not there",
                  cudaLibraryLoadFromFile(&lib, "/nonexistent/lib.cubin", nullptr, nullptr, 0, nullptr, nullptr, 0),
                  cudaErrorFileNotFound);
    CHECK(cudaLibraryUnload(lib));
    printf("PASS\n");
    return 0;
}
