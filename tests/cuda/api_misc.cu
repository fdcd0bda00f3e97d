// Smaller runtime API families: driver entry points, functions by symbol,
// peer attributes, texture and cluster limits, memory pools by location,
// asynchronous notifications, the error log, GPUDirect RDMA flushes,
// atomic capabilities, NvSciSync, special arrays and pool sharing. Each
// call is checked against what CUDA answers on the emulated device
// (compute capability 8.0, one GPU unless run with more).
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>

#include "check.h"

__global__ void kernel(int *p) {
    if (p) p[threadIdx.x] = threadIdx.x;
}

static void CUDART_CB on_notification(cudaAsyncNotificationInfo_t *, void *, cudaAsyncCallbackHandle_t) {}
static void CUDART_CB on_log(void *, cudaLogLevel, char *, size_t) {}

int main() {
    int dev = 0, count = 0;
    CHECK(cudaGetDeviceCount(&count));
    CHECK(cudaSetDevice(dev));

    // Driver entry points, through the table cuGetProcAddress serves.
    void *fn = nullptr;
    cudaDriverEntryPointQueryResult q;
    CHECK(cudaGetDriverEntryPoint("cuMemAlloc", &fn, cudaEnableDefault, &q));
    EXPECT(fn != nullptr && q == cudaDriverEntryPointSuccess, "cuMemAlloc: %p, %d", fn, (int)q);
    CHECK(cudaGetDriverEntryPointByVersion("cuDeviceGet", &fn, 12000, cudaEnableDefault, &q));
    CUdevice cu_dev = -1;
    EXPECT(fn != nullptr && ((CUresult(*)(CUdevice *, int))fn)(&cu_dev, 0) == CUDA_SUCCESS &&
               cu_dev == 0,
           "cuDeviceGet through its entry point");
    CHECK(cudaGetDriverEntryPointByVersion("cuNoSuchFunction", &fn, 12000, 0, &q));
    EXPECT(fn == nullptr && q == cudaDriverEntryPointSymbolNotFound, "a missing symbol: %d", (int)q);
    CHECK(cudaGetDriverEntryPointByVersion("cuMemAllocAsync", &fn, 11000, 0, &q));
    EXPECT(fn == nullptr && q == cudaDriverEntryPointVersionNotSufficent, "too old a version: %d",
           (int)q);
    EXPECT_ERR_AS("a version newer than the driver",
                  cudaGetDriverEntryPointByVersion("cuMemAlloc", &fn, 99000, 0, &q),
                  cudaErrorInvalidValue);
    EXPECT_ERR_AS("unknown flags", cudaGetDriverEntryPoint("cuMemAlloc", &fn, 8, &q),
                  cudaErrorInvalidValue);
    printf("driver entry points: ok\n");

    // A kernel's function handle, usable with the driver API.
    cudaFunction_t f;
    CHECK(cudaGetFuncBySymbol(&f, (const void *)kernel));
    const char *name = nullptr;
    void *get_name = nullptr;
    CHECK(cudaGetDriverEntryPointByVersion("cuFuncGetName", &get_name, 12030, 0, &q));
    EXPECT(get_name && ((CUresult(*)(const char **, CUfunction))get_name)(&name, (CUfunction)f) ==
                           CUDA_SUCCESS &&
               strstr(name, "kernel"),
           "cuFuncGetName of the handle: %s", name ? name : "(null)");
    int x = 1;
    EXPECT_ERR_AS("cudaGetFuncBySymbol of a host variable", cudaGetFuncBySymbol(&f, &x),
                  cudaErrorInvalidDeviceFunction);
    printf("cudaGetFuncBySymbol: ok\n");

    // Peers: the same device twice is refused; no link between two.
    int v = -1;
    EXPECT_ERR_AS("cudaDeviceGetP2PAttribute of one device",
                  cudaDeviceGetP2PAttribute(&v, cudaDevP2PAttrAccessSupported, 0, 0),
                  cudaErrorInvalidDevice);
    EXPECT_ERR_AS("cudaDeviceGetP2PAttribute of no device",
                  cudaDeviceGetP2PAttribute(&v, cudaDevP2PAttrAccessSupported, 0, count),
                  cudaErrorInvalidDevice);
    if (count > 1) {
        CHECK(cudaDeviceGetP2PAttribute(&v, cudaDevP2PAttrNativeAtomicSupported, 0, 1));
        EXPECT(v == 0, "native peer atomics %d", v);
    }

    // Texture and cluster limits.
    size_t width = 0;
    cudaChannelFormatDesc fd = cudaCreateChannelDesc<float4>();
    CHECK(cudaDeviceGetTexture1DLinearMaxWidth(&width, &fd, dev));
    int attr_width = 0;
    CHECK(cudaDeviceGetAttribute(&attr_width, cudaDevAttrMaxTexture1DLinearWidth, dev));
    EXPECT(width == (size_t)attr_width, "1-D linear width %zu, attribute %d", width, attr_width);
    cudaChannelFormatDesc bad_fd = cudaCreateChannelDesc(8, 16, 0, 0, cudaChannelFormatKindFloat);
    EXPECT_ERR_AS("a 1-D linear width of a mixed format",
                  cudaDeviceGetTexture1DLinearMaxWidth(&width, &bad_fd, dev),
                  cudaErrorInvalidChannelDescriptor);
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(8);
    cfg.blockDim = dim3(128);
    cudaLaunchAttribute cluster;
    cluster.id = cudaLaunchAttributeClusterDimension;
    cluster.val.clusterDim.x = 1;
    cluster.val.clusterDim.y = 1;
    cluster.val.clusterDim.z = 1;
    cfg.attrs = &cluster;
    cfg.numAttrs = 1;
    int clusters = 0, per_sm = 0, sms = 0;
    CHECK(cudaOccupancyMaxActiveClusters(&clusters, (const void *)kernel, &cfg));
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, 128, 0));
    CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    int cluster_launch = 0;
    CHECK(cudaDeviceGetAttribute(&cluster_launch, cudaDevAttrClusterLaunch, dev));
    cluster.val.clusterDim.x = 2;
    cfg.gridDim = dim3(8);
    int size = 0;
    if (cluster_launch) {
        // A GPU with thread block clusters (Hopper on): its own occupancy.
        EXPECT(clusters > 0 && clusters <= per_sm * sms, "clusters of one block: %d of %d blocks",
               clusters, per_sm * sms);
        CHECK(cudaOccupancyMaxActiveClusters(&clusters, (const void *)kernel, &cfg));
        EXPECT(clusters > 0, "clusters of two blocks: %d", clusters);
        CHECK(cudaOccupancyMaxPotentialClusterSize(&size, (const void *)kernel, &cfg));
        EXPECT(size >= 2, "potential cluster size %d", size);
    } else {
        // No clusters (rcud): every block is a cluster of one.
        EXPECT(clusters == per_sm * sms, "clusters of one block: %d, expected %d", clusters,
               per_sm * sms);
        EXPECT_ERR_AS("clusters of two blocks",
                      cudaOccupancyMaxActiveClusters(&clusters, (const void *)kernel, &cfg),
                      cudaErrorInvalidClusterSize);
        CHECK(cudaOccupancyMaxPotentialClusterSize(&size, (const void *)kernel, &cfg));
        EXPECT(size == 1, "potential cluster size %d", size);
    }
    printf("texture and cluster limits: ok\n");

    // Memory pools by location.
    cudaMemLocation loc = {};
    loc.type = cudaMemLocationTypeDevice;
    loc.id = dev;
    cudaMemPool_t def, cur, mine;
    CHECK(cudaMemGetDefaultMemPool(&def, &loc, cudaMemAllocationTypePinned));
    cudaMemPool_t by_device;
    CHECK(cudaDeviceGetDefaultMemPool(&by_device, dev));
    EXPECT(def == by_device, "default pools differ");
    cudaMemPoolProps props = {};
    props.allocType = cudaMemAllocationTypePinned;
    props.location = loc;
    CHECK(cudaMemPoolCreate(&mine, &props));
    CHECK(cudaMemSetMemPool(&loc, cudaMemAllocationTypePinned, mine));
    CHECK(cudaMemGetMemPool(&cur, &loc, cudaMemAllocationTypePinned));
    EXPECT(cur == mine, "current pool after cudaMemSetMemPool");
    CHECK(cudaDeviceGetMemPool(&cur, dev));
    EXPECT(cur == mine, "cudaDeviceGetMemPool after cudaMemSetMemPool");
    CHECK(cudaMemSetMemPool(&loc, cudaMemAllocationTypePinned, def));
    cudaMemLocation bad_loc = {};
    bad_loc.type = cudaMemLocationTypeInvalid;
    EXPECT_ERR_AS("a pool at an invalid location",
                  cudaMemGetDefaultMemPool(&cur, &bad_loc, cudaMemAllocationTypePinned),
                  cudaErrorInvalidValue);
    int handle_out = 0;
    EXPECT_ERR_AS("exporting a pool without handle types",
                  cudaMemPoolExportToShareableHandle(&handle_out, mine,
                                                     cudaMemHandleTypePosixFileDescriptor, 0),
                  cudaErrorInvalidValue);
    CHECK(cudaMemPoolDestroy(mine));
    printf("memory pools by location: ok\n");

    // Asynchronous notifications: registered, then unregistered. (Not
    // twice: NVIDIA's runtime reads the freed handle and crashes.)
    cudaAsyncCallbackHandle_t nh;
    CHECK(cudaDeviceRegisterAsyncNotification(dev, on_notification, nullptr, &nh));
    CHECK(cudaDeviceUnregisterAsyncNotification(dev, nh));
    EXPECT_ERR_AS("a notification on no device",
                  cudaDeviceRegisterAsyncNotification(count, on_notification, nullptr, &nh),
                  cudaErrorInvalidDevice);

    // The error log: empty.
    cudaLogsCallbackHandle lh;
    CHECK(cudaLogsRegisterCallback(on_log, nullptr, &lh));
    unsigned it = 99;
    CHECK(cudaLogsCurrent(&it, 0));
    char buf[64] = "x";
    size_t len = sizeof(buf);
    CHECK(cudaLogsDumpToMemory(&it, buf, &len, 0));
    EXPECT(len == 0 && buf[0] == 0, "log dump of %zu bytes", len);
    EXPECT_ERR_AS("cudaLogsCurrent with flags", cudaLogsCurrent(&it, 1), cudaErrorInvalidValue);
    CHECK(cudaLogsUnregisterCallback(lh));
    printf("notifications and logs: ok\n");

    // GPUDirect RDMA: the emulated device offers no flush.
    int rdma = -1;
    CHECK(cudaDeviceGetAttribute(&rdma, cudaDevAttrGPUDirectRDMAFlushWritesOptions, dev));
    EXPECT_ERR_AS("cudaDeviceFlushGPUDirectRDMAWrites of scope 7",
                  cudaDeviceFlushGPUDirectRDMAWrites(cudaFlushGPUDirectRDMAWritesTargetCurrentDevice,
                                                     (cudaFlushGPUDirectRDMAWritesScope)7),
                  cudaErrorInvalidValue);
    if (rdma == 0) {
        EXPECT_ERR_AS("cudaDeviceFlushGPUDirectRDMAWrites",
                      cudaDeviceFlushGPUDirectRDMAWrites(
                          cudaFlushGPUDirectRDMAWritesTargetCurrentDevice,
                          cudaFlushGPUDirectRDMAWritesToOwner),
                      cudaErrorNotSupported);
    }

    // Atomics over the host link: checked, none native.
    cudaAtomicOperation ops[2] = {cudaAtomicOperationIntegerAdd, cudaAtomicOperationCAS};
    unsigned caps[2] = {7, 7};
    CHECK(cudaDeviceGetHostAtomicCapabilities(caps, ops, 2, dev));
    EXPECT(caps[0] == 0 && caps[1] == 0, "host atomic capabilities %u %u", caps[0], caps[1]);
    ops[1] = (cudaAtomicOperation)99;
    EXPECT_ERR_AS("an unknown atomic operation",
                  cudaDeviceGetHostAtomicCapabilities(caps, ops, 2, dev), cudaErrorInvalidValue);
    EXPECT_ERR_AS("peer atomics of one device",
                  cudaDeviceGetP2PAtomicCapabilities(caps, ops, 1, dev, dev),
                  cudaErrorInvalidDevice);
    char list[8];
    EXPECT_ERR_AS("cudaDeviceGetNvSciSyncAttributes",
                  cudaDeviceGetNvSciSyncAttributes(list, dev, cudaNvSciSyncAttrSignal),
                  cudaErrorNotSupported);

    // Arrays: none is multi-planar, sparse or mapped later.
    cudaArray_t arr;
    cudaChannelFormatDesc af = cudaCreateChannelDesc<float>();
    CHECK(cudaMallocArray(&arr, &af, 16, 16));
    cudaArray_t plane;
    EXPECT_ERR_AS("cudaArrayGetPlane of a float array", cudaArrayGetPlane(&plane, arr, 0),
                  cudaErrorInvalidValue);
    cudaArraySparseProperties sp;
    EXPECT_ERR_AS("cudaArrayGetSparseProperties of a dense array",
                  cudaArrayGetSparseProperties(&sp, arr), cudaErrorInvalidValue);
    cudaArrayMemoryRequirements mr;
    EXPECT_ERR_AS("cudaArrayGetMemoryRequirements of a mapped array",
                  cudaArrayGetMemoryRequirements(&mr, arr, dev), cudaErrorInvalidValue);
    CHECK(cudaFreeArray(arr));
    printf("RDMA, atomics, NvSciSync, arrays: ok\n");

    printf("PASS\n");
    return 0;
}
