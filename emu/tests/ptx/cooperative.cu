// Cooperative groups across a whole grid: kernels that are only correct if
// every block is resident and grid.sync() is a real barrier.
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

// Each round every element becomes the sum of itself and its right
// neighbour (which another block may own), read before anyone writes.
extern "C" __global__ void neighbour_rounds(int *a, int *tmp, int n, int rounds) {
    cg::grid_group grid = cg::this_grid();
    for (int r = 0; r < rounds; ++r) {
        for (int i = grid.thread_rank(); i < n; i += grid.size())
            tmp[i] = a[i] + a[(i + 1) % n];
        grid.sync();
        for (int i = grid.thread_rank(); i < n; i += grid.size())
            a[i] = tmp[i];
        grid.sync();
    }
}

// Block partial sums, then block 0 adds them up after the grid barrier.
extern "C" __global__ void grid_sum(const float *in, float *partial, float *out, int n) {
    cg::grid_group grid = cg::this_grid();
    cg::thread_block block = cg::this_thread_block();
    __shared__ float s[256];
    float v = 0;
    for (int i = grid.thread_rank(); i < n; i += grid.size()) v += in[i];
    s[block.thread_rank()] = v;
    block.sync();
    for (int w = blockDim.x / 2; w > 0; w /= 2) {
        if (block.thread_rank() < w) s[block.thread_rank()] += s[block.thread_rank() + w];
        block.sync();
    }
    if (block.thread_rank() == 0) partial[blockIdx.x] = s[0];
    grid.sync();
    if (grid.thread_rank() == 0) {
        float t = 0;
        for (int b = 0; b < gridDim.x; ++b) t += partial[b];
        *out = t;
    }
}

// What the grid group reports; syncs only when asked, so that a launch
// that is not cooperative can show what grid.sync() does there.
extern "C" __global__ void grid_info(unsigned long long *out, int do_sync) {
    cg::grid_group grid = cg::this_grid();
    if (grid.thread_rank() == 0) {
        out[0] = grid.is_valid();
        out[1] = grid.size();
        out[2] = grid.num_blocks();
    }
    if (do_sync) grid.sync();
}
