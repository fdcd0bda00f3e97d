// The pre-CUDA 3.2 ("v1") driver entry points rcud implements: the
// unversioned cuDeviceTotalMem, cuMemGetInfo, cuArrayCreate,
// cuArrayGetDescriptor, cuArray3DCreate, cuArray3DGetDescriptor,
// cuMemcpyHtoA/AtoH/AtoA (and the Async ones), cuMemcpy2D (Unaligned, Async)
// and cuMemcpy3D (Async), with 32-bit sizes and the v1 structures, as
// binaries built against CUDA 3.1 headers call them. cuda.h maps these names
// to the _v2 forms, so the v1 prototypes and structures are declared here
// (from the CUDA 3.1 header's layout) and bound to the unversioned symbols
// with asm labels. Each case checks the v1 result against the _v2 one.
//
// Usage: d_legacy_v1
// Prints one line per case; `FAIL: <reason>` and exit status 1 on any
// mismatch, `PASS` as the last line on success.

#include <limits.h>
#include <stdint.h>

#include "drv_check.h"

typedef unsigned int CUdeviceptr_v1;

typedef struct {
    unsigned int srcXInBytes, srcY;
    CUmemorytype srcMemoryType;
    const void *srcHost;
    CUdeviceptr_v1 srcDevice;
    CUarray srcArray;
    unsigned int srcPitch;
    unsigned int dstXInBytes, dstY;
    CUmemorytype dstMemoryType;
    void *dstHost;
    CUdeviceptr_v1 dstDevice;
    CUarray dstArray;
    unsigned int dstPitch;
    unsigned int WidthInBytes, Height;
} MEMCPY2D_v1;

typedef struct {
    unsigned int srcXInBytes, srcY, srcZ, srcLOD;
    CUmemorytype srcMemoryType;
    const void *srcHost;
    CUdeviceptr_v1 srcDevice;
    CUarray srcArray;
    void *reserved0;
    unsigned int srcPitch, srcHeight;
    unsigned int dstXInBytes, dstY, dstZ, dstLOD;
    CUmemorytype dstMemoryType;
    void *dstHost;
    CUdeviceptr_v1 dstDevice;
    CUarray dstArray;
    void *reserved1;
    unsigned int dstPitch, dstHeight;
    unsigned int WidthInBytes, Height, Depth;
} MEMCPY3D_v1;

typedef struct {
    unsigned int Width, Height;
    CUarray_format Format;
    unsigned int NumChannels;
} ARRAY_DESCRIPTOR_v1;

typedef struct {
    unsigned int Width, Height, Depth;
    CUarray_format Format;
    unsigned int NumChannels, Flags;
} ARRAY3D_DESCRIPTOR_v1;

_Static_assert(sizeof(MEMCPY2D_v1) == 96, "CUDA_MEMCPY2D_v1 layout");
_Static_assert(sizeof(MEMCPY3D_v1) == 144, "CUDA_MEMCPY3D_v1 layout");

CUresult CUDAAPI v1_cuDeviceTotalMem(unsigned int *bytes, CUdevice dev) __asm__("cuDeviceTotalMem");
CUresult CUDAAPI v1_cuMemGetInfo(unsigned int *free, unsigned int *total) __asm__("cuMemGetInfo");
CUresult CUDAAPI v1_cuArrayCreate(CUarray *a, const ARRAY_DESCRIPTOR_v1 *d) __asm__("cuArrayCreate");
CUresult CUDAAPI v1_cuArrayGetDescriptor(ARRAY_DESCRIPTOR_v1 *d,
                                         CUarray a) __asm__("cuArrayGetDescriptor");
CUresult CUDAAPI v1_cuArray3DCreate(CUarray *a,
                                    const ARRAY3D_DESCRIPTOR_v1 *d) __asm__("cuArray3DCreate");
CUresult CUDAAPI v1_cuArray3DGetDescriptor(ARRAY3D_DESCRIPTOR_v1 *d,
                                           CUarray a) __asm__("cuArray3DGetDescriptor");
CUresult CUDAAPI v1_cuMemcpyHtoA(CUarray dst, unsigned int off, const void *src,
                                 unsigned int n) __asm__("cuMemcpyHtoA");
CUresult CUDAAPI v1_cuMemcpyAtoH(void *dst, CUarray src, unsigned int off,
                                 unsigned int n) __asm__("cuMemcpyAtoH");
CUresult CUDAAPI v1_cuMemcpyAtoA(CUarray dst, unsigned int doff, CUarray src, unsigned int soff,
                                 unsigned int n) __asm__("cuMemcpyAtoA");
CUresult CUDAAPI v1_cuMemcpyHtoAAsync(CUarray dst, unsigned int off, const void *src,
                                      unsigned int n, CUstream s) __asm__("cuMemcpyHtoAAsync");
CUresult CUDAAPI v1_cuMemcpyAtoHAsync(void *dst, CUarray src, unsigned int off, unsigned int n,
                                      CUstream s) __asm__("cuMemcpyAtoHAsync");
CUresult CUDAAPI v1_cuMemcpy2D(const MEMCPY2D_v1 *p) __asm__("cuMemcpy2D");
CUresult CUDAAPI v1_cuMemcpy2DUnaligned(const MEMCPY2D_v1 *p) __asm__("cuMemcpy2DUnaligned");
CUresult CUDAAPI v1_cuMemcpy2DAsync(const MEMCPY2D_v1 *p, CUstream s) __asm__("cuMemcpy2DAsync");
CUresult CUDAAPI v1_cuMemcpy3D(const MEMCPY3D_v1 *p) __asm__("cuMemcpy3D");
CUresult CUDAAPI v1_cuMemcpy3DAsync(const MEMCPY3D_v1 *p, CUstream s) __asm__("cuMemcpy3DAsync");
// Still stubs: a 32-bit CUdeviceptr names no rcud allocation.
CUresult CUDAAPI v1_cuMemAlloc(CUdeviceptr_v1 *p, unsigned int n) __asm__("cuMemAlloc");

static unsigned int clamp32(size_t n) { return n > UINT_MAX ? UINT_MAX : (unsigned int)n; }

// A 32-bit device pointer: below 4 GiB, where rcud has no device memory.
#define NOWHERE_V1 ((CUdeviceptr_v1)0x10000)

static void sizes(CUdevice dev) {
    size_t total2 = 0;
    unsigned int total1 = 0;
    CU_CHECK(cuDeviceTotalMem(&total2, dev));  // cuDeviceTotalMem_v2
    CU_CHECK(v1_cuDeviceTotalMem(&total1, dev));
    EXPECT(total1 == clamp32(total2), "cuDeviceTotalMem: v1 %u, v2 %zu", total1, total2);
    printf("cuDeviceTotalMem: v1 = min(v2, 2^32 - 1): ok\n");
    CU_EXPECT_ERR_AS("cuDeviceTotalMem(bad device)", v1_cuDeviceTotalMem(&total1, 9999),
                     cuDeviceTotalMem(&total2, 9999));

    size_t free2 = 0, all2 = 0;
    unsigned int free1 = 0, all1 = 0;
    CU_CHECK(cuMemGetInfo(&free2, &all2));  // cuMemGetInfo_v2
    CU_CHECK(v1_cuMemGetInfo(&free1, &all1));
    EXPECT(all1 == clamp32(all2), "cuMemGetInfo total: v1 %u, v2 %zu", all1, all2);
    EXPECT(free1 == clamp32(free2), "cuMemGetInfo free: v1 %u, v2 %zu", free1, free2);
    EXPECT(all1 == total1, "cuMemGetInfo total %u, cuDeviceTotalMem %u", all1, total1);
    printf("cuMemGetInfo: v1 = min(v2, 2^32 - 1): ok\n");
    CU_EXPECT_ERR_AS("cuMemGetInfo(NULL)", v1_cuMemGetInfo(NULL, &all1),
                     cuMemGetInfo(NULL, &all2));
}

static void fill(unsigned char *p, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(seed + i * 7 + (i >> 8));
}

// A 1-D array of 1024 uint32: HtoA, AtoH, AtoA, the Async ones, its
// descriptor.
static void one_d(CUstream stream) {
    enum { W = 1024, BYTES = W * 4 };
    ARRAY_DESCRIPTOR_v1 d1 = {W, 0, CU_AD_FORMAT_UNSIGNED_INT32, 1};
    CUarray a, b;
    CU_CHECK(v1_cuArrayCreate(&a, &d1));
    CU_CHECK(v1_cuArrayCreate(&b, &d1));
    ARRAY_DESCRIPTOR_v1 back1;
    CUDA_ARRAY_DESCRIPTOR back2;
    CU_CHECK(v1_cuArrayGetDescriptor(&back1, a));
    CU_CHECK(cuArrayGetDescriptor(&back2, a));
    EXPECT(back1.Width == W && back1.Height == 0 && back1.Format == CU_AD_FORMAT_UNSIGNED_INT32 &&
               back1.NumChannels == 1,
           "1-D descriptor %u x %u, format %d x %u", back1.Width, back1.Height, (int)back1.Format,
           back1.NumChannels);
    EXPECT(back2.Width == back1.Width && back2.Height == back1.Height &&
               back2.Format == back1.Format && back2.NumChannels == back1.NumChannels,
           "v1 and v2 descriptors differ");
    printf("1-D cuArrayCreate, cuArrayGetDescriptor: ok\n");

    static unsigned char src[BYTES], out[BYTES], expect[BYTES];
    fill(src, BYTES, 3);
    CU_CHECK(v1_cuMemcpyHtoA(a, 0, src, BYTES));
    memset(out, 0, BYTES);
    CU_CHECK(v1_cuMemcpyAtoH(out, a, 0, BYTES));
    EXPECT(memcmp(out, src, BYTES) == 0, "HtoA, AtoH round trip differs");
    // Part of a into b at another offset, then b read back through _v2.
    memset(expect, 0, BYTES);
    CU_CHECK(cuMemcpyHtoA(b, 0, expect, BYTES));  // cuMemcpyHtoA_v2
    CU_CHECK(v1_cuMemcpyAtoA(b, 128, a, 512, 1024));
    memcpy(expect + 128, src + 512, 1024);
    CU_CHECK(cuMemcpyAtoH(out, b, 0, BYTES));  // cuMemcpyAtoH_v2
    EXPECT(memcmp(out, expect, BYTES) == 0, "AtoA result differs");
    // The Async forms, on a stream.
    fill(src, BYTES, 11);
    CU_CHECK(v1_cuMemcpyHtoAAsync(a, 256, src, 2048, stream));
    memset(out, 0, BYTES);
    CU_CHECK(v1_cuMemcpyAtoHAsync(out, a, 256, 2048, stream));
    CU_CHECK(cuStreamSynchronize(stream));
    EXPECT(memcmp(out, src, 2048) == 0, "HtoAAsync, AtoHAsync round trip differs");
    printf("1-D cuMemcpyHtoA, AtoH, AtoA, HtoAAsync, AtoHAsync: ok\n");
    // Past the end: the _v2 form's answer.
    CU_EXPECT_ERR_AS("cuMemcpyHtoA(past the end)", v1_cuMemcpyHtoA(a, BYTES - 4, src, 8),
                     cuMemcpyHtoA(a, BYTES - 4, src, 8));
    CU_CHECK(cuArrayDestroy(a));
    CU_CHECK(cuArrayDestroy(b));
}

// A 2-D array of 64 x 32 uint32 (rows of 256 bytes) through the v1 copy
// structures, and a 3-D one of 16 x 8 x 4 float2.
static void two_d(CUstream stream) {
    enum { W = 64, H = 32, ROW = W * 4, HP = ROW + 48 };
    ARRAY_DESCRIPTOR_v1 d1 = {W, H, CU_AD_FORMAT_UNSIGNED_INT32, 1};
    CUarray a;
    CU_CHECK(v1_cuArrayCreate(&a, &d1));
    ARRAY3D_DESCRIPTOR_v1 back;
    CU_CHECK(v1_cuArray3DGetDescriptor(&back, a));
    EXPECT(back.Width == W && back.Height == H && back.Depth == 0 &&
               back.Format == CU_AD_FORMAT_UNSIGNED_INT32 && back.NumChannels == 1,
           "2-D descriptor %u x %u x %u", back.Width, back.Height, back.Depth);
    printf("2-D cuArrayCreate, cuArray3DGetDescriptor: ok\n");

    static unsigned char host[HP * H], out[HP * H];
    fill(host, sizeof host, 5);
    // Host (pitch HP) to the whole array.
    MEMCPY2D_v1 c = {0};
    c.srcMemoryType = CU_MEMORYTYPE_HOST;
    c.srcHost = host;
    c.srcPitch = HP;
    c.dstMemoryType = CU_MEMORYTYPE_ARRAY;
    c.dstArray = a;
    c.WidthInBytes = ROW;
    c.Height = H;
    CU_CHECK(v1_cuMemcpy2D(&c));
    // A window back: 32 bytes in, 4 rows down, 128 bytes x 8 rows, to a
    // tight host buffer.
    MEMCPY2D_v1 r = {0};
    r.srcMemoryType = CU_MEMORYTYPE_ARRAY;
    r.srcArray = a;
    r.srcXInBytes = 32;
    r.srcY = 4;
    r.dstMemoryType = CU_MEMORYTYPE_HOST;
    r.dstHost = out;
    r.dstPitch = 128;
    r.WidthInBytes = 128;
    r.Height = 8;
    memset(out, 0, sizeof out);
    CU_CHECK(v1_cuMemcpy2DUnaligned(&r));
    for (int y = 0; y < 8; y++)
        EXPECT(memcmp(out + y * 128, host + (4 + y) * HP + 32, 128) == 0,
               "cuMemcpy2D window row %d differs", y);
    // The whole array back, asynchronously.
    r.srcXInBytes = r.srcY = 0;
    r.dstPitch = HP;
    r.WidthInBytes = ROW;
    r.Height = H;
    memset(out, 0, sizeof out);
    CU_CHECK(v1_cuMemcpy2DAsync(&r, stream));
    CU_CHECK(cuStreamSynchronize(stream));
    for (int y = 0; y < H; y++)
        EXPECT(memcmp(out + y * HP, host + y * HP, ROW) == 0, "cuMemcpy2DAsync row %d differs",
               y);
    printf("2-D cuMemcpy2D, cuMemcpy2DUnaligned, cuMemcpy2DAsync: ok\n");

    // The same array through cuMemcpy3D (depth 1), a 2-D array to a 3-D one.
    enum { X = 16, Y = 8, Z = 4, EL = 8, ROW3 = X * EL };
    ARRAY3D_DESCRIPTOR_v1 d3 = {X, Y, Z, CU_AD_FORMAT_FLOAT, 2, 0};
    CUarray v;
    CU_CHECK(v1_cuArray3DCreate(&v, &d3));
    CU_CHECK(v1_cuArray3DGetDescriptor(&back, v));
    CUDA_ARRAY3D_DESCRIPTOR back2;
    CU_CHECK(cuArray3DGetDescriptor(&back2, v));  // cuArray3DGetDescriptor_v2
    EXPECT(back.Width == X && back.Height == Y && back.Depth == Z &&
               back.Format == CU_AD_FORMAT_FLOAT && back.NumChannels == 2 && back.Flags == 0,
           "3-D descriptor %u x %u x %u", back.Width, back.Height, back.Depth);
    EXPECT(back2.Width == back.Width && back2.Height == back.Height &&
               back2.Depth == back.Depth && back2.Format == back.Format &&
               back2.NumChannels == back.NumChannels && back2.Flags == back.Flags,
           "v1 and v2 3-D descriptors differ");
    printf("3-D cuArray3DCreate, cuArray3DGetDescriptor: ok\n");

    static unsigned char vol[ROW3 * Y * Z], vout[ROW3 * Y * Z];
    fill(vol, sizeof vol, 9);
    MEMCPY3D_v1 t = {0};
    t.srcMemoryType = CU_MEMORYTYPE_HOST;
    t.srcHost = vol;
    t.srcPitch = ROW3;
    t.srcHeight = Y;
    t.dstMemoryType = CU_MEMORYTYPE_ARRAY;
    t.dstArray = v;
    t.WidthInBytes = ROW3;
    t.Height = Y;
    t.Depth = Z;
    CU_CHECK(v1_cuMemcpy3D(&t));
    MEMCPY3D_v1 u = {0};
    u.srcMemoryType = CU_MEMORYTYPE_ARRAY;
    u.srcArray = v;
    u.dstMemoryType = CU_MEMORYTYPE_HOST;
    u.dstHost = vout;
    u.dstPitch = ROW3;
    u.dstHeight = Y;
    u.WidthInBytes = ROW3;
    u.Height = Y;
    u.Depth = Z;
    memset(vout, 0, sizeof vout);
    CU_CHECK(v1_cuMemcpy3DAsync(&u, stream));
    CU_CHECK(cuStreamSynchronize(stream));
    EXPECT(memcmp(vout, vol, sizeof vol) == 0, "cuMemcpy3D round trip differs");
    // One slice of the 3-D array (z = 2) into the 2-D array at (64, 3):
    // array to array through cuMemcpy3D, then read back with cuMemcpy2D.
    MEMCPY3D_v1 s = {0};
    s.srcMemoryType = CU_MEMORYTYPE_ARRAY;
    s.srcArray = v;
    s.srcZ = 2;
    s.dstMemoryType = CU_MEMORYTYPE_ARRAY;
    s.dstArray = a;
    s.dstXInBytes = 64;
    s.dstY = 3;
    s.WidthInBytes = ROW3;
    s.Height = Y;
    s.Depth = 1;
    CU_CHECK(v1_cuMemcpy3D(&s));
    r.srcXInBytes = 64;
    r.srcY = 3;
    r.dstPitch = ROW3;
    r.WidthInBytes = ROW3;
    r.Height = Y;
    memset(out, 0, sizeof out);
    CU_CHECK(v1_cuMemcpy2D(&r));
    EXPECT(memcmp(out, vol + 2 * ROW3 * Y, ROW3 * Y) == 0, "3-D slice into 2-D array differs");
    printf("cuMemcpy3D, cuMemcpy3DAsync (host, 2-D and 3-D arrays): ok\n");

    // A device end given as a 32-bit pointer names no allocation: the error
    // of the _v2 copies for an address that is no allocation, not a copy
    // from or to host memory at that address.
    unsigned char small[64];
    CUresult v2_1d = cuMemcpyDtoH(small, (CUdeviceptr)NOWHERE_V1, sizeof small);
    CUDA_MEMCPY2D w = {0};
    w.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    w.srcDevice = 0;
    w.dstMemoryType = CU_MEMORYTYPE_HOST;
    w.dstHost = small;
    w.dstPitch = sizeof small;
    w.WidthInBytes = sizeof small;
    w.Height = 1;
    CUresult v2_2d = cuMemcpy2D(&w);  // cuMemcpy2D_v2, NULL device pointer
    EXPECT(v2_1d == v2_2d, "_v2 errors differ: %s, %s", cu_error_name(v2_1d),
           cu_error_name(v2_2d));
    MEMCPY2D_v1 bad = {0};
    bad.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    bad.srcDevice = NOWHERE_V1;
    bad.dstMemoryType = CU_MEMORYTYPE_HOST;
    bad.dstHost = small;
    bad.dstPitch = sizeof small;
    bad.WidthInBytes = sizeof small;
    bad.Height = 1;
    CU_EXPECT_ERR_AS("cuMemcpy2D(32-bit device pointer)", v1_cuMemcpy2D(&bad), v2_1d);
    bad.srcMemoryType = CU_MEMORYTYPE_ARRAY;
    bad.srcArray = a;
    bad.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    bad.dstDevice = NOWHERE_V1;
    CU_EXPECT_ERR_AS("cuMemcpy2DAsync(32-bit device pointer)", v1_cuMemcpy2DAsync(&bad, stream),
                     v2_1d);
    MEMCPY3D_v1 bad3 = {0};
    bad3.srcMemoryType = CU_MEMORYTYPE_HOST;
    bad3.srcHost = small;
    bad3.srcPitch = sizeof small;
    bad3.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    bad3.dstDevice = NOWHERE_V1;
    bad3.WidthInBytes = sizeof small;
    bad3.Height = 1;
    bad3.Depth = 1;
    CU_EXPECT_ERR_AS("cuMemcpy3D(32-bit device pointer)", v1_cuMemcpy3D(&bad3), v2_1d);
    CU_EXPECT_ERR_AS("cuMemcpyDtoH_v2(no allocation)", v2_1d, CUDA_ERROR_INVALID_VALUE);

    CU_CHECK(cuArrayDestroy(a));
    CU_CHECK(cuArrayDestroy(v));
}

int main(void) {
    CU_CHECK(cuInit(0));
    CUdevice dev;
    CU_CHECK(cuDeviceGet(&dev, 0));
    CUcontext ctx;
    CU_CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CU_CHECK(cuCtxSetCurrent(ctx));
    CUstream stream;
    CU_CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));

    sizes(dev);
    one_d(stream);
    two_d(stream);

    // NULL descriptors: the _v2 forms' answer.
    CUarray none;
    CU_EXPECT_ERR_AS("cuArrayCreate(NULL descriptor)", v1_cuArrayCreate(&none, NULL),
                     cuArrayCreate(&none, NULL));
    // What cannot work stays a stub.
    CUdeviceptr_v1 p1;
    CU_EXPECT_ERR_AS("cuMemAlloc (v1)", v1_cuMemAlloc(&p1, 256), CUDA_ERROR_NOT_SUPPORTED);

    CU_CHECK(cuStreamDestroy(stream));
    CU_CHECK(cuDevicePrimaryCtxRelease(dev));
    printf("PASS\n");
    return 0;
}
