// The CUDA runtime and driver APIs in one program (built with
// `nvcc -cudart shared ... -lcuda`), sharing their objects as CUDA does: the
// runtime's device is the driver's primary context, a cudaMalloc pointer is a
// CUdeviceptr, a cudaStream_t is a CUstream and a cudaEvent_t a CUevent.
//
// Usage: d_mixed KERNELS.ptx   (built from kernels.cu)
//
// Prints one line per case (`<what>: ok`). Self-checking: `FAIL: <reason>` and
// exit status 1 on any error or mismatch, `PASS` as the last line on success.

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "drv_check.h"

#define RT_CHECK(call)                                                              \
    do {                                                                            \
        cudaError_t err_ = (call);                                                  \
        if (err_ != cudaSuccess) {                                                  \
            printf("FAIL: %s returned %s (%d) at line %d\n", #call,                 \
                   cudaGetErrorName(err_), (int)err_, __LINE__);                    \
            fflush(stdout);                                                         \
            exit(1);                                                                \
        }                                                                           \
    } while (0)

// A kernel of the program itself, launched with <<<>>>.
__global__ void twice(float *x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= 2.0f;
}

int main(int argc, char **argv) {
    EXPECT(argc == 2, "usage: %s KERNELS.ptx", argv[0]);
    const int n = 10007;
    const size_t bytes = n * sizeof(float);

    // The runtime initialises the driver and makes the primary context current.
    RT_CHECK(cudaSetDevice(0));
    RT_CHECK(cudaFree(0));
    CUcontext current = NULL;
    CU_CHECK(cuCtxGetCurrent(&current));
    EXPECT(current != NULL, "no current context after cudaSetDevice(0)");
    CUdevice dev;
    CU_CHECK(cuDeviceGet(&dev, 0));
    CUcontext primary = NULL;
    CU_CHECK(cuDevicePrimaryCtxRetain(&primary, dev));
    EXPECT(primary == current, "the current context %p is not the primary context %p",
           (void *)current, (void *)primary);
    unsigned int flags = 0;
    int active = 0;
    CU_CHECK(cuDevicePrimaryCtxGetState(dev, &flags, &active));
    EXPECT(active == 1, "the runtime's primary context is not active");
    CUdevice ctx_dev = -1;
    CU_CHECK(cuCtxGetDevice(&ctx_dev));
    EXPECT(ctx_dev == dev, "cuCtxGetDevice gave %d", (int)ctx_dev);
    int rt_version = 0, drv_version = 0;
    RT_CHECK(cudaDriverGetVersion(&rt_version));
    CU_CHECK(cuDriverGetVersion(&drv_version));
    EXPECT(rt_version == drv_version, "cudaDriverGetVersion %d, cuDriverGetVersion %d", rt_version,
           drv_version);
    printf("primary context shared: ok\n");

    float *h_a = (float *)malloc(bytes), *h_b = (float *)malloc(bytes), *h_c = (float *)malloc(bytes);
    EXPECT(h_a && h_b && h_c, "out of memory");
    for (int i = 0; i < n; i++) {
        h_a[i] = (float)(i % 1000);
        h_b[i] = (float)(3 * (i % 777));
    }

    // cudaMalloc memory written with the driver, read back with the runtime.
    float *d_a = NULL, *d_b = NULL;
    RT_CHECK(cudaMalloc(&d_a, bytes));
    RT_CHECK(cudaMalloc(&d_b, bytes));
    CU_CHECK(cuMemcpyHtoD((CUdeviceptr)d_a, h_a, bytes));
    CU_CHECK(cuMemcpyHtoD((CUdeviceptr)d_b, h_b, bytes));
    memset(h_c, 0, bytes);
    RT_CHECK(cudaMemcpy(h_c, d_a, bytes, cudaMemcpyDeviceToHost));
    EXPECT(memcmp(h_c, h_a, bytes) == 0, "cudaMemcpy does not read what cuMemcpyHtoD wrote");
    CUdeviceptr base = 0;
    size_t size = 0;
    CU_CHECK(cuMemGetAddressRange(&base, &size, (CUdeviceptr)d_a + 100));
    EXPECT(base == (CUdeviceptr)d_a && size >= bytes, "cuMemGetAddressRange: base %llx size %zu",
           (unsigned long long)base, size);
    printf("cudaMalloc + cuMemcpyHtoD: ok\n");

    // cuMemAlloc memory used by the runtime.
    CUdeviceptr d_c;
    CU_CHECK(cuMemAlloc(&d_c, bytes));
    RT_CHECK(cudaMemset((void *)d_c, 0, bytes));
    RT_CHECK(cudaMemcpy((void *)d_c, h_b, bytes, cudaMemcpyHostToDevice));
    memset(h_c, 0, bytes);
    CU_CHECK(cuMemcpyDtoH(h_c, d_c, bytes));
    EXPECT(memcmp(h_c, h_b, bytes) == 0, "cuMemcpyDtoH does not read what cudaMemcpy wrote");
    printf("cuMemAlloc + cudaMemcpy: ok\n");

    // A module of the driver launched on a runtime stream, then a runtime kernel
    // on the same stream: stream order holds across the two APIs.
    char *ptx = read_file(argv[1], NULL);
    CUmodule mod;
    CU_CHECK(cuModuleLoadData(&mod, ptx));
    free(ptx);
    CUfunction vector_add;
    CU_CHECK(cuModuleGetFunction(&vector_add, mod, "vector_add"));
    cudaStream_t stream;
    RT_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    RT_CHECK(cudaMemsetAsync((void *)d_c, 0xFF, bytes, stream));
    {
        CUdeviceptr a = (CUdeviceptr)d_a, b = (CUdeviceptr)d_b;
        int count = n;
        void *params[] = {&a, &b, &d_c, &count};
        CU_CHECK(cuLaunchKernel(vector_add, (n + 255) / 256, 1, 1, 256, 1, 1, 0, (CUstream)stream,
                                params, NULL));
    }
    twice<<<(n + 127) / 128, 128, 0, stream>>>((float *)d_c, n);
    RT_CHECK(cudaGetLastError());
    memset(h_c, 0, bytes);
    RT_CHECK(cudaMemcpyAsync(h_c, (void *)d_c, bytes, cudaMemcpyDeviceToHost, stream));
    RT_CHECK(cudaStreamSynchronize(stream));
    for (int i = 0; i < n; i++) {
        float want = 2.0f * (h_a[i] + h_b[i]);
        EXPECT(h_c[i] == want, "c[%d] = %g, expected %g", i, h_c[i], want);
    }
    printf("cuLaunchKernel on a cudaStream_t: ok\n");

    // A driver stream and event used by the runtime.
    CUstream cu_stream;
    CU_CHECK(cuStreamCreate(&cu_stream, CU_STREAM_NON_BLOCKING));
    CUevent cu_event;
    CU_CHECK(cuEventCreate(&cu_event, CU_EVENT_DEFAULT));
    RT_CHECK(cudaMemcpyAsync((void *)d_c, h_a, bytes, cudaMemcpyHostToDevice, (cudaStream_t)cu_stream));
    twice<<<(n + 127) / 128, 128, 0, (cudaStream_t)cu_stream>>>((float *)d_c, n);
    RT_CHECK(cudaGetLastError());
    RT_CHECK(cudaEventRecord((cudaEvent_t)cu_event, (cudaStream_t)cu_stream));
    // The runtime stream waits for the driver stream's event, then copies.
    RT_CHECK(cudaStreamWaitEvent(stream, (cudaEvent_t)cu_event, 0));
    memset(h_c, 0, bytes);
    CU_CHECK(cuMemcpyDtoHAsync(h_c, d_c, bytes, (CUstream)stream));
    cudaEvent_t rt_event;
    RT_CHECK(cudaEventCreate(&rt_event));
    RT_CHECK(cudaEventRecord(rt_event, stream));
    CU_CHECK(cuEventSynchronize((CUevent)rt_event));
    CU_CHECK(cuStreamSynchronize((CUstream)stream));
    for (int i = 0; i < n; i++) {
        float want = 2.0f * h_a[i];
        EXPECT(h_c[i] == want, "driver stream: c[%d] = %g, expected %g", i, h_c[i], want);
    }
    printf("cudaMemcpyAsync on a CUstream: ok\n");

    RT_CHECK(cudaDeviceSynchronize());
    CU_CHECK(cuCtxSynchronize());
    RT_CHECK(cudaEventDestroy(rt_event));
    CU_CHECK(cuEventDestroy(cu_event));
    CU_CHECK(cuStreamDestroy(cu_stream));
    RT_CHECK(cudaStreamDestroy(stream));
    CU_CHECK(cuModuleUnload(mod));
    CU_CHECK(cuMemFree(d_c));
    RT_CHECK(cudaFree(d_a));
    RT_CHECK(cudaFree(d_b));
    CU_CHECK(cuDevicePrimaryCtxRelease(dev));
    free(h_a);
    free(h_b);
    free(h_c);
    printf("PASS\n");
    return 0;
}
