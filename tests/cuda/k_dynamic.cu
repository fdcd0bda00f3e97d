// Dynamic parallelism, built with -rdc=true: a quicksort whose kernels
// launch the kernels for their two halves on device-created streams (the
// shape of NVIDIA's cdpSimpleQuicksort), a tail launch that sees its
// parent's and siblings' work, and device printf from nested grids.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "check.h"

#define MAX_DEPTH 16
#define INSERTION_SORT 32

__device__ void selection_sort(unsigned *data, int left, int right) {
    for (int i = left; i <= right; ++i) {
        unsigned min_val = data[i];
        int min_idx = i;
        for (int j = i + 1; j <= right; ++j)
            if (data[j] < min_val) {
                min_idx = j;
                min_val = data[j];
            }
        if (i != min_idx) {
            data[min_idx] = data[i];
            data[i] = min_val;
        }
    }
}

__global__ void quicksort(unsigned *data, int left, int right, int depth) {
    if (depth >= MAX_DEPTH || right - left <= INSERTION_SORT) {
        selection_sort(data, left, right);
        return;
    }
    unsigned *lptr = data + left, *rptr = data + right;
    unsigned pivot = data[(left + right) / 2];
    while (lptr <= rptr) {
        unsigned lval = *lptr, rval = *rptr;
        while (lval < pivot) lval = *++lptr;
        while (rval > pivot) rval = *--rptr;
        if (lptr <= rptr) {
            *lptr++ = rval;
            *rptr-- = lval;
        }
    }
    int nright = rptr - data, nleft = lptr - data;
    if (left < nright) {
        cudaStream_t s;
        cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
        quicksort<<<1, 1, 0, s>>>(data, left, nright, depth + 1);
        cudaStreamDestroy(s);
    }
    if (nleft < right) {
        cudaStream_t s1;
        cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking);
        quicksort<<<1, 1, 0, s1>>>(data, nleft, right, depth + 1);
        cudaStreamDestroy(s1);
    }
}

__global__ void add(int *a, int n, int v) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) a[i] += v;
}

__global__ void check_sum(const int *a, int n, int *out) {
    int s = 0;
    for (int i = 0; i < n; ++i) s += a[i];
    *out = s;
}

// Children add 1 and 2 to every element; the tail launch runs after them
// and the parent, and sums what they left.
__global__ void parent(int *a, int n, int *sum) {
    if (threadIdx.x == 0 && blockIdx.x == 0) {
        add<<<(n + 63) / 64, 64>>>(a, n, 1);
        add<<<(n + 63) / 64, 64, 0, cudaStreamFireAndForget>>>(a, n, 2);
        check_sum<<<1, 1, 0, cudaStreamTailLaunch>>>(a, n, sum);
    }
}

__global__ void greet(int depth) {
    printf("depth %d, block %d\n", depth, blockIdx.x);
    if (depth < 2 && blockIdx.x == 0) greet<<<2, 1>>>(depth + 1);
}

int main() {
    const int n = 4000;
    std::vector<unsigned> h(n);
    unsigned s = 12345;
    for (auto &v : h) v = (s = s * 1103515245u + 12345u) >> 8;
    unsigned *d;
    CHECK(cudaMalloc(&d, n * sizeof(unsigned)));
    CHECK(cudaMemcpy(d, h.data(), n * sizeof(unsigned), cudaMemcpyHostToDevice));
    quicksort<<<1, 1>>>(d, 0, n - 1, 0);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    std::vector<unsigned> got(n);
    CHECK(cudaMemcpy(got.data(), d, n * sizeof(unsigned), cudaMemcpyDeviceToHost));
    std::sort(h.begin(), h.end());
    EXPECT(got == h, "quicksort result");
    printf("device-launched quicksort of %d elements: ok\n", n);

    const int m = 300;
    int *a, *sum;
    CHECK(cudaMalloc(&a, m * sizeof(int)));
    CHECK(cudaMalloc(&sum, sizeof(int)));
    CHECK(cudaMemset(a, 0, m * sizeof(int)));
    parent<<<2, 32>>>(a, m, sum);
    int hs = 0;
    CHECK(cudaMemcpy(&hs, sum, sizeof hs, cudaMemcpyDeviceToHost));
    EXPECT(hs == 3 * m, "tail launch saw %d, want %d", hs, 3 * m);
    printf("tail launch after its siblings: ok\n");

    greet<<<1, 1>>>(0);
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaFree(d));
    CHECK(cudaFree(a));
    CHECK(cudaFree(sum));
    printf("PASS\n");
    return 0;
}
