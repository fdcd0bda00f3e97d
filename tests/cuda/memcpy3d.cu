// 3-D linear memory: cudaMalloc3D, cudaMemset3D, cudaMemcpy3D between host
// and device and between two pitched volumes with offsets (positions),
// the asynchronous and peer forms, capture into a graph, and a copy with no
// destination refused.
#include <cuda_runtime.h>

#include <vector>

#include "check.h"

static const size_t W = 37, H = 11, D = 5;  // bytes, rows, slices

int main() {
    cudaExtent extent = make_cudaExtent(W, H, D);
    cudaPitchedPtr a, b;
    CHECK(cudaMalloc3D(&a, extent));
    CHECK(cudaMalloc3D(&b, extent));
    EXPECT(a.pitch >= W && a.xsize == W && a.ysize == H, "pitched allocation");
    CHECK(cudaMemset3D(a, 0x11, extent));

    std::vector<unsigned char> host(W * H * D);
    for (size_t i = 0; i < host.size(); ++i) host[i] = (unsigned char)(i * 7 + 3);
    cudaMemcpy3DParms up = {};
    up.srcPtr = make_cudaPitchedPtr(host.data(), W, W, H);
    up.dstPtr = a;
    up.extent = extent;
    up.kind = cudaMemcpyHostToDevice;
    CHECK(cudaMemcpy3D(&up));

    // The inner box (1..W-1, 2..H, 1..D) of a goes to the origin of b.
    CHECK(cudaMemset3D(b, 0, extent));
    cudaMemcpy3DParms inner = {};
    inner.srcPtr = a;
    inner.srcPos = make_cudaPos(1, 2, 1);
    inner.dstPtr = b;
    inner.extent = make_cudaExtent(W - 2, H - 2, D - 1);
    inner.kind = cudaMemcpyDeviceToDevice;
    CHECK(cudaMemcpy3D(&inner));

    std::vector<unsigned char> back(W * H * D, 0xEE);
    cudaMemcpy3DParms down = {};
    down.srcPtr = b;
    down.dstPtr = make_cudaPitchedPtr(back.data(), W, W, H);
    down.extent = extent;
    down.kind = cudaMemcpyDeviceToHost;
    CHECK(cudaMemcpy3D(&down));
    for (size_t z = 0; z < D; ++z)
        for (size_t y = 0; y < H; ++y)
            for (size_t x = 0; x < W; ++x) {
                bool in = x < W - 2 && y < H - 2 && z < D - 1;
                unsigned char want = in ? host[(z + 1) * W * H + (y + 2) * W + x + 1] : 0;
                EXPECT(back[z * W * H + y * W + x] == want, "b(%zu,%zu,%zu)", x, y, z);
            }
    printf("cudaMemcpy3D host, device and positions: ok\n");

    // Asynchronous and peer forms; a capture records the copy as a node.
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CHECK(cudaMemset3DAsync(b, 0x5A, extent, s));
    cudaMemcpy3DPeerParms peer = {};
    peer.srcPtr = b;
    peer.srcDevice = 0;
    peer.dstPtr = a;
    peer.dstDevice = 0;
    peer.extent = extent;
    CHECK(cudaMemcpy3DPeerAsync(&peer, s));
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CHECK(cudaMemcpy3DAsync(&down, s));
    cudaGraph_t g;
    CHECK(cudaStreamEndCapture(s, &g));
    size_t nodes = 0;
    CHECK(cudaGraphGetNodes(g, nullptr, &nodes));
    EXPECT(nodes == 1, "one copy node, got %zu", nodes);
    down.srcPtr = a;
    CHECK(cudaMemcpy3DAsync(&down, s));
    CHECK(cudaStreamSynchronize(s));
    for (unsigned char v : back) EXPECT(v == 0x5A, "async peer copy and memset");
    cudaGraphExec_t exec;
    CHECK(cudaGraphInstantiate(&exec, g, 0));
    std::fill(back.begin(), back.end(), 0);
    CHECK(cudaGraphLaunch(exec, s));
    CHECK(cudaStreamSynchronize(s));
    for (unsigned char v : back) EXPECT(v == 0x5A, "captured 3-D copy");
    printf("cudaMemcpy3DAsync, peer and captured: ok\n");

    // No destination at all. (A made-up array handle is no test: NVIDIA's
    // runtime dereferences it and crashes.)
    up.dstPtr = make_cudaPitchedPtr(nullptr, 0, 0, 0);
    up.dstArray = nullptr;
    EXPECT_ERR_AS("cudaMemcpy3D to no destination", cudaMemcpy3D(&up), cudaErrorInvalidValue);

    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(g));
    CHECK(cudaStreamDestroy(s));
    CHECK(cudaFree(a.ptr));
    CHECK(cudaFree(b.ptr));
    printf("PASS\n");
    return 0;
}
