// cuBLAS through rcud: handle management, host<->device copies, levels 1,
// 2 and 3 in S/D/C/Z, batched and mixed-precision GEMM, both pointer modes,
// the batched LU routines, and the statuses of bad calls. Every result is checked against a
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
                                                    T* const[], int, int*, int)) {
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
    // cuBLAS's statuses: lda < n, and getrs's host info names a bad argument.
    EXPECT_STATUS(getrf(h, n, dpa, n - 1, dpiv, dinfo, batch), CUBLAS_STATUS_INVALID_VALUE);
    EXPECT_STATUS(getrs(h, CUBLAS_OP_N, -1, nrhs, dpa, lda, dpiv, dpb, lda, &host_info, 1),
                  CUBLAS_STATUS_INVALID_VALUE);
    EXPECT(host_info < 0, "%s getrs info for n = -1: %d, want a negative position", name, host_info);
    for (void* p : {(void*)da, (void*)db, (void*)dc, (void*)dpa, (void*)dpb, (void*)dpc, (void*)dpiv, (void*)dinfo})
        CHECK(cudaFree(p));
    printf("%s batched LU ok\n", name);
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
    test_level3_others(h);
    test_batched(h, stream);
    CHECK_BLAS(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_HOST));
    test_batched_lu<float>(h, "S", 1e-4, cublasSgetrfBatched, cublasSgetrsBatched, cublasSgetriBatched);
    test_batched_lu<double>(h, "D", 1e-12, cublasDgetrfBatched, cublasDgetrsBatched, cublasDgetriBatched);
    test_batched_lu<cuComplex>(h, "C", 1e-4, cublasCgetrfBatched, cublasCgetrsBatched, cublasCgetriBatched);
    test_batched_lu<cuDoubleComplex>(h, "Z", 1e-12, cublasZgetrfBatched, cublasZgetrsBatched,
                                     cublasZgetriBatched);
    CHECK_BLAS(cublasDestroy(h));
    test_errors();
    CHECK(cudaStreamDestroy(stream));
    printf("PASS\n");
    return 0;
}
