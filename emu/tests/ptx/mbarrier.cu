#include <cooperative_groups.h>
#include <cuda/barrier>
#pragma nv_diag_suppress static_var_with_dynamic_init
// mbarrier-based synchronisation (sm_80): libcu++'s cuda::barrier, raw
// mbarrier inline PTX with parity waits, and cuda::memcpy_async.
namespace cg = cooperative_groups;
using block_barrier = cuda::barrier<cuda::thread_scope_block>;

// Every thread writes, arrives, waits, then reads a neighbour's value; a
// second round reuses the barrier (phase 1).
extern "C" __global__ void barrier_rounds(int *out, int rounds) {
    __shared__ block_barrier bar;
    __shared__ int buf[256];
    if (threadIdx.x == 0) {
        init(&bar, blockDim.x);
    }
    __syncthreads();
    int acc = 0;
    for (int r = 0; r < rounds; r++) {
        buf[threadIdx.x] = (int)threadIdx.x * (r + 1) + (int)blockIdx.x;
        bar.arrive_and_wait();
        acc += buf[(threadIdx.x + 1 + r) % blockDim.x];
        auto token = bar.arrive();
        bar.wait(std::move(token));
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}

// Warps past the first drop out after one round; the rest go on with a
// smaller expected count.
extern "C" __global__ void barrier_drop(int *out) {
    __shared__ block_barrier bar;
    __shared__ int buf[256];
    if (threadIdx.x == 0) {
        init(&bar, blockDim.x);
    }
    __syncthreads();
    buf[threadIdx.x] = threadIdx.x + 1;
    bar.arrive_and_wait();
    int v = buf[blockDim.x - 1 - threadIdx.x];
    if (threadIdx.x >= 32) {
        out[threadIdx.x] = v;
        bar.arrive_and_drop();
        return;
    }
    for (int r = 0; r < 3; r++) {
        buf[threadIdx.x] += v;
        bar.arrive_and_wait();
        v = buf[31 - threadIdx.x];
        bar.arrive_and_wait();
    }
    out[threadIdx.x] = v;
}

// Warp 0 produces into a two-slot ring, warp 1 consumes; "full" and
// "empty" mbarriers per slot, waited on with explicit phase parity.
__device__ __forceinline__ void mbar_init(unsigned long long *b, unsigned count) {
    unsigned a = (unsigned)__cvta_generic_to_shared(b);
    asm volatile("mbarrier.init.shared.b64 [%0], %1;" ::"r"(a), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_arrive(unsigned long long *b) {
    unsigned a = (unsigned)__cvta_generic_to_shared(b);
    asm volatile("{\n .reg .b64 st;\n mbarrier.arrive.shared.b64 st, [%0];\n}" ::"r"(a)
                 : "memory");
}
__device__ __forceinline__ void mbar_wait_parity(unsigned long long *b, unsigned parity) {
    unsigned a = (unsigned)__cvta_generic_to_shared(b);
    asm volatile("{\n .reg .pred p;\n"
                 "WAIT_%=:\n"
                 " mbarrier.test_wait.parity.shared.b64 p, [%0], %1;\n"
                 " @!p bra WAIT_%=;\n}" ::"r"(a),
                 "r"(parity)
                 : "memory");
}

extern "C" __global__ void producer_consumer(const int *in, int *out, int n) {
    __shared__ unsigned long long full[2], empty[2];
    __shared__ int slot[2][32];
    if (threadIdx.x == 0) {
        for (int s = 0; s < 2; s++) {
            mbar_init(&full[s], 32);
            mbar_init(&empty[s], 32);
        }
    }
    __syncthreads();
    int lane = threadIdx.x % 32;
    int chunks = n / 32;
    if (threadIdx.x < 32) {
        for (int c = 0; c < chunks; c++) {
            int s = c % 2;
            // Slot s is free once the consumer emptied it in round c/2 - 1.
            if (c >= 2) {
                mbar_wait_parity(&empty[s], ((c / 2) - 1) & 1);
            }
            slot[s][lane] = in[c * 32 + lane] * 3;
            mbar_arrive(&full[s]);
        }
    } else {
        for (int c = 0; c < chunks; c++) {
            int s = c % 2;
            mbar_wait_parity(&full[s], (c / 2) & 1);
            out[c * 32 + lane] = slot[s][31 - lane] + c;
            mbar_arrive(&empty[s]);
        }
    }
}

// cuda::memcpy_async into shared memory, completed through the barrier.
extern "C" __global__ void memcpy_async_barrier(const float *in, float *out) {
    __shared__ block_barrier bar;
    __shared__ float tile[256];
    if (threadIdx.x == 0) {
        init(&bar, blockDim.x);
    }
    __syncthreads();
    auto block = cg::this_thread_block();
    const float *src = in + blockIdx.x * blockDim.x;
    cuda::memcpy_async(block, tile, src, sizeof(float) * blockDim.x, bar);
    bar.arrive_and_wait();
    out[blockIdx.x * blockDim.x + threadIdx.x] = tile[blockDim.x - 1 - threadIdx.x] * 2.0f;
}

// Per-thread memcpy_async of 16 bytes, which takes the cp.async path.
extern "C" __global__ void memcpy_async_thread(const float4 *in, float4 *out) {
    __shared__ block_barrier bar;
    __shared__ float4 tile[128];
    if (threadIdx.x == 0) {
        init(&bar, blockDim.x);
    }
    __syncthreads();
    cuda::memcpy_async(&tile[threadIdx.x], &in[threadIdx.x], cuda::aligned_size_t<16>(16), bar);
    bar.arrive_and_wait();
    float4 v = tile[blockDim.x - 1 - threadIdx.x];
    out[threadIdx.x] = make_float4(v.w, v.z, v.y, v.x);
}

// The shape of Numba's cta_barrier test: a device function with its own
// __shared__ barrier, initialised by thread 0 and used once per thread.
__device__ void tile_sync(block_barrier &b) {
    auto t = b.arrive();
    b.wait(std::move(t));
}

extern "C" __device__ __noinline__ int cta_barrier_like(int *ret) {
    auto cta = cg::this_thread_block();
    cg::thread_block_tile<32> tile = cg::tiled_partition<32>(cta);
    __shared__ block_barrier b;
    if (threadIdx.x == 0) {
        init(&b, blockDim.x);
    }
    tile_sync(b);
    if (ret) {
        *ret = tile.thread_rank();
    }
    return 0;
}

extern "C" __global__ void cta_barrier_kernel(int *out) {
    cta_barrier_like(out ? &out[blockIdx.x * blockDim.x + threadIdx.x] : nullptr);
}
