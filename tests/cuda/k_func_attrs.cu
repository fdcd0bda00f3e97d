// Kernel attributes and configuration:
// - cudaFuncGetAttributes: numRegs >= 0, maxThreadsPerBlock > 0 (exactly 128
//   for a kernel with __launch_bounds__(128)), sharedSizeBytes equal to the
//   kernel's static shared memory (1056 bytes: float[256] + int[8]; 0 for a
//   kernel without shared memory);
// - cudaFuncSetAttribute(cudaFuncAttributeMaxDynamicSharedMemorySize, 64 KiB),
//   read back through maxDynamicSharedSizeBytes, then a launch with 64 KiB of
//   dynamic shared memory that uses all of it;
// - cudaFuncSetCacheConfig (succeeds);
// - cudaOccupancyMaxActiveBlocksPerMultiprocessor (> 0);
// - cudaLaunchKernelExC with a cudaLaunchConfig_t and no attributes, and the
//   cudaLaunchKernelEx C++ template that calls it.
//
// Prints informative lines and `<step>: ok`.
// Self-checking: `FAIL: <reason>` and exit status 1 on any mismatch, `PASS` as
// the last line on success.

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#include "check.h"

static const int DYN_BYTES = 64 * 1024;
static const int STATIC_SHARED = 256 * sizeof(float) + 8 * sizeof(int);

// Uses 1056 bytes of static shared memory.
__global__ void static_shared(const float *in, float *out) {
    __shared__ float tile[256];
    __shared__ int flags[8];
    const int t = threadIdx.x;
    tile[t] = in[t];
    if (t < 8) flags[t] = t * 3;
    __syncthreads();
    out[t] = tile[255 - t] + (float)flags[t % 8];
}

__global__ void __launch_bounds__(128) bounded(int *out) {
    out[blockIdx.x * blockDim.x + threadIdx.x] = threadIdx.x;
}

__global__ void no_shared(int *out, int n, int k) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = i * k;
}

// Fills all of its dynamic shared memory, then reads it back reversed.
__global__ void dynamic_shared(unsigned *out, int words) {
    extern __shared__ unsigned dyn[];
    for (int i = threadIdx.x; i < words; i += blockDim.x) dyn[i] = (unsigned)i * 2654435761u;
    __syncthreads();
    for (int i = threadIdx.x; i < words; i += blockDim.x)
        out[blockIdx.x * words + i] = dyn[words - 1 - i] ^ blockIdx.x;
}

static void print_attrs(const char *name, const cudaFuncAttributes &a) {
    printf("%s: numRegs=%d maxThreadsPerBlock=%d sharedSizeBytes=%zu constSizeBytes=%zu "
           "localSizeBytes=%zu maxDynamicSharedSizeBytes=%d ptxVersion=%d binaryVersion=%d\n",
           name, a.numRegs, a.maxThreadsPerBlock, a.sharedSizeBytes, a.constSizeBytes,
           a.localSizeBytes, a.maxDynamicSharedSizeBytes, a.ptxVersion, a.binaryVersion);
}

int main() {
    CHECK(cudaSetDevice(0));

    // Attributes.
    {
        cudaFuncAttributes a;
        CHECK(cudaFuncGetAttributes(&a, static_shared));
        print_attrs("static_shared", a);
        EXPECT(a.numRegs >= 0, "static_shared: numRegs %d", a.numRegs);
        EXPECT(a.maxThreadsPerBlock > 0, "static_shared: maxThreadsPerBlock %d",
               a.maxThreadsPerBlock);
        EXPECT(a.sharedSizeBytes == (size_t)STATIC_SHARED,
               "static_shared: sharedSizeBytes %zu, expected %d", a.sharedSizeBytes,
               STATIC_SHARED);

        CHECK(cudaFuncGetAttributes(&a, bounded));
        print_attrs("bounded", a);
        EXPECT(a.maxThreadsPerBlock == 128,
               "bounded (__launch_bounds__(128)): maxThreadsPerBlock %d, expected 128",
               a.maxThreadsPerBlock);
        EXPECT(a.sharedSizeBytes == 0, "bounded: sharedSizeBytes %zu, expected 0",
               a.sharedSizeBytes);

        CHECK(cudaFuncGetAttributes(&a, no_shared));
        print_attrs("no_shared", a);
        EXPECT(a.numRegs >= 0 && a.maxThreadsPerBlock > 0 && a.sharedSizeBytes == 0,
               "no_shared: unexpected attributes");
        printf("cudaFuncGetAttributes: ok\n");
    }

    // The static shared memory kernel works.
    {
        float in[256], out[256];
        for (int i = 0; i < 256; i++) in[i] = (float)i * 0.5f;
        float *din = NULL, *dout = NULL;
        CHECK(cudaMalloc(&din, sizeof in));
        CHECK(cudaMalloc(&dout, sizeof out));
        CHECK(cudaMemcpy(din, in, sizeof in, cudaMemcpyHostToDevice));
        static_shared<<<1, 256>>>(din, dout);
        CHECK(cudaGetLastError());
        CHECK(cudaDeviceSynchronize());
        CHECK(cudaMemcpy(out, dout, sizeof out, cudaMemcpyDeviceToHost));
        for (int i = 0; i < 256; i++) {
            const float want = in[255 - i] + (float)((i % 8) * 3);
            EXPECT(out[i] == want, "static_shared: out[%d] = %g, expected %g", i, out[i], want);
        }
        printf("static shared launch: ok\n");
        CHECK(cudaFree(din));
        CHECK(cudaFree(dout));
    }

    // 64 KiB of dynamic shared memory after opting in.
    {
        CHECK(cudaFuncSetAttribute(dynamic_shared, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                   DYN_BYTES));
        cudaFuncAttributes a;
        CHECK(cudaFuncGetAttributes(&a, dynamic_shared));
        print_attrs("dynamic_shared", a);
        EXPECT(a.maxDynamicSharedSizeBytes == DYN_BYTES,
               "dynamic_shared: maxDynamicSharedSizeBytes %d, expected %d",
               a.maxDynamicSharedSizeBytes, DYN_BYTES);
        printf("cudaFuncSetAttribute(MaxDynamicSharedMemorySize, 65536): ok\n");

        const int words = DYN_BYTES / (int)sizeof(unsigned);
        const int blocks = 3;
        unsigned *dout = NULL;
        CHECK(cudaMalloc(&dout, (size_t)blocks * words * sizeof(unsigned)));
        dynamic_shared<<<blocks, 256, DYN_BYTES>>>(dout, words);
        CHECK(cudaGetLastError());
        CHECK(cudaDeviceSynchronize());
        unsigned *out = (unsigned *)malloc((size_t)blocks * words * sizeof(unsigned));
        EXPECT(out != NULL, "host malloc failed");
        CHECK(cudaMemcpy(out, dout, (size_t)blocks * words * sizeof(unsigned),
                         cudaMemcpyDeviceToHost));
        for (int b = 0; b < blocks; b++)
            for (int i = 0; i < words; i++) {
                const unsigned want = ((unsigned)(words - 1 - i) * 2654435761u) ^ (unsigned)b;
                EXPECT(out[b * words + i] == want, "dynamic_shared: block %d word %d = 0x%x, "
                       "expected 0x%x", b, i, out[b * words + i], want);
            }
        printf("launch with 65536 bytes of dynamic shared memory: ok\n");
        free(out);
        CHECK(cudaFree(dout));
    }

    // Cache configuration and occupancy.
    {
        CHECK(cudaFuncSetCacheConfig(no_shared, cudaFuncCachePreferShared));
        CHECK(cudaFuncSetCacheConfig(static_shared, cudaFuncCachePreferL1));
        printf("cudaFuncSetCacheConfig: ok\n");

        int blocks = -1;
        CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, no_shared, 256, 0));
        printf("occupancy no_shared 256 threads: %d blocks per SM\n", blocks);
        EXPECT(blocks > 0, "occupancy of no_shared: %d blocks", blocks);
        blocks = -1;
        CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, dynamic_shared, 256,
                                                            DYN_BYTES));
        printf("occupancy dynamic_shared 256 threads 65536 bytes: %d blocks per SM\n", blocks);
        EXPECT(blocks > 0, "occupancy of dynamic_shared: %d blocks", blocks);
        printf("cudaOccupancyMaxActiveBlocksPerMultiprocessor: ok\n");
    }

    // cudaLaunchKernelExC, and the C++ cudaLaunchKernelEx template.
    {
        const int n = 1000;
        int *dout = NULL;
        CHECK(cudaMalloc(&dout, n * sizeof(int)));
        cudaLaunchConfig_t config = {};
        config.gridDim = dim3((n + 127) / 128);
        config.blockDim = dim3(128);
        config.dynamicSmemBytes = 0;
        config.stream = 0;
        config.attrs = NULL;
        config.numAttrs = 0;
        int count = n, k = 7;
        void *args[] = {&dout, &count, &k};
        CHECK(cudaLaunchKernelExC(&config, (const void *)no_shared, args));
        CHECK(cudaGetLastError());
        CHECK(cudaDeviceSynchronize());
        int out[n];
        CHECK(cudaMemcpy(out, dout, sizeof out, cudaMemcpyDeviceToHost));
        for (int i = 0; i < n; i++)
            EXPECT(out[i] == i * 7, "cudaLaunchKernelExC: out[%d] = %d, expected %d", i, out[i],
                   i * 7);
        printf("cudaLaunchKernelExC: ok\n");

        CHECK(cudaLaunchKernelEx(&config, no_shared, dout, n, -3));
        CHECK(cudaGetLastError());
        CHECK(cudaDeviceSynchronize());
        CHECK(cudaMemcpy(out, dout, sizeof out, cudaMemcpyDeviceToHost));
        for (int i = 0; i < n; i++)
            EXPECT(out[i] == i * -3, "cudaLaunchKernelEx: out[%d] = %d, expected %d", i, out[i],
                   i * -3);
        printf("cudaLaunchKernelEx: ok\n");

        // A priority is a scheduling hint and is honoured as one; clusters
        // of several blocks need compute capability 9.0, which the
        // emulated device does not claim.
        cudaLaunchAttribute attr[1];
        attr[0].id = cudaLaunchAttributePriority;
        attr[0].val.priority = 0;
        config.attrs = attr;
        config.numAttrs = 1;
        CHECK(cudaLaunchKernelExC(&config, (const void *)no_shared, args));
        CHECK(cudaDeviceSynchronize());
        printf("cudaLaunchKernelExC with a priority: ok\n");
        int clusters = 0;
        CHECK(cudaDeviceGetAttribute(&clusters, cudaDevAttrClusterLaunch, 0));
        EXPECT(clusters == 0, "cudaDevAttrClusterLaunch = %d", clusters);
        attr[0].id = cudaLaunchAttributeClusterDimension;
        attr[0].val.clusterDim.x = 2;
        attr[0].val.clusterDim.y = 1;
        attr[0].val.clusterDim.z = 1;
        cudaError_t e = cudaLaunchKernelExC(&config, (const void *)no_shared, args);
        printf("cudaLaunchKernelExC with clusters of 2 -> %s\n", cudaGetErrorName(e));
        EXPECT(e != cudaSuccess, "a cluster launch must be refused");
        (void)cudaGetLastError();
        CHECK(cudaFree(dout));
    }

    {
        // Name and parameters of a kernel, from its PTX.
        const char *name = nullptr;
        CHECK(cudaFuncGetName(&name, (const void *)no_shared));
        printf("cudaFuncGetName(no_shared): %s\n", name);
#if CUDART_VERSION > 13000  // not in CUDA 13.0's runtime
        size_t count = 0, offset = 0, size = 0;
        CHECK(cudaFuncGetParamCount((const void *)no_shared, &count));
        EXPECT(count == 3, "no_shared has 3 parameters, not %zu", count);
#else
        size_t offset = 0, size = 0;
#endif
        CHECK(cudaFuncGetParamInfo((const void *)no_shared, 2, &offset, &size));
        EXPECT(offset == 12 && size == 4, "parameter 2 at %zu, %zu bytes", offset, size);
        cudaError_t e = cudaFuncGetParamInfo((const void *)no_shared, 3, &offset, &size);
        printf("cudaFuncGetParamInfo past the end -> %s\n", cudaGetErrorName(e));
        printf("cudaFuncGetParamCount/ParamInfo: ok\n");
    }
    printf("PASS\n");
    return 0;
}
