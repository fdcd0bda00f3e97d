// A client for the server stress test: thousands of mixed operations with
// checks (allocations, copies of varying sizes from pageable and page-locked
// memory, memsets, kernels, asynchronous work on a stream, frees).
//   k_stress ITERATIONS SEED     run and check; PASS at the end
//   k_stress victim              announce, then copy 64 MB blocks forever (to
//                                be killed in the middle of a transfer)
#include <cuda_runtime.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "check.h"

__global__ void affine(unsigned *x, unsigned a, unsigned b, size_t n) {
    for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        x[i] = x[i] * a + b;
}

static unsigned next(unsigned &s) {
    s = s * 1664525u + 1013904223u;
    return s >> 8;
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "victim") == 0) {
        const size_t big = 64u << 20;
        std::vector<char> host(big, 7);
        void *dev = nullptr;
        CHECK(cudaMalloc(&dev, big));
        printf("victim: copying\n");
        fflush(stdout);
        for (;;) CHECK(cudaMemcpy(dev, host.data(), big, cudaMemcpyHostToDevice));
    }
    int iterations = argc > 1 ? atoi(argv[1]) : 100;
    unsigned seed = argc > 2 ? (unsigned)atoi(argv[2]) : 1;
    unsigned *pinned = nullptr;
    const size_t max_words = 1 << 16;
    CHECK(cudaMallocHost(&pinned, max_words * sizeof(unsigned)));
    std::vector<unsigned> pageable(max_words), back(max_words);
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    for (int it = 0; it < iterations; it++) {
        size_t n = 1 + next(seed) % max_words;
        unsigned a = next(seed) | 1, b = next(seed);
        bool use_pinned = next(seed) & 1;
        unsigned *src = use_pinned ? pinned : pageable.data();
        for (size_t i = 0; i < n; i++) src[i] = (unsigned)(i * 2654435761u) ^ seed;
        unsigned *d = nullptr;
        CHECK(cudaMalloc(&d, n * sizeof(unsigned)));
        if (it % 3 == 0) {
            CHECK(cudaMemcpyAsync(d, src, n * sizeof(unsigned), cudaMemcpyHostToDevice, s));
            affine<<<8, 128, 0, s>>>(d, a, b, n);
            CHECK(cudaMemcpyAsync(back.data(), d, n * sizeof(unsigned), cudaMemcpyDeviceToHost, s));
            CHECK(cudaStreamSynchronize(s));
        } else {
            CHECK(cudaMemcpy(d, src, n * sizeof(unsigned), cudaMemcpyHostToDevice));
            affine<<<8, 128>>>(d, a, b, n);
            CHECK(cudaGetLastError());
            CHECK(cudaMemcpy(back.data(), d, n * sizeof(unsigned), cudaMemcpyDeviceToHost));
        }
        for (size_t i = 0; i < n; i++)
            EXPECT(back[i] == src[i] * a + b, "iteration %d element %zu", it, i);
        size_t off = next(seed) % n, len = n - off;
        CHECK(cudaMemset(d + off, 0xAB, len * sizeof(unsigned)));
        CHECK(cudaMemcpy(back.data(), d, n * sizeof(unsigned), cudaMemcpyDeviceToHost));
        for (size_t i = off; i < n; i++) EXPECT(back[i] == 0xABABABABu, "memset element %zu", i);
        CHECK(cudaFree(d));
    }
    CHECK(cudaStreamDestroy(s));
    CHECK(cudaFreeHost(pinned));
    size_t free_bytes = 0, total = 0;
    CHECK(cudaMemGetInfo(&free_bytes, &total));
    printf("%d iterations: ok\n", iterations);
    printf("PASS\n");
    return 0;
}
