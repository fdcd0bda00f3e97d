// Bad input to the driver API gets the driver's own error code, never a
// crash of the program or the server, and the device keeps working after it:
// NULL and made-up handles, a module the device cannot load, pointers that
// are no allocation, a private table nobody serves.
// Usage: d_bad_input KERNELS.ptx
#include "drv_check.h"

static const char broken_ptx[] =
    ".version 8.0\n.target sm_80\n.address_size 64\n"
    ".visible .entry broken(.param .u64 p)\n{\n\tthis is not an instruction;\n}\n";

int main(int argc, char **argv) {
    EXPECT(argc == 2, "usage: %s KERNELS.ptx", argv[0]);
    char *ptx = read_file(argv[1], NULL);
    CU_CHECK(cuInit(0));
    CUdevice dev;
    CU_CHECK(cuDeviceGet(&dev, 0));
    CUcontext ctx;
    CU_CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CU_CHECK(cuCtxSetCurrent(ctx));

    CU_EXPECT_ERR_AS("cuLaunchKernel(NULL function)",
                     cuLaunchKernel(NULL, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL),
                     CUDA_ERROR_INVALID_HANDLE);
    CU_EXPECT_ERR_AS("cuLaunchKernel(made-up function)",
                     cuLaunchKernel((CUfunction)(uintptr_t)0x5eed0, 1, 1, 1, 1, 1, 1, 0, NULL,
                                    NULL, NULL),
                     CUDA_ERROR_INVALID_HANDLE);
    CU_EXPECT_ERR_AS("cuStreamSynchronize(made-up stream)",
                     cuStreamSynchronize((CUstream)(uintptr_t)0x5eed0), CUDA_ERROR_INVALID_HANDLE);
    CU_EXPECT_ERR_AS("cuEventRecord(made-up event)",
                     cuEventRecord((CUevent)(uintptr_t)0x5eed0, NULL), CUDA_ERROR_INVALID_HANDLE);
    CUfunction f;
    CU_EXPECT_ERR_AS("cuModuleGetFunction(made-up module)",
                     cuModuleGetFunction(&f, (CUmodule)(uintptr_t)0x5eed0, "vector_add"),
                     CUDA_ERROR_INVALID_HANDLE);
    CU_EXPECT_ERR_AS("cuModuleUnload(made-up module)",
                     cuModuleUnload((CUmodule)(uintptr_t)0x5eed0), CUDA_ERROR_INVALID_HANDLE);
    CU_EXPECT_ERR_AS("cuCtxDestroy(made-up context)",
                     cuCtxDestroy((CUcontext)(uintptr_t)0x5eed0), CUDA_ERROR_INVALID_CONTEXT);
    CU_EXPECT_ERR_AS("cuCtxPushCurrent(made-up context)",
                     cuCtxPushCurrent((CUcontext)(uintptr_t)0x5eed0), CUDA_ERROR_INVALID_CONTEXT);

    CUdeviceptr nowhere = (CUdeviceptr)0x10;
    int host = 7;
    CU_EXPECT_ERR_AS("cuMemcpyHtoD(no allocation)", cuMemcpyHtoD(nowhere, &host, sizeof host),
                     CUDA_ERROR_INVALID_VALUE);
    CU_EXPECT_ERR_AS("cuMemcpyDtoH(no allocation)", cuMemcpyDtoH(&host, nowhere, sizeof host),
                     CUDA_ERROR_INVALID_VALUE);
    CU_EXPECT_ERR_AS("cuMemFree(no allocation)", cuMemFree(nowhere), CUDA_ERROR_INVALID_VALUE);
    CU_EXPECT_ERR_AS("cuMemsetD32(no allocation)", cuMemsetD32(nowhere, 1, 4),
                     CUDA_ERROR_INVALID_VALUE);

    // A module the device cannot load fails the load, with the driver's
    // code; which one CUDA gives depends on where its compiler stops.
    CUmodule broken;
    CUresult r = cuModuleLoadData(&broken, broken_ptx);
    printf("cuModuleLoadData(broken PTX) -> %s\n", cu_error_name(r));
    EXPECT(r == CUDA_ERROR_INVALID_PTX || r == CUDA_ERROR_INVALID_IMAGE ||
               r == CUDA_ERROR_NOT_SUPPORTED,
           "cuModuleLoadData(broken PTX) gave %s", cu_error_name(r));
    r = cuModuleLoadData(&broken, "\x7f" "ELF but not really");
    printf("cuModuleLoadData(bad ELF) -> %s\n", cu_error_name(r));
    EXPECT(r != CUDA_SUCCESS, "a bad ELF loaded");
    CU_EXPECT_ERR_AS("cuModuleLoad(missing file)", cuModuleLoad(&broken, "/nonexistent/k.ptx"),
                     CUDA_ERROR_FILE_NOT_FOUND);

    const void *table = NULL;
    CUuuid unknown = {{0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0x01, 0x23, 0x45, 0x67,
                       0x89, 0xab, 0xcd, 0xef}};
    CU_EXPECT_ERR_AS("cuGetExportTable(unknown)", cuGetExportTable(&table, &unknown),
                     CUDA_ERROR_INVALID_VALUE);
    EXPECT(table == NULL, "an unknown table came back non-NULL");

    // After all that, the device still computes.
    CUmodule mod;
    CU_CHECK(cuModuleLoadData(&mod, ptx));
    CU_CHECK(cuModuleGetFunction(&f, mod, "vector_add"));
    enum { N = 1000 };
    float a[N], b[N], c[N];
    for (int i = 0; i < N; i++) {
        a[i] = (float)i;
        b[i] = 2.0f * (float)i;
    }
    CUdeviceptr da, db, dc;
    CU_CHECK(cuMemAlloc(&da, sizeof a));
    CU_CHECK(cuMemAlloc(&db, sizeof b));
    CU_CHECK(cuMemAlloc(&dc, sizeof c));
    CU_CHECK(cuMemcpyHtoD(da, a, sizeof a));
    CU_CHECK(cuMemcpyHtoD(db, b, sizeof b));
    int n = N;
    void *args[] = {&da, &db, &dc, &n};
    CU_CHECK(cuLaunchKernel(f, (N + 127) / 128, 1, 1, 128, 1, 1, 0, NULL, args, NULL));
    CU_CHECK(cuMemcpyDtoH(c, dc, sizeof c));
    for (int i = 0; i < N; i++) EXPECT(c[i] == 3.0f * (float)i, "c[%d] = %f", i, c[i]);
    printf("after bad input: vector_add ok\n");
    CU_CHECK(cuModuleUnload(mod));
    CU_CHECK(cuDevicePrimaryCtxRelease(dev));
    free(ptx);
    printf("PASS\n");
    return 0;
}
