// Streams, events, asynchronous copies and launches, host callbacks.
// Built twice by the tests: as is, and with --default-stream per-thread.
#include <cuda_runtime.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "check.h"

__global__ void scale_add(float *x, float a, float b, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        x[i] = x[i] * a + b;
}

static int order[8];
static std::atomic<int> order_len{0};

static void CUDART_CB host_fn(void *arg) { order[order_len++] = (int)(size_t)arg; }

static void CUDART_CB stream_cb(cudaStream_t, cudaError_t status, void *arg) {
    if (status == cudaSuccess) order[order_len++] = (int)(size_t)arg;
}

static std::atomic<int> signalled{0};

// Fills a page-locked buffer of FILL_N ints with i * k, k taken from the
// buffer's first element (set by the host before it queues the function).
static const int FILL_N = 1 << 16;
struct Fill {
    int *buf;
    int k;
};
static void CUDART_CB fill_fn(void *arg) {
    Fill *f = (Fill *)arg;
    for (int i = 0; i < FILL_N; i++) f->buf[i] = i * f->k;
}
static void CUDART_CB signal_fn(void *) { signalled = 1; }

// CUDA calls are not permitted in a host function: they fail (here with
// cudaErrorNotPermitted) instead of waiting on the stream that runs it.
static std::atomic<int> inside_malloc{-1}, inside_sync{-1};
static void CUDART_CB calls_cuda_fn(void *stream) {
    void *p = nullptr;
    inside_malloc = (int)cudaMalloc(&p, 64);
    inside_sync = (int)cudaStreamSynchronize((cudaStream_t)stream);
}

int main() {
    int least = 1, greatest = 1;
    CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
    printf("stream priorities: least %d greatest %d\n", least, greatest);
    EXPECT(greatest <= least, "priority range");

    const int nstreams = 4, n = 1 << 18;
    cudaStream_t streams[nstreams];
    CHECK(cudaStreamCreate(&streams[0]));
    CHECK(cudaStreamCreateWithFlags(&streams[1], cudaStreamNonBlocking));
    CHECK(cudaStreamCreateWithPriority(&streams[2], cudaStreamDefault, greatest));
    CHECK(cudaStreamCreateWithPriority(&streams[3], cudaStreamNonBlocking, greatest - 100));
    unsigned flags = 0;
    int prio = 0;
    CHECK(cudaStreamGetFlags(streams[1], &flags));
    EXPECT(flags == cudaStreamNonBlocking, "stream flags %u", flags);
    CHECK(cudaStreamGetPriority(streams[2], &prio));
    EXPECT(prio == greatest, "priority %d", prio);
    CHECK(cudaStreamGetPriority(streams[3], &prio));
    EXPECT(prio == greatest, "clamped priority %d", prio);
    printf("stream flags and priorities: ok\n");

    // Overlapped pipelines: pinned H2D, kernel, D2H on each stream, timed.
    float *host = NULL, *dev = NULL;
    CHECK(cudaMallocHost(&host, nstreams * n * sizeof(float)));
    CHECK(cudaMalloc(&dev, nstreams * n * sizeof(float)));
    for (int i = 0; i < nstreams * n; i++) host[i] = (float)(i % 1000);
    cudaEvent_t start, stop;
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreateWithFlags(&stop, cudaEventBlockingSync));
    CHECK(cudaEventRecord(start, 0));
    for (int s = 0; s < nstreams; s++) {
        float *h = host + s * n, *d = dev + s * n;
        CHECK(cudaMemcpyAsync(d, h, n * sizeof(float), cudaMemcpyHostToDevice, streams[s]));
        scale_add<<<64, 256, 0, streams[s]>>>(d, 2.0f, (float)s, n);
        CHECK(cudaGetLastError());
        CHECK(cudaMemcpyAsync(h, d, n * sizeof(float), cudaMemcpyDeviceToHost, streams[s]));
    }
    CHECK(cudaEventRecord(stop, 0));
    CHECK(cudaEventSynchronize(stop));
    CHECK(cudaEventQuery(stop));
    float ms = -1;
    CHECK(cudaEventElapsedTime(&ms, start, stop));
    EXPECT(ms >= 0, "elapsed %f", ms);
    for (int s = 0; s < nstreams; s++) CHECK(cudaStreamSynchronize(streams[s]));
    for (int s = 0; s < nstreams; s++)
        for (int i = 0; i < n; i++) {
            float want = (float)((s * n + i) % 1000) * 2.0f + (float)s;
            EXPECT(host[s * n + i] == want, "stream %d element %d: %f != %f", s, i,
                   host[s * n + i], want);
        }
    printf("pipelines on %d streams: ok\n", nstreams);
    for (int s = 0; s < nstreams; s++) CHECK(cudaStreamQuery(streams[s]));
    printf("cudaStreamQuery after synchronize: ok\n");

    // Pageable asynchronous copies complete in stream order too.
    std::vector<float> pageable(n, 3.0f);
    CHECK(cudaMemcpyAsync(dev, pageable.data(), n * sizeof(float), cudaMemcpyHostToDevice,
                          streams[1]));
    CHECK(cudaMemsetAsync(dev + n, 0, n * sizeof(float), streams[1]));
    scale_add<<<32, 128, 0, streams[1]>>>(dev, 1.0f, 1.0f, n);
    std::vector<float> back(2 * n, -1.0f);
    CHECK(cudaMemcpyAsync(back.data(), dev, 2 * n * sizeof(float), cudaMemcpyDeviceToHost,
                          streams[1]));
    CHECK(cudaStreamSynchronize(streams[1]));
    for (int i = 0; i < n; i++) EXPECT(back[i] == 4.0f, "pageable element %d: %f", i, back[i]);
    for (int i = n; i < 2 * n; i++) EXPECT(back[i] == 0.0f, "memset element %d: %f", i, back[i]);
    printf("pageable async copies and memset: ok\n");

    // Cross-stream dependency through an event.
    cudaEvent_t ready;
    CHECK(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming));
    CHECK(cudaMemsetAsync(dev, 0, n * sizeof(float), streams[0]));
    scale_add<<<16, 256, 0, streams[0]>>>(dev, 1.0f, 5.0f, n);
    CHECK(cudaEventRecord(ready, streams[0]));
    CHECK(cudaStreamWaitEvent(streams[2], ready, 0));
    scale_add<<<16, 256, 0, streams[2]>>>(dev, 3.0f, 0.0f, n);
    CHECK(cudaMemcpyAsync(host, dev, n * sizeof(float), cudaMemcpyDeviceToHost, streams[2]));
    CHECK(cudaStreamSynchronize(streams[2]));
    for (int i = 0; i < n; i++) EXPECT(host[i] == 15.0f, "after wait element %d: %f", i, host[i]);
    float unused;
    cudaError_t e = cudaEventElapsedTime(&unused, ready, ready);
    printf("cudaEventElapsedTime(timing disabled) -> %s\n", cudaGetErrorName(e));
    EXPECT(e == cudaErrorInvalidResourceHandle, "timing-disabled event");
    printf("cudaStreamWaitEvent: ok\n");

    // Host functions and callbacks run in stream order, after the work before them.
    order_len = 0;
    CHECK(cudaMemsetAsync(dev, 0, sizeof(float), streams[3]));
    CHECK(cudaLaunchHostFunc(streams[3], host_fn, (void *)1));
    CHECK(cudaStreamAddCallback(streams[3], stream_cb, (void *)2, 0));
    CHECK(cudaLaunchHostFunc(streams[3], host_fn, (void *)3));
    CHECK(cudaStreamSynchronize(streams[3]));
    EXPECT(order_len == 3 && order[0] == 1 && order[1] == 2 && order[2] == 3,
           "callback order %d: %d %d %d", (int)order_len, order[0], order[1], order[2]);
    printf("host functions in stream order: ok\n");

    // A host function runs even when the program waits for it without a
    // synchronizing CUDA call.
    signalled = 0;
    CHECK(cudaLaunchHostFunc(streams[0], signal_fn, NULL));
    auto t0 = std::chrono::steady_clock::now();
    while (!signalled && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(10))
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT(signalled, "the host function never ran");
    printf("host function without a synchronizing call: ok\n");

    (void)cudaGetLastError();  // the timing-disabled event's error above
    CHECK(cudaLaunchHostFunc(streams[3], calls_cuda_fn, (void *)streams[3]));
    CHECK(cudaStreamSynchronize(streams[3]));
    printf("CUDA calls in a host function -> %s, %s\n",
           cudaGetErrorName((cudaError_t)inside_malloc.load()),
           cudaGetErrorName((cudaError_t)inside_sync.load()));
    EXPECT(inside_malloc == cudaErrorNotPermitted && inside_sync == cudaErrorNotPermitted,
           "CUDA calls in a host function: %d %d", (int)inside_malloc, (int)inside_sync);
    // The refusals are not this thread's errors.
    CHECK(cudaGetLastError());
    printf("CUDA calls in a host function refused: ok\n");

    // What a host function writes is seen by the copies after it in the
    // stream: a queued copy reads its page-locked source when it runs, after
    // the functions before it, not when it was queued.
    {
        int *src, *back, *dbuf;
        CHECK(cudaMallocHost(&src, 2 * FILL_N * sizeof(int)));
        CHECK(cudaMallocHost(&back, 2 * FILL_N * sizeof(int)));
        CHECK(cudaMalloc(&dbuf, 2 * FILL_N * sizeof(int)));
        for (int i = 0; i < 2 * FILL_N; i++) src[i] = -1;
        Fill first = {src, 3}, second = {src + FILL_N, 5};
        const size_t half = FILL_N * sizeof(int);
        CHECK(cudaLaunchHostFunc(streams[1], fill_fn, &first));
        CHECK(cudaMemcpyAsync(dbuf, src, half, cudaMemcpyHostToDevice, streams[1]));
        CHECK(cudaLaunchHostFunc(streams[1], fill_fn, &second));
        CHECK(cudaMemcpyAsync(dbuf + FILL_N, src + FILL_N, half, cudaMemcpyHostToDevice,
                              streams[1]));
        CHECK(cudaMemcpyAsync(back, dbuf, 2 * half, cudaMemcpyDeviceToHost, streams[1]));
        CHECK(cudaStreamSynchronize(streams[1]));
        for (int i = 0; i < FILL_N; i++) {
            EXPECT(back[i] == i * 3, "copy after the first host function: [%d] = %d", i, back[i]);
            EXPECT(back[FILL_N + i] == i * 5, "copy after the second host function: [%d] = %d",
                   i, back[FILL_N + i]);
        }
        // The same for a 2-D copy: rows of 1000 ints, 1024 apart on the host.
        const int rows = FILL_N / 1024, width = 1000;
        for (int i = 0; i < FILL_N; i++) src[i] = -1;
        Fill third = {src, 7};
        int *pitched;
        size_t dpitch;
        CHECK(cudaMallocPitch((void **)&pitched, &dpitch, width * sizeof(int), rows));
        CHECK(cudaLaunchHostFunc(streams[2], fill_fn, &third));
        CHECK(cudaMemcpy2DAsync(pitched, dpitch, src, 1024 * sizeof(int), width * sizeof(int),
                                rows, cudaMemcpyHostToDevice, streams[2]));
        CHECK(cudaMemcpy2DAsync(back, width * sizeof(int), pitched, dpitch, width * sizeof(int),
                                rows, cudaMemcpyDeviceToHost, streams[2]));
        CHECK(cudaStreamSynchronize(streams[2]));
        for (int r = 0; r < rows; r++)
            for (int c = 0; c < width; c++)
                EXPECT(back[r * width + c] == (r * 1024 + c) * 7,
                       "2-D copy after a host function: row %d col %d = %d", r, c,
                       back[r * width + c]);
        CHECK(cudaFree(pitched));
        CHECK(cudaFree(dbuf));
        CHECK(cudaFreeHost(back));
        CHECK(cudaFreeHost(src));
    }
    printf("copies after host functions see their writes: ok\n");

    // Asynchronous calls on bad pointers fail at once.
    e = cudaMemcpyAsync((void *)0x10, host, 16, cudaMemcpyHostToDevice, streams[0]);
    printf("cudaMemcpyAsync to a bad pointer -> %s\n", cudaGetErrorName(e));
    EXPECT(e == cudaErrorInvalidValue, "bad async copy");
    (void)cudaGetLastError();

    CHECK(cudaEventDestroy(start));
    CHECK(cudaEventDestroy(stop));
    CHECK(cudaEventDestroy(ready));
    for (int s = 0; s < nstreams; s++) CHECK(cudaStreamDestroy(streams[s]));
    CHECK(cudaFreeHost(host));
    CHECK(cudaFree(dev));
    CHECK(cudaDeviceSynchronize());
    printf("PASS\n");
    return 0;
}
