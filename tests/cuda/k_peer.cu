// Copies between two GPUs: cudaMemcpyPeer and cudaMemcpyPeerAsync both ways,
// from 1 byte to 64 MiB + 1 (sizes that are no multiple of 1 MiB, at offsets
// inside the allocations), in stream order with kernels before and after,
// after kernels queued on the legacy default stream of both devices,
// cudaMemcpy between GPUs (DeviceToDevice, Default, Async), and invalid
// copies. Every result is checked against a host reference.
// Run with at least two devices (rcud run --emu-gpus 2, or two servers).
// Prints how many copies between the GPUs it made, for the harness to compare
// with what the server reports.
#include <cuda_runtime.h>

#include <cstring>
#include <vector>

#include "check.h"

__host__ __device__ unsigned char pattern(size_t i, unsigned seed) {
    return (unsigned char)(i * 131u + seed * 7u + (i >> 11) + (i >> 19));
}

__global__ void fill_bytes(unsigned char *x, size_t n, unsigned seed) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = pattern(i, seed);
}

__global__ void bump(unsigned char *x, size_t n, unsigned char v) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = (unsigned char)(x[i] + v);
}

static const size_t MiB = 1 << 20;
static const size_t SIZES[] = {1, 3, 4096 + 5, MiB - 1, MiB + 1, 5 * MiB + 3, 64 * MiB + 1};
static const size_t MAX = 64 * MiB + 1;

static int copies = 0;
static std::vector<unsigned char> host(MAX + 2);

static unsigned blocks(size_t n) { return (unsigned)((n + 255) / 256); }

// Writes pattern(seed) to `n` bytes at device address `d`.
static void upload(unsigned char *d, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; i++) host[i] = pattern(i, seed);
    CHECK(cudaMemcpy(d, host.data(), n, cudaMemcpyHostToDevice));
}

// Checks that the `n` bytes at `d` hold pattern(seed) + add.
static void expect_bytes(const unsigned char *d, size_t n, unsigned seed, unsigned char add,
                         const char *what) {
    CHECK(cudaMemcpy(host.data(), d, n, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < n; i++) {
        unsigned char want = (unsigned char)(pattern(i, seed) + add);
        EXPECT(host[i] == want, "%s: %zu bytes, byte %zu = %u, expected %u", what, n, i,
               (unsigned)host[i], (unsigned)want);
    }
}

// Checks the guard bytes around a copy of `n` bytes to `base + 1`.
static void expect_guards(const unsigned char *base, size_t n, const char *what) {
    unsigned char before = 0xEE, after = 0xEE;
    CHECK(cudaMemcpy(&before, base, 1, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(&after, base + n + 1, 1, cudaMemcpyDeviceToHost));
    EXPECT(before == 0 && after == 0, "%s: %zu bytes wrote outside the range (%u, %u)", what, n,
           (unsigned)before, (unsigned)after);
}

int main() {
    int ndev = 0;
    CHECK(cudaGetDeviceCount(&ndev));
    printf("devices: %d\n", ndev);
    EXPECT(ndev >= 2, "need two devices");
    int can = -1;
    CHECK(cudaDeviceCanAccessPeer(&can, 0, 1));
    printf("cudaDeviceCanAccessPeer(0, 1) = %d\n", can);

    unsigned char *a = nullptr, *b = nullptr;
    CHECK(cudaSetDevice(0));
    CHECK(cudaMalloc(&a, MAX + 2));
    CHECK(cudaSetDevice(1));
    CHECK(cudaMalloc(&b, MAX + 2));

    // Synchronous copies both ways, into the middle of zeroed memory.
    unsigned seed = 1;
    for (size_t n : SIZES) {
        upload(a, n, seed);
        CHECK(cudaMemset(b, 0, n + 2));
        CHECK(cudaMemcpyPeer(b + 1, 1, a, 0, n));
        copies++;
        expect_bytes(b + 1, n, seed, 0, "cudaMemcpyPeer 0 -> 1");
        expect_guards(b, n, "cudaMemcpyPeer 0 -> 1");

        upload(b, n, seed + 100);
        CHECK(cudaMemset(a, 0, n + 2));
        CHECK(cudaMemcpyPeer(a + 1, 0, b, 1, n));
        copies++;
        expect_bytes(a + 1, n, seed + 100, 0, "cudaMemcpyPeer 1 -> 0");
        expect_guards(a, n, "cudaMemcpyPeer 1 -> 0");
        seed++;
    }
    printf("cudaMemcpyPeer both ways, 1 B to 64 MiB + 1: ok\n");

    // Asynchronous copies both ways, on a stream of either device.
    cudaStream_t s0, s1;
    CHECK(cudaSetDevice(0));
    CHECK(cudaStreamCreate(&s0));
    CHECK(cudaSetDevice(1));
    CHECK(cudaStreamCreate(&s1));
    for (size_t n : SIZES) {
        upload(a, n, seed);
        CHECK(cudaMemcpyPeerAsync(b, 1, a, 0, n, s1));
        copies++;
        CHECK(cudaStreamSynchronize(s1));
        expect_bytes(b, n, seed, 0, "cudaMemcpyPeerAsync 0 -> 1");

        upload(b, n, seed + 100);
        CHECK(cudaMemcpyPeerAsync(a, 0, b, 1, n, s0));
        copies++;
        CHECK(cudaStreamSynchronize(s0));
        expect_bytes(a, n, seed + 100, 0, "cudaMemcpyPeerAsync 1 -> 0");
        seed++;
    }
    printf("cudaMemcpyPeerAsync both ways, 1 B to 64 MiB + 1: ok\n");

    // Stream order without the host waiting in between: a kernel fills a on
    // device 0, the copy to b follows it in s0, a kernel on device 1 bumps b
    // once the copy is done (event), and the copy back follows in s1.
    const size_t n = MiB + 5;
    cudaEvent_t copied;
    CHECK(cudaEventCreateWithFlags(&copied, cudaEventDisableTiming));
    CHECK(cudaSetDevice(0));
    fill_bytes<<<blocks(n), 256, 0, s0>>>(a, n, 77);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpyPeerAsync(b, 1, a, 0, n, s0));
    copies++;
    CHECK(cudaEventRecord(copied, s0));
    CHECK(cudaSetDevice(1));
    CHECK(cudaStreamWaitEvent(s1, copied, 0));
    bump<<<blocks(n), 256, 0, s1>>>(b, n, 3);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpyPeerAsync(a, 0, b, 1, n, s1));
    copies++;
    CHECK(cudaStreamSynchronize(s1));
    expect_bytes(a, n, 77, 3, "kernel, peer copy, kernel, peer copy in stream order");
    printf("peer copies in stream order with kernels: ok\n");

    // The legacy default stream: cudaMemcpyPeer waits for the kernels
    // queued before it on both devices.
    CHECK(cudaSetDevice(0));
    fill_bytes<<<blocks(n), 256>>>(a, n, 91);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpyPeer(b, 1, a, 0, n));
    copies++;
    CHECK(cudaSetDevice(1));
    bump<<<blocks(n), 256>>>(b, n, 5);
    CHECK(cudaGetLastError());
    CHECK(cudaSetDevice(0));
    CHECK(cudaMemcpyPeer(a, 0, b, 1, n));
    copies++;
    expect_bytes(a, n, 91, 5, "cudaMemcpyPeer after kernels on both devices");
    printf("cudaMemcpyPeer after kernels on both devices: ok\n");

    // cudaMemcpy between GPUs, whatever the current device.
    upload(a, 3 * MiB + 7, 33);
    CHECK(cudaMemcpy(b, a, 3 * MiB + 7, cudaMemcpyDeviceToDevice));
    copies++;
    expect_bytes(b, 3 * MiB + 7, 33, 0, "cudaMemcpy(DeviceToDevice) 0 -> 1");
    upload(b, 2 * MiB + 1, 34);
    CHECK(cudaMemcpy(a, b, 2 * MiB + 1, cudaMemcpyDefault));
    copies++;
    expect_bytes(a, 2 * MiB + 1, 34, 0, "cudaMemcpy(Default) 1 -> 0");
    upload(a, 4099, 35);
    CHECK(cudaMemcpyAsync(b, a, 4099, cudaMemcpyDefault, s1));
    copies++;
    CHECK(cudaStreamSynchronize(s1));
    expect_bytes(b, 4099, 35, 0, "cudaMemcpyAsync(Default) 0 -> 1");
    printf("cudaMemcpy between GPUs (DeviceToDevice, Default, Async): ok\n");

    // Invalid copies fail without harm.
    EXPECT_ERR_AS("cudaMemcpyPeer(source range past its allocation)",
                  cudaMemcpyPeer(b, 1, a + MAX - 1, 0, 16), cudaErrorInvalidValue);
    EXPECT_ERR_AS("cudaMemcpyPeer(destination range past its allocation)",
                  cudaMemcpyPeer(b + MAX - 1, 1, a, 0, 16), cudaErrorInvalidValue);
    EXPECT_ERR_AS("cudaMemcpyPeer(device 7)", cudaMemcpyPeer(b, 7, a, 0, 16),
                  cudaErrorInvalidDevice);
    upload(a, 4096, 55);
    CHECK(cudaMemcpyPeer(b, 1, a, 0, 4096));
    copies++;
    expect_bytes(b, 4096, 55, 0, "cudaMemcpyPeer after failed copies");
    printf("invalid copies: ok\n");

    printf("copies between the GPUs: %d\n", copies);
    CHECK(cudaEventDestroy(copied));
    CHECK(cudaStreamDestroy(s0));
    CHECK(cudaStreamDestroy(s1));
    CHECK(cudaFree(a));
    CHECK(cudaFree(b));
    printf("PASS\n");
    return 0;
}
