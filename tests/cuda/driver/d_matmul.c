// Tiled shared-memory matrix multiply through the CUDA driver API with streams
// and events: C = A * B with A M x K, B K x N (row-major floats, 16 x 16
// tiles). Page-locked host buffers from cuMemAllocHost; B is uploaded on the
// first stream and the second stream waits for it through an event; each
// stream then uploads its half of the rows of A, multiplies them and downloads
// its half of C, all asynchronously. The result is compared with the host's.
//
// Usage: d_matmul MATMUL.ptx [M K N]   (default 256 256 256)
//
// Prints `matmul MxK * KxN on 2 streams: ok` and `elapsed: ... ms`.
// Self-checking: `FAIL: <reason>` and exit status 1 on any error or mismatch,
// `PASS` as the last line on success.

#include <cuda.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drv_check.h"

#define TILE 16
#define STREAMS 2

int main(int argc, char **argv) {
    EXPECT(argc == 2 || argc == 5, "usage: %s MATMUL.ptx [M K N]", argv[0]);
    int M = 256, K = 256, N = 256;
    if (argc == 5) {
        M = atoi(argv[2]);
        K = atoi(argv[3]);
        N = atoi(argv[4]);
    }
    EXPECT(M > 0 && K > 0 && N > 0 && M % STREAMS == 0, "bad sizes %d %d %d", M, K, N);

    CU_CHECK(cuInit(0));
    CUdevice dev;
    CU_CHECK(cuDeviceGet(&dev, 0));
    // The primary context, as the runtime would use it.
    CUcontext ctx;
    CU_CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CU_CHECK(cuCtxSetCurrent(ctx));

    char *ptx = read_file(argv[1], NULL);
    CUmodule mod;
    CU_CHECK(cuModuleLoadData(&mod, ptx));
    free(ptx);
    CUfunction matmul;
    CU_CHECK(cuModuleGetFunction(&matmul, mod, "matmul_tiled"));

    const size_t a_bytes = (size_t)M * K * sizeof(float);
    const size_t b_bytes = (size_t)K * N * sizeof(float);
    const size_t c_bytes = (size_t)M * N * sizeof(float);
    float *A, *B, *C;
    CU_CHECK(cuMemAllocHost((void **)&A, a_bytes));
    CU_CHECK(cuMemAllocHost((void **)&B, b_bytes));
    CU_CHECK(cuMemAllocHost((void **)&C, c_bytes));
    // Small integers: every partial sum is exact, so the result must match exactly.
    for (int i = 0; i < M * K; i++) A[i] = (float)((i * 7) % 9 - 4);
    for (int i = 0; i < K * N; i++) B[i] = (float)((i * 5) % 11 - 5);
    for (int i = 0; i < M * N; i++) C[i] = -12345.0f;

    CUdeviceptr dA, dB, dC;
    CU_CHECK(cuMemAlloc(&dA, a_bytes));
    CU_CHECK(cuMemAlloc(&dB, b_bytes));
    CU_CHECK(cuMemAlloc(&dC, c_bytes));

    CUstream streams[STREAMS];
    for (int s = 0; s < STREAMS; s++) CU_CHECK(cuStreamCreate(&streams[s], CU_STREAM_NON_BLOCKING));
    CUevent start, stop, b_ready;
    CU_CHECK(cuEventCreate(&start, CU_EVENT_DEFAULT));
    CU_CHECK(cuEventCreate(&stop, CU_EVENT_DEFAULT));
    CU_CHECK(cuEventCreate(&b_ready, CU_EVENT_DISABLE_TIMING));

    CU_CHECK(cuEventRecord(start, streams[0]));
    CU_CHECK(cuMemcpyHtoDAsync(dB, B, b_bytes, streams[0]));
    CU_CHECK(cuEventRecord(b_ready, streams[0]));
    for (int s = 1; s < STREAMS; s++) CU_CHECK(cuStreamWaitEvent(streams[s], b_ready, 0));

    const int rows = M / STREAMS;
    for (int s = 0; s < STREAMS; s++) {
        const size_t a_off = (size_t)s * rows * K * sizeof(float);
        const size_t c_off = (size_t)s * rows * N * sizeof(float);
        CU_CHECK(cuMemcpyHtoDAsync(dA + a_off, (char *)A + a_off,
                                   (size_t)rows * K * sizeof(float), streams[s]));
        CUdeviceptr a_part = dA + a_off, c_part = dC + c_off;
        void *params[] = {&a_part, &dB, &c_part, (void *)&rows, &K, &N};
        CU_CHECK(cuLaunchKernel(matmul, (unsigned)((N + TILE - 1) / TILE),
                                (unsigned)((rows + TILE - 1) / TILE), 1, TILE, TILE, 1, 0,
                                streams[s], params, NULL));
        CU_CHECK(cuMemcpyDtoHAsync((char *)C + c_off, c_part, (size_t)rows * N * sizeof(float),
                                   streams[s]));
    }
    // `stop` on the first stream after the second has finished too.
    CUevent done1;
    CU_CHECK(cuEventCreate(&done1, CU_EVENT_DISABLE_TIMING));
    CU_CHECK(cuEventRecord(done1, streams[1]));
    CU_CHECK(cuStreamWaitEvent(streams[0], done1, 0));
    CU_CHECK(cuEventRecord(stop, streams[0]));

    CU_CHECK(cuEventSynchronize(stop));
    CU_CHECK(cuEventQuery(stop));
    float ms = -1.0f;
    CU_CHECK(cuEventElapsedTime(&ms, start, stop));
    EXPECT(ms >= 0.0f, "cuEventElapsedTime gave %g ms", ms);
    for (int s = 0; s < STREAMS; s++) {
        CU_CHECK(cuStreamSynchronize(streams[s]));
        CU_CHECK(cuStreamQuery(streams[s]));
    }

    for (int i = 0; i < M; i++) {
        for (int j = 0; j < N; j++) {
            float want = 0.0f;
            for (int k = 0; k < K; k++) want += A[i * K + k] * B[k * N + j];
            EXPECT(C[i * N + j] == want, "C[%d][%d] = %g, expected %g", i, j, C[i * N + j], want);
        }
    }
    printf("matmul %dx%d * %dx%d on %d streams: ok\n", M, K, K, N, STREAMS);
    printf("elapsed: %.3f ms\n", ms);

    CU_CHECK(cuEventDestroy(start));
    CU_CHECK(cuEventDestroy(stop));
    CU_CHECK(cuEventDestroy(b_ready));
    CU_CHECK(cuEventDestroy(done1));
    for (int s = 0; s < STREAMS; s++) CU_CHECK(cuStreamDestroy(streams[s]));
    CU_CHECK(cuMemFree(dA));
    CU_CHECK(cuMemFree(dB));
    CU_CHECK(cuMemFree(dC));
    CU_CHECK(cuMemFreeHost(A));
    CU_CHECK(cuMemFreeHost(B));
    CU_CHECK(cuMemFreeHost(C));
    CU_CHECK(cuModuleUnload(mod));
    CU_CHECK(cuCtxSetCurrent(NULL));
    CU_CHECK(cuDevicePrimaryCtxRelease(dev));
    printf("PASS\n");
    return 0;
}
