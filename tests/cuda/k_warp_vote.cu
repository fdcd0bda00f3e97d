// Warp vote and match functions: `__all_sync`, `__any_sync`, `__ballot_sync`,
// `__activemask`, `__match_any_sync` (32- and 64-bit values) and
// `__match_all_sync`, in converged code, in both sides of divergent branches
// (with the mask of the threads on that side), in nested branches, after a
// loop whose trip count differs per lane, and in partial warps (blocks whose
// size is not a multiple of 32). Each thread records every result; the host
// computes what each lane must see.
//
// `__activemask()` in converged code must be exactly the lanes of the warp; in
// a divergent branch the compiler may predicate instead of branching, so there
// it must only contain the calling lane and lie within the warp.
//
// Prints `warp vote block=<threads> grid=<blocks>: ok` per configuration.
// Self-checking: `FAIL: <reason>` and exit status 1 on any mismatch, `PASS` as
// the last line on success.

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#include "check.h"

enum {
    ACTIVE_TOP,
    ALL_TRUE,
    ALL_EVEN,
    ANY_LANE5,
    ANY_NONE,
    BALLOT_MOD3,
    BALLOT_DATA,
    MATCH_ANY_32,
    MATCH_ANY_64,
    MATCH_ALL_SAME,
    MATCH_ALL_SAME_PRED,
    MATCH_ALL_DIFF,
    MATCH_ALL_DIFF_PRED,
    DIV_ACTIVE,
    DIV_ALL,
    DIV_ANY,
    DIV_BALLOT,
    DIV_MATCH,
    NESTED_BALLOT,
    NESTED_ACTIVE,
    LOOP_BALLOT,
    DATA_POPC,
    K  // number of results per thread
};

static const char *const names[K] = {
    "__activemask (converged)", "__all_sync(true)", "__all_sync(lane even)",
    "__any_sync(lane == 5)", "__any_sync(lane > 40)", "__ballot_sync(lane % 3 == 0)",
    "__ballot_sync(data > 0)", "__match_any_sync(lane / 4)", "__match_any_sync(64-bit)",
    "__match_all_sync(same) mask", "__match_all_sync(same) pred", "__match_all_sync(lane) mask",
    "__match_all_sync(lane) pred", "__activemask (divergent)", "__all_sync (divergent)",
    "__any_sync (divergent)", "__ballot_sync (divergent)", "__match_any_sync (divergent)",
    "__ballot_sync (nested divergent)", "__activemask (nested divergent)",
    "__ballot_sync (after a divergent loop)", "__popc(__ballot_sync(data % 3 == 0))"};

// The lanes of the calling thread's warp that exist in this block.
__host__ __device__ unsigned warp_lanes(unsigned tid, unsigned block) {
    const unsigned first = tid / 32 * 32;
    const unsigned count = block - first < 32 ? block - first : 32;
    return count == 32 ? 0xffffffffu : (1u << count) - 1;
}

__global__ void votes(const int *data, unsigned *out) {
    const unsigned tid = threadIdx.x;
    const unsigned gid = blockIdx.x * blockDim.x + tid;
    const unsigned lane = tid % 32;
    const unsigned wm = warp_lanes(tid, blockDim.x);
    const int d = data[gid];
    unsigned *o = out + (size_t)gid * K;

    o[ACTIVE_TOP] = __activemask();
    o[ALL_TRUE] = __all_sync(wm, lane < 32);
    o[ALL_EVEN] = __all_sync(wm, lane % 2 == 0);
    o[ANY_LANE5] = __any_sync(wm, lane == 5);
    o[ANY_NONE] = __any_sync(wm, lane > 40);
    o[BALLOT_MOD3] = __ballot_sync(wm, lane % 3 == 0);
    o[BALLOT_DATA] = __ballot_sync(wm, d > 0);
    o[MATCH_ANY_32] = __match_any_sync(wm, lane / 4);
    o[MATCH_ANY_64] = __match_any_sync(wm, (unsigned long long)(lane % 3) << 40);
    int pred = -1;
    o[MATCH_ALL_SAME] = __match_all_sync(wm, 42, &pred);
    o[MATCH_ALL_SAME_PRED] = (unsigned)pred;
    pred = -1;
    o[MATCH_ALL_DIFF] = __match_all_sync(wm, lane, &pred);
    o[MATCH_ALL_DIFF_PRED] = (unsigned)pred;

    if (lane < 10) {
        const unsigned bm = wm & 0x3FFu;
        o[DIV_ACTIVE] = __activemask();
        o[DIV_ALL] = __all_sync(bm, lane < 10);
        o[DIV_ANY] = __any_sync(bm, lane == 20);
        o[DIV_BALLOT] = __ballot_sync(bm, lane & 1);
        o[DIV_MATCH] = __match_any_sync(bm, lane / 5);
    } else {
        const unsigned bm = wm & ~0x3FFu;
        o[DIV_ACTIVE] = __activemask();
        o[DIV_ALL] = __all_sync(bm, lane >= 10);
        o[DIV_ANY] = __any_sync(bm, lane == 20);
        o[DIV_BALLOT] = __ballot_sync(bm, lane % 2 == 0);
        o[DIV_MATCH] = __match_any_sync(bm, lane % 2);
    }

    if (lane % 4 == 0) {
        const unsigned bm = wm & 0x11111111u;
        if (lane % 8 == 0) {
            o[NESTED_BALLOT] = __ballot_sync(bm & 0x01010101u, d % 2 != 0);
            o[NESTED_ACTIVE] = __activemask();
        } else {
            o[NESTED_BALLOT] = __ballot_sync(bm & ~0x01010101u, true);
            o[NESTED_ACTIVE] = __activemask();
        }
    } else {
        o[NESTED_BALLOT] = __ballot_sync(wm & ~0x11111111u, lane > 16);
        o[NESTED_ACTIVE] = __activemask();
    }

    int acc = 0;
    for (unsigned k = 0; k < lane % 5; k++) acc += (int)k;
    o[LOOP_BALLOT] = __ballot_sync(wm, acc > 2);

    o[DATA_POPC] = (unsigned)__popc(__ballot_sync(wm, d % 3 == 0));
}

// What lane `lane` of a warp with lanes `wm` must see for each result.
// The *_ACTIVE results of divergent code are checked separately.
static void expected(unsigned lane, unsigned wm, const int *warp_data, unsigned *w) {
    unsigned ballot_mod3 = 0, ballot_data = 0, match32 = 0, match64 = 0, loop = 0, mod3 = 0;
    for (unsigned l = 0; l < 32; l++) {
        if (!((wm >> l) & 1)) continue;
        const unsigned bit = 1u << l;
        if (l % 3 == 0) ballot_mod3 |= bit;
        if (warp_data[l] > 0) ballot_data |= bit;
        if (l / 4 == lane / 4) match32 |= bit;
        if (l % 3 == lane % 3) match64 |= bit;
        unsigned acc = 0;
        for (unsigned k = 0; k < l % 5; k++) acc += k;
        if (acc > 2) loop |= bit;
        if (warp_data[l] % 3 == 0) mod3++;
    }
    const int nlanes = __builtin_popcount(wm);
    w[ACTIVE_TOP] = wm;
    w[ALL_TRUE] = 1;
    w[ALL_EVEN] = (wm & 0xAAAAAAAAu) == 0;
    w[ANY_LANE5] = (wm >> 5) & 1;
    w[ANY_NONE] = 0;
    w[BALLOT_MOD3] = ballot_mod3;
    w[BALLOT_DATA] = ballot_data;
    w[MATCH_ANY_32] = match32;
    w[MATCH_ANY_64] = match64;
    w[MATCH_ALL_SAME] = wm;
    w[MATCH_ALL_SAME_PRED] = 1;
    w[MATCH_ALL_DIFF] = nlanes == 1 ? wm : 0;
    w[MATCH_ALL_DIFF_PRED] = nlanes == 1 ? 1 : 0;
    if (lane < 10) {
        const unsigned bm = wm & 0x3FFu;
        w[DIV_ALL] = 1;
        w[DIV_ANY] = 0;
        w[DIV_BALLOT] = bm & 0x2AAu;
        w[DIV_MATCH] = bm & (lane < 5 ? 0x1Fu : 0x3E0u);
    } else {
        const unsigned bm = wm & ~0x3FFu;
        w[DIV_ALL] = 1;
        w[DIV_ANY] = (bm >> 20) & 1;
        w[DIV_BALLOT] = bm & 0x55555555u;
        w[DIV_MATCH] = bm & (lane % 2 ? 0xAAAAAAAAu : 0x55555555u);
    }
    if (lane % 4 == 0) {
        const unsigned bm = wm & 0x11111111u;
        if (lane % 8 == 0) {
            unsigned b = 0;
            for (unsigned l = 0; l < 32; l += 8)
                if (((bm >> l) & 1) && warp_data[l] % 2 != 0) b |= 1u << l;
            w[NESTED_BALLOT] = b;
        } else {
            w[NESTED_BALLOT] = bm & ~0x01010101u;
        }
    } else {
        w[NESTED_BALLOT] = wm & ~0x11111111u & 0xFFFE0000u;
    }
    w[LOOP_BALLOT] = loop;
    w[DATA_POPC] = mod3;
}

// The lanes on the calling lane's side of the branches in the kernel.
static unsigned branch_lanes(unsigned lane, unsigned wm) {
    return lane < 10 ? wm & 0x3FFu : wm & ~0x3FFu;
}

static unsigned nested_lanes(unsigned lane, unsigned wm) {
    if (lane % 4 != 0) return wm & ~0x11111111u;
    return lane % 8 == 0 ? wm & 0x01010101u : wm & 0x10101010u;
}

static void run(int grid, int block) {
    const int n = grid * block;
    int *data = (int *)malloc(n * sizeof(int));
    unsigned *got = (unsigned *)malloc((size_t)n * K * sizeof(unsigned));
    EXPECT(data && got, "host malloc failed");
    for (int i = 0; i < n; i++) data[i] = (int)((i * 2654435761u) >> 20) % 21 - 10;
    int *ddata = NULL;
    unsigned *dout = NULL;
    CHECK(cudaMalloc(&ddata, n * sizeof(int)));
    CHECK(cudaMalloc(&dout, (size_t)n * K * sizeof(unsigned)));
    CHECK(cudaMemcpy(ddata, data, n * sizeof(int), cudaMemcpyHostToDevice));
    CHECK(cudaMemset(dout, 0xEE, (size_t)n * K * sizeof(unsigned)));
    votes<<<grid, block>>>(ddata, dout);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(got, dout, (size_t)n * K * sizeof(unsigned), cudaMemcpyDeviceToHost));
    for (int b = 0; b < grid; b++) {
        for (int tid = 0; tid < block; tid++) {
            const unsigned lane = tid % 32;
            const unsigned wm = warp_lanes(tid, block);
            const int *warp_data = data + b * block + tid / 32 * 32;
            int padded[32] = {0};
            for (int l = 0; l < 32; l++)
                if ((wm >> l) & 1) padded[l] = warp_data[l];
            unsigned want[K];
            expected(lane, wm, padded, want);
            const unsigned *g = got + (size_t)(b * block + tid) * K;
            for (int k = 0; k < K; k++) {
                if (k == DIV_ACTIVE || k == NESTED_ACTIVE) {
                    const unsigned side =
                        k == DIV_ACTIVE ? branch_lanes(lane, wm) : nested_lanes(lane, wm);
                    EXPECT(((g[k] >> lane) & 1) && (g[k] & ~wm) == 0,
                           "block=%d grid=%d: block %d thread %d: %s = 0x%08x: must contain the "
                           "lane and lie within the warp's lanes 0x%08x (branch side 0x%08x)",
                           block, grid, b, tid, names[k], g[k], wm, side);
                    continue;
                }
                EXPECT(g[k] == want[k],
                       "block=%d grid=%d: block %d thread %d (lane %u, warp lanes 0x%08x): "
                       "%s = 0x%08x, expected 0x%08x",
                       block, grid, b, tid, lane, wm, names[k], g[k], want[k]);
            }
        }
    }
    printf("warp vote block=%d grid=%d: ok\n", block, grid);
    CHECK(cudaFree(ddata));
    CHECK(cudaFree(dout));
    free(data);
    free(got);
}

int main() {
    CHECK(cudaSetDevice(0));
    run(1, 64);   // two full warps
    run(1, 48);   // a full warp and a warp of 16 lanes
    run(3, 40);   // partial warps of 8 lanes in several blocks
    run(2, 7);    // a single partial warp per block
    run(1, 1);    // one lane
    run(2, 1024); // 32 warps per block
    printf("PASS\n");
    return 0;
}
