// Sum reductions in two passes (per-block partial sums, then one block over
// the partials):
// - a tree in dynamic shared memory (`extern __shared__`, size given as the
//   third launch parameter);
// - warp shuffles: `__shfl_down_sync` inside each warp, the warp sums through
//   dynamic shared memory, and `__shfl_xor_sync` in the first warp;
// for int, float and double. The float and double inputs are multiples of 0.25
// of small magnitude, so every order of summation gives the exact sum.
// Also: a butterfly all-reduce (`__shfl_xor_sync`), after which every lane
// must hold the warp total, and an inclusive warp scan (`__shfl_up_sync`) with
// the total broadcast from lane 31 (`__shfl_sync`).
//
// Prints one line per case, e.g. `reduce_shared<int> n=1000 block=256 grid=4: ok`,
// `reduce_shuffle<float> n=65537 block=96 grid=64: ok`, `warp allreduce xor: ok`,
// `warp scan shfl_up: ok`.
// Self-checking: `FAIL: <reason>` and exit status 1 on any mismatch, `PASS` as
// the last line on success.

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#include "check.h"

static const unsigned FULL = 0xffffffffu;

// Dynamic shared memory, shared by all kernels here; each views it as its type.
extern __shared__ __align__(16) unsigned char dyn_smem[];

// blockDim.x must be a power of two; dynamic shared memory blockDim.x * sizeof(T).
template <typename T>
__global__ void reduce_shared(const T *in, T *out, int n) {
    T *s = reinterpret_cast<T *>(dyn_smem);
    T acc = 0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        acc += in[i];
    s[threadIdx.x] = acc;
    __syncthreads();
    for (unsigned stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        if (threadIdx.x < stride) s[threadIdx.x] += s[threadIdx.x + stride];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = s[0];
}

// blockDim.x must be a multiple of 32; dynamic shared memory
// (blockDim.x / 32) * sizeof(T).
template <typename T>
__global__ void reduce_shuffle(const T *in, T *out, int n) {
    T *warp_sums = reinterpret_cast<T *>(dyn_smem);
    T acc = 0;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        acc += in[i];
    for (int offset = 16; offset > 0; offset >>= 1) acc += __shfl_down_sync(FULL, acc, offset);
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    if (lane == 0) warp_sums[warp] = acc;
    __syncthreads();
    if (warp == 0) {
        T v = lane < (int)(blockDim.x / 32) ? warp_sums[lane] : (T)0;
        for (int mask = 16; mask > 0; mask >>= 1) v += __shfl_xor_sync(FULL, v, mask);
        if (lane == 0) out[blockIdx.x] = v;
    }
}

// Every lane ends with the total of its warp.
__global__ void warp_allreduce(const int *in, int *out) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    int v = in[i];
    for (int mask = 1; mask < 32; mask <<= 1) v += __shfl_xor_sync(FULL, v, mask);
    out[i] = v;
}

// Inclusive scan in each warp, and the warp total broadcast from lane 31.
__global__ void warp_scan(const int *in, int *scan, int *total) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const int lane = threadIdx.x % 32;
    int v = in[i];
    for (int d = 1; d < 32; d <<= 1) {
        int up = __shfl_up_sync(FULL, v, d);
        if (lane >= d) v += up;
    }
    scan[i] = v;
    total[i] = __shfl_sync(FULL, v, 31);
}

template <typename T> struct TypeName;
template <> struct TypeName<int> { static const char *get() { return "int"; } };
template <> struct TypeName<float> { static const char *get() { return "float"; } };
template <> struct TypeName<double> { static const char *get() { return "double"; } };

enum Kind { SHARED, SHUFFLE };

template <typename T>
static void launch(Kind kind, int grid, int block, const T *in, T *out, int n) {
    if (kind == SHARED)
        reduce_shared<T><<<grid, block, block * sizeof(T)>>>(in, out, n);
    else
        reduce_shuffle<T><<<grid, block, (block / 32) * sizeof(T)>>>(in, out, n);
    CHECK(cudaGetLastError());
}

template <typename T>
static void run(Kind kind, int n, int block) {
    const char *name = kind == SHARED ? "reduce_shared" : "reduce_shuffle";
    T *in = (T *)malloc((size_t)n * sizeof(T));
    EXPECT(in != NULL, "host malloc failed");
    double want = 0;  // exact: all values and sums are small multiples of 0.25
    for (int i = 0; i < n; i++) {
        const int k = (int)((i * 2654435761u) >> 7) % 65 - 32;  // [-32, 32]
        in[i] = (T)k / (T)4;  // for int: truncation toward zero, still in [-8, 8]
        want += (double)in[i];
    }
    int grid = (n + block - 1) / block;
    if (grid > 64) grid = 64;  // fewer threads than elements: grid-stride loops
    T *din = NULL, *dpartial = NULL, *dresult = NULL;
    CHECK(cudaMalloc(&din, (size_t)n * sizeof(T)));
    CHECK(cudaMalloc(&dpartial, grid * sizeof(T)));
    CHECK(cudaMalloc(&dresult, sizeof(T)));
    CHECK(cudaMemcpy(din, in, (size_t)n * sizeof(T), cudaMemcpyHostToDevice));
    launch<T>(kind, grid, block, din, dpartial, n);
    launch<T>(kind, 1, block, dpartial, dresult, grid);
    CHECK(cudaDeviceSynchronize());
    T got = 0;
    CHECK(cudaMemcpy(&got, dresult, sizeof got, cudaMemcpyDeviceToHost));
    EXPECT((double)got == want, "%s<%s> n=%d block=%d grid=%d: sum %.17g, expected %.17g", name,
           TypeName<T>::get(), n, block, grid, (double)got, want);
    printf("%s<%s> n=%d block=%d grid=%d: ok\n", name, TypeName<T>::get(), n, block, grid);
    CHECK(cudaFree(din));
    CHECK(cudaFree(dpartial));
    CHECK(cudaFree(dresult));
    free(in);
}

static void test_warp_ops() {
    const int n = 4 * 64;  // 4 blocks of 64 threads: 8 warps
    int in[n], out[n], scan[n], total[n];
    for (int i = 0; i < n; i++) in[i] = (i * 37) % 23 - 11;
    int *din = NULL, *dout = NULL, *dscan = NULL, *dtotal = NULL;
    CHECK(cudaMalloc(&din, sizeof in));
    CHECK(cudaMalloc(&dout, sizeof out));
    CHECK(cudaMalloc(&dscan, sizeof scan));
    CHECK(cudaMalloc(&dtotal, sizeof total));
    CHECK(cudaMemcpy(din, in, sizeof in, cudaMemcpyHostToDevice));
    warp_allreduce<<<4, 64>>>(din, dout);
    CHECK(cudaGetLastError());
    warp_scan<<<4, 64>>>(din, dscan, dtotal);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(out, dout, sizeof out, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(scan, dscan, sizeof scan, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(total, dtotal, sizeof total, cudaMemcpyDeviceToHost));
    for (int w = 0; w < n / 32; w++) {
        int sum = 0;
        for (int l = 0; l < 32; l++) sum += in[w * 32 + l];
        int prefix = 0;
        for (int l = 0; l < 32; l++) {
            const int i = w * 32 + l;
            prefix += in[i];
            EXPECT(out[i] == sum, "warp allreduce xor: warp %d lane %d has %d, expected %d", w, l,
                   out[i], sum);
            EXPECT(scan[i] == prefix, "warp scan shfl_up: warp %d lane %d has %d, expected %d", w,
                   l, scan[i], prefix);
            EXPECT(total[i] == sum, "warp scan shfl broadcast: warp %d lane %d has %d, expected %d",
                   w, l, total[i], sum);
        }
    }
    printf("warp allreduce xor: ok\n");
    printf("warp scan shfl_up: ok\n");
    printf("warp broadcast shfl: ok\n");
    CHECK(cudaFree(din));
    CHECK(cudaFree(dout));
    CHECK(cudaFree(dscan));
    CHECK(cudaFree(dtotal));
}

int main() {
    CHECK(cudaSetDevice(0));
    const int sizes[] = {1, 31, 32, 33, 1000, 65537, 100000};
    for (int s = 0; s < (int)(sizeof(sizes) / sizeof(sizes[0])); s++) {
        const int n = sizes[s];
        run<int>(SHARED, n, 256);
        run<float>(SHARED, n, 128);
        run<double>(SHARED, n, 1024);
        run<int>(SHUFFLE, n, 96);
        run<float>(SHUFFLE, n, 256);
        run<double>(SHUFFLE, n, 1024);
    }
    test_warp_ops();
    printf("PASS\n");
    return 0;
}
