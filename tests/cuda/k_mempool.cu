// Stream-ordered allocation: cudaMallocAsync / cudaFreeAsync on the default
// pool and on a pool of our own, reuse without new reservations, the pool
// attributes (release threshold, reserved and used memory with their
// high-water marks), trimming, access, and the errors CUDA gives.
#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "check.h"

__global__ void fill(int *out, int n, int base) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = base + i;
}

static uint64_t attr(cudaMemPool_t pool, cudaMemPoolAttr a) {
    uint64_t v = 0;
    CHECK(cudaMemPoolGetAttribute(pool, a, &v));
    return v;
}

static void check_filled(const int *dev, int n, int base, cudaStream_t s) {
    std::vector<int> host(n);
    CHECK(cudaMemcpyAsync(host.data(), dev, n * sizeof(int), cudaMemcpyDeviceToHost, s));
    CHECK(cudaStreamSynchronize(s));
    for (int i = 0; i < n; i++) EXPECT(host[i] == base + i, "element %d is %d", i, host[i]);
}

int main() {
    int supported = 0;
    CHECK(cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, 0));
    EXPECT(supported == 1, "memory pools supported: %d", supported);
    printf("memory pools supported\n");

    cudaMemPool_t pool, current;
    CHECK(cudaDeviceGetDefaultMemPool(&pool, 0));
    CHECK(cudaDeviceGetMemPool(&current, 0));
    EXPECT(pool == current, "the default pool is the current one");

    cudaStream_t s1, s2;
    CHECK(cudaStreamCreate(&s1));
    CHECK(cudaStreamCreate(&s2));
    const int n = 1 << 18;  // 1 MiB of ints
    int *a = nullptr;
    CHECK(cudaMallocAsync((void **)&a, n * sizeof(int), s1));
    fill<<<(n + 255) / 256, 256, 0, s1>>>(a, n, 7);
    check_filled(a, n, 7, s1);
    EXPECT(attr(pool, cudaMemPoolAttrUsedMemCurrent) >= n * sizeof(int), "used after the allocation");
    uint64_t reserved = attr(pool, cudaMemPoolAttrReservedMemCurrent);
    EXPECT(reserved >= n * sizeof(int), "reserved %llu", (unsigned long long)reserved);

    // Freed in stream order and allocated again on another stream: the
    // pool reuses what it holds, reserving nothing more.
    CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &reserved));
    CHECK(cudaFreeAsync(a, s1));
    int *b = nullptr;
    CHECK(cudaMallocAsync((void **)&b, n * sizeof(int), s2));
    EXPECT(attr(pool, cudaMemPoolAttrReservedMemCurrent) == reserved, "reused without a new reservation");
    printf("reuse: no new reservation\n");
    fill<<<(n + 255) / 256, 256, 0, s2>>>(b, n, 100);
    check_filled(b, n, 100, s2);
    CHECK(cudaFreeAsync(b, s2));
    CHECK(cudaStreamSynchronize(s2));
    EXPECT(attr(pool, cudaMemPoolAttrUsedMemCurrent) == 0, "nothing used after the frees");
    EXPECT(attr(pool, cudaMemPoolAttrUsedMemHigh) >= n * sizeof(int), "high-water mark of use");
    EXPECT(attr(pool, cudaMemPoolAttrReservedMemCurrent) == reserved, "the threshold keeps the memory");

    // The high-water marks reset to the current values; the current ones are read only.
    uint64_t zero = 0;
    CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &zero));
    EXPECT(attr(pool, cudaMemPoolAttrUsedMemHigh) == 0, "reset high-water mark");
    EXPECT_ERR_AS("set UsedMemCurrent", cudaMemPoolSetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &zero),
                  cudaErrorInvalidValue);
    EXPECT_ERR_AS("set ReservedMemHigh to 5", cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReservedMemHigh, &reserved),
                  cudaErrorInvalidValue);

    // Trimming gives back what nobody uses; with a threshold of 0 a
    // synchronizing call does the same.
    CHECK(cudaMemPoolTrimTo(pool, 0));
    EXPECT(attr(pool, cudaMemPoolAttrReservedMemCurrent) == 0, "trimmed to nothing");
    CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &zero));
    CHECK(cudaMallocAsync((void **)&a, 4096, s1));
    CHECK(cudaFreeAsync(a, s1));
    CHECK(cudaStreamSynchronize(s1));
    EXPECT(attr(pool, cudaMemPoolAttrReservedMemCurrent) == 0, "released at synchronization");
    printf("released at synchronization\n");

    // The reuse policies are flags, on by default.
    int flag = -1;
    CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolReuseAllowOpportunistic, &flag));
    EXPECT(flag == 1, "opportunistic reuse on by default");
    flag = 0;
    CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolReuseAllowOpportunistic, &flag));
    CHECK(cudaMemPoolGetAttribute(pool, cudaMemPoolReuseAllowOpportunistic, &flag));
    EXPECT(flag == 0, "opportunistic reuse off");

    // A pool of our own.
    cudaMemPoolProps props = {};
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = 0;
    cudaMemPool_t mine;
    CHECK(cudaMemPoolCreate(&mine, &props));
    int *c = nullptr;
    CHECK(cudaMallocFromPoolAsync((void **)&c, 1000 * sizeof(int), mine, s1));
    fill<<<4, 256, 0, s1>>>(c, 1000, -5);
    check_filled(c, 1000, -5, s1);
    EXPECT(attr(mine, cudaMemPoolAttrUsedMemCurrent) >= 1000 * sizeof(int), "used in our pool");
    EXPECT(attr(pool, cudaMemPoolAttrUsedMemCurrent) == 0, "not in the default pool");
    cudaMemLocation where = {};
    where.type = cudaMemLocationTypeDevice;
    where.id = 0;
    cudaMemAccessFlags access;
    CHECK(cudaMemPoolGetAccess(&access, mine, &where));
    EXPECT(access == cudaMemAccessFlagsProtReadWrite, "the owner reads and writes");
    // cudaFree takes stream-ordered memory too.
    CHECK(cudaFree(c));
    CHECK(cudaDeviceSetMemPool(0, mine));
    CHECK(cudaDeviceGetMemPool(&current, 0));
    EXPECT(current == mine, "our pool is current");
    CHECK(cudaMallocAsync((void **)&a, 64, s2));
    EXPECT(attr(mine, cudaMemPoolAttrUsedMemCurrent) > 0, "cudaMallocAsync uses the current pool");
    CHECK(cudaFreeAsync(a, s2));
    CHECK(cudaDeviceSetMemPool(0, pool));
    CHECK(cudaMemPoolDestroy(mine));

    EXPECT_ERR_AS("destroy the default pool", cudaMemPoolDestroy(pool), cudaErrorInvalidValue);
    EXPECT_ERR_AS("free a pointer no pool gave", cudaFreeAsync((void *)0x1234, s1), cudaErrorInvalidValue);
    props.location.id = 99;
    EXPECT_ERR_AS("a pool on no device", cudaMemPoolCreate(&mine, &props), cudaErrorInvalidValue);

    CHECK(cudaStreamDestroy(s1));
    CHECK(cudaStreamDestroy(s2));
    printf("PASS\n");
    return 0;
}
