// Page-locked host memory: cudaMallocHost, cudaHostAlloc with every flag,
// cudaHostGetDevicePointer on mapped memory, 32 MB copies from and to pinned
// buffers, cudaHostRegister / cudaHostUnregister on malloc'd memory and their
// error cases, cudaFreeHost. No kernels.
//
// Self-checking: prints informative lines, `FAIL: <reason>` and exit status 1
// on any mismatch, and `PASS` as the last line on success.

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "check.h"

// Runs `call`, prints `<call> -> <error name>` and checks the result.
static const size_t BIG = 32u << 20;

static void fill(unsigned char *p, size_t n, unsigned seed) {
    unsigned x = seed * 2654435761u + 7u;
    for (size_t i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        p[i] = (unsigned char)(x >> 16);
    }
}

static void compare(const unsigned char *got, const unsigned char *want, size_t n,
                    const char *what) {
    if (memcmp(got, want, n) == 0) return;
    size_t i = 0;
    while (i < n && got[i] == want[i]) i++;
    printf("FAIL: %s: byte %zu is 0x%02x, expected 0x%02x\n", what, i, got[i], want[i]);
    fflush(stdout);
    exit(1);
}

// host `src` -> device -> device -> host `dst`, then compare.
static void round_trip(unsigned char *src, unsigned char *dst, size_t n, unsigned seed,
                       const char *what) {
    unsigned char *d_a = NULL, *d_b = NULL;
    CHECK(cudaMalloc((void **)&d_a, n));
    CHECK(cudaMalloc((void **)&d_b, n));
    fill(src, n, seed);
    memset(dst, 0, n);
    CHECK(cudaMemcpy(d_a, src, n, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_b, d_a, n, cudaMemcpyDeviceToDevice));
    CHECK(cudaMemcpy(dst, d_b, n, cudaMemcpyDeviceToHost));
    compare(dst, src, n, what);
    // The same with cudaMemcpyDefault, so the runtime must tell pinned host
    // memory from device memory by itself.
    fill(src, n, seed + 1);
    memset(dst, 0, n);
    CHECK(cudaMemcpy(d_a, src, n, cudaMemcpyDefault));
    CHECK(cudaMemcpy(dst, d_a, n, cudaMemcpyDefault));
    compare(dst, src, n, what);
    CHECK(cudaFree(d_a));
    CHECK(cudaFree(d_b));
}

int main() {
    int count = 0;
    CHECK(cudaGetDeviceCount(&count));
    EXPECT(count >= 1, "no CUDA device");
    CHECK(cudaSetDevice(0));
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    printf("unifiedAddressing: %d\n", prop.unifiedAddressing);
    printf("canMapHostMemory: %d\n", prop.canMapHostMemory);

    // cudaMallocHost: pinned to pinned through the device, and pinned to pageable.
    unsigned char *pin_a = NULL, *pin_b = NULL;
    CHECK(cudaMallocHost((void **)&pin_a, BIG));
    CHECK(cudaMallocHost((void **)&pin_b, BIG));
    EXPECT(pin_a != NULL && pin_b != NULL, "cudaMallocHost returned NULL");
    round_trip(pin_a, pin_b, BIG, 1, "cudaMallocHost 32 MB pinned -> pinned");
    unsigned char *pageable = (unsigned char *)malloc(BIG);
    EXPECT(pageable != NULL, "malloc(%zu) failed", BIG);
    round_trip(pin_a, pageable, BIG, 3, "cudaMallocHost 32 MB pinned -> pageable");
    round_trip(pageable, pin_b, BIG, 5, "cudaMallocHost 32 MB pageable -> pinned");
    printf("cudaMallocHost %zu bytes: copies ok\n", BIG);

    // Host to host between pinned buffers.
    fill(pin_a, BIG, 9);
    CHECK(cudaMemcpy(pin_b, pin_a, BIG, cudaMemcpyHostToHost));
    compare(pin_b, pin_a, BIG, "pinned host to host");
    printf("cudaMemcpy pinned host to host: ok\n");

    // cudaHostAlloc with each flag.
    struct {
        unsigned int flags;
        const char *name;
    } kinds[] = {
        {cudaHostAllocDefault, "cudaHostAllocDefault"},
        {cudaHostAllocPortable, "cudaHostAllocPortable"},
        {cudaHostAllocMapped, "cudaHostAllocMapped"},
        {cudaHostAllocWriteCombined, "cudaHostAllocWriteCombined"},
        {cudaHostAllocPortable | cudaHostAllocMapped, "cudaHostAllocPortable|cudaHostAllocMapped"},
    };
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        unsigned char *h = NULL;
        CHECK(cudaHostAlloc((void **)&h, BIG, kinds[k].flags));
        EXPECT(h != NULL, "cudaHostAlloc(%s) returned NULL", kinds[k].name);
        round_trip(h, pin_b, BIG, 20 + (unsigned)k * 2, kinds[k].name);
        round_trip(pin_a, h, BIG, 40 + (unsigned)k * 2, kinds[k].name);
        if (kinds[k].flags & cudaHostAllocMapped) {
            void *dev = NULL;
            CHECK(cudaHostGetDevicePointer(&dev, h, 0));
            printf("%s: host %p device %p\n", kinds[k].name, (void *)h, dev);
            EXPECT(dev != NULL, "cudaHostGetDevicePointer returned NULL");
            if (prop.unifiedAddressing) {
                EXPECT(dev == (void *)h,
                       "with unified addressing the device pointer %p must equal the host "
                       "pointer %p",
                       dev, (void *)h);
            }
        }
        CHECK(cudaFreeHost(h));
        printf("%s %zu bytes: ok\n", kinds[k].name, BIG);
    }

    // cudaHostRegister on malloc'd memory, copies through it, and the error cases.
    const size_t reg_size = BIG + 4096;
    unsigned char *reg = (unsigned char *)malloc(reg_size);
    EXPECT(reg != NULL, "malloc(%zu) failed", reg_size);
    CHECK(cudaHostRegister(reg, reg_size, cudaHostRegisterDefault));
    round_trip(reg, pin_b, BIG, 60, "registered -> pinned");
    round_trip(pin_a, reg + 4096, BIG, 62, "pinned -> registered (+4096)");
    round_trip(reg + 1, pageable, BIG, 64, "registered (+1) -> pageable");
    printf("cudaHostRegister %zu bytes: copies ok\n", reg_size);
    EXPECT_ERR(cudaHostRegister(reg, reg_size, cudaHostRegisterDefault),
               cudaErrorHostMemoryAlreadyRegistered);
    CHECK(cudaHostUnregister(reg));
    EXPECT_ERR(cudaHostUnregister(reg), cudaErrorHostMemoryNotRegistered);
    EXPECT_ERR(cudaHostUnregister(pageable), cudaErrorHostMemoryNotRegistered);
    // Registering again after unregistering works, and copies still do.
    CHECK(cudaHostRegister(reg, reg_size, cudaHostRegisterPortable));
    round_trip(reg, pin_b, BIG, 66, "re-registered -> pinned");
    CHECK(cudaHostUnregister(reg));
    // Plain copies from the buffer once it is no longer registered.
    round_trip(reg, pin_b, BIG, 68, "unregistered -> pinned");
    printf("cudaHostRegister/cudaHostUnregister round trips: ok\n");
    free(reg);

    CHECK(cudaFreeHost(pin_a));
    CHECK(cudaFreeHost(pin_b));
    free(pageable);
    printf("cudaFreeHost: ok\n");

    CHECK(cudaDeviceSynchronize());
    CHECK(cudaGetLastError());
    printf("PASS\n");
    return 0;
}
