// Asynchronous work from page-locked memory returns at once and runs while
// the host works, as NVIDIA's asyncAPI sample checks: copies in and out, a
// kernel and an event record are queued, the host counts while
// cudaEventQuery says cudaErrorNotReady, and the results are right.
#include <cuda_runtime.h>

#include "check.h"

__global__ void increment(int *x, int by, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        x[i] += by;
}

int main() {
    const int n = 16 << 20;  // 64 MiB of ints
    int *host = nullptr, *dev = nullptr;
    CHECK(cudaMallocHost(&host, n * sizeof(int)));
    CHECK(cudaMalloc(&dev, n * sizeof(int)));
    for (int i = 0; i < n; ++i) host[i] = i;
    cudaEvent_t done;
    CHECK(cudaEventCreate(&done));

    CHECK(cudaMemcpyAsync(dev, host, n * sizeof(int), cudaMemcpyHostToDevice, 0));
    increment<<<256, 256>>>(dev, 26, n);
    CHECK(cudaMemcpyAsync(host, dev, n * sizeof(int), cudaMemcpyDeviceToHost, 0));
    CHECK(cudaEventRecord(done, 0));

    unsigned long counter = 0;
    cudaError_t status;
    while ((status = cudaEventQuery(done)) == cudaErrorNotReady) ++counter;
    CHECK(status);
    EXPECT(counter > 0, "the host worked while the device did");
    printf("host worked while 64 MiB went to the device and back: ok\n");
    EXPECT(cudaGetLastError() == cudaSuccess, "not ready is no error");
    for (int i = 0; i < n; ++i) EXPECT(host[i] == i + 26, "host[%d] = %d", i, host[i]);
    printf("results: ok\n");

    // A stream's query says the same.
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    CHECK(cudaMemcpyAsync(dev, host, n * sizeof(int), cudaMemcpyHostToDevice, s));
    counter = 0;
    while ((status = cudaStreamQuery(s)) == cudaErrorNotReady) ++counter;
    CHECK(status);
    EXPECT(counter > 0, "the stream was busy at first");
    printf("cudaStreamQuery: ok\n");

    CHECK(cudaStreamDestroy(s));
    CHECK(cudaEventDestroy(done));
    CHECK(cudaFree(dev));
    CHECK(cudaFreeHost(host));
    printf("PASS\n");
    return 0;
}
