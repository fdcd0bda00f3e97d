// Vector addition through the CUDA driver API only (cuda.h, linked with
// -lcuda, no runtime): device queries, a context of its own, modules from PTX
// text (cuModuleLoadData), from a fat binary file (cuModuleLoad) and from a fat
// binary image in memory (cuModuleLoadFatBinary), launches with kernelParams,
// with the `extra` parameter buffer, with cuLaunchKernelEx and with the
// pre-CUDA 4.0 API (cuParamSet*, cuLaunchGrid), `__device__` / `__constant__`
// variables through cuModuleGetGlobal, and entry points under their
// pre-CUDA 4.0/6.5 names.
//
// Usage: d_vector_add KERNELS.ptx KERNELS-PTX.fatbin KERNELS-FULL.fatbin
// (all three built from kernels.cu; the first fat binary holds only compute_80
// PTX, the second sm_80 code and compute_80 PTX).
//
// Prints one line per case, e.g. `vector_add cuModuleLoadData(ptx): ok`.
// Self-checking: `FAIL: <reason>` and exit status 1 on any error or mismatch,
// `PASS` as the last line on success.

#include <cuda.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drv_check.h"

// The entry points cuda.h renamed (cuCtxPopCurrent -> cuCtxPopCurrent_v2,
// ...), under their old names, as binaries built against old headers call
// them. The same signatures, but cuMemAllocHost's 32-bit size.
CUresult CUDAAPI cuCtxPopCurrent_v1(CUcontext *pctx) __asm__("cuCtxPopCurrent");
CUresult CUDAAPI cuCtxPushCurrent_v1(CUcontext ctx) __asm__("cuCtxPushCurrent");
CUresult CUDAAPI cuLinkCreate_v1(unsigned int n, CUjit_option *options, void **values,
                                 CUlinkState *state) __asm__("cuLinkCreate");
CUresult CUDAAPI cuLinkAddData_v1(CUlinkState state, CUjitInputType type, void *data, size_t size,
                                  const char *name, unsigned int n, CUjit_option *options,
                                  void **values) __asm__("cuLinkAddData");
CUresult CUDAAPI cuMemAllocHost_v1(void **pp, unsigned int bytes) __asm__("cuMemAllocHost");

#define N 100003
#define BLOCK 256

static float h_a[N], h_b[N], h_c[N];

static unsigned grid_for(int n) { return (unsigned)((n + BLOCK - 1) / BLOCK); }

// Launches vector_add from `mod` with kernelParams on `stream` and checks c = a + b.
static void run_vector_add(CUmodule mod, CUstream stream, CUdeviceptr d_a, CUdeviceptr d_b,
                           CUdeviceptr d_c, const char *how) {
    CUfunction f;
    CU_CHECK(cuModuleGetFunction(&f, mod, "vector_add"));
    int max_threads = 0;
    CU_CHECK(cuFuncGetAttribute(&max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f));
    EXPECT(max_threads >= BLOCK, "vector_add allows only %d threads per block", max_threads);
    // On the launch's stream: a non-blocking stream is not ordered after the
    // legacy default stream of cuMemsetD32.
    if (stream) {
        CU_CHECK(cuMemsetD32Async(d_c, 0xFFFFFFFFu, N, stream));
    } else {
        CU_CHECK(cuMemsetD32(d_c, 0xFFFFFFFFu, N));
    }
    int n = N;
    void *params[] = {&d_a, &d_b, &d_c, &n};
    CU_CHECK(cuLaunchKernel(f, grid_for(n), 1, 1, BLOCK, 1, 1, 0, stream, params, NULL));
    if (stream) {
        CU_CHECK(cuStreamSynchronize(stream));
    } else {
        CU_CHECK(cuCtxSynchronize());
    }
    memset(h_c, 0, sizeof h_c);
    CU_CHECK(cuMemcpyDtoH(h_c, d_c, sizeof h_c));
    for (int i = 0; i < N; i++) {
        EXPECT(h_c[i] == h_a[i] + h_b[i], "%s: c[%d] = %g, expected %g", how, i, h_c[i],
               h_a[i] + h_b[i]);
    }
    printf("vector_add %s: ok\n", how);
}

int main(int argc, char **argv) {
    EXPECT(argc == 4, "usage: %s KERNELS.ptx KERNELS-PTX.fatbin KERNELS-FULL.fatbin", argv[0]);
    const char *ptx_path = argv[1], *ptx_fatbin_path = argv[2], *full_fatbin_path = argv[3];

    // --- Device queries -----------------------------------------------------
    CU_CHECK(cuInit(0));
    int version = 0;
    CU_CHECK(cuDriverGetVersion(&version));
    printf("driver version: %d\n", version);
    int count = 0;
    CU_CHECK(cuDeviceGetCount(&count));
    EXPECT(count >= 1, "cuDeviceGetCount reports %d devices", count);
    CUdevice dev;
    CU_CHECK(cuDeviceGet(&dev, 0));
    char name[256];
    memset(name, 0, sizeof name);
    CU_CHECK(cuDeviceGetName(name, sizeof name, dev));
    EXPECT(strlen(name) > 0, "empty device name");
    int major = 0, minor = 0, warp = 0, sms = 0, max_block = 0;
    CU_CHECK(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
    CU_CHECK(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));
    CU_CHECK(cuDeviceGetAttribute(&warp, CU_DEVICE_ATTRIBUTE_WARP_SIZE, dev));
    CU_CHECK(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
    CU_CHECK(cuDeviceGetAttribute(&max_block, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, dev));
    EXPECT(major >= 8, "compute capability %d.%d is below 8.0 (the kernels are compute_80)",
           major, minor);
    EXPECT(warp == 32, "warp size %d", warp);
    EXPECT(sms > 0, "%d multiprocessors", sms);
    EXPECT(max_block >= BLOCK, "at most %d threads per block", max_block);
    size_t total = 0;
    CU_CHECK(cuDeviceTotalMem(&total, dev));
    EXPECT(total >= ((size_t)64 << 20), "total memory %zu bytes", total);
    printf("device 0: %s\n", name);
    printf("compute capability: %d.%d\n", major, minor);
    printf("total memory: %zu MiB\n", total >> 20);

    // --- A context of our own -----------------------------------------------
    CUcontext ctx;
    CU_CHECK(cuCtxCreate(&ctx, NULL, 0, dev));
    CUcontext current = NULL;
    CU_CHECK(cuCtxGetCurrent(&current));
    EXPECT(current == ctx, "cuCtxCreate did not make the new context current");
    size_t free_mem = 0, total_mem = 0;
    CU_CHECK(cuMemGetInfo(&free_mem, &total_mem));
    EXPECT(free_mem > 0 && free_mem <= total_mem, "cuMemGetInfo: free %zu of %zu", free_mem,
           total_mem);

    for (int i = 0; i < N; i++) {
        h_a[i] = (float)i;
        h_b[i] = (float)(2 * i);
    }
    CUdeviceptr d_a, d_b, d_c;
    CU_CHECK(cuMemAlloc(&d_a, sizeof h_a));
    CU_CHECK(cuMemAlloc(&d_b, sizeof h_b));
    CU_CHECK(cuMemAlloc(&d_c, sizeof h_c));
    EXPECT(d_a != 0 && d_b != 0 && d_c != 0, "cuMemAlloc returned a null pointer");
    CU_CHECK(cuMemcpyHtoD(d_a, h_a, sizeof h_a));
    CU_CHECK(cuMemcpyHtoD(d_b, h_b, sizeof h_b));

    // --- PTX text -------------------------------------------------------------
    char *ptx = read_file(ptx_path, NULL);
    CUmodule ptx_mod;
    CU_CHECK(cuModuleLoadData(&ptx_mod, ptx));
    free(ptx);  // the driver keeps no reference to the image
    run_vector_add(ptx_mod, NULL, d_a, d_b, d_c, "cuModuleLoadData(ptx)");

    // --- A fat binary file (compute_80 PTX only) --------------------------------
    CUmodule file_mod;
    CU_CHECK(cuModuleLoad(&file_mod, ptx_fatbin_path));
    run_vector_add(file_mod, NULL, d_a, d_b, d_c, "cuModuleLoad(fatbin)");
    CU_CHECK(cuModuleUnload(file_mod));

    // --- A fat binary image (sm_80 and compute_80), `extra` launch ---------------
    char *fatbin = read_file(full_fatbin_path, NULL);
    CUmodule fat_mod;
    CU_CHECK(cuModuleLoadFatBinary(&fat_mod, fatbin));
    free(fatbin);
    run_vector_add(fat_mod, NULL, d_a, d_b, d_c, "cuModuleLoadFatBinary");
    {
        CUfunction axpy;
        CU_CHECK(cuModuleGetFunction(&axpy, fat_mod, "axpy"));
        // y = 0.5 * a + b with y starting as a copy of b.
        CU_CHECK(cuMemcpyDtoD(d_c, d_b, sizeof h_b));
        struct {
            int n;
            float alpha;
            CUdeviceptr x;
            CUdeviceptr y;
        } args = {N, 0.5f, d_a, d_c};
        size_t args_size = sizeof args;
        EXPECT(args_size == 24, "unexpected argument buffer size %zu", args_size);
        void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &args, CU_LAUNCH_PARAM_BUFFER_SIZE,
                         &args_size, CU_LAUNCH_PARAM_END};
        CU_CHECK(cuLaunchKernel(axpy, grid_for(N), 1, 1, BLOCK, 1, 1, 0, NULL, NULL, extra));
        CU_CHECK(cuCtxSynchronize());
        CU_CHECK(cuMemcpyDtoH(h_c, d_c, sizeof h_c));
        for (int i = 0; i < N; i++) {
            float want = 0.5f * h_a[i] + h_b[i];
            EXPECT(h_c[i] == want, "axpy extra: y[%d] = %g, expected %g", i, h_c[i], want);
        }
        printf("axpy cuLaunchKernel(extra): ok\n");

        // The pre-CUDA 4.0 launch API: y = 2 a + b.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
        CU_CHECK(cuMemcpyDtoD(d_c, d_b, sizeof h_b));
        CU_CHECK(cuFuncSetBlockShape(axpy, BLOCK, 1, 1));
        CU_CHECK(cuFuncSetSharedSize(axpy, 0));
        CU_CHECK(cuParamSetSize(axpy, 24));
        CU_CHECK(cuParamSeti(axpy, 0, N));
        CU_CHECK(cuParamSetf(axpy, 4, 2.0f));
        CU_CHECK(cuParamSetv(axpy, 8, &d_a, sizeof d_a));
        CU_CHECK(cuParamSetv(axpy, 16, &d_c, sizeof d_c));
        EXPECT(cuParamSetv(axpy, 20, &d_c, sizeof d_c) == CUDA_ERROR_INVALID_VALUE,
               "a parameter past cuParamSetSize was accepted");
        EXPECT(cuFuncSetBlockShape(axpy, 0, 1, 1) == CUDA_ERROR_INVALID_VALUE,
               "an empty block shape was accepted");
        CU_CHECK(cuLaunchGrid(axpy, grid_for(N), 1));
        CU_CHECK(cuCtxSynchronize());
        CU_CHECK(cuMemcpyDtoH(h_c, d_c, sizeof h_c));
        for (int i = 0; i < N; i++)
            EXPECT(h_c[i] == 2.0f * h_a[i] + h_b[i], "cuLaunchGrid: y[%d] = %g", i, h_c[i]);
        // On a stream, and cuLaunch: one block of BLOCK threads.
        CUstream s;
        CU_CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
        CU_CHECK(cuMemcpyDtoD(d_c, d_b, sizeof h_b));
        CU_CHECK(cuLaunchGridAsync(axpy, grid_for(N), 1, s));
        CU_CHECK(cuStreamSynchronize(s));
        CU_CHECK(cuMemcpyDtoH(h_c, d_c, sizeof h_c));
        for (int i = 0; i < N; i++)
            EXPECT(h_c[i] == 2.0f * h_a[i] + h_b[i], "cuLaunchGridAsync: y[%d] = %g", i, h_c[i]);
        CU_CHECK(cuMemcpyDtoD(d_c, d_b, sizeof h_b));
        CU_CHECK(cuLaunch(axpy));
        CU_CHECK(cuCtxSynchronize());
        CU_CHECK(cuMemcpyDtoH(h_c, d_c, sizeof h_c));
        for (int i = 0; i < 2 * BLOCK; i++) {
            float want = i < BLOCK ? 2.0f * h_a[i] + h_b[i] : h_b[i];
            EXPECT(h_c[i] == want, "cuLaunch: y[%d] = %g, expected %g", i, h_c[i], want);
        }
        CU_CHECK(cuStreamDestroy(s));
#pragma GCC diagnostic pop
        printf("axpy cuParamSet*, cuLaunchGrid, cuLaunchGridAsync, cuLaunch: ok\n");
    }
    CU_CHECK(cuModuleUnload(fat_mod));

    // --- cuLaunchKernelEx on a stream --------------------------------------------
    {
        CUstream stream;
        CU_CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
        run_vector_add(ptx_mod, stream, d_a, d_b, d_c, "cuLaunchKernel(stream)");

        CUfunction f;
        CU_CHECK(cuModuleGetFunction(&f, ptx_mod, "vector_add"));
        CU_CHECK(cuMemsetD32Async(d_c, 0, N, stream));
        int n = N - 3;  // leaves the last three elements 0
        void *params[] = {&d_a, &d_b, &d_c, &n};
        CUlaunchConfig config;
        memset(&config, 0, sizeof config);
        config.gridDimX = grid_for(n);
        config.gridDimY = 1;
        config.gridDimZ = 1;
        config.blockDimX = BLOCK;
        config.blockDimY = 1;
        config.blockDimZ = 1;
        config.sharedMemBytes = 0;
        config.hStream = stream;
        config.attrs = NULL;
        config.numAttrs = 0;
        CU_CHECK(cuLaunchKernelEx(&config, f, params, NULL));
        CU_CHECK(cuMemcpyDtoHAsync(h_c, d_c, sizeof h_c, stream));
        CU_CHECK(cuStreamSynchronize(stream));
        for (int i = 0; i < N; i++) {
            float want = i < n ? h_a[i] + h_b[i] : 0.0f;
            EXPECT(h_c[i] == want, "cuLaunchKernelEx: c[%d] = %g, expected %g", i, h_c[i], want);
        }
        printf("vector_add cuLaunchKernelEx: ok\n");
        CU_CHECK(cuStreamDestroy(stream));
    }

    // --- cuLaunchCooperativeKernel: grid.sync() across every block ------------------
    {
        CUfunction f;
        CU_CHECK(cuModuleGetFunction(&f, ptx_mod, "rotate_after_sync"));
        int coop = 0;
        CU_CHECK(cuDeviceGetAttribute(&coop, CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, dev));
        EXPECT(coop == 1, "CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH = %d", coop);
        int per_sm = 0, sms = 0;
        CU_CHECK(cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, f, 64, 0));
        CU_CHECK(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
        int n = N;
        CUdeviceptr d_in, d_tmp, d_out;
        CU_CHECK(cuMemAlloc(&d_in, N * sizeof(int)));
        CU_CHECK(cuMemAlloc(&d_tmp, N * sizeof(int)));
        CU_CHECK(cuMemAlloc(&d_out, N * sizeof(int)));
        int h_in[N], h_out[N];
        for (int i = 0; i < N; i++) h_in[i] = 3 * i - 7;
        CU_CHECK(cuMemcpyHtoD(d_in, h_in, sizeof h_in));
        void *params[] = {&d_in, &d_tmp, &d_out, &n};
        CU_CHECK(cuLaunchCooperativeKernel(f, 7, 1, 1, 64, 1, 1, 0, NULL, params));
        CU_CHECK(cuMemcpyDtoH(h_out, d_out, sizeof h_out));
        for (int i = 0; i < N; i++)
            EXPECT(h_out[i] == h_in[(i + 1) % N] + 1, "rotate: out[%d] = %d", i, h_out[i]);
        CUresult too_large =
            cuLaunchCooperativeKernel(f, per_sm * sms + 1, 1, 1, 64, 1, 1, 0, NULL, params);
        EXPECT(too_large == CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE,
               "a grid of %d blocks gave %d", per_sm * sms + 1, (int)too_large);
        CU_CHECK(cuMemFree(d_in));
        CU_CHECK(cuMemFree(d_tmp));
        CU_CHECK(cuMemFree(d_out));
        printf("rotate_after_sync cuLaunchCooperativeKernel: ok\n");
    }

    // --- __device__ and __constant__ variables -------------------------------------
    {
        CUdeviceptr g_scale, g_counter, c_bias;
        size_t bytes = 0;
        CU_CHECK(cuModuleGetGlobal(&g_counter, &bytes, ptx_mod, "g_counter"));
        EXPECT(bytes == sizeof(int), "g_counter has %zu bytes", bytes);
        int counter = 0;
        CU_CHECK(cuMemcpyDtoH(&counter, g_counter, sizeof counter));
        EXPECT(counter == 42, "g_counter starts as %d, expected its initializer 42", counter);
        CU_CHECK(cuModuleGetGlobal(&c_bias, &bytes, ptx_mod, "c_bias"));
        EXPECT(bytes == 4 * sizeof(float), "c_bias has %zu bytes", bytes);
        float bias[4] = {0, 0, 0, 0};
        CU_CHECK(cuMemcpyDtoH(bias, c_bias, sizeof bias));
        EXPECT(bias[0] == 0.5f && bias[1] == 1.5f && bias[2] == 2.5f && bias[3] == 3.5f,
               "c_bias starts as {%g, %g, %g, %g}", bias[0], bias[1], bias[2], bias[3]);
        CU_CHECK(cuModuleGetGlobal(&g_scale, NULL, ptx_mod, "g_scale"));  // bytes is optional
        float scale = 3.0f;
        CU_CHECK(cuMemcpyHtoD(g_scale, &scale, sizeof scale));
        float new_bias[4] = {-1.0f, 0.0f, 1.0f, 2.0f};
        CU_CHECK(cuMemcpyHtoD(c_bias, new_bias, sizeof new_bias));

        CUfunction f;
        CU_CHECK(cuModuleGetFunction(&f, ptx_mod, "scale_bias"));
        int n = N;
        void *params[] = {&d_a, &d_c, &n};
        unsigned grid = grid_for(n);
        CU_CHECK(cuLaunchKernel(f, grid, 1, 1, BLOCK, 1, 1, 0, NULL, params, NULL));
        CU_CHECK(cuCtxSynchronize());
        CU_CHECK(cuMemcpyDtoH(h_c, d_c, sizeof h_c));
        for (int i = 0; i < N; i++) {
            float want = h_a[i] * 3.0f + new_bias[i & 3];
            EXPECT(h_c[i] == want, "scale_bias: out[%d] = %g, expected %g", i, h_c[i], want);
        }
        CU_CHECK(cuMemcpyDtoH(&counter, g_counter, sizeof counter));
        EXPECT(counter == 42 + (int)grid, "g_counter = %d after %u blocks, expected %d", counter,
               grid, 42 + (int)grid);
        printf("cuModuleGetGlobal: ok\n");
    }

    {
        /* The module's kernels, counted and listed, and the occupancy API. */
        unsigned count = 0;
        CU_CHECK(cuModuleGetFunctionCount(&count, ptx_mod));
        EXPECT(count == 5, "cuModuleGetFunctionCount: %u kernels, expected 5", count);
        CUfunction listed[5];
        CU_CHECK(cuModuleEnumerateFunctions(listed, count, ptx_mod));
        CUfunction va;
        CU_CHECK(cuModuleGetFunction(&va, ptx_mod, "vector_add"));
        int found = 0;
        for (unsigned i = 0; i < count; i++) found += listed[i] == va;
        EXPECT(found == 1, "cuModuleEnumerateFunctions lists vector_add once (%d)", found);
        int min_grid = 0, block = 0, min_grid2 = 0, block2 = 0;
        CU_CHECK(cuOccupancyMaxPotentialBlockSize(&min_grid, &block, va, NULL, 0, 0));
        CU_CHECK(cuOccupancyMaxPotentialBlockSizeWithFlags(&min_grid2, &block2, va, NULL, 0, 0,
                                                           CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE));
        EXPECT(block > 0 && block == block2 && min_grid == min_grid2,
               "occupancy with flags: %d/%d and %d/%d", min_grid, block, min_grid2, block2);
        CUresult r = cuOccupancyMaxPotentialBlockSizeWithFlags(&min_grid2, &block2, va, NULL, 0, 0, 8);
        EXPECT(r == CUDA_ERROR_INVALID_VALUE, "unknown occupancy flags gave %d", (int)r);
        printf("cuModuleGetFunctionCount, cuModuleEnumerateFunctions, occupancy with flags: ok\n");
    }

    // --- The pre-CUDA 4.0/6.5 names that old binaries call -------------------------
    {
        CUcontext popped = NULL, current = NULL;
        CU_CHECK(cuCtxPopCurrent_v1(&popped));
        EXPECT(popped == ctx, "cuCtxPopCurrent popped %p, not %p", (void *)popped, (void *)ctx);
        CU_CHECK(cuCtxPushCurrent_v1(ctx));
        CU_CHECK(cuCtxGetCurrent(&current));
        EXPECT(current == ctx, "cuCtxPushCurrent did not make the context current");
        char *text = read_file(ptx_path, NULL);
        CUlinkState link;
        void *cubin;
        size_t cubin_size;
        CU_CHECK(cuLinkCreate_v1(0, NULL, NULL, &link));
        CU_CHECK(cuLinkAddData_v1(link, CU_JIT_INPUT_PTX, text, strlen(text) + 1, "kernels", 0, NULL,
                                  NULL));
        CU_CHECK(cuLinkComplete(link, &cubin, &cubin_size));
        CUmodule linked;
        CU_CHECK(cuModuleLoadData(&linked, cubin));
        CU_CHECK(cuLinkDestroy(link));
        free(text);
        run_vector_add(linked, NULL, d_a, d_b, d_c, "cuLinkCreate (pre-6.5 names)");
        CU_CHECK(cuModuleUnload(linked));
        float *pinned;
        CU_CHECK(cuMemAllocHost_v1((void **)&pinned, 4096));
        pinned[0] = 1.0f;
        CU_CHECK(cuMemFreeHost(pinned));
        printf("cuCtxPopCurrent, cuCtxPushCurrent, cuLinkCreate, cuLinkAddData, cuMemAllocHost (old names): ok\n");
    }

    CU_CHECK(cuModuleUnload(ptx_mod));
    CU_CHECK(cuMemFree(d_a));
    CU_CHECK(cuMemFree(d_b));
    CU_CHECK(cuMemFree(d_c));
    CU_CHECK(cuCtxDestroy(ctx));
    printf("PASS\n");
    return 0;
}
