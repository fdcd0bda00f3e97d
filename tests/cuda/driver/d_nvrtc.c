// Kernels compiled at run time with NVRTC and run through the CUDA driver API,
// the way JIT users (CuPy, Numba, cuda-python, Triton) do it: NVRTC turns CUDA
// C++ source into PTX for compute_80, cuModuleLoadDataEx loads it with JIT
// log options, cuModuleGetFunction finds an `extern "C"` kernel by its name and
// a template instance by the lowered name NVRTC reports.
//
// Usage: d_nvrtc   (needs libnvrtc.so.13 on the library path)
//
// Prints one line per case (`<what>: ok`). Self-checking: `FAIL: <reason>` and
// exit status 1 on any error or mismatch, `PASS` as the last line on success.

#include <cuda.h>
#include <nvrtc.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drv_check.h"

#define NVRTC_CHECK(call)                                                           \
    do {                                                                            \
        nvrtcResult r_ = (call);                                                    \
        if (r_ != NVRTC_SUCCESS) {                                                  \
            printf("FAIL: %s returned %s (%d) at line %d\n", #call,                 \
                   nvrtcGetErrorString(r_), (int)r_, __LINE__);                     \
            fflush(stdout);                                                         \
            exit(1);                                                                \
        }                                                                           \
    } while (0)

static const char *source =
    "extern \"C\" __global__ void saxpy(float a, const float *x, const float *y,\n"
    "                                   float *out, size_t n) {\n"
    "    size_t tid = (size_t)blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    for (size_t i = tid; i < n; i += (size_t)blockDim.x * gridDim.x)\n"
    "        out[i] = a * x[i] + y[i];\n"
    "}\n"
    "\n"
    "namespace jit {\n"
    "template <typename T>\n"
    "__global__ void scale(T *data, T factor, int n) {\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < n) data[i] *= factor;\n"
    "}\n"
    "}\n";

#define N 65536

int main(void) {
    int major = 0, minor = 0;
    NVRTC_CHECK(nvrtcVersion(&major, &minor));
    printf("nvrtc version: %d.%d\n", major, minor);

    // --- Compile ---------------------------------------------------------------
    nvrtcProgram prog;
    NVRTC_CHECK(nvrtcCreateProgram(&prog, source, "saxpy.cu", 0, NULL, NULL));
    NVRTC_CHECK(nvrtcAddNameExpression(prog, "jit::scale<double>"));
    const char *opts[] = {"--gpu-architecture=compute_80", "--fmad=false"};
    nvrtcResult compiled = nvrtcCompileProgram(prog, 2, opts);
    size_t log_size = 0;
    NVRTC_CHECK(nvrtcGetProgramLogSize(prog, &log_size));
    if (log_size > 1) {
        char *log = (char *)malloc(log_size);
        EXPECT(log != NULL, "out of memory");
        NVRTC_CHECK(nvrtcGetProgramLog(prog, log));
        printf("nvrtc log:\n%s\n", log);
        free(log);
    }
    NVRTC_CHECK(compiled);
    size_t ptx_size = 0;
    NVRTC_CHECK(nvrtcGetPTXSize(prog, &ptx_size));
    char *ptx = (char *)malloc(ptx_size);
    EXPECT(ptx != NULL, "out of memory");
    NVRTC_CHECK(nvrtcGetPTX(prog, ptx));
    const char *lowered = NULL;
    NVRTC_CHECK(nvrtcGetLoweredName(prog, "jit::scale<double>", &lowered));
    char scale_name[256];
    snprintf(scale_name, sizeof scale_name, "%s", lowered);
    NVRTC_CHECK(nvrtcDestroyProgram(&prog));
    printf("compiled %zu bytes of PTX; jit::scale<double> is %s\n", ptx_size, scale_name);

    // --- Load ------------------------------------------------------------------
    CU_CHECK(cuInit(0));
    CUdevice dev;
    CU_CHECK(cuDeviceGet(&dev, 0));
    CUcontext ctx;
    CU_CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CU_CHECK(cuCtxPushCurrent(ctx));

    char info_log[4096], error_log[4096];
    info_log[0] = error_log[0] = '\0';
    CUjit_option options[] = {CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
                              CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                              CU_JIT_LOG_VERBOSE};
    void *values[] = {info_log, (void *)(size_t)sizeof info_log, error_log,
                      (void *)(size_t)sizeof error_log, (void *)(size_t)1};
    CUmodule mod;
    CUresult loaded = cuModuleLoadDataEx(&mod, ptx, 5, options, values);
    if (loaded != CUDA_SUCCESS) printf("JIT error log: %s\n", error_log);
    CU_CHECK(loaded);
    free(ptx);
    CUfunction saxpy, scale;
    CU_CHECK(cuModuleGetFunction(&saxpy, mod, "saxpy"));
    CU_CHECK(cuModuleGetFunction(&scale, mod, scale_name));
    printf("cuModuleLoadDataEx: ok\n");

    // --- saxpy -------------------------------------------------------------------
    float *x = (float *)malloc(N * sizeof(float)), *y = (float *)malloc(N * sizeof(float)),
          *out = (float *)malloc(N * sizeof(float));
    EXPECT(x && y && out, "out of memory");
    for (int i = 0; i < N; i++) {
        x[i] = (float)(i % 1024) * 0.25f;
        y[i] = (float)(i % 333) - 100.0f;
    }
    CUdeviceptr d_x, d_y, d_out;
    CU_CHECK(cuMemAlloc(&d_x, N * sizeof(float)));
    CU_CHECK(cuMemAlloc(&d_y, N * sizeof(float)));
    CU_CHECK(cuMemAlloc(&d_out, N * sizeof(float)));
    CU_CHECK(cuMemcpyHtoD(d_x, x, N * sizeof(float)));
    CU_CHECK(cuMemcpyHtoD(d_y, y, N * sizeof(float)));
    float a = 2.5f;
    size_t n = N;
    void *args[] = {&a, &d_x, &d_y, &d_out, &n};
    // A grid smaller than the data: the kernel strides.
    CU_CHECK(cuLaunchKernel(saxpy, 32, 1, 1, 128, 1, 1, 0, NULL, args, NULL));
    CU_CHECK(cuCtxSynchronize());
    CU_CHECK(cuMemcpyDtoH(out, d_out, N * sizeof(float)));
    for (int i = 0; i < N; i++) {
        float want = a * x[i] + y[i];
        EXPECT(out[i] == want, "saxpy: out[%d] = %g, expected %g", i, out[i], want);
    }
    printf("saxpy: ok\n");

    // --- jit::scale<double> --------------------------------------------------------
    {
        const int m = 1000;
        double host[1000];
        for (int i = 0; i < m; i++) host[i] = i * 0.5;
        CUdeviceptr d;
        CU_CHECK(cuMemAlloc(&d, sizeof host));
        CU_CHECK(cuMemcpyHtoD(d, host, sizeof host));
        double factor = -4.0;
        int count = m;
        void *params[] = {&d, &factor, &count};
        CU_CHECK(cuLaunchKernel(scale, (m + 255) / 256, 1, 1, 256, 1, 1, 0, NULL, params, NULL));
        CU_CHECK(cuMemcpyDtoH(host, d, sizeof host));  // synchronous: waits for the kernel
        for (int i = 0; i < m; i++) {
            EXPECT(host[i] == i * -2.0, "scale<double>: data[%d] = %g, expected %g", i, host[i],
                   i * -2.0);
        }
        CU_CHECK(cuMemFree(d));
        printf("jit::scale<double>: ok\n");
    }

    CU_CHECK(cuMemFree(d_x));
    CU_CHECK(cuMemFree(d_y));
    CU_CHECK(cuMemFree(d_out));
    CU_CHECK(cuModuleUnload(mod));
    CUcontext popped;
    CU_CHECK(cuCtxPopCurrent(&popped));
    EXPECT(popped == ctx, "popped another context");
    CU_CHECK(cuDevicePrimaryCtxRelease(dev));
    free(x);
    free(y);
    free(out);
    printf("PASS\n");
    return 0;
}
