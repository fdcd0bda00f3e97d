// Basic kernels: element-wise vector add, grid-stride SAXPY, a 2-D grid.
extern "C" __global__ void vec_add(const float *a, const float *b, float *c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

extern "C" __global__ void saxpy(int n, float a, const float *x, float *y) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        y[i] = a * x[i] + y[i];
}

// out[y][x] = packed coordinates of the thread that wrote it.
extern "C" __global__ void grid2d(unsigned *out, int width, int height) {
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < width && y < height)
        out[y * width + x] = (x << 16) ^ y ^ (threadIdx.z << 30) ^ (blockIdx.z << 31);
}

// Every special register the kernel can see, one record of 12 words per thread.
extern "C" __global__ void specials(unsigned *out) {
    unsigned t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    unsigned b = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    unsigned *o = out + 12 * (b * blockDim.x * blockDim.y * blockDim.z + t);
    unsigned lane, warp, lt;
    asm("mov.u32 %0, %%laneid;" : "=r"(lane));
    asm("mov.u32 %0, %%warpid;" : "=r"(warp));
    asm("mov.u32 %0, %%lanemask_lt;" : "=r"(lt));
    o[0] = threadIdx.x; o[1] = threadIdx.y; o[2] = threadIdx.z;
    o[3] = blockIdx.x; o[4] = blockIdx.y; o[5] = blockIdx.z;
    o[6] = blockDim.x * 10000 + blockDim.y * 100 + blockDim.z;
    o[7] = gridDim.x * 10000 + gridDim.y * 100 + gridDim.z;
    o[8] = lane; o[9] = warp; o[10] = lt; o[11] = (unsigned)(clock64() >= 0);
}
