// Device queries through the CUDA runtime API: device count and selection,
// properties, attributes, versions, flags, memory info, profiler control,
// synchronize and reset. No kernels.
//
// Self-checking: prints `key: value` lines, `FAIL: <reason>` and exit status 1
// on any mismatch, and `PASS` as the last line on success.

#include <cuda_runtime.h>
#if defined(__has_include)
#if __has_include(<cuda_profiler_api.h>)
#include <cuda_profiler_api.h>
#define RCUD_HAVE_PROFILER_HEADER 1
#endif
#endif
#ifndef RCUD_HAVE_PROFILER_HEADER
// The PyPI packages of the CUDA 13 compiler and runtime do not ship
// cuda_profiler_api.h (it is in nvidia-cuda-profiler-api); both functions are
// exported by libcudart.so.13 all the same.
extern "C" cudaError_t CUDARTAPI cudaProfilerStart(void);
extern "C" cudaError_t CUDARTAPI cudaProfilerStop(void);
#endif

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "check.h"

// Checks that cudaDeviceGetAttribute(attr) equals the given cudaDeviceProp field.
static void check_attr(int dev, cudaDeviceAttr attr, const char *attr_name,
                       long long expected, const char *field) {
    int value = -1;
    CHECK(cudaDeviceGetAttribute(&value, attr, dev));
    printf("device %d: attribute %s: %d\n", dev, attr_name, value);
    EXPECT((long long)value == expected,
           "device %d: %s = %d but cudaDeviceProp.%s = %lld", dev, attr_name, value,
           field, expected);
}

#define CHECK_ATTR(dev, attr, expected) check_attr(dev, attr, #attr, (long long)(expected), #expected)

static void query_device(int dev) {
    CHECK(cudaSetDevice(dev));
    int current = -1;
    CHECK(cudaGetDevice(&current));
    EXPECT(current == dev, "cudaGetDevice returned %d after cudaSetDevice(%d)", current, dev);

    cudaDeviceProp p;
    memset(&p, 0, sizeof p);
    CHECK(cudaGetDeviceProperties(&p, dev));
    EXPECT(strnlen(p.name, sizeof p.name) < sizeof p.name, "device %d: name is not NUL-terminated", dev);
    EXPECT(p.name[0] != '\0', "device %d: empty name", dev);

    printf("device %d: name: %s\n", dev, p.name);
    printf("device %d: compute capability: %d.%d\n", dev, p.major, p.minor);
    printf("device %d: totalGlobalMem: %zu\n", dev, p.totalGlobalMem);
    printf("device %d: multiProcessorCount: %d\n", dev, p.multiProcessorCount);
    printf("device %d: maxThreadsPerBlock: %d\n", dev, p.maxThreadsPerBlock);
    printf("device %d: warpSize: %d\n", dev, p.warpSize);
    printf("device %d: maxThreadsDim: %d %d %d\n", dev, p.maxThreadsDim[0], p.maxThreadsDim[1],
           p.maxThreadsDim[2]);
    printf("device %d: maxGridSize: %d %d %d\n", dev, p.maxGridSize[0], p.maxGridSize[1],
           p.maxGridSize[2]);
    printf("device %d: sharedMemPerBlock: %zu\n", dev, p.sharedMemPerBlock);
    printf("device %d: l2CacheSize: %d\n", dev, p.l2CacheSize);
    printf("device %d: unifiedAddressing: %d\n", dev, p.unifiedAddressing);

    EXPECT(p.major >= 1, "device %d: compute capability major %d", dev, p.major);
    EXPECT(p.totalGlobalMem > 0, "device %d: totalGlobalMem is 0", dev);
    EXPECT(p.multiProcessorCount > 0, "device %d: multiProcessorCount is %d", dev, p.multiProcessorCount);
    EXPECT(p.maxThreadsPerBlock > 0, "device %d: maxThreadsPerBlock is %d", dev, p.maxThreadsPerBlock);
    EXPECT(p.warpSize == 32, "device %d: warpSize is %d", dev, p.warpSize);
    for (int i = 0; i < 3; i++) {
        EXPECT(p.maxThreadsDim[i] > 0, "device %d: maxThreadsDim[%d] is %d", dev, i, p.maxThreadsDim[i]);
        EXPECT(p.maxGridSize[i] > 0, "device %d: maxGridSize[%d] is %d", dev, i, p.maxGridSize[i]);
    }
    EXPECT(p.sharedMemPerBlock > 0, "device %d: sharedMemPerBlock is 0", dev);

    // Attributes agree with the properties.
    CHECK_ATTR(dev, cudaDevAttrComputeCapabilityMajor, p.major);
    CHECK_ATTR(dev, cudaDevAttrComputeCapabilityMinor, p.minor);
    CHECK_ATTR(dev, cudaDevAttrMultiProcessorCount, p.multiProcessorCount);
    CHECK_ATTR(dev, cudaDevAttrMaxThreadsPerBlock, p.maxThreadsPerBlock);
    CHECK_ATTR(dev, cudaDevAttrWarpSize, p.warpSize);
    CHECK_ATTR(dev, cudaDevAttrMaxBlockDimX, p.maxThreadsDim[0]);
    CHECK_ATTR(dev, cudaDevAttrMaxBlockDimY, p.maxThreadsDim[1]);
    CHECK_ATTR(dev, cudaDevAttrMaxBlockDimZ, p.maxThreadsDim[2]);
    CHECK_ATTR(dev, cudaDevAttrMaxGridDimX, p.maxGridSize[0]);
    CHECK_ATTR(dev, cudaDevAttrMaxGridDimY, p.maxGridSize[1]);
    CHECK_ATTR(dev, cudaDevAttrMaxGridDimZ, p.maxGridSize[2]);
    CHECK_ATTR(dev, cudaDevAttrMaxSharedMemoryPerBlock, p.sharedMemPerBlock);
    CHECK_ATTR(dev, cudaDevAttrL2CacheSize, p.l2CacheSize);
    CHECK_ATTR(dev, cudaDevAttrUnifiedAddressing, p.unifiedAddressing);
    CHECK_ATTR(dev, cudaDevAttrMaxRegistersPerBlock, p.regsPerBlock);
    CHECK_ATTR(dev, cudaDevAttrTotalConstantMemory, p.totalConstMem);
    CHECK_ATTR(dev, cudaDevAttrMaxThreadsPerMultiProcessor, p.maxThreadsPerMultiProcessor);
    CHECK_ATTR(dev, cudaDevAttrCanMapHostMemory, p.canMapHostMemory);
    CHECK_ATTR(dev, cudaDevAttrIntegrated, p.integrated);
    CHECK_ATTR(dev, cudaDevAttrGlobalMemoryBusWidth, p.memoryBusWidth);
    CHECK_ATTR(dev, cudaDevAttrAsyncEngineCount, p.asyncEngineCount);
    CHECK_ATTR(dev, cudaDevAttrPciBusId, p.pciBusID);

    // Memory info of the current device.
    size_t free_bytes = 0, total_bytes = 0;
    CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    printf("device %d: memory free: %zu\n", dev, free_bytes);
    printf("device %d: memory total: %zu\n", dev, total_bytes);
    EXPECT(free_bytes <= total_bytes, "device %d: free %zu > total %zu", dev, free_bytes, total_bytes);
    EXPECT(total_bytes == p.totalGlobalMem, "device %d: cudaMemGetInfo total %zu != totalGlobalMem %zu",
           dev, total_bytes, p.totalGlobalMem);

    // Allocating memory lowers (or keeps, with coarse accounting) the free memory.
    void *d = NULL;
    CHECK(cudaMalloc(&d, 1 << 20));
    size_t free_after = 0, total_after = 0;
    CHECK(cudaMemGetInfo(&free_after, &total_after));
    EXPECT(total_after == total_bytes, "device %d: total memory changed from %zu to %zu", dev,
           total_bytes, total_after);
    EXPECT(free_after <= free_bytes, "device %d: free memory grew from %zu to %zu after cudaMalloc",
           dev, free_bytes, free_after);
    CHECK(cudaFree(d));

    CHECK(cudaDeviceSynchronize());
}

int main() {
    int runtime_version = 0, driver_version = 0;
    CHECK(cudaRuntimeGetVersion(&runtime_version));
    CHECK(cudaDriverGetVersion(&driver_version));
    printf("runtime version: %d.%d (%d)\n", runtime_version / 1000, (runtime_version % 1000) / 10,
           runtime_version);
    printf("driver version: %d.%d (%d)\n", driver_version / 1000, (driver_version % 1000) / 10,
           driver_version);
    EXPECT(runtime_version / 1000 == 13, "runtime version %d is not CUDA 13", runtime_version);
    EXPECT(driver_version > 0, "driver version %d", driver_version);

    int count = 0;
    CHECK(cudaGetDeviceCount(&count));
    printf("device count: %d\n", count);
    EXPECT(count >= 1, "no CUDA device");

    for (int dev = 0; dev < count; dev++) {
        query_device(dev);
    }

    // Back to device 0 for the rest.
    CHECK(cudaSetDevice(0));
    int current = -1;
    CHECK(cudaGetDevice(&current));
    EXPECT(current == 0, "cudaGetDevice returned %d after cudaSetDevice(0)", current);

    // cudaChooseDevice: asking for device 0's compute capability picks a valid device.
    cudaDeviceProp p0;
    CHECK(cudaGetDeviceProperties(&p0, 0));
    cudaDeviceProp want;
    memset(&want, 0, sizeof want);
    want.major = p0.major;
    want.minor = p0.minor;
    int chosen = -1;
    CHECK(cudaChooseDevice(&chosen, &want));
    printf("chosen device: %d\n", chosen);
    EXPECT(chosen >= 0 && chosen < count, "cudaChooseDevice returned device %d of %d", chosen, count);

    // cudaSetDeviceFlags / cudaGetDeviceFlags round trip. The runtime may add
    // cudaDeviceMapHost, so only the scheduling bits are compared.
    CHECK(cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync));
    unsigned int flags = 0;
    CHECK(cudaGetDeviceFlags(&flags));
    printf("device flags: 0x%x\n", flags);
    EXPECT((flags & cudaDeviceScheduleMask) == cudaDeviceScheduleBlockingSync,
           "device flags 0x%x after cudaSetDeviceFlags(cudaDeviceScheduleBlockingSync)", flags);
    CHECK(cudaSetDeviceFlags(cudaDeviceScheduleAuto));
    CHECK(cudaGetDeviceFlags(&flags));
    EXPECT((flags & cudaDeviceScheduleMask) == cudaDeviceScheduleAuto,
           "device flags 0x%x after cudaSetDeviceFlags(cudaDeviceScheduleAuto)", flags);

    CHECK(cudaProfilerStart());
    CHECK(cudaProfilerStop());
    printf("profiler start/stop: ok\n");

    CHECK(cudaDeviceSynchronize());
    CHECK(cudaDeviceReset());
    printf("device reset: ok\n");

    // The device is usable again after a reset.
    void *d = NULL;
    CHECK(cudaMalloc(&d, 4096));
    CHECK(cudaMemset(d, 0x5A, 4096));
    unsigned char back[4096];
    CHECK(cudaMemcpy(back, d, sizeof back, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < sizeof back; i++) {
        EXPECT(back[i] == 0x5A, "after reset: byte %zu is 0x%02x, expected 0x5a", i, back[i]);
    }
    CHECK(cudaFree(d));
    printf("after reset: malloc/memset/memcpy ok\n");

    CHECK(cudaGetLastError());
    printf("PASS\n");
    return 0;
}
