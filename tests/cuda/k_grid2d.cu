// Two- and three-dimensional grids and blocks (dim3): a naive matrix
// transpose, a transpose through a padded shared-memory tile, a 5-point 2-D
// stencil, all on non-square sizes that are not multiples of the block, and a
// 3-D launch where every thread records its linear index from threadIdx,
// blockIdx, blockDim and gridDim in x, y and z.
//
// Prints one line per case, e.g.
//   `transpose 37x100 block 16x8: ok`
//   `transpose_tiled 37x100: ok`
//   `stencil 45x70 block 32x4: ok`
//   `grid3d grid (3,2,4) block (4,3,5): ok`
// Self-checking: `FAIL: <reason>` and exit status 1 on any mismatch, `PASS` as
// the last line on success.

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#include "check.h"

static const int TILE = 32;

// in: rows x cols (row-major); out: cols x rows.
__global__ void transpose(const float *in, float *out, int rows, int cols) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < rows && c < cols) out[c * rows + r] = in[r * cols + c];
}

// Block TILE x 8: each thread moves TILE/8 elements through a padded tile.
__global__ void transpose_tiled(const float *in, float *out, int rows, int cols) {
    __shared__ float tile[TILE][TILE + 1];
    int c = blockIdx.x * TILE + threadIdx.x;
    int r0 = blockIdx.y * TILE;
    for (int j = threadIdx.y; j < TILE; j += blockDim.y)
        if (r0 + j < rows && c < cols) tile[j][threadIdx.x] = in[(r0 + j) * cols + c];
    __syncthreads();
    int oc = blockIdx.y * TILE + threadIdx.x;  // column of out = row of in
    int or0 = blockIdx.x * TILE;               // row of out = column of in
    for (int j = threadIdx.y; j < TILE; j += blockDim.y)
        if (or0 + j < cols && oc < rows) out[(or0 + j) * rows + oc] = tile[threadIdx.x][j];
}

// out = 4*centre - neighbours, with the border copied unchanged.
__global__ void stencil(const int *in, int *out, int h, int w) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= w || y >= h) return;
    int v = in[y * w + x];
    if (x > 0 && y > 0 && x < w - 1 && y < h - 1)
        v = 4 * v - in[(y - 1) * w + x] - in[(y + 1) * w + x] - in[y * w + x - 1] -
            in[y * w + x + 1];
    out[y * w + x] = v;
}

__global__ void grid3d(int *out) {
    int bx = blockIdx.x, by = blockIdx.y, bz = blockIdx.z;
    int block = (bz * gridDim.y + by) * gridDim.x + bx;
    int thread = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
    int per_block = blockDim.x * blockDim.y * blockDim.z;
    int id = block * per_block + thread;
    out[4 * id + 0] = threadIdx.x + 10 * threadIdx.y + 100 * threadIdx.z;
    out[4 * id + 1] = bx + 10 * by + 100 * bz;
    out[4 * id + 2] = blockDim.x + 10 * blockDim.y + 100 * blockDim.z;
    out[4 * id + 3] = gridDim.x + 10 * gridDim.y + 100 * gridDim.z;
}

static void test_transpose(int rows, int cols, dim3 block) {
    const size_t n = (size_t)rows * cols;
    float *in = (float *)malloc(n * sizeof(float));
    float *out = (float *)malloc(n * sizeof(float));
    EXPECT(in && out, "host malloc failed");
    for (size_t i = 0; i < n; i++) in[i] = (float)i * 0.5f - 100.0f;
    float *din = NULL, *dout = NULL;
    CHECK(cudaMalloc(&din, n * sizeof(float)));
    CHECK(cudaMalloc(&dout, n * sizeof(float)));
    CHECK(cudaMemcpy(din, in, n * sizeof(float), cudaMemcpyHostToDevice));

    dim3 grid((cols + block.x - 1) / block.x, (rows + block.y - 1) / block.y);
    CHECK(cudaMemset(dout, 0xFF, n * sizeof(float)));
    transpose<<<grid, block>>>(din, dout, rows, cols);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(out, dout, n * sizeof(float), cudaMemcpyDeviceToHost));
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++)
            EXPECT(out[c * rows + r] == in[r * cols + c],
                   "transpose %dx%d: out[%d][%d] = %g, expected %g", rows, cols, c, r,
                   out[c * rows + r], in[r * cols + c]);
    printf("transpose %dx%d block %ux%u: ok\n", rows, cols, block.x, block.y);

    dim3 tgrid((cols + TILE - 1) / TILE, (rows + TILE - 1) / TILE);
    CHECK(cudaMemset(dout, 0xFF, n * sizeof(float)));
    transpose_tiled<<<tgrid, dim3(TILE, 8)>>>(din, dout, rows, cols);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(out, dout, n * sizeof(float), cudaMemcpyDeviceToHost));
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++)
            EXPECT(out[c * rows + r] == in[r * cols + c],
                   "transpose_tiled %dx%d: out[%d][%d] = %g, expected %g", rows, cols, c, r,
                   out[c * rows + r], in[r * cols + c]);
    printf("transpose_tiled %dx%d: ok\n", rows, cols);

    CHECK(cudaFree(din));
    CHECK(cudaFree(dout));
    free(in);
    free(out);
}

static void test_stencil(int h, int w, dim3 block) {
    const size_t n = (size_t)h * w;
    int *in = (int *)malloc(n * sizeof(int));
    int *out = (int *)malloc(n * sizeof(int));
    EXPECT(in && out, "host malloc failed");
    for (size_t i = 0; i < n; i++) in[i] = (int)((i * 2654435761u) % 1000) - 500;
    int *din = NULL, *dout = NULL;
    CHECK(cudaMalloc(&din, n * sizeof(int)));
    CHECK(cudaMalloc(&dout, n * sizeof(int)));
    CHECK(cudaMemcpy(din, in, n * sizeof(int), cudaMemcpyHostToDevice));
    dim3 grid((w + block.x - 1) / block.x, (h + block.y - 1) / block.y);
    stencil<<<grid, block>>>(din, dout, h, w);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(out, dout, n * sizeof(int), cudaMemcpyDeviceToHost));
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            int v = in[y * w + x];
            if (x > 0 && y > 0 && x < w - 1 && y < h - 1)
                v = 4 * v - in[(y - 1) * w + x] - in[(y + 1) * w + x] - in[y * w + x - 1] -
                    in[y * w + x + 1];
            EXPECT(out[y * w + x] == v, "stencil %dx%d: (%d, %d) = %d, expected %d", h, w, y, x,
                   out[y * w + x], v);
        }
    printf("stencil %dx%d block %ux%u: ok\n", h, w, block.x, block.y);
    CHECK(cudaFree(din));
    CHECK(cudaFree(dout));
    free(in);
    free(out);
}

static void test_grid3d(dim3 grid, dim3 block) {
    const int nblocks = grid.x * grid.y * grid.z;
    const int per_block = block.x * block.y * block.z;
    const int n = nblocks * per_block;
    int *out = (int *)malloc((size_t)n * 4 * sizeof(int));
    EXPECT(out != NULL, "host malloc failed");
    int *dout = NULL;
    CHECK(cudaMalloc(&dout, (size_t)n * 4 * sizeof(int)));
    CHECK(cudaMemset(dout, 0xFF, (size_t)n * 4 * sizeof(int)));
    grid3d<<<grid, block>>>(dout);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(out, dout, (size_t)n * 4 * sizeof(int), cudaMemcpyDeviceToHost));
    for (unsigned bz = 0; bz < grid.z; bz++)
        for (unsigned by = 0; by < grid.y; by++)
            for (unsigned bx = 0; bx < grid.x; bx++)
                for (unsigned tz = 0; tz < block.z; tz++)
                    for (unsigned ty = 0; ty < block.y; ty++)
                        for (unsigned tx = 0; tx < block.x; tx++) {
                            int b = (bz * grid.y + by) * grid.x + bx;
                            int t = (tz * block.y + ty) * block.x + tx;
                            const int *o = out + 4 * (b * per_block + t);
                            const int want[4] = {
                                (int)(tx + 10 * ty + 100 * tz), (int)(bx + 10 * by + 100 * bz),
                                (int)(block.x + 10 * block.y + 100 * block.z),
                                (int)(grid.x + 10 * grid.y + 100 * grid.z)};
                            for (int k = 0; k < 4; k++)
                                EXPECT(o[k] == want[k],
                                       "grid3d block (%u,%u,%u) thread (%u,%u,%u): value %d = %d, "
                                       "expected %d",
                                       bx, by, bz, tx, ty, tz, k, o[k], want[k]);
                        }
    printf("grid3d grid (%u,%u,%u) block (%u,%u,%u): ok\n", grid.x, grid.y, grid.z, block.x,
           block.y, block.z);
    CHECK(cudaFree(dout));
    free(out);
}

int main() {
    CHECK(cudaSetDevice(0));
    test_transpose(37, 100, dim3(16, 8));
    test_transpose(128, 33, dim3(32, 4));
    test_transpose(1, 257, dim3(64, 2));
    test_transpose(300, 200, dim3(8, 16));
    test_stencil(45, 70, dim3(32, 4));
    test_stencil(3, 200, dim3(16, 16));
    test_stencil(129, 17, dim3(8, 8));
    test_grid3d(dim3(3, 2, 4), dim3(4, 3, 5));
    test_grid3d(dim3(1, 5, 1), dim3(33, 1, 2));
    test_grid3d(dim3(2, 1, 3), dim3(1, 1, 64));
    printf("PASS\n");
    return 0;
}
