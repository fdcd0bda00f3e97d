// Stream-ordered allocations captured into a graph across two streams, the
// pattern of NVIDIA's graphMemoryNodes sample: the second stream is forked
// in by an event, joined back, and destroyed before the capture ends; the
// graph is then launched several times and checked.
#include <cuda_runtime.h>

#include "check.h"

__global__ void square(const float *in, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = in[i] * in[i];
}

__global__ void negate(const float *in, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = -in[i];
}

int main() {
    const int n = 1000, threads = 128, blocks = (n + threads - 1) / threads;
    const size_t bytes = n * sizeof(float);
    float *h_in, *h_out;
    CHECK(cudaMallocHost(&h_in, bytes));
    CHECK(cudaMallocHost(&h_out, bytes));

    cudaStream_t s1, s2;
    CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
    CHECK(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
    CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    cudaEvent_t squared, negated, freed;
    CHECK(cudaEventCreate(&squared));
    CHECK(cudaEventCreate(&negated));
    CHECK(cudaEventCreate(&freed));

    float *d_in, *d_sq, *d_neg;
    CHECK(cudaMallocAsync(&d_in, bytes, s1));
    CHECK(cudaMallocAsync(&d_sq, bytes, s1));
    CHECK(cudaMemcpyAsync(d_in, h_in, bytes, cudaMemcpyHostToDevice, s1));
    square<<<blocks, threads, 0, s1>>>(d_in, d_sq, n);
    CHECK(cudaGetLastError());
    CHECK(cudaEventRecord(squared, s1));
    CHECK(cudaFreeAsync(d_in, s1));
    CHECK(cudaMallocAsync(&d_neg, bytes, s1));
    negate<<<blocks, threads, 0, s1>>>(d_sq, d_neg, n);
    CHECK(cudaGetLastError());
    CHECK(cudaEventRecord(negated, s1));
    CHECK(cudaMemcpyAsync(h_out, d_neg, bytes, cudaMemcpyDeviceToHost, s1));
    CHECK(cudaFreeAsync(d_neg, s1));
    // The second stream frees the squares once the negation is done, and
    // joins back before it is destroyed.
    CHECK(cudaStreamWaitEvent(s2, negated, 0));
    CHECK(cudaFreeAsync(d_sq, s2));
    CHECK(cudaEventRecord(freed, s2));
    CHECK(cudaStreamWaitEvent(s1, freed, 0));
    CHECK(cudaStreamDestroy(s2));
    CHECK(cudaEventDestroy(squared));
    CHECK(cudaEventDestroy(negated));
    CHECK(cudaEventDestroy(freed));

    cudaStreamCaptureStatus status;
    CHECK(cudaStreamIsCapturing(s1, &status));
    EXPECT(status == cudaStreamCaptureStatusActive, "capture status %d after the fork left",
           (int)status);
    cudaGraph_t graph;
    CHECK(cudaStreamEndCapture(s1, &graph));
    size_t count = 0;
    CHECK(cudaGraphGetNodes(graph, nullptr, &count));
    int allocs = 0, frees = 0;
    cudaGraphNode_t nodes[32];
    EXPECT(count <= 32, "%zu nodes", count);
    CHECK(cudaGraphGetNodes(graph, nodes, &count));
    for (size_t i = 0; i < count; i++) {
        cudaGraphNodeType t;
        CHECK(cudaGraphNodeGetType(nodes[i], &t));
        allocs += t == cudaGraphNodeTypeMemAlloc;
        frees += t == cudaGraphNodeTypeMemFree;
    }
    EXPECT(allocs == 3 && frees == 3, "%d alloc and %d free nodes", allocs, frees);
    printf("captured across two streams: %d alloc and %d free nodes\n", allocs, frees);

    cudaGraphExec_t exec;
    CHECK(cudaGraphInstantiate(&exec, graph, 0));
    for (int round = 0; round < 4; round++) {
        for (int i = 0; i < n; i++) h_in[i] = (float)(i % 37) + round;
        CHECK(cudaGraphLaunch(exec, s1));
        CHECK(cudaStreamSynchronize(s1));
        for (int i = 0; i < n; i++) {
            float want = -h_in[i] * h_in[i];
            EXPECT(h_out[i] == want, "round %d: [%d] = %f, expected %f", round, i, h_out[i], want);
        }
    }
    printf("4 launches: ok\n");

    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(graph));
    CHECK(cudaStreamDestroy(s1));
    CHECK(cudaFreeHost(h_in));
    CHECK(cudaFreeHost(h_out));
    printf("PASS\n");
    return 0;
}
