// Tiled matrix multiplication C = A * B (A: M x K, B: K x N, row-major) with
// `__shared__` tiles and `__syncthreads()`, on sizes that are not multiples of
// the tile (partial tiles are padded with zeros), in float with a 16x16 tile
// and in double with an 8x8 tile (a template). The inputs are small integers,
// so every partial sum is exact and the result must match the host exactly.
//
// Prints one line per case, e.g. `matmul<float> 37x50 * 50x29 (tile 16): ok`.
// Self-checking: `FAIL: <reason>` and exit status 1 on any mismatch, `PASS` as
// the last line on success.

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#include "check.h"

template <typename T, int TILE>
__global__ void matmul_tiled(const T *A, const T *B, T *C, int M, int K, int N) {
    __shared__ T As[TILE][TILE];
    __shared__ T Bs[TILE][TILE];
    const int row = blockIdx.y * TILE + threadIdx.y;
    const int col = blockIdx.x * TILE + threadIdx.x;
    T acc = 0;
    for (int t = 0; t < (K + TILE - 1) / TILE; t++) {
        const int ak = t * TILE + threadIdx.x;
        const int bk = t * TILE + threadIdx.y;
        As[threadIdx.y][threadIdx.x] = (row < M && ak < K) ? A[row * K + ak] : (T)0;
        Bs[threadIdx.y][threadIdx.x] = (bk < K && col < N) ? B[bk * N + col] : (T)0;
        __syncthreads();
        for (int k = 0; k < TILE; k++) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
        __syncthreads();
    }
    if (row < M && col < N) C[row * N + col] = acc;
}

template <typename T> struct TypeName;
template <> struct TypeName<float> { static const char *get() { return "float"; } };
template <> struct TypeName<double> { static const char *get() { return "double"; } };

template <typename T, int TILE>
static void run(int M, int K, int N) {
    T *A = (T *)malloc((size_t)M * K * sizeof(T));
    T *B = (T *)malloc((size_t)K * N * sizeof(T));
    T *C = (T *)malloc((size_t)M * N * sizeof(T));
    EXPECT(A && B && C, "host malloc failed");
    for (int i = 0; i < M * K; i++) A[i] = (T)((i * 7) % 9 - 4);
    for (int i = 0; i < K * N; i++) B[i] = (T)((i * 5) % 11 - 5);
    T *dA = NULL, *dB = NULL, *dC = NULL;
    CHECK(cudaMalloc(&dA, (size_t)M * K * sizeof(T)));
    CHECK(cudaMalloc(&dB, (size_t)K * N * sizeof(T)));
    CHECK(cudaMalloc(&dC, (size_t)M * N * sizeof(T)));
    CHECK(cudaMemcpy(dA, A, (size_t)M * K * sizeof(T), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dB, B, (size_t)K * N * sizeof(T), cudaMemcpyHostToDevice));
    CHECK(cudaMemset(dC, 0xFF, (size_t)M * N * sizeof(T)));
    dim3 block(TILE, TILE);
    dim3 grid((N + TILE - 1) / TILE, (M + TILE - 1) / TILE);
    matmul_tiled<T, TILE><<<grid, block>>>(dA, dB, dC, M, K, N);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(C, dC, (size_t)M * N * sizeof(T), cudaMemcpyDeviceToHost));
    for (int r = 0; r < M; r++)
        for (int c = 0; c < N; c++) {
            T want = 0;
            for (int k = 0; k < K; k++) want += A[r * K + k] * B[k * N + c];
            EXPECT(C[r * N + c] == want, "matmul<%s> %dx%d * %dx%d: C[%d][%d] = %g, expected %g",
                   TypeName<T>::get(), M, K, K, N, r, c, (double)C[r * N + c], (double)want);
        }
    printf("matmul<%s> %dx%d * %dx%d (tile %d): ok\n", TypeName<T>::get(), M, K, K, N, TILE);
    CHECK(cudaFree(dA));
    CHECK(cudaFree(dB));
    CHECK(cudaFree(dC));
    free(A);
    free(B);
    free(C);
}

int main() {
    CHECK(cudaSetDevice(0));
    run<float, 16>(37, 50, 29);
    run<float, 16>(64, 64, 64);
    run<float, 16>(100, 3, 77);
    run<float, 16>(1, 130, 1);
    run<float, 16>(17, 16, 33);
    run<double, 8>(37, 50, 29);
    run<double, 8>(20, 9, 70);
    printf("PASS\n");
    return 0;
}
