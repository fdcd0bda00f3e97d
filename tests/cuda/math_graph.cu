// Math library calls captured into a CUDA graph: cuRAND, cuBLAS (level 1
// and 3) and cuFFT calls on a capturing stream become graph nodes, run
// nothing during the capture, and run at every launch of the graph on the
// device memory of that moment (host scalars as they were at capture). A
// cuBLAS reduction to the host during capture fails and invalidates the
// capture, as the library's own copy to the host would.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cufft.h>
#include <curand.h>

#include <cmath>
#include <vector>

#include "check.h"

#define CHECK_LIB(call, ok)                                                             \
    do {                                                                                \
        int st_ = (int)(call);                                                          \
        if (st_ != (int)(ok)) {                                                         \
            printf("FAIL: %s returned status %d at line %d\n", #call, st_, __LINE__);   \
            fflush(stdout);                                                             \
            exit(1);                                                                    \
        }                                                                               \
    } while (0)

static const int N = 1000;  // saxpy and random numbers
static const int M = 8;     // gemm: M x M
static const int F = 64;    // fft length

int main() {
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    cublasHandle_t blas;
    CHECK_LIB(cublasCreate(&blas), CUBLAS_STATUS_SUCCESS);
    CHECK_LIB(cublasSetStream(blas, s), CUBLAS_STATUS_SUCCESS);
    curandGenerator_t gen;
    CHECK_LIB(curandCreateGenerator(&gen, CURAND_RNG_PSEUDO_PHILOX4_32_10), CURAND_STATUS_SUCCESS);
    CHECK_LIB(curandSetPseudoRandomGeneratorSeed(gen, 42), CURAND_STATUS_SUCCESS);
    CHECK_LIB(curandSetStream(gen, s), CURAND_STATUS_SUCCESS);
    cufftHandle plan;
    CHECK_LIB(cufftPlan1d(&plan, F, CUFFT_C2C, 1), CUFFT_SUCCESS);
    CHECK_LIB(cufftSetStream(plan, s), CUFFT_SUCCESS);

    float *x, *y, *a, *b, *c;
    cufftComplex *sig, *spec;
    CHECK(cudaMalloc(&x, N * sizeof(float)));
    CHECK(cudaMalloc(&y, N * sizeof(float)));
    CHECK(cudaMalloc(&a, M * M * sizeof(float)));
    CHECK(cudaMalloc(&b, M * M * sizeof(float)));
    CHECK(cudaMalloc(&c, M * M * sizeof(float)));
    CHECK(cudaMalloc(&sig, F * sizeof(cufftComplex)));
    CHECK(cudaMalloc(&spec, F * sizeof(cufftComplex)));

    std::vector<float> hy(N, 1.0f), ha(M * M), hb(M * M), hc(M * M, -7.0f);
    for (int i = 0; i < M * M; i++) {
        ha[i] = (float)(i % 5);
        hb[i] = (float)(i % 3) - 1.0f;
    }
    std::vector<cufftComplex> hsig(F);
    for (int i = 0; i < F; i++) hsig[i] = {(float)(i % 4), 0.0f};
    CHECK(cudaMemcpy(y, hy.data(), N * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(x, hy.data(), N * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(a, ha.data(), M * M * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(b, hb.data(), M * M * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(c, hc.data(), M * M * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(sig, hsig.data(), F * sizeof(cufftComplex), cudaMemcpyHostToDevice));
    CHECK(cudaMemset(spec, 0, F * sizeof(cufftComplex)));

    // Capture: random x, y = alpha x + y, c = a b, spec = fft(sig).
    float alpha = 2.0f, one = 1.0f, zero = 0.0f;
    cudaGraph_t graph;
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CHECK_LIB(curandGenerateUniform(gen, x, N), CURAND_STATUS_SUCCESS);
    CHECK_LIB(cublasSaxpy(blas, N, &alpha, x, 1, y, 1), CUBLAS_STATUS_SUCCESS);
    CHECK_LIB(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, M, M, M, &one, a, M, b, M, &zero, c, M),
              CUBLAS_STATUS_SUCCESS);
    CHECK_LIB(cufftExecC2C(plan, sig, spec, CUFFT_FORWARD), CUFFT_SUCCESS);
    alpha = 100.0f;  // the captured saxpy keeps 2
    CHECK(cudaStreamEndCapture(s, &graph));

    size_t count = 0;
    CHECK(cudaGraphGetNodes(graph, nullptr, &count));
    EXPECT(count == 4, "the graph has %zu nodes, expected 4", count);
    std::vector<cudaGraphNode_t> nodes(count);
    CHECK(cudaGraphGetNodes(graph, nodes.data(), &count));
    for (size_t i = 0; i < count; i++) {
        cudaGraphNodeType t;
        CHECK(cudaGraphNodeGetType(nodes[i], &t));
        EXPECT(t == cudaGraphNodeTypeKernel, "node %zu has type %d", i, (int)t);
        cudaKernelNodeParams p;
        cudaError_t e = cudaGraphKernelNodeGetParams(nodes[i], &p);
        EXPECT(e == cudaErrorNotSupported, "parameters of a library node: %s",
               cudaGetErrorName(e));
    }

    // Nothing ran during the capture.
    std::vector<float> got(N), gx(N), gc(M * M);
    CHECK(cudaMemcpy(got.data(), y, N * sizeof(float), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(gc.data(), c, M * M * sizeof(float), cudaMemcpyDeviceToHost));
    for (int i = 0; i < N; i++) EXPECT(got[i] == 1.0f, "y[%d] = %g before the launch", i, got[i]);
    for (int i = 0; i < M * M; i++) EXPECT(gc[i] == -7.0f, "c[%d] = %g before the launch", i, gc[i]);
    printf("capture ran nothing ok\n");

    cudaGraphExec_t exec;
    CHECK(cudaGraphInstantiate(&exec, graph, 0));
    for (int launch = 0; launch < 2; launch++) {
        float y0 = launch == 0 ? 1.0f : -3.0f;
        std::vector<float> hy0(N, y0);
        CHECK(cudaMemcpy(y, hy0.data(), N * sizeof(float), cudaMemcpyHostToDevice));
        CHECK(cudaGraphLaunch(exec, s));
        CHECK(cudaStreamSynchronize(s));
        CHECK(cudaMemcpy(gx.data(), x, N * sizeof(float), cudaMemcpyDeviceToHost));
        CHECK(cudaMemcpy(got.data(), y, N * sizeof(float), cudaMemcpyDeviceToHost));
        for (int i = 0; i < N; i++) {
            EXPECT(gx[i] > 0.0f && gx[i] <= 1.0f, "x[%d] = %g is not uniform in (0, 1]", i, gx[i]);
            float want = 2.0f * gx[i] + y0;
            EXPECT(fabsf(got[i] - want) < 1e-5f, "launch %d: y[%d] = %g, want %g", launch, i,
                   got[i], want);
        }
    }
    printf("graph launches ok\n");

    CHECK(cudaMemcpy(gc.data(), c, M * M * sizeof(float), cudaMemcpyDeviceToHost));
    for (int col = 0; col < M; col++)
        for (int row = 0; row < M; row++) {
            float want = 0.0f;
            for (int k = 0; k < M; k++) want += ha[k * M + row] * hb[col * M + k];
            EXPECT(fabsf(gc[col * M + row] - want) < 1e-4f, "c(%d,%d) = %g, want %g", row, col,
                   gc[col * M + row], want);
        }
    std::vector<cufftComplex> gs(F);
    CHECK(cudaMemcpy(gs.data(), spec, F * sizeof(cufftComplex), cudaMemcpyDeviceToHost));
    for (int k = 0; k < F; k++) {
        double re = 0, im = 0;
        for (int n = 0; n < F; n++) {
            double ph = -2.0 * M_PI * k * n / F;
            re += hsig[n].x * cos(ph);
            im += hsig[n].x * sin(ph);
        }
        EXPECT(fabs(gs[k].x - re) < 1e-3 && fabs(gs[k].y - im) < 1e-3,
               "spec[%d] = (%g, %g), want (%g, %g)", k, gs[k].x, gs[k].y, re, im);
    }
    printf("gemm and fft in the graph ok\n");

    // A reduction to the host cannot be captured.
    CHECK_LIB(cublasSetPointerMode(blas, CUBLAS_POINTER_MODE_HOST), CUBLAS_STATUS_SUCCESS);
    float dot = 0.0f;
    cudaGraph_t bad;
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    cublasStatus_t st = cublasSdot(blas, N, x, 1, y, 1, &dot);
    printf("cublasSdot to the host during capture -> %d\n", (int)st);
    EXPECT(st != CUBLAS_STATUS_SUCCESS, "cublasSdot to the host succeeded during capture");
    cudaError_t end = cudaStreamEndCapture(s, &bad);
    printf("cudaStreamEndCapture -> %s\n", cudaGetErrorName(end));
    EXPECT(end == cudaErrorStreamCaptureInvalidated, "end of capture: %s",
           cudaGetErrorName(end));
    cudaGetLastError();
    printf("reduction to the host refused ok\n");

    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(graph));
    cufftDestroy(plan);
    curandDestroyGenerator(gen);
    cublasDestroy(blas);
    CHECK(cudaStreamDestroy(s));
    printf("PASS\n");
    return 0;
}
