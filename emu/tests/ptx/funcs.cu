// Device functions, recursion, constant memory and __device__ variables.
__constant__ int coeffs[16];
__constant__ double scale = 2.5;
__device__ int counter;
__device__ int table[4] = {10, 20, 30, 40};
__device__ unsigned long long big_table[3] = {1ull << 40, 3, 5};

__device__ __noinline__ int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

__device__ __noinline__ long long fact(int n) { return n <= 1 ? 1 : n * fact(n - 1); }

struct Pair { int a; double b; };

__device__ __noinline__ Pair make_pair(int a, double b) {
    Pair p; p.a = a * 2; p.b = b + 1.0; return p;
}

// Recursion with a local array (stack memory per frame).
__device__ __noinline__ int sum_digits(int n, int depth) {
    int buf[8];
    for (int i = 0; i < 8; i++) buf[i] = (n >> i) & 1;
    int s = 0;
    for (int i = 0; i < 8; i++) s += buf[(i * 3 + depth) & 7];
    if (depth > 0 && n > 0) s += sum_digits(n / 2, depth - 1);
    return s;
}

extern "C" __global__ void use_funcs(long long *out, int n) {
    int i = threadIdx.x;
    if (i >= n) return;
    Pair p = make_pair(i, 0.5 * i);
    out[i * 6 + 0] = fib(i % 16);
    out[i * 6 + 1] = fact(i % 20);
    out[i * 6 + 2] = p.a + (long long)(p.b * 10);
    out[i * 6 + 3] = coeffs[i & 15] * (long long)(scale * 4) + table[i & 3];
    out[i * 6 + 4] = sum_digits(i * 37, i % 5);
    out[i * 6 + 5] = big_table[i % 3];
    atomicAdd(&counter, 1);
}
