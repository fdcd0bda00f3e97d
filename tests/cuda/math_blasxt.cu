// cuBLASXt through rcud: a handle on device 0, S/D/C/Z GEMM on host
// matrices (every transpose pair, leading dimensions above the row
// counts), symm/hemm, syrk/herk, syr2k/her2k/syrkx/herkx, trmm and trsm on
// host memory, GEMM with
// operands in device memory (and one mixed), the settings, and the
// statuses of bad calls. Every result is checked against a naive host
// reference computed here.
#include <cublasXt.h>
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

static unsigned seed_state = 4321;
static double next_value() {
    seed_state = seed_state * 1103515245u + 12345u;
    return ((seed_state >> 8) % 2001) / 1000.0 - 1.0;
}

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

// A host matrix of T and the same values as references.
template <typename T> struct Host {
    std::vector<Z> ref;
    std::vector<T> data;
};

template <typename T> static Host<T> random_host(size_t n) {
    Host<T> h;
    h.ref.resize(n);
    h.data.resize(n);
    for (size_t i = 0; i < n; i++) {
        double re = next_value();
        double im = is_complex<T>() ? next_value() : 0.0;
        to_host(Z(re, im), &h.data[i]);
        h.ref[i] = from_host(h.data[i]);
    }
    return h;
}

template <typename T> static std::vector<Z> refs(const std::vector<T>& v) {
    std::vector<Z> out(v.size());
    for (size_t i = 0; i < v.size(); i++) out[i] = from_host(v[i]);
    return out;
}

template <typename T> static T value(Z v) {
    T out;
    to_host(v, &out);
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

// Element (i, j) of the symmetric (hermitian) matrix whose `uplo` triangle is stored.
static Z sym_elem(const std::vector<Z>& a, int lda, cublasFillMode_t uplo, bool herm, int i, int j) {
    bool stored = uplo == CUBLAS_FILL_MODE_UPPER ? i <= j : i >= j;
    if (i == j && herm) return Z(a[i + (size_t)i * lda].real(), 0);
    if (stored) return a[i + (size_t)j * lda];
    Z v = a[j + (size_t)i * lda];
    return herm ? std::conj(v) : v;
}

// Element (i, j) of op(A) for triangular A.
static Z tri_elem(const std::vector<Z>& a, int lda, cublasFillMode_t uplo, cublasOperation_t op,
                  cublasDiagType_t diag, int i, int j) {
    int r = op == CUBLAS_OP_N ? i : j, c = op == CUBLAS_OP_N ? j : i;
    if (r == c) {
        if (diag == CUBLAS_DIAG_UNIT) return 1;
    } else if (uplo == CUBLAS_FILL_MODE_UPPER ? r > c : r < c) {
        return 0;
    }
    Z v = a[r + (size_t)c * lda];
    return op == CUBLAS_OP_C ? std::conj(v) : v;
}

static cublasXtHandle_t make_handle() {
    cublasXtHandle_t h;
    CHECK_BLAS(cublasXtCreate(&h));
    int dev0 = 0;
    CHECK_BLAS(cublasXtDeviceSelect(h, 1, &dev0));
    return h;
}

// ---- gemm --------------------------------------------------------------------

template <typename T, typename F> static void test_gemm(cublasXtHandle_t h, F xt, const char* name, double tol) {
    const int m = 23, n = 17, k = 29;
    cublasOperation_t ops[3] = {CUBLAS_OP_N, CUBLAS_OP_T, CUBLAS_OP_C};
    for (auto ta : ops)
        for (auto tb : ops) {
            int ar = ta == CUBLAS_OP_N ? m : k, ac = ta == CUBLAS_OP_N ? k : m;
            int br = tb == CUBLAS_OP_N ? k : n, bc = tb == CUBLAS_OP_N ? n : k;
            int lda = ar + 3, ldb = br + 1, ldc = m + 5;
            auto a = random_host<T>((size_t)lda * ac);
            auto b = random_host<T>((size_t)ldb * bc);
            auto c = random_host<T>((size_t)ldc * n);
            Z alpha = is_complex<T>() ? Z(0.5, -1.5) : Z(1.25, 0), beta = is_complex<T>() ? Z(-0.5, 0.25) : Z(-2, 0);
            T al = value<T>(alpha), be = value<T>(beta);
            CHECK_BLAS(xt(h, ta, tb, m, n, k, &al, a.data.data(), lda, b.data.data(), ldb, &be, c.data.data(), ldc));
            // The padding rows of C (below m) must be left alone too.
            auto want = ref_gemm(ta, tb, m, n, k, alpha, a.ref, lda, b.ref, ldb, beta, c.ref, ldc);
            expect_close(refs(c.data), want, tol, name);
        }
    printf("%s: 9 transpose combinations on host memory ok\n", name);
}

// GEMM with operands in device memory, used in place, and one mixed call.
static void test_device_operands(cublasXtHandle_t h) {
    const int m = 19, n = 13, k = 11, lda = 21, ldb = 12, ldc = 20;
    auto a = random_host<double>((size_t)lda * k);
    auto b = random_host<double>((size_t)ldb * n);
    auto c = random_host<double>((size_t)ldc * n);
    double *da, *db, *dc;
    CHECK(cudaMalloc(&da, a.data.size() * sizeof(double)));
    CHECK(cudaMalloc(&db, b.data.size() * sizeof(double)));
    CHECK(cudaMalloc(&dc, c.data.size() * sizeof(double)));
    CHECK(cudaMemcpy(da, a.data.data(), a.data.size() * sizeof(double), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(db, b.data.data(), b.data.size() * sizeof(double), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dc, c.data.data(), c.data.size() * sizeof(double), cudaMemcpyHostToDevice));
    double al = 0.75, be = 0.5;
    CHECK_BLAS(cublasXtDgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &al, da, lda, db, ldb, &be, dc, ldc));
    // Blocking: the result is there without a synchronisation.
    std::vector<double> got(c.data.size());
    CHECK(cudaMemcpy(got.data(), dc, got.size() * sizeof(double), cudaMemcpyDeviceToHost));
    auto want = ref_gemm(CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, al, a.ref, lda, b.ref, ldb, be, c.ref, ldc);
    expect_close(refs(got), want, 1e-12, "Dgemm on device memory");

    // A on the device, B on the host, C on the device.
    CHECK_BLAS(cublasXtDgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &al, da, lda, b.data.data(), ldb, &be, dc, ldc));
    CHECK(cudaMemcpy(got.data(), dc, got.size() * sizeof(double), cudaMemcpyDeviceToHost));
    want = ref_gemm(CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, al, a.ref, lda, b.ref, ldb, be, want, ldc);
    expect_close(refs(got), want, 1e-12, "Dgemm on device and host memory");
    CHECK(cudaFree(da));
    CHECK(cudaFree(db));
    CHECK(cudaFree(dc));
    printf("gemm on device memory ok\n");
}

// ---- symm / hemm ---------------------------------------------------------------

template <typename T, typename F>
static void test_symm(cublasXtHandle_t h, F xt, bool herm, const char* name, double tol) {
    const int m = 14, n = 11;
    cublasSideMode_t sides[2] = {CUBLAS_SIDE_LEFT, CUBLAS_SIDE_RIGHT};
    cublasFillMode_t fills[2] = {CUBLAS_FILL_MODE_LOWER, CUBLAS_FILL_MODE_UPPER};
    for (auto side : sides)
        for (auto uplo : fills) {
            int na = side == CUBLAS_SIDE_LEFT ? m : n;
            int lda = na + 2, ldb = m + 1, ldc = m + 3;
            auto a = random_host<T>((size_t)lda * na);
            auto b = random_host<T>((size_t)ldb * n);
            auto c = random_host<T>((size_t)ldc * n);
            Z alpha = is_complex<T>() ? Z(1.5, 0.5) : Z(1.5, 0), beta = is_complex<T>() ? Z(0.25, -1) : Z(0.25, 0);
            T al = value<T>(alpha), be = value<T>(beta);
            CHECK_BLAS(xt(h, side, uplo, m, n, &al, a.data.data(), lda, b.data.data(), ldb, &be, c.data.data(), ldc));
            auto want = c.ref;
            for (int j = 0; j < n; j++)
                for (int i = 0; i < m; i++) {
                    Z s = 0;
                    if (side == CUBLAS_SIDE_LEFT)
                        for (int l = 0; l < m; l++) s += sym_elem(a.ref, lda, uplo, herm, i, l) * b.ref[l + (size_t)j * ldb];
                    else
                        for (int l = 0; l < n; l++) s += b.ref[i + (size_t)l * ldb] * sym_elem(a.ref, lda, uplo, herm, l, j);
                    want[i + (size_t)j * ldc] = alpha * s + beta * c.ref[i + (size_t)j * ldc];
                }
            expect_close(refs(c.data), want, tol, name);
        }
}

// ---- syrk / herk ---------------------------------------------------------------

template <typename T, typename S, typename F>
static void test_syrk(cublasXtHandle_t h, F xt, bool herm, const char* name, double tol) {
    const int n = 15, k = 9;
    cublasOperation_t ops[2] = {CUBLAS_OP_N, herm ? CUBLAS_OP_C : CUBLAS_OP_T};
    cublasFillMode_t fills[2] = {CUBLAS_FILL_MODE_LOWER, CUBLAS_FILL_MODE_UPPER};
    for (auto trans : ops)
        for (auto uplo : fills) {
            int ar = trans == CUBLAS_OP_N ? n : k, ac = trans == CUBLAS_OP_N ? k : n;
            int lda = ar + 2, ldc = n + 4;
            auto a = random_host<T>((size_t)lda * ac);
            auto c = random_host<T>((size_t)ldc * n);
            Z alpha = herm || !is_complex<T>() ? Z(0.75, 0) : Z(0.75, 0.5);
            Z beta = herm || !is_complex<T>() ? Z(-1.5, 0) : Z(-1.5, 0.25);
            S al, be;
            to_host(alpha, &al);
            to_host(beta, &be);
            CHECK_BLAS(xt(h, uplo, trans, n, k, &al, a.data.data(), lda, &be, c.data.data(), ldc));
            auto want = c.ref;
            for (int j = 0; j < n; j++)
                for (int i = 0; i < n; i++) {
                    if (uplo == CUBLAS_FILL_MODE_UPPER ? i > j : i < j) continue;
                    Z s = 0;
                    for (int l = 0; l < k; l++) {
                        Z x = trans == CUBLAS_OP_N ? a.ref[i + (size_t)l * lda] : a.ref[l + (size_t)i * lda];
                        Z y = trans == CUBLAS_OP_N ? a.ref[j + (size_t)l * lda] : a.ref[l + (size_t)j * lda];
                        // A A^H, or A^H A for the conjugate transpose.
                        if (herm) s += trans == CUBLAS_OP_N ? x * std::conj(y) : std::conj(x) * y;
                        else s += x * y;
                    }
                    Z v = alpha * s + beta * c.ref[i + (size_t)j * ldc];
                    if (herm && i == j) v = Z(v.real(), 0);
                    want[i + (size_t)j * ldc] = v;
                }
            expect_close(refs(c.data), want, tol, name);
        }
}

// ---- syr2k / her2k / syrkx / herkx ------------------------------------------------

// C = alpha op(A) op(B)^T + alpha' op(B) op(A)^T + beta C (syr2k/her2k; for
// her2k alpha' is conj(alpha) and ^T is ^H), or alpha op(A) op(B)^T + beta C
// (`x`: syrkx/herkx), in the `uplo` triangle.
template <typename T, typename S, typename F>
static void test_syr2k(cublasXtHandle_t h, F xt, bool herm, bool x, const char* name, double tol) {
    const int n = 11, k = 7;
    cublasOperation_t ops[2] = {CUBLAS_OP_N, herm ? CUBLAS_OP_C : CUBLAS_OP_T};
    cublasFillMode_t fills[2] = {CUBLAS_FILL_MODE_LOWER, CUBLAS_FILL_MODE_UPPER};
    for (auto trans : ops)
        for (auto uplo : fills) {
            int ar = trans == CUBLAS_OP_N ? n : k, ac = trans == CUBLAS_OP_N ? k : n;
            int lda = ar + 1, ldb = ar + 3, ldc = n + 2;
            auto a = random_host<T>((size_t)lda * ac);
            auto b = random_host<T>((size_t)ldb * ac);
            auto c = random_host<T>((size_t)ldc * n);
            Z alpha = is_complex<T>() ? Z(0.5, -0.25) : Z(0.5, 0);
            Z beta = herm || !is_complex<T>() ? Z(2.0, 0) : Z(2.0, 0.5);
            T al;
            S be;
            to_host(alpha, &al);
            to_host(beta, &be);
            CHECK_BLAS(xt(h, uplo, trans, n, k, &al, a.data.data(), lda, b.data.data(), ldb, &be, c.data.data(), ldc));
            auto at = [&](const std::vector<Z>& m, int ld, int i, int l) {
                return trans == CUBLAS_OP_N ? m[i + (size_t)l * ld] : m[l + (size_t)i * ld];
            };
            auto adj = [&](Z v) { return herm ? std::conj(v) : v; };
            auto want = c.ref;
            for (int j = 0; j < n; j++)
                for (int i = 0; i < n; i++) {
                    if (uplo == CUBLAS_FILL_MODE_UPPER ? i > j : i < j) continue;
                    Z s = 0;
                    for (int l = 0; l < k; l++) {
                        // op(X)(i, l): X itself or, for trans, its (conjugate) transpose.
                        Z ai = trans == CUBLAS_OP_N ? at(a.ref, lda, i, l) : adj(at(a.ref, lda, i, l));
                        Z bj = trans == CUBLAS_OP_N ? at(b.ref, ldb, j, l) : adj(at(b.ref, ldb, j, l));
                        s += alpha * ai * adj(bj);
                        if (!x) {
                            Z bi = trans == CUBLAS_OP_N ? at(b.ref, ldb, i, l) : adj(at(b.ref, ldb, i, l));
                            Z aj = trans == CUBLAS_OP_N ? at(a.ref, lda, j, l) : adj(at(a.ref, lda, j, l));
                            s += (herm ? std::conj(alpha) : alpha) * bi * adj(aj);
                        }
                    }
                    Z v = s + beta * c.ref[i + (size_t)j * ldc];
                    if (herm && i == j && !x) v = Z(v.real(), 0);
                    want[i + (size_t)j * ldc] = v;
                }
            std::vector<Z> got = refs(c.data);
            // herkx leaves the diagonal's imaginary part to cuBLAS.
            if (herm && x)
                for (int i = 0; i < n; i++) {
                    got[i + (size_t)i * ldc] = Z(got[i + (size_t)i * ldc].real(), 0);
                    want[i + (size_t)i * ldc] = Z(want[i + (size_t)i * ldc].real(), 0);
                }
            expect_close(got, want, tol, name);
        }
}

// ---- trmm / trsm ---------------------------------------------------------------

// alpha op(A) B (left) or alpha B op(A) (right).
static std::vector<Z> ref_trmm(cublasSideMode_t side, cublasFillMode_t uplo, cublasOperation_t trans,
                               cublasDiagType_t diag, int m, int n, Z alpha, const std::vector<Z>& a, int lda,
                               const std::vector<Z>& b, int ldb, std::vector<Z> c, int ldc) {
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) {
            Z s = 0;
            if (side == CUBLAS_SIDE_LEFT)
                for (int l = 0; l < m; l++) s += tri_elem(a, lda, uplo, trans, diag, i, l) * b[l + (size_t)j * ldb];
            else
                for (int l = 0; l < n; l++) s += b[i + (size_t)l * ldb] * tri_elem(a, lda, uplo, trans, diag, l, j);
            c[i + (size_t)j * ldc] = alpha * s;
        }
    return c;
}

template <typename T, typename Fm, typename Fs>
static void test_triangular(cublasXtHandle_t h, Fm trmm, Fs trsm, const char* name, double tol) {
    const int m = 12, n = 10;
    cublasSideMode_t sides[2] = {CUBLAS_SIDE_LEFT, CUBLAS_SIDE_RIGHT};
    cublasFillMode_t fills[2] = {CUBLAS_FILL_MODE_LOWER, CUBLAS_FILL_MODE_UPPER};
    cublasOperation_t ops[2] = {CUBLAS_OP_N, is_complex<T>() ? CUBLAS_OP_C : CUBLAS_OP_T};
    cublasDiagType_t diags[2] = {CUBLAS_DIAG_NON_UNIT, CUBLAS_DIAG_UNIT};
    int cases = 0;
    for (auto side : sides)
        for (auto uplo : fills)
            for (auto trans : ops) {
                auto diag = diags[cases++ % 2];
                int na = side == CUBLAS_SIDE_LEFT ? m : n;
                int lda = na + 1, ldb = m + 2, ldc = m + 4;
                auto a = random_host<T>((size_t)lda * na);
                // A well-conditioned triangle: a heavy diagonal.
                for (int i = 0; i < na; i++) {
                    a.ref[i + (size_t)i * lda] += 4.0;
                    to_host(a.ref[i + (size_t)i * lda], &a.data[i + (size_t)i * lda]);
                    a.ref[i + (size_t)i * lda] = from_host(a.data[i + (size_t)i * lda]);
                }
                auto b = random_host<T>((size_t)ldb * n);
                auto c = random_host<T>((size_t)ldc * n);
                Z alpha = is_complex<T>() ? Z(0.5, 1) : Z(-1.25, 0);
                T al = value<T>(alpha);

                CHECK_BLAS(trmm(h, side, uplo, trans, diag, m, n, &al, a.data.data(), lda, b.data.data(), ldb,
                                c.data.data(), ldc));
                auto want = ref_trmm(side, uplo, trans, diag, m, n, alpha, a.ref, lda, b.ref, ldb, c.ref, ldc);
                expect_close(refs(c.data), want, tol, name);
                expect_close(refs(b.data), b.ref, 0, "trmm left B alone");

                // trsm in place: op(A) X = alpha B, checked as op(A) X (or X op(A)) = alpha B.
                auto x = b;
                CHECK_BLAS(trsm(h, side, uplo, trans, diag, m, n, &al, a.data.data(), lda, x.data.data(), ldb));
                auto back = ref_trmm(side, uplo, trans, diag, m, n, 1.0, a.ref, lda, refs(x.data), ldb, b.ref, ldb);
                auto scaled = b.ref;
                for (int j = 0; j < n; j++)
                    for (int i = 0; i < m; i++) scaled[i + (size_t)j * ldb] *= alpha;
                expect_close(back, scaled, tol * 10, name);
            }
}

// ---- settings and errors ---------------------------------------------------------

static void test_settings(cublasXtHandle_t h) {
    int dim = 0;
    CHECK_BLAS(cublasXtGetBlockDim(h, &dim));
    EXPECT(dim > 0, "default block dim %d", dim);
    CHECK_BLAS(cublasXtSetBlockDim(h, 64));
    CHECK_BLAS(cublasXtGetBlockDim(h, &dim));
    EXPECT(dim == 64, "block dim %d", dim);
    cublasXtPinnedMemMode_t mode;
    CHECK_BLAS(cublasXtGetPinningMemMode(h, &mode));
    EXPECT(mode == CUBLASXT_PINNING_DISABLED, "default pinning mode");
    CHECK_BLAS(cublasXtSetPinningMemMode(h, CUBLASXT_PINNING_ENABLED));
    CHECK_BLAS(cublasXtGetPinningMemMode(h, &mode));
    EXPECT(mode == CUBLASXT_PINNING_ENABLED, "pinning mode");
    CHECK_BLAS(cublasXtSetCpuRatio(h, CUBLASXT_GEMM, CUBLASXT_FLOAT, 0.0f));
    CHECK_BLAS(cublasXtSetCpuRoutine(h, CUBLASXT_GEMM, CUBLASXT_FLOAT, NULL));
    int boards = 0, dev0 = 0;
    CHECK_BLAS(cublasXtGetNumBoards(1, &dev0, &boards));
    EXPECT(boards == 1, "boards %d", boards);
    CHECK_BLAS(cublasXtMaxBoards(&boards));
    EXPECT(boards >= 1, "max boards %d", boards);
    printf("settings ok\n");
}

static void test_errors(cublasXtHandle_t h) {
    int count = 0;
    CHECK(cudaGetDeviceCount(&count));
    float a[16] = {0}, b[16] = {0}, c[16] = {0}, one = 1, zero = 0;
    EXPECT_STATUS(cublasXtSgemm(NULL, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &one, a, 4, b, 4, &zero, c, 4),
                  CUBLAS_STATUS_NOT_INITIALIZED);
    int dev0 = 0;
    EXPECT_STATUS(cublasXtDeviceSelect(NULL, 1, &dev0), CUBLAS_STATUS_NOT_INITIALIZED);
    EXPECT_STATUS(cublasXtDestroy(NULL), CUBLAS_STATUS_NOT_INITIALIZED);

    cublasXtHandle_t fresh;
    CHECK_BLAS(cublasXtCreate(&fresh));
    int bad = count;
    EXPECT_STATUS(cublasXtDeviceSelect(fresh, 1, &bad), CUBLAS_STATUS_INVALID_VALUE);
    bad = -1;
    EXPECT_STATUS(cublasXtDeviceSelect(fresh, 1, &bad), CUBLAS_STATUS_INVALID_VALUE);
    CHECK_BLAS(cublasXtDestroy(fresh));
    // A destroyed handle is no handle.
    EXPECT_STATUS(cublasXtSgemm(fresh, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &one, a, 4, b, 4, &zero, c, 4),
                  CUBLAS_STATUS_NOT_INITIALIZED);

    // Leading dimensions below the row counts.
    EXPECT_STATUS(cublasXtSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &one, a, 3, b, 4, &zero, c, 4),
                  CUBLAS_STATUS_INVALID_VALUE);
    EXPECT_STATUS(cublasXtSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &one, a, 4, b, 4, &zero, c, 2),
                  CUBLAS_STATUS_INVALID_VALUE);
    EXPECT_STATUS(cublasXtStrsm(h, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N, CUBLAS_DIAG_UNIT, 4, 4,
                                &one, a, 4, b, 3),
                  CUBLAS_STATUS_INVALID_VALUE);
    EXPECT_STATUS(cublasXtSgemm(h, (cublasOperation_t)7, CUBLAS_OP_N, 4, 4, 4, &one, a, 4, b, 4, &zero, c, 4),
                  CUBLAS_STATUS_INVALID_VALUE);
    printf("errors ok\n");
}

int main() {
    cublasXtHandle_t h = make_handle();
    size_t free_before = 0, total = 0;
    CHECK(cudaMemGetInfo(&free_before, &total));
    test_settings(h);
    test_gemm<float>(h, cublasXtSgemm, "Sgemm", 1e-4);
    test_gemm<double>(h, cublasXtDgemm, "Dgemm", 1e-12);
    test_gemm<cuComplex>(h, cublasXtCgemm, "Cgemm", 1e-4);
    test_gemm<cuDoubleComplex>(h, cublasXtZgemm, "Zgemm", 1e-12);
    test_device_operands(h);
    test_symm<float>(h, cublasXtSsymm, false, "Ssymm", 1e-4);
    test_symm<double>(h, cublasXtDsymm, false, "Dsymm", 1e-12);
    test_symm<cuComplex>(h, cublasXtCsymm, false, "Csymm", 1e-4);
    test_symm<cuDoubleComplex>(h, cublasXtZhemm, true, "Zhemm", 1e-12);
    printf("symm and hemm on host memory ok\n");
    test_syrk<double, double>(h, cublasXtDsyrk, false, "Dsyrk", 1e-12);
    test_syrk<cuComplex, cuComplex>(h, cublasXtCsyrk, false, "Csyrk", 1e-4);
    test_syrk<cuComplex, float>(h, cublasXtCherk, true, "Cherk", 1e-4);
    test_syrk<cuDoubleComplex, double>(h, cublasXtZherk, true, "Zherk", 1e-12);
    printf("syrk and herk on host memory ok\n");
    test_syr2k<float, float>(h, cublasXtSsyr2k, false, false, "Ssyr2k", 1e-4);
    test_syr2k<double, double>(h, cublasXtDsyrkx, false, true, "Dsyrkx", 1e-12);
    test_syr2k<cuDoubleComplex, cuDoubleComplex>(h, cublasXtZsyr2k, false, false, "Zsyr2k", 1e-12);
    test_syr2k<cuComplex, float>(h, cublasXtCher2k, true, false, "Cher2k", 1e-4);
    test_syr2k<cuDoubleComplex, double>(h, cublasXtZherkx, true, true, "Zherkx", 1e-12);
    printf("syr2k, her2k, syrkx and herkx on host memory ok\n");
    test_triangular<float>(h, cublasXtStrmm, cublasXtStrsm, "Strmm/Strsm", 1e-4);
    test_triangular<double>(h, cublasXtDtrmm, cublasXtDtrsm, "Dtrmm/Dtrsm", 1e-12);
    test_triangular<cuDoubleComplex>(h, cublasXtZtrmm, cublasXtZtrsm, "Ztrmm/Ztrsm", 1e-12);
    printf("trmm and trsm on host memory ok\n");
    test_errors(h);
    // Every temporary device buffer of the calls above was freed.
    size_t free_after = 0;
    CHECK(cudaMemGetInfo(&free_after, &total));
    EXPECT(free_after == free_before, "device memory free: %zu before, %zu after", free_before, free_after);
    CHECK_BLAS(cublasXtDestroy(h));
    printf("PASS\n");
    return 0;
}
