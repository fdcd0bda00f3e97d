// Context semantics and error codes of the CUDA driver API (cuda.h, linked
// with -lcuda, no runtime): initialisation, the primary context, the
// per-thread context stack (cuCtxCreate, cuCtxPushCurrent / cuCtxPopCurrent,
// cuCtxSetCurrent, cuCtxDestroy), per-thread current contexts, versions,
// cuGetProcAddress, cuGetExportTable and the error codes of common mistakes.
//
// Usage: d_contexts KERNELS.ptx   (built from kernels.cu)
//
// Prints one line per checked error (`<call> -> <error name>`) and one per
// group of checks (`<what>: ok`). Self-checking: `FAIL: <reason>` and exit
// status 1 on any unexpected result, `PASS` as the last line on success.

#include <cuda.h>

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drv_check.h"

static CUcontext current(void) {
    CUcontext ctx = (CUcontext)(uintptr_t)0xdeadbeef;
    CU_CHECK(cuCtxGetCurrent(&ctx));
    return ctx;
}

// --- A second host thread -------------------------------------------------------

struct thread_args {
    CUcontext ctx;      // the context the main thread has current
    CUdeviceptr buf;    // allocated by the main thread in ctx
    int n;
    const char *error;  // NULL, or what went wrong
};

#define THREAD_EXPECT(cond, what)                                                   \
    do {                                                                            \
        if (!(cond)) {                                                              \
            args->error = what;                                                     \
            return NULL;                                                            \
        }                                                                           \
    } while (0)

static void *thread_main(void *p) {
    struct thread_args *args = (struct thread_args *)p;
    // A new thread has no current context, whatever the main thread has.
    CUcontext ctx = (CUcontext)(uintptr_t)0xdeadbeef;
    THREAD_EXPECT(cuCtxGetCurrent(&ctx) == CUDA_SUCCESS, "cuCtxGetCurrent failed in the thread");
    THREAD_EXPECT(ctx == NULL, "a new thread starts with a current context");
    CUdeviceptr d;
    THREAD_EXPECT(cuMemAlloc(&d, 16) == CUDA_ERROR_INVALID_CONTEXT,
                  "cuMemAlloc without a current context in the thread did not give "
                  "CUDA_ERROR_INVALID_CONTEXT");
    // Make the main thread's context current here too and use its memory.
    THREAD_EXPECT(cuCtxSetCurrent(args->ctx) == CUDA_SUCCESS, "cuCtxSetCurrent failed in the thread");
    THREAD_EXPECT(cuCtxGetCurrent(&ctx) == CUDA_SUCCESS && ctx == args->ctx,
                  "cuCtxGetCurrent in the thread is not the context it set");
    int *host = (int *)malloc((size_t)args->n * sizeof(int));
    THREAD_EXPECT(host != NULL, "out of memory");
    for (int i = 0; i < args->n; i++) host[i] = 1000 + i;
    CUresult r = cuMemcpyHtoD(args->buf, host, (size_t)args->n * sizeof(int));
    free(host);
    THREAD_EXPECT(r == CUDA_SUCCESS, "cuMemcpyHtoD in the thread failed");
    THREAD_EXPECT(cuCtxSynchronize() == CUDA_SUCCESS, "cuCtxSynchronize in the thread failed");
    // Leave the thread with no current context (the stack is popped empty).
    THREAD_EXPECT(cuCtxPopCurrent(&ctx) == CUDA_SUCCESS && ctx == args->ctx,
                  "cuCtxPopCurrent in the thread did not return its context");
    THREAD_EXPECT(cuCtxGetCurrent(&ctx) == CUDA_SUCCESS && ctx == NULL,
                  "the thread still has a current context after popping it");
    return NULL;
}

int main(int argc, char **argv) {
    EXPECT(argc == 2, "usage: %s KERNELS.ptx", argv[0]);

    // --- Before cuInit --------------------------------------------------------------
    {
        const char *s = NULL;
        CU_CHECK(cuGetErrorName(CUDA_ERROR_INVALID_CONTEXT, &s));
        EXPECT(s != NULL && strcmp(s, "CUDA_ERROR_INVALID_CONTEXT") == 0,
               "cuGetErrorName(CUDA_ERROR_INVALID_CONTEXT) = %s", s ? s : "(null)");
        s = NULL;
        CU_CHECK(cuGetErrorString(CUDA_ERROR_INVALID_CONTEXT, &s));
        EXPECT(s != NULL && strlen(s) > 0, "cuGetErrorString gave no text");
        printf("CUDA_ERROR_INVALID_CONTEXT: %s\n", s);
        s = NULL;
        CU_CHECK(cuGetErrorName(CUDA_SUCCESS, &s));
        EXPECT(s != NULL && strcmp(s, "CUDA_SUCCESS") == 0, "cuGetErrorName(CUDA_SUCCESS) = %s",
               s ? s : "(null)");
        s = "untouched";
        CU_EXPECT_ERR_AS("cuGetErrorName(9999)", cuGetErrorName((CUresult)9999, &s),
                         CUDA_ERROR_INVALID_VALUE);
        EXPECT(s == NULL, "cuGetErrorName of an unknown code left the string set");
        int version = 0;
        CU_CHECK(cuDriverGetVersion(&version));
        EXPECT(version >= 13000, "cuDriverGetVersion reports %d, expected CUDA 13 or later",
               version);
        printf("driver version >= 13000: ok\n");
        CUdevice dev;
        CU_EXPECT_ERR_AS("cuDeviceGet before cuInit", cuDeviceGet(&dev, 0),
                         CUDA_ERROR_NOT_INITIALIZED);
    }

    CU_CHECK(cuInit(0));
    CU_CHECK(cuInit(0));  // again: harmless

    // --- Devices ---------------------------------------------------------------------
    int count = 0;
    CU_CHECK(cuDeviceGetCount(&count));
    EXPECT(count >= 1, "no devices");
    CUdevice dev;
    CU_CHECK(cuDeviceGet(&dev, 0));
    CUdevice bad;
    CU_EXPECT_ERR_AS("cuDeviceGet(count)", cuDeviceGet(&bad, count), CUDA_ERROR_INVALID_DEVICE);
    CU_EXPECT_ERR_AS("cuDeviceGet(-1)", cuDeviceGet(&bad, -1), CUDA_ERROR_INVALID_DEVICE);
    int attr = 0;
    CU_EXPECT_ERR_AS("cuDeviceGetAttribute(bad device)",
                     cuDeviceGetAttribute(&attr, CU_DEVICE_ATTRIBUTE_WARP_SIZE, (CUdevice)count),
                     CUDA_ERROR_INVALID_DEVICE);
    CUcontext ignored;
    CU_EXPECT_ERR_AS("cuDevicePrimaryCtxRetain(bad device)",
                     cuDevicePrimaryCtxRetain(&ignored, (CUdevice)count),
                     CUDA_ERROR_INVALID_DEVICE);

    // --- No context yet ------------------------------------------------------------------
    EXPECT(current() == NULL, "a current context before any was made current");
    {
        CUdeviceptr d;
        CUdevice d2;
        CUcontext popped = (CUcontext)(uintptr_t)0xdeadbeef;
        unsigned int api = 0;
        CU_EXPECT_ERR_AS("cuMemAlloc without context", cuMemAlloc(&d, 256),
                         CUDA_ERROR_INVALID_CONTEXT);
        CU_EXPECT_ERR_AS("cuCtxSynchronize without context", cuCtxSynchronize(),
                         CUDA_ERROR_INVALID_CONTEXT);
        CU_EXPECT_ERR_AS("cuCtxGetDevice without context", cuCtxGetDevice(&d2),
                         CUDA_ERROR_INVALID_CONTEXT);
        CU_EXPECT_ERR_AS("cuCtxGetApiVersion(NULL) without context", cuCtxGetApiVersion(NULL, &api),
                         CUDA_ERROR_INVALID_CONTEXT);
        CU_EXPECT_ERR_AS("cuCtxPopCurrent on an empty stack", cuCtxPopCurrent(&popped),
                         CUDA_ERROR_INVALID_CONTEXT);
        char *ptx = read_file(argv[1], NULL);
        CUmodule m;
        CU_EXPECT_ERR_AS("cuModuleLoadData without context", cuModuleLoadData(&m, ptx),
                         CUDA_ERROR_INVALID_CONTEXT);
        free(ptx);
        // cuCtxSetCurrent(NULL) with an empty stack is a no-op.
        CU_CHECK(cuCtxSetCurrent(NULL));
        EXPECT(current() == NULL, "cuCtxSetCurrent(NULL) made a context current");
    }
    printf("no current context: ok\n");

    // --- The primary context ----------------------------------------------------------
    CUcontext primary;
    CU_CHECK(cuDevicePrimaryCtxRetain(&primary, dev));
    EXPECT(primary != NULL, "cuDevicePrimaryCtxRetain returned NULL");
    {
        CUcontext again;
        CU_CHECK(cuDevicePrimaryCtxRetain(&again, dev));
        EXPECT(again == primary, "a second retain returned another primary context");
        CU_CHECK(cuDevicePrimaryCtxRelease(dev));
        unsigned int flags = 0;
        int active = 0;
        CU_CHECK(cuDevicePrimaryCtxGetState(dev, &flags, &active));
        EXPECT(active == 1, "the retained primary context is not active");
        EXPECT(current() == NULL, "cuDevicePrimaryCtxRetain made the context current");
    }
    printf("primary context: ok\n");

    // --- The context stack --------------------------------------------------------------
    CUcontext a, b, popped;
    CU_CHECK(cuCtxCreate(&a, NULL, 0, dev));
    EXPECT(a != NULL && a != primary, "cuCtxCreate returned %p (primary %p)", (void *)a,
           (void *)primary);
    EXPECT(current() == a, "cuCtxCreate did not make the new context current");
    {
        CUdevice d2 = -1;
        CU_CHECK(cuCtxGetDevice(&d2));
        EXPECT(d2 == dev, "cuCtxGetDevice gave %d, expected %d", (int)d2, (int)dev);
        unsigned int api = 0;
        CU_CHECK(cuCtxGetApiVersion(a, &api));
        EXPECT(api >= 3020, "cuCtxGetApiVersion gave %u", api);
        unsigned int api_current = 0;
        CU_CHECK(cuCtxGetApiVersion(NULL, &api_current));
        EXPECT(api_current == api, "cuCtxGetApiVersion(NULL) gave %u, for the context %u",
               api_current, api);
        printf("cuCtxGetApiVersion: ok\n");
    }
    CU_CHECK(cuCtxPushCurrent(primary));
    EXPECT(current() == primary, "cuCtxPushCurrent did not make the primary context current");
    CU_CHECK(cuCtxCreate(&b, NULL, 0, dev));  // pushed on top: [a, primary, b]
    EXPECT(b != a && b != primary, "cuCtxCreate returned an existing context");
    EXPECT(current() == b, "the second cuCtxCreate did not make its context current");
    CU_CHECK(cuCtxPopCurrent(&popped));
    EXPECT(popped == b, "popped %p, expected b %p", (void *)popped, (void *)b);
    EXPECT(current() == primary, "after popping b the primary context is not current");
    CU_CHECK(cuCtxPopCurrent(&popped));
    EXPECT(popped == primary, "popped %p, expected the primary context %p", (void *)popped,
           (void *)primary);
    EXPECT(current() == a, "after popping the primary context a is not current");
    CU_CHECK(cuCtxPopCurrent(&popped));
    EXPECT(popped == a, "popped %p, expected a %p", (void *)popped, (void *)a);
    EXPECT(current() == NULL, "the stack is not empty after popping everything");
    CU_EXPECT_ERR_AS("cuCtxPopCurrent after popping everything", cuCtxPopCurrent(&popped),
                     CUDA_ERROR_INVALID_CONTEXT);
    // cuCtxSetCurrent pushes onto an empty stack and replaces the top otherwise.
    CU_CHECK(cuCtxSetCurrent(b));
    EXPECT(current() == b, "cuCtxSetCurrent(b) did not make b current");
    CU_CHECK(cuCtxPushCurrent(a));  // [b, a]
    CU_CHECK(cuCtxSetCurrent(primary));  // [b, primary]
    EXPECT(current() == primary, "cuCtxSetCurrent did not replace the top of the stack");
    CU_CHECK(cuCtxPopCurrent(&popped));
    EXPECT(popped == primary, "cuCtxSetCurrent pushed instead of replacing the top");
    EXPECT(current() == b, "b is not current below the replaced top");
    CU_CHECK(cuCtxSetCurrent(NULL));  // pops b
    EXPECT(current() == NULL, "cuCtxSetCurrent(NULL) did not pop the top");
    printf("context stack: ok\n");

    // --- Work in contexts; memory belongs to its context -----------------------------
    const int n = 4096;
    CUdeviceptr in_a;
    CU_CHECK(cuCtxPushCurrent(a));
    CU_CHECK(cuMemAlloc(&in_a, (size_t)n * sizeof(int)));
    CU_CHECK(cuMemsetD32(in_a, 7, (size_t)n));
    CU_CHECK(cuCtxSynchronize());
    {
        char *ptx = read_file(argv[1], NULL);
        CUmodule mod;
        CU_CHECK(cuModuleLoadData(&mod, ptx));
        free(ptx);
        CUfunction f;
        CU_EXPECT_ERR_AS("cuModuleGetFunction(no_such_kernel)",
                         cuModuleGetFunction(&f, mod, "no_such_kernel"), CUDA_ERROR_NOT_FOUND);
        CUdeviceptr g;
        size_t bytes;
        CU_EXPECT_ERR_AS("cuModuleGetGlobal(no_such_variable)",
                         cuModuleGetGlobal(&g, &bytes, mod, "no_such_variable"),
                         CUDA_ERROR_NOT_FOUND);
        CU_CHECK(cuModuleGetFunction(&f, mod, "mul_add_index"));
        int factor = 3, count_arg = n;
        void *params[] = {&in_a, &count_arg, &factor};
        CU_CHECK(cuLaunchKernel(f, (unsigned)((n + 127) / 128), 1, 1, 128, 1, 1, 0, NULL, params,
                                NULL));
        CU_CHECK(cuCtxSynchronize());
        int *host = (int *)malloc((size_t)n * sizeof(int));
        EXPECT(host != NULL, "out of memory");
        CU_CHECK(cuMemcpyDtoH(host, in_a, (size_t)n * sizeof(int)));
        for (int i = 0; i < n; i++) EXPECT(host[i] == 21 + i, "out[%d] = %d", i, host[i]);
        free(host);
        CU_CHECK(cuModuleUnload(mod));
        printf("kernel in a created context: ok\n");
    }
    {
        static const char garbage[] = "this is neither PTX nor a cubin nor a fat binary";
        CUmodule m = NULL;
        CUresult r = cuModuleLoadData(&m, garbage);
        printf("cuModuleLoadData(garbage) -> %s\n", cu_error_name(r));
        EXPECT(r != CUDA_SUCCESS, "cuModuleLoadData accepted garbage");
        if (r != CUDA_ERROR_INVALID_IMAGE && r != CUDA_ERROR_INVALID_PTX &&
            r != CUDA_ERROR_NO_BINARY_FOR_GPU) {
            printf("note: cuModuleLoadData(garbage) gave %s, CUDA gives CUDA_ERROR_INVALID_IMAGE\n",
                   cu_error_name(r));
        }
        // An ELF header of no machine with every offset and count 0 (large enough
        // that a reader following them stays inside it).
        static unsigned char not_a_cubin[4096];
        memcpy(not_a_cubin, "\x7f" "ELF\x02\x01\x01", 7);
        r = cuModuleLoadData(&m, not_a_cubin);
        printf("cuModuleLoadData(empty ELF) -> %s\n", cu_error_name(r));
        EXPECT(r != CUDA_SUCCESS, "cuModuleLoadData accepted an ELF image that is no cubin");
    }

    // --- A second thread -----------------------------------------------------------------
    {
        struct thread_args args = {a, in_a, n, NULL};
        pthread_t thread;
        EXPECT(pthread_create(&thread, NULL, thread_main, &args) == 0, "pthread_create failed");
        EXPECT(pthread_join(thread, NULL) == 0, "pthread_join failed");
        EXPECT(args.error == NULL, "in the second thread: %s", args.error);
        EXPECT(current() == a, "the thread changed the main thread's current context");
        int *host = (int *)malloc((size_t)n * sizeof(int));
        EXPECT(host != NULL, "out of memory");
        CU_CHECK(cuMemcpyDtoH(host, in_a, (size_t)n * sizeof(int)));
        for (int i = 0; i < n; i++) {
            EXPECT(host[i] == 1000 + i, "the thread's copy: buf[%d] = %d", i, host[i]);
        }
        free(host);
        printf("per-thread current context: ok\n");
    }

    // --- A second device (when there is one) -------------------------------------------
    if (count >= 2) {
        CUdevice dev1;
        CU_CHECK(cuDeviceGet(&dev1, 1));
        CUcontext primary1;
        CU_CHECK(cuDevicePrimaryCtxRetain(&primary1, dev1));
        EXPECT(primary1 != primary, "devices 0 and 1 share a primary context");
        CU_CHECK(cuCtxPushCurrent(primary1));  // [a, primary1]
        CUdevice d2 = -1;
        CU_CHECK(cuCtxGetDevice(&d2));
        EXPECT(d2 == dev1, "cuCtxGetDevice in device 1's primary context gave %d", (int)d2);
        // Modules belong to a context: load the kernels again for this one.
        char *ptx = read_file(argv[1], NULL);
        CUmodule mod1;
        CU_CHECK(cuModuleLoadData(&mod1, ptx));
        free(ptx);
        CUfunction f;
        CU_CHECK(cuModuleGetFunction(&f, mod1, "mul_add_index"));
        CUdeviceptr in_1;
        CU_CHECK(cuMemAlloc(&in_1, (size_t)n * sizeof(int)));
        // Device 0's buffer (1000 + i, written by the thread) to device 1.
        CU_CHECK(cuMemcpyPeer(in_1, primary1, in_a, a, (size_t)n * sizeof(int)));
        int factor = 2, count_arg = n;
        void *params[] = {&in_1, &count_arg, &factor};
        CU_CHECK(cuLaunchKernel(f, (unsigned)((n + 255) / 256), 1, 1, 256, 1, 1, 0, NULL, params,
                                NULL));
        CU_CHECK(cuCtxSynchronize());
        int *host = (int *)malloc((size_t)n * sizeof(int));
        EXPECT(host != NULL, "out of memory");
        CU_CHECK(cuMemcpyDtoH(host, in_1, (size_t)n * sizeof(int)));
        for (int i = 0; i < n; i++) {
            EXPECT(host[i] == 2 * (1000 + i) + i, "device 1: out[%d] = %d", i, host[i]);
        }
        free(host);
        CU_CHECK(cuMemFree(in_1));
        CU_CHECK(cuModuleUnload(mod1));
        CU_CHECK(cuCtxPopCurrent(&popped));
        EXPECT(popped == primary1, "popped %p, expected device 1's primary context", (void *)popped);
        EXPECT(current() == a, "a is not current again");
        CU_CHECK(cuDevicePrimaryCtxRelease(dev1));
        printf("second device: ok\n");
    } else {
        printf("second device: not present\n");
    }

    // --- cuGetProcAddress ---------------------------------------------------------------
    {
        void *p = NULL;
        CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        CU_CHECK(cuGetProcAddress("cuMemAlloc", &p, 13000, CU_GET_PROC_ADDRESS_DEFAULT, &status));
        EXPECT(p != NULL && status == CU_GET_PROC_ADDRESS_SUCCESS,
               "cuGetProcAddress(cuMemAlloc): pointer %p, status %d", p, (int)status);
        CUresult(CUDAAPI * mem_alloc)(CUdeviceptr *, size_t) =
            (CUresult(CUDAAPI *)(CUdeviceptr *, size_t))p;
        CUdeviceptr d = 0;
        CU_CHECK(mem_alloc(&d, 1 << 20));
        EXPECT(d != 0, "the cuMemAlloc from cuGetProcAddress returned 0");
        CU_CHECK(cuMemsetD8(d, 0x5a, 1 << 20));
        unsigned char probe[16];
        CU_CHECK(cuMemcpyDtoH(probe, d + 4096, sizeof probe));
        for (int i = 0; i < 16; i++) EXPECT(probe[i] == 0x5a, "probe[%d] = %d", i, probe[i]);
        CU_CHECK(cuMemFree(d));

        p = NULL;
        CU_CHECK(cuGetProcAddress("cuGetErrorName", &p, 13000, CU_GET_PROC_ADDRESS_DEFAULT,
                                  &status));
        EXPECT(p != NULL && status == CU_GET_PROC_ADDRESS_SUCCESS, "cuGetErrorName not found");
        const char *s = NULL;
        CU_CHECK(((CUresult(CUDAAPI *)(CUresult, const char **))p)(CUDA_ERROR_NOT_FOUND, &s));
        EXPECT(s != NULL && strcmp(s, "CUDA_ERROR_NOT_FOUND") == 0, "name %s", s ? s : "(null)");

        // A symbol that does not exist: no pointer, SYMBOL_NOT_FOUND (cuda.h documents
        // CUDA_SUCCESS for the call, NVIDIA's drivers return CUDA_ERROR_NOT_FOUND).
        p = (void *)&status;
        status = CU_GET_PROC_ADDRESS_SUCCESS;
        CUresult r = cuGetProcAddress("cuNoSuchFunction", &p, 13000, CU_GET_PROC_ADDRESS_DEFAULT,
                                      &status);
        printf("cuGetProcAddress(cuNoSuchFunction) -> %s\n", cu_error_name(r));
        EXPECT(r == CUDA_SUCCESS || r == CUDA_ERROR_NOT_FOUND,
               "cuGetProcAddress of a missing symbol returned %s", cu_error_name(r));
        EXPECT(p == NULL, "cuGetProcAddress of a missing symbol left the pointer set");
        EXPECT(status == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND,
               "cuGetProcAddress of a missing symbol: status %d", (int)status);
        // A symbol newer than the version asked for (cuLaunchKernelEx: CUDA 11.6).
        p = (void *)&status;
        status = CU_GET_PROC_ADDRESS_SUCCESS;
        r = cuGetProcAddress("cuLaunchKernelEx", &p, 11000, CU_GET_PROC_ADDRESS_DEFAULT, &status);
        printf("cuGetProcAddress(cuLaunchKernelEx, 11000) -> %s\n", cu_error_name(r));
        EXPECT(r == CUDA_SUCCESS || r == CUDA_ERROR_NOT_FOUND,
               "cuGetProcAddress of a too new symbol returned %s", cu_error_name(r));
        EXPECT(p == NULL, "cuGetProcAddress of a too new symbol left the pointer set");
        EXPECT(status == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT,
               "cuGetProcAddress of a too new symbol: status %d", (int)status);
        // The same symbol at the right version, and the 13.0 ABI of cuCtxSynchronize
        // (cuCtxSynchronize_v2, which takes the context).
        CU_CHECK(cuGetProcAddress("cuLaunchKernelEx", &p, 13000, CU_GET_PROC_ADDRESS_DEFAULT,
                                  &status));
        EXPECT(p != NULL && status == CU_GET_PROC_ADDRESS_SUCCESS, "cuLaunchKernelEx not found");
        CU_CHECK(cuGetProcAddress("cuCtxSynchronize", &p, 13000, CU_GET_PROC_ADDRESS_DEFAULT,
                                  &status));
        EXPECT(p != NULL && status == CU_GET_PROC_ADDRESS_SUCCESS, "cuCtxSynchronize not found");
        CU_CHECK(((CUresult(CUDAAPI *)(CUcontext))p)(a));
        CU_CHECK(((CUresult(CUDAAPI *)(CUcontext))p)(NULL));
        printf("cuGetProcAddress: ok\n");
    }

    // --- cuGetExportTable with an unknown table -------------------------------------------
    {
        CUuuid unknown;
        for (int i = 0; i < 16; i++) unknown.bytes[i] = (char)(0xA5 ^ (i * 29));
        const void *table = NULL;
        CUresult r = cuGetExportTable(&table, &unknown);
        printf("cuGetExportTable(unknown uuid) -> %s\n", cu_error_name(r));
        EXPECT(r != CUDA_SUCCESS, "cuGetExportTable returned a table for an unknown UUID");
    }

    // --- Destroying contexts ---------------------------------------------------------------
    CU_CHECK(cuCtxPushCurrent(b));  // [a, b]
    CU_CHECK(cuCtxDestroy(b));       // current: popped, as by cuCtxPopCurrent
    EXPECT(current() == a, "destroying the current context did not pop it");
    CU_CHECK(cuMemFree(in_a));
    CU_CHECK(cuCtxDestroy(a));
    EXPECT(current() == NULL, "destroying the last context left one current");
    CU_CHECK(cuCtxSetCurrent(primary));
    CU_CHECK(cuCtxSynchronize());
    CU_CHECK(cuCtxSetCurrent(NULL));
    CU_CHECK(cuDevicePrimaryCtxRelease(dev));
    printf("cuCtxDestroy: ok\n");

    printf("PASS\n");
    return 0;
}
