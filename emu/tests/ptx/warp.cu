// Warp-level primitives, including under divergence.
extern "C" __global__ void votes(const int *in, unsigned *out) {
    int t = threadIdx.x;
    int v = in[blockIdx.x * blockDim.x + t];
    unsigned *o = out + (blockIdx.x * blockDim.x + t) * 8;
    o[0] = __ballot_sync(0xffffffffu, v > 0);
    o[1] = __all_sync(0xffffffffu, v > 0);
    o[2] = __any_sync(0xffffffffu, v > 5);
    o[3] = __match_any_sync(0xffffffffu, v);
    int pred;
    o[4] = __match_all_sync(0xffffffffu, v & 1, &pred);
    o[5] = pred;
    o[6] = __activemask();
    // Divergent: only odd lanes vote; the mask must contain exactly them.
    if (t & 1) o[7] = __ballot_sync(0xaaaaaaaau, v > 0) ^ __activemask();
    else o[7] = __activemask();
}

extern "C" __global__ void shuffles(const int *in, int *out, int width) {
    int t = threadIdx.x;
    int v = in[t];
    int *o = out + t * 6;
    o[0] = __shfl_sync(0xffffffffu, v, (t * 7) & 31);
    o[1] = __shfl_up_sync(0xffffffffu, v, 3, width);
    o[2] = __shfl_down_sync(0xffffffffu, v, 5, width);
    o[3] = __shfl_xor_sync(0xffffffffu, v, 6, width);
    o[4] = __shfl_sync(0xffffffffu, v, t + 1, width);
    // Divergent shuffle among the lanes below 16.
    if ((t & 31) < 16) o[5] = __shfl_xor_sync(0x0000ffffu, v * 2, 1);
    else o[5] = -1;
}

// 64-bit and double shuffles, warp reductions, divergent loops with reconvergence.
extern "C" __global__ void warp_misc(const long long *in, long long *out) {
    int t = threadIdx.x;
    long long v = in[t];
    double d = (double)v * 0.5;
    out[t * 5 + 0] = __shfl_down_sync(0xffffffffu, v, 1);
    out[t * 5 + 1] = (long long)__shfl_xor_sync(0xffffffffu, d, 2);
    out[t * 5 + 2] = __reduce_add_sync(0xffffffffu, (unsigned)t);
    // Lanes loop a data-dependent number of times, then shuffle together.
    long long acc = 0;
    for (int i = 0; i < (t & 7); i++) acc += v * i;
    out[t * 5 + 3] = __shfl_sync(0xffffffffu, acc, 31 - (t & 31));
    unsigned m = __match_any_sync(0xffffffffu, (int)(v % 3));
    out[t * 5 + 4] = m;
}
