// `__device__` functions: inlined helpers, `__noinline__` functions (real PTX
// calls) with scalar, pointer and struct parameters and struct results,
// out-parameters pointing at local variables, recursion (factorial, Fibonacci,
// Ackermann with small arguments, mutual recursion), and a function template.
//
// Prints one line per kernel, e.g. `recursive fib: ok`.
// Self-checking: `FAIL: <reason>` and exit status 1 on any mismatch, `PASS` as
// the last line on success.

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#include "check.h"

static const int N = 96;

// --- Helpers, each with a host twin for the reference -----------------------

__host__ __device__ inline int square(int x) { return x * x; }

__host__ __device__ __forceinline__ int clamp_to(int x, int lo, int hi) {
    return x < lo ? lo : (x > hi ? hi : x);
}

template <typename T>
__host__ __device__ T cube(T x) {
    return x * x * x;
}

struct Vec3 {
    float x, y, z;
};

struct Stats {
    long long sum;
    int min, max;
    unsigned char flags;
};

__device__ __noinline__ float dot(Vec3 a, Vec3 b) { return a.x * b.x + a.y * b.y + a.z * b.z; }

__device__ __noinline__ Vec3 cross(Vec3 a, Vec3 b) {
    Vec3 r = {a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x};
    return r;
}

// Quotient and remainder through pointers to the caller's local variables.
__device__ __noinline__ void divmod(int a, int b, int *q, int *r) {
    *q = a / b;
    *r = a % b;
}

__device__ __noinline__ Stats stats(const int *v, int n) {
    Stats s = {0, v[0], v[0], 0};
    for (int i = 0; i < n; i++) {
        s.sum += v[i];
        s.min = v[i] < s.min ? v[i] : s.min;
        s.max = v[i] > s.max ? v[i] : s.max;
    }
    s.flags = (unsigned char)((s.sum < 0) | ((s.min == s.max) << 1) | (n << 2));
    return s;
}

// Eight parameters of mixed types: more than a handful of registers' worth.
__device__ __noinline__ double mix(int a, double b, char c, float d, long long e, short f,
                                   unsigned g, double h) {
    return a + b * 2 + c * 3 + d * 4 + (double)e * 5 + f * 6 + g * 7.0 + h * 8;
}

// --- Recursion ----------------------------------------------------------------

__host__ __device__ unsigned long long factorial(int n) {
    return n <= 1 ? 1ull : (unsigned long long)n * factorial(n - 1);
}

__host__ __device__ int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

__host__ __device__ int ackermann(int m, int n) {
    if (m == 0) return n + 1;
    if (n == 0) return ackermann(m - 1, 1);
    return ackermann(m - 1, ackermann(m, n - 1));
}

__host__ __device__ bool is_odd(unsigned n);
__host__ __device__ bool is_even(unsigned n) { return n == 0 ? true : is_odd(n - 1); }
__host__ __device__ bool is_odd(unsigned n) { return n == 0 ? false : is_even(n - 1); }

// --- Kernels --------------------------------------------------------------------

__global__ void k_inline(const int *in, int *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = clamp_to(square(in[i]) - cube(in[i] % 7), -5000, 5000) + cube(i & 3);
}

__global__ void k_noinline(const Vec3 *a, const Vec3 *b, float *dots, Vec3 *crosses, int *qr,
                           double *mixed, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    dots[i] = dot(a[i], b[i]);
    crosses[i] = cross(a[i], b[i]);
    int q, r;
    divmod(i * 37 - 1000, (i % 9) + 1, &q, &r);
    qr[2 * i] = q;
    qr[2 * i + 1] = r;
    mixed[i] = mix(i, i * 0.5, (char)(i & 0x7f), i * 0.25f, (long long)i << 33, (short)-i,
                   (unsigned)i * 3u, 1.0 / (i + 1));
}

__global__ void k_stats(const int *v, int len, Stats *out) {
    // Each thread summarises a prefix of a different length.
    int i = threadIdx.x;
    if (i < len) out[i] = stats(v, i + 1);
}

__global__ void k_recursive(unsigned long long *fact, int *fibs, int *ack, int *parity, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    fact[i] = factorial(i % 21);
    fibs[i] = fib(i % 16);
    ack[i] = ackermann(i % 3, i % 4);
    parity[i] = is_even((unsigned)(i % 12)) ? 2 : (is_odd((unsigned)(i % 12)) ? 1 : 0);
}

// --- Host -----------------------------------------------------------------------

int main() {
    CHECK(cudaSetDevice(0));

    {
        int in[N], out[N];
        for (int i = 0; i < N; i++) in[i] = (i * 7919) % 211 - 105;
        int *din = NULL, *dout = NULL;
        CHECK(cudaMalloc(&din, sizeof in));
        CHECK(cudaMalloc(&dout, sizeof out));
        CHECK(cudaMemcpy(din, in, sizeof in, cudaMemcpyHostToDevice));
        k_inline<<<3, 32>>>(din, dout, N);
        CHECK(cudaGetLastError());
        CHECK(cudaDeviceSynchronize());
        CHECK(cudaMemcpy(out, dout, sizeof out, cudaMemcpyDeviceToHost));
        for (int i = 0; i < N; i++) {
            const int want = clamp_to(square(in[i]) - cube(in[i] % 7), -5000, 5000) + cube(i & 3);
            EXPECT(out[i] == want, "inline helpers: out[%d] = %d, expected %d", i, out[i], want);
        }
        printf("inline helpers: ok\n");
        CHECK(cudaFree(din));
        CHECK(cudaFree(dout));
    }

    {
        Vec3 a[N], b[N], crosses[N];
        float dots[N];
        int qr[2 * N];
        double mixed[N];
        for (int i = 0; i < N; i++) {
            // Small integers and halves: every product and sum is exact.
            a[i] = {(float)(i % 5) - 2.0f, (float)(i % 3) * 0.5f, (float)(i % 7)};
            b[i] = {(float)(i % 4), -1.5f, (float)(i % 11) - 5.0f};
        }
        Vec3 *da = NULL, *db = NULL, *dcross = NULL;
        float *ddots = NULL;
        int *dqr = NULL;
        double *dmixed = NULL;
        CHECK(cudaMalloc(&da, sizeof a));
        CHECK(cudaMalloc(&db, sizeof b));
        CHECK(cudaMalloc(&dcross, sizeof crosses));
        CHECK(cudaMalloc(&ddots, sizeof dots));
        CHECK(cudaMalloc(&dqr, sizeof qr));
        CHECK(cudaMalloc(&dmixed, sizeof mixed));
        CHECK(cudaMemcpy(da, a, sizeof a, cudaMemcpyHostToDevice));
        CHECK(cudaMemcpy(db, b, sizeof b, cudaMemcpyHostToDevice));
        k_noinline<<<2, 48>>>(da, db, ddots, dcross, dqr, dmixed, N);
        CHECK(cudaGetLastError());
        CHECK(cudaDeviceSynchronize());
        CHECK(cudaMemcpy(dots, ddots, sizeof dots, cudaMemcpyDeviceToHost));
        CHECK(cudaMemcpy(crosses, dcross, sizeof crosses, cudaMemcpyDeviceToHost));
        CHECK(cudaMemcpy(qr, dqr, sizeof qr, cudaMemcpyDeviceToHost));
        CHECK(cudaMemcpy(mixed, dmixed, sizeof mixed, cudaMemcpyDeviceToHost));
        for (int i = 0; i < N; i++) {
            const float d = a[i].x * b[i].x + a[i].y * b[i].y + a[i].z * b[i].z;
            EXPECT(dots[i] == d, "noinline dot: %d: %g, expected %g", i, dots[i], d);
            const Vec3 c = {a[i].y * b[i].z - a[i].z * b[i].y, a[i].z * b[i].x - a[i].x * b[i].z,
                            a[i].x * b[i].y - a[i].y * b[i].x};
            EXPECT(crosses[i].x == c.x && crosses[i].y == c.y && crosses[i].z == c.z,
                   "noinline cross: %d: (%g, %g, %g), expected (%g, %g, %g)", i, crosses[i].x,
                   crosses[i].y, crosses[i].z, c.x, c.y, c.z);
            const int num = i * 37 - 1000, den = (i % 9) + 1;
            EXPECT(qr[2 * i] == num / den && qr[2 * i + 1] == num % den,
                   "noinline divmod(%d, %d): %d, %d", num, den, qr[2 * i], qr[2 * i + 1]);
            const double m = i + i * 0.5 * 2 + (char)(i & 0x7f) * 3 + i * 0.25f * 4 +
                             (double)((long long)i << 33) * 5 + (short)-i * 6 +
                             (unsigned)i * 3u * 7.0 + 1.0 / (i + 1) * 8;
            EXPECT(fabs(mixed[i] - m) <= 1e-12 * fabs(m) + 1e-12,
                   "noinline mix: %d: %.17g, expected %.17g", i, mixed[i], m);
        }
        printf("noinline dot/cross/divmod/mix: ok\n");
        CHECK(cudaFree(da));
        CHECK(cudaFree(db));
        CHECK(cudaFree(dcross));
        CHECK(cudaFree(ddots));
        CHECK(cudaFree(dqr));
        CHECK(cudaFree(dmixed));
    }

    {
        const int len = 40;
        int v[len];
        for (int i = 0; i < len; i++) v[i] = (i * 193) % 101 - 50;
        int *dv = NULL;
        Stats *dout = NULL;
        CHECK(cudaMalloc(&dv, sizeof v));
        CHECK(cudaMalloc(&dout, len * sizeof(Stats)));
        CHECK(cudaMemcpy(dv, v, sizeof v, cudaMemcpyHostToDevice));
        k_stats<<<1, 64>>>(dv, len, dout);
        CHECK(cudaGetLastError());
        CHECK(cudaDeviceSynchronize());
        Stats out[len];
        CHECK(cudaMemcpy(out, dout, sizeof out, cudaMemcpyDeviceToHost));
        for (int i = 0; i < len; i++) {
            long long sum = 0;
            int mn = v[0], mx = v[0];
            for (int j = 0; j <= i; j++) {
                sum += v[j];
                mn = v[j] < mn ? v[j] : mn;
                mx = v[j] > mx ? v[j] : mx;
            }
            const unsigned char flags =
                (unsigned char)((sum < 0) | ((mn == mx) << 1) | ((i + 1) << 2));
            EXPECT(out[i].sum == sum && out[i].min == mn && out[i].max == mx &&
                       out[i].flags == flags,
                   "noinline struct result: prefix %d: {%lld, %d, %d, %u}, expected "
                   "{%lld, %d, %d, %u}",
                   i + 1, out[i].sum, out[i].min, out[i].max, out[i].flags, sum, mn, mx, flags);
        }
        printf("noinline struct result: ok\n");
        CHECK(cudaFree(dv));
        CHECK(cudaFree(dout));
    }

    {
        unsigned long long fact[N];
        int fibs[N], ack[N], parity[N];
        unsigned long long *dfact = NULL;
        int *dfib = NULL, *dack = NULL, *dparity = NULL;
        CHECK(cudaMalloc(&dfact, sizeof fact));
        CHECK(cudaMalloc(&dfib, sizeof fibs));
        CHECK(cudaMalloc(&dack, sizeof ack));
        CHECK(cudaMalloc(&dparity, sizeof parity));
        k_recursive<<<3, 32>>>(dfact, dfib, dack, dparity, N);
        CHECK(cudaGetLastError());
        CHECK(cudaDeviceSynchronize());
        CHECK(cudaMemcpy(fact, dfact, sizeof fact, cudaMemcpyDeviceToHost));
        CHECK(cudaMemcpy(fibs, dfib, sizeof fibs, cudaMemcpyDeviceToHost));
        CHECK(cudaMemcpy(ack, dack, sizeof ack, cudaMemcpyDeviceToHost));
        CHECK(cudaMemcpy(parity, dparity, sizeof parity, cudaMemcpyDeviceToHost));
        for (int i = 0; i < N; i++) {
            EXPECT(fact[i] == factorial(i % 21), "recursive factorial(%d) = %llu, expected %llu",
                   i % 21, fact[i], factorial(i % 21));
            EXPECT(fibs[i] == fib(i % 16), "recursive fib(%d) = %d, expected %d", i % 16,
                   fibs[i], fib(i % 16));
            EXPECT(ack[i] == ackermann(i % 3, i % 4), "recursive ackermann(%d, %d) = %d, "
                   "expected %d", i % 3, i % 4, ack[i], ackermann(i % 3, i % 4));
            EXPECT(parity[i] == (i % 2 == 0 ? 2 : 1), "mutual recursion is_even/is_odd(%d) = %d",
                   i % 12, parity[i]);
        }
        printf("recursive factorial: ok\n");
        printf("recursive fib: ok\n");
        printf("recursive ackermann: ok\n");
        printf("mutual recursion: ok\n");
        CHECK(cudaFree(dfact));
        CHECK(cudaFree(dfib));
        CHECK(cudaFree(dack));
        CHECK(cudaFree(dparity));
    }

    printf("PASS\n");
    return 0;
}
