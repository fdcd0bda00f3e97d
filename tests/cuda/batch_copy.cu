// Batched and attributed copies (CUDA 12.8+): cudaMemcpyBatchAsync with two
// attribute groups over host-to-device, device-to-device and device-to-host
// copies, a stack source read during the call, cudaMemcpyWithAttributesAsync,
// and the errors CUDA documents.
#include <cuda_runtime.h>

#include <vector>

#include "check.h"

int main() {
    const int n = 1 << 16;
    std::vector<int> a(n), b(n, 0), c(n, 0);
    for (int i = 0; i < n; ++i) a[i] = i * 3 - 7;
    int *d1, *d2, *pinned;
    CHECK(cudaMalloc(&d1, n * sizeof(int)));
    CHECK(cudaMalloc(&d2, n * sizeof(int)));
    CHECK(cudaMallocHost(&pinned, n * sizeof(int)));
    for (int i = 0; i < n; ++i) pinned[i] = -i;
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));

    // Batch 1: two host-to-device copies (halves of `a`) and a pinned one.
    int half = n / 2;
    void *dsts[3] = {d1, d1 + half, d2};
    const void *srcs[3] = {a.data(), a.data() + half, pinned};
    size_t sizes[3] = {half * sizeof(int), half * sizeof(int), n * sizeof(int)};
    cudaMemcpyAttributes attrs[2] = {};
    attrs[0].srcAccessOrder = cudaMemcpySrcAccessOrderStream;
    attrs[1].srcAccessOrder = cudaMemcpySrcAccessOrderDuringApiCall;
    attrs[1].flags = cudaMemcpyFlagPreferOverlapWithCompute;
    size_t idxs[2] = {0, 2};
    CHECK(cudaMemcpyBatchAsync(dsts, srcs, sizes, 3, attrs, idxs, 2, s));
    // The during-the-call source may change at once.
    for (int i = 0; i < n; ++i) pinned[i] = 12345;

    // Batch 2: back to the host, one attribute for all.
    void *dsts2[2] = {b.data(), c.data()};
    const void *srcs2[2] = {d1, d2};
    size_t sizes2[2] = {n * sizeof(int), n * sizeof(int)};
    cudaMemcpyAttributes any = {};
    any.srcAccessOrder = cudaMemcpySrcAccessOrderAny;
    size_t zero = 0;
    CHECK(cudaMemcpyBatchAsync(dsts2, srcs2, sizes2, 2, &any, &zero, 1, s));
    CHECK(cudaStreamSynchronize(s));
    for (int i = 0; i < n; ++i) {
        EXPECT(b[i] == a[i], "b[%d] = %d", i, b[i]);
        EXPECT(c[i] == -i, "c[%d] = %d", i, c[i]);
    }
    printf("cudaMemcpyBatchAsync: ok\n");

    int stack_value = 77, back = 0;
    CHECK(cudaMemcpyWithAttributesAsync(d1, &stack_value, sizeof(int), &attrs[1], s));
    stack_value = 0;
    CHECK(cudaMemcpyWithAttributesAsync(&back, d1, sizeof(int), &any, s));
    CHECK(cudaStreamSynchronize(s));
    EXPECT(back == 77, "back = %d", back);
    printf("cudaMemcpyWithAttributesAsync: ok\n");

    EXPECT_ERR_AS("batch on the legacy stream",
                  cudaMemcpyBatchAsync(dsts2, srcs2, sizes2, 2, &any, &zero, 1, 0),
                  cudaErrorInvalidValue);
    size_t one = 1;
    EXPECT_ERR_AS("first attribute index not 0",
                  cudaMemcpyBatchAsync(dsts2, srcs2, sizes2, 2, &any, &one, 1, s),
                  cudaErrorInvalidValue);
    cudaMemcpyAttributes bad = {};
    EXPECT_ERR_AS("invalid source access order",
                  cudaMemcpyBatchAsync(dsts2, srcs2, sizes2, 2, &bad, &zero, 1, s),
                  cudaErrorInvalidValue);

    CHECK(cudaStreamDestroy(s));
    CHECK(cudaFree(d1));
    CHECK(cudaFree(d2));
    CHECK(cudaFreeHost(pinned));
    printf("PASS\n");
    return 0;
}
