// Tensor-core instructions: CUDA's wmma API, inline-asm mma.sync in the
// PTX ISA's fragment layouts, ldmatrix and movmatrix. One warp per block;
// the host checks every result against a plain matrix multiply.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>

using namespace nvcuda;

// ---- wmma ----------------------------------------------------------------

// 16x16x16 half -> float, A and B in the given layouts with leading
// dimension 24 (not the tile width), C read and D written with leading
// dimension 20, row-major when `c_row`, else column-major.
template <class LA, class LB>
__device__ void wmma_f16_impl(const half *a, const half *b, const float *c, float *d, int c_row) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, LA> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, LB> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
    wmma::load_matrix_sync(fa, a, 24);
    wmma::load_matrix_sync(fb, b, 24);
    auto lay = c_row ? wmma::mem_row_major : wmma::mem_col_major;
    wmma::load_matrix_sync(fc, c, 20, lay);
    wmma::mma_sync(fc, fa, fb, fc);
    wmma::store_matrix_sync(d, fc, 20, lay);
}

extern "C" __global__ void wmma_f16_rr(const half *a, const half *b, const float *c, float *d, int c_row) {
    wmma_f16_impl<wmma::row_major, wmma::row_major>(a, b, c, d, c_row);
}
extern "C" __global__ void wmma_f16_rc(const half *a, const half *b, const float *c, float *d, int c_row) {
    wmma_f16_impl<wmma::row_major, wmma::col_major>(a, b, c, d, c_row);
}
extern "C" __global__ void wmma_f16_cr(const half *a, const half *b, const float *c, float *d, int c_row) {
    wmma_f16_impl<wmma::col_major, wmma::row_major>(a, b, c, d, c_row);
}
extern "C" __global__ void wmma_f16_cc(const half *a, const half *b, const float *c, float *d, int c_row) {
    wmma_f16_impl<wmma::col_major, wmma::col_major>(a, b, c, d, c_row);
}

// Half accumulator over K = 32 (two steps), rows of A and B dense.
extern "C" __global__ void wmma_f16_acc16(const half *a, const half *b, half *d) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, half> fc;
    wmma::fill_fragment(fc, __float2half(0.0f));
    for (int k = 0; k < 32; k += 16) {
        wmma::load_matrix_sync(fa, a + k, 32);
        wmma::load_matrix_sync(fb, b + k * 16, 16);
        wmma::mma_sync(fc, fa, fb, fc);
    }
    wmma::store_matrix_sync(d, fc, 16, wmma::mem_row_major);
}

// The other two half shapes: m32n8k16 and m8n32k16, dense row-major.
extern "C" __global__ void wmma_f16_m32n8(const half *a, const half *b, float *d) {
    wmma::fragment<wmma::matrix_a, 32, 8, 16, half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 32, 8, 16, half, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 32, 8, 16, float> fc;
    wmma::fill_fragment(fc, 0.0f);
    wmma::load_matrix_sync(fa, a, 16);
    wmma::load_matrix_sync(fb, b, 16);
    wmma::mma_sync(fc, fa, fb, fc);
    wmma::store_matrix_sync(d, fc, 8, wmma::mem_row_major);
}
extern "C" __global__ void wmma_f16_m8n32(const half *a, const half *b, float *d) {
    wmma::fragment<wmma::matrix_a, 8, 32, 16, half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 8, 32, 16, half, wmma::row_major> fb;
    wmma::fragment<wmma::accumulator, 8, 32, 16, float> fc;
    wmma::fill_fragment(fc, 0.0f);
    wmma::load_matrix_sync(fa, a, 16);
    wmma::load_matrix_sync(fb, b, 32);
    wmma::mma_sync(fc, fa, fb, fc);
    wmma::store_matrix_sync(d, fc, 32, wmma::mem_row_major);
}

// bf16 16x16x16 -> float, dense; A row-major, B column-major.
extern "C" __global__ void wmma_bf16(const __nv_bfloat16 *a, const __nv_bfloat16 *b, float *d) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
    wmma::fill_fragment(fc, 0.0f);
    wmma::load_matrix_sync(fa, a, 16);
    wmma::load_matrix_sync(fb, b, 16);
    wmma::mma_sync(fc, fa, fb, fc);
    wmma::store_matrix_sync(d, fc, 16, wmma::mem_row_major);
}

// tf32 m16n16k8: fragments rounded to tf32 element by element.
extern "C" __global__ void wmma_tf32(const float *a, const float *b, float *d) {
    wmma::fragment<wmma::matrix_a, 16, 16, 8, wmma::precision::tf32, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 8, wmma::precision::tf32, wmma::row_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 8, float> fc;
    wmma::load_matrix_sync(fa, a, 8);
    wmma::load_matrix_sync(fb, b, 16);
    for (int i = 0; i < fa.num_elements; i++) fa.x[i] = wmma::__float_to_tf32(fa.x[i]);
    for (int i = 0; i < fb.num_elements; i++) fb.x[i] = wmma::__float_to_tf32(fb.x[i]);
    wmma::fill_fragment(fc, 0.0f);
    wmma::mma_sync(fc, fa, fb, fc);
    wmma::store_matrix_sync(d, fc, 16, wmma::mem_row_major);
}

// double m8n8k4, accumulating into C (column-major B).
extern "C" __global__ void wmma_f64(const double *a, const double *b, const double *c, double *d) {
    wmma::fragment<wmma::matrix_a, 8, 8, 4, double, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 8, 8, 4, double, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 8, 8, 4, double> fc;
    wmma::load_matrix_sync(fa, a, 4);
    wmma::load_matrix_sync(fb, b, 4);
    wmma::load_matrix_sync(fc, c, 8, wmma::mem_row_major);
    wmma::mma_sync(fc, fa, fb, fc);
    wmma::store_matrix_sync(d, fc, 8, wmma::mem_row_major);
}

// int8 m16n16k16: s8 x s8 and u8 x u8 into s32, accumulating into C.
extern "C" __global__ void wmma_s8(const signed char *a, const signed char *b, const int *c, int *d) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, signed char, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, signed char, wmma::row_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, int> fc;
    wmma::load_matrix_sync(fa, a, 16);
    wmma::load_matrix_sync(fb, b, 16);
    wmma::load_matrix_sync(fc, c, 16, wmma::mem_row_major);
    wmma::mma_sync(fc, fa, fb, fc);
    wmma::store_matrix_sync(d, fc, 16, wmma::mem_row_major);
}
extern "C" __global__ void wmma_u8(const unsigned char *a, const unsigned char *b, int *d) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, unsigned char, wmma::col_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, unsigned char, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, int> fc;
    wmma::fill_fragment(fc, 7);
    wmma::load_matrix_sync(fa, a, 16);
    wmma::load_matrix_sync(fb, b, 16);
    wmma::mma_sync(fc, fa, fb, fc);
    wmma::store_matrix_sync(d, fc, 16, wmma::mem_col_major);
}

// s4 m8n8k32 (A row-major, B column-major, two elements a byte).
extern "C" __global__ void wmma_s4(const void *a, const void *b, int *d) {
    wmma::fragment<wmma::matrix_a, 8, 8, 32, wmma::experimental::precision::s4, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 8, 8, 32, wmma::experimental::precision::s4, wmma::col_major> fb;
    wmma::fragment<wmma::accumulator, 8, 8, 32, int> fc;
    wmma::fill_fragment(fc, 0);
    wmma::load_matrix_sync(fa, a, 32);
    wmma::load_matrix_sync(fb, b, 32);
    wmma::mma_sync(fc, fa, fb, fc);
    wmma::store_matrix_sync(d, fc, 8, wmma::mem_row_major);
}

// fill_fragment and element-wise work on fragments:
// D = alpha * (A * B + beta) + 1, every element of A scaled by 2 first.
extern "C" __global__ void wmma_elementwise(const half *a, const half *b, float *d, float alpha, float beta) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::row_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
    wmma::fill_fragment(fc, beta);
    wmma::load_matrix_sync(fa, a, 16);
    wmma::load_matrix_sync(fb, b, 16);
    for (int i = 0; i < fa.num_elements; i++) fa.x[i] = __hmul(fa.x[i], __float2half(2.0f));
    wmma::mma_sync(fc, fa, fb, fc);
    for (int i = 0; i < fc.num_elements; i++) fc.x[i] = alpha * fc.x[i] + 1.0f;
    wmma::store_matrix_sync(d, fc, 16, wmma::mem_row_major);
}

// ---- mma.sync with the PTX ISA's fragment layouts ------------------------
// Matrices in memory: A is M x K row-major, B is K x N row-major, C and D
// are M x N row-major. Each kernel builds its fragments by the ISA's
// formulas (groupID = lane / 4, tig = lane % 4).

__device__ unsigned pack16(unsigned short lo, unsigned short hi) { return lo | ((unsigned)hi << 16); }

// m16n8k16 f16 -> f32.
extern "C" __global__ void mma_f16_f32(const unsigned short *a, const unsigned short *b, const float *c, float *d) {
    int lane = threadIdx.x, g = lane >> 2, t = lane & 3;
    unsigned ra[4], rb[2];
    float rc[4];
    for (int r = 0; r < 4; r++) {
        int row = g + 8 * (r & 1), col = t * 2 + 8 * (r >> 1);
        ra[r] = pack16(a[row * 16 + col], a[row * 16 + col + 1]);
    }
    for (int r = 0; r < 2; r++) {
        int k = t * 2 + 8 * r;
        rb[r] = pack16(b[k * 8 + g], b[(k + 1) * 8 + g]);
    }
    for (int i = 0; i < 4; i++) rc[i] = c[(g + 8 * (i >> 1)) * 8 + t * 2 + (i & 1)];
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%10,%11,%12,%13};"
        : "=f"(rc[0]), "=f"(rc[1]), "=f"(rc[2]), "=f"(rc[3])
        : "r"(ra[0]), "r"(ra[1]), "r"(ra[2]), "r"(ra[3]), "r"(rb[0]), "r"(rb[1]), "f"(rc[0]), "f"(rc[1]),
          "f"(rc[2]), "f"(rc[3]));
    for (int i = 0; i < 4; i++) d[(g + 8 * (i >> 1)) * 8 + t * 2 + (i & 1)] = rc[i];
}

// m16n8k16 f16 -> f16 (C and D as f16x2 pairs).
extern "C" __global__ void mma_f16_f16(const unsigned short *a, const unsigned short *b, const unsigned short *c,
                                       unsigned short *d) {
    int lane = threadIdx.x, g = lane >> 2, t = lane & 3;
    unsigned ra[4], rb[2], rc[2], rd[2];
    for (int r = 0; r < 4; r++) {
        int row = g + 8 * (r & 1), col = t * 2 + 8 * (r >> 1);
        ra[r] = pack16(a[row * 16 + col], a[row * 16 + col + 1]);
    }
    for (int r = 0; r < 2; r++) {
        int k = t * 2 + 8 * r;
        rb[r] = pack16(b[k * 8 + g], b[(k + 1) * 8 + g]);
    }
    for (int r = 0; r < 2; r++) {
        int at = (g + 8 * r) * 8 + t * 2;
        rc[r] = pack16(c[at], c[at + 1]);
    }
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%0,%1}, {%2,%3,%4,%5}, {%6,%7}, {%8,%9};"
                 : "=r"(rd[0]), "=r"(rd[1])
                 : "r"(ra[0]), "r"(ra[1]), "r"(ra[2]), "r"(ra[3]), "r"(rb[0]), "r"(rb[1]), "r"(rc[0]), "r"(rc[1]));
    for (int r = 0; r < 2; r++) {
        int at = (g + 8 * r) * 8 + t * 2;
        d[at] = rd[r] & 0xffff;
        d[at + 1] = rd[r] >> 16;
    }
}

// m16n8k8 bf16 -> f32.
extern "C" __global__ void mma_bf16(const unsigned short *a, const unsigned short *b, const float *c, float *d) {
    int lane = threadIdx.x, g = lane >> 2, t = lane & 3;
    unsigned ra[2], rb;
    float rc[4];
    for (int r = 0; r < 2; r++) {
        int row = g + 8 * r, col = t * 2;
        ra[r] = pack16(a[row * 8 + col], a[row * 8 + col + 1]);
    }
    rb = pack16(b[(t * 2) * 8 + g], b[(t * 2 + 1) * 8 + g]);
    for (int i = 0; i < 4; i++) rc[i] = c[(g + 8 * (i >> 1)) * 8 + t * 2 + (i & 1)];
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%7,%8,%9,%10};"
                 : "=f"(rc[0]), "=f"(rc[1]), "=f"(rc[2]), "=f"(rc[3])
                 : "r"(ra[0]), "r"(ra[1]), "r"(rb), "f"(rc[0]), "f"(rc[1]), "f"(rc[2]), "f"(rc[3]));
    for (int i = 0; i < 4; i++) d[(g + 8 * (i >> 1)) * 8 + t * 2 + (i & 1)] = rc[i];
}

// m16n8k8 tf32 -> f32 (inputs already tf32 values).
extern "C" __global__ void mma_tf32(const float *a, const float *b, const float *c, float *d) {
    int lane = threadIdx.x, g = lane >> 2, t = lane & 3;
    unsigned ra[4], rb[2];
    float rc[4];
    for (int r = 0; r < 4; r++) ra[r] = __float_as_uint(a[(g + 8 * (r & 1)) * 8 + t + 4 * (r >> 1)]);
    for (int r = 0; r < 2; r++) rb[r] = __float_as_uint(b[(t + 4 * r) * 8 + g]);
    for (int i = 0; i < 4; i++) rc[i] = c[(g + 8 * (i >> 1)) * 8 + t * 2 + (i & 1)];
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%10,%11,%12,%13};"
        : "=f"(rc[0]), "=f"(rc[1]), "=f"(rc[2]), "=f"(rc[3])
        : "r"(ra[0]), "r"(ra[1]), "r"(ra[2]), "r"(ra[3]), "r"(rb[0]), "r"(rb[1]), "f"(rc[0]), "f"(rc[1]),
          "f"(rc[2]), "f"(rc[3]));
    for (int i = 0; i < 4; i++) d[(g + 8 * (i >> 1)) * 8 + t * 2 + (i & 1)] = rc[i];
}

// m8n8k4 f64.
extern "C" __global__ void mma_f64(const double *a, const double *b, const double *c, double *d) {
    int lane = threadIdx.x, g = lane >> 2, t = lane & 3;
    double ra = a[g * 4 + t], rb = b[t * 8 + g];
    double rc0 = c[g * 8 + t * 2], rc1 = c[g * 8 + t * 2 + 1];
    asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%4,%5};"
                 : "=d"(rc0), "=d"(rc1)
                 : "d"(ra), "d"(rb), "d"(rc0), "d"(rc1));
    d[g * 8 + t * 2] = rc0;
    d[g * 8 + t * 2 + 1] = rc1;
}

// m16n8k32 s8 -> s32, with .satfinite when `sat`.
extern "C" __global__ void mma_s8(const signed char *a, const signed char *b, const int *c, int *d, int sat) {
    int lane = threadIdx.x, g = lane >> 2, t = lane & 3;
    unsigned ra[4], rb[2];
    int rc[4];
    for (int r = 0; r < 4; r++) {
        int row = g + 8 * (r & 1), col = t * 4 + 16 * (r >> 1);
        unsigned v = 0;
        for (int j = 0; j < 4; j++) v |= (unsigned)(unsigned char)a[row * 32 + col + j] << (8 * j);
        ra[r] = v;
    }
    for (int r = 0; r < 2; r++) {
        unsigned v = 0;
        for (int j = 0; j < 4; j++) v |= (unsigned)(unsigned char)b[(t * 4 + j + 16 * r) * 8 + g] << (8 * j);
        rb[r] = v;
    }
    for (int i = 0; i < 4; i++) rc[i] = c[(g + 8 * (i >> 1)) * 8 + t * 2 + (i & 1)];
    if (sat)
        asm volatile(
            "mma.sync.aligned.m16n8k32.row.col.satfinite.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
            "{%10,%11,%12,%13};"
            : "=r"(rc[0]), "=r"(rc[1]), "=r"(rc[2]), "=r"(rc[3])
            : "r"(ra[0]), "r"(ra[1]), "r"(ra[2]), "r"(ra[3]), "r"(rb[0]), "r"(rb[1]), "r"(rc[0]), "r"(rc[1]),
              "r"(rc[2]), "r"(rc[3]));
    else
        asm volatile(
            "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
            "{%10,%11,%12,%13};"
            : "=r"(rc[0]), "=r"(rc[1]), "=r"(rc[2]), "=r"(rc[3])
            : "r"(ra[0]), "r"(ra[1]), "r"(ra[2]), "r"(ra[3]), "r"(rb[0]), "r"(rb[1]), "r"(rc[0]), "r"(rc[1]),
              "r"(rc[2]), "r"(rc[3]));
    for (int i = 0; i < 4; i++) d[(g + 8 * (i >> 1)) * 8 + t * 2 + (i & 1)] = rc[i];
}

// m16n8k64 s4 -> s32 (inputs one element a byte, values -8..7).
extern "C" __global__ void mma_s4(const signed char *a, const signed char *b, const int *c, int *d) {
    int lane = threadIdx.x, g = lane >> 2, t = lane & 3;
    unsigned ra[4], rb[2];
    int rc[4];
    for (int r = 0; r < 4; r++) {
        int row = g + 8 * (r & 1), col = t * 8 + 32 * (r >> 1);
        unsigned v = 0;
        for (int j = 0; j < 8; j++) v |= ((unsigned)a[row * 64 + col + j] & 15u) << (4 * j);
        ra[r] = v;
    }
    for (int r = 0; r < 2; r++) {
        unsigned v = 0;
        for (int j = 0; j < 8; j++) v |= ((unsigned)b[(t * 8 + j + 32 * r) * 8 + g] & 15u) << (4 * j);
        rb[r] = v;
    }
    for (int i = 0; i < 4; i++) rc[i] = c[(g + 8 * (i >> 1)) * 8 + t * 2 + (i & 1)];
    asm volatile(
        "mma.sync.aligned.m16n8k64.row.col.s32.s4.s4.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%10,%11,%12,%13};"
        : "=r"(rc[0]), "=r"(rc[1]), "=r"(rc[2]), "=r"(rc[3])
        : "r"(ra[0]), "r"(ra[1]), "r"(ra[2]), "r"(ra[3]), "r"(rb[0]), "r"(rb[1]), "r"(rc[0]), "r"(rc[1]),
          "r"(rc[2]), "r"(rc[3]));
    for (int i = 0; i < 4; i++) d[(g + 8 * (i >> 1)) * 8 + t * 2 + (i & 1)] = rc[i];
}

// ---- ldmatrix feeding mma --------------------------------------------------

__device__ unsigned smem(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }

// A 16x16 and B 16x8 half, row-major. d1: A by ldmatrix.x4, B by
// .x2.trans from row-major B; d2: B by .x2 from a transposed copy;
// d3: A[:, 0:8] by .x2 times B[0:8, :] by .x1.trans (m16n8k8).
extern "C" __global__ void ldmatrix_mma(const half *a, const half *b, float *d1, float *d2, float *d3) {
    __shared__ __align__(16) half sa[16 * 16];
    __shared__ __align__(16) half sb[16 * 8];
    __shared__ __align__(16) half sbt[8 * 16];
    int lane = threadIdx.x, g = lane >> 2, t = lane & 3;
    for (int i = lane; i < 256; i += 32) sa[i] = a[i];
    for (int i = lane; i < 128; i += 32) {
        sb[i] = b[i];
        sbt[(i % 8) * 16 + i / 8] = b[i];
    }
    __syncwarp();
    unsigned ra[4], rb[2], rbt[2], ra8[2], rb8;
    int m = lane >> 3, row = lane & 7;
    unsigned pa = smem(&sa[(row + 8 * (m & 1)) * 16 + 8 * (m >> 1)]);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(ra[0]), "=r"(ra[1]), "=r"(ra[2]), "=r"(ra[3])
                 : "r"(pa));
    unsigned pb = smem(&sb[(lane & 15) * 8]);
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];" : "=r"(rb[0]), "=r"(rb[1]) : "r"(pb));
    unsigned pbt = smem(&sbt[row * 16 + 8 * (m & 1)]);
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared::cta.b16 {%0,%1}, [%2];"
                 : "=r"(rbt[0]), "=r"(rbt[1])
                 : "r"(pbt));
    unsigned pa8 = smem(&sa[(row + 8 * (m & 1)) * 16]);
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];" : "=r"(ra8[0]), "=r"(ra8[1]) : "r"(pa8));
    unsigned pb8 = smem(&sb[row * 8]);
    asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];" : "=r"(rb8) : "r"(pb8));
    float c1[4] = {0, 0, 0, 0}, c2[4] = {0, 0, 0, 0}, c3[4] = {0, 0, 0, 0};
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};"
        : "+f"(c1[0]), "+f"(c1[1]), "+f"(c1[2]), "+f"(c1[3])
        : "r"(ra[0]), "r"(ra[1]), "r"(ra[2]), "r"(ra[3]), "r"(rb[0]), "r"(rb[1]));
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};"
        : "+f"(c2[0]), "+f"(c2[1]), "+f"(c2[2]), "+f"(c2[3])
        : "r"(ra[0]), "r"(ra[1]), "r"(ra[2]), "r"(ra[3]), "r"(rbt[0]), "r"(rbt[1]));
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};"
                 : "+f"(c3[0]), "+f"(c3[1]), "+f"(c3[2]), "+f"(c3[3])
                 : "r"(ra8[0]), "r"(ra8[1]), "r"(rb8));
    for (int i = 0; i < 4; i++) {
        int at = (g + 8 * (i >> 1)) * 8 + t * 2 + (i & 1);
        d1[at] = c1[i];
        d2[at] = c2[i];
        d3[at] = c3[i];
    }
}

// Raw ldmatrix and movmatrix results: `m` is 32 rows of 8 b16; lane l
// points at row (5 l + 3) % 32. Per lane 15 words: x1, x1.trans, x2,
// x2.trans, x4, x4.trans, then movmatrix.trans of (lane * 0x10001 + m[lane]).
extern "C" __global__ void ldmatrix_raw(const unsigned short *m, unsigned *out) {
    __shared__ __align__(16) unsigned short s[32 * 8];
    int lane = threadIdx.x;
    for (int i = lane; i < 256; i += 32) s[i] = m[i];
    __syncwarp();
    unsigned p = smem(&s[((5 * lane + 3) % 32) * 8]);
    unsigned *o = out + lane * 15;
    unsigned r[4];
    asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];" : "=r"(r[0]) : "r"(p));
    o[0] = r[0];
    asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];" : "=r"(r[0]) : "r"(p));
    o[1] = r[0];
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];" : "=r"(r[0]), "=r"(r[1]) : "r"(p));
    o[2] = r[0];
    o[3] = r[1];
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];" : "=r"(r[0]), "=r"(r[1]) : "r"(p));
    o[4] = r[0];
    o[5] = r[1];
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(p));
    for (int i = 0; i < 4; i++) o[6 + i] = r[i];
    // Generic address (no state space) into shared memory.
    const unsigned short *gp = &s[((5 * lane + 3) % 32) * 8];
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "l"(gp));
    for (int i = 0; i < 4; i++) o[10 + i] = r[i];
    unsigned x = lane * 0x10001u + m[lane], y;
    asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;" : "=r"(y) : "r"(x));
    o[14] = y;
}
