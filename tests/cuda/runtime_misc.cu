// Runtime queries and settings: pointer attributes of every kind of
// memory, host allocation flags, stream ids and devices, the CUDA 13 host
// function form, cache and shared-memory configuration, PCI bus ids,
// cudaInitDevice, cudaSetValidDevices and the dynamic shared memory an
// occupancy leaves.
#include <cuda_runtime.h>

#include <cstring>

#include "check.h"

__global__ void touch(int *x) { x[threadIdx.x] = threadIdx.x; }

static void CUDART_CB bump(void *p) { ++*(int *)p; }

int main() {
    int *dev = nullptr, *managed = nullptr, *pinned = nullptr;
    CHECK(cudaMalloc(&dev, 256));
    CHECK(cudaMallocManaged(&managed, 256));
    CHECK(cudaHostAlloc(&pinned, 256, cudaHostAllocPortable));
    int plain[4];
    cudaPointerAttributes a;
    CHECK(cudaPointerGetAttributes(&a, dev));
    EXPECT(a.type == cudaMemoryTypeDevice && a.device == 0 && a.devicePointer == dev &&
               a.hostPointer == nullptr, "device memory");
    CHECK(cudaPointerGetAttributes(&a, managed + 3));
    EXPECT(a.type == cudaMemoryTypeManaged && a.devicePointer == managed + 3, "managed memory");
    CHECK(cudaPointerGetAttributes(&a, pinned));
    EXPECT(a.type == cudaMemoryTypeHost && a.hostPointer == pinned && a.devicePointer == pinned,
           "page-locked memory");
    CHECK(cudaPointerGetAttributes(&a, plain));
    EXPECT(a.type == cudaMemoryTypeUnregistered && a.device == -2 && a.hostPointer == plain,
           "pageable memory");
    unsigned flags = 0;
    CHECK(cudaHostGetFlags(&flags, pinned));
    // Page-locked memory is always mapped: the runtime adds the flag.
    EXPECT(flags == (cudaHostAllocPortable | cudaHostAllocMapped), "host flags %u", flags);
    EXPECT_ERR_AS("cudaHostGetFlags of pageable memory", cudaHostGetFlags(&flags, plain),
                  cudaErrorInvalidValue);
    printf("pointer attributes: ok\n");

    cudaStream_t s1, s2;
    CHECK(cudaStreamCreate(&s1));
    CHECK(cudaStreamCreate(&s2));
    unsigned long long id1 = 0, id2 = 0;
    CHECK(cudaStreamGetId(s1, &id1));
    CHECK(cudaStreamGetId(s2, &id2));
    EXPECT(id1 != id2, "stream ids differ");
    int device = -1;
    CHECK(cudaStreamGetDevice(s1, &device));
    EXPECT(device == 0, "stream device %d", device);
#if CUDART_VERSION > 13000  // not in CUDA 13.0's runtime
    int ran = 0;
    CHECK(cudaLaunchHostFunc_v2(s1, bump, &ran, 0));
    CHECK(cudaStreamSynchronize(s1));
    EXPECT(ran == 1, "host function v2 ran");
    EXPECT_ERR_AS("cudaLaunchHostFunc_v2 with flags", cudaLaunchHostFunc_v2(s1, bump, &ran, 7),
                  cudaErrorInvalidValue);
#endif
    printf("streams: ok\n");

    CHECK(cudaDeviceSetCacheConfig(cudaFuncCachePreferShared));
    cudaFuncCache cache;
    CHECK(cudaDeviceGetCacheConfig(&cache));
    EXPECT(cache == cudaFuncCachePreferShared, "cache config kept");
    cudaSharedMemConfig banks;
    CHECK(cudaDeviceGetSharedMemConfig(&banks));
    EXPECT(banks == cudaSharedMemBankSizeFourByte, "four-byte banks");
    CHECK(cudaFuncSetSharedMemConfig(touch, cudaSharedMemBankSizeEightByte));
    char bus[32] = {};
    CHECK(cudaDeviceGetPCIBusId(bus, sizeof bus, 0));
    int found = -1;
    CHECK(cudaDeviceGetByPCIBusId(&found, bus));
    EXPECT(found == 0 && strchr(bus, ':') != nullptr, "PCI bus id %s", bus);
    EXPECT_ERR_AS("an unknown PCI bus id", cudaDeviceGetByPCIBusId(&found, "ffff:ff:1f.0"),
                  cudaErrorInvalidDevice);
    CHECK(cudaInitDevice(0, 0, 0));
    int valid[] = {0};
    CHECK(cudaSetValidDevices(valid, 1));
    int bad[] = {99};
    EXPECT_ERR_AS("cudaSetValidDevices with no such device", cudaSetValidDevices(bad, 1),
                  cudaErrorInvalidDevice);
    size_t dynamic = 0;
    CHECK(cudaOccupancyAvailableDynamicSMemPerBlock(&dynamic, touch, 2, 128));
    EXPECT(dynamic > 0, "dynamic shared memory for 2 blocks");
    size_t more = 0;
    CHECK(cudaOccupancyAvailableDynamicSMemPerBlock(&more, touch, 1, 128));
    EXPECT(more >= dynamic, "fewer blocks leave more");
    printf("device settings: ok\n");

    touch<<<1, 64>>>(managed);
    CHECK(cudaDeviceSynchronize());
    EXPECT(managed[63] == 63, "the device still computes");
    CHECK(cudaStreamDestroy(s1));
    CHECK(cudaStreamDestroy(s2));
    CHECK(cudaFree(dev));
    CHECK(cudaFree(managed));
    CHECK(cudaFreeHost(pinned));
    printf("PASS\n");
    return 0;
}
