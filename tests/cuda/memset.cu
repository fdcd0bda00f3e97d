// cudaMemset with several values on odd sizes and offsets; only the low byte
// of the value counts. Verified by copying the whole allocation back, so bytes
// before and after the set range are checked too. No kernels.
//
// Self-checking: prints informative lines, `FAIL: <reason>` and exit status 1
// on any mismatch, and `PASS` as the last line on success.

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "check.h"

static const size_t GUARD = 32;

static void fill(unsigned char *p, size_t n, unsigned seed) {
    unsigned x = seed * 2654435761u + 99u;
    for (size_t i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        p[i] = (unsigned char)(x >> 16);
    }
}

static void test_case(size_t n, size_t off, int value, unsigned seed) {
    const size_t total = off + n + GUARD;
    unsigned char *pattern = (unsigned char *)malloc(total);
    unsigned char *back = (unsigned char *)malloc(total);
    EXPECT(pattern != NULL && back != NULL, "host malloc(%zu) failed", total);
    unsigned char *d = NULL;
    CHECK(cudaMalloc((void **)&d, total));

    fill(pattern, total, seed);
    CHECK(cudaMemcpy(d, pattern, total, cudaMemcpyHostToDevice));
    CHECK(cudaMemset(d + off, value, n));
    memset(back, 0, total);
    CHECK(cudaMemcpy(back, d, total, cudaMemcpyDeviceToHost));

    const unsigned char want = (unsigned char)(value & 0xff);
    for (size_t i = 0; i < total; i++) {
        const bool inside = i >= off && i < off + n;
        const unsigned char expected = inside ? want : pattern[i];
        if (back[i] != expected) {
            printf("FAIL: cudaMemset(d + %zu, 0x%x, %zu): byte %zu (%s the set range) is 0x%02x, "
                   "expected 0x%02x\n",
                   off, value, n, i, inside ? "inside" : "outside", back[i], expected);
            fflush(stdout);
            exit(1);
        }
    }

    CHECK(cudaFree(d));
    free(pattern);
    free(back);
}

int main() {
    const size_t sizes[] = {1, 3, 255, 4097, 65537, (1u << 20) + 3, (4u << 20) + 1};
    const size_t offsets[] = {0, 1, 13};
    const int values[] = {0, 0xAB, 0x1FF};

    int count = 0;
    CHECK(cudaGetDeviceCount(&count));
    EXPECT(count >= 1, "no CUDA device");
    CHECK(cudaSetDevice(0));

    unsigned seed = 1;
    for (size_t v = 0; v < sizeof values / sizeof values[0]; v++) {
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
            for (size_t o = 0; o < sizeof offsets / sizeof offsets[0]; o++) {
                test_case(sizes[s], offsets[o], values[v], seed++);
            }
            printf("memset value 0x%x size %zu: ok (offsets 0, 1, 13)\n", values[v], sizes[s]);
        }
    }

    // A memset over a whole allocation, then a partial one on top of it.
    const size_t n = (2u << 20) + 7;
    unsigned char *d = NULL;
    unsigned char *back = (unsigned char *)malloc(n);
    EXPECT(back != NULL, "host malloc(%zu) failed", n);
    CHECK(cudaMalloc((void **)&d, n));
    CHECK(cudaMemset(d, 0x11, n));
    CHECK(cudaMemset(d + 100, 0x22, 1000));
    CHECK(cudaMemcpy(back, d, n, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < n; i++) {
        const unsigned char expected = (i >= 100 && i < 1100) ? 0x22 : 0x11;
        EXPECT(back[i] == expected, "layered memset: byte %zu is 0x%02x, expected 0x%02x", i,
               back[i], expected);
    }
    CHECK(cudaFree(d));
    free(back);
    printf("layered memset size %zu: ok\n", n);

    CHECK(cudaDeviceSynchronize());
    CHECK(cudaGetLastError());
    printf("PASS\n");
    return 0;
}
