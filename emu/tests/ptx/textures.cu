// Texture and surface objects: every fetch function of CUDA C++ on a
// cudaTextureObject_t or cudaSurfaceObject_t argument. Each kernel maps an
// array of coordinates to an array of results, one per thread; the host
// builds the descriptors and checks the results against a CPU reference.

// ---- textures, float results -----------------------------------------------

extern "C" __global__ void tex1d_f4(cudaTextureObject_t t, const float *x, float4 *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex1D<float4>(t, x[i]);
}

extern "C" __global__ void tex2d_f4(cudaTextureObject_t t, const float2 *c, float4 *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex2D<float4>(t, c[i].x, c[i].y);
}

extern "C" __global__ void tex3d_f4(cudaTextureObject_t t, const float4 *c, float4 *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex3D<float4>(t, c[i].x, c[i].y, c[i].z);
}

extern "C" __global__ void tex1d_layered_f4(cudaTextureObject_t t, const float *x, const int *layer, float4 *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex1DLayered<float4>(t, x[i], layer[i]);
}

extern "C" __global__ void tex2d_layered_f4(cudaTextureObject_t t, const float2 *c, const int *layer, float4 *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex2DLayered<float4>(t, c[i].x, c[i].y, layer[i]);
}

extern "C" __global__ void tex_cube_f4(cudaTextureObject_t t, const float4 *c, float4 *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = texCubemap<float4>(t, c[i].x, c[i].y, c[i].z);
}

extern "C" __global__ void tex_cube_layered_f4(cudaTextureObject_t t, const float4 *c, const int *layer, float4 *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = texCubemapLayered<float4>(t, c[i].x, c[i].y, c[i].z, layer[i]);
}

extern "C" __global__ void tex1d_fetch_f4(cudaTextureObject_t t, const int *x, float4 *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex1Dfetch<float4>(t, x[i]);
}

// Scalar and two-channel results, and the level/gradient forms (no mipmaps
// on the emulated device: level 0).
extern "C" __global__ void tex2d_f1_f2(cudaTextureObject_t t, const float2 *c, float *one, float2 *two, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        one[i] = tex2D<float>(t, c[i].x, c[i].y);
        two[i] = tex2D<float2>(t, c[i].x, c[i].y);
    }
}

extern "C" __global__ void tex2d_lod_grad(cudaTextureObject_t t, const float2 *c, float4 *lod, float4 *grad, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        lod[i] = tex2DLod<float4>(t, c[i].x, c[i].y, 1.5f);
        grad[i] = tex2DGrad<float4>(t, c[i].x, c[i].y, make_float2(0.5f, 0.0f), make_float2(0.0f, 2.0f));
    }
}

// ---- textures, integer results ------------------------------------------

extern "C" __global__ void tex2d_i4(cudaTextureObject_t t, const float2 *c, int4 *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex2D<int4>(t, c[i].x, c[i].y);
}

extern "C" __global__ void tex2d_u4(cudaTextureObject_t t, const float2 *c, uint4 *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex2D<uint4>(t, c[i].x, c[i].y);
}

extern "C" __global__ void tex1d_fetch_i4(cudaTextureObject_t t, const int *x, int4 *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex1Dfetch<int4>(t, x[i]);
}

// ---- gather --------------------------------------------------------------

extern "C" __global__ void tex2d_gather(cudaTextureObject_t t, const float2 *c, int comp, float4 *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float4 v;
        switch (comp) {
        case 0: v = tex2Dgather<float4>(t, c[i].x, c[i].y, 0); break;
        case 1: v = tex2Dgather<float4>(t, c[i].x, c[i].y, 1); break;
        case 2: v = tex2Dgather<float4>(t, c[i].x, c[i].y, 2); break;
        default: v = tex2Dgather<float4>(t, c[i].x, c[i].y, 3); break;
        }
        out[i] = v;
    }
}

extern "C" __global__ void tex2d_gather_i4(cudaTextureObject_t t, const float2 *c, int4 *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = tex2Dgather<int4>(t, c[i].x, c[i].y, 1);
}

// ---- surfaces ------------------------------------------------------------

// Copies a w x h image of uint (x in bytes) through surf2Dread/surf2Dwrite,
// adding 1; `mode` picks the boundary mode of the read.
extern "C" __global__ void surf2d_copy(cudaSurfaceObject_t src, cudaSurfaceObject_t dst, int w, int h) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
    if (x < w && y < h) {
        unsigned v = surf2Dread<unsigned>(src, x * 4, y);
        surf2Dwrite(v + 1, dst, x * 4, y);
    }
}

// Reads at arbitrary byte coordinates with each boundary mode.
extern "C" __global__ void surf1d_read_modes(cudaSurfaceObject_t s, const int *x, int mode, unsigned *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        unsigned v;
        if (mode == 0)
            v = surf1Dread<unsigned>(s, x[i], cudaBoundaryModeZero);
        else if (mode == 1)
            v = surf1Dread<unsigned>(s, x[i], cudaBoundaryModeClamp);
        else
            v = surf1Dread<unsigned>(s, x[i], cudaBoundaryModeTrap);
        out[i] = v;
    }
}

extern "C" __global__ void surf1d_write_modes(cudaSurfaceObject_t s, const int *x, int mode, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        unsigned v = 1000 + i;
        if (mode == 0)
            surf1Dwrite(v, s, x[i], cudaBoundaryModeZero);
        else if (mode == 1)
            surf1Dwrite(v, s, x[i], cudaBoundaryModeClamp);
        else
            surf1Dwrite(v, s, x[i], cudaBoundaryModeTrap);
    }
}

// Vector texels: uchar4, short2, float4, u64 and 3-D and layered forms.
extern "C" __global__ void surf_vectors(cudaSurfaceObject_t s8x4, cudaSurfaceObject_t s16x2, cudaSurfaceObject_t f4,
                                        cudaSurfaceObject_t l1, int w) {
    int x = threadIdx.x;
    if (x < w) {
        uchar4 a = surf2Dread<uchar4>(s8x4, x * 4, 1);
        surf2Dwrite(make_uchar4(a.w, a.z, a.y, a.x), s8x4, x * 4, 0);
        short2 b = surf1Dread<short2>(s16x2, x * 4);
        surf1Dwrite(make_short2(b.y, b.x), s16x2, x * 4);
        float4 c = surf3Dread<float4>(f4, x * 16, 1, 1);
        surf3Dwrite(make_float4(c.x * 2, c.y * 2, c.z * 2, c.w * 2), f4, x * 16, 0, 0);
        unsigned long long d = surf1Dread<unsigned long long>(l1, x * 8);
        surf1Dwrite(d + 5, l1, x * 8);
    }
}

extern "C" __global__ void surf_layered(cudaSurfaceObject_t l1, cudaSurfaceObject_t l2, int w) {
    int x = threadIdx.x;
    if (x < w) {
        unsigned short a = surf1DLayeredread<unsigned short>(l1, x * 2, 1);
        surf1DLayeredwrite<unsigned short>(a + 7, l1, x * 2, 0);
        unsigned char b = surf2DLayeredread<unsigned char>(l2, x, 1, 2);
        surf2DLayeredwrite<unsigned char>(b + 3, l2, x, 0, 1);
    }
}
