// cuSOLVER (dense) on small matrices in every element type: LU, Cholesky,
// QR, symmetric/Hermitian eigenvalues and SVD, the batched Cholesky and the
// Jacobi eigensolver and SVD (plain and batched), the general eigensolver
// (Xgeev), each checked by its residual
// computed on the host; devInfo of a singular and of an indefinite matrix;
// the statuses of bad handles, dimensions, pointers and workspaces.
#include <cuComplex.h>
#include <cuda_runtime.h>
#include <cusolverDn.h>

#include <cmath>
#include <complex>
#include <vector>

#include "solver_check.h"

// The functions of one element type, named as cuSOLVER names them.
template <typename T> struct Sol;
#define SOLVER_TYPE(T, R, P, ORM, ORG, SYE, SYEJ, CPLX, EPS)                                                                   \
    template <> struct Sol<T> {                                                                                     \
        typedef R Real;                                                                                             \
        static const char *name() { return #P; }                                                                    \
        static const bool complex = CPLX;                                                                           \
        static double eps() { return EPS; }                                                                         \
        static cusolverStatus_t getrf_bs(cusolverDnHandle_t h, int m, int n, T *a, int lda, int *lw) {             \
            return cusolverDn##P##getrf_bufferSize(h, m, n, a, lda, lw);                                            \
        }                                                                                                           \
        static cusolverStatus_t getrf(cusolverDnHandle_t h, int m, int n, T *a, int lda, T *w, int *ip, int *inf) { \
            return cusolverDn##P##getrf(h, m, n, a, lda, w, ip, inf);                                               \
        }                                                                                                           \
        static cusolverStatus_t getrs(cusolverDnHandle_t h, cublasOperation_t op, int n, int nrhs, T *a, int lda,   \
                                      int *ip, T *b, int ldb, int *inf) {                                           \
            return cusolverDn##P##getrs(h, op, n, nrhs, a, lda, ip, b, ldb, inf);                                   \
        }                                                                                                           \
        static cusolverStatus_t potrf_bs(cusolverDnHandle_t h, cublasFillMode_t u, int n, T *a, int lda, int *lw) { \
            return cusolverDn##P##potrf_bufferSize(h, u, n, a, lda, lw);                                            \
        }                                                                                                           \
        static cusolverStatus_t potrf(cusolverDnHandle_t h, cublasFillMode_t u, int n, T *a, int lda, T *w, int lw, \
                                      int *inf) {                                                                   \
            return cusolverDn##P##potrf(h, u, n, a, lda, w, lw, inf);                                               \
        }                                                                                                           \
        static cusolverStatus_t potrs(cusolverDnHandle_t h, cublasFillMode_t u, int n, int nrhs, T *a, int lda,     \
                                      T *b, int ldb, int *inf) {                                                    \
            return cusolverDn##P##potrs(h, u, n, nrhs, a, lda, b, ldb, inf);                                        \
        }                                                                                                           \
        static cusolverStatus_t geqrf_bs(cusolverDnHandle_t h, int m, int n, T *a, int lda, int *lw) {             \
            return cusolverDn##P##geqrf_bufferSize(h, m, n, a, lda, lw);                                            \
        }                                                                                                           \
        static cusolverStatus_t geqrf(cusolverDnHandle_t h, int m, int n, T *a, int lda, T *tau, T *w, int lw,      \
                                      int *inf) {                                                                   \
            return cusolverDn##P##geqrf(h, m, n, a, lda, tau, w, lw, inf);                                          \
        }                                                                                                           \
        static cusolverStatus_t ormqr_bs(cusolverDnHandle_t h, cublasSideMode_t s, cublasOperation_t op, int m,     \
                                         int n, int k, T *a, int lda, T *tau, T *c, int ldc, int *lw) {             \
            return cusolverDn##P##ORM##_bufferSize(h, s, op, m, n, k, a, lda, tau, c, ldc, lw);                     \
        }                                                                                                           \
        static cusolverStatus_t ormqr(cusolverDnHandle_t h, cublasSideMode_t s, cublasOperation_t op, int m, int n, \
                                      int k, T *a, int lda, T *tau, T *c, int ldc, T *w, int lw, int *inf) {        \
            return cusolverDn##P##ORM(h, s, op, m, n, k, a, lda, tau, c, ldc, w, lw, inf);                          \
        }                                                                                                           \
        static cusolverStatus_t orgqr_bs(cusolverDnHandle_t h, int m, int n, int k, T *a, int lda, T *tau, int *lw) { \
            return cusolverDn##P##ORG##_bufferSize(h, m, n, k, a, lda, tau, lw);                                    \
        }                                                                                                           \
        static cusolverStatus_t orgqr(cusolverDnHandle_t h, int m, int n, int k, T *a, int lda, T *tau, T *w,       \
                                      int lw, int *inf) {                                                           \
            return cusolverDn##P##ORG(h, m, n, k, a, lda, tau, w, lw, inf);                                         \
        }                                                                                                           \
        static cusolverStatus_t syevd_bs(cusolverDnHandle_t h, cusolverEigMode_t j, cublasFillMode_t u, int n,      \
                                         T *a, int lda, R *w, int *lw) {                                            \
            return cusolverDn##P##SYE##_bufferSize(h, j, u, n, a, lda, w, lw);                                      \
        }                                                                                                           \
        static cusolverStatus_t syevd(cusolverDnHandle_t h, cusolverEigMode_t j, cublasFillMode_t u, int n, T *a,   \
                                      int lda, R *w, T *work, int lw, int *inf) {                                   \
            return cusolverDn##P##SYE(h, j, u, n, a, lda, w, work, lw, inf);                                        \
        }                                                                                                           \
        static cusolverStatus_t gesvd_bs(cusolverDnHandle_t h, int m, int n, int *lw) {                             \
            return cusolverDn##P##gesvd_bufferSize(h, m, n, lw);                                                    \
        }                                                                                                           \
        static cusolverStatus_t gesvd(cusolverDnHandle_t h, signed char ju, signed char jv, int m, int n, T *a,     \
                                      int lda, R *s, T *u, int ldu, T *vt, int ldvt, T *w, int lw, int *inf) {      \
            return cusolverDn##P##gesvd(h, ju, jv, m, n, a, lda, s, u, ldu, vt, ldvt, w, lw, NULL, inf);            \
        }                                                                                                           \
        static cusolverStatus_t potrf_batched(cusolverDnHandle_t h, cublasFillMode_t u, int n, T **a, int lda,      \
                                              int *inf, int batch) {                                                \
            return cusolverDn##P##potrfBatched(h, u, n, a, lda, inf, batch);                                        \
        }                                                                                                           \
        static cusolverStatus_t potrs_batched(cusolverDnHandle_t h, cublasFillMode_t u, int n, int nrhs, T **a,     \
                                              int lda, T **b, int ldb, int *inf, int batch) {                       \
            return cusolverDn##P##potrsBatched(h, u, n, nrhs, a, lda, b, ldb, inf, batch);                          \
        }                                                                                                           \
        static cusolverStatus_t syevj_batched_bs(cusolverDnHandle_t h, cusolverEigMode_t j, cublasFillMode_t u,     \
                                                 int n, T *a, int lda, R *w, int *lw, syevjInfo_t p, int batch) {   \
            return cusolverDn##P##SYEJ##Batched_bufferSize(h, j, u, n, a, lda, w, lw, p, batch);                    \
        }                                                                                                           \
        static cusolverStatus_t syevj_batched(cusolverDnHandle_t h, cusolverEigMode_t j, cublasFillMode_t u, int n, \
                                              T *a, int lda, R *w, T *work, int lw, int *inf, syevjInfo_t p,        \
                                              int batch) {                                                          \
            return cusolverDn##P##SYEJ##Batched(h, j, u, n, a, lda, w, work, lw, inf, p, batch);                    \
        }                                                                                                           \
        static cusolverStatus_t gesvdj_bs(cusolverDnHandle_t h, cusolverEigMode_t j, int econ, int m, int n, T *a,  \
                                          int lda, R *s, T *u, int ldu, T *v, int ldv, int *lw, gesvdjInfo_t p) {   \
            return cusolverDn##P##gesvdj_bufferSize(h, j, econ, m, n, a, lda, s, u, ldu, v, ldv, lw, p);            \
        }                                                                                                           \
        static cusolverStatus_t gesvdj(cusolverDnHandle_t h, cusolverEigMode_t j, int econ, int m, int n, T *a,     \
                                       int lda, R *s, T *u, int ldu, T *v, int ldv, T *work, int lw, int *inf,      \
                                       gesvdjInfo_t p) {                                                            \
            return cusolverDn##P##gesvdj(h, j, econ, m, n, a, lda, s, u, ldu, v, ldv, work, lw, inf, p);            \
        }                                                                                                           \
        static cusolverStatus_t gesvdj_batched_bs(cusolverDnHandle_t h, cusolverEigMode_t j, int m, int n, T *a,    \
                                                  int lda, R *s, T *u, int ldu, T *v, int ldv, int *lw,             \
                                                  gesvdjInfo_t p, int batch) {                                      \
            return cusolverDn##P##gesvdjBatched_bufferSize(h, j, m, n, a, lda, s, u, ldu, v, ldv, lw, p, batch);    \
        }                                                                                                           \
        static cusolverStatus_t gesvdj_batched(cusolverDnHandle_t h, cusolverEigMode_t j, int m, int n, T *a,       \
                                               int lda, R *s, T *u, int ldu, T *v, int ldv, T *work, int lw,        \
                                               int *inf, gesvdjInfo_t p, int batch) {                               \
            return cusolverDn##P##gesvdjBatched(h, j, m, n, a, lda, s, u, ldu, v, ldv, work, lw, inf, p, batch);    \
        }                                                                                                           \
        static cusolverStatus_t gesvda_bs(cusolverDnHandle_t h, int rank, int m, int n, T *a, long long sa, R *s,   \
                                          long long ss, T *u, long long su, T *v, long long sv, int *lw, int b) {   \
            return cusolverDn##P##gesvdaStridedBatched_bufferSize(h, CUSOLVER_EIG_MODE_VECTOR, rank, m, n, a, m,    \
                                                                  sa, s, ss, u, m, su, v, n, sv, lw, b);            \
        }                                                                                                           \
        static cusolverStatus_t gesvda(cusolverDnHandle_t h, int rank, int m, int n, T *a, long long sa, R *s,      \
                                       long long ss, T *u, long long su, T *v, long long sv, T *work, int lw,       \
                                       int *inf, double *rnrm, int b) {                                             \
            return cusolverDn##P##gesvdaStridedBatched(h, CUSOLVER_EIG_MODE_VECTOR, rank, m, n, a, m, sa, s, ss, u, \
                                                       m, su, v, n, sv, work, lw, inf, rnrm, b);                    \
        }                                                                                                           \
    };
SOLVER_TYPE(float, float, S, ormqr, orgqr, syevd, syevj, false, 1e-6)
SOLVER_TYPE(double, double, D, ormqr, orgqr, syevd, syevj, false, 1e-15)
SOLVER_TYPE(cuComplex, float, C, unmqr, ungqr, heevd, heevj, true, 1e-6)
SOLVER_TYPE(cuDoubleComplex, double, Z, unmqr, ungqr, heevd, heevj, true, 1e-15)

// A column-major host matrix.
struct Mat {
    int rows, cols;
    std::vector<cd> v;
    Mat(int r, int c) : rows(r), cols(c), v((size_t)r * c) {}
    cd &operator()(int i, int j) { return v[(size_t)j * rows + i]; }
    cd operator()(int i, int j) const { return v[(size_t)j * rows + i]; }
};

static Mat mul(const Mat &a, const Mat &b) {
    Mat c(a.rows, b.cols);
    for (int j = 0; j < b.cols; j++)
        for (int k = 0; k < a.cols; k++)
            for (int i = 0; i < a.rows; i++) c(i, j) += a(i, k) * b(k, j);
    return c;
}

static Mat adjoint(const Mat &a) {
    Mat t(a.cols, a.rows);
    for (int j = 0; j < a.cols; j++)
        for (int i = 0; i < a.rows; i++) t(j, i) = std::conj(a(i, j));
    return t;
}

static double norm(const Mat &a) {
    double s = 0;
    for (const cd &z : a.v) s += std::norm(z);
    return std::sqrt(s);
}

static double diff(const Mat &a, const Mat &b) {
    double s = 0;
    for (size_t i = 0; i < a.v.size(); i++) s += std::norm(a.v[i] - b.v[i]);
    return std::sqrt(s);
}

static unsigned long long lcg_state = 12345;
static double next_random() {
    lcg_state = lcg_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(lcg_state >> 11) / (double)(1ULL << 53) * 2.0 - 1.0;
}

template <typename T> Mat random_mat(int r, int c) {
    Mat m(r, c);
    for (cd &z : m.v) z = cd(next_random(), Sol<T>::complex ? next_random() : 0.0);
    return m;
}

// Stores `m` as T (rounding it, so the host reference sees the same values).
template <typename T> T *upload(Mat &m) {
    std::vector<T> h(m.v.size());
    for (size_t i = 0; i < h.size(); i++) {
        h[i] = from_c<T>(m.v[i]);
        m.v[i] = to_c(h[i]);
    }
    T *d;
    CHECK(cudaMalloc(&d, h.size() * sizeof(T) + 16));
    CHECK(cudaMemcpy(d, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice));
    return d;
}

template <typename T> Mat download(const T *d, int rows, int cols, int ld) {
    std::vector<T> h((size_t)ld * cols);
    CHECK(cudaMemcpy(h.data(), d, h.size() * sizeof(T), cudaMemcpyDeviceToHost));
    Mat m(rows, cols);
    for (int j = 0; j < cols; j++)
        for (int i = 0; i < rows; i++) m(i, j) = to_c(h[(size_t)j * ld + i]);
    return m;
}

template <typename R> std::vector<double> download_reals(const R *d, int n) {
    std::vector<R> h(n);
    CHECK(cudaMemcpy(h.data(), d, n * sizeof(R), cudaMemcpyDeviceToHost));
    return std::vector<double>(h.begin(), h.end());
}

static int read_info(const int *d) {
    int h = -1;
    CHECK(cudaMemcpy(&h, d, sizeof(int), cudaMemcpyDeviceToHost));
    return h;
}

template <typename T> T *workspace(int lwork) {
    T *w;
    CHECK(cudaMalloc(&w, (size_t)lwork * sizeof(T)));
    return w;
}

// Relative residual bounds: a small multiple of the unit roundoff times n.
template <typename T> double tol(int n) { return 50.0 * n * Sol<T>::eps(); }

template <typename T> void test_lu(cusolverDnHandle_t h, int *info) {
    const int n = 5, nrhs = 2;
    Mat a = random_mat<T>(n, n), b = random_mat<T>(n, nrhs);
    T *da = upload<T>(a), *db = upload<T>(b);
    int lwork = 0, *ipiv;
    SOLVER(Sol<T>::getrf_bs(h, n, n, da, n, &lwork));
    T *work = workspace<T>(lwork);
    CHECK(cudaMalloc(&ipiv, n * sizeof(int)));
    SOLVER(Sol<T>::getrf(h, n, n, da, n, work, ipiv, info));
    EXPECT(read_info(info) == 0, "%s getrf info %d", Sol<T>::name(), read_info(info));
    cublasOperation_t ops[3] = {CUBLAS_OP_N, CUBLAS_OP_T, CUBLAS_OP_C};
    for (int o = 0; o < 3; o++) {
        T *dx = upload<T>(b);
        SOLVER(Sol<T>::getrs(h, ops[o], n, nrhs, da, n, ipiv, dx, n, info));
        Mat x = download<T>(dx, n, nrhs, n);
        Mat opa = a;
        if (o >= 1) {
            opa = adjoint(a);
            if (o == 1)
                for (cd &z : opa.v) z = std::conj(z);
        }
        double r = diff(mul(opa, x), b) / (norm(a) * norm(x));
        EXPECT(read_info(info) == 0 && r < tol<T>(n), "%s getrs op %d residual %g", Sol<T>::name(), o, r);
        CHECK(cudaFree(dx));
    }
    // An 8x3 LU: P A = L U with L unit lower trapezoidal.
    Mat r = random_mat<T>(8, 3);
    T *dr = upload<T>(r);
    SOLVER(Sol<T>::getrf(h, 8, 3, dr, 8, work, ipiv, info));
    Mat lu = download<T>(dr, 8, 3, 8);
    std::vector<int> piv(3);
    CHECK(cudaMemcpy(piv.data(), ipiv, 3 * sizeof(int), cudaMemcpyDeviceToHost));
    Mat l(8, 3), u(3, 3);
    for (int j = 0; j < 3; j++)
        for (int i = 0; i < 8; i++) {
            if (i > j) l(i, j) = lu(i, j);
            if (i == j) l(i, j) = 1.0;
            if (i <= j) u(i, j) = lu(i, j);
        }
    Mat pa = r;
    for (int i = 0; i < 3; i++) {
        EXPECT(piv[i] >= i + 1 && piv[i] <= 8, "%s ipiv[%d] = %d", Sol<T>::name(), i, piv[i]);
        for (int j = 0; j < 3; j++) std::swap(pa(i, j), pa(piv[i] - 1, j));
    }
    double res = diff(mul(l, u), pa) / norm(r);
    EXPECT(res < tol<T>(8), "%s getrf 8x3 residual %g", Sol<T>::name(), res);
    printf("%s getrf/getrs: ok\n", Sol<T>::name());
    CHECK(cudaFree(da));
    CHECK(cudaFree(db));
    CHECK(cudaFree(dr));
    CHECK(cudaFree(work));
    CHECK(cudaFree(ipiv));
}

template <typename T> Mat positive_definite(int n) {
    Mat b = random_mat<T>(n, n);
    Mat a = mul(b, adjoint(b));
    for (int i = 0; i < n; i++) a(i, i) = cd(a(i, i).real() + n, 0);
    return a;
}

template <typename T> void test_cholesky(cusolverDnHandle_t h, int *info) {
    const int n = 5, nrhs = 3;
    cublasFillMode_t fills[2] = {CUBLAS_FILL_MODE_LOWER, CUBLAS_FILL_MODE_UPPER};
    for (int f = 0; f < 2; f++) {
        Mat a = positive_definite<T>(n), b = random_mat<T>(n, nrhs);
        T *da = upload<T>(a), *db = upload<T>(b);
        int lwork = 0;
        SOLVER(Sol<T>::potrf_bs(h, fills[f], n, da, n, &lwork));
        T *work = workspace<T>(lwork);
        SOLVER(Sol<T>::potrf(h, fills[f], n, da, n, work, lwork, info));
        EXPECT(read_info(info) == 0, "%s potrf info %d", Sol<T>::name(), read_info(info));
        SOLVER(Sol<T>::potrs(h, fills[f], n, nrhs, da, n, db, n, info));
        Mat x = download<T>(db, n, nrhs, n);
        double r = diff(mul(a, x), b) / (norm(a) * norm(x));
        EXPECT(r < tol<T>(n), "%s potrs fill %d residual %g", Sol<T>::name(), f, r);
        // An indefinite matrix: the third leading minor is not positive.
        Mat bad = positive_definite<T>(n);
        bad(2, 2) = cd(-1000.0, 0);
        T *dbad = upload<T>(bad);
        SOLVER(Sol<T>::potrf(h, fills[f], n, dbad, n, work, lwork, info));
        EXPECT(read_info(info) == 3, "%s potrf of an indefinite matrix: info %d", Sol<T>::name(),
               read_info(info));
        CHECK(cudaFree(da));
        CHECK(cudaFree(db));
        CHECK(cudaFree(dbad));
        CHECK(cudaFree(work));
    }
    printf("%s potrf/potrs: ok\n", Sol<T>::name());
}

template <typename T> void test_qr(cusolverDnHandle_t h, int *info) {
    const int m = 8, n = 3;
    Mat a = random_mat<T>(m, n);
    T *da = upload<T>(a);
    T *tau = workspace<T>(n);
    int lwork = 0, lwork2 = 0;
    SOLVER(Sol<T>::geqrf_bs(h, m, n, da, m, &lwork));
    cublasOperation_t adj = Sol<T>::complex ? CUBLAS_OP_C : CUBLAS_OP_T;
    Mat c0 = a;
    T *dc = upload<T>(c0);
    SOLVER(Sol<T>::ormqr_bs(h, CUBLAS_SIDE_LEFT, adj, m, n, n, da, m, tau, dc, m, &lwork2));
    T *work = workspace<T>(lwork > lwork2 ? lwork : lwork2);
    SOLVER(Sol<T>::geqrf(h, m, n, da, m, tau, work, lwork, info));
    EXPECT(read_info(info) == 0, "%s geqrf info", Sol<T>::name());
    // Qᴴ A = R: R in the upper triangle of geqrf's output, zeros below.
    SOLVER(Sol<T>::ormqr(h, CUBLAS_SIDE_LEFT, adj, m, n, n, da, m, tau, dc, m, work, lwork2, info));
    Mat qr = download<T>(da, m, n, m), qha = download<T>(dc, m, n, m);
    Mat rr(m, n);
    for (int j = 0; j < n; j++)
        for (int i = 0; i <= j; i++) rr(i, j) = qr(i, j);
    double r1 = diff(qha, rr) / norm(a);
    // Q R = A.
    T *dr = upload<T>(rr);
    SOLVER(Sol<T>::ormqr(h, CUBLAS_SIDE_LEFT, CUBLAS_OP_N, m, n, n, da, m, tau, dr, m, work, lwork2, info));
    double r2 = diff(download<T>(dr, m, n, m), a) / norm(a);
    EXPECT(r1 < tol<T>(m) && r2 < tol<T>(m), "%s QR residuals %g %g", Sol<T>::name(), r1, r2);
    // orgqr: Q's first n columns in A, Q R = A with R's top n rows.
    int lwork3 = 0;
    SOLVER(Sol<T>::orgqr_bs(h, m, n, n, da, m, tau, &lwork3));
    T *work3 = workspace<T>(lwork3);
    SOLVER(Sol<T>::orgqr(h, m, n, n, da, m, tau, work3, lwork3, info));
    Mat q = download<T>(da, m, n, m), r3(n, n);
    for (int j = 0; j < n; j++)
        for (int i = 0; i <= j; i++) r3(i, j) = rr(i, j);
    double r4 = diff(mul(q, r3), a) / norm(a);
    EXPECT(read_info(info) == 0 && r4 < tol<T>(m), "%s orgqr residual %g", Sol<T>::name(), r4);
    CHECK(cudaFree(work3));
    printf("%s geqrf/%s/%s: ok\n", Sol<T>::name(), Sol<T>::complex ? "unmqr" : "ormqr",
           Sol<T>::complex ? "ungqr" : "orgqr");
    CHECK(cudaFree(da));
    CHECK(cudaFree(dc));
    CHECK(cudaFree(dr));
    CHECK(cudaFree(tau));
    CHECK(cudaFree(work));
}

template <typename T> void test_eig(cusolverDnHandle_t h, int *info) {
    typedef typename Sol<T>::Real R;
    const int n = 5;
    Mat b = random_mat<T>(n, n);
    Mat a = mul(b, adjoint(b));
    for (int i = 0; i < n; i++) a(i, i) = cd(a(i, i).real() - 1.0, 0);
    T *da = upload<T>(a);
    R *w;
    CHECK(cudaMalloc(&w, n * sizeof(R)));
    int lwork = 0;
    SOLVER(Sol<T>::syevd_bs(h, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_LOWER, n, da, n, w, &lwork));
    T *work = workspace<T>(lwork);
    SOLVER(Sol<T>::syevd(h, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_LOWER, n, da, n, w, work, lwork, info));
    EXPECT(read_info(info) == 0, "%s syevd info", Sol<T>::name());
    std::vector<double> lambda = download_reals<R>(w, n);
    Mat v = download<T>(da, n, n, n), vl = v;
    for (int j = 0; j < n; j++) {
        if (j > 0) EXPECT(lambda[j - 1] <= lambda[j], "%s eigenvalues not ascending", Sol<T>::name());
        for (int i = 0; i < n; i++) vl(i, j) *= lambda[j];
    }
    double r = diff(mul(a, v), vl) / norm(a);
    Mat eye(n, n);
    for (int i = 0; i < n; i++) eye(i, i) = 1.0;
    double o = diff(mul(adjoint(v), v), eye);
    EXPECT(r < tol<T>(n) && o < tol<T>(n), "%s ||AV - VL|| %g, ||VᴴV - I|| %g", Sol<T>::name(), r, o);
    printf("%s %s: ok\n", Sol<T>::name(), Sol<T>::complex ? "heevd" : "syevd");
    CHECK(cudaFree(da));
    CHECK(cudaFree(w));
    CHECK(cudaFree(work));
}

template <typename T> void test_svd(cusolverDnHandle_t h, int *info) {
    typedef typename Sol<T>::Real R;
    const int m = 8, n = 3;
    Mat a = random_mat<T>(m, n);
    T *da = upload<T>(a);
    R *s;
    T *u = workspace<T>(m * m), *vt = workspace<T>(n * n);
    CHECK(cudaMalloc(&s, n * sizeof(R)));
    int lwork = 0;
    SOLVER(Sol<T>::gesvd_bs(h, m, n, &lwork));
    T *work = workspace<T>(lwork);
    SOLVER(Sol<T>::gesvd(h, 'A', 'A', m, n, da, m, s, u, m, vt, n, work, lwork, info));
    EXPECT(read_info(info) == 0, "%s gesvd info", Sol<T>::name());
    std::vector<double> sigma = download_reals<R>(s, n);
    Mat uu = download<T>(u, m, m, m), vv = download<T>(vt, n, n, n);
    Mat us(m, n);
    for (int j = 0; j < n; j++) {
        if (j > 0) EXPECT(sigma[j - 1] >= sigma[j], "%s singular values not descending", Sol<T>::name());
        for (int i = 0; i < m; i++) us(i, j) = uu(i, j) * sigma[j];
    }
    double r = diff(mul(us, vv), a) / norm(a);
    Mat eye(m, m);
    for (int i = 0; i < m; i++) eye(i, i) = 1.0;
    double o = diff(mul(adjoint(uu), uu), eye);
    EXPECT(r < tol<T>(m) && o < tol<T>(m), "%s ||A - USVᵀ|| %g, ||UᴴU - I|| %g", Sol<T>::name(), r, o);
    printf("%s gesvd: ok\n", Sol<T>::name());
    CHECK(cudaFree(da));
    CHECK(cudaFree(s));
    CHECK(cudaFree(u));
    CHECK(cudaFree(vt));
    CHECK(cudaFree(work));
}

// potrfBatched and potrsBatched: three matrices named by a device array of
// pointers, the second indefinite (its own info says so).
template <typename T> void test_cholesky_batched(cusolverDnHandle_t h) {
    const int n = 4, batch = 3;
    Mat a[batch] = {positive_definite<T>(n), positive_definite<T>(n), positive_definite<T>(n)};
    a[1](1, 1) = cd(-1000.0, 0);
    Mat b[batch] = {random_mat<T>(n, 1), random_mat<T>(n, 1), random_mat<T>(n, 1)};
    T *da[batch], *db[batch];
    for (int k = 0; k < batch; k++) {
        da[k] = upload<T>(a[k]);
        db[k] = upload<T>(b[k]);
    }
    T **darr, **brr;
    int *infos;
    CHECK(cudaMalloc(&darr, sizeof da));
    CHECK(cudaMalloc(&brr, sizeof db));
    CHECK(cudaMalloc(&infos, batch * sizeof(int)));
    CHECK(cudaMemcpy(darr, da, sizeof da, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(brr, db, sizeof db, cudaMemcpyHostToDevice));
    SOLVER(Sol<T>::potrf_batched(h, CUBLAS_FILL_MODE_LOWER, n, darr, n, infos, batch));
    int got[batch];
    CHECK(cudaMemcpy(got, infos, sizeof got, cudaMemcpyDeviceToHost));
    EXPECT(got[0] == 0 && got[1] == 2 && got[2] == 0, "%s potrfBatched infos %d %d %d", Sol<T>::name(), got[0],
           got[1], got[2]);
    // Solve with matrices 0 and 2 only; nrhs other than 1 is refused.
    T *two[2] = {da[0], da[2]}, *rhs[2] = {db[0], db[2]};
    CHECK(cudaMemcpy(darr, two, sizeof two, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(brr, rhs, sizeof rhs, cudaMemcpyHostToDevice));
    EXPECT_STATUS(Sol<T>::potrs_batched(h, CUBLAS_FILL_MODE_LOWER, n, 2, darr, n, brr, n, infos, 2),
                  CUSOLVER_STATUS_INVALID_VALUE);
    SOLVER(Sol<T>::potrs_batched(h, CUBLAS_FILL_MODE_LOWER, n, 1, darr, n, brr, n, infos, 2));
    for (int k = 0; k < 3; k += 2) {
        Mat x = download<T>(db[k], n, 1, n);
        double r = diff(mul(a[k], x), b[k]) / (norm(a[k]) * norm(x));
        EXPECT(r < tol<T>(n), "%s potrsBatched matrix %d residual %g", Sol<T>::name(), k, r);
    }
    printf("%s potrfBatched/potrsBatched: ok\n", Sol<T>::name());
    for (int k = 0; k < batch; k++) {
        CHECK(cudaFree(da[k]));
        CHECK(cudaFree(db[k]));
    }
    CHECK(cudaFree(darr));
    CHECK(cudaFree(brr));
    CHECK(cudaFree(infos));
}

// ||A V - V diag(w)|| of one eigendecomposition, relative to ||A||.
static double eig_residual(const Mat &a, const Mat &v, const double *w) {
    Mat vl = v;
    for (int j = 0; j < v.cols; j++)
        for (int i = 0; i < v.rows; i++) vl(i, j) *= w[j];
    return diff(mul(a, v), vl) / norm(a);
}

// syevjBatched / heevjBatched on matrices stored back to back, with a
// syevjInfo_t's settings.
template <typename T> void test_syevj_batched(cusolverDnHandle_t h) {
    typedef typename Sol<T>::Real R;
    const int n = 5, batch = 3;
    Mat all(n, n * batch);
    std::vector<Mat> a;
    for (int k = 0; k < batch; k++) {
        Mat b = random_mat<T>(n, n);
        a.push_back(mul(b, adjoint(b)));
        for (int j = 0; j < n; j++)
            for (int i = 0; i < n; i++) all(i, k * n + j) = a[k](i, j);
    }
    T *da = upload<T>(all);
    for (int k = 0; k < batch; k++)
        for (int j = 0; j < n; j++)
            for (int i = 0; i < n; i++) a[k](i, j) = all(i, k * n + j);
    R *w;
    int *infos, lwork = 0;
    CHECK(cudaMalloc(&w, n * batch * sizeof(R)));
    CHECK(cudaMalloc(&infos, batch * sizeof(int)));
    syevjInfo_t params;
    SOLVER(cusolverDnCreateSyevjInfo(&params));
    SOLVER(cusolverDnXsyevjSetTolerance(params, 1e-7));
    SOLVER(cusolverDnXsyevjSetMaxSweeps(params, 50));
    SOLVER(cusolverDnXsyevjSetSortEig(params, 1));
    EXPECT_STATUS(cusolverDnXsyevjSetMaxSweeps(params, 0), CUSOLVER_STATUS_INVALID_VALUE);
    SOLVER(Sol<T>::syevj_batched_bs(h, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_UPPER, n, da, n, w, &lwork, params,
                                    batch));
    T *work = workspace<T>(lwork);
    SOLVER(Sol<T>::syevj_batched(h, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_UPPER, n, da, n, w, work, lwork,
                                 infos, params, batch));
    std::vector<double> lambda = download_reals<R>(w, n * batch);
    Mat v = download<T>(da, n, n * batch, n);
    int got[batch];
    CHECK(cudaMemcpy(got, infos, sizeof got, cudaMemcpyDeviceToHost));
    for (int k = 0; k < batch; k++) {
        EXPECT(got[k] == 0, "%s syevjBatched info[%d] %d", Sol<T>::name(), k, got[k]);
        Mat vk(n, n);
        for (int j = 0; j < n; j++)
            for (int i = 0; i < n; i++) vk(i, j) = v(i, k * n + j);
        for (int j = 1; j < n; j++)
            EXPECT(lambda[k * n + j - 1] <= lambda[k * n + j], "%s eigenvalues not ascending", Sol<T>::name());
        double r = eig_residual(a[k], vk, &lambda[k * n]);
        EXPECT(r < tol<T>(n), "%s syevjBatched matrix %d residual %g", Sol<T>::name(), k, r);
    }
    // syevjBatched takes n <= 32 only.
    EXPECT_STATUS(Sol<T>::syevj_batched(h, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_UPPER, 33, da, 33, w, work,
                                        lwork, infos, params, 1),
                  CUSOLVER_STATUS_INVALID_VALUE);
    SOLVER(cusolverDnDestroySyevjInfo(params));
    printf("%s %sBatched: ok\n", Sol<T>::name(), Sol<T>::complex ? "heevj" : "syevj");
    CHECK(cudaFree(da));
    CHECK(cudaFree(w));
    CHECK(cudaFree(infos));
    CHECK(cudaFree(work));
}

// ||A - U S Vᴴ|| / ||A|| with U m×k, V n×k.
static double svd_residual(const Mat &a, const Mat &u, const double *s, const Mat &v, int k) {
    Mat us(a.rows, k), vk(a.cols, k);
    for (int j = 0; j < k; j++) {
        for (int i = 0; i < a.rows; i++) us(i, j) = u(i, j) * s[j];
        for (int i = 0; i < a.cols; i++) vk(i, j) = v(i, j);
    }
    return diff(mul(us, adjoint(vk)), a) / norm(a);
}

// gesvdj (full and economy, tall and wide) and gesvdjBatched.
template <typename T> void test_gesvdj(cusolverDnHandle_t h, int *info) {
    typedef typename Sol<T>::Real R;
    gesvdjInfo_t params;
    SOLVER(cusolverDnCreateGesvdjInfo(&params));
    SOLVER(cusolverDnXgesvdjSetTolerance(params, 1e-7));
    const int shapes[4][3] = {{6, 3, 0}, {3, 6, 0}, {6, 3, 1}, {3, 6, 1}};
    for (const auto &shape : shapes) {
        int m = shape[0], n = shape[1], econ = shape[2], k = m < n ? m : n;
        int ucols = econ ? k : m, vcols = econ ? k : n;
        Mat a = random_mat<T>(m, n);
        T *da = upload<T>(a), *u = workspace<T>(m * ucols), *v = workspace<T>(n * vcols);
        R *s;
        CHECK(cudaMalloc(&s, k * sizeof(R)));
        int lwork = 0;
        SOLVER(Sol<T>::gesvdj_bs(h, CUSOLVER_EIG_MODE_VECTOR, econ, m, n, da, m, s, u, m, v, n, &lwork, params));
        T *work = workspace<T>(lwork);
        SOLVER(Sol<T>::gesvdj(h, CUSOLVER_EIG_MODE_VECTOR, econ, m, n, da, m, s, u, m, v, n, work, lwork, info,
                              params));
        EXPECT(read_info(info) == 0, "%s gesvdj info", Sol<T>::name());
        std::vector<double> sigma = download_reals<R>(s, k);
        double r = svd_residual(a, download<T>(u, m, ucols, m), sigma.data(), download<T>(v, n, vcols, n), k);
        EXPECT(r < tol<T>(m + n), "%s gesvdj %dx%d econ %d residual %g", Sol<T>::name(), m, n, econ, r);
        CHECK(cudaFree(da));
        CHECK(cudaFree(u));
        CHECK(cudaFree(v));
        CHECK(cudaFree(s));
        CHECK(cudaFree(work));
    }
    // Batched: two 4×3 matrices back to back, full U and V.
    const int m = 4, n = 3, batch = 2;
    Mat all = random_mat<T>(m, n * batch);
    T *da = upload<T>(all), *u = workspace<T>(m * m * batch), *v = workspace<T>(n * n * batch);
    R *s;
    int *infos, lwork = 0;
    CHECK(cudaMalloc(&s, n * batch * sizeof(R)));
    CHECK(cudaMalloc(&infos, batch * sizeof(int)));
    SOLVER(Sol<T>::gesvdj_batched_bs(h, CUSOLVER_EIG_MODE_VECTOR, m, n, da, m, s, u, m, v, n, &lwork, params, batch));
    T *work = workspace<T>(lwork);
    SOLVER(Sol<T>::gesvdj_batched(h, CUSOLVER_EIG_MODE_VECTOR, m, n, da, m, s, u, m, v, n, work, lwork, infos, params,
                                  batch));
    std::vector<double> sigma = download_reals<R>(s, n * batch);
    Mat uu = download<T>(u, m, m * batch, m), vv = download<T>(v, n, n * batch, n);
    for (int b = 0; b < batch; b++) {
        Mat ab(m, n), ub(m, m), vb(n, n);
        for (int j = 0; j < n; j++)
            for (int i = 0; i < m; i++) ab(i, j) = all(i, b * n + j);
        for (int j = 0; j < m; j++)
            for (int i = 0; i < m; i++) ub(i, j) = uu(i, b * m + j);
        for (int j = 0; j < n; j++)
            for (int i = 0; i < n; i++) vb(i, j) = vv(i, b * n + j);
        double r = svd_residual(ab, ub, &sigma[b * n], vb, n);
        EXPECT(r < tol<T>(m + n), "%s gesvdjBatched matrix %d residual %g", Sol<T>::name(), b, r);
    }
    // gesvdjBatched takes m, n <= 32 only.
    EXPECT_STATUS(Sol<T>::gesvdj_batched(h, CUSOLVER_EIG_MODE_VECTOR, 40, 2, da, 40, s, u, 40, v, 2, work, lwork,
                                         infos, params, 1),
                  CUSOLVER_STATUS_INVALID_VALUE);
    SOLVER(cusolverDnDestroyGesvdjInfo(params));
    printf("%s gesvdj/gesvdjBatched: ok\n", Sol<T>::name());
    CHECK(cudaFree(da));
    CHECK(cudaFree(u));
    CHECK(cudaFree(v));
    CHECK(cudaFree(s));
    CHECK(cudaFree(infos));
    CHECK(cudaFree(work));
}

// gesvdaStridedBatched: the leading `rank` singular triplets of tall
// matrices with strides of their own, and ||A - U S Vᴴ||_F on the host.
template <typename T> void test_gesvda(cusolverDnHandle_t h) {
    typedef typename Sol<T>::Real R;
    const int m = 7, n = 4, rank = 3, batch = 3;
    const long long sa = m * n + 3, ss = rank + 1, su = m * rank, sv = n * rank;
    Mat all = random_mat<T>((int)sa, batch);  // column b holds matrix b
    T *da = upload<T>(all), *u = workspace<T>((int)su * batch), *v = workspace<T>((int)sv * batch);
    R *s;
    int *infos, lwork = 0;
    CHECK(cudaMalloc(&s, ss * batch * sizeof(R)));
    CHECK(cudaMalloc(&infos, batch * sizeof(int)));
    SOLVER(Sol<T>::gesvda_bs(h, rank, m, n, da, sa, s, ss, u, su, v, sv, &lwork, batch));
    T *work = workspace<T>(lwork);
    double rnrm[batch];
    SOLVER(Sol<T>::gesvda(h, rank, m, n, da, sa, s, ss, u, su, v, sv, work, lwork, infos, rnrm, batch));
    std::vector<int> h_info(batch);
    CHECK(cudaMemcpy(h_info.data(), infos, batch * sizeof(int), cudaMemcpyDeviceToHost));
    std::vector<double> sigma = download_reals<R>(s, (int)ss * batch);
    Mat uu = download<T>(u, m, rank * batch, m), vv = download<T>(v, n, rank * batch, n);
    for (int b = 0; b < batch; b++) {
        Mat ab(m, n), ub(m, rank), vb(n, rank);
        for (int j = 0; j < n; j++)
            for (int i = 0; i < m; i++) ab(i, j) = all(j * m + i, b);
        for (int j = 0; j < rank; j++) {
            for (int i = 0; i < m; i++) ub(i, j) = uu(i, b * rank + j);
            for (int i = 0; i < n; i++) vb(i, j) = vv(i, b * rank + j);
        }
        const double *sb = &sigma[b * ss];
        EXPECT(h_info[b] == 0, "%s gesvda info %d", Sol<T>::name(), h_info[b]);
        EXPECT(sb[0] >= sb[1] && sb[1] >= sb[2] && sb[2] > 0, "%s gesvda order", Sol<T>::name());
        // U S Vᴴ of rank 3 leaves out the 4th singular value: the residual
        // the host got is that value, and what U and V give agrees.
        Mat us(m, rank);
        for (int j = 0; j < rank; j++)
            for (int i = 0; i < m; i++) us(i, j) = ub(i, j) * sb[j];
        double r = diff(mul(us, adjoint(vb)), ab);
        EXPECT(fabs(r - rnrm[b]) < tol<T>(m + n) * norm(ab), "%s gesvda residual %g, host %g", Sol<T>::name(), r,
               rnrm[b]);
        Mat utu = mul(adjoint(ub), ub);
        for (int j = 0; j < rank; j++) utu(j, j) -= 1.0;
        EXPECT(norm(utu) < tol<T>(m), "%s gesvda U not orthonormal", Sol<T>::name());
    }
    // rank above n, a stride shorter than one matrix, a wide matrix.
    EXPECT_STATUS(Sol<T>::gesvda(h, n + 1, m, n, da, sa, s, ss, u, su, v, sv, work, lwork, infos, rnrm, batch),
                  CUSOLVER_STATUS_INVALID_VALUE);
    EXPECT_STATUS(Sol<T>::gesvda(h, rank, m, n, da, m, s, ss, u, su, v, sv, work, lwork, infos, rnrm, batch),
                  CUSOLVER_STATUS_INVALID_VALUE);
    EXPECT_STATUS(Sol<T>::gesvda(h, 2, 2, 3, da, sa, s, ss, u, su, v, sv, work, lwork, infos, rnrm, 1),
                  CUSOLVER_STATUS_INVALID_VALUE);
    printf("%s gesvdaStridedBatched: ok\n", Sol<T>::name());
    CHECK(cudaFree(da));
    CHECK(cudaFree(u));
    CHECK(cudaFree(v));
    CHECK(cudaFree(s));
    CHECK(cudaFree(infos));
    CHECK(cudaFree(work));
}

// cusolverDnXgeev (the 64-bit API's general eigensolver): left and right
// eigenvectors of a non-symmetric matrix. A real matrix's vectors come in
// LAPACK's real storage: a conjugate pair's columns j, j+1 hold the real and
// imaginary parts of eigenvalue j's vector; its W is complex or 2n reals.
template <typename T> cudaDataType data_type();
template <> cudaDataType data_type<float>() { return CUDA_R_32F; }
template <> cudaDataType data_type<double>() { return CUDA_R_64F; }
template <> cudaDataType data_type<cuComplex>() { return CUDA_C_32F; }
template <> cudaDataType data_type<cuDoubleComplex>() { return CUDA_C_64F; }

template <typename R> std::vector<cd> download_complex(const void *d, int n) {
    std::vector<R> h(2 * (size_t)n);
    CHECK(cudaMemcpy(h.data(), d, h.size() * sizeof(R), cudaMemcpyDeviceToHost));
    std::vector<cd> z(n);
    for (int i = 0; i < n; i++) z[i] = cd(h[2 * i], h[2 * i + 1]);
    return z;
}

// Complex eigenvectors from LAPACK's real storage of a real matrix's.
static Mat assemble_vectors(const Mat &v, const std::vector<cd> &w) {
    int n = v.rows;
    Mat out(n, n);
    for (int j = 0; j < n; j++) {
        if (w[j].imag() == 0) {
            for (int i = 0; i < n; i++) out(i, j) = v(i, j);
        } else {
            EXPECT(j + 1 < n && w[j + 1] == std::conj(w[j]) && w[j].imag() > 0,
                   "eigenvalue %d (%g%+gi) is not the first of an exact conjugate pair", j, w[j].real(),
                   w[j].imag());
            for (int i = 0; i < n; i++) {
                out(i, j) = cd(v(i, j).real(), v(i, j + 1).real());
                out(i, j + 1) = std::conj(out(i, j));
            }
            j++;
        }
    }
    return out;
}

template <typename T> void test_geev(cusolverDnHandle_t h, int *info) {
    typedef typename Sol<T>::Real R;
    const int n = 7;
    Mat a = random_mat<T>(n, n);
    T *da = upload<T>(a), *vl = workspace<T>(n * n), *vr = workspace<T>(n * n);
    void *w;
    CHECK(cudaMalloc(&w, 2 * n * sizeof(R)));
    cudaDataType ta = data_type<T>();
    cudaDataType tw = Sol<T>::complex ? ta : (ta == CUDA_R_32F ? CUDA_C_32F : CUDA_C_64F);
    cusolverDnParams_t params;
    SOLVER(cusolverDnCreateParams(&params));
    size_t device_bytes = 0, host_bytes = 0;
    SOLVER(cusolverDnXgeev_bufferSize(h, params, CUSOLVER_EIG_MODE_VECTOR, CUSOLVER_EIG_MODE_VECTOR, n, ta, da, n,
                                      tw, w, ta, vl, n, ta, vr, n, ta, &device_bytes, &host_bytes));
    void *dwork, *hwork = malloc(host_bytes + 1);
    CHECK(cudaMalloc(&dwork, device_bytes));
    SOLVER(cusolverDnXgeev(h, params, CUSOLVER_EIG_MODE_VECTOR, CUSOLVER_EIG_MODE_VECTOR, n, ta, da, n, tw, w, ta, vl,
                           n, ta, vr, n, ta, dwork, device_bytes, hwork, host_bytes, info));
    EXPECT(read_info(info) == 0, "%s Xgeev: info %d", Sol<T>::name(), read_info(info));
    std::vector<cd> values = download_complex<R>(w, n);
    Mat right = download<T>(vr, n, n, n), left = download<T>(vl, n, n, n);
    if (!Sol<T>::complex) {
        right = assemble_vectors(right, values);
        left = assemble_vectors(left, values);
    }
    Mat lambda(n, n);
    for (int i = 0; i < n; i++) lambda(i, i) = values[i];
    double r = diff(mul(a, right), mul(right, lambda)) / norm(a);
    double l = diff(mul(adjoint(left), a), mul(lambda, adjoint(left))) / norm(a);
    EXPECT(r < tol<T>(n) && l < tol<T>(n), "%s Xgeev residuals: right %g, left %g", Sol<T>::name(), r, l);
    for (int j = 0; j < n; j++) {
        double s = 0;
        for (int i = 0; i < n; i++) s += std::norm(right(i, j));
        EXPECT(std::fabs(std::sqrt(s) - 1) < tol<T>(n), "%s Xgeev: vector %d has norm %g", Sol<T>::name(), j,
               std::sqrt(s));
    }
    if (!Sol<T>::complex) {
        // W as 2n reals (all types real): real parts, then imaginary parts.
        Mat again = a;
        T *db = upload<T>(again);
        SOLVER(cusolverDnXgeev(h, params, CUSOLVER_EIG_MODE_NOVECTOR, CUSOLVER_EIG_MODE_NOVECTOR, n, ta, db, n, ta, w,
                               ta, NULL, 1, ta, NULL, 1, ta, dwork, device_bytes, hwork, host_bytes, info));
        std::vector<double> parts = download_reals<R>((const R *)w, 2 * n);
        for (int i = 0; i < n; i++)
            EXPECT(parts[i] == values[i].real() && parts[n + i] == values[i].imag(),
                   "%s Xgeev: W as reals differs at %d", Sol<T>::name(), i);
        CHECK(cudaFree(db));
    }
    // Types that do not go together, and a too-small leading dimension.
    EXPECT_STATUS(cusolverDnXgeev(h, params, CUSOLVER_EIG_MODE_NOVECTOR, CUSOLVER_EIG_MODE_VECTOR, n, ta, da, n, tw, w,
                                  ta, vl, n, ta, vr, n - 1, ta, dwork, device_bytes, hwork, host_bytes, info),
                  CUSOLVER_STATUS_INVALID_VALUE);
    EXPECT_STATUS(cusolverDnXgeev(h, params, CUSOLVER_EIG_MODE_NOVECTOR, CUSOLVER_EIG_MODE_VECTOR, n, ta, da, n, tw, w,
                                  ta, vl, n, CUDA_R_16F, vr, n, ta, dwork, device_bytes, hwork, host_bytes, info),
                  CUSOLVER_STATUS_INVALID_VALUE);
    SOLVER(cusolverDnDestroyParams(params));
    printf("%s Xgeev: ok\n", Sol<T>::name());
    free(hwork);
    CHECK(cudaFree(dwork));
    CHECK(cudaFree(da));
    CHECK(cudaFree(vl));
    CHECK(cudaFree(vr));
    CHECK(cudaFree(w));
}

template <typename T> void test_type(cusolverDnHandle_t h, int *info) {
    test_lu<T>(h, info);
    test_cholesky<T>(h, info);
    test_qr<T>(h, info);
    test_eig<T>(h, info);
    test_svd<T>(h, info);
    test_cholesky_batched<T>(h);
    test_syevj_batched<T>(h);
    test_gesvdj<T>(h, info);
    test_gesvda<T>(h);
    test_geev<T>(h, info);
}

int main() {
    cusolverDnHandle_t h;
    SOLVER(cusolverDnCreate(&h));
    cudaStream_t stream, got;
    CHECK(cudaStreamCreate(&stream));
    SOLVER(cusolverDnSetStream(h, stream));
    SOLVER(cusolverDnGetStream(h, &got));
    EXPECT(got == stream, "cusolverDnGetStream gave another stream");
    int *info;
    CHECK(cudaMalloc(&info, sizeof(int)));

    test_type<float>(h, info);
    test_type<double>(h, info);
    test_type<cuComplex>(h, info);
    test_type<cuDoubleComplex>(h, info);

    // devInfo of an exactly singular matrix: column 1 is twice column 0, and
    // with powers of two the elimination is exact, so U(2,2) = 0.
    {
        double a[9] = {2, 1, 4, 4, 2, 8, 1, 3, 5};
        double *da, *work;
        int *ipiv, lwork = 0;
        CHECK(cudaMalloc(&da, sizeof a));
        CHECK(cudaMalloc(&ipiv, 3 * sizeof(int)));
        CHECK(cudaMemcpy(da, a, sizeof a, cudaMemcpyHostToDevice));
        SOLVER(cusolverDnDgetrf_bufferSize(h, 3, 3, da, 3, &lwork));
        CHECK(cudaMalloc(&work, lwork * sizeof(double)));
        SOLVER(cusolverDnDgetrf(h, 3, 3, da, 3, work, ipiv, info));
        EXPECT(read_info(info) == 2, "getrf of a singular matrix: info %d", read_info(info));
        printf("singular devInfo: ok\n");

        // Bad arguments: cuSOLVER's statuses, checked before anything runs.
        EXPECT_STATUS(cusolverDnDgetrf(h, 3, 3, da, 2, work, ipiv, info), CUSOLVER_STATUS_INVALID_VALUE);
        EXPECT_STATUS(cusolverDnDgetrf(h, -1, 3, da, 3, work, ipiv, info), CUSOLVER_STATUS_INVALID_VALUE);
        EXPECT_STATUS(cusolverDnDgetrf_bufferSize(h, -3, 3, da, 3, &lwork), CUSOLVER_STATUS_INVALID_VALUE);
        EXPECT_STATUS(cusolverDnDpotrf(h, CUBLAS_FILL_MODE_LOWER, 3, da, 3, work, 0, info),
                      CUSOLVER_STATUS_INVALID_VALUE);
        double host[9];
        EXPECT_STATUS(cusolverDnDgetrf(h, 3, 3, host, 3, work, ipiv, info), CUSOLVER_STATUS_INVALID_VALUE);
        EXPECT_STATUS(cusolverDnDgetrf(h, 3, 3, da, 3, work, ipiv, NULL), CUSOLVER_STATUS_INVALID_VALUE);
        // A 4x4 matrix does not fit the 3x3 allocation.
        EXPECT_STATUS(cusolverDnDgetrf(h, 4, 4, da, 4, work, ipiv, info), CUSOLVER_STATUS_INVALID_VALUE);
        EXPECT_STATUS(cusolverDnDgesvd(h, 'A', 'A', 2, 3, da, 3, work, work, 3, work, 3, work, 100, NULL, info),
                      CUSOLVER_STATUS_INVALID_VALUE);
        EXPECT_STATUS(cusolverDnDgetrf(NULL, 3, 3, da, 3, work, ipiv, info), CUSOLVER_STATUS_NOT_INITIALIZED);
        printf("bad arguments: ok\n");

        SOLVER(cusolverDnDestroy(h));
        EXPECT_STATUS(cusolverDnDgetrf(h, 3, 3, da, 3, work, ipiv, info), CUSOLVER_STATUS_NOT_INITIALIZED);
        EXPECT_STATUS(cusolverDnDestroy(h), CUSOLVER_STATUS_NOT_INITIALIZED);
        printf("use after destroy: ok\n");
    }
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaGetLastError());
    printf("PASS\n");
    return 0;
}
