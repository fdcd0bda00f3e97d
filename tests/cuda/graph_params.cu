// Generic graph node parameters (cudaGraphAddNode, cudaGraphNodeGetParams,
// cudaGraphNodeSetParams, cudaGraphExecNodeSetParams), child graph updates
// in an executable graph, and kernel node attributes.
#include <cuda_runtime.h>

#include <cstring>

#include "check.h"

__global__ void add(int *data, int n, int v) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) data[i] += v;
}

static int host_calls = 0;
static void CUDART_CB on_host(void *arg) { host_calls += *(int *)arg; }

static cudaGraphNode_t add_node(cudaGraph_t g, const cudaGraphNode_t *deps, size_t n,
                                cudaGraphNodeParams *p) {
    cudaGraphNode_t node;
    CHECK(cudaGraphAddNode(&node, g, deps, nullptr, n, p));
    return node;
}

static void expect_all(const int *d, int n, int want, const char *what) {
    int host[256];
    CHECK(cudaMemcpy(host, d, n * sizeof(int), cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; i++)
        EXPECT(host[i] == want, "%s: [%d] = %d, expected %d", what, i, host[i], want);
}

int main() {
    const int n = 256;
    int *d, *e;
    CHECK(cudaMalloc(&d, n * sizeof(int)));
    CHECK(cudaMalloc(&e, n * sizeof(int)));
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));

    // memset d = 0 -> kernel d += 5 -> copy d to e -> host function.
    cudaGraph_t g;
    CHECK(cudaGraphCreate(&g, 0));
    cudaGraphNodeParams p = {};
    memset(&p, 0, sizeof(p));
    p.type = cudaGraphNodeTypeMemset;
    p.memset.dst = d;
    p.memset.value = 0;
    p.memset.elementSize = 4;
    p.memset.width = n;
    p.memset.height = 1;
    cudaGraphNode_t ms = add_node(g, nullptr, 0, &p);

    int count = n, five = 5;
    void *args[] = {&d, &count, &five};
    memset(&p, 0, sizeof(p));
    p.type = cudaGraphNodeTypeKernel;
    p.kernel.func = (void *)add;
    p.kernel.gridDim = dim3(n / 64);
    p.kernel.blockDim = dim3(64);
    p.kernel.kernelParams = args;
    cudaGraphNode_t k = add_node(g, &ms, 1, &p);

    memset(&p, 0, sizeof(p));
    p.type = cudaGraphNodeTypeMemcpy;
    p.memcpy.copyParams.srcPtr = make_cudaPitchedPtr(d, n * sizeof(int), n * sizeof(int), 1);
    p.memcpy.copyParams.dstPtr = make_cudaPitchedPtr(e, n * sizeof(int), n * sizeof(int), 1);
    p.memcpy.copyParams.extent = make_cudaExtent(n * sizeof(int), 1, 1);
    p.memcpy.copyParams.kind = cudaMemcpyDeviceToDevice;
    cudaGraphNode_t cp = add_node(g, &k, 1, &p);

    int one = 1;
    memset(&p, 0, sizeof(p));
    p.type = cudaGraphNodeTypeHost;
    p.host.fn = on_host;
    p.host.userData = &one;
    add_node(g, &cp, 1, &p);

    memset(&p, 0, sizeof(p));
    p.type = cudaGraphNodeTypeEmpty;
    add_node(g, nullptr, 0, &p);

    memset(&p, 0, sizeof(p));
    p.type = (cudaGraphNodeType)99;
    cudaGraphNode_t bad;
    EXPECT_ERR_AS("cudaGraphAddNode of type 99", cudaGraphAddNode(&bad, g, nullptr, nullptr, 0, &p),
                  cudaErrorInvalidValue);

    // Parameters read back.
#if CUDART_VERSION > 13000  // cudaGraphNodeGetParams: not in CUDA 13.0's runtime
    memset(&p, 0, sizeof(p));
    CHECK(cudaGraphNodeGetParams(k, &p));
    EXPECT(p.type == cudaGraphNodeTypeKernel && p.kernel.func == (void *)add &&
               p.kernel.gridDim.x == n / 64 && p.kernel.blockDim.x == 64 &&
               *(int *)p.kernel.kernelParams[2] == 5,
           "kernel parameters read back differ");
    memset(&p, 0, sizeof(p));
    CHECK(cudaGraphNodeGetParams(ms, &p));
    EXPECT(p.type == cudaGraphNodeTypeMemset && p.memset.dst == d && p.memset.width == n,
           "memset parameters read back differ");
    memset(&p, 0, sizeof(p));
    CHECK(cudaGraphNodeGetParams(cp, &p));
    EXPECT(p.type == cudaGraphNodeTypeMemcpy && p.memcpy.copyParams.dstPtr.ptr == e &&
               p.memcpy.copyParams.extent.width == n * sizeof(int),
           "memcpy parameters read back differ");
#endif
    printf("cudaGraphAddNode and cudaGraphNodeGetParams: ok\n");

    cudaGraphExec_t x;
    CHECK(cudaGraphInstantiate(&x, g, 0));
    CHECK(cudaGraphLaunch(x, s));
    CHECK(cudaStreamSynchronize(s));
    expect_all(e, n, 5, "first launch");
    EXPECT(host_calls == 1, "host calls %d", host_calls);

    // The memset node's value changed in the graph: the executable graph
    // keeps what it was instantiated with.
    memset(&p, 0, sizeof(p));
#if CUDART_VERSION > 13000  // cudaGraphNodeGetParams: not in CUDA 13.0's runtime
    CHECK(cudaGraphNodeGetParams(ms, &p));
#else
    cudaMemsetParams old_memset;
    CHECK(cudaGraphMemsetNodeGetParams(ms, &old_memset));
    p.type = cudaGraphNodeTypeMemset;
    p.memset.dst = old_memset.dst;
    p.memset.pitch = old_memset.pitch;
    p.memset.elementSize = old_memset.elementSize;
    p.memset.width = old_memset.width;
    p.memset.height = old_memset.height;
#endif
    p.memset.value = 10;
    CHECK(cudaGraphNodeSetParams(ms, &p));
    memset(&p, 0, sizeof(p));
    p.type = cudaGraphNodeTypeHost;
    p.host.fn = on_host;
    p.host.userData = &one;
    EXPECT_ERR_AS("cudaGraphNodeSetParams of another type", cudaGraphNodeSetParams(ms, &p),
                  cudaErrorInvalidValue);
    CHECK(cudaGraphLaunch(x, s));
    CHECK(cudaStreamSynchronize(s));
    expect_all(e, n, 5, "second launch");

    // The kernel's argument changed in the executable graph.
    int seven = 7;
    void *args7[] = {&d, &count, &seven};
    memset(&p, 0, sizeof(p));
    p.type = cudaGraphNodeTypeKernel;
    p.kernel.func = (void *)add;
    p.kernel.gridDim = dim3(n / 64);
    p.kernel.blockDim = dim3(64);
    p.kernel.kernelParams = args7;
    CHECK(cudaGraphExecNodeSetParams(x, k, &p));
    CHECK(cudaGraphLaunch(x, s));
    CHECK(cudaStreamSynchronize(s));
    expect_all(e, n, 7, "after cudaGraphExecNodeSetParams");
    EXPECT(host_calls == 3, "host calls %d", host_calls);
    CHECK(cudaGraphExecDestroy(x));
    printf("cudaGraphNodeSetParams and cudaGraphExecNodeSetParams: ok\n");

    // A child graph node, updated in the executable graph.
    cudaGraph_t child, child2, other;
    CHECK(cudaGraphCreate(&child, 0));
    CHECK(cudaGraphCreate(&child2, 0));
    CHECK(cudaGraphCreate(&other, 0));
    cudaGraphNode_t unused;
    cudaMemsetParams m1 = {};
    m1.dst = d;
    m1.value = 1;
    m1.elementSize = 4;
    m1.width = n;
    m1.height = 1;
    CHECK(cudaGraphAddMemsetNode(&unused, child, nullptr, 0, &m1));
    cudaMemsetParams m2 = {};
    m2.dst = d;
    m2.value = 2;
    m2.elementSize = 4;
    m2.width = n;
    m2.height = 1;
    CHECK(cudaGraphAddMemsetNode(&unused, child2, nullptr, 0, &m2));
    CHECK(cudaGraphAddEmptyNode(&unused, other, nullptr, 0));
    cudaGraph_t parent;
    CHECK(cudaGraphCreate(&parent, 0));
    memset(&p, 0, sizeof(p));
    p.type = cudaGraphNodeTypeGraph;
    p.graph.graph = child;
    cudaGraphNode_t cn = add_node(parent, nullptr, 0, &p);
#if CUDART_VERSION > 13000  // cudaGraphNodeGetParams: not in CUDA 13.0's runtime
    memset(&p, 0, sizeof(p));
    CHECK(cudaGraphNodeGetParams(cn, &p));
    EXPECT(p.type == cudaGraphNodeTypeGraph && p.graph.graph != nullptr &&
               p.graph.graph != child,
           "child graph node: the node holds a copy");
#endif
    CHECK(cudaGraphInstantiate(&x, parent, 0));
    CHECK(cudaGraphLaunch(x, s));
    CHECK(cudaStreamSynchronize(s));
    expect_all(d, n, 1, "child graph");
    CHECK(cudaGraphExecChildGraphNodeSetParams(x, cn, child2));
    CHECK(cudaGraphLaunch(x, s));
    CHECK(cudaStreamSynchronize(s));
    expect_all(d, n, 2, "child graph updated");
    EXPECT_ERR_AS("a child graph of another shape",
                  cudaGraphExecChildGraphNodeSetParams(x, cn, other),
                  cudaErrorGraphExecUpdateFailure);
    CHECK(cudaGraphExecDestroy(x));
    printf("cudaGraphExecChildGraphNodeSetParams: ok\n");

    // Kernel node attributes.
    cudaKernelNodeAttrValue v;
    memset(&v, 0, sizeof(v));
    CHECK(cudaGraphKernelNodeGetAttribute(k, cudaKernelNodeAttributeAccessPolicyWindow, &v));
    EXPECT(v.accessPolicyWindow.num_bytes == 0, "a fresh node has a window");
    v.accessPolicyWindow.base_ptr = d;
    v.accessPolicyWindow.num_bytes = n * sizeof(int);
    v.accessPolicyWindow.hitRatio = 0.5f;
    v.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
    v.accessPolicyWindow.missProp = cudaAccessPropertyNormal;
    CHECK(cudaGraphKernelNodeSetAttribute(k, cudaKernelNodeAttributeAccessPolicyWindow, &v));
    cudaKernelNodeAttrValue c;
    memset(&c, 0, sizeof(c));
    c.priority = -2;
    CHECK(cudaGraphKernelNodeSetAttribute(k, cudaKernelNodeAttributePriority, &c));
    v.accessPolicyWindow.hitRatio = -0.5f;
    EXPECT_ERR_AS("hitRatio -0.5",
                  cudaGraphKernelNodeSetAttribute(k, cudaKernelNodeAttributeAccessPolicyWindow, &v),
                  cudaErrorInvalidValue);
    EXPECT_ERR_AS("a stream's synchronization policy on a kernel node",
                  cudaGraphKernelNodeSetAttribute(k, cudaLaunchAttributeSynchronizationPolicy, &v),
                  cudaErrorInvalidValue);
    EXPECT_ERR_AS("an attribute of a memset node",
                  cudaGraphKernelNodeGetAttribute(ms, cudaKernelNodeAttributePriority, &v),
                  cudaErrorInvalidValue);
    // Copied onto a second kernel node.
    cudaKernelNodeParams kp = {};
    kp.func = (void *)add;
    kp.gridDim = dim3(n / 64);
    kp.blockDim = dim3(64);
    kp.kernelParams = args;
    cudaGraphNode_t k2;
    CHECK(cudaGraphAddKernelNode(&k2, g, nullptr, 0, &kp));
    CHECK(cudaGraphKernelNodeCopyAttributes(k2, k));
    memset(&v, 0, sizeof(v));
    CHECK(cudaGraphKernelNodeGetAttribute(k2, cudaKernelNodeAttributeAccessPolicyWindow, &v));
    EXPECT(v.accessPolicyWindow.base_ptr == d && v.accessPolicyWindow.hitRatio == 0.5f &&
               v.accessPolicyWindow.hitProp == cudaAccessPropertyPersisting,
           "copied window differs");
    memset(&c, 0, sizeof(c));
    CHECK(cudaGraphKernelNodeGetAttribute(k2, cudaKernelNodeAttributePriority, &c));
    EXPECT(c.priority == -2, "copied priority %d", c.priority);
    // Attributes survive new parameters.
    CHECK(cudaGraphKernelNodeSetParams(k2, &kp));
    memset(&c, 0, sizeof(c));
    CHECK(cudaGraphKernelNodeGetAttribute(k2, cudaKernelNodeAttributePriority, &c));
    EXPECT(c.priority == -2, "priority after new parameters %d", c.priority);
    printf("kernel node attributes: ok\n");

    // Graph memory through the generic form: alloc, kernel on it, free.
    cudaGraph_t mg;
    CHECK(cudaGraphCreate(&mg, 0));
    memset(&p, 0, sizeof(p));
    p.type = cudaGraphNodeTypeMemAlloc;
    p.alloc.poolProps.allocType = cudaMemAllocationTypePinned;
    p.alloc.poolProps.location.type = cudaMemLocationTypeDevice;
    p.alloc.poolProps.location.id = 0;
    p.alloc.bytesize = n * sizeof(int);
    cudaGraphNode_t an = add_node(mg, nullptr, 0, &p);
    int *gm = (int *)p.alloc.dptr;
    EXPECT(gm != nullptr, "no address from the alloc node");
    memset(&p, 0, sizeof(p));
    p.type = cudaGraphNodeTypeMemset;
    p.memset.dst = gm;
    p.memset.value = 3;
    p.memset.elementSize = 4;
    p.memset.width = n;
    p.memset.height = 1;
    cudaGraphNode_t gms = add_node(mg, &an, 1, &p);
    memset(&p, 0, sizeof(p));
    p.type = cudaGraphNodeTypeMemcpy;
    p.memcpy.copyParams.srcPtr = make_cudaPitchedPtr(gm, n * sizeof(int), n * sizeof(int), 1);
    p.memcpy.copyParams.dstPtr = make_cudaPitchedPtr(e, n * sizeof(int), n * sizeof(int), 1);
    p.memcpy.copyParams.extent = make_cudaExtent(n * sizeof(int), 1, 1);
    p.memcpy.copyParams.kind = cudaMemcpyDeviceToDevice;
    cudaGraphNode_t gcp = add_node(mg, &gms, 1, &p);
    memset(&p, 0, sizeof(p));
    p.type = cudaGraphNodeTypeMemFree;
    p.free.dptr = gm;
    cudaGraphNode_t fn = add_node(mg, &gcp, 1, &p);
#if CUDART_VERSION > 13000  // cudaGraphNodeGetParams: not in CUDA 13.0's runtime
    memset(&p, 0, sizeof(p));
    CHECK(cudaGraphNodeGetParams(fn, &p));
    EXPECT(p.type == cudaGraphNodeTypeMemFree && p.free.dptr == gm, "free node read back");
#endif
    CHECK(cudaGraphInstantiate(&x, mg, 0));
    for (int i = 0; i < 3; i++) {
        CHECK(cudaGraphLaunch(x, s));
        CHECK(cudaStreamSynchronize(s));
        expect_all(e, n, 3, "graph memory");
    }
    CHECK(cudaGraphExecDestroy(x));
    printf("graph memory nodes through cudaGraphAddNode: ok\n");

    CHECK(cudaGraphDestroy(mg));
    CHECK(cudaGraphDestroy(parent));
    CHECK(cudaGraphDestroy(child));
    CHECK(cudaGraphDestroy(child2));
    CHECK(cudaGraphDestroy(other));
    CHECK(cudaGraphDestroy(g));
    CHECK(cudaStreamDestroy(s));
    CHECK(cudaFree(d));
    CHECK(cudaFree(e));
    printf("PASS\n");
    return 0;
}
