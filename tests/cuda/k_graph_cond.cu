// Conditional graph nodes (CUDA 12.4+/12.8+): IF with and without an else
// body, WHILE, SWITCH, default launch values, nesting, capture into a body,
// node queries, DOT output, clone, exec update and the error cases.
#include <cuda_runtime.h>
#include <cstring>
#include <cstdio>
#include <string>
#include <unistd.h>
#include "check.h"

__global__ void set_cond_from(const int *src, cudaGraphConditionalHandle h) {
    cudaGraphSetConditional(h, (unsigned)*src);
}

__global__ void add_to(int *counter, int amount) { atomicAdd(counter, amount); }

// The body of a countdown loop: one step down, and keep looping while the
// count is above zero.
__global__ void count_down(int *count, int *iterations, cudaGraphConditionalHandle h) {
    *count -= 1;
    *iterations += 1;
    cudaGraphSetConditional(h, *count > 0 ? 1u : 0u);
}

__global__ void start_count(int *count, int from, cudaGraphConditionalHandle h) {
    *count = from;
    cudaGraphSetConditional(h, from > 0 ? 1u : 0u);
}

__global__ void set_cond(unsigned value, cudaGraphConditionalHandle h) {
    cudaGraphSetConditional(h, value);
}

// Nested: the inner IF's condition is whether the outer count is odd.
__global__ void odd_cond(const int *count, cudaGraphConditionalHandle h) {
    cudaGraphSetConditional(h, (unsigned)(*count & 1));
}

static int read_int(const int *d) {
    int v = 0;
    CHECK(cudaMemcpy(&v, d, sizeof v, cudaMemcpyDeviceToHost));
    return v;
}

static void put_int(int *d, int v) { CHECK(cudaMemcpy(d, &v, sizeof v, cudaMemcpyHostToDevice)); }

static void launch(cudaGraphExec_t exec) {
    CHECK(cudaGraphLaunch(exec, 0));
    CHECK(cudaStreamSynchronize(0));
}

static cudaGraphNode_t add_kernel(cudaGraph_t g, const cudaGraphNode_t *deps, size_t n, void *func,
                                  void **args) {
    cudaGraphNodeParams p = {};
    p.type = cudaGraphNodeTypeKernel;
    p.kernel.func = func;
    p.kernel.gridDim = dim3(1);
    p.kernel.blockDim = dim3(1);
    p.kernel.kernelParams = args;
    cudaGraphNode_t node;
    CHECK(cudaGraphAddNode(&node, g, deps, nullptr, n, &p));
    return node;
}

static cudaGraphNode_t add_cond(cudaGraph_t g, const cudaGraphNode_t *deps, size_t n,
                                cudaGraphConditionalHandle h, cudaGraphConditionalNodeType type,
                                unsigned size, cudaGraph_t *bodies) {
    cudaGraphNodeParams p = {};
    p.type = cudaGraphNodeTypeConditional;
    p.conditional.handle = h;
    p.conditional.type = type;
    p.conditional.size = size;
    cudaGraphNode_t node;
    CHECK(cudaGraphAddNode(&node, g, deps, nullptr, n, &p));
    EXPECT(p.conditional.phGraph_out != nullptr, "phGraph_out filled in");
    for (unsigned i = 0; i < size; i++) bodies[i] = p.conditional.phGraph_out[i];
    return node;
}

int main() {
    int *d;
    CHECK(cudaMalloc(&d, 16 * sizeof(int)));
    CHECK(cudaMemset(d, 0, 16 * sizeof(int)));
    int *src = d, *counter = d + 1, *count = d + 2, *iterations = d + 3, *out = d + 4,
        *inner = d + 5;
    int one = 1, ten = 10, hundred = 100;

    // IF without else: the body adds 1 when *src is non-zero.
    {
        cudaGraph_t g;
        CHECK(cudaGraphCreate(&g, 0));
        cudaGraphConditionalHandle h;
        CHECK(cudaGraphConditionalHandleCreate(&h, g));
        void *a_args[] = {&src, &h};
        cudaGraphNode_t a = add_kernel(g, nullptr, 0, (void *)set_cond_from, a_args);
        cudaGraph_t body[1];
        add_cond(g, &a, 1, h, cudaGraphCondTypeIf, 1, body);
        void *b_args[] = {&counter, &one};
        add_kernel(body[0], nullptr, 0, (void *)add_to, b_args);
        cudaGraphExec_t exec;
        CHECK(cudaGraphInstantiate(&exec, g, 0));
        put_int(src, 0);
        put_int(counter, 0);
        launch(exec);
        EXPECT(read_int(counter) == 0, "false IF skipped its body, counter %d", read_int(counter));
        put_int(src, 7);
        launch(exec);
        launch(exec);
        EXPECT(read_int(counter) == 2, "true IF ran its body, counter %d", read_int(counter));
        CHECK(cudaGraphExecDestroy(exec));
        CHECK(cudaGraphDestroy(g));
        printf("IF without else: ok\n");
    }

    // IF with an else body (size 2).
    {
        cudaGraph_t g;
        CHECK(cudaGraphCreate(&g, 0));
        cudaGraphConditionalHandle h;
        CHECK(cudaGraphConditionalHandleCreate(&h, g));
        void *a_args[] = {&src, &h};
        cudaGraphNode_t a = add_kernel(g, nullptr, 0, (void *)set_cond_from, a_args);
        cudaGraph_t body[2];
        add_cond(g, &a, 1, h, cudaGraphCondTypeIf, 2, body);
        void *then_args[] = {&counter, &one};
        add_kernel(body[0], nullptr, 0, (void *)add_to, then_args);
        void *else_args[] = {&counter, &hundred};
        add_kernel(body[1], nullptr, 0, (void *)add_to, else_args);
        cudaGraphExec_t exec;
        CHECK(cudaGraphInstantiate(&exec, g, 0));
        put_int(counter, 0);
        put_int(src, 1);
        launch(exec);
        put_int(src, 0);
        launch(exec);
        EXPECT(read_int(counter) == 101, "then once, else once: counter %d", read_int(counter));
        CHECK(cudaGraphExecDestroy(exec));
        CHECK(cudaGraphDestroy(g));
        printf("IF with else: ok\n");
    }

    // WHILE counting down from a value a kernel sets.
    {
        cudaGraph_t g;
        CHECK(cudaGraphCreate(&g, 0));
        cudaGraphConditionalHandle h;
        CHECK(cudaGraphConditionalHandleCreate(&h, g));
        int from = 5;
        void *a_args[] = {&count, &from, &h};
        cudaGraphNode_t a = add_kernel(g, nullptr, 0, (void *)start_count, a_args);
        cudaGraph_t body[1];
        cudaGraphNode_t loop = add_cond(g, &a, 1, h, cudaGraphCondTypeWhile, 1, body);
        void *b_args[] = {&count, &iterations, &h};
        add_kernel(body[0], nullptr, 0, (void *)count_down, b_args);
        // After the loop, in the same launch.
        void *c_args[] = {&counter, &ten};
        add_kernel(g, &loop, 1, (void *)add_to, c_args);
        cudaGraphExec_t exec;
        CHECK(cudaGraphInstantiate(&exec, g, 0));
        put_int(iterations, 0);
        put_int(counter, 0);
        launch(exec);
        EXPECT(read_int(iterations) == 5, "5 passes, got %d", read_int(iterations));
        EXPECT(read_int(count) == 0 && read_int(counter) == 10, "loop then the node after it");
        CHECK(cudaGraphExecDestroy(exec));
        CHECK(cudaGraphDestroy(g));
        printf("WHILE counting down from 5: ok\n");
    }

    // SWITCH with four bodies of memset and copy nodes; 4 runs none.
    {
        cudaGraph_t g;
        CHECK(cudaGraphCreate(&g, 0));
        cudaGraphConditionalHandle h;
        CHECK(cudaGraphConditionalHandleCreate(&h, g));
        void *a_args[] = {&src, &h};
        cudaGraphNode_t a = add_kernel(g, nullptr, 0, (void *)set_cond_from, a_args);
        cudaGraph_t body[4];
        add_cond(g, &a, 1, h, cudaGraphCondTypeSwitch, 4, body);
        for (int i = 0; i < 4; i++) {
            cudaMemsetParams m = {};
            m.dst = out;
            m.value = 0x11 * (i + 1);
            m.elementSize = 1;
            m.width = 4;
            m.height = 1;
            cudaGraphNode_t set;
            CHECK(cudaGraphAddMemsetNode(&set, body[i], nullptr, 0, &m));
            cudaGraphNode_t copy;
            CHECK(cudaGraphAddMemcpyNode1D(&copy, body[i], &set, 1, inner, out, sizeof(int),
                                           cudaMemcpyDeviceToDevice));
        }
        cudaGraphExec_t exec;
        CHECK(cudaGraphInstantiate(&exec, g, 0));
        for (int v = 0; v <= 4; v++) {
            put_int(out, -1);
            put_int(inner, -1);
            put_int(src, v);
            launch(exec);
            int want = v < 4 ? 0x11111111 * (v + 1) : -1;
            EXPECT(read_int(out) == want && read_int(inner) == want, "switch %d: %#x", v,
                   read_int(out));
        }
        CHECK(cudaGraphExecDestroy(exec));
        CHECK(cudaGraphDestroy(g));
        printf("SWITCH over 4 bodies and past the end: ok\n");
    }

    // Default launch value: stored at the start of every launch; the body
    // clears it, so only the default makes the second launch run it.
    {
        cudaGraph_t g;
        CHECK(cudaGraphCreate(&g, 0));
        cudaGraphConditionalHandle h;
        CHECK(cudaGraphConditionalHandleCreate(&h, g, 1, cudaGraphCondAssignDefault));
        cudaGraph_t body[1];
        add_cond(g, nullptr, 0, h, cudaGraphCondTypeWhile, 1, body);
        void *b_args[] = {&counter, &one};
        cudaGraphNode_t b = add_kernel(body[0], nullptr, 0, (void *)add_to, b_args);
        unsigned zero = 0;
        void *c_args[] = {&zero, &h};
        add_kernel(body[0], &b, 1, (void *)set_cond, c_args);
        cudaGraphExec_t exec;
        CHECK(cudaGraphInstantiate(&exec, g, 0));
        put_int(counter, 0);
        launch(exec);
        launch(exec);
        launch(exec);
        EXPECT(read_int(counter) == 3, "one pass per launch, got %d", read_int(counter));
        CHECK(cudaGraphExecDestroy(exec));
        CHECK(cudaGraphDestroy(g));
        printf("default launch value: ok\n");
    }

    // Nested: a WHILE of 4 passes whose body holds an IF on odd counts.
    {
        cudaGraph_t g;
        CHECK(cudaGraphCreate(&g, 0));
        cudaGraphConditionalHandle h;
        CHECK(cudaGraphConditionalHandleCreate(&h, g));
        int from = 4;
        void *a_args[] = {&count, &from, &h};
        cudaGraphNode_t a = add_kernel(g, nullptr, 0, (void *)start_count, a_args);
        cudaGraph_t body[1];
        add_cond(g, &a, 1, h, cudaGraphCondTypeWhile, 1, body);
        cudaGraphConditionalHandle ih;
        CHECK(cudaGraphConditionalHandleCreate(&ih, body[0]));
        void *o_args[] = {&count, &ih};
        cudaGraphNode_t odd = add_kernel(body[0], nullptr, 0, (void *)odd_cond, o_args);
        cudaGraph_t ibody[1];
        cudaGraphNode_t ifn = add_cond(body[0], &odd, 1, ih, cudaGraphCondTypeIf, 1, ibody);
        void *i_args[] = {&inner, &one};
        add_kernel(ibody[0], nullptr, 0, (void *)add_to, i_args);
        void *d_args[] = {&count, &iterations, &h};
        add_kernel(body[0], &ifn, 1, (void *)count_down, d_args);
        cudaGraphExec_t exec;
        CHECK(cudaGraphInstantiate(&exec, g, 0));
        put_int(iterations, 0);
        put_int(inner, 0);
        launch(exec);
        // Counts 4, 3, 2, 1 at the inner IF: odd twice.
        EXPECT(read_int(iterations) == 4 && read_int(inner) == 2, "nested: %d passes, %d odd",
               read_int(iterations), read_int(inner));
        CHECK(cudaGraphExecDestroy(exec));
        CHECK(cudaGraphDestroy(g));
        printf("nested WHILE and IF: ok\n");
    }

    // Stream capture into a body graph; the handle made during capture.
    {
        cudaStream_t s;
        CHECK(cudaStreamCreate(&s));
        CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
        cudaStreamCaptureStatus status;
        cudaGraph_t g;
        const cudaGraphNode_t *deps;
        size_t ndeps;
        CHECK(cudaStreamGetCaptureInfo(s, &status, nullptr, &g, &deps, nullptr, &ndeps));
        cudaGraphConditionalHandle h;
        CHECK(cudaGraphConditionalHandleCreate(&h, g));
        int from = 3;
        start_count<<<1, 1, 0, s>>>(count, from, h);
        CHECK(cudaStreamGetCaptureInfo(s, &status, nullptr, &g, &deps, nullptr, &ndeps));
        cudaGraph_t body[1];
        cudaGraphNode_t loop = add_cond(g, deps, ndeps, h, cudaGraphCondTypeWhile, 1, body);
        CHECK(cudaStreamUpdateCaptureDependencies(s, &loop, nullptr, 1, cudaStreamSetCaptureDependencies));
        add_to<<<1, 1, 0, s>>>(counter, 1000);
        cudaGraph_t captured;
        CHECK(cudaStreamEndCapture(s, &captured));
        CHECK(cudaStreamBeginCaptureToGraph(s, body[0], nullptr, nullptr, 0,
                                            cudaStreamCaptureModeGlobal));
        add_to<<<1, 1, 0, s>>>(counter, 1);
        count_down<<<1, 1, 0, s>>>(count, iterations, h);
        // NVIDIA's sample ends a capture into a body without asking for it.
        CHECK(cudaStreamEndCapture(s, nullptr));
        size_t n = 0;
        CHECK(cudaGraphGetNodes(body[0], nullptr, &n));
        EXPECT(n == 2, "2 captured nodes in the body, got %zu", n);
        cudaGraphExec_t exec;
        CHECK(cudaGraphInstantiate(&exec, captured, 0));
        put_int(counter, 0);
        put_int(iterations, 0);
        CHECK(cudaGraphLaunch(exec, s));
        CHECK(cudaStreamSynchronize(s));
        EXPECT(read_int(counter) == 1003 && read_int(iterations) == 3, "captured: counter %d",
               read_int(counter));
        CHECK(cudaGraphExecDestroy(exec));
        CHECK(cudaGraphDestroy(captured));
        CHECK(cudaStreamDestroy(s));
        printf("capture into a body: ok\n");
    }

    // Queries, DOT output, clone and exec update.
    {
        cudaGraph_t g;
        CHECK(cudaGraphCreate(&g, 0));
        cudaGraphConditionalHandle h;
        CHECK(cudaGraphConditionalHandleCreate(&h, g));
        void *a_args[] = {&src, &h};
        cudaGraphNode_t a = add_kernel(g, nullptr, 0, (void *)set_cond_from, a_args);
        cudaGraph_t body[3];
        cudaGraphNode_t sw = add_cond(g, &a, 1, h, cudaGraphCondTypeSwitch, 3, body);
        void *b_args[] = {&counter, &one};
        cudaGraphNode_t bk = add_kernel(body[2], nullptr, 0, (void *)add_to, b_args);

        cudaGraphNodeType type;
        CHECK(cudaGraphNodeGetType(sw, &type));
        EXPECT(type == cudaGraphNodeTypeConditional, "node type %d", (int)type);
#if CUDART_VERSION > 13000  // cudaGraphNodeGetParams: not in CUDA 13.0's runtime
        cudaGraphNodeParams q = {};
        CHECK(cudaGraphNodeGetParams(sw, &q));
        EXPECT(q.type == cudaGraphNodeTypeConditional && q.conditional.handle == h &&
                   q.conditional.type == cudaGraphCondTypeSwitch && q.conditional.size == 3 &&
                   q.conditional.phGraph_out[2] == body[2],
               "conditional parameters read back");
#endif
        cudaGraphNode_t *none = nullptr;
        size_t deps = 0;
        CHECK(cudaGraphNodeGetDependencies(sw, none, nullptr, &deps));
        EXPECT(deps == 1, "one dependency");

        char path[64];
        snprintf(path, sizeof path, "/tmp/rcud_k_graph_cond_%d.dot", (int)getpid());
        CHECK(cudaGraphDebugDotPrint(g, path, 0));
        FILE *f = fopen(path, "r");
        EXPECT(f != nullptr, "DOT file written");
        std::string dot;
        char buf[512];
        size_t got;
        while ((got = fread(buf, 1, sizeof buf, f)) > 0) dot.append(buf, got);
        fclose(f);
        remove(path);
        EXPECT(dot.find("CONDITIONAL") != std::string::npos && dot.find("SWITCH") != std::string::npos,
               "DOT names the conditional node");
        printf("conditional node queries and DOT: ok\n");

        // A clone runs on its own bodies, with the same handle. (CUDA 13.0's
        // runtime cannot clone a graph with conditional nodes yet.)
        cudaGraph_t copy;
        cudaGraphExec_t exec;
        cudaError_t cloned = cudaGraphClone(&copy, g);
        if (cloned == cudaErrorNotSupported) {
            (void)cudaGetLastError();
            printf("cudaGraphClone of a conditional node -> cudaErrorNotSupported\n");
            CHECK(cudaGraphInstantiate(&exec, g, 0));
        } else {
            CHECK(cloned);
            cudaGraphNode_t sw2;
            CHECK(cudaGraphNodeFindInClone(&sw2, sw, copy));
#if CUDART_VERSION > 13000  // cudaGraphNodeGetParams: not in CUDA 13.0's runtime
            cudaGraphNodeParams q2 = {};
            CHECK(cudaGraphNodeGetParams(sw2, &q2));
            EXPECT(q2.conditional.handle == h && q2.conditional.phGraph_out[2] != body[2],
                   "clone has the handle and bodies of its own");
#endif
            CHECK(cudaGraphInstantiate(&exec, copy, 0));
            CHECK(cudaGraphDestroy(copy));
            put_int(counter, 0);
            put_int(src, 2);
            launch(exec);
            EXPECT(read_int(counter) == 1, "cloned switch ran body 2, counter %d", read_int(counter));
        }

        // Exec update from the original with a new body kernel argument.
        void *u_args[] = {&counter, &ten};
        cudaKernelNodeParams kp = {};
        kp.func = (void *)add_to;
        kp.gridDim = dim3(1);
        kp.blockDim = dim3(1);
        kp.kernelParams = u_args;
        CHECK(cudaGraphKernelNodeSetParams(bk, &kp));
        cudaGraphExecUpdateResultInfo info;
        CHECK(cudaGraphExecUpdate(exec, g, &info));
        EXPECT(info.result == cudaGraphExecUpdateSuccess, "update result %d", (int)info.result);
        launch(exec);
        EXPECT(read_int(counter) == 11, "updated body kernel, counter %d", read_int(counter));
        CHECK(cudaGraphExecDestroy(exec));
        CHECK(cudaGraphDestroy(g));
        printf("clone and exec update: ok\n");
    }

    // Error cases.
    {
        cudaGraph_t g;
        CHECK(cudaGraphCreate(&g, 0));
        cudaGraphConditionalHandle h;
        EXPECT_ERR_AS("handle with unknown flags", cudaGraphConditionalHandleCreate(&h, g, 0, 2),
                      cudaErrorInvalidValue);
        CHECK(cudaGraphConditionalHandleCreate(&h, g, 0, 0));
        cudaGraphNodeParams p = {};
        p.type = cudaGraphNodeTypeConditional;
        p.conditional.handle = h;
        cudaGraphNode_t node;
        p.conditional.type = cudaGraphCondTypeIf;
        p.conditional.size = 3;
        EXPECT_ERR_AS("IF of 3 bodies", cudaGraphAddNode(&node, g, nullptr, nullptr, 0, &p),
                      cudaErrorInvalidValue);
        p.conditional.type = cudaGraphCondTypeWhile;
        p.conditional.size = 2;
        EXPECT_ERR_AS("WHILE of 2 bodies", cudaGraphAddNode(&node, g, nullptr, nullptr, 0, &p),
                      cudaErrorInvalidValue);
        p.conditional.type = cudaGraphCondTypeSwitch;
        p.conditional.size = 0;
        EXPECT_ERR_AS("SWITCH of no bodies", cudaGraphAddNode(&node, g, nullptr, nullptr, 0, &p),
                      cudaErrorInvalidValue);
        size_t n = 1;
        CHECK(cudaGraphGetNodes(g, nullptr, &n));
        EXPECT(n == 0, "refused nodes were not added");

        // A host node may not be in a body.
        cudaGraph_t body[1];
        add_cond(g, nullptr, 0, h, cudaGraphCondTypeIf, 1, body);
        cudaEvent_t ev;
        CHECK(cudaEventCreate(&ev));
        cudaGraphNode_t rec;
        CHECK(cudaGraphAddEventRecordNode(&rec, body[0], nullptr, 0, ev));
        cudaGraphExec_t exec;
        EXPECT_ERR_AS("event record node in a body", cudaGraphInstantiate(&exec, g, 0),
                      cudaErrorInvalidValue);
        CHECK(cudaGraphDestroyNode(rec));
        CHECK(cudaGraphInstantiate(&exec, g, 0));
        CHECK(cudaGraphExecDestroy(exec));
        CHECK(cudaEventDestroy(ev));
        CHECK(cudaGraphDestroy(g));
        printf("conditional error cases: ok\n");
    }

    CHECK(cudaFree(d));
    printf("PASS\n");
    return 0;
}
