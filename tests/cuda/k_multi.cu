// Several GPUs driven from several host threads: per-thread current device,
// streams per thread, copies between GPUs (cudaMemcpyPeer, cudaMemcpyDefault),
// truthful peer-access answers, and pitched 2-D memory.
// Run with at least two devices (rcud run --emu-gpus 2).
#include <cuda_runtime.h>

#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "check.h"

__global__ void fill(int *x, int base, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = base + i;
}

__global__ void add_rows(float *m, size_t pitch, int width, int height, float v) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
    if (x < width && y < height) ((float *)((char *)m + y * pitch))[x] += v;
}

static std::atomic<int> failures{0};

static void worker(int id, int ndev) {
    const int n = 50000 + id * 17;
    int dev = id % ndev;
    if (cudaSetDevice(dev) != cudaSuccess) { failures++; return; }
    int cur = -1;
    cudaGetDevice(&cur);
    if (cur != dev) { failures++; return; }
    cudaStream_t s;
    int *d = nullptr, *h = nullptr;
    if (cudaStreamCreate(&s) != cudaSuccess || cudaMalloc(&d, n * sizeof(int)) != cudaSuccess ||
        cudaMallocHost(&h, n * sizeof(int)) != cudaSuccess) { failures++; return; }
    for (int round = 0; round < 20; round++) {
        fill<<<(n + 255) / 256, 256, 0, s>>>(d, id * 1000000 + round, n);
        cudaMemcpyAsync(h, d, n * sizeof(int), cudaMemcpyDeviceToHost, s);
        if (cudaStreamSynchronize(s) != cudaSuccess) { failures++; return; }
        for (int i = 0; i < n; i += 97)
            if (h[i] != id * 1000000 + round + i) { failures++; return; }
    }
    cudaFree(d);
    cudaFreeHost(h);
    cudaStreamDestroy(s);
}

int main() {
    int ndev = 0;
    CHECK(cudaGetDeviceCount(&ndev));
    printf("devices: %d\n", ndev);
    EXPECT(ndev >= 2, "need two devices");

    int can = -1;
    CHECK(cudaDeviceCanAccessPeer(&can, 0, 1));
    printf("cudaDeviceCanAccessPeer(0, 1) = %d\n", can);
    CHECK(cudaSetDevice(0));
    cudaError_t e = cudaDeviceEnablePeerAccess(1, 0);
    printf("cudaDeviceEnablePeerAccess(1) -> %s\n", cudaGetErrorName(e));
    EXPECT(e == (can ? cudaSuccess : cudaErrorPeerAccessUnsupported), "peer access answer");
    (void)cudaGetLastError();

    // Copies between GPUs.
    const int n = 1 << 20;
    int *a = nullptr, *b = nullptr;
    CHECK(cudaSetDevice(0));
    CHECK(cudaMalloc(&a, n * sizeof(int)));
    fill<<<(n + 255) / 256, 256>>>(a, 7, n);
    CHECK(cudaGetLastError());
    CHECK(cudaSetDevice(1));
    CHECK(cudaMalloc(&b, n * sizeof(int)));
    CHECK(cudaMemcpyPeer(b, 1, a, 0, n * sizeof(int)));
    std::vector<int> h(n);
    CHECK(cudaMemcpy(h.data(), b, n * sizeof(int), cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; i++) EXPECT(h[i] == 7 + i, "peer copy element %d = %d", i, h[i]);
    CHECK(cudaMemset(b, 0, n * sizeof(int)));
    cudaStream_t s1;
    CHECK(cudaStreamCreate(&s1));
    CHECK(cudaMemcpyPeerAsync(b, 1, a, 0, n * sizeof(int), s1));
    CHECK(cudaStreamSynchronize(s1));
    CHECK(cudaMemcpy(h.data(), b, n * sizeof(int), cudaMemcpyDefault));
    for (int i = 0; i < n; i++) EXPECT(h[i] == 7 + i, "async peer copy element %d = %d", i, h[i]);
    CHECK(cudaMemset(b, 0, n * sizeof(int)));
    CHECK(cudaMemcpy(b, a, n * sizeof(int), cudaMemcpyDefault));
    CHECK(cudaMemcpy(h.data(), b, n * sizeof(int), cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; i++) EXPECT(h[i] == 7 + i, "default copy element %d = %d", i, h[i]);
    printf("copies between GPUs: ok\n");
    CHECK(cudaStreamDestroy(s1));

    // Pitched memory.
    const int w = 333, rows = 47;
    float *m = nullptr;
    size_t pitch = 0;
    CHECK(cudaMallocPitch(&m, &pitch, w * sizeof(float), rows));
    EXPECT(pitch >= w * sizeof(float), "pitch %zu", pitch);
    std::vector<float> host(w * rows), back(w * rows, -1.0f);
    for (int i = 0; i < w * rows; i++) host[i] = (float)i;
    CHECK(cudaMemset2D(m, pitch, 0, w * sizeof(float), rows));
    CHECK(cudaMemcpy2D(m, pitch, host.data(), w * sizeof(float), w * sizeof(float), rows,
                       cudaMemcpyHostToDevice));
    add_rows<<<dim3((w + 63) / 64, rows), 64>>>(m, pitch, w, rows, 0.5f);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy2D(back.data(), w * sizeof(float), m, pitch, w * sizeof(float), rows,
                       cudaMemcpyDeviceToHost));
    for (int i = 0; i < w * rows; i++)
        EXPECT(back[i] == (float)i + 0.5f, "2-D element %d = %f", i, back[i]);
    float *m2 = nullptr;
    size_t pitch2 = 0;
    CHECK(cudaMallocPitch(&m2, &pitch2, w * sizeof(float), rows));
    cudaStream_t s2;
    CHECK(cudaStreamCreate(&s2));
    CHECK(cudaMemset2DAsync(m2, pitch2, 0, w * sizeof(float), rows, s2));
    CHECK(cudaMemcpy2DAsync(m2, pitch2, m, pitch, w * sizeof(float), rows,
                            cudaMemcpyDeviceToDevice, s2));
    CHECK(cudaMemcpy2DAsync(back.data(), w * sizeof(float), m2, pitch2, w * sizeof(float), rows,
                            cudaMemcpyDeviceToHost, s2));
    CHECK(cudaStreamSynchronize(s2));
    for (int i = 0; i < w * rows; i++)
        EXPECT(back[i] == (float)i + 0.5f, "2-D device copy element %d = %f", i, back[i]);
    e = cudaMemcpy2D(m, 4, host.data(), 8, 8, 2, cudaMemcpyHostToDevice);
    printf("cudaMemcpy2D(width > pitch) -> %s\n", cudaGetErrorName(e));
    EXPECT(e == cudaErrorInvalidPitchValue, "pitch check");
    (void)cudaGetLastError();
    printf("pitched memory: ok\n");
    CHECK(cudaStreamDestroy(s2));

    // Eight host threads, each on its own stream, alternating devices.
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; t++) threads.emplace_back(worker, t, ndev);
    for (auto &t : threads) t.join();
    EXPECT(failures == 0, "%d worker threads failed", (int)failures);
    printf("8 host threads on %d devices: ok\n", ndev);

    printf("PASS\n");
    return 0;
}
