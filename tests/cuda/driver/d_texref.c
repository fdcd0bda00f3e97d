// Texture references and surface references (deprecated, and gone from the
// CUDA 12 runtime, but still in the driver API) on hand-written PTX in
// non-unified mode: `.global .texref` / `.global .surfref` variables read by
// `tex.1d`, `tex.2d` and written by `sust`. Binds linear memory
// (cuTexRefSetAddress, with the byte offset of a misaligned pointer),
// pitched 2-D memory (cuTexRefSetAddress2D) and a CUDA array
// (cuTexRefSetArray) with point and linear filtering, clamp, border and wrap
// addressing, normalized coordinates and integer reads; rebinding between
// launches; a surface reference on a surface load/store array; every Get*
// after its Set*, and the error codes of unknown names, NULL pointers and
// bad arguments.
//
// Prints one line per case; `FAIL: <reason>` and exit status 1 on any error
// or mismatch, `PASS` as the last line on success.

#include <cuda.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drv_check.h"

#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

static const char *PTX =
    ".version 7.0\n"
    ".target sm_70\n"
    ".address_size 64\n"
    "\n"
    ".global .texref tex_lin;\n"
    ".global .texref tex_2d;\n"
    ".global .texref tex_arr;\n"
    ".global .surfref surf;\n"
    ".global .u32 plain;\n"
    "\n"
    // out[i] = tex1Dfetch(tex_lin, first + i).x
    ".visible .entry fetch_lin(.param .u64 out, .param .u32 first, .param .u32 n)\n"
    "{\n"
    "  .reg .pred %p<2>;\n"
    "  .reg .b32 %r<8>;\n"
    "  .reg .f32 %f<5>;\n"
    "  .reg .b64 %rd<4>;\n"
    "  mov.u32 %r1, %tid.x;\n"
    "  ld.param.u32 %r4, [n];\n"
    "  setp.ge.u32 %p1, %r1, %r4;\n"
    "  @%p1 bra $L_done;\n"
    "  ld.param.u32 %r5, [first];\n"
    "  add.s32 %r6, %r1, %r5;\n"
    "  tex.1d.v4.f32.s32 {%f1, %f2, %f3, %f4}, [tex_lin, {%r6}];\n"
    "  ld.param.u64 %rd1, [out];\n"
    "  cvta.to.global.u64 %rd1, %rd1;\n"
    "  mul.wide.u32 %rd2, %r1, 4;\n"
    "  add.s64 %rd3, %rd1, %rd2;\n"
    "  st.global.f32 [%rd3], %f1;\n"
    "$L_done:\n"
    "  ret;\n"
    "}\n"
    "\n"
    // out[i] = tex2D(tex_2d, coords[i]).x
    ".visible .entry fetch_2d(.param .u64 coords, .param .u64 out, .param .u32 n)\n"
    "{\n"
    "  .reg .pred %p<2>;\n"
    "  .reg .b32 %r<8>;\n"
    "  .reg .f32 %f<8>;\n"
    "  .reg .b64 %rd<8>;\n"
    "  mov.u32 %r1, %tid.x;\n"
    "  ld.param.u32 %r4, [n];\n"
    "  setp.ge.u32 %p1, %r1, %r4;\n"
    "  @%p1 bra $L_done;\n"
    "  ld.param.u64 %rd1, [coords];\n"
    "  cvta.to.global.u64 %rd1, %rd1;\n"
    "  mul.wide.u32 %rd2, %r1, 8;\n"
    "  add.s64 %rd3, %rd1, %rd2;\n"
    "  ld.global.v2.f32 {%f1, %f2}, [%rd3];\n"
    "  tex.2d.v4.f32.f32 {%f3, %f4, %f5, %f6}, [tex_2d, {%f1, %f2}];\n"
    "  ld.param.u64 %rd4, [out];\n"
    "  cvta.to.global.u64 %rd4, %rd4;\n"
    "  mul.wide.u32 %rd5, %r1, 4;\n"
    "  add.s64 %rd6, %rd4, %rd5;\n"
    "  st.global.f32 [%rd6], %f3;\n"
    "$L_done:\n"
    "  ret;\n"
    "}\n"
    "\n"
    // out[i] = tex2D<float>(tex_arr, coords[i]).x
    ".visible .entry fetch_arr_f(.param .u64 coords, .param .u64 out, .param .u32 n)\n"
    "{\n"
    "  .reg .pred %p<2>;\n"
    "  .reg .b32 %r<8>;\n"
    "  .reg .f32 %f<8>;\n"
    "  .reg .b64 %rd<8>;\n"
    "  mov.u32 %r1, %tid.x;\n"
    "  ld.param.u32 %r4, [n];\n"
    "  setp.ge.u32 %p1, %r1, %r4;\n"
    "  @%p1 bra $L_done;\n"
    "  ld.param.u64 %rd1, [coords];\n"
    "  cvta.to.global.u64 %rd1, %rd1;\n"
    "  mul.wide.u32 %rd2, %r1, 8;\n"
    "  add.s64 %rd3, %rd1, %rd2;\n"
    "  ld.global.v2.f32 {%f1, %f2}, [%rd3];\n"
    "  tex.2d.v4.f32.f32 {%f3, %f4, %f5, %f6}, [tex_arr, {%f1, %f2}];\n"
    "  ld.param.u64 %rd4, [out];\n"
    "  cvta.to.global.u64 %rd4, %rd4;\n"
    "  mul.wide.u32 %rd5, %r1, 4;\n"
    "  add.s64 %rd6, %rd4, %rd5;\n"
    "  st.global.f32 [%rd6], %f3;\n"
    "$L_done:\n"
    "  ret;\n"
    "}\n"
    "\n"
    // out[i] = tex2D<uint>(tex_arr, coords[i]).x (read as integer)
    ".visible .entry fetch_arr_u(.param .u64 coords, .param .u64 out, .param .u32 n)\n"
    "{\n"
    "  .reg .pred %p<2>;\n"
    "  .reg .b32 %r<12>;\n"
    "  .reg .f32 %f<4>;\n"
    "  .reg .b64 %rd<8>;\n"
    "  mov.u32 %r1, %tid.x;\n"
    "  ld.param.u32 %r4, [n];\n"
    "  setp.ge.u32 %p1, %r1, %r4;\n"
    "  @%p1 bra $L_done;\n"
    "  ld.param.u64 %rd1, [coords];\n"
    "  cvta.to.global.u64 %rd1, %rd1;\n"
    "  mul.wide.u32 %rd2, %r1, 8;\n"
    "  add.s64 %rd3, %rd1, %rd2;\n"
    "  ld.global.v2.f32 {%f1, %f2}, [%rd3];\n"
    "  tex.2d.v4.u32.f32 {%r5, %r6, %r7, %r8}, [tex_arr, {%f1, %f2}];\n"
    "  ld.param.u64 %rd4, [out];\n"
    "  cvta.to.global.u64 %rd4, %rd4;\n"
    "  mul.wide.u32 %rd5, %r1, 4;\n"
    "  add.s64 %rd6, %rd4, %rd5;\n"
    "  st.global.u32 [%rd6], %r5;\n"
    "$L_done:\n"
    "  ret;\n"
    "}\n"
    "\n"
    // surf2Dwrite(x + 100 * y + base, surf, 4 * x, y) for every thread (x, y)
    ".visible .entry write_surf(.param .f32 base)\n"
    "{\n"
    "  .reg .b32 %r<8>;\n"
    "  .reg .f32 %f<3>;\n"
    "  mov.u32 %r1, %tid.x;\n"
    "  mov.u32 %r2, %tid.y;\n"
    "  mad.lo.s32 %r3, %r2, 100, %r1;\n"
    "  cvt.rn.f32.s32 %f1, %r3;\n"
    "  ld.param.f32 %f2, [base];\n"
    "  add.f32 %f1, %f1, %f2;\n"
    "  mov.b32 %r4, %f1;\n"
    "  shl.b32 %r5, %r1, 2;\n"
    "  sust.b.2d.b32.trap [surf, {%r5, %r2}], {%r4};\n"
    "  ret;\n"
    "}\n";

static CUmodule module;

static CUfunction function(const char *name) {
    CUfunction f;
    CU_CHECK(cuModuleGetFunction(&f, module, name));
    return f;
}

static int close_to(float got, float want) {
    return fabsf(got - want) <= 1e-3f * fmaxf(1.0f, fabsf(want));
}

// Runs `kernel(coords, out, n)` over `n` 2-D coordinates; `out` gets the
// results (4 bytes each).
static void fetch(const char *kernel, const float *coords, int n, void *out) {
    CUdeviceptr d_coords, d_out;
    CU_CHECK(cuMemAlloc(&d_coords, (size_t)n * 8));
    CU_CHECK(cuMemAlloc(&d_out, (size_t)n * 4));
    CU_CHECK(cuMemcpyHtoD(d_coords, coords, (size_t)n * 8));
    unsigned un = (unsigned)n;
    void *args[] = {&d_coords, &d_out, &un};
    CU_CHECK(cuLaunchKernel(function(kernel), 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL));
    CU_CHECK(cuMemcpyDtoH(out, d_out, (size_t)n * 4));
    CU_CHECK(cuMemFree(d_coords));
    CU_CHECK(cuMemFree(d_out));
}

static void check_floats(const char *what, const float *got, const float *want, int n) {
    for (int i = 0; i < n; i++)
        EXPECT(close_to(got[i], want[i]), "%s: result %d is %g, expected %g", what, i, got[i],
               want[i]);
    printf("%s: ok\n", what);
}

// ---- linear memory -----------------------------------------------------------

static void linear(void) {
    enum { N = 64 };
    float host[N];
    for (int i = 0; i < N; i++) host[i] = 1.5f * (float)i;
    CUdeviceptr d;
    CU_CHECK(cuMemAlloc(&d, sizeof host));
    CU_CHECK(cuMemcpyHtoD(d, host, sizeof host));

    CUtexref tex;
    CU_CHECK(cuModuleGetTexRef(&tex, module, "tex_lin"));
    CU_CHECK(cuTexRefSetFormat(tex, CU_AD_FORMAT_FLOAT, 1));
    size_t offset = 99;
    CU_CHECK(cuTexRefSetAddress(&offset, tex, d, sizeof host));
    EXPECT(offset == 0, "cuMemAlloc's pointer has offset %zu", offset);
    CUdeviceptr bound = 0;
    CU_CHECK(cuTexRefGetAddress(&bound, tex));
    EXPECT(bound == d, "cuTexRefGetAddress");

    CUdeviceptr d_out;
    CU_CHECK(cuMemAlloc(&d_out, sizeof host));
    unsigned first = 0, n = N;
    void *args[] = {&d_out, &first, &n};
    CU_CHECK(cuLaunchKernel(function("fetch_lin"), 1, 1, 1, N, 1, 1, 0, NULL, args, NULL));
    float out[N];
    CU_CHECK(cuMemcpyDtoH(out, d_out, sizeof out));
    check_floats("1-D linear memory (cuTexRefSetAddress, tex.1d)", out, host, N);

    // A pointer off the texture alignment: the texture starts at the
    // boundary below, and the program adds the offset (in texels).
    CU_CHECK(cuTexRefSetAddress(&offset, tex, d + 8, 32 * 4));
    EXPECT(offset == 8, "the offset of a pointer 8 bytes past an allocation is %zu", offset);
    CU_CHECK(cuTexRefGetAddress(&bound, tex));
    EXPECT(bound == d, "the bound base is the aligned one");
    first = (unsigned)(offset / 4);
    n = 32;
    CU_CHECK(cuLaunchKernel(function("fetch_lin"), 1, 1, 1, 32, 1, 1, 0, NULL, args, NULL));
    CU_CHECK(cuMemcpyDtoH(out, d_out, 32 * 4));
    check_floats("misaligned cuTexRefSetAddress: byte offset 8", out, host + 2, 32);

    CUarray array;
    CU_EXPECT_ERR(cuTexRefGetArray(&array, tex), CUDA_ERROR_INVALID_VALUE);
    CU_EXPECT_ERR_AS("cuTexRefSetAddress(past the allocation)",
                     cuTexRefSetAddress(&offset, tex, d, sizeof host + 4),
                     CUDA_ERROR_INVALID_VALUE);
    CU_CHECK(cuMemFree(d_out));
    CU_CHECK(cuMemFree(d));
}

// ---- pitched 2-D memory --------------------------------------------------------

static void pitched(void) {
    enum { W = 16, H = 8 };
    float host[H][W];
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) host[y][x] = (float)(x + W * y);
    CUdeviceptr d;
    size_t pitch;
    CU_CHECK(cuMemAllocPitch(&d, &pitch, W * 4, H, 4));
    CUDA_MEMCPY2D copy;
    memset(&copy, 0, sizeof copy);
    copy.srcMemoryType = CU_MEMORYTYPE_HOST;
    copy.srcHost = host;
    copy.srcPitch = W * 4;
    copy.dstMemoryType = CU_MEMORYTYPE_DEVICE;
    copy.dstDevice = d;
    copy.dstPitch = pitch;
    copy.WidthInBytes = W * 4;
    copy.Height = H;
    CU_CHECK(cuMemcpy2D(&copy));

    CUtexref tex;
    CU_CHECK(cuModuleGetTexRef(&tex, module, "tex_2d"));
    CUDA_ARRAY_DESCRIPTOR desc = {W, H, CU_AD_FORMAT_FLOAT, 1};
    CU_CHECK(cuTexRefSetAddress2D(tex, &desc, d, pitch));
    CUarray_format format = 0;
    int channels = 0;
    CU_CHECK(cuTexRefGetFormat(&format, &channels, tex));
    EXPECT(format == CU_AD_FORMAT_FLOAT && channels == 1, "the 2-D binding sets the format");
    CU_CHECK(cuTexRefSetFilterMode(tex, CU_TR_FILTER_MODE_LINEAR));
    CU_CHECK(cuTexRefSetAddressMode(tex, 0, CU_TR_ADDRESS_MODE_CLAMP));
    CU_CHECK(cuTexRefSetAddressMode(tex, 1, CU_TR_ADDRESS_MODE_CLAMP));

    // Texel centres, halfway between two texels (linear filtering), and
    // clamped coordinates left of and below the image.
    float coords[][2] = {{0.5f, 0.5f}, {3.5f, 2.5f}, {1.0f, 0.5f}, {4.5f, 3.0f},
                         {-3.0f, 2.5f}, {5.5f, 100.0f}, {2.0f, 1.0f}};
    float want[] = {0.0f, 35.0f, 0.5f, 44.0f, 32.0f, 117.0f, 9.5f};
    int n = (int)(sizeof want / sizeof want[0]);
    float out[8];
    fetch("fetch_2d", &coords[0][0], n, out);
    check_floats("2-D pitched memory (cuTexRefSetAddress2D), linear filter, clamp", out, want, n);

    // Point filtering and border addressing: the next launch sees them.
    float border[4] = {7.0f, 8.0f, 9.0f, 10.0f};
    CU_CHECK(cuTexRefSetFilterMode(tex, CU_TR_FILTER_MODE_POINT));
    CU_CHECK(cuTexRefSetAddressMode(tex, 0, CU_TR_ADDRESS_MODE_BORDER));
    CU_CHECK(cuTexRefSetAddressMode(tex, 1, CU_TR_ADDRESS_MODE_BORDER));
    CU_CHECK(cuTexRefSetBorderColor(tex, border));
    float coords2[][2] = {{1.9f, 0.5f}, {20.5f, 2.5f}, {3.5f, -0.5f}, {15.5f, 7.5f}};
    float want2[] = {1.0f, 7.0f, 7.0f, 127.0f};
    fetch("fetch_2d", &coords2[0][0], 4, out);
    check_floats("2-D point filter, border addressing", out, want2, 4);

    CU_EXPECT_ERR_AS("cuTexRefSetAddress2D(misaligned pointer)",
                     cuTexRefSetAddress2D(tex, &desc, d + 4, pitch), CUDA_ERROR_INVALID_VALUE);
    CU_EXPECT_ERR_AS("cuTexRefSetAddress2D(pitch below a row)",
                     cuTexRefSetAddress2D(tex, &desc, d, 32), CUDA_ERROR_INVALID_VALUE);
    CU_EXPECT_ERR_AS("cuTexRefSetAddress2D(NULL descriptor)",
                     cuTexRefSetAddress2D(tex, NULL, d, pitch), CUDA_ERROR_INVALID_VALUE);
    CU_CHECK(cuMemFree(d));
}

// ---- CUDA arrays -----------------------------------------------------------------

static void array(void) {
    enum { W = 8, H = 4 };
    unsigned char host[H][W];
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) host[y][x] = (unsigned char)(10 * x + 3 * y + 1);
    CUDA_ARRAY_DESCRIPTOR desc = {W, H, CU_AD_FORMAT_UNSIGNED_INT8, 1};
    CUarray arr;
    CU_CHECK(cuArrayCreate(&arr, &desc));
    CU_CHECK(cuMemcpyHtoA(arr, 0, host, sizeof host));

    CUtexref tex;
    CU_CHECK(cuModuleGetTexRef(&tex, module, "tex_arr"));
    CU_EXPECT_ERR_AS("cuTexRefSetArray(flags 0)", cuTexRefSetArray(tex, arr, 0),
                     CUDA_ERROR_INVALID_VALUE);
    // The array's format overrides the reference's.
    CU_CHECK(cuTexRefSetFormat(tex, CU_AD_FORMAT_FLOAT, 4));
    CU_CHECK(cuTexRefSetArray(tex, arr, CU_TRSA_OVERRIDE_FORMAT));
    CUarray got;
    CU_CHECK(cuTexRefGetArray(&got, tex));
    EXPECT(got == arr, "cuTexRefGetArray");
    CUarray_format format = 0;
    int channels = 0;
    CU_CHECK(cuTexRefGetFormat(&format, &channels, tex));
    EXPECT(format == CU_AD_FORMAT_UNSIGNED_INT8 && channels == 1, "the array's format");
    CUdeviceptr p;
    CU_EXPECT_ERR(cuTexRefGetAddress(&p, tex), CUDA_ERROR_INVALID_VALUE);

    // Normalized coordinates, wrap addressing, point filter: 8-bit texels
    // read as normalized floats.
    CU_CHECK(cuTexRefSetFlags(tex, CU_TRSF_NORMALIZED_COORDINATES));
    CU_CHECK(cuTexRefSetAddressMode(tex, 0, CU_TR_ADDRESS_MODE_WRAP));
    CU_CHECK(cuTexRefSetAddressMode(tex, 1, CU_TR_ADDRESS_MODE_WRAP));
    CU_CHECK(cuTexRefSetFilterMode(tex, CU_TR_FILTER_MODE_POINT));
    float coords[][2] = {{0.5f / W, 0.5f / H}, {5.5f / W, 2.5f / H}, {1.0f + 2.5f / W, 1.5f / H},
                         {-0.5f / W, 3.5f / H}};
    unsigned char texel[] = {host[0][0], host[2][5], host[1][2], host[3][7]};
    float want[4];
    for (int i = 0; i < 4; i++) want[i] = (float)texel[i] / 255.0f;
    float out[4];
    fetch("fetch_arr_f", &coords[0][0], 4, out);
    check_floats("CUDA array (cuTexRefSetArray), normalized coordinates, wrap", out, want, 4);

    // Linear filtering between the first two texels of row 0.
    CU_CHECK(cuTexRefSetFilterMode(tex, CU_TR_FILTER_MODE_LINEAR));
    float mid[][2] = {{1.0f / W, 0.5f / H}};
    float want_mid = ((float)host[0][0] + (float)host[0][1]) / 2.0f / 255.0f;
    fetch("fetch_arr_f", &mid[0][0], 1, out);
    check_floats("CUDA array, linear filter", out, &want_mid, 1);

    // Read as integer: the raw texels.
    CU_CHECK(cuTexRefSetFilterMode(tex, CU_TR_FILTER_MODE_POINT));
    CU_CHECK(cuTexRefSetFlags(tex, CU_TRSF_NORMALIZED_COORDINATES | CU_TRSF_READ_AS_INTEGER));
    unsigned raw[4];
    fetch("fetch_arr_u", &coords[0][0], 4, raw);
    for (int i = 0; i < 4; i++)
        EXPECT(raw[i] == texel[i], "integer read %d is %u, expected %u", i, raw[i], texel[i]);
    printf("CUDA array, CU_TRSF_READ_AS_INTEGER: ok\n");

    CU_CHECK(cuArrayDestroy(arr));
}

// ---- surface references -------------------------------------------------------------

static void surface(void) {
    enum { W = 8, H = 4 };
    CUDA_ARRAY3D_DESCRIPTOR desc;
    memset(&desc, 0, sizeof desc);
    desc.Width = W;
    desc.Height = H;
    desc.Format = CU_AD_FORMAT_FLOAT;
    desc.NumChannels = 1;
    desc.Flags = CUDA_ARRAY3D_SURFACE_LDST;
    CUarray arr, plain_arr;
    CU_CHECK(cuArray3DCreate(&arr, &desc));
    desc.Flags = 0;
    CU_CHECK(cuArray3DCreate(&plain_arr, &desc));

    CUsurfref surf;
    CU_CHECK(cuModuleGetSurfRef(&surf, module, "surf"));
    CUarray got;
    CU_EXPECT_ERR_AS("cuSurfRefGetArray(nothing bound)", cuSurfRefGetArray(&got, surf),
                     CUDA_ERROR_INVALID_VALUE);
    CU_EXPECT_ERR_AS("cuSurfRefSetArray(array without CUDA_ARRAY3D_SURFACE_LDST)",
                     cuSurfRefSetArray(surf, plain_arr, 0), CUDA_ERROR_INVALID_VALUE);
    CU_EXPECT_ERR_AS("cuSurfRefSetArray(flags 1)", cuSurfRefSetArray(surf, arr, 1),
                     CUDA_ERROR_INVALID_VALUE);
    CU_CHECK(cuSurfRefSetArray(surf, arr, 0));
    CU_CHECK(cuSurfRefGetArray(&got, surf));
    EXPECT(got == arr, "cuSurfRefGetArray");

    float base = 0.25f;
    void *args[] = {&base};
    CU_CHECK(cuLaunchKernel(function("write_surf"), 1, 1, 1, W, H, 1, 0, NULL, args, NULL));
    float out[H][W];
    CU_CHECK(cuMemcpyAtoH(out, arr, 0, sizeof out));
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            EXPECT(out[y][x] == (float)(x + 100 * y) + base, "texel (%d, %d) is %g", x, y,
                   out[y][x]);
    printf("surface reference (cuSurfRefSetArray, sust.b.2d): ok\n");
    CU_CHECK(cuArrayDestroy(arr));
    CU_CHECK(cuArrayDestroy(plain_arr));
}

// ---- state round trips and errors ---------------------------------------------------

static void state(void) {
    CUtexref tex, again;
    CU_CHECK(cuTexRefCreate(&tex));
    CU_CHECK(cuTexRefSetFormat(tex, CU_AD_FORMAT_SIGNED_INT16, 2));
    CU_CHECK(cuTexRefSetAddressMode(tex, 0, CU_TR_ADDRESS_MODE_MIRROR));
    CU_CHECK(cuTexRefSetAddressMode(tex, 1, CU_TR_ADDRESS_MODE_BORDER));
    CU_CHECK(cuTexRefSetFilterMode(tex, CU_TR_FILTER_MODE_LINEAR));
    unsigned flags = CU_TRSF_READ_AS_INTEGER | CU_TRSF_NORMALIZED_COORDINATES | CU_TRSF_SRGB |
                     CU_TRSF_DISABLE_TRILINEAR_OPTIMIZATION;
    CU_CHECK(cuTexRefSetFlags(tex, flags));
    float border[4] = {0.5f, 1.5f, 2.5f, 3.5f};
    CU_CHECK(cuTexRefSetBorderColor(tex, border));
    CU_CHECK(cuTexRefSetMaxAnisotropy(tex, 8));
    CU_CHECK(cuTexRefSetMipmapFilterMode(tex, CU_TR_FILTER_MODE_LINEAR));
    CU_CHECK(cuTexRefSetMipmapLevelBias(tex, 0.75f));
    CU_CHECK(cuTexRefSetMipmapLevelClamp(tex, 1.0f, 5.0f));

    CUarray_format format;
    int channels, aniso;
    CUaddress_mode m0, m1;
    CUfilter_mode filter, mip_filter;
    unsigned got_flags;
    float got_border[4], bias, lo, hi;
    CU_CHECK(cuTexRefGetFormat(&format, &channels, tex));
    CU_CHECK(cuTexRefGetFormat(NULL, &channels, tex));
    CU_CHECK(cuTexRefGetAddressMode(&m0, tex, 0));
    CU_CHECK(cuTexRefGetAddressMode(&m1, tex, 1));
    CU_CHECK(cuTexRefGetFilterMode(&filter, tex));
    CU_CHECK(cuTexRefGetFlags(&got_flags, tex));
    CU_CHECK(cuTexRefGetBorderColor(got_border, tex));
    CU_CHECK(cuTexRefGetMaxAnisotropy(&aniso, tex));
    CU_CHECK(cuTexRefGetMipmapFilterMode(&mip_filter, tex));
    CU_CHECK(cuTexRefGetMipmapLevelBias(&bias, tex));
    CU_CHECK(cuTexRefGetMipmapLevelClamp(&lo, &hi, tex));
    EXPECT(format == CU_AD_FORMAT_SIGNED_INT16 && channels == 2, "format");
    EXPECT(m0 == CU_TR_ADDRESS_MODE_MIRROR && m1 == CU_TR_ADDRESS_MODE_BORDER, "address modes");
    EXPECT(filter == CU_TR_FILTER_MODE_LINEAR && mip_filter == CU_TR_FILTER_MODE_LINEAR, "filters");
    EXPECT(got_flags == flags, "flags");
    EXPECT(memcmp(got_border, border, sizeof border) == 0, "border colour");
    EXPECT(aniso == 8 && bias == 0.75f && lo == 1.0f && hi == 5.0f, "anisotropy and mipmaps");
    printf("cuTexRefCreate, every Get after its Set: ok\n");

    CUdeviceptr p;
    CUarray arr;
    CUmipmappedArray mip;
    CU_EXPECT_ERR_AS("cuTexRefGetAddress(nothing bound)", cuTexRefGetAddress(&p, tex),
                     CUDA_ERROR_INVALID_VALUE);
    CU_EXPECT_ERR_AS("cuTexRefGetArray(nothing bound)", cuTexRefGetArray(&arr, tex),
                     CUDA_ERROR_INVALID_VALUE);
    CU_EXPECT_ERR_AS("cuTexRefGetMipmappedArray(nothing bound)",
                     cuTexRefGetMipmappedArray(&mip, tex), CUDA_ERROR_INVALID_VALUE);
    CU_EXPECT_ERR(cuTexRefSetAddressMode(tex, 3, CU_TR_ADDRESS_MODE_WRAP),
                  CUDA_ERROR_INVALID_VALUE);
    CU_EXPECT_ERR(cuTexRefSetAddressMode(tex, 0, (CUaddress_mode)9), CUDA_ERROR_INVALID_VALUE);
    CU_EXPECT_ERR(cuTexRefSetFilterMode(tex, (CUfilter_mode)5), CUDA_ERROR_INVALID_VALUE);
    CU_EXPECT_ERR(cuTexRefSetFormat(tex, CU_AD_FORMAT_FLOAT, 3), CUDA_ERROR_INVALID_VALUE);
    CU_EXPECT_ERR(cuTexRefGetBorderColor(NULL, tex), CUDA_ERROR_INVALID_VALUE);
    CU_EXPECT_ERR(cuTexRefSetBorderColor(tex, NULL), CUDA_ERROR_INVALID_VALUE);
    CU_EXPECT_ERR(cuTexRefGetFlags(NULL, tex), CUDA_ERROR_INVALID_VALUE);
    CU_EXPECT_ERR(cuTexRefGetFilterMode(&filter, NULL), CUDA_ERROR_INVALID_VALUE);
    CU_EXPECT_ERR(cuTexRefCreate(NULL), CUDA_ERROR_INVALID_VALUE);
    CU_CHECK(cuTexRefDestroy(tex));

    CU_EXPECT_ERR_AS("cuModuleGetTexRef(no such name)",
                     cuModuleGetTexRef(&tex, module, "no_such_texture"), CUDA_ERROR_NOT_FOUND);
    CU_EXPECT_ERR_AS("cuModuleGetTexRef(a plain variable)",
                     cuModuleGetTexRef(&tex, module, "plain"), CUDA_ERROR_NOT_FOUND);
    CU_EXPECT_ERR_AS("cuModuleGetSurfRef(a texture reference)",
                     cuModuleGetSurfRef((CUsurfref *)&tex, module, "tex_lin"),
                     CUDA_ERROR_NOT_FOUND);
    CU_EXPECT_ERR_AS("cuModuleGetTexRef(NULL)", cuModuleGetTexRef(NULL, module, "tex_lin"),
                     CUDA_ERROR_INVALID_VALUE);
    CU_EXPECT_ERR_AS("cuModuleGetTexRef(NULL name)", cuModuleGetTexRef(&tex, module, NULL),
                     CUDA_ERROR_INVALID_VALUE);
    CUsurfref surf;
    CU_EXPECT_ERR_AS("cuModuleGetSurfRef(NULL name)", cuModuleGetSurfRef(&surf, module, NULL),
                     CUDA_ERROR_INVALID_VALUE);
    CU_EXPECT_ERR_AS("cuModuleGetGlobal(a texture reference)",
                     cuModuleGetGlobal(&p, NULL, module, "tex_lin"), CUDA_ERROR_NOT_FOUND);
    CU_CHECK(cuModuleGetTexRef(&tex, module, "tex_lin"));
    CU_CHECK(cuModuleGetTexRef(&again, module, "tex_lin"));
    EXPECT(tex == again, "one texture reference per name");
    CU_CHECK(cuParamSetTexRef(function("fetch_lin"), CU_PARAM_TR_DEFAULT, tex));
    CU_EXPECT_ERR_AS("cuParamSetTexRef(texture unit 0)",
                     cuParamSetTexRef(function("fetch_lin"), 0, tex), CUDA_ERROR_INVALID_VALUE);
    printf("module references: ok\n");
}

int main(void) {
    CU_CHECK(cuInit(0));
    CUdevice dev;
    CU_CHECK(cuDeviceGet(&dev, 0));
    CUcontext ctx;
    CU_CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CU_CHECK(cuCtxSetCurrent(ctx));
    CU_CHECK(cuModuleLoadData(&module, PTX));

    linear();
    pitched();
    array();
    surface();
    state();

    CUtexref tex;
    CU_CHECK(cuModuleGetTexRef(&tex, module, "tex_lin"));
    CU_CHECK(cuModuleUnload(module));
    // The module's references go with it.
    CUfilter_mode filter;
    CU_EXPECT_ERR_AS("cuTexRefGetFilterMode(reference of an unloaded module)",
                     cuTexRefGetFilterMode(&filter, tex), CUDA_ERROR_INVALID_HANDLE);
    CU_CHECK(cuDevicePrimaryCtxRelease(dev));
    printf("PASS\n");
    return 0;
}
