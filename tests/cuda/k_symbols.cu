// Module-scope device variables: `__constant__` arrays and `__device__`
// variables, with and without initialisers, used from the host through
// cudaMemcpyToSymbol / cudaMemcpyFromSymbol (with offsets, host and device
// buffers), their *Async forms on stream 0 followed by cudaDeviceSynchronize,
// cudaGetSymbolAddress (then plain cudaMemcpy through the address) and
// cudaGetSymbolSize; kernels read the constants and update the variables.
//
// Prints informative lines such as `cudaGetSymbolSize(c_table) = 1024` and
// `<step>: ok`. Self-checking: `FAIL: <reason>` and exit status 1 on any
// mismatch, `PASS` as the last line on success.

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "check.h"

__constant__ float c_coeffs[16];
__constant__ int c_table[256];
__constant__ float c_init = 2.5f;
__constant__ short c_shorts[3] = {-1, 2, -3};
__device__ int d_init[4] = {1, 2, 3, 4};
__device__ int d_counter;
__device__ float d_array[64];
__device__ unsigned long long d_ull;

// A table of pointers to other device variables: its initialiser holds
// addresses the loader must fill in.
__device__ int d_first = 11;
__device__ int d_second = 22;
__device__ int *d_table[2] = {&d_first, &d_second};

__global__ void k_follow_table(int *out) { out[threadIdx.x] = *d_table[threadIdx.x]; }

__global__ void k_use_constants(const float *x, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    out[i] = c_coeffs[i % 16] * x[i] + (float)c_table[i % 256] + c_init + c_shorts[i % 3] +
             (float)d_init[i % 4];
    atomicAdd(&d_counter, 1);
}

__global__ void k_scale_array(float factor) {
    int i = threadIdx.x;
    if (i < 64) d_array[i] = d_array[i] * factor + (float)i;
}

__global__ void k_update_ull(unsigned long long *seen) {
    *seen = d_ull;
    d_ull = d_ull * 3 + 1;
}

static void symbol_size(const char *name, size_t size, size_t want) {
    printf("cudaGetSymbolSize(%s) = %zu\n", name, size);
    EXPECT(size == want, "cudaGetSymbolSize(%s) = %zu, expected %zu", name, size, want);
}

int main() {
    CHECK(cudaSetDevice(0));

    // Sizes.
    size_t size = 0;
    CHECK(cudaGetSymbolSize(&size, c_coeffs));
    symbol_size("c_coeffs", size, 16 * sizeof(float));
    CHECK(cudaGetSymbolSize(&size, c_table));
    symbol_size("c_table", size, 256 * sizeof(int));
    CHECK(cudaGetSymbolSize(&size, c_shorts));
    symbol_size("c_shorts", size, 3 * sizeof(short));
    CHECK(cudaGetSymbolSize(&size, d_counter));
    symbol_size("d_counter", size, sizeof(int));
    CHECK(cudaGetSymbolSize(&size, d_array));
    symbol_size("d_array", size, 64 * sizeof(float));
    CHECK(cudaGetSymbolSize(&size, d_ull));
    symbol_size("d_ull", size, sizeof(unsigned long long));

    // Initialisers are part of the loaded image.
    {
        float ci = 0;
        short cs[3] = {0, 0, 0};
        int di[4] = {0, 0, 0, 0};
        CHECK(cudaMemcpyFromSymbol(&ci, c_init, sizeof ci));
        CHECK(cudaMemcpyFromSymbol(cs, c_shorts, sizeof cs));
        CHECK(cudaMemcpyFromSymbol(di, d_init, sizeof di));
        EXPECT(ci == 2.5f, "c_init = %g, expected 2.5", ci);
        EXPECT(cs[0] == -1 && cs[1] == 2 && cs[2] == -3, "c_shorts = {%d, %d, %d}", cs[0], cs[1],
               cs[2]);
        EXPECT(di[0] == 1 && di[1] == 2 && di[2] == 3 && di[3] == 4, "d_init = {%d, %d, %d, %d}",
               di[0], di[1], di[2], di[3]);
        int third = 0;
        CHECK(cudaMemcpyFromSymbol(&third, d_init, sizeof third, 2 * sizeof(int)));
        EXPECT(third == 3, "d_init[2] read at an offset = %d, expected 3", third);
        printf("initialisers: ok\n");
    }

    // Constants written from the host, the table in two halves at offsets.
    float coeffs[16];
    int table[256];
    for (int i = 0; i < 16; i++) coeffs[i] = (float)(i - 8) * 0.5f;
    for (int i = 0; i < 256; i++) table[i] = (i * 37) % 101 - 50;
    CHECK(cudaMemcpyToSymbol(c_coeffs, coeffs, sizeof coeffs));
    CHECK(cudaMemcpyToSymbol(c_table, table, 128 * sizeof(int)));
    CHECK(cudaMemcpyToSymbol(c_table, table + 128, 128 * sizeof(int), 128 * sizeof(int),
                             cudaMemcpyHostToDevice));
    {
        int part[10];
        CHECK(cudaMemcpyFromSymbol(part, c_table, sizeof part, 123 * sizeof(int),
                                   cudaMemcpyDeviceToHost));
        for (int i = 0; i < 10; i++)
            EXPECT(part[i] == table[123 + i], "c_table[%d] read at an offset = %d, expected %d",
                   123 + i, part[i], table[123 + i]);
        printf("cudaMemcpyToSymbol/FromSymbol with offsets: ok\n");
    }

    // Kernels read the constants and count in a device variable.
    {
        const int n = 1000;
        const int start = 5;
        CHECK(cudaMemcpyToSymbol(d_counter, &start, sizeof start));
        float x[n], out[n];
        for (int i = 0; i < n; i++) x[i] = (float)(i % 50) - 20.0f;
        float *dx = NULL, *dout = NULL;
        CHECK(cudaMalloc(&dx, sizeof x));
        CHECK(cudaMalloc(&dout, sizeof out));
        CHECK(cudaMemcpy(dx, x, sizeof x, cudaMemcpyHostToDevice));
        k_use_constants<<<(n + 127) / 128, 128>>>(dx, dout, n);
        CHECK(cudaGetLastError());
        CHECK(cudaDeviceSynchronize());
        CHECK(cudaMemcpy(out, dout, sizeof out, cudaMemcpyDeviceToHost));
        const short shorts[3] = {-1, 2, -3};
        for (int i = 0; i < n; i++) {
            const float want = coeffs[i % 16] * x[i] + (float)table[i % 256] + 2.5f +
                               shorts[i % 3] + (float)(i % 4 + 1);
            EXPECT(out[i] == want, "k_use_constants: out[%d] = %g, expected %g", i, out[i], want);
        }
        int counter = 0;
        CHECK(cudaMemcpyFromSymbol(&counter, d_counter, sizeof counter));
        EXPECT(counter == start + n, "d_counter = %d, expected %d", counter, start + n);
        printf("kernel reads __constant__ and updates __device__: ok (d_counter = %d)\n", counter);
        CHECK(cudaFree(dx));
        CHECK(cudaFree(dout));
    }

    // d_array written in three ways: synchronous, asynchronous on stream 0, and
    // through its address; scaled by a kernel; read back asynchronously and
    // through its address.
    {
        float init[64], back[64], back2[64];
        for (int i = 0; i < 64; i++) init[i] = (float)i * 1.5f - 7.0f;
        float *addr = NULL;
        CHECK(cudaGetSymbolAddress((void **)&addr, d_array));
        EXPECT(addr != NULL, "cudaGetSymbolAddress(d_array) gave NULL");
        printf("cudaGetSymbolAddress(d_array): ok\n");
        CHECK(cudaMemcpyToSymbol(d_array, init, 16 * sizeof(float)));
        CHECK(cudaMemcpyToSymbolAsync(d_array, init + 16, 32 * sizeof(float),
                                      16 * sizeof(float), cudaMemcpyHostToDevice, 0));
        CHECK(cudaMemcpy(addr + 48, init + 48, 16 * sizeof(float), cudaMemcpyHostToDevice));
        CHECK(cudaDeviceSynchronize());
        k_scale_array<<<1, 64>>>(2.0f);
        CHECK(cudaGetLastError());
        memset(back, 0, sizeof back);
        CHECK(cudaMemcpyFromSymbolAsync(back, d_array, sizeof back, 0, cudaMemcpyDeviceToHost, 0));
        CHECK(cudaDeviceSynchronize());
        CHECK(cudaMemcpy(back2, addr, sizeof back2, cudaMemcpyDeviceToHost));
        for (int i = 0; i < 64; i++) {
            const float want = init[i] * 2.0f + (float)i;
            EXPECT(back[i] == want, "d_array[%d] = %g, expected %g", i, back[i], want);
            EXPECT(back2[i] == want, "d_array[%d] through its address = %g, expected %g", i,
                   back2[i], want);
        }
        float tail[8];
        CHECK(cudaMemcpyFromSymbolAsync(tail, d_array, sizeof tail, 56 * sizeof(float),
                                        cudaMemcpyDeviceToHost, 0));
        CHECK(cudaDeviceSynchronize());
        for (int i = 0; i < 8; i++)
            EXPECT(tail[i] == back[56 + i], "d_array[%d] read asynchronously at an offset = %g",
                   56 + i, tail[i]);
        printf("cudaMemcpyToSymbolAsync/FromSymbolAsync on stream 0: ok\n");
        printf("cudaMemcpy through the symbol address: ok\n");
    }

    // Device-to-device copies to and from symbols.
    {
        const unsigned long long v = 0x0123456789ABCDEFull;
        unsigned long long *dbuf = NULL, *dseen = NULL;
        CHECK(cudaMalloc(&dbuf, 2 * sizeof v));
        CHECK(cudaMalloc(&dseen, sizeof v));
        CHECK(cudaMemcpy(dbuf, &v, sizeof v, cudaMemcpyHostToDevice));
        CHECK(cudaMemcpyToSymbol(d_ull, dbuf, sizeof v, 0, cudaMemcpyDeviceToDevice));
        k_update_ull<<<1, 1>>>(dseen);
        CHECK(cudaGetLastError());
        CHECK(cudaDeviceSynchronize());
        CHECK(cudaMemcpyFromSymbol(dbuf + 1, d_ull, sizeof v, 0, cudaMemcpyDeviceToDevice));
        unsigned long long seen = 0, after[2] = {0, 0};
        CHECK(cudaMemcpy(&seen, dseen, sizeof seen, cudaMemcpyDeviceToHost));
        CHECK(cudaMemcpy(after, dbuf, sizeof after, cudaMemcpyDeviceToHost));
        EXPECT(seen == v, "kernel saw d_ull = 0x%llx, expected 0x%llx", seen, v);
        EXPECT(after[1] == v * 3 + 1, "d_ull after the kernel = 0x%llx, expected 0x%llx",
               after[1], v * 3 + 1);
        printf("device-to-device symbol copies: ok\n");
        CHECK(cudaFree(dbuf));
        CHECK(cudaFree(dseen));
    }

    // Errors.
    {
        float buf[16] = {0};
        EXPECT_ERR_AS("cudaMemcpyToSymbol(past the end of c_coeffs)",
                      cudaMemcpyToSymbol(c_coeffs, buf, sizeof buf, sizeof(float)),
                      cudaErrorInvalidValue);
        static int not_a_symbol;
        void *p = NULL;
        EXPECT_ERR_AS("cudaGetSymbolAddress(host variable)",
                      cudaGetSymbolAddress(&p, not_a_symbol), cudaErrorInvalidSymbol);
        // The constants are intact after the failed copy.
        float check[16];
        CHECK(cudaMemcpyFromSymbol(check, c_coeffs, sizeof check));
        EXPECT(memcmp(check, coeffs, sizeof check) == 0, "c_coeffs changed by a failed copy");
        printf("symbol errors: ok\n");
    }

    {
        int *dout = NULL;
        CHECK(cudaMalloc(&dout, 2 * sizeof(int)));
        k_follow_table<<<1, 2>>>(dout);
        CHECK(cudaGetLastError());
        int out[2];
        CHECK(cudaMemcpy(out, dout, sizeof out, cudaMemcpyDeviceToHost));
        EXPECT(out[0] == 11 && out[1] == 22, "pointer table: got %d %d", out[0], out[1]);
        CHECK(cudaFree(dout));
        printf("pointer table initialiser: ok\n");
    }

    printf("PASS\n");
    return 0;
}
