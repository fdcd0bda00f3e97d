// Device arithmetic against a host reference computed in this program:
// - integers, 32 and 64 bits, signed and unsigned: division, remainder, wrapping
//   multiply and add, shifts, __mulhi/__umulhi/__mul64hi/__umul64hi,
//   __popc/__clz/__brev/__ffs (and the 64-bit forms), min, max, abs;
// - float: sqrtf, expf, logf, sinf, cosf, powf, fmaf, rintf, floorf, ceilf,
//   fabsf, fminf, fmaxf, division, __fdividef, rsqrtf, and conversions
//   float <-> int <-> double with each rounding (__float2int_rn/rz/ru/rd, ...);
// - double: the same functions in double precision and their conversions;
// - half (cuda_fp16.h): conversions, __hadd, __hsub, __hmul, __hfma and the
//   __half operators.
// Exact operations (integer ops, IEEE-rounded sqrt/division/fma, rounding
// functions, conversions) must match bit for bit; the others within a small
// relative tolerance.
//
// Prints `<type> <op>: ok` per operation and `<type>: <count> ops ok` per type
// (types: int32, uint32, int64, uint64, float, double, half).
// Self-checking: `FAIL: <reason>` and exit status 1 on any mismatch, `PASS` as
// the last line on success.

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "check.h"

static const int N = 64;

// ---------------------------------------------------------------------------
// Host versions of the bit intrinsics
// ---------------------------------------------------------------------------

static int h_popc(unsigned long long v) {
    int c = 0;
    for (; v; v >>= 1) c += (int)(v & 1);
    return c;
}

static int h_clz(unsigned long long v, int bits) {
    int c = 0;
    for (int i = bits - 1; i >= 0 && !((v >> i) & 1); i--) c++;
    return c;
}

static unsigned long long h_brev(unsigned long long v, int bits) {
    unsigned long long r = 0;
    for (int i = 0; i < bits; i++)
        if ((v >> i) & 1) r |= 1ull << (bits - 1 - i);
    return r;
}

static int h_ffs(unsigned long long v, int bits) {
    for (int i = 0; i < bits; i++)
        if ((v >> i) & 1) return i + 1;
    return 0;
}

// ---------------------------------------------------------------------------
// Integer operations: X(name, device expression, host expression)
// ---------------------------------------------------------------------------

#define I32_OPS(X)                                                                           \
    X("div", a / b, a / b)                                                                   \
    X("rem", a % b, a % b)                                                                   \
    X("mul", (int)((unsigned)a * (unsigned)b), (int)((unsigned)a * (unsigned)b))             \
    X("add", (int)((unsigned)a + (unsigned)b), (int)((unsigned)a + (unsigned)b))             \
    X("sub", (int)((unsigned)a - (unsigned)b), (int)((unsigned)a - (unsigned)b))             \
    X("shl", (int)((unsigned)a << (b & 31)), (int)((unsigned)a << (b & 31)))                 \
    X("shr", a >> (b & 31), a >> (b & 31))                                                   \
    X("__mulhi", __mulhi(a, b), (int)(((long long)a * b) >> 32))                             \
    X("min", min(a, b), std::min(a, b))                                                      \
    X("max", max(a, b), std::max(a, b))                                                      \
    X("abs", abs(a), abs(a))                                                                 \
    X("__popc", __popc((unsigned)a), h_popc((unsigned)a))                                    \
    X("__clz", __clz(a), h_clz((unsigned)a, 32))                                             \
    X("__brev", (int)__brev((unsigned)a), (int)h_brev((unsigned)a, 32))                      \
    X("__ffs", __ffs(a), h_ffs((unsigned)a, 32))

#define U32_OPS(X)                                                                           \
    X("div", a / b, a / b)                                                                   \
    X("rem", a % b, a % b)                                                                   \
    X("mul", a * b, a * b)                                                                   \
    X("shl", a << (b & 31), a << (b & 31))                                                   \
    X("shr", a >> (b & 31), a >> (b & 31))                                                   \
    X("__umulhi", __umulhi(a, b), (unsigned)(((unsigned long long)a * b) >> 32))             \
    X("min", min(a, b), std::min(a, b))                                                      \
    X("max", max(a, b), std::max(a, b))                                                      \
    X("__popc", __popc(a), h_popc(a))                                                        \
    X("__clz", __clz((int)a), h_clz(a, 32))                                                  \
    X("__brev", __brev(a), (unsigned)h_brev(a, 32))                                          \
    X("__ffs", __ffs((int)a), h_ffs(a, 32))

#define I64_OPS(X)                                                                           \
    X("div", a / b, a / b)                                                                   \
    X("rem", a % b, a % b)                                                                   \
    X("mul", (long long)((unsigned long long)a * (unsigned long long)b),                     \
      (long long)((unsigned long long)a * (unsigned long long)b))                            \
    X("add", (long long)((unsigned long long)a + (unsigned long long)b),                     \
      (long long)((unsigned long long)a + (unsigned long long)b))                            \
    X("shl", (long long)((unsigned long long)a << (b & 63)),                                 \
      (long long)((unsigned long long)a << (b & 63)))                                        \
    X("shr", a >> (b & 63), a >> (b & 63))                                                   \
    X("__mul64hi", __mul64hi(a, b), (long long)(((__int128)a * b) >> 64))                    \
    X("min", min(a, b), std::min(a, b))                                                      \
    X("max", max(a, b), std::max(a, b))                                                      \
    X("llabs", llabs(a), llabs(a))                                                           \
    X("__popcll", __popcll((unsigned long long)a), h_popc((unsigned long long)a))            \
    X("__clzll", __clzll(a), h_clz((unsigned long long)a, 64))                               \
    X("__brevll", (long long)__brevll((unsigned long long)a),                                \
      (long long)h_brev((unsigned long long)a, 64))                                          \
    X("__ffsll", __ffsll(a), h_ffs((unsigned long long)a, 64))

#define U64_OPS(X)                                                                           \
    X("div", a / b, a / b)                                                                   \
    X("rem", a % b, a % b)                                                                   \
    X("mul", a * b, a * b)                                                                   \
    X("shl", a << (b & 63), a << (b & 63))                                                   \
    X("shr", a >> (b & 63), a >> (b & 63))                                                   \
    X("__umul64hi", __umul64hi(a, b),                                                        \
      (unsigned long long)(((unsigned __int128)a * b) >> 64))                                \
    X("min", min(a, b), std::min(a, b))                                                      \
    X("max", max(a, b), std::max(a, b))

#define COUNT_OP(name, dev, host) +1
#define NAME_OP(name, dev, host) name,
#define DEV_OP(name, dev, host) out[(op++) * n + i] = (unsigned long long)(dev);
#define HOST_OP(name, dev, host) want[op++] = (unsigned long long)(host);

#define INT_KERNEL(kernel, T, OPS)                                                           \
    __global__ void kernel(const T *as, const T *bs, unsigned long long *out, int n) {       \
        int i = blockIdx.x * blockDim.x + threadIdx.x;                                       \
        if (i >= n) return;                                                                  \
        T a = as[i], b = bs[i];                                                              \
        int op = 0;                                                                          \
        OPS(DEV_OP)                                                                          \
    }

INT_KERNEL(k_int32, int, I32_OPS)
INT_KERNEL(k_uint32, unsigned, U32_OPS)
INT_KERNEL(k_int64, long long, I64_OPS)
INT_KERNEL(k_uint64, unsigned long long, U64_OPS)

// A small linear congruential generator for inputs.
static unsigned long long lcg_state = 0x853c49e6748fea9bull;
static unsigned long long next_u64() {
    lcg_state = lcg_state * 6364136223846793005ull + 1442695040888963407ull;
    unsigned long long hi = lcg_state >> 32;
    lcg_state = lcg_state * 6364136223846793005ull + 1442695040888963407ull;
    return (hi << 32) | (lcg_state >> 32);
}

// Runs an integer kernel on `as`/`bs` and compares every operation.
template <typename T>
static void check_int(const char *type, void (*kernel)(const T *, const T *, unsigned long long *,
                                                        int),
                      const T *as, const T *bs, const char *const *names, int nops,
                      void (*host)(T, T, unsigned long long *)) {
    T *da = NULL, *db = NULL;
    unsigned long long *dout = NULL;
    CHECK(cudaMalloc(&da, N * sizeof(T)));
    CHECK(cudaMalloc(&db, N * sizeof(T)));
    CHECK(cudaMalloc(&dout, (size_t)nops * N * sizeof(unsigned long long)));
    CHECK(cudaMemcpy(da, as, N * sizeof(T), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(db, bs, N * sizeof(T), cudaMemcpyHostToDevice));
    kernel<<<2, N / 2>>>(da, db, dout, N);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    unsigned long long *got = (unsigned long long *)malloc((size_t)nops * N * sizeof *got);
    EXPECT(got != NULL, "host malloc failed");
    CHECK(cudaMemcpy(got, dout, (size_t)nops * N * sizeof *got, cudaMemcpyDeviceToHost));
    unsigned long long want[64];
    for (int op = 0; op < nops; op++) {
        for (int i = 0; i < N; i++) {
            host(as[i], bs[i], want);
            const unsigned long long g = got[op * N + i];
            EXPECT(g == want[op], "%s %s: a=%lld b=%lld (0x%llx, 0x%llx): got %lld (0x%llx), "
                   "expected %lld (0x%llx)", type, names[op], (long long)as[i], (long long)bs[i],
                   (unsigned long long)as[i], (unsigned long long)bs[i], (long long)g, g,
                   (long long)want[op], want[op]);
        }
        printf("%s %s: ok\n", type, names[op]);
    }
    printf("%s: %d ops ok\n", type, nops);
    free(got);
    CHECK(cudaFree(da));
    CHECK(cudaFree(db));
    CHECK(cudaFree(dout));
}

#define HOST_FN(fn, T, OPS)                                                                  \
    static void fn(T a, T b, unsigned long long *want) {                                     \
        int op = 0;                                                                          \
        OPS(HOST_OP)                                                                         \
    }

HOST_FN(h_int32, int, I32_OPS)
HOST_FN(h_uint32, unsigned, U32_OPS)
HOST_FN(h_int64, long long, I64_OPS)
HOST_FN(h_uint64, unsigned long long, U64_OPS)

static void test_integers() {
    // int32: edge cases first, then pseudo-random values. `a` is never
    // INT_MIN (abs would overflow), b is never 0, and never INT_MIN / -1.
    {
        int as[N], bs[N];
        const int edges[][2] = {{0, 1},          {1, -1},         {-1, 1},       {7, 3},
                                {-7, 3},         {7, -3},         {-7, -3},      {INT_MAX, 2},
                                {INT_MIN + 1, -1}, {123456789, -987}, {-5, INT_MIN}, {INT_MAX, INT_MAX},
                                {0x40000000, 31}, {-1, 31},       {-2, 32},      {1 << 20, 4096}};
        const int ne = sizeof(edges) / sizeof(edges[0]);
        for (int i = 0; i < N; i++) {
            if (i < ne) {
                as[i] = edges[i][0];
                bs[i] = edges[i][1];
                continue;
            }
            unsigned long long r = next_u64();
            as[i] = (int)(unsigned)r;
            bs[i] = (int)(unsigned)(r >> 32) >> (int)(r % 24);  // assorted magnitudes
            if (as[i] == INT_MIN) as[i] = INT_MIN + 3;
            if (bs[i] == 0) bs[i] = 3;
        }
        static const char *const names[] = {I32_OPS(NAME_OP)};
        check_int<int>("int32", k_int32, as, bs, names, 0 I32_OPS(COUNT_OP), h_int32);
    }
    {
        unsigned as[N], bs[N];
        const unsigned edges[][2] = {{0, 1},          {1, 1},           {0xFFFFFFFFu, 1},
                                     {0xFFFFFFFFu, 0xFFFFFFFFu}, {0x80000000u, 2}, {100, 7},
                                     {7, 100},        {0xDEADBEEFu, 0x10000u}, {12345, 31}, {1, 32}};
        const int ne = sizeof(edges) / sizeof(edges[0]);
        for (int i = 0; i < N; i++) {
            if (i < ne) {
                as[i] = edges[i][0];
                bs[i] = edges[i][1];
                continue;
            }
            unsigned long long r = next_u64();
            as[i] = (unsigned)r;
            bs[i] = (unsigned)(r >> 32) >> (r % 28);
            if (bs[i] == 0) bs[i] = 5;
        }
        static const char *const names[] = {U32_OPS(NAME_OP)};
        check_int<unsigned>("uint32", k_uint32, as, bs, names, 0 U32_OPS(COUNT_OP), h_uint32);
    }
    {
        long long as[N], bs[N];
        const long long edges[][2] = {{0, 1},
                                      {1, -1},
                                      {-7, 3},
                                      {7, -3},
                                      {LLONG_MAX, 2},
                                      {LLONG_MIN + 1, -1},
                                      {-5, LLONG_MIN},
                                      {1234567890123456789LL, -987654321LL},
                                      {-1, 63},
                                      {1LL << 40, 64},
                                      {-1000000000000LL, 1000003LL},
                                      {0x7FFFFFFFLL, 0x100000000LL}};
        const int ne = sizeof(edges) / sizeof(edges[0]);
        for (int i = 0; i < N; i++) {
            if (i < ne) {
                as[i] = edges[i][0];
                bs[i] = edges[i][1];
                continue;
            }
            as[i] = (long long)next_u64();
            bs[i] = (long long)next_u64() >> (int)(next_u64() % 56);
            if (as[i] == LLONG_MIN) as[i] = LLONG_MIN + 9;
            if (bs[i] == 0) bs[i] = -11;
        }
        static const char *const names[] = {I64_OPS(NAME_OP)};
        check_int<long long>("int64", k_int64, as, bs, names, 0 I64_OPS(COUNT_OP), h_int64);
    }
    {
        unsigned long long as[N], bs[N];
        const unsigned long long edges[][2] = {{0, 1},
                                               {~0ull, 1},
                                               {~0ull, ~0ull},
                                               {1ull << 63, 3},
                                               {1000000007ull, 1ull << 33},
                                               {0xFEDCBA9876543210ull, 0x123456789ull}};
        const int ne = sizeof(edges) / sizeof(edges[0]);
        for (int i = 0; i < N; i++) {
            if (i < ne) {
                as[i] = edges[i][0];
                bs[i] = edges[i][1];
                continue;
            }
            as[i] = next_u64();
            bs[i] = next_u64() >> (next_u64() % 60);
            if (bs[i] == 0) bs[i] = 17;
        }
        static const char *const names[] = {U64_OPS(NAME_OP)};
        check_int<unsigned long long>("uint64", k_uint64, as, bs, names, 0 U64_OPS(COUNT_OP),
                                      h_uint64);
    }
}

// ---------------------------------------------------------------------------
// Floating point: X(name, device expression, host expression, relative tolerance)
// A tolerance of 0 means bit-for-bit equality (of the result widened to double).
// ---------------------------------------------------------------------------

static const double FTOL = 2e-6;   // a few ulp of float
static const double DTOL = 1e-14;  // a few ulp of double

#define F32_OPS(X)                                                                           \
    X("sqrtf", sqrtf(fabsf(x)), sqrtf(fabsf(x)), 0)                                          \
    X("div", x / y, x / y, 0)                                                                \
    X("fmaf", fmaf(x, y, z), fmaf(x, y, z), 0)                                               \
    X("rintf", rintf(x), rintf(x), 0)                                                        \
    X("floorf", floorf(x), floorf(x), 0)                                                     \
    X("ceilf", ceilf(x), ceilf(x), 0)                                                        \
    X("truncf", truncf(x), truncf(x), 0)                                                     \
    X("fabsf", fabsf(x), fabsf(x), 0)                                                        \
    X("fminf", fminf(x, y), fminf(x, y), 0)                                                  \
    X("fmaxf", fmaxf(x, y), fmaxf(x, y), 0)                                                  \
    X("expf", expf(x * 0.25f), expf(x * 0.25f), FTOL)                                        \
    X("logf", logf(fabsf(x) + 0.5f), logf(fabsf(x) + 0.5f), FTOL)                            \
    X("sinf", sinf(x * 0.25f), sinf(x * 0.25f), FTOL)                                        \
    X("cosf", cosf(x * 0.25f), cosf(x * 0.25f), FTOL)                                        \
    X("powf", powf(fabsf(x) * 0.125f + 0.1f, y * 0.25f),                                     \
      powf(fabsf(x) * 0.125f + 0.1f, y * 0.25f), FTOL)                                       \
    X("__fdividef", __fdividef(x, y), x / y, FTOL)                                           \
    X("rsqrtf", rsqrtf(fabsf(x) + 0.01f), 1.0f / sqrtf(fabsf(x) + 0.01f), FTOL)              \
    X("(int)f", (int)x, (int)x, 0)                                                           \
    X("__float2int_rn", __float2int_rn(x), (int)rintf(x), 0)                                 \
    X("__float2int_rz", __float2int_rz(x), (int)truncf(x), 0)                                \
    X("__float2int_ru", __float2int_ru(x), (int)ceilf(x), 0)                                 \
    X("__float2int_rd", __float2int_rd(x), (int)floorf(x), 0)                                \
    X("__float2uint_rn", __float2uint_rn(fabsf(x)), (unsigned)rintf(fabsf(x)), 0)            \
    X("__float2ll_rn", __float2ll_rn(x * 1000.0f), (long long)rintf(x * 1000.0f), 0)         \
    X("(float)int", (float)k, (float)k, 0)                                                   \
    X("__int2float_rn", __int2float_rn(k), (float)k, 0)                                      \
    X("__ll2float_rn", __ll2float_rn((long long)k * 1000003LL),                              \
      (float)((long long)k * 1000003LL), 0)                                                  \
    X("(double)f", (double)x, (double)x, 0)                                                  \
    X("(float)(double)", (float)((double)x / 3.0), (float)((double)x / 3.0), 0)              \
    X("__double2float_rn", __double2float_rn((double)x / 7.0), (float)((double)x / 7.0), 0)

#define F64_OPS(X)                                                                           \
    X("sqrt", sqrt(fabs(x)), sqrt(fabs(x)), 0)                                               \
    X("div", x / y, x / y, 0)                                                                \
    X("fma", fma(x, y, z), fma(x, y, z), 0)                                                  \
    X("rint", rint(x), rint(x), 0)                                                           \
    X("floor", floor(x), floor(x), 0)                                                        \
    X("ceil", ceil(x), ceil(x), 0)                                                           \
    X("trunc", trunc(x), trunc(x), 0)                                                        \
    X("fabs", fabs(x), fabs(x), 0)                                                           \
    X("fmin", fmin(x, y), fmin(x, y), 0)                                                     \
    X("fmax", fmax(x, y), fmax(x, y), 0)                                                     \
    X("exp", exp(x * 0.25), exp(x * 0.25), DTOL)                                             \
    X("log", log(fabs(x) + 0.5), log(fabs(x) + 0.5), DTOL)                                   \
    X("sin", sin(x * 0.25), sin(x * 0.25), DTOL)                                             \
    X("cos", cos(x * 0.25), cos(x * 0.25), DTOL)                                             \
    X("pow", pow(fabs(x) * 0.125 + 0.1, y * 0.25), pow(fabs(x) * 0.125 + 0.1, y * 0.25),    \
      DTOL)                                                                                  \
    X("(int)d", (int)x, (int)x, 0)                                                           \
    X("__double2int_rn", __double2int_rn(x), (int)rint(x), 0)                                \
    X("__double2int_rz", __double2int_rz(x), (int)trunc(x), 0)                               \
    X("__double2ll_rn", __double2ll_rn(x * 1e6), (long long)rint(x * 1e6), 0)               \
    X("(long long)d", (long long)(x * 1e9), (long long)(x * 1e9), 0)                         \
    X("(double)int", (double)k, (double)k, 0)                                                \
    X("__ll2double_rn", __ll2double_rn((long long)k * 1000000007LL),                         \
      (double)((long long)k * 1000000007LL), 0)                                              \
    X("(float)d", (float)x, (float)x, 0)

#define FCOUNT_OP(name, dev, host, tol) +1
#define FNAME_OP(name, dev, host, tol) name,
#define FTOL_OP(name, dev, host, tol) tol,
#define FDEV_OP(name, dev, host, tol) out[(op++) * n + i] = (double)(dev);
#define FHOST_OP(name, dev, host, tol) want[op++] = (double)(host);

__global__ void k_float(const float *xs, const float *ys, const float *zs, const int *ks,
                        double *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float x = xs[i], y = ys[i], z = zs[i];
    int k = ks[i];
    int op = 0;
    F32_OPS(FDEV_OP)
}

__global__ void k_double(const double *xs, const double *ys, const double *zs, const int *ks,
                         double *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    double x = xs[i], y = ys[i], z = zs[i];
    int k = ks[i];
    int op = 0;
    F64_OPS(FDEV_OP)
}

static void host_float(float x, float y, float z, int k, double *want) {
    int op = 0;
    F32_OPS(FHOST_OP)
}

static void host_double(double x, double y, double z, int k, double *want) {
    int op = 0;
    F64_OPS(FHOST_OP)
}

static bool bits_equal(double a, double b) { return memcmp(&a, &b, sizeof a) == 0; }

static bool close_enough(double got, double want, double tol) {
    if (tol == 0) return bits_equal(got, want);
    // Equal infinities differ by NaN; NaN matches NaN.
    if (isinf(want) || isnan(want)) return bits_equal(got, want) || (isnan(got) && isnan(want));
    return fabs(got - want) <= tol * fabs(want) + tol * 0.5;
}

template <typename T>
static void check_float(const char *type,
                        void (*kernel)(const T *, const T *, const T *, const int *, double *, int),
                        void (*host)(T, T, T, int, double *), const char *const *names,
                        const double *tols, int nops) {
    T xs[N], ys[N], zs[N];
    int ks[N];
    // x: ties and near-ties for the rounding functions, signed zeros, and values
    // in [-40, 40]; y: |y| in [0.5, 9]; k: integers that float cannot hold exactly.
    const T fixed_x[] = {0.5, -0.5, 1.5, 2.5, -2.5, 3.5, -3.5, 0.0, -0.0, 0.49999997,
                         -0.75, 1e-3, 100.25, -77.75, 12345.678, -39.9};
    const int fixed_k[] = {0, 1, -1, 16777216, 16777217, 16777219, -33554435, 2147483647,
                           -2147483647, 123456789, 1 << 30, 99};
    const int nx = sizeof(fixed_x) / sizeof(fixed_x[0]);
    const int nk = sizeof(fixed_k) / sizeof(fixed_k[0]);
    for (int i = 0; i < N; i++) {
        const double u = (double)(next_u64() >> 11) / 9007199254740992.0;  // [0, 1)
        const double v = (double)(next_u64() >> 11) / 9007199254740992.0;
        const double w = (double)(next_u64() >> 11) / 9007199254740992.0;
        xs[i] = i < nx ? fixed_x[i] : (T)(u * 80.0 - 40.0);
        ys[i] = (T)((v < 0.5 ? -1 : 1) * (0.5 + fmod(v * 17.0, 8.5)));
        zs[i] = (T)(w * 200.0 - 100.0);
        ks[i] = i < nk ? fixed_k[i] : (int)(next_u64() >> 33) - (1 << 30);
    }
    T *dx = NULL, *dy = NULL, *dz = NULL;
    int *dk = NULL;
    double *dout = NULL;
    CHECK(cudaMalloc(&dx, sizeof xs));
    CHECK(cudaMalloc(&dy, sizeof ys));
    CHECK(cudaMalloc(&dz, sizeof zs));
    CHECK(cudaMalloc(&dk, sizeof ks));
    CHECK(cudaMalloc(&dout, (size_t)nops * N * sizeof(double)));
    CHECK(cudaMemcpy(dx, xs, sizeof xs, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dy, ys, sizeof ys, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dz, zs, sizeof zs, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dk, ks, sizeof ks, cudaMemcpyHostToDevice));
    kernel<<<4, N / 4>>>(dx, dy, dz, dk, dout, N);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    double *got = (double *)malloc((size_t)nops * N * sizeof(double));
    EXPECT(got != NULL, "host malloc failed");
    CHECK(cudaMemcpy(got, dout, (size_t)nops * N * sizeof(double), cudaMemcpyDeviceToHost));
    double want[64];
    for (int op = 0; op < nops; op++) {
        for (int i = 0; i < N; i++) {
            host(xs[i], ys[i], zs[i], ks[i], want);
            const double g = got[op * N + i];
            EXPECT(close_enough(g, want[op], tols[op]),
                   "%s %s: x=%.17g y=%.17g z=%.17g k=%d: got %.17g, expected %.17g", type,
                   names[op], (double)xs[i], (double)ys[i], (double)zs[i], ks[i], g, want[op]);
        }
        printf("%s %s: ok\n", type, names[op]);
    }
    printf("%s: %d ops ok\n", type, nops);
    free(got);
    CHECK(cudaFree(dx));
    CHECK(cudaFree(dy));
    CHECK(cudaFree(dz));
    CHECK(cudaFree(dk));
    CHECK(cudaFree(dout));
}

static void test_floats() {
    {
        static const char *const names[] = {F32_OPS(FNAME_OP)};
        static const double tols[] = {F32_OPS(FTOL_OP)};
        check_float<float>("float", k_float, host_float, names, tols, 0 F32_OPS(FCOUNT_OP));
    }
    {
        static const char *const names[] = {F64_OPS(FNAME_OP)};
        static const double tols[] = {F64_OPS(FTOL_OP)};
        check_float<double>("double", k_double, host_double, names, tols, 0 F64_OPS(FCOUNT_OP));
    }
}

// ---------------------------------------------------------------------------
// Half precision
// ---------------------------------------------------------------------------

static const int HALF_OPS = 8;
static const char *const half_names[HALF_OPS] = {
    "__float2half", "__hadd", "__hsub", "__hmul", "__hfma", "operator+", "operator*",
    "__half2int_rn"};

__global__ void k_half(const float *xs, const float *ys, const float *zs, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const __half a = __float2half(xs[i]);
    const __half b = __float2half(ys[i]);
    const __half c = __float2half(zs[i]);
    out[0 * n + i] = __half2float(a);
    out[1 * n + i] = __half2float(__hadd(a, b));
    out[2 * n + i] = __half2float(__hsub(a, b));
    out[3 * n + i] = __half2float(__hmul(a, b));
    out[4 * n + i] = __half2float(__hfma(a, b, c));
    out[5 * n + i] = __half2float(a + c);
    out[6 * n + i] = __half2float(b * c);
    out[7 * n + i] = (float)__half2int_rn(a);
}

// Rounds to half through the host-side conversion of cuda_fp16.h.
static double to_half(double v) { return (double)__half2float(__double2half(v)); }

static void test_half() {
    float xs[N], ys[N], zs[N];
    const float fixed[] = {1.0f, -2.5f, 0.1f, 65504.0f, 1e-5f, 3.14159f, -0.0f, 2049.0f};
    const int nf = sizeof(fixed) / sizeof(fixed[0]);
    for (int i = 0; i < N; i++) {
        const double u = (double)(next_u64() >> 11) / 9007199254740992.0;
        const double v = (double)(next_u64() >> 11) / 9007199254740992.0;
        const double w = (double)(next_u64() >> 11) / 9007199254740992.0;
        xs[i] = i < nf ? fixed[i] : (float)(u * 200.0 - 100.0);
        ys[i] = (float)(v * 20.0 - 10.0);
        zs[i] = (float)(w * 64.0 - 32.0);
    }
    float *dx = NULL, *dy = NULL, *dz = NULL, *dout = NULL;
    CHECK(cudaMalloc(&dx, sizeof xs));
    CHECK(cudaMalloc(&dy, sizeof ys));
    CHECK(cudaMalloc(&dz, sizeof zs));
    CHECK(cudaMalloc(&dout, HALF_OPS * N * sizeof(float)));
    CHECK(cudaMemcpy(dx, xs, sizeof xs, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dy, ys, sizeof ys, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dz, zs, sizeof zs, cudaMemcpyHostToDevice));
    k_half<<<2, N / 2>>>(dx, dy, dz, dout, N);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    float got[HALF_OPS * N];
    CHECK(cudaMemcpy(got, dout, sizeof got, cudaMemcpyDeviceToHost));
    for (int op = 0; op < HALF_OPS; op++) {
        for (int i = 0; i < N; i++) {
            // Exact in double, then rounded once to half: what IEEE half
            // arithmetic gives.
            const double a = to_half(xs[i]), b = to_half(ys[i]), c = to_half(zs[i]);
            double want = 0;
            switch (op) {
            case 0: want = a; break;
            case 1: want = to_half(a + b); break;
            case 2: want = to_half(a - b); break;
            case 3: want = to_half(a * b); break;
            case 4: want = to_half(a * b + c); break;
            case 5: want = to_half(a + c); break;
            case 6: want = to_half(b * c); break;
            case 7: want = (double)(int)rint(a); break;
            }
            EXPECT(bits_equal((double)got[op * N + i], want),
                   "half %s: x=%.9g y=%.9g z=%.9g: got %.9g, expected %.9g", half_names[op],
                   (double)xs[i], (double)ys[i], (double)zs[i], (double)got[op * N + i], want);
        }
        printf("half %s: ok\n", half_names[op]);
    }
    printf("half: %d ops ok\n", HALF_OPS);
    CHECK(cudaFree(dx));
    CHECK(cudaFree(dy));
    CHECK(cudaFree(dz));
    CHECK(cudaFree(dout));
}

int main() {
    CHECK(cudaSetDevice(0));
    test_integers();
    test_floats();
    test_half();
    printf("PASS\n");
    return 0;
}
