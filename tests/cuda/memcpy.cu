// cudaMemcpy in every direction and with every kind, on sizes from 1 byte to
// 64 MB, with and without offsets inside allocations. No kernels.
//
// Self-checking: prints one line per size, `FAIL: <reason>` and exit status 1
// on any mismatch, and `PASS` as the last line on success.

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "check.h"

// Slack around each transfer so that offset copies stay inside the allocations.
static const size_t SLACK = 64;
static const size_t SRC_OFF = 7;
static const size_t DST_OFF = 13;

// A byte pattern that differs between sizes and seeds, so that stale data from
// an earlier copy is never mistaken for a correct result.
static void fill(unsigned char *p, size_t n, unsigned seed) {
    unsigned x = seed * 2654435761u + 12345u;
    for (size_t i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        p[i] = (unsigned char)(x >> 16);
    }
}

static void *xmalloc(size_t n) {
    void *p = malloc(n);
    EXPECT(p != NULL, "host malloc(%zu) failed", n);
    return p;
}

// Compares and reports the first differing byte.
static void compare(const unsigned char *got, const unsigned char *want, size_t n,
                    size_t size, const char *what) {
    if (memcmp(got, want, n) == 0) return;
    size_t i = 0;
    while (i < n && got[i] == want[i]) i++;
    printf("FAIL: size %zu: %s: byte %zu is 0x%02x, expected 0x%02x\n", size, what, i, got[i],
           want[i]);
    fflush(stdout);
    exit(1);
}

static void test_size(size_t n, unsigned seed) {
    unsigned char *src = (unsigned char *)xmalloc(n + SLACK);
    unsigned char *dst = (unsigned char *)xmalloc(n + SLACK);
    unsigned char *d_a = NULL, *d_b = NULL;
    CHECK(cudaMalloc((void **)&d_a, n + SLACK));
    CHECK(cudaMalloc((void **)&d_b, n + SLACK));

    // 1. Plain H2D, D2D, D2H at the start of each allocation.
    fill(src, n + SLACK, seed);
    memset(dst, 0, n + SLACK);
    CHECK(cudaMemcpy(d_a, src, n, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_b, d_a, n, cudaMemcpyDeviceToDevice));
    CHECK(cudaMemcpy(dst, d_b, n, cudaMemcpyDeviceToHost));
    compare(dst, src, n, n, "H2D/D2D/D2H");

    // 2. Offsets inside the allocations (and inside the host buffers).
    fill(src, n + SLACK, seed + 1);
    memset(dst, 0, n + SLACK);
    CHECK(cudaMemcpy(d_a + SRC_OFF, src + 3, n, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_b + DST_OFF, d_a + SRC_OFF, n, cudaMemcpyDeviceToDevice));
    CHECK(cudaMemcpy(dst + 5, d_b + DST_OFF, n, cudaMemcpyDeviceToHost));
    compare(dst + 5, src + 3, n, n, "offset H2D/D2D/D2H");
    for (size_t i = 0; i < 5; i++) {
        EXPECT(dst[i] == 0, "size %zu: offset D2H wrote before its destination (byte %zu)", n, i);
    }
    for (size_t i = 5 + n; i < n + SLACK; i++) {
        EXPECT(dst[i] == 0, "size %zu: offset D2H wrote past its destination (byte %zu)", n, i);
    }

    // 3. cudaMemcpyDefault in every direction: the runtime infers the direction.
    fill(src, n + SLACK, seed + 2);
    memset(dst, 0, n + SLACK);
    CHECK(cudaMemcpy(d_a, src, n, cudaMemcpyDefault));
    CHECK(cudaMemcpy(d_b + DST_OFF, d_a, n, cudaMemcpyDefault));
    CHECK(cudaMemcpy(dst, d_b + DST_OFF, n, cudaMemcpyDefault));
    compare(dst, src, n, n, "cudaMemcpyDefault H2D/D2D/D2H");

    // 4. Host to host through cudaMemcpy, with both kinds.
    fill(src, n + SLACK, seed + 3);
    memset(dst, 0, n + SLACK);
    CHECK(cudaMemcpy(dst, src, n, cudaMemcpyHostToHost));
    compare(dst, src, n, n, "cudaMemcpyHostToHost");
    fill(src, n + SLACK, seed + 4);
    CHECK(cudaMemcpy(dst + 1, src, n, cudaMemcpyDefault));
    compare(dst + 1, src, n, n, "cudaMemcpyDefault host to host");

    CHECK(cudaFree(d_a));
    CHECK(cudaFree(d_b));
    free(src);
    free(dst);
    printf("size %zu: ok (H2D/D2D/D2H, offsets, default, H2H)\n", n);
    fflush(stdout);
}

// A D2D copy between two non-overlapping sub-ranges of one allocation leaves
// everything else untouched.
static void test_subrange_d2d() {
    const size_t total = 8u << 20;
    const size_t len = 2u << 20;
    const size_t from = 1;
    const size_t to = (5u << 20) + 3;
    unsigned char *host = (unsigned char *)xmalloc(total);
    unsigned char *back = (unsigned char *)xmalloc(total);
    unsigned char *d = NULL;
    CHECK(cudaMalloc((void **)&d, total));
    fill(host, total, 777);
    CHECK(cudaMemcpy(d, host, total, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d + to, d + from, len, cudaMemcpyDeviceToDevice));
    CHECK(cudaMemcpy(back, d, total, cudaMemcpyDeviceToHost));
    compare(back, host, to, len, "sub-range D2D: bytes before the destination");
    compare(back + to, host + from, len, len, "sub-range D2D: destination");
    compare(back + to + len, host + to + len, total - to - len, len,
            "sub-range D2D: bytes after the destination");
    CHECK(cudaFree(d));
    free(host);
    free(back);
    printf("sub-range D2D %zu bytes within one allocation: ok\n", len);
}

int main() {
    const size_t sizes[] = {
        1, 2, 3, 7, 255, 256, 4097, 65535,
        1u << 20, (1u << 20) + 1, (3u << 20) + 5, 16u << 20, 64u << 20,
    };
    int count = 0;
    CHECK(cudaGetDeviceCount(&count));
    EXPECT(count >= 1, "no CUDA device");
    CHECK(cudaSetDevice(0));

    unsigned seed = 1;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        test_size(sizes[i], seed);
        seed += 10;
    }
    test_subrange_d2d();

    CHECK(cudaDeviceSynchronize());
    CHECK(cudaGetLastError());
    printf("PASS\n");
    return 0;
}
