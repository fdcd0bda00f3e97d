// The CUDA driver loaded at run time, the way Python JITs and frameworks do it
// (not linked with -lcuda): dlopen("libcuda.so.1"), then
//   - like Numba: dlsym of the versioned symbols themselves (cuMemAlloc_v2, ...);
//   - like cuda-python: dlsym of cuGetProcAddress_v2 only, and every other
//     function through it by base name and CUDA version (13.0, so
//     cuCtxSynchronize is its 13.0 form, which takes the context).
// Both sets run the same vector addition from a PTX module.
//
// Usage: d_dlopen KERNELS.ptx   (built from kernels.cu)
//
// Prints one line per case (`<what>: ok`). Self-checking: `FAIL: <reason>` and
// exit status 1 on any error or mismatch, `PASS` as the last line on success.

#include <cuda.h>
#include <cudaTypedefs.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static PFN_cuGetErrorName_v6000 p_cuGetErrorName;

static const char *error_name(CUresult r) {
    const char *name = NULL;
    if (p_cuGetErrorName == NULL || p_cuGetErrorName(r, &name) != CUDA_SUCCESS || name == NULL)
        return "unknown CUresult";
    return name;
}

#define CU_CHECK(call)                                                              \
    do {                                                                            \
        CUresult r_ = (call);                                                       \
        if (r_ != CUDA_SUCCESS) {                                                   \
            printf("FAIL: %s returned %s (%d) at line %d\n", #call, error_name(r_), \
                   (int)r_, __LINE__);                                              \
            fflush(stdout);                                                         \
            exit(1);                                                                \
        }                                                                           \
    } while (0)

#define EXPECT(cond, ...)                                                           \
    do {                                                                            \
        if (!(cond)) {                                                              \
            printf("FAIL: ");                                                       \
            printf(__VA_ARGS__);                                                    \
            printf(" (%s, line %d)\n", #cond, __LINE__);                            \
            fflush(stdout);                                                         \
            exit(1);                                                                \
        }                                                                           \
    } while (0)

// The functions the vector addition needs, however they were found.
struct driver {
    PFN_cuInit_v2000 init;
    PFN_cuDeviceGet_v2000 device_get;
    PFN_cuDevicePrimaryCtxRetain_v7000 primary_retain;
    PFN_cuDevicePrimaryCtxRelease_v11000 primary_release;
    PFN_cuCtxSetCurrent_v4000 set_current;
    PFN_cuModuleLoadDataEx_v2010 load_data_ex;
    PFN_cuModuleGetFunction_v2000 get_function;
    PFN_cuModuleUnload_v2000 unload;
    PFN_cuMemAlloc_v3020 mem_alloc;
    PFN_cuMemFree_v3020 mem_free;
    PFN_cuMemcpyHtoD_v3020 htod;
    PFN_cuMemcpyDtoH_v3020 dtoh;
    PFN_cuLaunchKernel_v4000 launch;
    PFN_cuCtxSynchronize_v13000 synchronize;  // the cuda-python set's
    PFN_cuCtxSynchronize_v2000 synchronize_v1;  // the Numba set's
};

static void *must_dlsym(void *lib, const char *name) {
    dlerror();
    void *p = dlsym(lib, name);
    EXPECT(p != NULL, "dlsym(libcuda.so.1, %s): %s", name, dlerror());
    return p;
}

static void load_by_dlsym(void *lib, struct driver *d) {
    d->init = (PFN_cuInit_v2000)must_dlsym(lib, "cuInit");
    d->device_get = (PFN_cuDeviceGet_v2000)must_dlsym(lib, "cuDeviceGet");
    d->primary_retain = (PFN_cuDevicePrimaryCtxRetain_v7000)must_dlsym(lib, "cuDevicePrimaryCtxRetain");
    d->primary_release =
        (PFN_cuDevicePrimaryCtxRelease_v11000)must_dlsym(lib, "cuDevicePrimaryCtxRelease_v2");
    d->set_current = (PFN_cuCtxSetCurrent_v4000)must_dlsym(lib, "cuCtxSetCurrent");
    d->load_data_ex = (PFN_cuModuleLoadDataEx_v2010)must_dlsym(lib, "cuModuleLoadDataEx");
    d->get_function = (PFN_cuModuleGetFunction_v2000)must_dlsym(lib, "cuModuleGetFunction");
    d->unload = (PFN_cuModuleUnload_v2000)must_dlsym(lib, "cuModuleUnload");
    d->mem_alloc = (PFN_cuMemAlloc_v3020)must_dlsym(lib, "cuMemAlloc_v2");
    d->mem_free = (PFN_cuMemFree_v3020)must_dlsym(lib, "cuMemFree_v2");
    d->htod = (PFN_cuMemcpyHtoD_v3020)must_dlsym(lib, "cuMemcpyHtoD_v2");
    d->dtoh = (PFN_cuMemcpyDtoH_v3020)must_dlsym(lib, "cuMemcpyDtoH_v2");
    d->launch = (PFN_cuLaunchKernel_v4000)must_dlsym(lib, "cuLaunchKernel");
    d->synchronize = NULL;
    d->synchronize_v1 = (PFN_cuCtxSynchronize_v2000)must_dlsym(lib, "cuCtxSynchronize");
}

static PFN_cuGetProcAddress_v12000 p_cuGetProcAddress;

static void *proc(const char *name) {
    void *p = NULL;
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    CUresult r = p_cuGetProcAddress(name, &p, 13000, CU_GET_PROC_ADDRESS_DEFAULT, &status);
    EXPECT(r == CUDA_SUCCESS && p != NULL && status == CU_GET_PROC_ADDRESS_SUCCESS,
           "cuGetProcAddress(%s, 13000): %s, pointer %p, status %d", name, error_name(r), p,
           (int)status);
    return p;
}

static void load_by_proc_address(struct driver *d) {
    d->init = (PFN_cuInit_v2000)proc("cuInit");
    d->device_get = (PFN_cuDeviceGet_v2000)proc("cuDeviceGet");
    d->primary_retain = (PFN_cuDevicePrimaryCtxRetain_v7000)proc("cuDevicePrimaryCtxRetain");
    d->primary_release = (PFN_cuDevicePrimaryCtxRelease_v11000)proc("cuDevicePrimaryCtxRelease");
    d->set_current = (PFN_cuCtxSetCurrent_v4000)proc("cuCtxSetCurrent");
    d->load_data_ex = (PFN_cuModuleLoadDataEx_v2010)proc("cuModuleLoadDataEx");
    d->get_function = (PFN_cuModuleGetFunction_v2000)proc("cuModuleGetFunction");
    d->unload = (PFN_cuModuleUnload_v2000)proc("cuModuleUnload");
    d->mem_alloc = (PFN_cuMemAlloc_v3020)proc("cuMemAlloc");
    d->mem_free = (PFN_cuMemFree_v3020)proc("cuMemFree");
    d->htod = (PFN_cuMemcpyHtoD_v3020)proc("cuMemcpyHtoD");
    d->dtoh = (PFN_cuMemcpyDtoH_v3020)proc("cuMemcpyDtoH");
    d->launch = (PFN_cuLaunchKernel_v4000)proc("cuLaunchKernel");
    d->synchronize = (PFN_cuCtxSynchronize_v13000)proc("cuCtxSynchronize");
    d->synchronize_v1 = NULL;
}

static void vector_add(const struct driver *d, const char *ptx, const char *how) {
    CU_CHECK(d->init(0));
    CUdevice dev;
    CU_CHECK(d->device_get(&dev, 0));
    CUcontext ctx;
    CU_CHECK(d->primary_retain(&ctx, dev));
    CU_CHECK(d->set_current(ctx));
    CUmodule mod;
    CU_CHECK(d->load_data_ex(&mod, ptx, 0, NULL, NULL));
    CUfunction f;
    CU_CHECK(d->get_function(&f, mod, "vector_add"));

    enum { n = 5000 };
    static float a[n], b[n], c[n];
    for (int i = 0; i < n; i++) {
        a[i] = (float)i;
        b[i] = (float)(n - 2 * i);
        c[i] = -1.0f;
    }
    CUdeviceptr da, db, dc;
    CU_CHECK(d->mem_alloc(&da, sizeof a));
    CU_CHECK(d->mem_alloc(&db, sizeof b));
    CU_CHECK(d->mem_alloc(&dc, sizeof c));
    CU_CHECK(d->htod(da, a, sizeof a));
    CU_CHECK(d->htod(db, b, sizeof b));
    int count = n;
    void *params[] = {&da, &db, &dc, &count};
    CU_CHECK(d->launch(f, (n + 127) / 128, 1, 1, 128, 1, 1, 0, NULL, params, NULL));
    if (d->synchronize) {
        CU_CHECK(d->synchronize(ctx));
    } else {
        CU_CHECK(d->synchronize_v1());
    }
    CU_CHECK(d->dtoh(c, dc, sizeof c));
    for (int i = 0; i < n; i++) {
        EXPECT(c[i] == a[i] + b[i], "%s: c[%d] = %g, expected %g", how, i, c[i], a[i] + b[i]);
    }
    CU_CHECK(d->mem_free(da));
    CU_CHECK(d->mem_free(db));
    CU_CHECK(d->mem_free(dc));
    CU_CHECK(d->unload(mod));
    CU_CHECK(d->set_current(NULL));
    CU_CHECK(d->primary_release(dev));
    printf("vector_add via %s: ok\n", how);
}

static char *read_ptx(const char *path) {
    FILE *f = fopen(path, "rb");
    EXPECT(f != NULL, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    EXPECT(len > 0, "%s is empty", path);
    rewind(f);
    char *data = (char *)malloc((size_t)len + 1);
    EXPECT(data != NULL && fread(data, 1, (size_t)len, f) == (size_t)len, "cannot read %s", path);
    fclose(f);
    data[len] = '\0';
    return data;
}

int main(int argc, char **argv) {
    EXPECT(argc == 2, "usage: %s KERNELS.ptx", argv[0]);
    char *ptx = read_ptx(argv[1]);

    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    EXPECT(lib != NULL, "dlopen(libcuda.so.1): %s", dlerror());
    p_cuGetErrorName = (PFN_cuGetErrorName_v6000)must_dlsym(lib, "cuGetErrorName");
    PFN_cuDriverGetVersion_v2020 get_version =
        (PFN_cuDriverGetVersion_v2020)must_dlsym(lib, "cuDriverGetVersion");
    int version = 0;
    CU_CHECK(get_version(&version));
    EXPECT(version >= 13000, "cuDriverGetVersion reports %d", version);
    printf("libcuda.so.1 loaded, driver version %d\n", version);

    struct driver by_dlsym;
    load_by_dlsym(lib, &by_dlsym);
    vector_add(&by_dlsym, ptx, "dlsym");

    p_cuGetProcAddress = (PFN_cuGetProcAddress_v12000)must_dlsym(lib, "cuGetProcAddress_v2");
    struct driver by_proc;
    load_by_proc_address(&by_proc);
    vector_add(&by_proc, ptx, "cuGetProcAddress");

    free(ptx);
    // Frameworks never dlclose the driver; neither does this program.
    printf("PASS\n");
    return 0;
}
