// Cooperative launches: cudaLaunchCooperativeKernel and the cooperative
// launch attribute, grid-wide sync with cooperative groups, the occupancy
// API agreeing with what the device co-schedules, a grid too large for it,
// and a cooperative launch captured into a graph.
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <vector>

#include "check.h"

namespace cg = cooperative_groups;

// Iterated smoothing where each element reads neighbours owned by other
// blocks: right only if grid.sync() is a real grid-wide barrier.
__global__ void smooth(float *a, float *tmp, int n, int rounds) {
    cg::grid_group grid = cg::this_grid();
    for (int r = 0; r < rounds; ++r) {
        for (int i = grid.thread_rank(); i < n; i += grid.size())
            tmp[i] = 0.25f * a[(i + n - 1) % n] + 0.5f * a[i] + 0.25f * a[(i + 1) % n];
        grid.sync();
        for (int i = grid.thread_rank(); i < n; i += grid.size()) a[i] = tmp[i];
        grid.sync();
    }
}

// Sum in one kernel: block partials, a grid barrier, then block 0 adds them.
__global__ void grid_sum(const int *in, int *partial, int *out, int n) {
    cg::grid_group grid = cg::this_grid();
    __shared__ int s[128];
    int v = 0;
    for (int i = grid.thread_rank(); i < n; i += grid.size()) v += in[i];
    s[threadIdx.x] = v;
    __syncthreads();
    for (int w = blockDim.x / 2; w > 0; w /= 2) {
        if (threadIdx.x < w) s[threadIdx.x] += s[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0) partial[blockIdx.x] = s[0];
    grid.sync();
    if (grid.thread_rank() == 0) {
        int t = 0;
        for (unsigned b = 0; b < gridDim.x; ++b) t += partial[b];
        *out = t;
    }
}

static void smooth_on_host(std::vector<float> &a, int rounds) {
    int n = (int)a.size();
    std::vector<float> t(n);
    for (int r = 0; r < rounds; ++r) {
        for (int i = 0; i < n; ++i)
            t[i] = 0.25f * a[(i + n - 1) % n] + 0.5f * a[i] + 0.25f * a[(i + 1) % n];
        a = t;
    }
}

int main() {
    int dev = 0, coop = 0, sms = 0;
    CHECK(cudaGetDevice(&dev));
    CHECK(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, dev));
    CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    EXPECT(coop == 1, "cudaDevAttrCooperativeLaunch = %d", coop);
    printf("cooperative launch supported: ok\n");

    int per_sm = 0;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, grid_sum, 128, 0));
    EXPECT(per_sm > 0, "occupancy %d", per_sm);
    const int most = per_sm * sms;

    const int n = 5000, rounds = 4;
    std::vector<float> h(n);
    for (int i = 0; i < n; ++i) h[i] = (float)((i * 37) % 101);
    float *a, *tmp;
    CHECK(cudaMalloc(&a, n * sizeof(float)));
    CHECK(cudaMalloc(&tmp, n * sizeof(float)));
    CHECK(cudaMemcpy(a, h.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    int nn = n, rr = rounds;
    void *args[] = {&a, &tmp, &nn, &rr};
    CHECK(cudaLaunchCooperativeKernel((void *)smooth, dim3(24), dim3(64), args, 0, 0));
    std::vector<float> got(n);
    CHECK(cudaMemcpy(got.data(), a, n * sizeof(float), cudaMemcpyDeviceToHost));
    smooth_on_host(h, rounds);
    for (int i = 0; i < n; ++i) EXPECT(got[i] == h[i], "a[%d] = %f, want %f", i, got[i], h[i]);
    printf("cudaLaunchCooperativeKernel with grid.sync(): ok\n");

    std::vector<int> in(n);
    long want = 0;
    for (int i = 0; i < n; ++i) want += (in[i] = (i * 7) % 13 - 6);
    int *din, *partial, *out;
    CHECK(cudaMalloc(&din, n * sizeof(int)));
    CHECK(cudaMalloc(&partial, most * sizeof(int)));
    CHECK(cudaMalloc(&out, sizeof(int)));
    CHECK(cudaMemcpy(din, in.data(), n * sizeof(int), cudaMemcpyHostToDevice));
    void *sum_args[] = {&din, &partial, &out, &nn};

    // The launch attribute asks for the same thing.
    cudaLaunchAttribute attr = {};
    attr.id = cudaLaunchAttributeCooperative;
    attr.val.cooperative = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(40);
    cfg.blockDim = dim3(128);
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
    CHECK(cudaLaunchKernelExC(&cfg, (void *)grid_sum, sum_args));
    int sum = 0;
    CHECK(cudaMemcpy(&sum, out, sizeof(int), cudaMemcpyDeviceToHost));
    EXPECT(sum == want, "sum %d, want %ld", sum, want);
    printf("cudaLaunchAttributeCooperative: ok\n");

    // Exactly what the occupancy API allows is co-resident; one more is not.
    CHECK(cudaMemset(out, 0, sizeof(int)));
    CHECK(cudaLaunchCooperativeKernel((void *)grid_sum, dim3(most), dim3(128), sum_args, 0, 0));
    CHECK(cudaMemcpy(&sum, out, sizeof(int), cudaMemcpyDeviceToHost));
    EXPECT(sum == want, "sum %d over %d blocks, want %ld", sum, most, want);
    printf("a grid of occupancy x SMs blocks: ok\n");
    EXPECT_ERR_AS("one block more than co-resident",
                  cudaLaunchCooperativeKernel((void *)grid_sum, dim3(most + 1), dim3(128),
                                              sum_args, 0, 0),
                  cudaErrorCooperativeLaunchTooLarge);

    // A captured cooperative launch stays cooperative in the graph.
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CHECK(cudaMemsetAsync(out, 0, sizeof(int), s));
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CHECK(cudaLaunchCooperativeKernel((void *)grid_sum, dim3(32), dim3(128), sum_args, 0, s));
    CHECK(cudaStreamEndCapture(s, &graph));
    CHECK(cudaGraphInstantiate(&exec, graph, 0));
    for (int rep = 0; rep < 2; ++rep) {
        CHECK(cudaMemsetAsync(out, 0, sizeof(int), s));
        CHECK(cudaGraphLaunch(exec, s));
        CHECK(cudaStreamSynchronize(s));
        CHECK(cudaMemcpy(&sum, out, sizeof(int), cudaMemcpyDeviceToHost));
        EXPECT(sum == want, "graph sum %d, want %ld", sum, want);
    }
    printf("cooperative launch in a graph: ok\n");

    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(graph));
    CHECK(cudaStreamDestroy(s));
    CHECK(cudaFree(a));
    CHECK(cudaFree(tmp));
    CHECK(cudaFree(din));
    CHECK(cudaFree(partial));
    CHECK(cudaFree(out));
    printf("PASS\n");
    return 0;
}
