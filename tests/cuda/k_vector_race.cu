// 16-byte and 8-byte vector stores and loads of global memory are single
// accesses, as on hardware: blocks that store {i, i, i, i} race blocks
// that load the same 16 bytes, and no load may see two different stores
// (CUB's decoupled look-back, behind thrust's scans, relies on it).
#include <cuda_runtime.h>

#include "check.h"

__global__ void race16(unsigned *slot, int iterations, unsigned *torn) {
    if (blockIdx.x % 2 == 0) {
        for (unsigned i = 1; i <= (unsigned)iterations; i++) {
            asm volatile("st.global.v4.u32 [%0], {%1, %1, %1, %1};" ::"l"(slot), "r"(i) : "memory");
        }
    } else {
        unsigned bad = 0;
        for (int i = 0; i < iterations; i++) {
            unsigned a, b, c, d;
            asm volatile("ld.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                         : "=r"(a), "=r"(b), "=r"(c), "=r"(d)
                         : "l"(slot)
                         : "memory");
            if (a != b || b != c || c != d) bad++;
        }
        atomicAdd(torn, bad);
    }
}

__global__ void race8(unsigned *slot, int iterations, unsigned *torn) {
    if (blockIdx.x % 2 == 0) {
        for (unsigned i = 1; i <= (unsigned)iterations; i++) {
            asm volatile("st.global.v2.u32 [%0], {%1, %1};" ::"l"(slot), "r"(i) : "memory");
        }
    } else {
        unsigned bad = 0;
        for (int i = 0; i < iterations; i++) {
            unsigned a, b;
            asm volatile("ld.global.v2.u32 {%0, %1}, [%2];" : "=r"(a), "=r"(b) : "l"(slot) : "memory");
            if (a != b) bad++;
        }
        atomicAdd(torn, bad);
    }
}

int main() {
    unsigned *slot = nullptr, *torn = nullptr;
    CHECK(cudaMalloc(&slot, 16));
    CHECK(cudaMalloc(&torn, sizeof(unsigned)));
    for (int round = 0; round < 2; round++) {
        CHECK(cudaMemset(slot, 0, 16));
        CHECK(cudaMemset(torn, 0, sizeof(unsigned)));
        if (round == 0) {
            race16<<<8, 1>>>(slot, 200000, torn);
        } else {
            race8<<<8, 1>>>(slot, 200000, torn);
        }
        CHECK(cudaGetLastError());
        unsigned host = 0;
        CHECK(cudaMemcpy(&host, torn, sizeof host, cudaMemcpyDeviceToHost));
        printf("%d-byte vector loads that saw two stores: %u\n", round == 0 ? 16 : 8, host);
        EXPECT(host == 0, "torn vector accesses");
    }
    printf("PASS\n");
    return 0;
}
