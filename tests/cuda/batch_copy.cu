// Batched and attributed copies (CUDA 12.8+): cudaMemcpyBatchAsync with two
// attribute groups over host-to-device, device-to-device and device-to-host
// copies, a stack source read during the call, cudaMemcpyWithAttributesAsync,
// 3-D batches between host, device pointers and a 3-D CUDA array
// (cudaMemcpy3DBatchAsync, cudaMemcpy3DWithAttributesAsync), and the errors
// CUDA documents.
#include <cuda_runtime.h>

#include <vector>

#include "check.h"

static cudaMemcpy3DOperand pointer_operand(void *p, size_t row_length, size_t layer_height) {
    cudaMemcpy3DOperand o = {};
    o.type = cudaMemcpyOperandTypePointer;
    o.op.ptr.ptr = p;
    o.op.ptr.rowLength = row_length;
    o.op.ptr.layerHeight = layer_height;
    return o;
}

static cudaMemcpy3DOperand array_operand(cudaArray_t a, size_t x, size_t y, size_t z) {
    cudaMemcpy3DOperand o = {};
    o.type = cudaMemcpyOperandTypeArray;
    o.op.array.array = a;
    o.op.array.offset = {x, y, z};
    return o;
}

// Host -> 3-D array -> pitched device memory (a sub-box) -> host, each a
// 3-D batch operation; then the errors.
static void batch_3d(cudaStream_t s) {
    const int W = 16, H = 8, D = 4;
    std::vector<float> h(W * H * D);
    for (int i = 0; i < W * H * D; ++i) h[i] = (float)i;
    cudaArray_t array;
    cudaChannelFormatDesc desc = cudaCreateChannelDesc<float>();
    CHECK(cudaMalloc3DArray(&array, &desc, make_cudaExtent(W, H, D)));
    const int box_w = 8, box_h = 4, box_d = 2, row = 32;
    float *pitched;
    CHECK(cudaMalloc(&pitched, row * box_h * box_d * sizeof(float)));

    cudaMemcpy3DBatchOp op = {};
    op.src = pointer_operand(h.data(), 0, 0);
    op.dst = array_operand(array, 0, 0, 0);
    op.extent = make_cudaExtent(W, H, D);
    op.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
#if CUDART_VERSION > 13000  // not in CUDA 13.0's runtime
    CHECK(cudaMemcpy3DWithAttributesAsync(&op, 0, s));
#else
    CHECK(cudaMemcpy3DBatchAsync(1, &op, 0, s));
#endif

    cudaMemcpy3DBatchOp ops[1] = {};
    ops[0].src = array_operand(array, 2, 1, 1);
    ops[0].dst = pointer_operand(pitched, row, 0);
    ops[0].extent = make_cudaExtent(box_w, box_h, box_d);
    ops[0].srcAccessOrder = cudaMemcpySrcAccessOrderStream;
    CHECK(cudaMemcpy3DBatchAsync(1, ops, 0, s));

    // Pointer to pointer: the element is a byte.
    std::vector<float> out(box_w * box_h * box_d, -1.0f);
    ops[0].src = pointer_operand(pitched, row * sizeof(float), 0);
    ops[0].dst = pointer_operand(out.data(), 0, 0);
    ops[0].extent = make_cudaExtent(box_w * sizeof(float), box_h, box_d);
    CHECK(cudaMemcpy3DBatchAsync(1, ops, 0, s));
    CHECK(cudaStreamSynchronize(s));
    for (int z = 0; z < box_d; ++z)
        for (int y = 0; y < box_h; ++y)
            for (int x = 0; x < box_w; ++x) {
                float got = out[(z * box_h + y) * box_w + x];
                float want = h[((z + 1) * H + (y + 1)) * W + (x + 2)];
                EXPECT(got == want, "3-D batch (%d,%d,%d): %f, expected %f", x, y, z, got, want);
            }
    printf("cudaMemcpy3DBatchAsync and cudaMemcpy3DWithAttributesAsync: ok\n");

    cudaMemcpy3DBatchOp bad = op;
    bad.extent = make_cudaExtent(W, 0, D);
    EXPECT_ERR_AS("3-D batch with a zero extent", cudaMemcpy3DBatchAsync(1, &bad, 0, s),
                  cudaErrorInvalidValue);
    EXPECT_ERR_AS("3-D batch on the legacy stream", cudaMemcpy3DBatchAsync(1, &op, 0, 0),
                  cudaErrorInvalidValue);
    bad = op;
    bad.src = pointer_operand(h.data(), W - 1, 0);
    EXPECT_ERR_AS("3-D batch with rows shorter than the copy",
                  cudaMemcpy3DBatchAsync(1, &bad, 0, s), cudaErrorInvalidValue);
    cudaArray_t bytes_array;
    cudaChannelFormatDesc byte_desc = cudaCreateChannelDesc<unsigned char>();
    CHECK(cudaMalloc3DArray(&bytes_array, &byte_desc, make_cudaExtent(W, H, D)));
    bad = op;
    bad.src = array_operand(bytes_array, 0, 0, 0);
    EXPECT_ERR_AS("3-D batch between arrays of different elements",
                  cudaMemcpy3DBatchAsync(1, &bad, 0, s), cudaErrorInvalidValue);
    bad = op;
    bad.srcAccessOrder = (cudaMemcpySrcAccessOrder)0;
    EXPECT_ERR_AS("3-D batch with an invalid access order",
                  cudaMemcpy3DBatchAsync(1, &bad, 0, s), cudaErrorInvalidValue);
    CHECK(cudaFreeArray(bytes_array));
    CHECK(cudaFreeArray(array));
    CHECK(cudaFree(pitched));
}

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

#if CUDART_VERSION > 13000  // not in CUDA 13.0's runtime
    int stack_value = 77, back = 0;
    CHECK(cudaMemcpyWithAttributesAsync(d1, &stack_value, sizeof(int), &attrs[1], s));
    stack_value = 0;
    CHECK(cudaMemcpyWithAttributesAsync(&back, d1, sizeof(int), &any, s));
    CHECK(cudaStreamSynchronize(s));
    EXPECT(back == 77, "back = %d", back);
    printf("cudaMemcpyWithAttributesAsync: ok\n");
#endif

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

    batch_3d(s);

    CHECK(cudaStreamDestroy(s));
    CHECK(cudaFree(d1));
    CHECK(cudaFree(d2));
    CHECK(cudaFreeHost(pinned));
    printf("PASS\n");
    return 0;
}
