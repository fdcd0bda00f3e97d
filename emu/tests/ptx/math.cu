#include <cuda_fp16.h>
#include <cuda_bf16.h>
// Integer, float, double and half math, one output record per input element.
extern "C" __global__ void int_math(const int *a, const int *b, int *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int x = a[i], y = b[i];
    unsigned ux = (unsigned)x, uy = (unsigned)y;
    int *o = out + i * 24;
    o[0] = x + y; o[1] = x - y; o[2] = x * y;
    o[3] = y != 0 ? x / y : 0; o[4] = y != 0 ? x % y : 0;
    o[5] = uy != 0 ? ux / uy : 0; o[6] = uy != 0 ? ux % uy : 0;
    o[7] = x >> (y & 31); o[8] = ux >> (y & 31); o[9] = x << (y & 31);
    o[10] = __mulhi(x, y); o[11] = __umulhi(ux, uy);
    o[12] = min(x, y); o[13] = max(x, y); o[14] = umin(ux, uy); o[15] = abs(x);
    o[16] = __popc(ux); o[17] = __clz(x); o[18] = __brev(ux); o[19] = __ffs(x);
    o[20] = (x >> 3) & 0x1f; o[21] = __byte_perm(ux, uy, 0x5140); o[22] = __funnelshift_l(ux, uy, y);
    o[23] = (int)((signed char)x) + (int)((unsigned short)y) + __sad(x, y, 1);
}

extern "C" __global__ void long_math(const long long *a, const long long *b, long long *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    long long x = a[i], y = b[i];
    unsigned long long ux = x, uy = y;
    long long *o = out + i * 12;
    o[0] = x + y; o[1] = x * y; o[2] = y != 0 ? x / y : 0; o[3] = y != 0 ? x % y : 0;
    o[4] = uy != 0 ? ux / uy : 0; o[5] = x >> (y & 63); o[6] = ux >> (y & 63);
    o[7] = __mul64hi(x, y); o[8] = __umul64hi(ux, uy); o[9] = __popcll(ux) + __clzll(x);
    o[10] = (long long)__brevll(ux); o[11] = max(x, y) ^ min(ux, uy);
}

extern "C" __global__ void float_math(const float *a, const float *b, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float x = a[i], y = b[i];
    float *o = out + i * 20;
    o[0] = x + y; o[1] = x * y; o[2] = x / y; o[3] = fmaf(x, y, 1.0f);
    o[4] = sqrtf(fabsf(x)); o[5] = fminf(x, y); o[6] = fmaxf(x, y); o[7] = floorf(x);
    o[8] = ceilf(x); o[9] = truncf(x); o[10] = rintf(x); o[11] = (float)(int)x;
    o[12] = (float)(unsigned)fabsf(y); o[13] = copysignf(x, y); o[14] = __fdividef(x, 3.0f);
    o[15] = expf(x * 0.01f); o[16] = logf(fabsf(y) + 1.0f); o[17] = sinf(x); o[18] = cosf(y);
    o[19] = tanhf(x * 0.1f);
}

extern "C" __global__ void double_math(const double *a, const double *b, double *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    double x = a[i], y = b[i];
    double *o = out + i * 12;
    o[0] = x + y; o[1] = x * y; o[2] = x / y; o[3] = fma(x, y, 1.0);
    o[4] = sqrt(fabs(x)); o[5] = fmin(x, y); o[6] = fmax(x, y); o[7] = floor(x);
    o[8] = (double)(long long)x; o[9] = (double)(float)y; o[10] = exp(x * 0.01);
    o[11] = (double)__double2int_rn(x * 1.5);
}

extern "C" __global__ void half_math(const float *a, const float *b, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    __half x = __float2half(a[i]), y = __float2half(b[i]);
    __nv_bfloat16 bx = __float2bfloat16(a[i]), by = __float2bfloat16(b[i]);
    float *o = out + i * 8;
    o[0] = __half2float(__hadd(x, y));
    o[1] = __half2float(__hmul(x, y));
    o[2] = __half2float(__hfma(x, y, __float2half(1.0f)));
    o[3] = __hlt(x, y) ? 1.0f : 0.0f;
    o[4] = __bfloat162float(__hadd(bx, by));
    o[5] = __bfloat162float(__hmul(bx, by));
    __half2 h2 = __halves2half2(x, y);
    h2 = __hmul2(h2, h2);
    o[6] = __low2float(h2) + __high2float(h2);
    o[7] = __half2float(__float2half_rz(a[i] * 3.3f));
}
