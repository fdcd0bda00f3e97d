// Warp-wide votes, matches and reductions run by disjoint groups of one
// warp at the same instruction: every lane names its own group in the
// member mask (lanes 0-15 and 16-31, then four groups of eight), and each
// group must see only its members, as warpAggregatedAtomicsCG's labelled
// partitions rely on.
#include <cuda_runtime.h>

#include "check.h"

struct Out {
    unsigned ballot, all, any, match, sum, min, uni;
};

__global__ void groups(unsigned width, Out *out) {
    const unsigned lane = threadIdx.x % 32;
    const unsigned group = lane / width;
    const unsigned mask = (width == 32 ? 0xffffffffu : ((1u << width) - 1)) << (group * width);
    Out o;
    // No branch: all 32 lanes run each instruction together, each with
    // its own member mask.
    o.ballot = __ballot_sync(mask, lane % 2 == 0);
    o.all = __all_sync(mask, group == 0);
    o.any = __any_sync(mask, lane == 3);
    o.match = __match_any_sync(mask, lane % 4);
    o.sum = __reduce_add_sync(mask, lane);
    o.min = __reduce_min_sync(mask, 100 - lane);
    o.uni = __uni_sync(mask, lane < 16);
    out[threadIdx.x] = o;
}

static void check(unsigned width) {
    Out *dev = nullptr;
    CHECK(cudaMalloc(&dev, 32 * sizeof(Out)));
    groups<<<1, 32>>>(width, dev);
    CHECK(cudaGetLastError());
    Out host[32];
    CHECK(cudaMemcpy(host, dev, sizeof host, cudaMemcpyDeviceToHost));
    for (unsigned lane = 0; lane < 32; lane++) {
        const unsigned group = lane / width, first = group * width;
        const unsigned mask = (width == 32 ? 0xffffffffu : ((1u << width) - 1)) << first;
        unsigned sum = 0, match = 0;
        for (unsigned l = first; l < first + width; l++) {
            sum += l;
            if (l % 4 == lane % 4) match |= 1u << l;
        }
        const Out &o = host[lane];
        EXPECT(o.ballot == (mask & 0x55555555u), "width %u lane %u ballot %08x", width, lane, o.ballot);
        EXPECT(o.all == (group == 0), "width %u lane %u all %u", width, lane, o.all);
        EXPECT(o.any == (first <= 3 && 3 < first + width), "width %u lane %u any %u", width, lane, o.any);
        EXPECT(o.match == match, "width %u lane %u match %08x", width, lane, o.match);
        EXPECT(o.sum == sum, "width %u lane %u sum %u", width, lane, o.sum);
        EXPECT(o.min == 100 - (first + width - 1), "width %u lane %u min %u", width, lane, o.min);
        const bool low = first + width <= 16, high = first >= 16;
        EXPECT(o.uni == (low || high), "width %u lane %u uni %u", width, lane, o.uni);
    }
    CHECK(cudaFree(dev));
    printf("warp groups of %u: ok\n", width);
}

int main() {
    check(32);
    check(16);
    check(8);
    printf("PASS\n");
    return 0;
}
