// CUDA graphs: explicit construction with every node type rcud has, stream
// capture across streams joined by events, instantiate / launch / update /
// per-node parameters / enable, clone, queries, DOT output, and the errors
// CUDA gives for illegal calls during capture.
#include <cuda_runtime.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "check.h"

__device__ int counter;

__global__ void add_scalar(float *x, float v, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += v;
}

__global__ void scale(float *x, float s, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= s;
}

__global__ void bump() { atomicAdd(&counter, 1); }

static void CUDART_CB host_tick(void *data) { ++*(int *)data; }

static const int N = 1000;

static std::vector<float> fetch(const float *d) {
    std::vector<float> h(N);
    CHECK(cudaMemcpy(h.data(), d, N * sizeof(float), cudaMemcpyDeviceToHost));
    return h;
}

static void expect_all(const std::vector<float> &h, float want, const char *what) {
    for (int i = 0; i < N; ++i) {
        EXPECT(h[i] == want, "%s: x[%d] = %f, expected %f", what, i, h[i], want);
    }
    printf("%s: ok\n", what);
}

static cudaKernelNodeParams kernel_params(void *func, void **args) {
    cudaKernelNodeParams p = {};
    p.func = func;
    p.gridDim = dim3((N + 255) / 256);
    p.blockDim = dim3(256);
    p.kernelParams = args;
    return p;
}

static void explicit_graph(float *x, float *y) {
    std::vector<float> host(N, 1.0f);
    float *pinned = nullptr;
    CHECK(cudaMallocHost(&pinned, N * sizeof(float)));
    int ticks = 0;
    cudaEvent_t done;
    CHECK(cudaEventCreate(&done));

    cudaGraph_t g;
    CHECK(cudaGraphCreate(&g, 0));
    // memset x = 0 -> copy host (1.0) into x -> x += 2 -> x *= 3 -> copy x to y
    // -> y back to pinned memory -> host function; an empty node and an
    // event record hang off the end.
    cudaMemsetParams ms = {};
    ms.dst = x;
    ms.value = 0;
    ms.elementSize = 4;
    ms.width = N;
    ms.height = 1;
    cudaGraphNode_t memset_node, h2d, add_node, scale_node, d2d, d2h, host_node, empty, rec;
    CHECK(cudaGraphAddMemsetNode(&memset_node, g, nullptr, 0, &ms));
    CHECK(cudaGraphAddMemcpyNode1D(&h2d, g, &memset_node, 1, x, host.data(),
                                   N * sizeof(float), cudaMemcpyHostToDevice));
    float two = 2.0f, three = 3.0f;
    int n = N;
    void *add_args[] = {&x, &two, &n};
    cudaKernelNodeParams kp = kernel_params((void *)add_scalar, add_args);
    CHECK(cudaGraphAddKernelNode(&add_node, g, &h2d, 1, &kp));
    void *scale_args[] = {&x, &three, &n};
    cudaKernelNodeParams sp = kernel_params((void *)scale, scale_args);
    CHECK(cudaGraphAddKernelNode(&scale_node, g, &add_node, 1, &sp));
    CHECK(cudaGraphAddMemcpyNode1D(&d2d, g, &scale_node, 1, y, x, N * sizeof(float),
                                   cudaMemcpyDeviceToDevice));
    CHECK(cudaGraphAddMemcpyNode1D(&d2h, g, &d2d, 1, pinned, y, N * sizeof(float),
                                   cudaMemcpyDeviceToHost));
    cudaHostNodeParams hp = {host_tick, &ticks};
    CHECK(cudaGraphAddHostNode(&host_node, g, &d2h, 1, &hp));
    CHECK(cudaGraphAddEmptyNode(&empty, g, &host_node, 1));
    CHECK(cudaGraphAddEventRecordNode(&rec, g, &empty, 1, done));

    size_t count = 0;
    CHECK(cudaGraphGetNodes(g, nullptr, &count));
    EXPECT(count == 9, "9 nodes, got %zu", count);
    CHECK(cudaGraphGetRootNodes(g, nullptr, &count));
    EXPECT(count == 1, "one root, got %zu", count);
    CHECK(cudaGraphGetEdges(g, nullptr, nullptr, nullptr, &count));
    EXPECT(count == 8, "8 edges, got %zu", count);
    cudaGraphNodeType type;
    CHECK(cudaGraphNodeGetType(host_node, &type));
    EXPECT(type == cudaGraphNodeTypeHost, "host node type %d", (int)type);
    cudaGraphNode_t dependent = nullptr;
    count = 1;
    CHECK(cudaGraphNodeGetDependentNodes(add_node, &dependent, nullptr, &count));
    EXPECT(count == 1 && dependent == scale_node, "add -> scale");
    cudaKernelNodeParams back = {};
    CHECK(cudaGraphKernelNodeGetParams(add_node, &back));
    EXPECT(back.func == (void *)add_scalar && *(float *)back.kernelParams[1] == 2.0f,
           "kernel node parameters read back");
    printf("explicit graph queries: ok\n");

    cudaGraphExec_t exec;
    CHECK(cudaGraphInstantiate(&exec, g, 0));
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    for (int i = 0; i < 3; ++i) CHECK(cudaGraphLaunch(exec, s));
    CHECK(cudaStreamSynchronize(s));
    EXPECT(ticks == 3, "host node ran %d times", ticks);
    expect_all(fetch(y), 9.0f, "explicit graph launched 3 times");
    for (int i = 0; i < N; ++i) EXPECT(pinned[i] == 9.0f, "pinned[%d] = %f", i, pinned[i]);
    CHECK(cudaEventSynchronize(done));

    // The host source is read at each launch, not when the node was made.
    for (auto &v : host) v = 10.0f;
    CHECK(cudaGraphLaunch(exec, s));
    CHECK(cudaStreamSynchronize(s));
    expect_all(fetch(y), 36.0f, "host source read at launch");

    // Per-node parameters of the executable graph; the graph itself keeps its own.
    float five = 5.0f;
    void *add5[] = {&x, &five, &n};
    cudaKernelNodeParams kp5 = kernel_params((void *)add_scalar, add5);
    CHECK(cudaGraphExecKernelNodeSetParams(exec, add_node, &kp5));
    CHECK(cudaGraphLaunch(exec, s));
    CHECK(cudaStreamSynchronize(s));
    expect_all(fetch(y), 45.0f, "exec kernel node parameters");

    // A disabled node is skipped.
    CHECK(cudaGraphNodeSetEnabled(exec, scale_node, 0));
    unsigned enabled = 1;
    CHECK(cudaGraphNodeGetEnabled(exec, scale_node, &enabled));
    EXPECT(enabled == 0, "scale node disabled");
    CHECK(cudaGraphLaunch(exec, s));
    CHECK(cudaStreamSynchronize(s));
    expect_all(fetch(y), 15.0f, "disabled node skipped");
    CHECK(cudaGraphNodeSetEnabled(exec, scale_node, 1));

    // Whole-graph update from a graph of the same shape.
    cudaGraph_t g2;
    CHECK(cudaGraphClone(&g2, g));
    cudaGraphNode_t add_in_clone;
    CHECK(cudaGraphNodeFindInClone(&add_in_clone, add_node, g2));
    float seven = 7.0f;
    void *add7[] = {&x, &seven, &n};
    cudaKernelNodeParams kp7 = kernel_params((void *)add_scalar, add7);
    CHECK(cudaGraphKernelNodeSetParams(add_in_clone, &kp7));
    cudaGraphExecUpdateResultInfo info;
    CHECK(cudaGraphExecUpdate(exec, g2, &info));
    EXPECT(info.result == cudaGraphExecUpdateSuccess, "update result %d", (int)info.result);
    CHECK(cudaGraphLaunch(exec, s));
    CHECK(cudaStreamSynchronize(s));
    expect_all(fetch(y), 51.0f, "graph exec update");

    // A graph of another shape cannot update it.
    cudaGraphNode_t extra;
    CHECK(cudaGraphAddEmptyNode(&extra, g2, nullptr, 0));
    EXPECT_ERR_AS("update with another topology", cudaGraphExecUpdate(exec, g2, &info),
                  cudaErrorGraphExecUpdateFailure);
    EXPECT(info.result == cudaGraphExecUpdateErrorTopologyChanged, "topology changed");

    // A child graph: the whole graph again, nested, after a memset.
    cudaGraph_t parent;
    CHECK(cudaGraphCreate(&parent, 0));
    cudaGraphNode_t child, tail;
    CHECK(cudaGraphAddChildGraphNode(&child, parent, nullptr, 0, g));
    ms.dst = y;
    ms.value = 0x40000000;  // 2.0f
    CHECK(cudaGraphAddMemsetNode(&tail, parent, &child, 1, &ms));
    cudaGraphExec_t parent_exec;
    CHECK(cudaGraphInstantiate(&parent_exec, parent, 0));
    CHECK(cudaGraphLaunch(parent_exec, s));
    CHECK(cudaStreamSynchronize(s));
    expect_all(fetch(y), 2.0f, "child graph then a 4-byte memset");
    expect_all(fetch(x), 36.0f, "child graph's work");

    // One file per process: the test suite runs this program over several
    // transports at once.
    char dot_path[64];
    snprintf(dot_path, sizeof dot_path, "/tmp/rcud_k_graphs.%d.dot", (int)getpid());
    CHECK(cudaGraphDebugDotPrint(g, dot_path, 0));
    FILE *dot = fopen(dot_path, "r");
    EXPECT(dot != nullptr, "DOT file written");
    char text[8192] = {};
    fread(text, 1, sizeof(text) - 1, dot);
    fclose(dot);
    remove(dot_path);
    EXPECT(strstr(text, "digraph") && strstr(text, "add_scalar"), "DOT names the kernels");
    printf("DOT output: ok\n");

    CHECK(cudaGraphExecDestroy(parent_exec));
    CHECK(cudaGraphDestroy(parent));
    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(g2));
    CHECK(cudaGraphDestroy(g));
    CHECK(cudaStreamDestroy(s));
    CHECK(cudaEventDestroy(done));
    CHECK(cudaFreeHost(pinned));
}

static void captured_graph(float *x, float *y) {
    cudaStream_t a, b;
    CHECK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
    CHECK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
    cudaEvent_t fork, join;
    CHECK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
    CHECK(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
    int ticks = 0;
    int grid = (N + 255) / 256;

    CHECK(cudaStreamBeginCapture(a, cudaStreamCaptureModeGlobal));
    cudaStreamCaptureStatus status;
    CHECK(cudaStreamIsCapturing(a, &status));
    EXPECT(status == cudaStreamCaptureStatusActive, "capturing");
    CHECK(cudaMemsetAsync(x, 0, N * sizeof(float), a));
    CHECK(cudaMemsetAsync(y, 0, N * sizeof(float), a));
    CHECK(cudaEventRecord(fork, a));
    CHECK(cudaStreamWaitEvent(b, fork, 0));
    CHECK(cudaStreamIsCapturing(b, &status));
    EXPECT(status == cudaStreamCaptureStatusActive, "b joined the capture");
    add_scalar<<<grid, 256, 0, a>>>(x, 4.0f, N);
    add_scalar<<<grid, 256, 0, b>>>(y, 6.0f, N);
    bump<<<1, 1, 0, b>>>();
    CHECK(cudaLaunchHostFunc(b, host_tick, &ticks));
    CHECK(cudaEventRecord(join, b));
    CHECK(cudaStreamWaitEvent(a, join, 0));
    scale<<<grid, 256, 0, a>>>(y, 0.5f, N);

    // Illegal calls while capturing, in global mode: refused; querying the
    // capture is fine.
    unsigned long long id = 0;
    size_t ndeps = 0;
    const cudaGraphNode_t *deps = nullptr;
    cudaGraph_t in_progress;
    CHECK(cudaStreamGetCaptureInfo(a, &status, &id, &in_progress, &deps, nullptr, &ndeps));
    EXPECT(status == cudaStreamCaptureStatusActive && id != 0 && ndeps == 1,
           "capture info: status %d, %zu dependencies", (int)status, ndeps);

    cudaGraph_t g;
    CHECK(cudaStreamEndCapture(a, &g));
    CHECK(cudaStreamIsCapturing(a, &status));
    EXPECT(status == cudaStreamCaptureStatusNone, "capture ended");
    CHECK(cudaStreamIsCapturing(b, &status));
    EXPECT(status == cudaStreamCaptureStatusNone, "b left with it");
    size_t count = 0;
    CHECK(cudaGraphGetNodes(g, nullptr, &count));
    EXPECT(count == 7, "7 captured nodes, got %zu", count);
    EXPECT(ticks == 0, "nothing ran while capturing");
    int zero = 0;
    CHECK(cudaMemcpyToSymbol(counter, &zero, sizeof(int)));

    cudaGraphExec_t exec;
    CHECK(cudaGraphInstantiate(&exec, g, 0));
    for (int i = 0; i < 4; ++i) CHECK(cudaGraphLaunch(exec, a));
    CHECK(cudaStreamSynchronize(a));
    expect_all(fetch(x), 4.0f, "captured graph: stream a");
    expect_all(fetch(y), 3.0f, "captured graph: stream b joined back");
    int c = 0;
    CHECK(cudaMemcpyFromSymbol(&c, counter, sizeof(int)));
    EXPECT(c == 4 && ticks == 4, "captured kernel and host function ran 4 times (%d, %d)", c, ticks);
    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(g));

    // A synchronous call in global mode invalidates the capture.
    CHECK(cudaStreamBeginCapture(a, cudaStreamCaptureModeGlobal));
    float *p = nullptr;
    EXPECT_ERR_AS("cudaMalloc while capturing (global)", cudaMalloc(&p, 16),
                  cudaErrorStreamCaptureUnsupported);
    CHECK(cudaStreamIsCapturing(a, &status));
    EXPECT(status == cudaStreamCaptureStatusInvalidated, "invalidated");
    EXPECT_ERR_AS("end an invalidated capture", cudaStreamEndCapture(a, &g),
                  cudaErrorStreamCaptureInvalidated);
    EXPECT(g == nullptr, "no graph from an invalidated capture");
    // So does waiting for an event of the capture.
    CHECK(cudaStreamBeginCapture(a, cudaStreamCaptureModeGlobal));
    CHECK(cudaEventRecord(join, a));
    EXPECT_ERR_AS("cudaEventQuery on a captured event", cudaEventQuery(join),
                  cudaErrorCapturedEvent);
    EXPECT_ERR_AS("end after querying a captured event", cudaStreamEndCapture(a, &g),
                  cudaErrorStreamCaptureInvalidated);

    // Relaxed mode allows it.
    CHECK(cudaStreamBeginCapture(a, cudaStreamCaptureModeRelaxed));
    CHECK(cudaMalloc(&p, 16));
    CHECK(cudaStreamEndCapture(a, &g));
    CHECK(cudaGraphDestroy(g));
    CHECK(cudaFree(p));
    printf("capture modes: ok\n");

    EXPECT_ERR_AS("synchronize a capturing stream",
                  (cudaStreamBeginCapture(a, cudaStreamCaptureModeThreadLocal),
                   cudaStreamSynchronize(a)),
                  cudaErrorStreamCaptureUnsupported);
    EXPECT_ERR_AS("end after the invalidation", cudaStreamEndCapture(a, &g),
                  cudaErrorStreamCaptureInvalidated);

    // A stream forked into the capture must join back.
    CHECK(cudaStreamBeginCapture(a, cudaStreamCaptureModeGlobal));
    CHECK(cudaEventRecord(fork, a));
    CHECK(cudaStreamWaitEvent(b, fork, 0));
    add_scalar<<<grid, 256, 0, b>>>(y, 1.0f, N);
    EXPECT_ERR_AS("end with b not joined", cudaStreamEndCapture(a, &g),
                  cudaErrorStreamCaptureUnjoined);

    EXPECT_ERR_AS("end a capture never begun", cudaStreamEndCapture(a, &g),
                  cudaErrorIllegalState);
    EXPECT_ERR_AS("capture the legacy stream", cudaStreamBeginCapture(0, cudaStreamCaptureModeGlobal),
                  cudaErrorStreamCaptureUnsupported);
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    CHECK(cudaThreadExchangeStreamCaptureMode(&mode));
    EXPECT(mode == cudaStreamCaptureModeGlobal, "previous mode global");
    CHECK(cudaThreadExchangeStreamCaptureMode(&mode));

    CHECK(cudaStreamDestroy(a));
    CHECK(cudaStreamDestroy(b));
    CHECK(cudaEventDestroy(fork));
    CHECK(cudaEventDestroy(join));
}

static unsigned long long graph_mem(cudaGraphMemAttributeType which) {
    unsigned long long v = 0;
    CHECK(cudaDeviceGetGraphMemAttribute(0, which, &v));
    return v;
}

static void memory_nodes(float *y) {
    int n = N, grid = (N + 255) / 256;
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

    // alloc -> memset -> add 1.5 -> copy into y -> free, launched twice.
    cudaGraph_t g;
    CHECK(cudaGraphCreate(&g, 0));
    cudaMemAllocNodeParams ap = {};
    ap.poolProps.allocType = cudaMemAllocationTypePinned;
    ap.poolProps.location.type = cudaMemLocationTypeDevice;
    ap.poolProps.location.id = 0;
    ap.bytesize = N * sizeof(float);
    cudaGraphNode_t alloc, set, add, copy, release;
    CHECK(cudaGraphAddMemAllocNode(&alloc, g, nullptr, 0, &ap));
    float *tmp = (float *)ap.dptr;
    EXPECT(tmp != nullptr, "the alloc node has its address");
    cudaMemsetParams ms = {};
    ms.dst = tmp;
    ms.elementSize = 4;
    ms.value = 0x40000000;  // 2.0f
    ms.width = N;
    ms.height = 1;
    CHECK(cudaGraphAddMemsetNode(&set, g, &alloc, 1, &ms));
    float v = 1.5f;
    void *args[] = {&tmp, &v, &n};
    cudaKernelNodeParams kp = kernel_params((void *)add_scalar, args);
    CHECK(cudaGraphAddKernelNode(&add, g, &set, 1, &kp));
    CHECK(cudaGraphAddMemcpyNode1D(&copy, g, &add, 1, y, tmp, N * sizeof(float),
                                   cudaMemcpyDeviceToDevice));
    CHECK(cudaGraphAddMemFreeNode(&release, g, &copy, 1, tmp));
    cudaGraphNodeType type;
    CHECK(cudaGraphNodeGetType(alloc, &type));
    EXPECT(type == cudaGraphNodeTypeMemAlloc, "alloc node type %d", (int)type);
    void *freed = nullptr;
    CHECK(cudaGraphMemFreeNodeGetParams(release, &freed));
    EXPECT(freed == tmp, "the free node frees the allocation");
    cudaGraphExec_t exec;
    CHECK(cudaGraphInstantiate(&exec, g, 0));
    CHECK(cudaGraphLaunch(exec, s));
    CHECK(cudaGraphLaunch(exec, s));
    CHECK(cudaStreamSynchronize(s));
    expect_all(fetch(y), 3.5f, "alloc, use and free nodes");
    // Memory is reserved by the launch (not by adding the node), and stays
    // with the graph pool after the free node ran until it is trimmed.
    EXPECT(graph_mem(cudaGraphMemAttrReservedMemCurrent) >= N * sizeof(float), "reserved");
    EXPECT(graph_mem(cudaGraphMemAttrUsedMemCurrent) <= graph_mem(cudaGraphMemAttrReservedMemCurrent),
           "used within reserved");
    EXPECT(graph_mem(cudaGraphMemAttrUsedMemHigh) >= N * sizeof(float), "used at its high");
    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(g));

    // Without a free node the allocation outlives the launch: a second
    // launch waits for it to be freed, unless the graph frees on launch.
    CHECK(cudaGraphCreate(&g, 0));
    CHECK(cudaGraphAddMemAllocNode(&alloc, g, nullptr, 0, &ap));
    tmp = (float *)ap.dptr;
    ms.dst = tmp;
    CHECK(cudaGraphAddMemsetNode(&set, g, &alloc, 1, &ms));
    CHECK(cudaGraphInstantiate(&exec, g, 0));
    CHECK(cudaGraphLaunch(exec, s));
    CHECK(cudaStreamSynchronize(s));
    std::vector<float> h(N);
    CHECK(cudaMemcpy(h.data(), tmp, N * sizeof(float), cudaMemcpyDeviceToHost));
    EXPECT(h[0] == 2.0f && h[N - 1] == 2.0f, "the allocation outlives its graph's launch");
    EXPECT_ERR_AS("relaunch with the allocation live", cudaGraphLaunch(exec, s),
                  cudaErrorInvalidValue);
    CHECK(cudaFreeAsync(tmp, s));
    CHECK(cudaGraphLaunch(exec, s));
    CHECK(cudaStreamSynchronize(s));
    CHECK(cudaFree(tmp));
    // One executable graph at a time for a graph with memory nodes.
    cudaGraphExec_t autofree;
    EXPECT_ERR_AS("a second executable graph with memory nodes",
                  cudaGraphInstantiate(&autofree, g, cudaGraphInstantiateFlagAutoFreeOnLaunch),
                  cudaErrorNotSupported);
    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphInstantiate(&autofree, g, cudaGraphInstantiateFlagAutoFreeOnLaunch));
    CHECK(cudaGraphLaunch(autofree, s));
    CHECK(cudaGraphLaunch(autofree, s));
    CHECK(cudaStreamSynchronize(s));
    CHECK(cudaFree(tmp));
    EXPECT_ERR_AS("free it twice", cudaFree(tmp), cudaErrorInvalidValue);
    printf("graph allocation outlives the launch: ok\n");
    CHECK(cudaGraphExecDestroy(autofree));
    CHECK(cudaGraphDestroy(g));
    CHECK(cudaDeviceGraphMemTrim(0));
    EXPECT(graph_mem(cudaGraphMemAttrReservedMemCurrent) == 0, "all graph memory given back");

    // Stream-ordered allocation during capture becomes alloc and free nodes.
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    float *scratch = nullptr;
    CHECK(cudaMallocAsync(&scratch, N * sizeof(float), s));
    CHECK(cudaMemsetAsync(scratch, 0, N * sizeof(float), s));
    add_scalar<<<grid, 256, 0, s>>>(scratch, 8.0f, N);
    CHECK(cudaMemcpyAsync(y, scratch, N * sizeof(float), cudaMemcpyDeviceToDevice, s));
    CHECK(cudaFreeAsync(scratch, s));
    CHECK(cudaStreamEndCapture(s, &g));
    size_t count = 0;
    CHECK(cudaGraphGetNodes(g, nullptr, &count));
    EXPECT(count == 5, "5 captured nodes, got %zu", count);
    CHECK(cudaGraphInstantiate(&exec, g, 0));
    for (int i = 0; i < 3; ++i) CHECK(cudaGraphLaunch(exec, s));
    CHECK(cudaStreamSynchronize(s));
    expect_all(fetch(y), 8.0f, "cudaMallocAsync and cudaFreeAsync captured");
    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(g));
    CHECK(cudaStreamDestroy(s));
}

static std::atomic<int> destroyed{0};
static void CUDART_CB destroy_object(void *p) { ((std::atomic<int> *)p)->store(1); }

static void user_objects_and_ids() {
    cudaUserObject_t obj;
    CHECK(cudaUserObjectCreate(&obj, &destroyed, destroy_object, 1,
                               cudaUserObjectNoDestructorSync));
    cudaGraph_t g, other;
    CHECK(cudaGraphCreate(&g, 0));
    CHECK(cudaGraphCreate(&other, 0));
    // The caller's only reference moves to the graph.
    CHECK(cudaGraphRetainUserObject(g, obj, 1, cudaGraphUserObjectMove));
    cudaGraphNode_t first, second;
    CHECK(cudaGraphAddEmptyNode(&first, g, nullptr, 0));
    CHECK(cudaGraphAddEmptyNode(&second, g, &first, 1));
#if CUDART_VERSION > 13000  // not in CUDA 13.0's runtime
    unsigned a = 0, b = 0, local = 0;
    CHECK(cudaGraphGetId(g, &a));
    CHECK(cudaGraphGetId(other, &b));
    CHECK(cudaGraphNodeGetLocalId(second, &local));
    EXPECT(a != b && local == 1, "graph ids %u %u, local id %u", a, b, local);
#endif
    cudaGraphExec_t exec;
    CHECK(cudaGraphInstantiate(&exec, g, 0));
    CHECK(cudaGraphDestroy(g));
    CHECK(cudaGraphDestroy(other));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT(destroyed.load() == 0, "the executable graph keeps the object alive");
    CHECK(cudaGraphExecDestroy(exec));
    for (int i = 0; i < 500 && destroyed.load() == 0; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    EXPECT(destroyed.load() == 1, "the destructor ran once the last reference went");
    // (Not released again: the object is gone, and NVIDIA's runtime does not
    // check.)
    printf("user objects and ids: ok\n");
}

int main() {
    float *x = nullptr, *y = nullptr;
    CHECK(cudaMalloc(&x, N * sizeof(float)));
    CHECK(cudaMalloc(&y, N * sizeof(float)));
    explicit_graph(x, y);
    captured_graph(x, y);
    memory_nodes(y);
    user_objects_and_ids();
    CHECK(cudaFree(x));
    CHECK(cudaFree(y));
    printf("PASS\n");
    return 0;
}
