// Tensor cores through CUDA's wmma API: a tiled half-precision GEMM
// D = alpha * A * B + beta * C (A: M x K, B: K x N, row-major; C, D float)
// where each block of 2x2 warps stages 32x32 tiles of A and B in shared
// memory and each warp computes a 16x16 tile of D, with sizes that are
// multiples of 16 but not of the block tile; and an int8 GEMM, one warp per
// 16x16 tile straight from global memory (B column-major), into int32.
//
// Prints one line per case, e.g. `wmma half GEMM 96x144 * 144x80: ok`.
// Self-checking: `FAIL: <reason>` and exit status 1 on any mismatch, `PASS` as
// the last line on success.

#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mma.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "check.h"

using namespace nvcuda;

#define BT 32       // block tile (rows and columns of D, and depth of a step)
#define LDS (BT + 8) // padded shared row: a multiple of 8 halves, 32-byte rows apart

__global__ void gemm_half(const half *A, const half *B, const float *C, float *D, int M, int N, int K,
                          float alpha, float beta) {
    __shared__ __align__(32) half As[BT][LDS];
    __shared__ __align__(32) half Bs[BT][LDS];
    const int warp = threadIdx.x / 32, wy = warp / 2, wx = warp % 2;
    const int row0 = blockIdx.y * BT, col0 = blockIdx.x * BT;
    const int trow = row0 + wy * 16, tcol = col0 + wx * 16;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 0.0f);
    for (int k0 = 0; k0 < K; k0 += BT) {
        // All 128 threads stage both tiles, zero outside the matrices.
        for (int i = threadIdx.x; i < BT * BT; i += blockDim.x) {
            int r = i / BT, c = i % BT;
            As[r][c] = (row0 + r < M && k0 + c < K) ? A[(row0 + r) * K + k0 + c] : __float2half(0.0f);
            Bs[r][c] = (k0 + r < K && col0 + c < N) ? B[(k0 + r) * N + col0 + c] : __float2half(0.0f);
        }
        __syncthreads();
        // A warp whose tile lies outside D still takes part in the barriers.
        if (trow < M && tcol < N) {
            for (int kk = 0; kk < BT; kk += 16) {
                wmma::load_matrix_sync(fa, &As[wy * 16][kk], LDS);
                wmma::load_matrix_sync(fb, &Bs[kk][wx * 16], LDS);
                wmma::mma_sync(acc, fa, fb, acc);
            }
        }
        __syncthreads();
    }
    if (trow < M && tcol < N) {
        wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
        wmma::load_matrix_sync(fc, C + trow * N + tcol, N, wmma::mem_row_major);
        for (int i = 0; i < acc.num_elements; i++) acc.x[i] = alpha * acc.x[i] + beta * fc.x[i];
        wmma::store_matrix_sync(D + trow * N + tcol, acc, N, wmma::mem_row_major);
    }
}

__global__ void gemm_s8(const signed char *A, const signed char *Bt, const int *C, int *D, int M, int N, int K) {
    const int trow = blockIdx.y * 16, tcol = blockIdx.x * 16;
    wmma::fragment<wmma::matrix_a, 16, 16, 16, signed char, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, signed char, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, int> acc;
    wmma::load_matrix_sync(acc, C + trow * N + tcol, N, wmma::mem_row_major);
    for (int k = 0; k < K; k += 16) {
        wmma::load_matrix_sync(fa, A + trow * K + k, K);
        wmma::load_matrix_sync(fb, Bt + tcol * K + k, K);
        wmma::mma_sync(acc, fa, fb, acc);
    }
    wmma::store_matrix_sync(D + trow * N + tcol, acc, N, wmma::mem_row_major);
}

static unsigned rng_state = 12345u;
static unsigned next_rand() {
    rng_state = rng_state * 1664525u + 1013904223u;
    return rng_state >> 8;
}

static void run_half(int M, int N, int K, float alpha, float beta) {
    half *A = (half *)malloc((size_t)M * K * sizeof(half));
    half *B = (half *)malloc((size_t)K * N * sizeof(half));
    float *C = (float *)malloc((size_t)M * N * sizeof(float));
    float *D = (float *)malloc((size_t)M * N * sizeof(float));
    EXPECT(A && B && C && D, "host malloc failed");
    for (int i = 0; i < M * K; i++) A[i] = __float2half((float)(next_rand() % 2001) / 1000.0f - 1.0f);
    for (int i = 0; i < K * N; i++) B[i] = __float2half((float)(next_rand() % 2001) / 1000.0f - 1.0f);
    for (int i = 0; i < M * N; i++) C[i] = (float)(next_rand() % 2001) / 100.0f - 10.0f;
    half *dA = NULL, *dB = NULL;
    float *dC = NULL, *dD = NULL;
    CHECK(cudaMalloc(&dA, (size_t)M * K * sizeof(half)));
    CHECK(cudaMalloc(&dB, (size_t)K * N * sizeof(half)));
    CHECK(cudaMalloc(&dC, (size_t)M * N * sizeof(float)));
    CHECK(cudaMalloc(&dD, (size_t)M * N * sizeof(float)));
    CHECK(cudaMemcpy(dA, A, (size_t)M * K * sizeof(half), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dB, B, (size_t)K * N * sizeof(half), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dC, C, (size_t)M * N * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemset(dD, 0xFF, (size_t)M * N * sizeof(float)));
    dim3 grid((N + BT - 1) / BT, (M + BT - 1) / BT);
    gemm_half<<<grid, 128>>>(dA, dB, dC, dD, M, N, K, alpha, beta);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(D, dD, (size_t)M * N * sizeof(float), cudaMemcpyDeviceToHost));
    for (int r = 0; r < M; r++)
        for (int c = 0; c < N; c++) {
            double want = 0, mag = 0;
            for (int k = 0; k < K; k++) {
                double p = (double)__half2float(A[r * K + k]) * (double)__half2float(B[k * N + c]);
                want += p;
                mag += fabs(p);
            }
            want = alpha * want + beta * C[r * N + c];
            mag = fabs(alpha) * mag + fabs(beta * C[r * N + c]);
            // f32 accumulation in any order stays within this of the exact sum.
            double tol = 1e-5 * mag + 1e-6;
            EXPECT(fabs(D[r * N + c] - want) <= tol, "half GEMM %dx%d * %dx%d: D[%d][%d] = %.7g, expected %.7g",
                   M, K, K, N, r, c, (double)D[r * N + c], want);
        }
    printf("wmma half GEMM %dx%d * %dx%d (alpha %g, beta %g): ok\n", M, K, K, N, alpha, beta);
    CHECK(cudaFree(dA));
    CHECK(cudaFree(dB));
    CHECK(cudaFree(dC));
    CHECK(cudaFree(dD));
    free(A);
    free(B);
    free(C);
    free(D);
}

static void run_s8(int M, int N, int K) {
    signed char *A = (signed char *)malloc((size_t)M * K);
    signed char *Bt = (signed char *)malloc((size_t)N * K);
    int *C = (int *)malloc((size_t)M * N * sizeof(int));
    int *D = (int *)malloc((size_t)M * N * sizeof(int));
    EXPECT(A && Bt && C && D, "host malloc failed");
    for (int i = 0; i < M * K; i++) A[i] = (signed char)(next_rand() & 0xFF);
    for (int i = 0; i < N * K; i++) Bt[i] = (signed char)(next_rand() & 0xFF);
    for (int i = 0; i < M * N; i++) C[i] = (int)(next_rand() % 200001) - 100000;
    signed char *dA = NULL, *dB = NULL;
    int *dC = NULL, *dD = NULL;
    CHECK(cudaMalloc(&dA, (size_t)M * K));
    CHECK(cudaMalloc(&dB, (size_t)N * K));
    CHECK(cudaMalloc(&dC, (size_t)M * N * sizeof(int)));
    CHECK(cudaMalloc(&dD, (size_t)M * N * sizeof(int)));
    CHECK(cudaMemcpy(dA, A, (size_t)M * K, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dB, Bt, (size_t)N * K, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dC, C, (size_t)M * N * sizeof(int), cudaMemcpyHostToDevice));
    gemm_s8<<<dim3(N / 16, M / 16), 32>>>(dA, dB, dC, dD, M, N, K);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(D, dD, (size_t)M * N * sizeof(int), cudaMemcpyDeviceToHost));
    for (int r = 0; r < M; r++)
        for (int c = 0; c < N; c++) {
            int want = C[r * N + c];
            for (int k = 0; k < K; k++) want += (int)A[r * K + k] * (int)Bt[c * K + k];
            EXPECT(D[r * N + c] == want, "int8 GEMM %dx%d * %dx%d: D[%d][%d] = %d, expected %d", M, K, K, N, r, c,
                   D[r * N + c], want);
        }
    printf("wmma int8 GEMM %dx%d * %dx%d: ok\n", M, K, K, N);
    CHECK(cudaFree(dA));
    CHECK(cudaFree(dB));
    CHECK(cudaFree(dC));
    CHECK(cudaFree(dD));
    free(A);
    free(Bt);
    free(C);
    free(D);
}

int main() {
    CHECK(cudaSetDevice(0));
    run_half(96, 80, 144, 1.5f, -0.5f);
    run_half(64, 64, 64, 1.0f, 0.0f);
    run_s8(64, 48, 96);
    printf("PASS\n");
    return 0;
}
