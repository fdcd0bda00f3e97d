// Histogram with per-block shared-memory atomics merged by global atomics.
#define BINS 64
extern "C" __global__ void histogram(const unsigned char *data, int n, unsigned *bins) {
    __shared__ unsigned local[BINS];
    for (int b = threadIdx.x; b < BINS; b += blockDim.x) local[b] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        atomicAdd(&local[data[i] % BINS], 1u);
    __syncthreads();
    for (int b = threadIdx.x; b < BINS; b += blockDim.x) atomicAdd(&bins[b], local[b]);
}

// Every atomic operation on global memory, from every thread of every block.
extern "C" __global__ void atomics(int *i32, unsigned *u32, unsigned long long *u64,
                                   float *f32, double *f64, int *order) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    atomicAdd(&i32[0], 1);
    atomicSub(&i32[1], 2);
    atomicMin(&i32[2], t - 1000);
    atomicMax(&i32[3], t);
    atomicAnd(&u32[0], ~(1u << (t % 32)));
    atomicOr(&u32[1], 1u << (t % 32));
    atomicXor(&u32[2], 1u << (t % 8));
    atomicInc(&u32[3], 100u);
    atomicDec(&u32[4], 100u);
    atomicAdd(&u64[0], (unsigned long long)t);
    atomicMax(&u64[1], (unsigned long long)t * 1000000000ull);
    atomicMin(&u64[2], (unsigned long long)t + 5);
    atomicAdd(&f32[0], 0.5f);
    atomicAdd(&f64[0], 0.25);
    // A ticket lock-free counter: every thread gets a distinct slot.
    int slot = atomicAdd(&i32[4], 1);
    order[slot] = t;
    // CAS loop: multiply by 1 (no change) but exercise atomicCAS.
    int old = i32[5], assumed;
    do { assumed = old; old = atomicCAS(&i32[5], assumed, assumed + 3); } while (old != assumed);
    atomicExch(&u32[5], 7u);
}

// Shared-memory atomics of every kind, results copied out per block.
extern "C" __global__ void shared_atomics(int *out) {
    __shared__ int s[8];
    __shared__ unsigned long long s64;
    if (threadIdx.x < 8) s[threadIdx.x] = threadIdx.x == 2 ? 1 << 30 : 0;
    if (threadIdx.x == 0) s64 = 0;
    __syncthreads();
    int t = threadIdx.x;
    atomicAdd(&s[0], t);
    atomicMax(&s[1], t);
    atomicMin(&s[2], t);
    atomicOr(&s[3], 1 << (t % 31));
    atomicXor(&s[4], t);
    atomicAdd(&s64, (unsigned long long)t << 20);
    atomicCAS(&s[5], 0, t + 1);
    atomicInc((unsigned *)&s[6], 9u);
    __syncthreads();
    if (t < 7) out[blockIdx.x * 8 + t] = s[t];
    if (t == 7) out[blockIdx.x * 8 + 7] = (int)(s64 >> 20);
}
