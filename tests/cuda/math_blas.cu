// cuBLAS through rcud: handle management, host<->device copies, levels 1,
// 2 and 3 in S/D/C/Z (banded, packed, rank updates, syr2k/syrkx and the
// rotations included), batched and mixed-precision GEMM, both pointer modes,
// the batched LU routines, trsm/gemv/geqrf/gels batched, and the statuses of bad calls. Every result is checked against a
// reference computed on the host here.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <complex>
#include <cstring>
#include <vector>

#include "check.h"

#define CHECK_BLAS(call)                                                                \
    do {                                                                                \
        cublasStatus_t st_ = (call);                                                    \
        if (st_ != CUBLAS_STATUS_SUCCESS) {                                             \
            printf("FAIL: %s returned %s at line %d\n", #call, cublasGetStatusName(st_), \
                   __LINE__);                                                           \
            fflush(stdout);                                                             \
            exit(1);                                                                    \
        }                                                                               \
    } while (0)

#define EXPECT_STATUS(call, expected)                                                   \
    do {                                                                                \
        cublasStatus_t st_ = (call);                                                    \
        printf("%s -> %s\n", #call, cublasGetStatusName(st_));                          \
        EXPECT(st_ == (expected), "%s returned %s, expected %s", #call,                 \
               cublasGetStatusName(st_), #expected);                                    \
    } while (0)

typedef std::complex<double> Z;

static unsigned seed_state = 12345;
static double next_value() {
    seed_state = seed_state * 1103515245u + 12345u;
    return ((seed_state >> 8) % 2001) / 1000.0 - 1.0;
}

// Values of a host type from complex references, and back.
static void to_host(const Z& v, float* out) { *out = (float)v.real(); }
static void to_host(const Z& v, double* out) { *out = v.real(); }
static void to_host(const Z& v, cuComplex* out) { *out = make_cuComplex((float)v.real(), (float)v.imag()); }
static void to_host(const Z& v, cuDoubleComplex* out) { *out = make_cuDoubleComplex(v.real(), v.imag()); }
static Z from_host(float v) { return Z(v, 0); }
static Z from_host(double v) { return Z(v, 0); }
static Z from_host(cuComplex v) { return Z(v.x, v.y); }
static Z from_host(cuDoubleComplex v) { return Z(v.x, v.y); }
template <typename T> static bool is_complex();
template <> bool is_complex<float>() { return false; }
template <> bool is_complex<double>() { return false; }
template <> bool is_complex<cuComplex>() { return true; }
template <> bool is_complex<cuDoubleComplex>() { return true; }

// Random values of T (imaginary parts only for complex T), as references.
template <typename T> static std::vector<Z> random_values(size_t n) {
    std::vector<Z> v(n);
    for (auto& x : v) {
        double re = next_value();
        double im = is_complex<T>() ? next_value() : 0.0;
        T stored;
        to_host(Z(re, im), &stored);
        x = from_host(stored);
    }
    return v;
}

template <typename T> static T* device_copy(const std::vector<Z>& values) {
    std::vector<T> host(values.size());
    for (size_t i = 0; i < values.size(); i++) to_host(values[i], &host[i]);
    T* d = nullptr;
    CHECK(cudaMalloc(&d, values.size() * sizeof(T) + 16));
    CHECK(cudaMemcpy(d, host.data(), values.size() * sizeof(T), cudaMemcpyHostToDevice));
    return d;
}

template <typename T> static std::vector<Z> host_copy(const T* d, size_t n) {
    std::vector<T> host(n);
    CHECK(cudaMemcpy(host.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost));
    std::vector<Z> out(n);
    for (size_t i = 0; i < n; i++) out[i] = from_host(host[i]);
    return out;
}

static void expect_close(const std::vector<Z>& got, const std::vector<Z>& want, double tol,
                         const char* what) {
    EXPECT(got.size() == want.size(), "%s: size", what);
    for (size_t i = 0; i < got.size(); i++) {
        double err = std::abs(got[i] - want[i]);
        EXPECT(err <= tol * (1.0 + std::abs(want[i])), "%s: element %zu is (%g,%g), want (%g,%g)",
               what, i, got[i].real(), got[i].imag(), want[i].real(), want[i].imag());
    }
}

static Z op_elem(const std::vector<Z>& m, int ld, cublasOperation_t op, int i, int j) {
    if (op == CUBLAS_OP_N) return m[i + (size_t)j * ld];
    if (op == CUBLAS_OP_T) return m[j + (size_t)i * ld];
    return std::conj(m[j + (size_t)i * ld]);
}

// C = alpha op(A) op(B) + beta C on the host.
static std::vector<Z> ref_gemm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, Z alpha,
                               const std::vector<Z>& a, int lda, const std::vector<Z>& b, int ldb, Z beta,
                               std::vector<Z> c, int ldc) {
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) {
            Z s = 0;
            for (int l = 0; l < k; l++) s += op_elem(a, lda, ta, i, l) * op_elem(b, ldb, tb, l, j);
            c[i + (size_t)j * ldc] = alpha * s + beta * c[i + (size_t)j * ldc];
        }
    return c;
}

// The typed GEMM entry points, for one template test.
static cublasStatus_t gemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                           const float* al, const float* a, int lda, const float* b, int ldb, const float* be,
                           float* c, int ldc) {
    return cublasSgemm(h, ta, tb, m, n, k, al, a, lda, b, ldb, be, c, ldc);
}
static cublasStatus_t gemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                           const double* al, const double* a, int lda, const double* b, int ldb,
                           const double* be, double* c, int ldc) {
    return cublasDgemm(h, ta, tb, m, n, k, al, a, lda, b, ldb, be, c, ldc);
}
static cublasStatus_t gemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                           const cuComplex* al, const cuComplex* a, int lda, const cuComplex* b, int ldb,
                           const cuComplex* be, cuComplex* c, int ldc) {
    return cublasCgemm(h, ta, tb, m, n, k, al, a, lda, b, ldb, be, c, ldc);
}
static cublasStatus_t gemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                           const cuDoubleComplex* al, const cuDoubleComplex* a, int lda,
                           const cuDoubleComplex* b, int ldb, const cuDoubleComplex* be, cuDoubleComplex* c,
                           int ldc) {
    return cublasZgemm(h, ta, tb, m, n, k, al, a, lda, b, ldb, be, c, ldc);
}

template <typename T> static void test_gemm(cublasHandle_t h, const char* name, double tol) {
    const int m = 37, n = 29, k = 41;
    cublasOperation_t ops[3] = {CUBLAS_OP_N, CUBLAS_OP_T, CUBLAS_OP_C};
    for (auto ta : ops)
        for (auto tb : ops) {
            int ar = ta == CUBLAS_OP_N ? m : k, ac = ta == CUBLAS_OP_N ? k : m;
            int br = tb == CUBLAS_OP_N ? k : n, bc = tb == CUBLAS_OP_N ? n : k;
            int lda = ar + 3, ldb = br + 1, ldc = m + 2;
            auto a = random_values<T>((size_t)lda * ac);
            auto b = random_values<T>((size_t)ldb * bc);
            auto c = random_values<T>((size_t)ldc * n);
            T *da = device_copy<T>(a), *db = device_copy<T>(b), *dc = device_copy<T>(c);
            Z alpha = is_complex<T>() ? Z(0.5, -1.5) : Z(1.25, 0), beta = is_complex<T>() ? Z(-0.5, 0.25) : Z(-2, 0);
            T al, be;
            to_host(alpha, &al);
            to_host(beta, &be);
            CHECK_BLAS(gemm(h, ta, tb, m, n, k, &al, da, lda, db, ldb, &be, dc, ldc));
            auto want = ref_gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
            expect_close(host_copy(dc, c.size()), want, tol, name);
            CHECK(cudaFree(da));
            CHECK(cudaFree(db));
            CHECK(cudaFree(dc));
        }
    printf("%s: 9 transpose combinations ok\n", name);
}

static void test_handle_and_copies(cudaStream_t stream) {
    cublasHandle_t h;
    CHECK_BLAS(cublasCreate(&h));
    int version = 0;
    CHECK_BLAS(cublasGetVersion(h, &version));
    int major = 0;
    CHECK_BLAS(cublasGetProperty(MAJOR_VERSION, &major));
    EXPECT(version / 10000 == major && major >= 12, "version %d, major %d", version, major);
    printf("cublas version: %d\n", version);

    CHECK_BLAS(cublasSetStream(h, stream));
    cudaStream_t got;
    CHECK_BLAS(cublasGetStream(h, &got));
    EXPECT(got == stream, "stream");
    cublasPointerMode_t mode;
    CHECK_BLAS(cublasGetPointerMode(h, &mode));
    EXPECT(mode == CUBLAS_POINTER_MODE_HOST, "default pointer mode");
    CHECK_BLAS(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_DEVICE));
    CHECK_BLAS(cublasGetPointerMode(h, &mode));
    EXPECT(mode == CUBLAS_POINTER_MODE_DEVICE, "device pointer mode");
    cublasMath_t math;
    CHECK_BLAS(cublasSetMathMode(h, CUBLAS_TF32_TENSOR_OP_MATH));
    CHECK_BLAS(cublasGetMathMode(h, &math));
    EXPECT(math == CUBLAS_TF32_TENSOR_OP_MATH, "math mode");

    void* ws;
    CHECK(cudaMalloc(&ws, 1 << 20));
    CHECK_BLAS(cublasSetWorkspace(h, ws, 1 << 20));
    // NVIDIA documents 256-byte alignment, but cuBLAS 13.1 takes any
    // workspace (seen on an H200).
    EXPECT_STATUS(cublasSetWorkspace(h, (char*)ws + 8, 4096), CUBLAS_STATUS_SUCCESS);
    EXPECT_STATUS(cublasSetWorkspace(h, ws, 1 << 20), CUBLAS_STATUS_SUCCESS);
    EXPECT(strcmp(cublasGetStatusName(CUBLAS_STATUS_INVALID_VALUE), "CUBLAS_STATUS_INVALID_VALUE") == 0,
           "status name");
    EXPECT(strlen(cublasGetStatusString(CUBLAS_STATUS_NOT_SUPPORTED)) > 0, "status string");

    // SetMatrix/GetMatrix with leading dimensions, SetVector/GetVector with
    // increments, synchronous and on a stream.
    const int rows = 5, cols = 4, lda = 7, ldb = 6;
    std::vector<double> a(lda * cols), back(lda * cols, -1.0);
    for (size_t i = 0; i < a.size(); i++) a[i] = (double)i;
    double* d;
    CHECK(cudaMalloc(&d, ldb * cols * sizeof(double)));
    CHECK(cudaMemset(d, 0, ldb * cols * sizeof(double)));
    CHECK_BLAS(cublasSetMatrix(rows, cols, sizeof(double), a.data(), lda, d, ldb));
    CHECK_BLAS(cublasGetMatrixAsync(rows, cols, sizeof(double), d, ldb, back.data(), lda, stream));
    CHECK(cudaStreamSynchronize(stream));
    for (int j = 0; j < cols; j++)
        for (int i = 0; i < lda; i++) {
            double want = i < rows ? a[i + j * lda] : -1.0;
            EXPECT(back[i + j * lda] == want, "GetMatrix (%d,%d)", i, j);
        }
    std::vector<float> x = {1, 2, 3, 4, 5, 6}, y(9, 0.f);
    float* dv;
    CHECK(cudaMalloc(&dv, 16 * sizeof(float)));
    CHECK_BLAS(cublasSetVectorAsync(3, sizeof(float), x.data(), 2, dv, 3, stream));
    CHECK_BLAS(cublasGetVector(3, sizeof(float), dv, 3, y.data(), 3));
    EXPECT(y[0] == 1 && y[3] == 3 && y[6] == 5, "SetVector/GetVector with increments");
    // A leading dimension below the rows and a negative count reach
    // cuBLAS's copy, which fails; zero and negative sizes are refused first.
    EXPECT_STATUS(cublasSetMatrix(rows, cols, sizeof(double), a.data(), 2, d, ldb), CUBLAS_STATUS_MAPPING_ERROR);
    EXPECT_STATUS(cublasGetMatrix(rows, cols, sizeof(double), d, 2, back.data(), lda), CUBLAS_STATUS_MAPPING_ERROR);
    EXPECT_STATUS(cublasSetMatrix(rows, cols, sizeof(double), a.data(), 0, d, ldb), CUBLAS_STATUS_INVALID_VALUE);
    EXPECT_STATUS(cublasSetVector(3, sizeof(float), x.data(), 0, dv, 1), CUBLAS_STATUS_INVALID_VALUE);
    EXPECT_STATUS(cublasSetVector(-1, sizeof(float), x.data(), 1, dv, 1), CUBLAS_STATUS_MAPPING_ERROR);
    EXPECT_STATUS(cublasSetVector(0, sizeof(float), x.data(), 1, dv, 1), CUBLAS_STATUS_SUCCESS);
    CHECK(cudaFree(d));
    CHECK(cudaFree(dv));
    CHECK(cudaFree(ws));
    CHECK_BLAS(cublasDestroy(h));
    printf("handle and copies ok\n");
}

static void test_level1(cublasHandle_t h) {
    const int n = 100;
    // Double: host and device pointer modes.
    auto x = random_values<double>(2 * n), y = random_values<double>(n);
    double *dx = device_copy<double>(x), *dy = device_copy<double>(y);
    double dot = 0;
    CHECK_BLAS(cublasDdot(h, n, dx, 2, dy, 1, &dot));
    Z want = 0;
    for (int i = 0; i < n; i++) want += x[2 * i] * y[i];
    EXPECT(fabs(dot - want.real()) < 1e-12, "Ddot %g vs %g", dot, want.real());
    double nrm = 0, asum = 0, wn = 0, wa = 0;
    CHECK_BLAS(cublasDnrm2(h, n, dx, 2, &nrm));
    CHECK_BLAS(cublasDasum(h, n, dx, 2, &asum));
    for (int i = 0; i < n; i++) {
        wn += x[2 * i].real() * x[2 * i].real();
        wa += fabs(x[2 * i].real());
    }
    EXPECT(fabs(nrm - sqrt(wn)) < 1e-12 && fabs(asum - wa) < 1e-12, "Dnrm2/Dasum");
    int imax = 0, imin = 0, bmax = 0, bmin = 0;
    CHECK_BLAS(cublasIdamax(h, n, dx, 2, &imax));
    CHECK_BLAS(cublasIdamin(h, n, dx, 2, &imin));
    for (int i = 1; i < n; i++) {
        if (fabs(x[2 * i].real()) > fabs(x[2 * bmax].real())) bmax = i;
        if (fabs(x[2 * i].real()) < fabs(x[2 * bmin].real())) bmin = i;
    }
    EXPECT(imax == bmax + 1 && imin == bmin + 1, "Idamax %d/%d Idamin %d/%d", imax, bmax + 1, imin, bmin + 1);
    int64_t imax64 = 0;
    CHECK_BLAS(cublasIdamax_64(h, n, dx, 2, &imax64));
    EXPECT(imax64 == bmax + 1, "Idamax_64");

    // Device pointer mode: alpha and the result in device memory.
    double* dscalars;
    CHECK(cudaMalloc(&dscalars, 4 * sizeof(double)));
    double alpha = 0.75;
    CHECK(cudaMemcpy(dscalars, &alpha, sizeof(double), cudaMemcpyHostToDevice));
    CHECK_BLAS(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_DEVICE));
    CHECK_BLAS(cublasDaxpy(h, n, dscalars, dx, 2, dy, 1));
    CHECK_BLAS(cublasDdot(h, n, dx, 2, dy, 1, dscalars + 1));
    CHECK_BLAS(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_HOST));
    double dot2 = 0;
    CHECK(cudaMemcpy(&dot2, dscalars + 1, sizeof(double), cudaMemcpyDeviceToHost));
    auto y2 = host_copy(dy, n);
    Z want2 = 0;
    for (int i = 0; i < n; i++) {
        Z yi = alpha * x[2 * i] + y[i];
        EXPECT(std::abs(y2[i] - yi) < 1e-12, "Daxpy element %d", i);
        want2 += x[2 * i] * yi;
    }
    EXPECT(fabs(dot2 - want2.real()) < 1e-11, "Ddot to device memory %g vs %g", dot2, want2.real());

    // Complex double: dotc, dotu, scal (complex and real), rot, swap, copy.
    auto zx = random_values<cuDoubleComplex>(n), zy = random_values<cuDoubleComplex>(n);
    cuDoubleComplex *dzx = device_copy<cuDoubleComplex>(zx), *dzy = device_copy<cuDoubleComplex>(zy);
    cuDoubleComplex dc, du;
    CHECK_BLAS(cublasZdotc(h, n, dzx, 1, dzy, -1, &dc));
    CHECK_BLAS(cublasZdotu(h, n, dzx, 1, dzy, -1, &du));
    Z wc = 0, wu = 0;
    for (int i = 0; i < n; i++) {
        wc += std::conj(zx[i]) * zy[n - 1 - i];
        wu += zx[i] * zy[n - 1 - i];
    }
    EXPECT(std::abs(from_host(dc) - wc) < 1e-12 && std::abs(from_host(du) - wu) < 1e-12, "Zdotc/Zdotu");
    cuDoubleComplex za = make_cuDoubleComplex(0.5, 2.0);
    CHECK_BLAS(cublasZscal(h, n, &za, dzx, 1));
    double half = 0.5;
    CHECK_BLAS(cublasZdscal(h, n, &half, dzx, 1));
    double c = 0.6;
    cuDoubleComplex s = make_cuDoubleComplex(0.0, 0.8);
    CHECK_BLAS(cublasZrot(h, n, dzx, 1, dzy, 1, &c, &s));
    auto gx = host_copy(dzx, n), gy = host_copy(dzy, n);
    for (int i = 0; i < n; i++) {
        Z xi = zx[i] * Z(0.5, 2.0) * 0.5, yi = zy[i];
        Z sx = from_host(s);
        EXPECT(std::abs(gx[i] - (c * xi + sx * yi)) < 1e-12, "Zrot x %d", i);
        EXPECT(std::abs(gy[i] - (c * yi - std::conj(sx) * xi)) < 1e-12, "Zrot y %d", i);
    }
    CHECK_BLAS(cublasZswap(h, n, dzx, 1, dzy, 1));
    CHECK_BLAS(cublasZcopy(h, n, dzy, 1, dzx, 1));
    auto cx = host_copy(dzx, n), cy = host_copy(dzy, n);
    expect_close(cx, gx, 1e-15, "Zswap+Zcopy x");
    expect_close(cy, gx, 1e-15, "Zswap y");

    // Single and complex float.
    auto sx = random_values<float>(n), sy = random_values<float>(n);
    float *dsx = device_copy<float>(sx), *dsy = device_copy<float>(sy);
    float sa = 2.0f;
    CHECK_BLAS(cublasSaxpy(h, n, &sa, dsx, 1, dsy, 1));
    float cs = 0.8f, sn = 0.6f;
    CHECK_BLAS(cublasSrot(h, n, dsx, 1, dsy, 1, &cs, &sn));
    auto rsx = host_copy(dsx, n), rsy = host_copy(dsy, n);
    for (int i = 0; i < n; i++) {
        Z yi = 2.0 * sx[i] + sy[i];
        EXPECT(std::abs(rsx[i] - (0.8 * sx[i] + 0.6 * yi)) < 1e-5, "Srot x");
        EXPECT(std::abs(rsy[i] - (0.8 * yi - 0.6 * sx[i])) < 1e-5, "Srot y");
    }
    auto cxv = random_values<cuComplex>(n);
    cuComplex* dcx = device_copy<cuComplex>(cxv);
    float cn = 0;
    int ic = 0, best = 0;
    CHECK_BLAS(cublasScnrm2(h, n, dcx, 1, &cn));
    CHECK_BLAS(cublasIcamax(h, n, dcx, 1, &ic));
    double wcn = 0;
    for (int i = 0; i < n; i++) {
        wcn += std::norm(cxv[i]);
        auto mag = [&](int j) { return fabs(cxv[j].real()) + fabs(cxv[j].imag()); };
        if (mag(i) > mag(best)) best = i;
    }
    EXPECT(fabs(cn - sqrt(wcn)) < 1e-5 && ic == best + 1, "Scnrm2/Icamax");

    for (void* p : {(void*)dx, (void*)dy, (void*)dscalars, (void*)dzx, (void*)dzy, (void*)dsx, (void*)dsy, (void*)dcx})
        CHECK(cudaFree(p));
    printf("level 1 ok\n");
}

static void test_level2(cublasHandle_t h) {
    const int m = 23, n = 17, lda = 25;
    // Sgemv transposed with increments; Zgemv conjugate-transposed.
    auto a = random_values<float>((size_t)lda * n);
    auto x = random_values<float>(2 * m), y = random_values<float>(n);
    float *da = device_copy<float>(a), *dx = device_copy<float>(x), *dy = device_copy<float>(y);
    float alpha = 1.5f, beta = -0.5f;
    CHECK_BLAS(cublasSgemv(h, CUBLAS_OP_T, m, n, &alpha, da, lda, dx, 2, &beta, dy, 1));
    std::vector<Z> want(n);
    for (int j = 0; j < n; j++) {
        Z s = 0;
        for (int i = 0; i < m; i++) s += a[i + j * lda] * x[2 * i];
        want[j] = 1.5 * s - 0.5 * y[j];
    }
    expect_close(host_copy(dy, n), want, 1e-5, "Sgemv T");

    auto za = random_values<cuDoubleComplex>((size_t)lda * n);
    auto zx = random_values<cuDoubleComplex>(m), zy = random_values<cuDoubleComplex>(n);
    cuDoubleComplex *dza = device_copy<cuDoubleComplex>(za), *dzx = device_copy<cuDoubleComplex>(zx),
                    *dzy = device_copy<cuDoubleComplex>(zy);
    cuDoubleComplex zal = make_cuDoubleComplex(1, 1), zbe = make_cuDoubleComplex(0, 0);
    CHECK_BLAS(cublasZgemv(h, CUBLAS_OP_C, m, n, &zal, dza, lda, dzx, 1, &zbe, dzy, 1));
    for (int j = 0; j < n; j++) {
        Z s = 0;
        for (int i = 0; i < m; i++) s += std::conj(za[i + j * lda]) * zx[i];
        want[j] = Z(1, 1) * s;
    }
    expect_close(host_copy(dzy, n), want, 1e-12, "Zgemv C");

    // Cgerc: A += alpha x y^H.
    auto ca = random_values<cuComplex>((size_t)lda * n);
    auto cx = random_values<cuComplex>(m), cy = random_values<cuComplex>(n);
    cuComplex *dca = device_copy<cuComplex>(ca), *dcx = device_copy<cuComplex>(cx), *dcy = device_copy<cuComplex>(cy);
    cuComplex cal = make_cuComplex(0.5f, -0.5f);
    CHECK_BLAS(cublasCgerc(h, m, n, &cal, dcx, 1, dcy, 1, dca, lda));
    auto wa = ca;
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) wa[i + j * lda] += Z(0.5, -0.5) * cx[i] * std::conj(cy[j]);
    expect_close(host_copy(dca, wa.size()), wa, 1e-5, "Cgerc");

    // Zhemv from the upper triangle.
    const int k = 13;
    auto ha = random_values<cuDoubleComplex>((size_t)lda * k);
    auto hx = random_values<cuDoubleComplex>(k), hy = random_values<cuDoubleComplex>(k);
    cuDoubleComplex *dha = device_copy<cuDoubleComplex>(ha), *dhx = device_copy<cuDoubleComplex>(hx),
                    *dhy = device_copy<cuDoubleComplex>(hy);
    cuDoubleComplex one = make_cuDoubleComplex(1, 0);
    CHECK_BLAS(cublasZhemv(h, CUBLAS_FILL_MODE_UPPER, k, &one, dha, lda, dhx, 1, &one, dhy, 1));
    std::vector<Z> hw(k);
    for (int i = 0; i < k; i++) {
        Z s = 0;
        for (int j = 0; j < k; j++) {
            Z e = i == j ? Z(ha[i + i * lda].real(), 0) : i < j ? ha[i + j * lda] : std::conj(ha[j + i * lda]);
            s += e * hx[j];
        }
        hw[i] = s + hy[i];
    }
    expect_close(host_copy(dhy, k), hw, 1e-12, "Zhemv");

    // Dtrmv then Dtrsv (lower, transposed, unit diagonal) restores x.
    auto t = random_values<double>((size_t)lda * k);
    auto tx = random_values<double>(k);
    double *dt = device_copy<double>(t), *dtx = device_copy<double>(tx);
    CHECK_BLAS(cublasDtrmv(h, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_T, CUBLAS_DIAG_UNIT, k, dt, lda, dtx, 1));
    std::vector<Z> tw(k);
    for (int i = 0; i < k; i++) {
        Z s = tx[i];
        for (int j = i + 1; j < k; j++) s += t[j + i * lda] * tx[j];
        tw[i] = s;
    }
    expect_close(host_copy(dtx, k), tw, 1e-12, "Dtrmv");
    CHECK_BLAS(cublasDtrsv(h, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_T, CUBLAS_DIAG_UNIT, k, dt, lda, dtx, 1));
    expect_close(host_copy(dtx, k), tx, 1e-10, "Dtrsv");
    for (void* p : {(void*)da, (void*)dx, (void*)dy, (void*)dza, (void*)dzx, (void*)dzy, (void*)dca, (void*)dcx,
                    (void*)dcy, (void*)dha, (void*)dhx, (void*)dhy, (void*)dt, (void*)dtx})
        CHECK(cudaFree(p));
    printf("level 2 ok\n");
}

static void test_level3_others(cublasHandle_t h) {
    const int m = 19, n = 11, ld = 21;
    // Ssymm (left, lower).
    auto a = random_values<float>((size_t)ld * m), b = random_values<float>((size_t)ld * n),
         c = random_values<float>((size_t)ld * n);
    float *da = device_copy<float>(a), *db = device_copy<float>(b), *dc = device_copy<float>(c);
    float one = 1.0f, two = 2.0f;
    CHECK_BLAS(cublasSsymm(h, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_LOWER, m, n, &two, da, ld, db, ld, &one, dc, ld));
    auto want = c;
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) {
            Z s = 0;
            for (int l = 0; l < m; l++) s += (i >= l ? a[i + l * ld] : a[l + i * ld]) * b[l + j * ld];
            want[i + j * ld] = 2.0 * s + c[i + j * ld];
        }
    expect_close(host_copy(dc, want.size()), want, 1e-5, "Ssymm");

    // Zherk (upper, conjugate-transposed A).
    const int k = 7;
    auto za = random_values<cuDoubleComplex>((size_t)ld * n), zc = random_values<cuDoubleComplex>((size_t)ld * n);
    cuDoubleComplex *dza = device_copy<cuDoubleComplex>(za), *dzc = device_copy<cuDoubleComplex>(zc);
    double ha = 0.5, hb = 2.0;
    CHECK_BLAS(cublasZherk(h, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_C, n, k, &ha, dza, ld, &hb, dzc, ld));
    auto zw = zc;
    for (int j = 0; j < n; j++)
        for (int i = 0; i <= j; i++) {
            Z s = 0;
            for (int l = 0; l < k; l++) s += std::conj(za[l + i * ld]) * za[l + j * ld];
            zw[i + j * ld] = 0.5 * s + 2.0 * zc[i + j * ld];
            if (i == j) zw[i + j * ld] = Z(zw[i + j * ld].real(), 0);
        }
    expect_close(host_copy(dzc, zw.size()), zw, 1e-12, "Zherk");

    // Dtrmm (right, upper, no transpose) into C, then Dtrsm back.
    auto t = random_values<double>((size_t)ld * n), tb = random_values<double>((size_t)ld * n);
    for (int i = 0; i < n; i++) t[i + i * ld] += 4.0;
    double *dt = device_copy<double>(t), *dtb = device_copy<double>(tb), *dtc = device_copy<double>(tb);
    double alpha = 2.0, inv = 0.5;
    CHECK_BLAS(cublasDtrmm(h, CUBLAS_SIDE_RIGHT, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_N, CUBLAS_DIAG_NON_UNIT, m, n,
                           &alpha, dt, ld, dtb, ld, dtc, ld));
    auto tw = tb;
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) {
            Z s = 0;
            for (int l = 0; l <= j; l++) s += tb[i + l * ld] * t[l + j * ld];
            tw[i + j * ld] = 2.0 * s;
        }
    expect_close(host_copy(dtc, tw.size()), tw, 1e-12, "Dtrmm");
    CHECK_BLAS(cublasDtrsm(h, CUBLAS_SIDE_RIGHT, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_N, CUBLAS_DIAG_NON_UNIT, m, n,
                           &inv, dt, ld, dtc, ld));
    expect_close(host_copy(dtc, tb.size()), tb, 1e-10, "Dtrsm");

    // Sgeam (C = 2 A^T - B), in place of nothing; Ddgmm (C = A diag(x)).
    auto ga = random_values<float>((size_t)ld * m), gb = random_values<float>((size_t)ld * m);
    float *dga = device_copy<float>(ga), *dgb = device_copy<float>(gb), *dgc = device_copy<float>(gb);
    float minus = -1.0f;
    CHECK_BLAS(cublasSgeam(h, CUBLAS_OP_T, CUBLAS_OP_N, n, m, &two, dga, ld, &minus, dgb, ld, dgc, ld));
    auto gw = gb;
    for (int j = 0; j < m; j++)
        for (int i = 0; i < n; i++) gw[i + j * ld] = 2.0 * ga[j + i * ld] - gb[i + j * ld];
    expect_close(host_copy(dgc, (size_t)ld * m), std::vector<Z>(gw.begin(), gw.begin() + (size_t)ld * m), 1e-5,
                 "Sgeam");
    auto xa = random_values<double>((size_t)ld * n), xv = random_values<double>(n);
    double *dxa = device_copy<double>(xa), *dxv = device_copy<double>(xv), *dxc = device_copy<double>(xa);
    CHECK_BLAS(cublasDdgmm(h, CUBLAS_SIDE_RIGHT, m, n, dxa, ld, dxv, 1, dxc, ld));
    auto xw = xa;
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) xw[i + j * ld] = xa[i + j * ld] * xv[j];
    expect_close(host_copy(dxc, xw.size()), xw, 1e-15, "Ddgmm");
    for (void* p : {(void*)da, (void*)db, (void*)dc, (void*)dza, (void*)dzc, (void*)dt, (void*)dtb, (void*)dtc,
                    (void*)dga, (void*)dgb, (void*)dgc, (void*)dxa, (void*)dxv, (void*)dxc})
        CHECK(cudaFree(p));
    printf("level 3 (symm, herk, trmm, trsm, geam, dgmm) ok\n");
}

static void test_batched(cublasHandle_t h, cudaStream_t stream) {
    const int m = 16, n = 8, k = 12, batch = 5;
    // DgemmStridedBatched and DgemmBatched on the handle's stream, alpha and
    // beta in device memory.
    auto a = random_values<double>((size_t)m * k * batch), b = random_values<double>((size_t)k * n * batch),
         c = random_values<double>((size_t)m * n * batch);
    double *da = device_copy<double>(a), *db = device_copy<double>(b), *dc = device_copy<double>(c),
           *dc2 = device_copy<double>(c);
    double scal[2] = {1.5, -1.0}, *dscal;
    CHECK(cudaMalloc(&dscal, sizeof scal));
    CHECK(cudaMemcpy(dscal, scal, sizeof scal, cudaMemcpyHostToDevice));
    CHECK_BLAS(cublasSetStream(h, stream));
    CHECK_BLAS(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_DEVICE));
    CHECK_BLAS(cublasDgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, dscal, da, m, (long long)m * k, db, k,
                                         (long long)k * n, dscal + 1, dc, m, (long long)m * n, batch));
    std::vector<double*> pa(batch), pb(batch), pc(batch);
    for (int i = 0; i < batch; i++) {
        pa[i] = da + (size_t)i * m * k;
        pb[i] = db + (size_t)i * k * n;
        pc[i] = dc2 + (size_t)i * m * n;
    }
    double **dpa, **dpb, **dpc;
    CHECK(cudaMalloc(&dpa, batch * sizeof(double*)));
    CHECK(cudaMalloc(&dpb, batch * sizeof(double*)));
    CHECK(cudaMalloc(&dpc, batch * sizeof(double*)));
    CHECK(cudaMemcpy(dpa, pa.data(), batch * sizeof(double*), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dpb, pb.data(), batch * sizeof(double*), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dpc, pc.data(), batch * sizeof(double*), cudaMemcpyHostToDevice));
    CHECK_BLAS(cublasDgemmBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, dscal, dpa, m, dpb, k, dscal + 1, dpc, m,
                                  batch));
    CHECK(cudaStreamSynchronize(stream));
    CHECK_BLAS(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_HOST));
    CHECK_BLAS(cublasSetStream(h, 0));
    std::vector<Z> want(c.size());
    for (int p = 0; p < batch; p++) {
        std::vector<Z> ap(a.begin() + (size_t)p * m * k, a.begin() + (size_t)(p + 1) * m * k);
        std::vector<Z> bp(b.begin() + (size_t)p * k * n, b.begin() + (size_t)(p + 1) * k * n);
        std::vector<Z> cp(c.begin() + (size_t)p * m * n, c.begin() + (size_t)(p + 1) * m * n);
        auto r = ref_gemm(CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, 1.5, ap, m, bp, k, -1.0, cp, m);
        std::copy(r.begin(), r.end(), want.begin() + (size_t)p * m * n);
    }
    expect_close(host_copy(dc, c.size()), want, 1e-12, "DgemmStridedBatched");
    expect_close(host_copy(dc2, c.size()), want, 1e-12, "DgemmBatched");

    // GemmEx: FP16 A/B with FP32 C and compute; BF16 in and out.
    std::vector<__half> ha((size_t)m * k), hb((size_t)k * n);
    std::vector<Z> ra(ha.size()), rb(hb.size());
    for (size_t i = 0; i < ha.size(); i++) {
        ha[i] = __float2half((float)next_value());
        ra[i] = __half2float(ha[i]);
    }
    for (size_t i = 0; i < hb.size(); i++) {
        hb[i] = __float2half((float)next_value());
        rb[i] = __half2float(hb[i]);
    }
    __half *dha, *dhb;
    float* dfc;
    CHECK(cudaMalloc(&dha, ha.size() * 2));
    CHECK(cudaMalloc(&dhb, hb.size() * 2));
    CHECK(cudaMalloc(&dfc, (size_t)m * n * 4));
    CHECK(cudaMemcpy(dha, ha.data(), ha.size() * 2, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dhb, hb.data(), hb.size() * 2, cudaMemcpyHostToDevice));
    float one = 1.0f, zero = 0.0f;
    CHECK_BLAS(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, dha, CUDA_R_16F, m, dhb, CUDA_R_16F, k,
                            &zero, dfc, CUDA_R_32F, m, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    auto hw = ref_gemm(CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, 1, ra, m, rb, k, 0, std::vector<Z>((size_t)m * n), m);
    expect_close(host_copy(dfc, (size_t)m * n), hw, 1e-5, "GemmEx f16->f32");

    std::vector<__nv_bfloat16> ba(ha.size()), bb(hb.size());
    for (size_t i = 0; i < ba.size(); i++) ba[i] = __float2bfloat16((float)ra[i].real());
    for (size_t i = 0; i < bb.size(); i++) bb[i] = __float2bfloat16((float)rb[i].real());
    __nv_bfloat16 *dba, *dbb, *dbc;
    CHECK(cudaMalloc(&dba, ba.size() * 2));
    CHECK(cudaMalloc(&dbb, bb.size() * 2));
    CHECK(cudaMalloc(&dbc, (size_t)m * n * 2));
    CHECK(cudaMemcpy(dba, ba.data(), ba.size() * 2, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dbb, bb.data(), bb.size() * 2, cudaMemcpyHostToDevice));
    CHECK_BLAS(cublasGemmStridedBatchedEx(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, dba, CUDA_R_16BF, m, 0, dbb,
                                          CUDA_R_16BF, k, 0, &zero, dbc, CUDA_R_16BF, m, 0, 1, CUBLAS_COMPUTE_32F,
                                          CUBLAS_GEMM_DEFAULT));
    std::vector<__nv_bfloat16> bc((size_t)m * n);
    CHECK(cudaMemcpy(bc.data(), dbc, bc.size() * 2, cudaMemcpyDeviceToHost));
    std::vector<Z> bcz(bc.size());
    for (size_t i = 0; i < bc.size(); i++) bcz[i] = __bfloat162float(bc[i]);
    // Inputs exact in BF16 only up to 8 bits: compare at BF16's precision.
    double worst = 0;
    for (size_t i = 0; i < bcz.size(); i++) worst = fmax(worst, std::abs(bcz[i] - hw[i]) / (1 + std::abs(hw[i])));
    EXPECT(worst < 3e-2, "GemmStridedBatchedEx bf16: relative error %g", worst);

    // GemmBatchedEx in FP16 compute (half alpha/beta), FP16 out.
    __half *dhc;
    CHECK(cudaMalloc(&dhc, (size_t)m * n * 2));
    void *arrays[3] = {dha, dhb, dhc}, **darrays;
    CHECK(cudaMalloc(&darrays, sizeof arrays));
    CHECK(cudaMemcpy(darrays, arrays, sizeof arrays, cudaMemcpyHostToDevice));
    __half hone = __float2half(1.0f), hzero = __float2half(0.0f);
    CHECK_BLAS(cublasGemmBatchedEx(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &hone, (const void**)darrays, CUDA_R_16F, m,
                                   (const void**)(darrays + 1), CUDA_R_16F, k, &hzero, darrays + 2, CUDA_R_16F, m, 1,
                                   CUBLAS_COMPUTE_16F, CUBLAS_GEMM_DEFAULT));
    std::vector<__half> hc((size_t)m * n);
    CHECK(cudaMemcpy(hc.data(), dhc, hc.size() * 2, cudaMemcpyDeviceToHost));
    worst = 0;
    for (size_t i = 0; i < hc.size(); i++) worst = fmax(worst, fabs(__half2float(hc[i]) - hw[i].real()) / (1 + std::abs(hw[i])));
    EXPECT(worst < 4e-3, "GemmBatchedEx f16: relative error %g", worst);
    EXPECT_STATUS(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, dha, CUDA_R_8I, m, dhb, CUDA_R_16F, k,
                               &zero, dfc, CUDA_R_32F, m, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                  CUBLAS_STATUS_NOT_SUPPORTED);

    // The 64-bit API: Sgemm_64.
    auto sa = random_values<float>((size_t)m * k), sb = random_values<float>((size_t)k * n);
    float *dsa = device_copy<float>(sa), *dsb = device_copy<float>(sb), *dsc;
    CHECK(cudaMalloc(&dsc, (size_t)m * n * 4));
    CHECK_BLAS(cublasSgemm_64(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, dsa, m, dsb, k, &zero, dsc, m));
    auto sw = ref_gemm(CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, 1, sa, m, sb, k, 0, std::vector<Z>((size_t)m * n), m);
    expect_close(host_copy(dsc, (size_t)m * n), sw, 1e-5, "Sgemm_64");
    for (void* p : {(void*)da, (void*)db, (void*)dc, (void*)dc2, (void*)dscal, (void*)dpa, (void*)dpb, (void*)dpc,
                    (void*)dha, (void*)dhb, (void*)dfc, (void*)dba, (void*)dbb, (void*)dbc, (void*)dhc,
                    (void*)darrays, (void*)dsa, (void*)dsb, (void*)dsc})
        CHECK(cudaFree(p));
    printf("batched and mixed-precision GEMM ok\n");
}

// Statuses of bad calls, as NVIDIA's cuBLAS 13.1 answers them on an H200.
// The batched LU routines (what CuPy's det, batched inv and batched solve
// call) in one type: getrf with pivots on `batch` matrices, the last one
// singular; getrs and getri on the regular ones; the residuals checked.
template <typename T>
static void test_batched_lu(cublasHandle_t h, const char* name, double tol,
                            cublasStatus_t (*getrf)(cublasHandle_t, int, T* const[], int, int*, int*, int),
                            cublasStatus_t (*getrs)(cublasHandle_t, cublasOperation_t, int, int, const T* const[],
                                                    int, const int*, T* const[], int, int*, int),
                            cublasStatus_t (*getri)(cublasHandle_t, int, const T* const[], int, const int*,
                                                    T* const[], int, int*, int),
                            cublasStatus_t (*matinv)(cublasHandle_t, int, const T* const[], int, T* const[], int,
                                                     int*, int)) {
    const int n = 5, lda = 6, batch = 3, nrhs = 2;
    auto a = random_values<T>((size_t)lda * n * batch);
    for (int m = 0; m < batch; m++)
        for (int i = 0; i < n; i++) a[(size_t)m * lda * n + i + (size_t)i * lda] += 3.0;
    for (int i = 0; i < lda; i++) a[(size_t)(batch - 1) * lda * n + i + 3 * lda] = 0.0;  // column 4 zero
    auto b = random_values<T>((size_t)lda * nrhs * batch);
    T *da = device_copy<T>(a), *db = device_copy<T>(b), *dc = device_copy<T>(a);
    std::vector<T*> pa(batch), pb(batch), pc(batch);
    for (int m = 0; m < batch; m++) {
        pa[m] = da + (size_t)m * lda * n;
        pb[m] = db + (size_t)m * lda * nrhs;
        pc[m] = dc + (size_t)m * lda * n;
    }
    T **dpa, **dpb, **dpc;
    int *dpiv, *dinfo;
    CHECK(cudaMalloc(&dpa, batch * sizeof(T*)));
    CHECK(cudaMalloc(&dpb, batch * sizeof(T*)));
    CHECK(cudaMalloc(&dpc, batch * sizeof(T*)));
    CHECK(cudaMalloc(&dpiv, n * batch * sizeof(int)));
    CHECK(cudaMalloc(&dinfo, batch * sizeof(int)));
    CHECK(cudaMemcpy(dpa, pa.data(), batch * sizeof(T*), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dpb, pb.data(), batch * sizeof(T*), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dpc, pc.data(), batch * sizeof(T*), cudaMemcpyHostToDevice));
    CHECK_BLAS(getrf(h, n, dpa, lda, dpiv, dinfo, batch));
    int info[batch];
    CHECK(cudaMemcpy(info, dinfo, sizeof info, cudaMemcpyDeviceToHost));
    EXPECT(info[0] == 0 && info[1] == 0 && info[2] == 4, "%s getrf info %d %d %d, want 0 0 4", name, info[0],
           info[1], info[2]);
    int host_info = -7;
    CHECK_BLAS(getrs(h, CUBLAS_OP_N, n, nrhs, dpa, lda, dpiv, dpb, lda, &host_info, batch - 1));
    EXPECT(host_info == 0, "%s getrs info %d", name, host_info);
    CHECK_BLAS(getri(h, n, dpa, lda, dpiv, dpc, lda, dinfo, batch - 1));
    CHECK(cudaMemcpy(info, dinfo, 2 * sizeof(int), cudaMemcpyDeviceToHost));
    EXPECT(info[0] == 0 && info[1] == 0, "%s getri info %d %d", name, info[0], info[1]);
    auto x = host_copy(db, b.size()), inv = host_copy(dc, a.size());
    for (int m = 0; m < batch - 1; m++) {
        const Z* am = &a[(size_t)m * lda * n];
        for (int c = 0; c < nrhs; c++)
            for (int i = 0; i < n; i++) {
                Z s = 0;
                for (int k = 0; k < n; k++) s += am[i + k * lda] * x[(size_t)m * lda * nrhs + k + c * lda];
                Z want = b[(size_t)m * lda * nrhs + i + c * lda];
                EXPECT(std::abs(s - want) <= tol * 10, "%s getrs: row %d of A x is off by %g", name, i,
                       std::abs(s - want));
            }
        for (int j = 0; j < n; j++)
            for (int i = 0; i < n; i++) {
                Z s = 0;
                for (int k = 0; k < n; k++) s += am[i + k * lda] * inv[(size_t)m * lda * n + k + j * lda];
                EXPECT(std::abs(s - Z(i == j ? 1.0 : 0.0)) <= tol * 10, "%s getri: (A C)(%d,%d) = (%g,%g)", name,
                       i, j, s.real(), s.imag());
            }
    }
    // matinvBatched on the original matrices (left as they are): the same
    // inverses, the singular one's zero pivot; n > 32 is refused.
    T *dorig = device_copy<T>(a), *dinv = device_copy<T>(a);
    std::vector<T*> po(batch), pi(batch);
    for (int m = 0; m < batch; m++) {
        po[m] = dorig + (size_t)m * lda * n;
        pi[m] = dinv + (size_t)m * lda * n;
    }
    CHECK(cudaMemcpy(dpa, po.data(), batch * sizeof(T*), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dpc, pi.data(), batch * sizeof(T*), cudaMemcpyHostToDevice));
    CHECK_BLAS(matinv(h, n, dpa, lda, dpc, lda, dinfo, batch));
    CHECK(cudaMemcpy(info, dinfo, sizeof info, cudaMemcpyDeviceToHost));
    EXPECT(info[0] == 0 && info[1] == 0 && info[2] == 4, "%s matinv info %d %d %d, want 0 0 4", name, info[0],
           info[1], info[2]);
    auto minv = host_copy(dinv, a.size()), kept = host_copy(dorig, a.size());
    for (size_t i = 0; i < a.size(); i++)
        EXPECT(std::abs(kept[i] - a[i]) <= tol, "%s matinv changed A at %zu", name, i);
    for (int m = 0; m < batch - 1; m++) {
        const Z* am = &a[(size_t)m * lda * n];
        for (int j = 0; j < n; j++)
            for (int i = 0; i < n; i++) {
                Z s = 0;
                for (int k = 0; k < n; k++) s += am[i + k * lda] * minv[(size_t)m * lda * n + k + j * lda];
                EXPECT(std::abs(s - Z(i == j ? 1.0 : 0.0)) <= tol * 10, "%s matinv: (A C)(%d,%d) = (%g,%g)",
                       name, i, j, s.real(), s.imag());
            }
    }
    EXPECT_STATUS(matinv(h, 33, dpa, 33, dpc, 33, dinfo, 1), CUBLAS_STATUS_INVALID_VALUE);
    CHECK(cudaFree(dorig));
    CHECK(cudaFree(dinv));

    // cuBLAS's statuses: lda < n, and getrs's host info names a bad argument.
    EXPECT_STATUS(getrf(h, n, dpa, n - 1, dpiv, dinfo, batch), CUBLAS_STATUS_INVALID_VALUE);
    EXPECT_STATUS(getrs(h, CUBLAS_OP_N, -1, nrhs, dpa, lda, dpiv, dpb, lda, &host_info, 1),
                  CUBLAS_STATUS_INVALID_VALUE);
    EXPECT(host_info < 0, "%s getrs info for n = -1: %d, want a negative position", name, host_info);
    for (void* p : {(void*)da, (void*)db, (void*)dc, (void*)dpa, (void*)dpb, (void*)dpc, (void*)dpiv, (void*)dinfo})
        CHECK(cudaFree(p));
    printf("%s batched LU ok\n", name);
}

// A device array of `count` pointers, `step` elements apart from `base`.
template <typename T> static T** pointer_array(T* base, size_t step, int count) {
    std::vector<T*> host(count);
    for (int i = 0; i < count; i++) host[i] = base + (size_t)i * step;
    T** d = nullptr;
    CHECK(cudaMalloc(&d, count * sizeof(T*) + 8));
    CHECK(cudaMemcpy(d, host.data(), count * sizeof(T*), cudaMemcpyHostToDevice));
    return d;
}

// Q R of geqrf's packed output (m x n, ld m): the reflectors applied to R
// on the host, H(k) first.
static std::vector<Z> qr_product(const Z* qr, const Z* tau, int m, int n) {
    int k = m < n ? m : n;
    std::vector<Z> r((size_t)m * n);
    for (int j = 0; j < n; j++)
        for (int i = 0; i <= j && i < m; i++) r[i + (size_t)j * m] = qr[i + (size_t)j * m];
    for (int t = k - 1; t >= 0; t--)
        for (int j = 0; j < n; j++) {
            Z w = r[t + (size_t)j * m];
            for (int i = t + 1; i < m; i++) w += std::conj(qr[i + (size_t)t * m]) * r[i + (size_t)j * m];
            w *= tau[t];
            r[t + (size_t)j * m] -= w;
            for (int i = t + 1; i < m; i++) r[i + (size_t)j * m] -= qr[i + (size_t)t * m] * w;
        }
    return r;
}

// trsmBatched, gemvBatched, gemvStridedBatched, geqrfBatched and
// gelsBatched in one type, for batches of 1 and 3, against host references,
// and their statuses for bad arguments.
template <typename T, typename Trsm, typename Gemv, typename GemvStrided, typename Geqrf, typename Gels>
static void test_batched_more(cublasHandle_t h, const char* name, double tol, Trsm trsm, Gemv gemv,
                              GemvStrided gemv_strided, Geqrf geqrf, Gels gels) {
    const cublasOperation_t ops[3] = {CUBLAS_OP_N, CUBLAS_OP_T, CUBLAS_OP_C};
    for (int batch : {1, 3}) {
        // trsmBatched: op(A_i) X = alpha B_i (left) or X op(A_i) = alpha B_i.
        const int m = 4, n = 3;
        for (int side = 0; side < 2; side++)
            for (int uplo = 0; uplo < 2; uplo++)
                for (int t = 0; t < 3; t++) {
                    cublasDiagType_t diag = (uplo + t) % 2 ? CUBLAS_DIAG_UNIT : CUBLAS_DIAG_NON_UNIT;
                    int na = side == 0 ? m : n, lda = na + 1, ldb = m + 2;
                    auto a = random_values<T>((size_t)lda * na * batch);
                    for (int b = 0; b < batch; b++)
                        for (int i = 0; i < na; i++) a[(size_t)b * lda * na + i + (size_t)i * lda] += 4.0;
                    auto bv = random_values<T>((size_t)ldb * n * batch);
                    T *da = device_copy<T>(a), *db = device_copy<T>(bv);
                    T **pa = pointer_array(da, (size_t)lda * na, batch), **pb = pointer_array(db, (size_t)ldb * n, batch);
                    auto b_stored = host_copy(db, bv.size());
                    Z alpha_z = is_complex<T>() ? Z(1.5, -0.5) : Z(1.5, 0);
                    T alpha;
                    to_host(alpha_z, &alpha);
                    CHECK_BLAS(trsm(h, side ? CUBLAS_SIDE_RIGHT : CUBLAS_SIDE_LEFT,
                                    uplo ? CUBLAS_FILL_MODE_UPPER : CUBLAS_FILL_MODE_LOWER, ops[t], diag, m, n,
                                    &alpha, (const T* const*)pa, lda, pb, ldb, batch));
                    auto x = host_copy(db, bv.size());
                    for (int b = 0; b < batch; b++) {
                        // op(A) densely, from the stored triangle.
                        std::vector<Z> tri((size_t)na * na);
                        for (int j = 0; j < na; j++)
                            for (int i = 0; i < na; i++) {
                                bool stored = uplo ? i <= j : i >= j;
                                Z v = i == j && diag == CUBLAS_DIAG_UNIT ? Z(1.0)
                                      : stored ? a[(size_t)b * lda * na + i + (size_t)j * lda]
                                               : Z(0.0);
                                tri[i + (size_t)j * na] = v;
                            }
                        const Z* xb = &x[(size_t)b * ldb * n];
                        for (int j = 0; j < n; j++)
                            for (int i = 0; i < m; i++) {
                                Z s = 0;
                                if (side == 0)
                                    for (int k = 0; k < m; k++) s += op_elem(tri, na, ops[t], i, k) * xb[k + (size_t)j * ldb];
                                else
                                    for (int k = 0; k < n; k++) s += xb[i + (size_t)k * ldb] * op_elem(tri, na, ops[t], k, j);
                                Z want = alpha_z * bv[(size_t)b * ldb * n + i + (size_t)j * ldb];
                                EXPECT(std::abs(s - want) <= tol * 10 * (1 + std::abs(want)),
                                       "%s trsmBatched side %d uplo %d op %d batch %d: (%d,%d) off by %g", name, side,
                                       uplo, t, batch, i, j, std::abs(s - want));
                            }
                        // The rows below m (ldb > m) are untouched.
                        for (int j = 0; j < n; j++)
                            for (int i = m; i < ldb; i++)
                                EXPECT(x[(size_t)b * ldb * n + i + (size_t)j * ldb] ==
                                           b_stored[(size_t)b * ldb * n + i + (size_t)j * ldb],
                                       "%s trsmBatched wrote outside B", name);
                    }
                    if (batch == 3 && side == 0 && uplo == 0 && t == 0) {
                        EXPECT_STATUS(trsm(h, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N, diag, m, n, &alpha,
                                           (const T* const*)pa, m - 1, pb, ldb, batch),
                                      CUBLAS_STATUS_INVALID_VALUE);
                        EXPECT_STATUS(trsm(h, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N, diag, m, n, &alpha,
                                           (const T* const*)pa, lda, pb, ldb, -1),
                                      CUBLAS_STATUS_INVALID_VALUE);
                    }
                    for (void* p : {(void*)da, (void*)db, (void*)pa, (void*)pb}) CHECK(cudaFree(p));
                }

        // gemvBatched and gemvStridedBatched: y_i = alpha op(A_i) x_i + beta y_i.
        for (int t = 0; t < 3; t++) {
            const int gm = 5, gn = 3, lda = gm + 1, incx = 2, incy = 1;
            int lx = t == 0 ? gn : gm, ly = t == 0 ? gm : gn;
            size_t sa = (size_t)lda * gn + 3, sx = (size_t)incx * lx + 1, sy = (size_t)ly + 2;
            auto a = random_values<T>(sa * batch), x = random_values<T>(sx * batch), y = random_values<T>(sy * batch);
            Z al_z = is_complex<T>() ? Z(0.5, 1.0) : Z(0.5, 0), be_z = is_complex<T>() ? Z(-1.0, 0.25) : Z(-1.0, 0);
            T al, be;
            to_host(al_z, &al);
            to_host(be_z, &be);
            std::vector<Z> want = y;
            for (int b = 0; b < batch; b++) {
                std::vector<Z> ab(a.begin() + b * sa, a.begin() + b * sa + (size_t)lda * gn), xs(lx);
                for (int i = 0; i < lx; i++) xs[i] = x[b * sx + (size_t)i * incx];
                for (int i = 0; i < ly; i++) {
                    Z s = 0;
                    for (int j = 0; j < lx; j++) s += op_elem(ab, lda, ops[t], i, j) * xs[j];
                    want[b * sy + i] = al_z * s + be_z * y[b * sy + i];
                }
            }
            for (int strided = 0; strided < 2; strided++) {
                T *da = device_copy<T>(a), *dx = device_copy<T>(x), *dy = device_copy<T>(y);
                if (strided) {
                    CHECK_BLAS(gemv_strided(h, ops[t], gm, gn, &al, da, lda, (long long)sa, dx, incx, (long long)sx,
                                            &be, dy, incy, (long long)sy, batch));
                } else {
                    T **pa = pointer_array(da, sa, batch), **px = pointer_array(dx, sx, batch),
                      **py = pointer_array(dy, sy, batch);
                    CHECK_BLAS(gemv(h, ops[t], gm, gn, &al, (const T* const*)pa, lda, (const T* const*)px, incx, &be,
                                    py, incy, batch));
                    if (batch == 3 && t == 0) {
                        EXPECT_STATUS(gemv(h, ops[t], gm, gn, &al, (const T* const*)pa, lda, (const T* const*)px, 0,
                                           &be, py, incy, batch),
                                      CUBLAS_STATUS_INVALID_VALUE);
                        EXPECT_STATUS(gemv(h, ops[t], gm, gn, &al, (const T* const*)pa, gm - 1, (const T* const*)px,
                                           incx, &be, py, incy, batch),
                                      CUBLAS_STATUS_INVALID_VALUE);
                    }
                    for (void* p : {(void*)pa, (void*)px, (void*)py}) CHECK(cudaFree(p));
                }
                expect_close(host_copy(dy, y.size()), want, tol * 10,
                             strided ? "gemvStridedBatched" : "gemvBatched");
                for (void* p : {(void*)da, (void*)dx, (void*)dy}) CHECK(cudaFree(p));
            }
        }

        // geqrfBatched: Q_i R_i = A_i, tall and wide.
        for (int shape = 0; shape < 2; shape++) {
            const int qm = shape ? 3 : 6, qn = shape ? 5 : 4, k = qm < qn ? qm : qn;
            auto a = random_values<T>((size_t)qm * qn * batch);
            T *da = device_copy<T>(a), *dt = device_copy<T>(std::vector<Z>((size_t)k * batch));
            T **pa = pointer_array(da, (size_t)qm * qn, batch), **pt = pointer_array(dt, (size_t)k, batch);
            int info = -99;
            CHECK_BLAS(geqrf(h, qm, qn, pa, qm, pt, &info, batch));
            EXPECT(info == 0, "%s geqrfBatched info %d", name, info);
            auto qr = host_copy(da, a.size()), tau = host_copy(dt, (size_t)k * batch);
            for (int b = 0; b < batch; b++) {
                auto got = qr_product(&qr[(size_t)b * qm * qn], &tau[(size_t)b * k], qm, qn);
                expect_close(got, std::vector<Z>(a.begin() + (size_t)b * qm * qn, a.begin() + (size_t)(b + 1) * qm * qn),
                             tol * 20, "geqrfBatched Q R");
            }
            if (batch == 3 && shape == 0) {
                EXPECT_STATUS(geqrf(h, qm, qn, pa, qm - 1, pt, &info, batch), CUBLAS_STATUS_INVALID_VALUE);
                EXPECT(info < 0, "%s geqrfBatched info for lda < m: %d, want a negative position", name, info);
                EXPECT_STATUS(geqrf(h, -1, qn, pa, qm, pt, &info, batch), CUBLAS_STATUS_INVALID_VALUE);
                EXPECT(info < 0, "%s geqrfBatched info for m < 0: %d", name, info);
            }
            for (void* p : {(void*)da, (void*)dt, (void*)pa, (void*)pt}) CHECK(cudaFree(p));
        }

        // gelsBatched: min |A_i X - C_i| for 6 x 3 A_i; the last of three has
        // a zero column (devInfoArray names it).
        {
            const int lm = 6, ln = 3, nrhs = 2, ldc = lm + 1;
            auto a = random_values<T>((size_t)lm * ln * batch);
            if (batch == 3)
                for (int i = 0; i < lm; i++) a[(size_t)2 * lm * ln + i + (size_t)1 * lm] = 0.0;
            auto c = random_values<T>((size_t)ldc * nrhs * batch);
            T *da = device_copy<T>(a), *dc = device_copy<T>(c);
            T **pa = pointer_array(da, (size_t)lm * ln, batch), **pc = pointer_array(dc, (size_t)ldc * nrhs, batch);
            int* dinfo;
            CHECK(cudaMalloc(&dinfo, batch * sizeof(int)));
            int info = -99;
            CHECK_BLAS(gels(h, CUBLAS_OP_N, lm, ln, nrhs, pa, lm, pc, ldc, &info, dinfo, batch));
            EXPECT(info == 0, "%s gelsBatched info %d", name, info);
            int dev_info[3] = {-1, -1, -1};
            CHECK(cudaMemcpy(dev_info, dinfo, batch * sizeof(int), cudaMemcpyDeviceToHost));
            auto x = host_copy(dc, c.size());
            int full = batch == 3 ? 2 : batch;
            for (int b = 0; b < full; b++) {
                EXPECT(dev_info[b] == 0, "%s gelsBatched devInfo[%d] = %d", name, b, dev_info[b]);
                const Z* ab = &a[(size_t)b * lm * ln];
                for (int col = 0; col < nrhs; col++) {
                    size_t at = (size_t)b * ldc * nrhs + (size_t)col * ldc;
                    std::vector<Z> r(lm);
                    for (int i = 0; i < lm; i++) {
                        for (int k = 0; k < ln; k++) r[i] += ab[i + (size_t)k * lm] * x[at + k];
                        r[i] -= c[at + i];
                    }
                    // The residual is orthogonal to A's columns.
                    for (int k = 0; k < ln; k++) {
                        Z s = 0;
                        for (int i = 0; i < lm; i++) s += std::conj(ab[i + (size_t)k * lm]) * r[i];
                        EXPECT(std::abs(s) <= tol * 100, "%s gelsBatched: A^H r (%d) = %g", name, k, std::abs(s));
                    }
                }
            }
            if (batch == 3) {
                EXPECT(dev_info[2] == 2, "%s gelsBatched devInfo of the rank-deficient one: %d, want 2", name,
                       dev_info[2]);
                EXPECT_STATUS(gels(h, CUBLAS_OP_N, lm, ln, nrhs, pa, lm, pc, lm - 1, &info, dinfo, batch),
                              CUBLAS_STATUS_INVALID_VALUE);
                EXPECT(info < 0, "%s gelsBatched info for ldc < m: %d", name, info);
                EXPECT_STATUS(gels(h, CUBLAS_OP_N, 2, ln, nrhs, pa, lm, pc, ldc, &info, dinfo, batch),
                              CUBLAS_STATUS_NOT_SUPPORTED);
                EXPECT_STATUS(gels(h, CUBLAS_OP_T, lm, ln, nrhs, pa, lm, pc, ldc, &info, dinfo, batch),
                              CUBLAS_STATUS_NOT_SUPPORTED);
            }
            for (void* p : {(void*)da, (void*)dc, (void*)pa, (void*)pc, (void*)dinfo}) CHECK(cudaFree(p));
        }
    }
    printf("%s trsm, gemv, geqrf, gels batched ok\n", name);
}

// gemmGroupedBatched: two groups with their own operations, sizes,
// leading dimensions and scalars (2 and 1 products), against host GEMMs;
// `grouped` calls the typed or the Ex form. A bad group refuses the whole
// call before anything is computed.
template <typename T, typename Grouped>
static void test_gemm_grouped(cublasHandle_t h, const char* name, double tol, Grouped grouped) {
    const int groups = 2, sizes[groups] = {2, 1};
    cublasOperation_t ta[groups] = {CUBLAS_OP_N, CUBLAS_OP_T}, tb[groups] = {CUBLAS_OP_T, CUBLAS_OP_N};
    int m[groups] = {3, 2}, n[groups] = {2, 4}, k[groups] = {4, 3};
    int lda[groups], ldb[groups], ldc[groups] = {4, 3};
    Z al_z[groups] = {Z(1.5, is_complex<T>() ? 0.5 : 0), Z(-1, 0)}, be_z[groups] = {Z(0.5, 0), Z(0, 0)};
    T al[groups], be[groups];
    std::vector<Z> as, bs, cs, want;
    std::vector<size_t> ao, bo, co;
    for (int g = 0; g < groups; g++) {
        to_host(al_z[g], &al[g]);
        to_host(be_z[g], &be[g]);
        int ar = ta[g] == CUBLAS_OP_N ? m[g] : k[g], ac = ta[g] == CUBLAS_OP_N ? k[g] : m[g];
        int br = tb[g] == CUBLAS_OP_N ? k[g] : n[g], bc = tb[g] == CUBLAS_OP_N ? n[g] : k[g];
        lda[g] = ar + 1;
        ldb[g] = br;
        for (int p = 0; p < sizes[g]; p++) {
            auto a = random_values<T>((size_t)lda[g] * ac), b = random_values<T>((size_t)ldb[g] * bc),
                 c = random_values<T>((size_t)ldc[g] * n[g]);
            auto r = ref_gemm(ta[g], tb[g], m[g], n[g], k[g], al_z[g], a, lda[g], b, ldb[g], be_z[g], c, ldc[g]);
            ao.push_back(as.size());
            bo.push_back(bs.size());
            co.push_back(cs.size());
            as.insert(as.end(), a.begin(), a.end());
            bs.insert(bs.end(), b.begin(), b.end());
            cs.insert(cs.end(), c.begin(), c.end());
            want.insert(want.end(), r.begin(), r.end());
        }
    }
    T *da = device_copy<T>(as), *db = device_copy<T>(bs), *dc = device_copy<T>(cs);
    int total = sizes[0] + sizes[1];
    std::vector<T*> pa(total), pb(total), pc(total);
    for (int p = 0; p < total; p++) {
        pa[p] = da + ao[p];
        pb[p] = db + bo[p];
        pc[p] = dc + co[p];
    }
    T **dpa, **dpb, **dpc;
    CHECK(cudaMalloc(&dpa, total * sizeof(T*)));
    CHECK(cudaMalloc(&dpb, total * sizeof(T*)));
    CHECK(cudaMalloc(&dpc, total * sizeof(T*)));
    CHECK(cudaMemcpy(dpa, pa.data(), total * sizeof(T*), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dpb, pb.data(), total * sizeof(T*), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dpc, pc.data(), total * sizeof(T*), cudaMemcpyHostToDevice));
    auto stored = host_copy(dc, cs.size());
    // A bad second group (lda < rows, then a negative group size): nothing
    // is computed.
    int bad_lda[groups] = {lda[0], 1}, bad_sizes[groups] = {2, -1};
    EXPECT_STATUS(grouped(h, ta, tb, m, n, k, al, (const T* const*)dpa, bad_lda, (const T* const*)dpb, ldb, be, dpc,
                          ldc, groups, sizes),
                  CUBLAS_STATUS_INVALID_VALUE);
    EXPECT_STATUS(grouped(h, ta, tb, m, n, k, al, (const T* const*)dpa, lda, (const T* const*)dpb, ldb, be, dpc, ldc,
                          groups, bad_sizes),
                  CUBLAS_STATUS_INVALID_VALUE);
    expect_close(host_copy(dc, cs.size()), stored, 0.0, "gemmGroupedBatched left C alone");
    CHECK_BLAS(grouped(h, ta, tb, m, n, k, al, (const T* const*)dpa, lda, (const T* const*)dpb, ldb, be, dpc, ldc,
                       groups, sizes));
    expect_close(host_copy(dc, cs.size()), want, tol * 10, "gemmGroupedBatched");
    CHECK_BLAS(grouped(h, ta, tb, m, n, k, al, (const T* const*)dpa, lda, (const T* const*)dpb, ldb, be, dpc, ldc, 0,
                       sizes));
    for (void* p : {(void*)da, (void*)db, (void*)dc, (void*)dpa, (void*)dpb, (void*)dpc}) CHECK(cudaFree(p));
    printf("%s gemmGroupedBatched ok\n", name);
}

// cublasGemmGroupedBatchedEx in one element type, with the typed form's
// arguments.
template <typename T, cudaDataType_t Type, cublasComputeType_t Compute>
static cublasStatus_t grouped_ex(cublasHandle_t h, const cublasOperation_t* ta, const cublasOperation_t* tb,
                                 const int* m, const int* n, const int* k, const T* al, const T* const* a,
                                 const int* lda, const T* const* b, const int* ldb, const T* be, T* const* c,
                                 const int* ldc, int groups, const int* sizes) {
    return cublasGemmGroupedBatchedEx(h, ta, tb, m, n, k, al, (const void* const*)a, Type, lda,
                                      (const void* const*)b, Type, ldb, be, (void* const*)c, Type, ldc, groups, sizes,
                                      Compute);
}

static void test_errors() {
    cublasHandle_t h;
    CHECK_BLAS(cublasCreate(&h));
    float *d;
    CHECK(cudaMalloc(&d, 64 * sizeof(float)));
    float one = 1.0f, zero = 0.0f, values[64];
    for (int i = 0; i < 64; i++) values[i] = (float)i;
    CHECK(cudaMemcpy(d, values, sizeof(values), cudaMemcpyHostToDevice));
    // Good call as a baseline.
    CHECK_BLAS(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 8, 8, 8, &one, d, 8, d, 8, &zero, d, 8));
    CHECK(cudaMemcpy(d, values, sizeof(values), cudaMemcpyHostToDevice));
    EXPECT_STATUS(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, -1, 8, 8, &one, d, 8, d, 8, &zero, d, 8),
                  CUBLAS_STATUS_INVALID_VALUE);
    EXPECT_STATUS(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 8, 8, 8, &one, d, 4, d, 8, &zero, d, 8),
                  CUBLAS_STATUS_INVALID_VALUE);
    EXPECT_STATUS(cublasSgemm(h, (cublasOperation_t)7, CUBLAS_OP_N, 8, 8, 8, &one, d, 8, d, 8, &zero, d, 8),
                  CUBLAS_STATUS_INVALID_VALUE);
    // axpy takes an increment of 0: x's one element for every index.
    EXPECT_STATUS(cublasSaxpy(h, 8, &one, d, 0, d + 8, 1), CUBLAS_STATUS_SUCCESS);
    float got[64];
    CHECK(cudaMemcpy(got, d, sizeof(got), cudaMemcpyDeviceToHost));
    for (int i = 0; i < 8; i++) EXPECT(got[8 + i] == values[8 + i] + values[0], "Saxpy incx 0 element %d", i);
    // A reduction to a NULL host result: cuBLAS's copy of it fails.
    EXPECT_STATUS(cublasSdot(h, 8, d, 1, d, 1, nullptr), CUBLAS_STATUS_MAPPING_ERROR);
    EXPECT_STATUS(cublasSetPointerMode(h, (cublasPointerMode_t)5), CUBLAS_STATUS_INVALID_VALUE);
    float result;
    EXPECT_STATUS(cublasSdot(nullptr, 8, d, 1, d, 1, &result), CUBLAS_STATUS_NOT_INITIALIZED);
    CHECK_BLAS(cublasDestroy(h));
    // The runtime is unharmed by all of that.
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaFree(d));
    printf("errors ok\n");
}

// rcud's refusals of what a local GPU does not check: operands beyond their
// allocation, host memory where device memory belongs (a remote GPU cannot
// reach the application's memory), and a destroyed handle. Natively these
// are undefined behaviour (on an H200 with HMM most of them "succeed", and
// the destroyed handle aborts the process), so this runs under rcud only:
// `math_blas hostile`.
static void test_hostile() {
    cublasHandle_t h;
    CHECK_BLAS(cublasCreate(&h));
    float *d;
    CHECK(cudaMalloc(&d, 64 * sizeof(float)));
    float one = 1.0f, zero = 0.0f, host_buffer[64] = {0};
    EXPECT_STATUS(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 8, 9, 8, &one, d, 8, d, 8, &zero, d, 8),
                  CUBLAS_STATUS_INVALID_VALUE);
    EXPECT_STATUS(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 8, 8, 8, &one, host_buffer, 8, d, 8, &zero, d, 8),
                  CUBLAS_STATUS_INVALID_VALUE);
    EXPECT_STATUS(cublasSaxpy(h, 64, &one, d, 2, d, 1), CUBLAS_STATUS_INVALID_VALUE);
    // Device pointer mode with a host scalar pointer.
    CHECK_BLAS(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_DEVICE));
    EXPECT_STATUS(cublasSscal(h, 8, &one, d, 1), CUBLAS_STATUS_INVALID_VALUE);
    CHECK_BLAS(cublasDestroy(h));
    EXPECT_STATUS(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 8, 8, 8, &one, d, 8, d, 8, &zero, d, 8),
                  CUBLAS_STATUS_NOT_INITIALIZED);
    EXPECT_STATUS(cublasDestroy(h), CUBLAS_STATUS_NOT_INITIALIZED);
    EXPECT_STATUS(cublasSetStream(h, 0), CUBLAS_STATUS_NOT_INITIALIZED);
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaFree(d));
    printf("hostile calls refused\n");
}

// ---- banded, packed, rank updates, syr2k/syrkx, rotations -----------------

// Dense m x n (ld m) from general band storage (kl sub-, ku superdiagonals).
static std::vector<Z> dense_gb(const std::vector<Z>& ab, int lda, int m, int n, int kl, int ku) {
    std::vector<Z> d((size_t)m * n);
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++)
            if (i + ku >= j && i <= j + kl) d[i + (size_t)j * m] = ab[ku + i - j + (size_t)j * lda];
    return d;
}

// Index of (i, j) of the stored triangle: band (lda > 0, width k) or packed
// (lda == 0); -1 outside.
static long tri_index(int n, int k, int lda, bool upper, int i, int j) {
    if (upper ? i > j : i < j) return -1;
    if (lda == 0) return upper ? i + (long)j * (j + 1) / 2 : i + (long)(2 * n - j - 1) * j / 2;
    if ((upper ? j - i : i - j) > k) return -1;
    return upper ? k + i - j + (long)j * lda : i - j + (long)j * lda;
}

// Dense n x n symmetric/Hermitian or triangular matrix from band/packed storage.
static std::vector<Z> dense_tri(const std::vector<Z>& s, int n, int k, int lda, bool upper, int kind,
                                bool unit) {
    // kind 0: symmetric, 1: Hermitian, 2: triangular.
    std::vector<Z> d((size_t)n * n);
    for (int j = 0; j < n; j++)
        for (int i = 0; i < n; i++) {
            long at = tri_index(n, k, lda, upper, i, j);
            long mirror = tri_index(n, k, lda, upper, j, i);
            Z v = 0;
            if (kind == 2) {
                v = i == j && unit ? Z(1, 0) : at >= 0 ? s[at] : Z(0);
            } else if (i == j && kind == 1) {
                v = Z(s[at].real(), 0);
            } else if (at >= 0) {
                v = s[at];
            } else if (mirror >= 0) {
                v = kind == 1 ? std::conj(s[mirror]) : s[mirror];
            }
            d[i + (size_t)j * n] = v;
        }
    return d;
}

// op(A) x for dense A (ld m).
static std::vector<Z> ref_matvec(const std::vector<Z>& a, int m, int n, cublasOperation_t op, const std::vector<Z>& x) {
    int out = op == CUBLAS_OP_N ? m : n, inner = op == CUBLAS_OP_N ? n : m;
    std::vector<Z> y(out);
    for (int i = 0; i < out; i++)
        for (int j = 0; j < inner; j++) y[i] += op_elem(a, m, op, i, j) * x[j];
    return y;
}

// Every other element (increment 2) of v, as BLAS reads it.
static std::vector<Z> stride2(const std::vector<Z>& v, int n) {
    std::vector<Z> out(n);
    for (int i = 0; i < n; i++) out[i] = v[2 * i];
    return out;
}

static void test_banded_packed(cublasHandle_t h) {
    const int m = 9, n = 7, kl = 2, ku = 1, lda = kl + ku + 2;
    // gbmv: S transposed with increment 2 on x, Z conjugate-transposed.
    {
        auto ab = random_values<float>((size_t)lda * n);
        auto x = random_values<float>(2 * m), y = random_values<float>(n);
        float *dab = device_copy<float>(ab), *dx = device_copy<float>(x), *dy = device_copy<float>(y);
        float al = 1.5f, be = -0.5f;
        CHECK_BLAS(cublasSgbmv(h, CUBLAS_OP_T, m, n, kl, ku, &al, dab, lda, dx, 2, &be, dy, 1));
        auto p = ref_matvec(dense_gb(ab, lda, m, n, kl, ku), m, n, CUBLAS_OP_T, stride2(x, m));
        for (int i = 0; i < n; i++) p[i] = 1.5 * p[i] - 0.5 * y[i];
        expect_close(host_copy(dy, n), p, 1e-5, "Sgbmv T");
        // lda below kl + ku + 1.
        EXPECT_STATUS(cublasSgbmv(h, CUBLAS_OP_N, m, n, kl, ku, &al, dab, kl + ku, dx, 1, &be, dy, 1),
                      CUBLAS_STATUS_INVALID_VALUE);
        auto zab = random_values<cuDoubleComplex>((size_t)lda * n);
        auto zx = random_values<cuDoubleComplex>(m), zy = random_values<cuDoubleComplex>(n);
        cuDoubleComplex *dzab = device_copy<cuDoubleComplex>(zab), *dzx = device_copy<cuDoubleComplex>(zx),
                        *dzy = device_copy<cuDoubleComplex>(zy);
        cuDoubleComplex zal = make_cuDoubleComplex(0.5, 1), zbe = make_cuDoubleComplex(1, -1);
        CHECK_BLAS(cublasZgbmv(h, CUBLAS_OP_C, m, n, kl, ku, &zal, dzab, lda, dzx, 1, &zbe, dzy, 1));
        auto zp = ref_matvec(dense_gb(zab, lda, m, n, kl, ku), m, n, CUBLAS_OP_C, zx);
        for (int i = 0; i < n; i++) zp[i] = Z(0.5, 1) * zp[i] + Z(1, -1) * zy[i];
        expect_close(host_copy(dzy, n), zp, 1e-12, "Zgbmv C");
        for (void* q : {(void*)dab, (void*)dx, (void*)dy, (void*)dzab, (void*)dzx, (void*)dzy}) CHECK(cudaFree(q));
    }
    // sbmv/hbmv (band k) and spmv/hpmv (packed), S lower and Z upper.
    const int k = 2, ldb = k + 1, np = n * (n + 1) / 2;
    {
        auto sb = random_values<float>((size_t)ldb * n), sp = random_values<float>(np);
        auto x = random_values<float>(n), y = random_values<float>(n);
        float *dsb = device_copy<float>(sb), *dsp = device_copy<float>(sp), *dx = device_copy<float>(x),
              *dy = device_copy<float>(y), *dy2 = device_copy<float>(y);
        float al = 2.0f, be = 0.5f;
        CHECK_BLAS(cublasSsbmv(h, CUBLAS_FILL_MODE_LOWER, n, k, &al, dsb, ldb, dx, 1, &be, dy, 1));
        CHECK_BLAS(cublasSspmv(h, CUBLAS_FILL_MODE_LOWER, n, &al, dsp, dx, 1, &be, dy2, 1));
        auto p = ref_matvec(dense_tri(sb, n, k, ldb, false, 0, false), n, n, CUBLAS_OP_N, x);
        auto q = ref_matvec(dense_tri(sp, n, 0, 0, false, 0, false), n, n, CUBLAS_OP_N, x);
        for (int i = 0; i < n; i++) {
            p[i] = 2.0 * p[i] + 0.5 * y[i];
            q[i] = 2.0 * q[i] + 0.5 * y[i];
        }
        expect_close(host_copy(dy, n), p, 1e-5, "Ssbmv");
        expect_close(host_copy(dy2, n), q, 1e-5, "Sspmv");
        // A band's lda below k + 1; incx 0 for spmv.
        EXPECT_STATUS(cublasSsbmv(h, CUBLAS_FILL_MODE_LOWER, n, k, &al, dsb, k, dx, 1, &be, dy, 1),
                      CUBLAS_STATUS_INVALID_VALUE);
        EXPECT_STATUS(cublasSspmv(h, CUBLAS_FILL_MODE_LOWER, n, &al, dsp, dx, 0, &be, dy2, 1),
                      CUBLAS_STATUS_INVALID_VALUE);
        auto hb = random_values<cuDoubleComplex>((size_t)ldb * n), hp = random_values<cuDoubleComplex>(np);
        auto zx = random_values<cuDoubleComplex>(n), zy = random_values<cuDoubleComplex>(n);
        cuDoubleComplex *dhb = device_copy<cuDoubleComplex>(hb), *dhp = device_copy<cuDoubleComplex>(hp),
                        *dzx = device_copy<cuDoubleComplex>(zx), *dzy = device_copy<cuDoubleComplex>(zy),
                        *dzy2 = device_copy<cuDoubleComplex>(zy);
        cuDoubleComplex zal = make_cuDoubleComplex(1, 0.5), zbe = make_cuDoubleComplex(0, 0);
        CHECK_BLAS(cublasZhbmv(h, CUBLAS_FILL_MODE_UPPER, n, k, &zal, dhb, ldb, dzx, 1, &zbe, dzy, 1));
        CHECK_BLAS(cublasZhpmv(h, CUBLAS_FILL_MODE_UPPER, n, &zal, dhp, dzx, 1, &zbe, dzy2, 1));
        auto zp = ref_matvec(dense_tri(hb, n, k, ldb, true, 1, false), n, n, CUBLAS_OP_N, zx);
        auto zq = ref_matvec(dense_tri(hp, n, 0, 0, true, 1, false), n, n, CUBLAS_OP_N, zx);
        for (int i = 0; i < n; i++) {
            zp[i] *= Z(1, 0.5);
            zq[i] *= Z(1, 0.5);
        }
        expect_close(host_copy(dzy, n), zp, 1e-12, "Zhbmv");
        expect_close(host_copy(dzy2, n), zq, 1e-12, "Zhpmv");
        EXPECT_STATUS(cublasZhpmv(h, (cublasFillMode_t)7, n, &zal, dhp, dzx, 1, &zbe, dzy2, 1),
                      CUBLAS_STATUS_INVALID_VALUE);
        for (void* q : {(void*)dsb, (void*)dsp, (void*)dx, (void*)dy, (void*)dy2, (void*)dhb, (void*)dhp,
                        (void*)dzx, (void*)dzy, (void*)dzy2})
            CHECK(cudaFree(q));
    }
    // tbmv/tpmv then tbsv/tpsv restore x: S (upper, transposed), Z (lower,
    // conjugate-transposed, unit diagonal).
    {
        auto tb = random_values<float>((size_t)ldb * n), tp = random_values<float>(np);
        for (int j = 0; j < n; j++) {
            tb[k + (size_t)j * ldb] += 4.0;  // upper band's diagonal
            tp[j + (size_t)j * (j + 1) / 2] += 4.0;
        }
        // Back to float values, as the device holds them.
        for (auto& v : tb) v = (float)v.real();
        for (auto& v : tp) v = (float)v.real();
        auto x = random_values<float>(n);
        float *dtb = device_copy<float>(tb), *dtp = device_copy<float>(tp), *dx = device_copy<float>(x),
              *dx2 = device_copy<float>(x);
        CHECK_BLAS(cublasStbmv(h, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_T, CUBLAS_DIAG_NON_UNIT, n, k, dtb, ldb, dx, 1));
        CHECK_BLAS(cublasStpmv(h, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_T, CUBLAS_DIAG_NON_UNIT, n, dtp, dx2, 1));
        expect_close(host_copy(dx, n), ref_matvec(dense_tri(tb, n, k, ldb, true, 2, false), n, n, CUBLAS_OP_T, x),
                     1e-5, "Stbmv");
        expect_close(host_copy(dx2, n), ref_matvec(dense_tri(tp, n, 0, 0, true, 2, false), n, n, CUBLAS_OP_T, x),
                     1e-5, "Stpmv");
        CHECK_BLAS(cublasStbsv(h, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_T, CUBLAS_DIAG_NON_UNIT, n, k, dtb, ldb, dx, 1));
        CHECK_BLAS(cublasStpsv(h, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_T, CUBLAS_DIAG_NON_UNIT, n, dtp, dx2, 1));
        expect_close(host_copy(dx, n), x, 1e-4, "Stbsv");
        expect_close(host_copy(dx2, n), x, 1e-4, "Stpsv");
        EXPECT_STATUS(cublasStbsv(h, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_T, (cublasDiagType_t)5, n, k, dtb, ldb, dx, 1),
                      CUBLAS_STATUS_INVALID_VALUE);
        EXPECT_STATUS(cublasStpmv(h, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_T, CUBLAS_DIAG_UNIT, -1, dtp, dx2, 1),
                      CUBLAS_STATUS_INVALID_VALUE);
        auto zb = random_values<cuDoubleComplex>((size_t)ldb * n), zp = random_values<cuDoubleComplex>(np);
        auto zx = random_values<cuDoubleComplex>(n);
        cuDoubleComplex *dzb = device_copy<cuDoubleComplex>(zb), *dzp = device_copy<cuDoubleComplex>(zp),
                        *dzx = device_copy<cuDoubleComplex>(zx), *dzx2 = device_copy<cuDoubleComplex>(zx);
        CHECK_BLAS(cublasZtbmv(h, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_C, CUBLAS_DIAG_UNIT, n, k, dzb, ldb, dzx, 1));
        CHECK_BLAS(cublasZtpmv(h, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_C, CUBLAS_DIAG_UNIT, n, dzp, dzx2, 1));
        expect_close(host_copy(dzx, n), ref_matvec(dense_tri(zb, n, k, ldb, false, 2, true), n, n, CUBLAS_OP_C, zx),
                     1e-12, "Ztbmv");
        expect_close(host_copy(dzx2, n), ref_matvec(dense_tri(zp, n, 0, 0, false, 2, true), n, n, CUBLAS_OP_C, zx),
                     1e-12, "Ztpmv");
        CHECK_BLAS(cublasZtbsv(h, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_C, CUBLAS_DIAG_UNIT, n, k, dzb, ldb, dzx, 1));
        CHECK_BLAS(cublasZtpsv(h, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_C, CUBLAS_DIAG_UNIT, n, dzp, dzx2, 1));
        expect_close(host_copy(dzx, n), zx, 1e-10, "Ztbsv");
        expect_close(host_copy(dzx2, n), zx, 1e-10, "Ztpsv");
        EXPECT_STATUS(cublasZtbmv(h, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_C, CUBLAS_DIAG_UNIT, n, k, dzb, k, dzx, 1),
                      CUBLAS_STATUS_INVALID_VALUE);
        EXPECT_STATUS(cublasZtpsv(h, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_C, CUBLAS_DIAG_UNIT, n, dzp, dzx2, 0),
                      CUBLAS_STATUS_INVALID_VALUE);
        for (void* q : {(void*)dtb, (void*)dtp, (void*)dx, (void*)dx2, (void*)dzb, (void*)dzp, (void*)dzx,
                        (void*)dzx2})
            CHECK(cudaFree(q));
    }
    printf("banded and packed level 2 ok\n");
}

// The stored triangle of A (dense, ld lda; or packed with lda 0) after
// A += alpha x y' + beta y x' (' is ^T, or ^H with herm), the diagonal of a
// Hermitian A real.
static std::vector<Z> ref_rank(std::vector<Z> a, int n, int lda, bool upper, bool herm, Z alpha,
                               const std::vector<Z>& x, const std::vector<Z>& y, Z beta) {
    auto c = [&](Z v) { return herm ? std::conj(v) : v; };
    for (int j = 0; j < n; j++)
        for (int i = 0; i < n; i++) {
            long at = lda ? (upper ? (i <= j ? i + (long)j * lda : -1) : (i >= j ? i + (long)j * lda : -1))
                          : tri_index(n, 0, 0, upper, i, j);
            if (at < 0) continue;
            a[at] += alpha * x[i] * c(y[j]) + beta * y[i] * c(x[j]);
            if (herm && i == j) a[at] = Z(a[at].real(), 0);
        }
    return a;
}

static void test_rank_updates(cublasHandle_t h) {
    const int n = 6, lda = 8, np = n * (n + 1) / 2;
    // S: syr, syr2 (lower), spr, spr2 (upper).
    {
        auto a = random_values<float>((size_t)lda * n), ap = random_values<float>(np);
        auto x = random_values<float>(2 * n), y = random_values<float>(n);
        float *da = device_copy<float>(a), *da2 = device_copy<float>(a), *dap = device_copy<float>(ap),
              *dap2 = device_copy<float>(ap), *dx = device_copy<float>(x), *dy = device_copy<float>(y);
        float al = 0.75f;
        auto xs = stride2(x, n);
        CHECK_BLAS(cublasSsyr(h, CUBLAS_FILL_MODE_LOWER, n, &al, dx, 2, da, lda));
        CHECK_BLAS(cublasSsyr2(h, CUBLAS_FILL_MODE_LOWER, n, &al, dx, 2, dy, 1, da2, lda));
        CHECK_BLAS(cublasSspr(h, CUBLAS_FILL_MODE_UPPER, n, &al, dx, 2, dap));
        CHECK_BLAS(cublasSspr2(h, CUBLAS_FILL_MODE_UPPER, n, &al, dx, 2, dy, 1, dap2));
        expect_close(host_copy(da, a.size()), ref_rank(a, n, lda, false, false, 0.75, xs, xs, 0), 1e-5, "Ssyr");
        expect_close(host_copy(da2, a.size()), ref_rank(a, n, lda, false, false, 0.75, xs, y, 0.75), 1e-5, "Ssyr2");
        expect_close(host_copy(dap, np), ref_rank(ap, n, 0, true, false, 0.75, xs, xs, 0), 1e-5, "Sspr");
        expect_close(host_copy(dap2, np), ref_rank(ap, n, 0, true, false, 0.75, xs, y, 0.75), 1e-5, "Sspr2");
        EXPECT_STATUS(cublasSsyr(h, CUBLAS_FILL_MODE_LOWER, n, &al, dx, 2, da, n - 1), CUBLAS_STATUS_INVALID_VALUE);
        EXPECT_STATUS(cublasSsyr2(h, CUBLAS_FILL_MODE_LOWER, n, &al, dx, 0, dy, 1, da2, lda),
                      CUBLAS_STATUS_INVALID_VALUE);
        EXPECT_STATUS(cublasSspr(h, (cublasFillMode_t)3, n, &al, dx, 2, dap), CUBLAS_STATUS_INVALID_VALUE);
        EXPECT_STATUS(cublasSspr2(h, CUBLAS_FILL_MODE_UPPER, -2, &al, dx, 2, dy, 1, dap2), CUBLAS_STATUS_INVALID_VALUE);
        for (void* q : {(void*)da, (void*)da2, (void*)dap, (void*)dap2, (void*)dx, (void*)dy}) CHECK(cudaFree(q));
    }
    // Z: syr, syr2 (complex symmetric), her, her2, hpr, hpr2.
    {
        auto a = random_values<cuDoubleComplex>((size_t)lda * n), ap = random_values<cuDoubleComplex>(np);
        auto x = random_values<cuDoubleComplex>(n), y = random_values<cuDoubleComplex>(n);
        cuDoubleComplex* d[6];
        for (int i = 0; i < 4; i++) d[i] = device_copy<cuDoubleComplex>(a);
        cuDoubleComplex *dap = device_copy<cuDoubleComplex>(ap), *dap2 = device_copy<cuDoubleComplex>(ap);
        cuDoubleComplex *dx = device_copy<cuDoubleComplex>(x), *dy = device_copy<cuDoubleComplex>(y);
        cuDoubleComplex al = make_cuDoubleComplex(0.5, -1.5);
        double ral = 0.5;
        Z zal(0.5, -1.5);
        CHECK_BLAS(cublasZsyr(h, CUBLAS_FILL_MODE_UPPER, n, &al, dx, 1, d[0], lda));
        CHECK_BLAS(cublasZsyr2(h, CUBLAS_FILL_MODE_UPPER, n, &al, dx, 1, dy, 1, d[1], lda));
        CHECK_BLAS(cublasZher(h, CUBLAS_FILL_MODE_LOWER, n, &ral, dx, 1, d[2], lda));
        CHECK_BLAS(cublasZher2(h, CUBLAS_FILL_MODE_LOWER, n, &al, dx, 1, dy, 1, d[3], lda));
        CHECK_BLAS(cublasZhpr(h, CUBLAS_FILL_MODE_UPPER, n, &ral, dx, 1, dap));
        CHECK_BLAS(cublasZhpr2(h, CUBLAS_FILL_MODE_LOWER, n, &al, dx, 1, dy, 1, dap2));
        expect_close(host_copy(d[0], a.size()), ref_rank(a, n, lda, true, false, zal, x, x, 0), 1e-12, "Zsyr");
        expect_close(host_copy(d[1], a.size()), ref_rank(a, n, lda, true, false, zal, x, y, zal), 1e-12, "Zsyr2");
        expect_close(host_copy(d[2], a.size()), ref_rank(a, n, lda, false, true, 0.5, x, x, 0), 1e-12, "Zher");
        expect_close(host_copy(d[3], a.size()), ref_rank(a, n, lda, false, true, zal, x, y, std::conj(zal)), 1e-12,
                     "Zher2");
        expect_close(host_copy(dap, np), ref_rank(ap, n, 0, true, true, 0.5, x, x, 0), 1e-12, "Zhpr");
        expect_close(host_copy(dap2, np), ref_rank(ap, n, 0, false, true, zal, x, y, std::conj(zal)), 1e-12, "Zhpr2");
        EXPECT_STATUS(cublasZsyr(h, CUBLAS_FILL_MODE_UPPER, n, &al, dx, 0, d[0], lda), CUBLAS_STATUS_INVALID_VALUE);
        EXPECT_STATUS(cublasZsyr2(h, CUBLAS_FILL_MODE_UPPER, n, &al, dx, 1, dy, 1, d[1], 0), CUBLAS_STATUS_INVALID_VALUE);
        EXPECT_STATUS(cublasZher(h, (cublasFillMode_t)2, n, &ral, dx, 1, d[2], lda), CUBLAS_STATUS_INVALID_VALUE);
        EXPECT_STATUS(cublasZher2(h, CUBLAS_FILL_MODE_LOWER, -1, &al, dx, 1, dy, 1, d[3], lda),
                      CUBLAS_STATUS_INVALID_VALUE);
        EXPECT_STATUS(cublasZhpr(h, CUBLAS_FILL_MODE_UPPER, n, &ral, dx, 0, dap), CUBLAS_STATUS_INVALID_VALUE);
        EXPECT_STATUS(cublasZhpr2(h, CUBLAS_FILL_MODE_LOWER, n, &al, dx, 1, dy, 0, dap2), CUBLAS_STATUS_INVALID_VALUE);
        for (int i = 0; i < 4; i++) CHECK(cudaFree(d[i]));
        for (void* q : {(void*)dap, (void*)dap2, (void*)dx, (void*)dy}) CHECK(cudaFree(q));
    }
    printf("rank updates ok\n");
}

// C's uplo triangle after alpha op(A) op(B)' [+ alpha2 op(B) op(A)'] + beta C.
static std::vector<Z> ref_syr2k(bool upper, cublasOperation_t trans, bool herm, bool two, int n, int k, Z alpha,
                                const std::vector<Z>& a, const std::vector<Z>& b, int lda, Z beta, std::vector<Z> c,
                                int ldc) {
    auto cj = [&](Z v) { return herm ? std::conj(v) : v; };
    auto opm = [&](const std::vector<Z>& mtx, int i, int l) {
        return trans == CUBLAS_OP_N ? mtx[i + (size_t)l * lda] : cj(mtx[l + (size_t)i * lda]);
    };
    for (int j = 0; j < n; j++)
        for (int i = 0; i < n; i++) {
            if (upper ? i > j : i < j) continue;
            Z s = 0;
            for (int l = 0; l < k; l++) {
                s += alpha * opm(a, i, l) * cj(opm(b, j, l));
                if (two) s += cj(alpha) * opm(b, i, l) * cj(opm(a, j, l));
            }
            Z v = s + beta * c[i + (size_t)j * ldc];
            if (herm && i == j) v = Z(v.real(), 0);
            c[i + (size_t)j * ldc] = v;
        }
    return c;
}

static void test_syr2k(cublasHandle_t h) {
    const int n = 5, k = 4, ld = 7, ldc = 6;
    {
        // S, transposed (A, B are k x n).
        auto a = random_values<float>((size_t)ld * n), b = random_values<float>((size_t)ld * n),
             c = random_values<float>((size_t)ldc * n);
        float *da = device_copy<float>(a), *db = device_copy<float>(b), *dc = device_copy<float>(c),
              *dc2 = device_copy<float>(c);
        float al = 1.25f, be = -0.5f;
        CHECK_BLAS(cublasSsyr2k(h, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_T, n, k, &al, da, ld, db, ld, &be, dc, ldc));
        CHECK_BLAS(cublasSsyrkx(h, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_T, n, k, &al, da, ld, db, ld, &be, dc2, ldc));
        expect_close(host_copy(dc, c.size()), ref_syr2k(true, CUBLAS_OP_T, false, true, n, k, 1.25, a, b, ld, -0.5, c, ldc),
                     1e-5, "Ssyr2k");
        expect_close(host_copy(dc2, c.size()),
                     ref_syr2k(false, CUBLAS_OP_T, false, false, n, k, 1.25, a, b, ld, -0.5, c, ldc), 1e-5, "Ssyrkx");
        EXPECT_STATUS(cublasSsyr2k(h, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_T, n, k, &al, da, k - 1, db, ld, &be, dc, ldc),
                      CUBLAS_STATUS_INVALID_VALUE);
        EXPECT_STATUS(cublasSsyrkx(h, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_T, -1, k, &al, da, ld, db, ld, &be, dc2, ldc),
                      CUBLAS_STATUS_INVALID_VALUE);
        for (void* q : {(void*)da, (void*)db, (void*)dc, (void*)dc2}) CHECK(cudaFree(q));
    }
    {
        // Z: syr2k and syrkx (N), her2k and herkx (C).
        auto a = random_values<cuDoubleComplex>((size_t)ld * n), b = random_values<cuDoubleComplex>((size_t)ld * n),
             c = random_values<cuDoubleComplex>((size_t)ldc * n);
        cuDoubleComplex* d[4];
        for (int i = 0; i < 4; i++) d[i] = device_copy<cuDoubleComplex>(c);
        cuDoubleComplex *da = device_copy<cuDoubleComplex>(a), *db = device_copy<cuDoubleComplex>(b);
        cuDoubleComplex al = make_cuDoubleComplex(0.5, 1), be = make_cuDoubleComplex(-1, 0.25);
        double rbe = -1;
        Z zal(0.5, 1), zbe(-1, 0.25);
        CHECK_BLAS(cublasZsyr2k(h, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N, n, k, &al, da, ld, db, ld, &be, d[0], ldc));
        CHECK_BLAS(cublasZsyrkx(h, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_N, n, k, &al, da, ld, db, ld, &be, d[1], ldc));
        CHECK_BLAS(cublasZher2k(h, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_C, n, k, &al, da, ld, db, ld, &rbe, d[2], ldc));
        CHECK_BLAS(cublasZherkx(h, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_C, n, k, &al, da, ld, db, ld, &rbe, d[3], ldc));
        expect_close(host_copy(d[0], c.size()), ref_syr2k(false, CUBLAS_OP_N, false, true, n, k, zal, a, b, ld, zbe, c, ldc),
                     1e-12, "Zsyr2k");
        expect_close(host_copy(d[1], c.size()), ref_syr2k(true, CUBLAS_OP_N, false, false, n, k, zal, a, b, ld, zbe, c, ldc),
                     1e-12, "Zsyrkx");
        expect_close(host_copy(d[2], c.size()), ref_syr2k(true, CUBLAS_OP_C, true, true, n, k, zal, a, b, ld, -1.0, c, ldc),
                     1e-12, "Zher2k");
        expect_close(host_copy(d[3], c.size()), ref_syr2k(false, CUBLAS_OP_C, true, false, n, k, zal, a, b, ld, -1.0, c, ldc),
                     1e-12, "Zherkx");
        // The complex symmetric forms take N or T, the Hermitian N or C.
        EXPECT_STATUS(cublasZsyr2k(h, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_C, n, k, &al, da, ld, db, ld, &be, d[0], ldc),
                      CUBLAS_STATUS_INVALID_VALUE);
        EXPECT_STATUS(cublasZsyrkx(h, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_N, n, k, &al, da, ld, db, n - 1, &be, d[1], ldc),
                      CUBLAS_STATUS_INVALID_VALUE);
        EXPECT_STATUS(cublasZher2k(h, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_T, n, k, &al, da, ld, db, ld, &rbe, d[2], ldc),
                      CUBLAS_STATUS_INVALID_VALUE);
        EXPECT_STATUS(cublasZsyrk(h, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_C, n, k, &al, da, ld, &be, d[2], ldc),
                      CUBLAS_STATUS_INVALID_VALUE);
        EXPECT_STATUS(cublasZherkx(h, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_C, n, k, &al, da, ld, db, ld, &rbe, d[3], n - 1),
                      CUBLAS_STATUS_INVALID_VALUE);
        for (int i = 0; i < 4; i++) CHECK(cudaFree(d[i]));
        CHECK(cudaFree(da));
        CHECK(cudaFree(db));
    }
    printf("syr2k, her2k, syrkx, herkx ok\n");
}

static void test_rotations(cublasHandle_t h) {
    // Srotg, host pointer mode: (3, 4) -> r 5, z 1/c, c 0.6, s 0.8.
    float a = 3, b = 4, c = 0, s = 0;
    CHECK_BLAS(cublasSrotg(h, &a, &b, &c, &s));
    expect_close({Z(a), Z(b), Z(c), Z(s)}, {Z(5), Z(1 / 0.6), Z(0.6), Z(0.8)}, 1e-6, "Srotg");
    // Zrotg: [c s; -conj(s) c] [a; b] = [r; 0].
    cuDoubleComplex za = make_cuDoubleComplex(1, 2), zb = make_cuDoubleComplex(-3, 0.5), zs;
    double zc;
    CHECK_BLAS(cublasZrotg(h, &za, &zb, &zc, &zs));
    Z A(1, 2), B(-3, 0.5), S(zs.x, zs.y), R(za.x, za.y);
    EXPECT(std::abs(zc * A + S * B - R) < 1e-12 && std::abs(-std::conj(S) * A + zc * B) < 1e-12,
           "Zrotg: c %g s (%g,%g) r (%g,%g)", zc, S.real(), S.imag(), R.real(), R.imag());
    // Drotg in device pointer mode.
    double hv[4] = {-4, 3, 0, 0};
    double* dv;
    CHECK(cudaMalloc(&dv, sizeof hv));
    CHECK(cudaMemcpy(dv, hv, sizeof hv, cudaMemcpyHostToDevice));
    CHECK_BLAS(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_DEVICE));
    CHECK_BLAS(cublasDrotg(h, dv, dv + 1, dv + 2, dv + 3));
    EXPECT_STATUS(cublasDrotg(h, dv, dv + 1, dv + 2, nullptr), CUBLAS_STATUS_INVALID_VALUE);
    CHECK_BLAS(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_HOST));
    CHECK(cudaMemcpy(hv, dv, sizeof hv, cudaMemcpyDeviceToHost));
    expect_close({Z(hv[0]), Z(hv[2]), Z(hv[3])}, {Z(-5), Z(0.8), Z(-0.6)}, 1e-12, "Drotg (device)");
    EXPECT_STATUS(cublasSrotg(h, &a, &b, &c, nullptr), CUBLAS_STATUS_INVALID_VALUE);

    // S and D rotmg, then rotm with the result zeroes y[0] of the pair.
    for (int dbl = 0; dbl < 2; dbl++) {
        double d1 = 2, d2 = 3, x1 = 1.5, y1 = -0.5;
        double param[5] = {0, 0, 0, 0, 0};
        std::vector<double> x = {x1, 1, -2}, y = {y1, 0.5, 0.25};
        std::vector<Z> got_x, got_y;
        if (dbl) {
            CHECK_BLAS(cublasDrotmg(h, &d1, &d2, &x1, &y1, param));
            double *dx = nullptr, *dy = nullptr;
            CHECK(cudaMalloc(&dx, 24));
            CHECK(cudaMalloc(&dy, 24));
            CHECK(cudaMemcpy(dx, x.data(), 24, cudaMemcpyHostToDevice));
            CHECK(cudaMemcpy(dy, y.data(), 24, cudaMemcpyHostToDevice));
            CHECK_BLAS(cublasDrotm(h, 3, dx, 1, dy, 1, param));
            EXPECT_STATUS(cublasDrotm(h, 3, dx, 0, dy, 1, param), CUBLAS_STATUS_INVALID_VALUE);
            got_x = host_copy(dx, 3);
            got_y = host_copy(dy, 3);
            CHECK(cudaFree(dx));
            CHECK(cudaFree(dy));
        } else {
            float f[4] = {(float)d1, (float)d2, (float)x1, (float)y1}, fp[5] = {0, 0, 0, 0, 0};
            CHECK_BLAS(cublasSrotmg(h, &f[0], &f[1], &f[2], &f[3], fp));
            EXPECT_STATUS(cublasSrotmg(h, &f[0], &f[1], &f[2], &f[3], nullptr), CUBLAS_STATUS_INVALID_VALUE);
            for (int i = 0; i < 5; i++) param[i] = fp[i];
            float fx[3] = {(float)x[0], (float)x[1], (float)x[2]}, fy[3] = {(float)y[0], (float)y[1], (float)y[2]};
            float *dx = nullptr, *dy = nullptr;
            CHECK(cudaMalloc(&dx, 12));
            CHECK(cudaMalloc(&dy, 12));
            CHECK(cudaMemcpy(dx, fx, 12, cudaMemcpyHostToDevice));
            CHECK(cudaMemcpy(dy, fy, 12, cudaMemcpyHostToDevice));
            CHECK_BLAS(cublasSrotm(h, 3, dx, 1, dy, 1, fp));
            got_x = host_copy(dx, 3);
            got_y = host_copy(dy, 3);
            CHECK(cudaFree(dx));
            CHECK(cudaFree(dy));
        }
        double h11, h21, h12, h22;
        if (param[0] < 0) {
            h11 = param[1], h21 = param[2], h12 = param[3], h22 = param[4];
        } else if (param[0] == 0) {
            h11 = 1, h21 = param[2], h12 = param[3], h22 = 1;
        } else {
            h11 = param[1], h21 = -1, h12 = 1, h22 = param[4];
        }
        std::vector<Z> wx(3), wy(3);
        for (int i = 0; i < 3; i++) {
            wx[i] = h11 * x[i] + h12 * y[i];
            wy[i] = h21 * x[i] + h22 * y[i];
        }
        double tol = dbl ? 1e-12 : 1e-5;
        expect_close(got_x, wx, tol, dbl ? "Drotm x" : "Srotm x");
        expect_close(got_y, wy, tol, dbl ? "Drotm y" : "Srotm y");
        EXPECT(std::abs(got_y[0]) < tol * 10, "rotmg did not zero y: %g", got_y[0].real());
    }
    printf("rotg, rotmg, rotm ok\n");
}

int main(int argc, char** argv) {
    if (argc > 1 && strcmp(argv[1], "hostile") == 0) {
        test_hostile();
        printf("PASS\n");
        return 0;
    }
    cudaStream_t stream;
    CHECK(cudaStreamCreate(&stream));
    test_handle_and_copies(stream);
    cublasHandle_t h;
    CHECK_BLAS(cublasCreate(&h));
    test_gemm<float>(h, "Sgemm", 1e-5);
    test_gemm<double>(h, "Dgemm", 1e-12);
    test_gemm<cuComplex>(h, "Cgemm", 1e-5);
    test_gemm<cuDoubleComplex>(h, "Zgemm", 1e-12);
    test_level1(h);
    test_level2(h);
    test_banded_packed(h);
    test_rank_updates(h);
    test_level3_others(h);
    test_syr2k(h);
    test_rotations(h);
    test_batched(h, stream);
    CHECK_BLAS(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_HOST));
    test_batched_lu<float>(h, "S", 1e-4, cublasSgetrfBatched, cublasSgetrsBatched, cublasSgetriBatched,
                           cublasSmatinvBatched);
    test_batched_lu<double>(h, "D", 1e-12, cublasDgetrfBatched, cublasDgetrsBatched, cublasDgetriBatched,
                            cublasDmatinvBatched);
    test_batched_lu<cuComplex>(h, "C", 1e-4, cublasCgetrfBatched, cublasCgetrsBatched, cublasCgetriBatched,
                               cublasCmatinvBatched);
    test_batched_lu<cuDoubleComplex>(h, "Z", 1e-12, cublasZgetrfBatched, cublasZgetrsBatched,
                                     cublasZgetriBatched, cublasZmatinvBatched);
    test_gemm_grouped<float>(h, "S", 1e-5, cublasSgemmGroupedBatched);
    test_gemm_grouped<double>(h, "D", 1e-12, cublasDgemmGroupedBatched);
    test_gemm_grouped<cuComplex>(h, "Ex C", 1e-5, grouped_ex<cuComplex, CUDA_C_32F, CUBLAS_COMPUTE_32F>);
    test_gemm_grouped<cuDoubleComplex>(h, "Ex Z", 1e-12, grouped_ex<cuDoubleComplex, CUDA_C_64F, CUBLAS_COMPUTE_64F>);
    test_batched_more<float>(h, "S", 1e-4, cublasStrsmBatched, cublasSgemvBatched, cublasSgemvStridedBatched,
                             cublasSgeqrfBatched, cublasSgelsBatched);
    test_batched_more<double>(h, "D", 1e-12, cublasDtrsmBatched, cublasDgemvBatched, cublasDgemvStridedBatched,
                              cublasDgeqrfBatched, cublasDgelsBatched);
    test_batched_more<cuComplex>(h, "C", 1e-4, cublasCtrsmBatched, cublasCgemvBatched, cublasCgemvStridedBatched,
                                 cublasCgeqrfBatched, cublasCgelsBatched);
    test_batched_more<cuDoubleComplex>(h, "Z", 1e-12, cublasZtrsmBatched, cublasZgemvBatched,
                                       cublasZgemvStridedBatched, cublasZgeqrfBatched, cublasZgelsBatched);
    CHECK_BLAS(cublasDestroy(h));
    test_errors();
    CHECK(cudaStreamDestroy(stream));
    printf("PASS\n");
    return 0;
}
