/* Prints the offset and size of every field of struct cudaDeviceProp, one
 * "FIELD OFFSET SIZE" line each, then the size of the whole struct. Built and
 * run by the layout test in cuda-shim/src/abi/device_prop.rs. */
#include <stddef.h>
#include <stdio.h>
#include <driver_types.h>

#define FIELD(f) \
    printf("%s %zu %zu\n", #f, offsetof(struct cudaDeviceProp, f), \
           sizeof(((struct cudaDeviceProp *)0)->f))

int main(void) {
    FIELD(name);
    FIELD(uuid);
    FIELD(luid);
    FIELD(luidDeviceNodeMask);
    FIELD(totalGlobalMem);
    FIELD(sharedMemPerBlock);
    FIELD(regsPerBlock);
    FIELD(warpSize);
    FIELD(memPitch);
    FIELD(maxThreadsPerBlock);
    FIELD(maxThreadsDim);
    FIELD(maxGridSize);
    FIELD(totalConstMem);
    FIELD(major);
    FIELD(minor);
    FIELD(textureAlignment);
    FIELD(texturePitchAlignment);
    FIELD(multiProcessorCount);
    FIELD(integrated);
    FIELD(canMapHostMemory);
    FIELD(maxTexture1D);
    FIELD(maxTexture1DMipmap);
    FIELD(maxTexture2D);
    FIELD(maxTexture2DMipmap);
    FIELD(maxTexture2DLinear);
    FIELD(maxTexture2DGather);
    FIELD(maxTexture3D);
    FIELD(maxTexture3DAlt);
    FIELD(maxTextureCubemap);
    FIELD(maxTexture1DLayered);
    FIELD(maxTexture2DLayered);
    FIELD(maxTextureCubemapLayered);
    FIELD(maxSurface1D);
    FIELD(maxSurface2D);
    FIELD(maxSurface3D);
    FIELD(maxSurface1DLayered);
    FIELD(maxSurface2DLayered);
    FIELD(maxSurfaceCubemap);
    FIELD(maxSurfaceCubemapLayered);
    FIELD(surfaceAlignment);
    FIELD(concurrentKernels);
    FIELD(ECCEnabled);
    FIELD(pciBusID);
    FIELD(pciDeviceID);
    FIELD(pciDomainID);
    FIELD(tccDriver);
    FIELD(asyncEngineCount);
    FIELD(unifiedAddressing);
    FIELD(memoryBusWidth);
    FIELD(l2CacheSize);
    FIELD(persistingL2CacheMaxSize);
    FIELD(maxThreadsPerMultiProcessor);
    FIELD(streamPrioritiesSupported);
    FIELD(globalL1CacheSupported);
    FIELD(localL1CacheSupported);
    FIELD(sharedMemPerMultiprocessor);
    FIELD(regsPerMultiprocessor);
    FIELD(managedMemory);
    FIELD(isMultiGpuBoard);
    FIELD(multiGpuBoardGroupID);
    FIELD(hostNativeAtomicSupported);
    FIELD(pageableMemoryAccess);
    FIELD(concurrentManagedAccess);
    FIELD(computePreemptionSupported);
    FIELD(canUseHostPointerForRegisteredMem);
    FIELD(cooperativeLaunch);
    FIELD(sharedMemPerBlockOptin);
    FIELD(pageableMemoryAccessUsesHostPageTables);
    FIELD(directManagedMemAccessFromHost);
    FIELD(maxBlocksPerMultiProcessor);
    FIELD(accessPolicyMaxWindowSize);
    FIELD(reservedSharedMemPerBlock);
    FIELD(hostRegisterSupported);
    FIELD(sparseCudaArraySupported);
    FIELD(hostRegisterReadOnlySupported);
    FIELD(timelineSemaphoreInteropSupported);
    FIELD(memoryPoolsSupported);
    FIELD(gpuDirectRDMASupported);
    FIELD(gpuDirectRDMAFlushWritesOptions);
    FIELD(gpuDirectRDMAWritesOrdering);
    FIELD(memoryPoolSupportedHandleTypes);
    FIELD(deferredMappingCudaArraySupported);
    FIELD(ipcEventSupported);
    FIELD(clusterLaunch);
    FIELD(unifiedFunctionPointers);
    FIELD(deviceNumaConfig);
    FIELD(deviceNumaId);
    FIELD(mpsEnabled);
    FIELD(hostNumaId);
    FIELD(gpuPciDeviceID);
    FIELD(gpuPciSubsystemID);
    FIELD(hostNumaMultinodeIpcSupported);
    FIELD(reserved);
    printf("sizeof(struct cudaDeviceProp) 0 %zu\n", sizeof(struct cudaDeviceProp));
    return 0;
}
