// SAXPY (y = a*x + y) with a grid-stride loop, in float and double, with
// grids far smaller than the data so that each thread handles many elements.
// The inputs are chosen so that every product and sum is exact in the type,
// so the results must match the host bit for bit whether or not the compiler
// contracts a*x + y into a fused multiply-add.
//
// Prints one line per case:
//   `saxpy<float> n=<n> grid=<g> block=<b>: ok`
//   `saxpy<double> n=<n> grid=<g> block=<b>: ok`
// Self-checking: `FAIL: <reason>` and exit status 1 on any mismatch, `PASS` as
// the last line on success.

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#include "check.h"

template <typename T>
__global__ void saxpy(int n, T a, const T *x, T *y) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        y[i] = a * x[i] + y[i];
}

template <typename T> struct TypeName;
template <> struct TypeName<float> { static const char *get() { return "float"; } };
template <> struct TypeName<double> { static const char *get() { return "double"; } };

template <typename T>
static void run(int n, int grid, int block, T a) {
    T *x = (T *)malloc((size_t)n * sizeof(T));
    T *y = (T *)malloc((size_t)n * sizeof(T));
    T *out = (T *)malloc((size_t)n * sizeof(T));
    EXPECT(x && y && out, "host malloc failed");
    for (int i = 0; i < n; i++) {
        x[i] = (T)((i % 1000) - 500);
        y[i] = (T)(i % 37) * (T)0.25;
    }
    T *dx = NULL, *dy = NULL;
    CHECK(cudaMalloc(&dx, (size_t)n * sizeof(T)));
    CHECK(cudaMalloc(&dy, (size_t)n * sizeof(T)));
    CHECK(cudaMemcpy(dx, x, (size_t)n * sizeof(T), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dy, y, (size_t)n * sizeof(T), cudaMemcpyHostToDevice));
    saxpy<T><<<grid, block>>>(n, a, dx, dy);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    // A second pass on the result: y = a*x + (a*x + y).
    saxpy<T><<<grid, block>>>(n, a, dx, dy);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(out, dy, (size_t)n * sizeof(T), cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; i++) {
        const T want = a * x[i] + (a * x[i] + y[i]);
        EXPECT(out[i] == want, "saxpy<%s> n=%d grid=%d block=%d: y[%d] = %.17g, expected %.17g",
               TypeName<T>::get(), n, grid, block, i, (double)out[i], (double)want);
    }
    printf("saxpy<%s> n=%d grid=%d block=%d: ok\n", TypeName<T>::get(), n, grid, block);
    CHECK(cudaFree(dx));
    CHECK(cudaFree(dy));
    free(x);
    free(y);
    free(out);
}

int main() {
    CHECK(cudaSetDevice(0));
    const struct {
        int n, grid, block;
    } cases[] = {
        {1, 1, 32},
        {4099, 1, 64},
        {4099, 4, 128},
        {100003, 7, 96},
        {100003, 32, 256},
        {31, 2, 1024},
    };
    for (const auto &c : cases) {
        run<float>(c.n, c.grid, c.block, 2.5f);
        run<double>(c.n, c.grid, c.block, -1.25);
    }
    printf("PASS\n");
    return 0;
}
