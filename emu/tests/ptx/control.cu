// Divergence, reconvergence, barriers with exited threads, generic
// pointers to shared and local memory, switch statements, deep recursion.
__device__ __noinline__ unsigned mask_in_function(int x) {
    if (x & 2) return __activemask() | 0x80000000u;
    return __activemask() & 0x7fffffffu;
}

extern "C" __global__ void divergence(unsigned *out) {
    int lane = threadIdx.x & 31;
    unsigned *o = out + threadIdx.x * 6;
    unsigned a;
    if (lane < 16) {
        if (lane & 1) a = __activemask();
        else a = __activemask() + 1;
    } else {
        a = __activemask() + 2;
    }
    o[0] = a;
    // Data-dependent loop with break; all lanes reconverge after it.
    int i = 0;
    for (; i < 100; i++) {
        if (i * 3 > lane) break;
    }
    o[1] = __activemask();
    o[2] = i;
    // A device function called from divergent code.
    o[3] = (lane % 3 == 0) ? mask_in_function(lane) : 0;
    // Shuffle inside a branch among the lanes of that branch.
    if (lane >= 8 && lane < 24) o[4] = __shfl_down_sync(0x00ffff00u, lane * 10, 4, 8);
    else o[4] = 7;
    o[5] = __popc(__activemask());
}

__device__ int sum_through(int *p, int n) {
    int s = 0;
    for (int i = 0; i < n; i++) s += p[i];
    return s;
}

__device__ __noinline__ int sum_generic(int *p, int n) { return sum_through(p, n); }

// Threads >= live return at once; the rest synchronise and read neighbours.
extern "C" __global__ void early_exit_barrier(int *out, int live) {
    __shared__ int s[256];
    int t = threadIdx.x;
    if (t >= live) return;
    s[t] = t * 2;
    __syncthreads();
    int v = s[(t + 1) % live];
    __syncthreads();
    s[t] = v + 1;
    __syncthreads();
    int local[4] = {t, t + 1, t + 2, s[(t + 3) % live]};
    out[t] = sum_generic(local, 4) + sum_generic(&s[0], 2) + __syncthreads_or(t == 5) * 1000 +
             __syncthreads_and(t < 1000) * 10000;
}

extern "C" __global__ void switcher(const int *in, int *out) {
    int t = threadIdx.x;
    int r;
    switch (in[t] & 15) {
    case 0: r = 11; break;
    case 1: r = in[t] * 3; break;
    case 2: r = -5; break;
    case 3: r = in[t] ^ 0x55; break;
    case 4: r = 100; break;
    case 5: r = in[t] + 7; break;
    case 6: r = 60; break;
    case 7: r = 61; break;
    case 9: r = 99; break;
    default: r = -1;
    }
    out[t] = r;
}

// Each frame passes a pointer to its own local array down: the recursion
// cannot become a loop.
__device__ __noinline__ int deep(int n, volatile int *up) {
    volatile int mine[2];
    mine[0] = n;
    mine[1] = up[0] + 1;
    if (n == 0) return mine[1];
    return deep(n - 1, mine) + (mine[0] - n);
}

extern "C" __global__ void recurse(int *out, int n) {
    volatile int start[1] = {0};
    out[threadIdx.x] = deep(n + threadIdx.x, start);
}

// Vector loads and stores through generic pointers to shared memory.
extern "C" __global__ void vectors(const float4 *in, float4 *out) {
    __shared__ float4 buf[64];
    int t = threadIdx.x;
    float4 *p = &buf[63 - t];
    *p = in[t];
    __syncthreads();
    float4 v = buf[t];
    out[t] = make_float4(v.w, v.z, v.y, v.x);
}
