// Virtual memory management and stream memory operations through the driver
// API: physical allocations (cuMemCreate) mapped at reserved addresses
// (cuMemAddressReserve, cuMemMap), two mappings of one allocation aliasing,
// access granted with cuMemSetAccess (and refused before), copies, memsets
// and a kernel on mapped memory, handles retained from an address, released
// while mapped, exported as a POSIX file descriptor and imported again; then
// cuStreamWriteValue32/64, cuStreamWaitValue32/64 with every comparison, and
// cuStreamBatchMemOp.
//
// Usage: d_vmm KERNELS.ptx [timeout]
// With `timeout` (run against a server with a short --op-timeout) it also
// checks that a wait nothing can satisfy ends with CUDA_ERROR_TIMEOUT.
//
// Prints one line per case; `FAIL: <reason>` and exit status 1 on any error
// or mismatch, `PASS` as the last line on success.

#include <cuda.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "drv_check.h"

static int attribute(CUdevice dev, CUdevice_attribute attr) {
    int v = -1;
    CU_CHECK(cuDeviceGetAttribute(&v, attr, dev));
    return v;
}

static void check_attributes(CUdevice dev) {
    EXPECT(attribute(dev, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED) == 1, "no VMM");
    EXPECT(attribute(dev, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED) == 1,
           "no POSIX fd handles");
    EXPECT(attribute(dev, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_HANDLE_SUPPORTED) == 0, "win32");
    EXPECT(attribute(dev, CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS) == 1, "64-bit memops");
    EXPECT(attribute(dev, CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR) == 1, "NOR waits");
    EXPECT(attribute(dev, CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_MEM_OPS_V1) == 1, "memops v1");
    printf("attributes: ok\n");
}

static CUmemAllocationProp device_prop(CUdevice dev, int shareable) {
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = dev;
    prop.requestedHandleTypes =
        shareable ? CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR : CU_MEM_HANDLE_TYPE_NONE;
    return prop;
}

static CUmemAccessDesc access_desc(CUdevice dev, CUmemAccess_flags flags) {
    CUmemAccessDesc d;
    memset(&d, 0, sizeof d);
    d.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    d.location.id = dev;
    d.flags = flags;
    return d;
}

static unsigned long long access_of(CUdevice dev, CUdeviceptr p) {
    CUmemLocation loc = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = dev};
    unsigned long long flags = 99;
    CU_CHECK(cuMemGetAccess(&flags, &loc, p));
    return flags;
}

#define N 4096

static void vmm(CUdevice dev, CUmodule mod) {
    CUmemAllocationProp prop = device_prop(dev, 0);
    size_t gran = 0, rec = 0;
    CU_CHECK(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    CU_CHECK(cuMemGetAllocationGranularity(&rec, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
    EXPECT(gran > 0 && rec % gran == 0, "granularity %zu, recommended %zu", gran, rec);
    CUmemAllocationProp bad = prop;
    bad.location.type = CU_MEM_LOCATION_TYPE_INVALID;
    CU_EXPECT_ERR_AS("cuMemGetAllocationGranularity(bad location)",
                     cuMemGetAllocationGranularity(&gran, &bad, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
                     CUDA_ERROR_INVALID_VALUE);
    printf("granularity: %zu\n", gran);

    CUmemGenericAllocationHandle h = 0, h2 = 0;
    CU_EXPECT_ERR_AS("cuMemCreate(size not a multiple of the granularity)",
                     cuMemCreate(&h, gran + 1, &prop, 0), CUDA_ERROR_INVALID_VALUE);
    CU_CHECK(cuMemCreate(&h, 2 * gran, &prop, 0));
    CUmemAllocationProp got;
    memset(&got, 0xff, sizeof got);
    CU_CHECK(cuMemGetAllocationPropertiesFromHandle(&got, h));
    EXPECT(got.type == CU_MEM_ALLOCATION_TYPE_PINNED && got.location.type == CU_MEM_LOCATION_TYPE_DEVICE &&
               got.location.id == dev && got.requestedHandleTypes == CU_MEM_HANDLE_TYPE_NONE,
           "properties from the handle differ");

    CUdeviceptr va = 0;
    CU_CHECK(cuMemAddressReserve(&va, 4 * gran, 0, 0, 0));
    EXPECT(va != 0 && va % gran == 0, "reservation at %llx", (unsigned long long)va);
    // One allocation, mapped twice: the two ranges alias.
    CU_CHECK(cuMemMap(va, 2 * gran, 0, h, 0));
    CU_CHECK(cuMemMap(va + 2 * gran, 2 * gran, 0, h, 0));
    CU_EXPECT_ERR_AS("cuMemMap(over a mapping)", cuMemMap(va + gran, 2 * gran, 0, h, 0),
                     CUDA_ERROR_INVALID_VALUE);
    EXPECT(access_of(dev, va) == CU_MEM_ACCESS_FLAGS_PROT_NONE, "access before cuMemSetAccess");
    static int host[N], back[N];
    for (int i = 0; i < N; i++) host[i] = i * 3;
    CU_EXPECT_ERR_AS("cuMemcpyHtoD(before cuMemSetAccess)", cuMemcpyHtoD(va, host, sizeof host),
                     CUDA_ERROR_INVALID_VALUE);
    CUmemAccessDesc rw = access_desc(dev, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
    CU_CHECK(cuMemSetAccess(va, 4 * gran, &rw, 1));
    EXPECT(access_of(dev, va + 3 * gran) == CU_MEM_ACCESS_FLAGS_PROT_READWRITE, "access after");

    CU_CHECK(cuMemcpyHtoD(va + 100 * sizeof(int), host, sizeof host));
    CU_CHECK(cuMemcpyDtoH(back, va + 2 * gran + 100 * sizeof(int), sizeof back));
    EXPECT(memcmp(host, back, sizeof host) == 0, "the second mapping does not alias the first");
    printf("two mappings alias: ok\n");

    // A kernel on the first mapping, read back through the second.
    CUfunction f;
    CU_CHECK(cuModuleGetFunction(&f, mod, "mul_add_index"));
    CUdeviceptr out = va + gran - 1024 * sizeof(int);  // ends where the mapping ends
    int n = 1024, factor = 2;
    CU_CHECK(cuMemcpyHtoD(out, host, n * sizeof(int)));
    void *params[] = {&out, &n, &factor};
    CU_CHECK(cuLaunchKernel(f, 4, 1, 1, 256, 1, 1, 0, NULL, params, NULL));
    CU_CHECK(cuCtxSynchronize());
    CU_CHECK(cuMemcpyDtoH(back, out + 2 * gran, n * sizeof(int)));
    for (int i = 0; i < n; i++) EXPECT(back[i] == host[i] * 2 + i, "kernel: [%d] = %d", i, back[i]);
    CU_CHECK(cuMemsetD32(va + 2 * gran + 64, 0xdeadbeefu, 4));
    CU_CHECK(cuMemcpyDtoH(back, va + 64, 4 * sizeof(int)));
    for (int i = 0; i < 4; i++) EXPECT((unsigned)back[i] == 0xdeadbeefu, "memset via alias");
    CUdeviceptr base = 0;
    size_t size = 0;
    CU_CHECK(cuMemGetAddressRange(&base, &size, va + 2 * gran + 5));
    EXPECT(base == va + 2 * gran && size == 2 * gran, "address range of a mapping");
    printf("kernel, memset on mapped memory: ok\n");

    // The two mappings are adjacent: copies and memsets cross from one to
    // the other as through contiguous memory.
    {
        unsigned char pattern[64], got[64];
        for (int i = 0; i < 64; i++) pattern[i] = (unsigned char)(i * 7 + 1);
        CUdeviceptr across = va + 2 * gran - 32;
        CU_CHECK(cuMemcpyHtoD(across, pattern, sizeof pattern));
        memset(got, 0, sizeof got);
        CU_CHECK(cuMemcpyDtoH(got, across, sizeof got));
        EXPECT(memcmp(got, pattern, sizeof got) == 0, "copy across two mappings");
        // The second mapping's first bytes are the allocation's first bytes.
        CU_CHECK(cuMemcpyDtoH(got, va, 32));
        EXPECT(memcmp(got, pattern + 32, 32) == 0, "the part past the boundary");
        CUdeviceptr plain;
        CU_CHECK(cuMemAlloc(&plain, sizeof pattern));
        CU_CHECK(cuMemcpyDtoD(plain, across, sizeof pattern));
        CU_CHECK(cuMemsetD8(across + 16, 0x5a, 32));
        CU_CHECK(cuMemcpyDtoH(got, across, sizeof got));
        for (int i = 0; i < 64; i++) {
            unsigned char want = i >= 16 && i < 48 ? 0x5a : pattern[i];
            EXPECT(got[i] == want, "memset across: [%d] = %d", i, got[i]);
        }
        CU_CHECK(cuMemcpyDtoH(got, plain, sizeof got));
        EXPECT(memcmp(got, pattern, sizeof got) == 0, "device copy from across two mappings");
        CU_EXPECT_ERR_AS("cuMemcpyHtoD(past the last mapping)",
                         cuMemcpyHtoD(va + 4 * gran - 8, pattern, 16), CUDA_ERROR_INVALID_VALUE);
        CU_CHECK(cuMemFree(plain));
    }
    printf("copies and memsets across adjacent mappings: ok\n");

    CU_CHECK(cuMemRetainAllocationHandle(&h2, (void *)(uintptr_t)(va + 3 * gran + 5)));
    EXPECT(h2 == h, "retained handle %llu, expected %llu", (unsigned long long)h2,
           (unsigned long long)h);
    CU_CHECK(cuMemRelease(h2));
    // Released while mapped: the memory stays until unmapped.
    CU_CHECK(cuMemRelease(h));
    CU_EXPECT_ERR_AS("cuMemRelease(twice)", cuMemRelease(h), CUDA_ERROR_INVALID_VALUE);
    CU_CHECK(cuMemcpyDtoH(back, va + 100 * sizeof(int), sizeof back));
    EXPECT(back[N - 1] == host[N - 1], "mapped memory lost at cuMemRelease");
    CU_EXPECT_ERR_AS("cuMemFree(mapped address)", cuMemFree(va), CUDA_ERROR_INVALID_VALUE);
    CU_EXPECT_ERR_AS("cuMemUnmap(half a mapping)", cuMemUnmap(va, gran), CUDA_ERROR_INVALID_VALUE);
    CU_EXPECT_ERR_AS("cuMemAddressFree(still mapped)", cuMemAddressFree(va, 4 * gran),
                     CUDA_ERROR_INVALID_VALUE);
    CU_CHECK(cuMemUnmap(va, 4 * gran));
    CU_EXPECT_ERR_AS("cuMemcpyHtoD(after cuMemUnmap)", cuMemcpyHtoD(va, host, 16),
                     CUDA_ERROR_INVALID_VALUE);
    CU_CHECK(cuMemAddressFree(va, 4 * gran));
    printf("retain, release while mapped, unmap, free: ok\n");

    // A shareable allocation, exported as a file descriptor and imported
    // through a copy of it, as another process receives one.
    CUmemAllocationProp sprop = device_prop(dev, 1);
    CUmemGenericAllocationHandle hs = 0, hi = 0;
    CU_CHECK(cuMemCreate(&hs, gran, &sprop, 0));
    int fd = -1;
    CU_EXPECT_ERR_AS("cuMemExportToShareableHandle(type not requested)",
                     cuMemExportToShareableHandle(&fd, hs, CU_MEM_HANDLE_TYPE_FABRIC, 0),
                     CUDA_ERROR_INVALID_VALUE);
    CU_CHECK(cuMemExportToShareableHandle(&fd, hs, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
    EXPECT(fd >= 0, "exported fd %d", fd);
    int fd2 = dup(fd);
    close(fd);
    CU_CHECK(cuMemImportFromShareableHandle(&hi, (void *)(uintptr_t)fd2,
                                            CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
    close(fd2);
    CU_EXPECT_ERR_AS("cuMemImportFromShareableHandle(not a handle)",
                     cuMemImportFromShareableHandle(&hi, (void *)(uintptr_t)0,
                                                    CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
                     CUDA_ERROR_INVALID_VALUE);
    CUdeviceptr a = 0, b = 0;
    CU_CHECK(cuMemAddressReserve(&a, 2 * gran, 0, 0, 0));
    b = a + gran;
    CU_CHECK(cuMemMap(a, gran, 0, hs, 0));
    CU_CHECK(cuMemMap(b, gran, 0, hi, 0));
    CU_CHECK(cuMemSetAccess(a, 2 * gran, &rw, 1));
    CU_CHECK(cuMemsetD32(a + 4096, 0x01020304u, 16));
    CU_CHECK(cuMemcpyDtoH(back, b + 4096, 16 * sizeof(int)));
    for (int i = 0; i < 16; i++) EXPECT(back[i] == 0x01020304, "imported memory: [%d]", i);
    CU_CHECK(cuMemUnmap(a, gran));
    CU_CHECK(cuMemUnmap(b, gran));
    CU_CHECK(cuMemRelease(hs));
    CU_CHECK(cuMemRelease(hi));
    CU_CHECK(cuMemAddressFree(a, 2 * gran));
    printf("export, import through a file descriptor: ok\n");
}

static void memops(int check_timeout) {
    CUdeviceptr p = 0;
    CU_CHECK(cuMemAlloc(&p, 64));
    CU_CHECK(cuMemsetD8(p, 0, 64));
    CUstream s;
    CU_CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CU_CHECK(cuStreamWriteValue32(s, p, 5, 0));
    CU_CHECK(cuStreamWaitValue32(s, p, 5, CU_STREAM_WAIT_VALUE_EQ));
    CU_CHECK(cuStreamWaitValue32(s, p, 3, CU_STREAM_WAIT_VALUE_GEQ));
    // GEQ is cyclic: 5 - 0xfffffff0 wraps to a small positive difference.
    CU_CHECK(cuStreamWaitValue32(s, p, 0xfffffff0u, CU_STREAM_WAIT_VALUE_GEQ));
    CU_CHECK(cuStreamWaitValue32(s, p, 4, CU_STREAM_WAIT_VALUE_AND));
    CU_CHECK(cuStreamWaitValue32(s, p, 0, CU_STREAM_WAIT_VALUE_NOR | CU_STREAM_WAIT_VALUE_FLUSH));
    CU_CHECK(cuStreamWriteValue64(s, p + 8, 0x1122334455667788ull, CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER));
    CU_CHECK(cuStreamWaitValue64(s, p + 8, 0x1122334455667788ull, CU_STREAM_WAIT_VALUE_EQ));
    CU_EXPECT_ERR_AS("cuStreamWaitValue32(bad flags)", cuStreamWaitValue32(s, p, 0, 7),
                     CUDA_ERROR_INVALID_VALUE);
    CU_EXPECT_ERR_AS("cuStreamWriteValue64(misaligned)", cuStreamWriteValue64(s, p + 4, 1, 0),
                     CUDA_ERROR_INVALID_VALUE);
    CUstreamBatchMemOpParams ops[3];
    memset(ops, 0, sizeof ops);
    ops[0].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
    ops[0].writeValue.address = p + 16;
    ops[0].writeValue.value = 42;
    ops[1].waitValue.operation = CU_STREAM_MEM_OP_WAIT_VALUE_32;
    ops[1].waitValue.address = p + 16;
    ops[1].waitValue.value = 40;
    ops[1].waitValue.flags = CU_STREAM_WAIT_VALUE_GEQ;
    ops[2].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_64;
    ops[2].writeValue.address = p + 24;
    ops[2].writeValue.value64 = 0xabcdef0123456789ull;
    CU_CHECK(cuStreamBatchMemOp(s, 3, ops, 0));
    CU_CHECK(cuStreamSynchronize(s));
    uint32_t w[8];
    CU_CHECK(cuMemcpyDtoH(w, p, sizeof w));
    EXPECT(w[0] == 5 && w[2] == 0x55667788u && w[3] == 0x11223344u && w[4] == 42 &&
               w[6] == 0x23456789u && w[7] == 0xabcdef01u,
           "stream writes: %x %x %x %x %x %x", w[0], w[2], w[3], w[4], w[6], w[7]);
    printf("stream memory operations: ok\n");
    if (check_timeout) {
        // Nothing queued before it can make the value 6: the server's
        // operation time limit ends the wait.
        CU_CHECK(cuStreamWaitValue32(s, p, 6, CU_STREAM_WAIT_VALUE_EQ));
        CU_EXPECT_ERR_AS("cuStreamWaitValue32(never satisfied)", cuStreamSynchronize(s),
                         CUDA_ERROR_TIMEOUT);
    } else {
        CU_CHECK(cuStreamDestroy(s));
        CU_CHECK(cuMemFree(p));
    }
}

int main(int argc, char **argv) {
    if (argc < 2) {
        printf("FAIL: usage: d_vmm KERNELS.ptx [timeout]\n");
        return 1;
    }
    CU_CHECK(cuInit(0));
    CUdevice dev;
    CU_CHECK(cuDeviceGet(&dev, 0));
    CUcontext ctx;
    CU_CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CU_CHECK(cuCtxSetCurrent(ctx));
    check_attributes(dev);
    char *ptx = read_file(argv[1], NULL);
    CUmodule mod;
    CU_CHECK(cuModuleLoadData(&mod, ptx));
    int check_timeout = argc > 2 && strcmp(argv[2], "timeout") == 0;
    if (!check_timeout) vmm(dev, mod);
    memops(check_timeout);
    free(ptx);
    printf("PASS\n");
    return 0;
}
