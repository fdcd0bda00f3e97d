// A small bandwidthTest: host-to-device, device-to-host and device-to-device
// copy bandwidth for pageable and pinned host memory, timed with std::chrono
// (no CUDA events). The data is verified once per memory kind.
//
// Usage: bandwidth [SIZE_MB]   (default 32)
//
// Self-checking: prints a table, `FAIL: <reason>` and exit status 1 on any
// error, and `PASS` as the last line on success.

#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "check.h"

static const int ITERATIONS = 10;

typedef std::chrono::steady_clock Clock;

// Times `ITERATIONS` copies of `bytes` (after one warm-up copy) and returns GB/s
// (10^9 bytes per second of bytes copied).
static double time_copies(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind,
                          double *ms_per_copy) {
    CHECK(cudaMemcpy(dst, src, bytes, kind));
    CHECK(cudaDeviceSynchronize());
    Clock::time_point start = Clock::now();
    for (int i = 0; i < ITERATIONS; i++) {
        CHECK(cudaMemcpy(dst, src, bytes, kind));
    }
    CHECK(cudaDeviceSynchronize());
    double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    if (seconds <= 0) seconds = 1e-9;
    *ms_per_copy = seconds * 1000.0 / ITERATIONS;
    return (double)bytes * ITERATIONS / seconds / 1e9;
}

static void row(const char *memory, const char *direction, size_t bytes, double ms, double gbs) {
    printf("%-9s %-4s %10.1f %6d %12.3f %10.2f\n", memory, direction,
           (double)bytes / (1024.0 * 1024.0), ITERATIONS, ms, gbs);
    fflush(stdout);
}

// H2D then D2D then D2H of one pattern, compared with the original.
static void verify(unsigned char *host_src, unsigned char *host_dst, unsigned char *d_a,
                   unsigned char *d_b, size_t bytes, unsigned seed, const char *memory) {
    unsigned x = seed;
    for (size_t i = 0; i < bytes; i++) {
        x = x * 1103515245u + 12345u;
        host_src[i] = (unsigned char)(x >> 16);
    }
    memset(host_dst, 0, bytes);
    CHECK(cudaMemcpy(d_a, host_src, bytes, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_b, d_a, bytes, cudaMemcpyDeviceToDevice));
    CHECK(cudaMemcpy(host_dst, d_b, bytes, cudaMemcpyDeviceToHost));
    if (memcmp(host_src, host_dst, bytes) != 0) {
        size_t i = 0;
        while (host_src[i] == host_dst[i]) i++;
        printf("FAIL: %s memory: byte %zu is 0x%02x after H2D/D2D/D2H, expected 0x%02x\n",
               memory, i, host_dst[i], host_src[i]);
        fflush(stdout);
        exit(1);
    }
    printf("verify %s: ok\n", memory);
}

int main(int argc, char **argv) {
    long mb = 32;
    if (argc > 1) {
        char *end = NULL;
        mb = strtol(argv[1], &end, 10);
        if (end == argv[1] || *end != '\0' || mb <= 0 || mb > 4096) {
            printf("FAIL: bad size \"%s\" (usage: %s [SIZE_MB], 1..4096)\n", argv[1], argv[0]);
            return 1;
        }
    }
    const size_t bytes = (size_t)mb << 20;

    int count = 0;
    CHECK(cudaGetDeviceCount(&count));
    EXPECT(count >= 1, "no CUDA device");
    CHECK(cudaSetDevice(0));
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    printf("device 0: %s\n", prop.name);
    printf("transfer size: %ld MB, %d iterations per measurement\n", mb, ITERATIONS);

    unsigned char *d_a = NULL, *d_b = NULL;
    CHECK(cudaMalloc((void **)&d_a, bytes));
    CHECK(cudaMalloc((void **)&d_b, bytes));

    unsigned char *pageable_src = (unsigned char *)malloc(bytes);
    unsigned char *pageable_dst = (unsigned char *)malloc(bytes);
    EXPECT(pageable_src != NULL && pageable_dst != NULL, "malloc(%zu) failed", bytes);
    unsigned char *pinned_src = NULL, *pinned_dst = NULL;
    CHECK(cudaMallocHost((void **)&pinned_src, bytes));
    CHECK(cudaMallocHost((void **)&pinned_dst, bytes));

    verify(pageable_src, pageable_dst, d_a, d_b, bytes, 1, "pageable");
    verify(pinned_src, pinned_dst, d_a, d_b, bytes, 2, "pinned");

    printf("%-9s %-4s %10s %6s %12s %10s\n", "memory", "copy", "size(MB)", "iters", "ms/copy",
           "GB/s");
    double ms = 0, gbs = 0;
    gbs = time_copies(d_a, pageable_src, bytes, cudaMemcpyHostToDevice, &ms);
    row("pageable", "H2D", bytes, ms, gbs);
    gbs = time_copies(pageable_dst, d_a, bytes, cudaMemcpyDeviceToHost, &ms);
    row("pageable", "D2H", bytes, ms, gbs);
    gbs = time_copies(d_a, pinned_src, bytes, cudaMemcpyHostToDevice, &ms);
    row("pinned", "H2D", bytes, ms, gbs);
    gbs = time_copies(pinned_dst, d_a, bytes, cudaMemcpyDeviceToHost, &ms);
    row("pinned", "D2H", bytes, ms, gbs);
    gbs = time_copies(d_b, d_a, bytes, cudaMemcpyDeviceToDevice, &ms);
    row("device", "D2D", bytes, ms, gbs);
    // D2D involves no host memory, so it is measured once, as memory kind `device`.
    printf("(D2D counts the bytes copied once, not read plus written)\n");

    CHECK(cudaFreeHost(pinned_src));
    CHECK(cudaFreeHost(pinned_dst));
    free(pageable_src);
    free(pageable_dst);
    CHECK(cudaFree(d_a));
    CHECK(cudaFree(d_b));
    CHECK(cudaGetLastError());
    printf("PASS\n");
    return 0;
}
