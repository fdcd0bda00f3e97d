// Vector addition: one thread per element, on sizes that are and are not
// multiples of the block size, launched with `<<<>>>` and with
// cudaLaunchKernel called directly with an array of argument pointers.
// Elements past n are checked to be left alone (a guard region filled with a
// byte pattern before the launch).
//
// Prints one line per case:
//   `vector_add n=<n> block=<b> grid=<g> <<<>>>: ok`
//   `vector_add n=<n> block=<b> grid=<g> cudaLaunchKernel: ok`
//   `vector_add_int n=<n> cudaLaunchKernel: ok`
// Self-checking: `FAIL: <reason>` and exit status 1 on any mismatch, `PASS` as
// the last line on success.

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "check.h"

// Elements after the n used ones, which the kernel must not touch.
static const int GUARD = 67;
static const unsigned char GUARD_BYTE = 0xA5;

__global__ void vector_add(const float *a, const float *b, float *c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

// Different parameter types and order: a scale factor, and the count first.
__global__ void vector_add_int(int n, const int *a, int scale, const int *b, int *c) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] * scale + b[i];
}

enum Mode { CHEVRONS, LAUNCH_KERNEL };

static void check_guard(const unsigned char *bytes, size_t from, size_t to, const char *what,
                        int n) {
    for (size_t i = from; i < to; i++)
        EXPECT(bytes[i] == GUARD_BYTE, "%s n=%d: byte %zu past the end was overwritten (0x%02x)",
               what, n, i - from, bytes[i]);
}

static void run_float(int n, int block, Mode mode) {
    const size_t total = (size_t)n + GUARD;
    float *a = (float *)malloc(total * sizeof(float));
    float *b = (float *)malloc(total * sizeof(float));
    float *c = (float *)malloc(total * sizeof(float));
    EXPECT(a && b && c, "host malloc failed");
    for (int i = 0; i < n; i++) {
        a[i] = (float)(i % 1000) * 0.5f - 17.25f;
        b[i] = (float)((i * 7) % 313) / 8.0f + 1.0f / 3.0f;
    }
    float *da = NULL, *db = NULL, *dc = NULL;
    CHECK(cudaMalloc(&da, total * sizeof(float)));
    CHECK(cudaMalloc(&db, total * sizeof(float)));
    CHECK(cudaMalloc(&dc, total * sizeof(float)));
    CHECK(cudaMemcpy(da, a, (size_t)n * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(db, b, (size_t)n * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemset(dc, GUARD_BYTE, total * sizeof(float)));

    const int grid = (n + block - 1) / block;
    const char *how = mode == CHEVRONS ? "<<<>>>" : "cudaLaunchKernel";
    if (mode == CHEVRONS) {
        vector_add<<<grid, block>>>(da, db, dc, n);
    } else {
        const float *pa = da, *pb = db;
        float *pc = dc;
        int count = n;
        void *args[] = {&pa, &pb, &pc, &count};
        CHECK(cudaLaunchKernel((const void *)vector_add, dim3(grid), dim3(block), args, 0, 0));
    }
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(c, dc, total * sizeof(float), cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; i++) {
        const float want = a[i] + b[i];
        EXPECT(c[i] == want, "vector_add n=%d %s: c[%d] = %.9g, expected %.9g", n, how, i, c[i],
               want);
    }
    check_guard((const unsigned char *)c, (size_t)n * sizeof(float), total * sizeof(float),
                "vector_add", n);
    printf("vector_add n=%d block=%d grid=%d %s: ok\n", n, block, grid, how);
    CHECK(cudaFree(da));
    CHECK(cudaFree(db));
    CHECK(cudaFree(dc));
    free(a);
    free(b);
    free(c);
}

static void run_int(int n) {
    const size_t total = (size_t)n + GUARD;
    int *a = (int *)malloc(total * sizeof(int));
    int *b = (int *)malloc(total * sizeof(int));
    int *c = (int *)malloc(total * sizeof(int));
    EXPECT(a && b && c, "host malloc failed");
    for (int i = 0; i < n; i++) {
        a[i] = i * 3 - 1000;
        b[i] = -(i % 77) * 11;
    }
    const int scale = -7;
    int *da = NULL, *db = NULL, *dc = NULL;
    CHECK(cudaMalloc(&da, total * sizeof(int)));
    CHECK(cudaMalloc(&db, total * sizeof(int)));
    CHECK(cudaMalloc(&dc, total * sizeof(int)));
    CHECK(cudaMemcpy(da, a, (size_t)n * sizeof(int), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(db, b, (size_t)n * sizeof(int), cudaMemcpyHostToDevice));
    CHECK(cudaMemset(dc, GUARD_BYTE, total * sizeof(int)));

    const int block = 96;
    const int grid = (n + block - 1) / block;
    int count = n, s = scale;
    const int *pa = da, *pb = db;
    int *pc = dc;
    void *args[] = {&count, &pa, &s, &pb, &pc};
    CHECK(cudaLaunchKernel((const void *)vector_add_int, dim3(grid), dim3(block), args, 0, 0));
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(c, dc, total * sizeof(int), cudaMemcpyDeviceToHost));
    for (int i = 0; i < n; i++) {
        const int want = a[i] * scale + b[i];
        EXPECT(c[i] == want, "vector_add_int n=%d: c[%d] = %d, expected %d", n, i, c[i], want);
    }
    check_guard((const unsigned char *)c, (size_t)n * sizeof(int), total * sizeof(int),
                "vector_add_int", n);
    printf("vector_add_int n=%d cudaLaunchKernel: ok\n", n);
    CHECK(cudaFree(da));
    CHECK(cudaFree(db));
    CHECK(cudaFree(dc));
    free(a);
    free(b);
    free(c);
}

int main() {
    CHECK(cudaSetDevice(0));
    const int sizes[] = {1, 255, 256, 257, 1000, 4097, 65539};
    const int blocks[] = {256, 128, 1024, 32};
    for (int s = 0; s < (int)(sizeof(sizes) / sizeof(sizes[0])); s++) {
        for (int b = 0; b < (int)(sizeof(blocks) / sizeof(blocks[0])); b++) {
            run_float(sizes[s], blocks[b], CHEVRONS);
            run_float(sizes[s], blocks[b], LAUNCH_KERNEL);
        }
    }
    run_int(1);
    run_int(95);
    run_int(10001);
    printf("PASS\n");
    return 0;
}
