// cuSOLVER's sparse API: orderings (symrcm, symamd, metisnd) and csrperm on
// a scrambled 2-D Laplacian; csrlsvlu/qr/chol (host and device) and the
// low-level Cholesky and QR (host and device) in every element type, each
// checked by its residual on the host; the singularity of a singular
// matrix; the statuses of bad handles, sizes, descriptors and reorderings.
#include <cuComplex.h>
#include <cuda_runtime.h>
#include <cusolverSp.h>
#include <cusolverSp_LOWLEVEL_PREVIEW.h>
#include <cusparse.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <vector>

#include "check.h"

typedef std::complex<double> cd;

#define SOLVER(call)                                                                \
    do {                                                                            \
        cusolverStatus_t st_ = (call);                                              \
        if (st_ != CUSOLVER_STATUS_SUCCESS) {                                       \
            printf("FAIL: %s returned status %d at line %d\n", #call, (int)st_,     \
                   __LINE__);                                                       \
            fflush(stdout);                                                         \
            exit(1);                                                                \
        }                                                                           \
    } while (0)

#define EXPECT_STATUS(call, expected)                                               \
    do {                                                                            \
        cusolverStatus_t st_ = (call);                                              \
        EXPECT(st_ == (expected), "%s returned %d, expected %d", #call, (int)st_,   \
               (int)(expected));                                                    \
    } while (0)

static cd to_c(float x) { return cd(x, 0); }
static cd to_c(double x) { return cd(x, 0); }
static cd to_c(cuComplex x) { return cd(x.x, x.y); }
static cd to_c(cuDoubleComplex x) { return cd(x.x, x.y); }
template <typename T> T from_c(cd z);
template <> float from_c<float>(cd z) { return (float)z.real(); }
template <> double from_c<double>(cd z) { return z.real(); }
template <> cuComplex from_c<cuComplex>(cd z) { return make_cuComplex((float)z.real(), (float)z.imag()); }
template <> cuDoubleComplex from_c<cuDoubleComplex>(cd z) { return make_cuDoubleComplex(z.real(), z.imag()); }

// A CSR matrix on the host, zero-based.
struct Csr {
    int n;
    std::vector<int> rowptr, colind;
    std::vector<cd> val;
};

// The 5-point Laplacian on a k×k grid, diagonal 4.5; with `complex`, the
// off-diagonal entries are -1 ± 0.1i (Hermitian).
static Csr lap2d(int k, bool complex) {
    Csr a;
    a.n = k * k;
    a.rowptr.push_back(0);
    for (int i = 0; i < a.n; i++) {
        int r = i / k, c = i % k;
        int nb[5] = {r > 0 ? i - k : -1, c > 0 ? i - 1 : -1, i, c + 1 < k ? i + 1 : -1, r + 1 < k ? i + k : -1};
        for (int j : nb) {
            if (j < 0) continue;
            a.colind.push_back(j);
            cd v = j == i ? cd(4.5, 0) : cd(-1, complex ? (j > i ? 0.1 : -0.1) : 0);
            a.val.push_back(v);
        }
        a.rowptr.push_back((int)a.colind.size());
    }
    return a;
}

// B = A(p, p).
static Csr permute(const Csr &a, const std::vector<int> &p) {
    std::vector<int> inv(a.n);
    for (int i = 0; i < a.n; i++) inv[p[i]] = i;
    Csr b;
    b.n = a.n;
    b.rowptr.push_back(0);
    for (int i = 0; i < a.n; i++) {
        std::vector<std::pair<int, cd>> row;
        for (int k = a.rowptr[p[i]]; k < a.rowptr[p[i] + 1]; k++) row.push_back({inv[a.colind[k]], a.val[k]});
        std::sort(row.begin(), row.end(), [](const std::pair<int, cd> &x, const std::pair<int, cd> &y) { return x.first < y.first; });
        for (auto &e : row) {
            b.colind.push_back(e.first);
            b.val.push_back(e.second);
        }
        b.rowptr.push_back((int)b.colind.size());
    }
    return b;
}

static int bandwidth(const Csr &a) {
    int w = 0;
    for (int i = 0; i < a.n; i++)
        for (int k = a.rowptr[i]; k < a.rowptr[i + 1]; k++) w = std::max(w, std::abs(i - a.colind[k]));
    return w;
}

static bool is_perm(const std::vector<int> &p, int n) {
    std::vector<bool> seen(n, false);
    if ((int)p.size() != n) return false;
    for (int v : p) {
        if (v < 0 || v >= n || seen[v]) return false;
        seen[v] = true;
    }
    return true;
}

static std::vector<int> shuffle(int n) {
    std::vector<int> p(n);
    for (int i = 0; i < n; i++) p[i] = i;
    unsigned s = 12345;
    for (int i = n - 1; i > 0; i--) {
        s = s * 1103515245u + 12345u;
        std::swap(p[i], p[(s >> 8) % (i + 1)]);
    }
    return p;
}

// max |A x - b| / max |b|.
static double residual(const Csr &a, const std::vector<cd> &x, const std::vector<cd> &b) {
    double r = 0, nb = 0;
    for (int i = 0; i < a.n; i++) {
        cd s = 0;
        for (int k = a.rowptr[i]; k < a.rowptr[i + 1]; k++) s += a.val[k] * x[a.colind[k]];
        r = std::max(r, std::abs(s - b[i]));
        nb = std::max(nb, std::abs(b[i]));
    }
    return r / nb;
}

template <typename T> struct Sp;
#define SP_TYPE(T, R, P, EPS)                                                                                            \
    template <> struct Sp<T> {                                                                                           \
        typedef R Real;                                                                                                  \
        static const char *name() { return #P; }                                                                         \
        static double eps() { return EPS; }                                                                              \
        typedef cusolverStatus_t (*Lsv)(cusolverSpHandle_t, int, int, const cusparseMatDescr_t, const T *, const int *,  \
                                        const int *, const T *, R, int, T *, int *);                                     \
        static Lsv luHost() { return cusolverSp##P##csrlsvluHost; }                                                      \
        static Lsv qrHost() { return cusolverSp##P##csrlsvqrHost; }                                                      \
        static Lsv cholHost() { return cusolverSp##P##csrlsvcholHost; }                                                  \
        static Lsv qr() { return cusolverSp##P##csrlsvqr; }                                                              \
        static Lsv chol() { return cusolverSp##P##csrlsvchol; }                                                          \
        static cusolverStatus_t cholBufH(cusolverSpHandle_t h, int n, int nnz, cusparseMatDescr_t d, const T *v,         \
                                         const int *rp, const int *ci, csrcholInfoHost_t i, size_t *a, size_t *b) {     \
            return cusolverSp##P##csrcholBufferInfoHost(h, n, nnz, d, v, rp, ci, i, a, b);                               \
        }                                                                                                                \
        static cusolverStatus_t cholFacH(cusolverSpHandle_t h, int n, int nnz, cusparseMatDescr_t d, const T *v,         \
                                         const int *rp, const int *ci, csrcholInfoHost_t i, void *w) {                  \
            return cusolverSp##P##csrcholFactorHost(h, n, nnz, d, v, rp, ci, i, w);                                      \
        }                                                                                                                \
        static cusolverStatus_t cholZpH(cusolverSpHandle_t h, csrcholInfoHost_t i, R tol, int *p) {                      \
            return cusolverSp##P##csrcholZeroPivotHost(h, i, tol, p);                                                    \
        }                                                                                                                \
        static cusolverStatus_t cholSolveH(cusolverSpHandle_t h, int n, const T *b, T *x, csrcholInfoHost_t i, void *w) { \
            return cusolverSp##P##csrcholSolveHost(h, n, b, x, i, w);                                                    \
        }                                                                                                                \
        static cusolverStatus_t cholBuf(cusolverSpHandle_t h, int n, int nnz, cusparseMatDescr_t d, const T *v,          \
                                        const int *rp, const int *ci, csrcholInfo_t i, size_t *a, size_t *b) {          \
            return cusolverSp##P##csrcholBufferInfo(h, n, nnz, d, v, rp, ci, i, a, b);                                   \
        }                                                                                                                \
        static cusolverStatus_t cholFac(cusolverSpHandle_t h, int n, int nnz, cusparseMatDescr_t d, const T *v,          \
                                        const int *rp, const int *ci, csrcholInfo_t i, void *w) {                       \
            return cusolverSp##P##csrcholFactor(h, n, nnz, d, v, rp, ci, i, w);                                          \
        }                                                                                                                \
        static cusolverStatus_t cholZp(cusolverSpHandle_t h, csrcholInfo_t i, R tol, int *p) {                           \
            return cusolverSp##P##csrcholZeroPivot(h, i, tol, p);                                                        \
        }                                                                                                                \
        static cusolverStatus_t cholSolve(cusolverSpHandle_t h, int n, const T *b, T *x, csrcholInfo_t i, void *w) {     \
            return cusolverSp##P##csrcholSolve(h, n, b, x, i, w);                                                        \
        }                                                                                                                \
        static cusolverStatus_t qrBufH(cusolverSpHandle_t h, int m, int n, int nnz, cusparseMatDescr_t d, const T *v,    \
                                       const int *rp, const int *ci, csrqrInfoHost_t i, size_t *a, size_t *b) {         \
            return cusolverSp##P##csrqrBufferInfoHost(h, m, n, nnz, d, v, rp, ci, i, a, b);                              \
        }                                                                                                                \
        static cusolverStatus_t qrSetupH(cusolverSpHandle_t h, int m, int n, int nnz, cusparseMatDescr_t d, const T *v,  \
                                         const int *rp, const int *ci, T mu, csrqrInfoHost_t i) {                       \
            return cusolverSp##P##csrqrSetupHost(h, m, n, nnz, d, v, rp, ci, mu, i);                                     \
        }                                                                                                                \
        static cusolverStatus_t qrFacH(cusolverSpHandle_t h, int m, int n, int nnz, T *b, T *x, csrqrInfoHost_t i,       \
                                       void *w) {                                                                        \
            return cusolverSp##P##csrqrFactorHost(h, m, n, nnz, b, x, i, w);                                             \
        }                                                                                                                \
        static cusolverStatus_t qrZpH(cusolverSpHandle_t h, csrqrInfoHost_t i, R tol, int *p) {                          \
            return cusolverSp##P##csrqrZeroPivotHost(h, i, tol, p);                                                      \
        }                                                                                                                \
        static cusolverStatus_t qrSolveH(cusolverSpHandle_t h, int m, int n, T *b, T *x, csrqrInfoHost_t i, void *w) {   \
            return cusolverSp##P##csrqrSolveHost(h, m, n, b, x, i, w);                                                   \
        }                                                                                                                \
        static cusolverStatus_t qrBuf(cusolverSpHandle_t h, int m, int n, int nnz, cusparseMatDescr_t d, const T *v,     \
                                      const int *rp, const int *ci, csrqrInfo_t i, size_t *a, size_t *b) {              \
            return cusolverSp##P##csrqrBufferInfo(h, m, n, nnz, d, v, rp, ci, i, a, b);                                  \
        }                                                                                                                \
        static cusolverStatus_t qrSetup(cusolverSpHandle_t h, int m, int n, int nnz, cusparseMatDescr_t d, const T *v,   \
                                        const int *rp, const int *ci, T mu, csrqrInfo_t i) {                            \
            return cusolverSp##P##csrqrSetup(h, m, n, nnz, d, v, rp, ci, mu, i);                                         \
        }                                                                                                                \
        static cusolverStatus_t qrFac(cusolverSpHandle_t h, int m, int n, int nnz, T *b, T *x, csrqrInfo_t i, void *w) { \
            return cusolverSp##P##csrqrFactor(h, m, n, nnz, b, x, i, w);                                                 \
        }                                                                                                                \
        static cusolverStatus_t qrZp(cusolverSpHandle_t h, csrqrInfo_t i, R tol, int *p) {                               \
            return cusolverSp##P##csrqrZeroPivot(h, i, tol, p);                                                          \
        }                                                                                                                \
        static cusolverStatus_t qrSolve(cusolverSpHandle_t h, int m, int n, T *b, T *x, csrqrInfo_t i, void *w) {        \
            return cusolverSp##P##csrqrSolve(h, m, n, b, x, i, w);                                                       \
        }                                                                                                                \
    };
SP_TYPE(float, float, S, 1e-4)
SP_TYPE(double, double, D, 1e-10)
SP_TYPE(cuComplex, float, C, 1e-4)
SP_TYPE(cuDoubleComplex, double, Z, 1e-10)

template <typename T> static T *upload(const std::vector<T> &h) {
    T *d;
    CHECK(cudaMalloc(&d, h.size() * sizeof(T)));
    CHECK(cudaMemcpy(d, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice));
    return d;
}

template <typename T> static std::vector<cd> download(const T *d, int n) {
    std::vector<T> h(n);
    CHECK(cudaMemcpy(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost));
    std::vector<cd> out;
    for (auto &v : h) out.push_back(to_c(v));
    return out;
}

template <typename T> static std::vector<cd> as_c(const std::vector<T> &h) {
    std::vector<cd> out;
    for (auto &v : h) out.push_back(to_c(v));
    return out;
}

template <typename T> static void run_type(cusolverSpHandle_t h, cusparseMatDescr_t descr, bool complex) {
    typedef Sp<T> S;
    Csr a = lap2d(9, complex);
    int n = a.n, nnz = (int)a.val.size();
    std::vector<T> val, b(n), x(n);
    for (auto &v : a.val) val.push_back(from_c<T>(v));
    for (int i = 0; i < n; i++) b[i] = from_c<T>(cd(1.0 + 0.01 * i, complex ? 0.5 : 0));
    Csr a_t = a; // A as the element type rounds it
    a_t.val = as_c(val);
    std::vector<cd> bc = as_c(b);
    double tol = S::eps();

    // csrlsv*Host, with and without reordering.
    for (int reorder = 0; reorder <= 1; reorder++) {
        typename S::Lsv fns[3] = {S::luHost(), S::qrHost(), S::cholHost()};
        const char *names[3] = {"lu", "qr", "chol"};
        for (int f = 0; f < 3; f++) {
            int sing = 7;
            SOLVER(fns[f](h, n, nnz, descr, val.data(), a.rowptr.data(), a.colind.data(), b.data(), 0, reorder, x.data(), &sing));
            EXPECT(sing == -1, "%s csrlsv%sHost singularity %d", S::name(), names[f], sing);
            double r = residual(a_t, as_c(x), bc);
            EXPECT(r < 10 * tol, "%s csrlsv%sHost reorder %d residual %g", S::name(), names[f], reorder, r);
        }
    }
    printf("%s csrlsvHost: ok\n", S::name());

    // csrlsvqr / csrlsvchol on the device.
    T *d_val = upload(val), *d_b = upload(b), *d_x;
    int *d_rp = upload(a.rowptr), *d_ci = upload(a.colind);
    CHECK(cudaMalloc(&d_x, n * sizeof(T)));
    typename S::Lsv dev[2] = {S::qr(), S::chol()};
    for (int f = 0; f < 2; f++) {
        int sing = 7;
        SOLVER(dev[f](h, n, nnz, descr, d_val, d_rp, d_ci, d_b, 0, 0, d_x, &sing));
        EXPECT(sing == -1, "%s device csrlsv %d singularity %d", S::name(), f, sing);
        double r = residual(a_t, download(d_x, n), bc);
        EXPECT(r < 10 * tol, "%s device csrlsv %d residual %g", S::name(), f, r);
    }
    printf("%s csrlsv: ok\n", S::name());

    // Low-level Cholesky, host then device.
    {
        csrcholInfoHost_t info;
        SOLVER(cusolverSpCreateCsrcholInfoHost(&info));
        SOLVER(cusolverSpXcsrcholAnalysisHost(h, n, nnz, descr, a.rowptr.data(), a.colind.data(), info));
        size_t internal = 0, work = 0;
        SOLVER(S::cholBufH(h, n, nnz, descr, val.data(), a.rowptr.data(), a.colind.data(), info, &internal, &work));
        EXPECT(internal > 0 && work > 0, "cholBufferInfoHost sizes %zu %zu", internal, work);
        std::vector<char> buffer(work);
        SOLVER(S::cholFacH(h, n, nnz, descr, val.data(), a.rowptr.data(), a.colind.data(), info, buffer.data()));
        int pos = 7;
        SOLVER(S::cholZpH(h, info, (typename S::Real)tol, &pos));
        EXPECT(pos == -1, "%s csrcholZeroPivotHost %d", S::name(), pos);
        SOLVER(S::cholSolveH(h, n, b.data(), x.data(), info, buffer.data()));
        double r = residual(a_t, as_c(x), bc);
        EXPECT(r < 10 * tol, "%s csrcholSolveHost residual %g", S::name(), r);
        SOLVER(cusolverSpDestroyCsrcholInfoHost(info));

        csrcholInfo_t dinfo;
        SOLVER(cusolverSpCreateCsrcholInfo(&dinfo));
        SOLVER(cusolverSpXcsrcholAnalysis(h, n, nnz, descr, d_rp, d_ci, dinfo));
        SOLVER(S::cholBuf(h, n, nnz, descr, d_val, d_rp, d_ci, dinfo, &internal, &work));
        void *d_work;
        CHECK(cudaMalloc(&d_work, work));
        SOLVER(S::cholFac(h, n, nnz, descr, d_val, d_rp, d_ci, dinfo, d_work));
        pos = 7;
        SOLVER(S::cholZp(h, dinfo, (typename S::Real)tol, &pos));
        EXPECT(pos == -1, "%s csrcholZeroPivot %d", S::name(), pos);
        CHECK(cudaMemset(d_x, 0, n * sizeof(T)));
        SOLVER(S::cholSolve(h, n, d_b, d_x, dinfo, d_work));
        r = residual(a_t, download(d_x, n), bc);
        EXPECT(r < 10 * tol, "%s csrcholSolve residual %g", S::name(), r);
        SOLVER(cusolverSpDestroyCsrcholInfo(dinfo));
        EXPECT_STATUS(cusolverSpDestroyCsrcholInfo(dinfo), CUSOLVER_STATUS_INVALID_VALUE);
        CHECK(cudaFree(d_work));
    }
    printf("%s csrchol: ok\n", S::name());

    // Low-level QR of A - mu I, host then device; the host one factors and
    // solves at once.
    {
        T mu = from_c<T>(cd(0.5, 0));
        Csr shifted = a_t;
        for (int i = 0; i < n; i++)
            for (int k = a.rowptr[i]; k < a.rowptr[i + 1]; k++)
                if (a.colind[k] == i) shifted.val[k] -= to_c(mu);
        csrqrInfoHost_t info;
        SOLVER(cusolverSpCreateCsrqrInfoHost(&info));
        SOLVER(cusolverSpXcsrqrAnalysisHost(h, n, n, nnz, descr, a.rowptr.data(), a.colind.data(), info));
        size_t internal = 0, work = 0;
        SOLVER(S::qrBufH(h, n, n, nnz, descr, val.data(), a.rowptr.data(), a.colind.data(), info, &internal, &work));
        std::vector<char> buffer(work);
        SOLVER(S::qrSetupH(h, n, n, nnz, descr, val.data(), a.rowptr.data(), a.colind.data(), mu, info));
        std::vector<T> bb = b;
        SOLVER(S::qrFacH(h, n, n, nnz, bb.data(), x.data(), info, buffer.data()));
        double r = residual(shifted, as_c(x), bc);
        EXPECT(r < 10 * tol, "%s csrqrFactorHost residual %g", S::name(), r);
        int pos = 7;
        SOLVER(S::qrZpH(h, info, (typename S::Real)tol, &pos));
        EXPECT(pos == -1, "%s csrqrZeroPivotHost %d", S::name(), pos);
        bb = b;
        SOLVER(S::qrSolveH(h, n, n, bb.data(), x.data(), info, buffer.data()));
        r = residual(shifted, as_c(x), bc);
        EXPECT(r < 10 * tol, "%s csrqrSolveHost residual %g", S::name(), r);
        SOLVER(cusolverSpDestroyCsrqrInfoHost(info));

        csrqrInfo_t dinfo;
        SOLVER(cusolverSpCreateCsrqrInfo(&dinfo));
        SOLVER(cusolverSpXcsrqrAnalysis(h, n, n, nnz, descr, d_rp, d_ci, dinfo));
        SOLVER(S::qrBuf(h, n, n, nnz, descr, d_val, d_rp, d_ci, dinfo, &internal, &work));
        void *d_work;
        CHECK(cudaMalloc(&d_work, work));
        SOLVER(S::qrSetup(h, n, n, nnz, descr, d_val, d_rp, d_ci, mu, dinfo));
        SOLVER(S::qrFac(h, n, n, nnz, NULL, NULL, dinfo, d_work));
        pos = 7;
        SOLVER(S::qrZp(h, dinfo, (typename S::Real)tol, &pos));
        EXPECT(pos == -1, "%s csrqrZeroPivot %d", S::name(), pos);
        CHECK(cudaMemset(d_x, 0, n * sizeof(T)));
        SOLVER(S::qrSolve(h, n, n, d_b, d_x, dinfo, d_work));
        r = residual(shifted, download(d_x, n), bc);
        EXPECT(r < 10 * tol, "%s csrqrSolve residual %g", S::name(), r);
        SOLVER(cusolverSpDestroyCsrqrInfo(dinfo));
        CHECK(cudaFree(d_work));
    }
    printf("%s csrqr: ok\n", S::name());
    CHECK(cudaFree(d_val));
    CHECK(cudaFree(d_b));
    CHECK(cudaFree(d_x));
    CHECK(cudaFree(d_rp));
    CHECK(cudaFree(d_ci));
}

int main() {
    cusolverSpHandle_t h;
    SOLVER(cusolverSpCreate(&h));
    cudaStream_t stream;
    CHECK(cudaStreamCreate(&stream));
    SOLVER(cusolverSpSetStream(h, stream));
    cudaStream_t got = NULL;
    SOLVER(cusolverSpGetStream(h, &got));
    EXPECT(got == stream, "cusolverSpGetStream answered another stream");
    cusparseMatDescr_t descr;
    EXPECT(cusparseCreateMatDescr(&descr) == CUSPARSE_STATUS_SUCCESS, "cusparseCreateMatDescr");

    // Orderings of a scrambled Laplacian.
    Csr lap = lap2d(20, false);
    Csr scrambled = permute(lap, shuffle(lap.n));
    int n = lap.n, nnz = (int)lap.val.size();
    int issym = -1;
    SOLVER(cusolverSpXcsrissymHost(h, n, nnz, descr, scrambled.rowptr.data(), scrambled.rowptr.data() + 1,
                                   scrambled.colind.data(), &issym));
    EXPECT(issym == 1, "issym of a symmetric pattern: %d", issym);
    std::vector<int> p(n);
    SOLVER(cusolverSpXcsrsymrcmHost(h, n, nnz, descr, scrambled.rowptr.data(), scrambled.colind.data(), p.data()));
    EXPECT(is_perm(p, n), "symrcm: not a permutation");
    int wide = bandwidth(scrambled), narrow = bandwidth(permute(scrambled, p));
    EXPECT(narrow <= 25 && wide > 5 * narrow, "symrcm bandwidth %d from %d", narrow, wide);
    std::vector<int> q(n);
    SOLVER(cusolverSpXcsrsymamdHost(h, n, nnz, descr, scrambled.rowptr.data(), scrambled.colind.data(), q.data()));
    EXPECT(is_perm(q, n), "symamd: not a permutation");
    SOLVER(cusolverSpXcsrmetisndHost(h, n, nnz, descr, scrambled.rowptr.data(), scrambled.colind.data(), NULL, q.data()));
    EXPECT(is_perm(q, n), "metisnd: not a permutation");
    printf("orderings: ok\n");

    // csrperm: B = A(p, p) with the map of its values.
    {
        size_t bytes = 0;
        SOLVER(cusolverSpXcsrperm_bufferSizeHost(h, n, n, nnz, descr, scrambled.rowptr.data(), scrambled.colind.data(),
                                                 p.data(), p.data(), &bytes));
        std::vector<char> buffer(bytes);
        std::vector<int> rp = scrambled.rowptr, ci = scrambled.colind, map(nnz);
        for (int k = 0; k < nnz; k++) map[k] = k;
        SOLVER(cusolverSpXcsrpermHost(h, n, n, nnz, descr, rp.data(), ci.data(), p.data(), p.data(), map.data(),
                                      buffer.data()));
        Csr expect = permute(scrambled, p);
        bool same = rp == expect.rowptr && ci == expect.colind;
        for (int k = 0; same && k < nnz; k++) same = scrambled.val[map[k]] == expect.val[k];
        EXPECT(same, "csrperm: B differs from A(p, p)");
    }
    printf("csrperm: ok\n");

    run_type<float>(h, descr, false);
    run_type<double>(h, descr, false);
    run_type<cuComplex>(h, descr, true);
    run_type<cuDoubleComplex>(h, descr, true);

    // diag(1, 2, 0, 3): singular at 2; with tol 1.5, at 0.
    {
        std::vector<int> rp = {0, 1, 2, 3, 4}, ci = {0, 1, 2, 3};
        std::vector<double> v = {1, 2, 0, 3}, b = {1, 1, 1, 1}, x(4);
        int sing = 7;
        SOLVER(cusolverSpDcsrlsvluHost(h, 4, 4, descr, v.data(), rp.data(), ci.data(), b.data(), 0, 0, x.data(), &sing));
        EXPECT(sing == 2, "lu singularity %d", sing);
        SOLVER(cusolverSpDcsrlsvqrHost(h, 4, 4, descr, v.data(), rp.data(), ci.data(), b.data(), 1.5, 0, x.data(), &sing));
        EXPECT(sing == 0, "qr singularity with tol 1.5: %d", sing);
        double *d_v = upload(v), *d_b = upload(b), *d_x;
        int *d_rp = upload(rp), *d_ci = upload(ci);
        CHECK(cudaMalloc(&d_x, 4 * sizeof(double)));
        SOLVER(cusolverSpDcsrlsvchol(h, 4, 4, descr, d_v, d_rp, d_ci, d_b, 0, 0, d_x, &sing));
        EXPECT(sing == 2, "device chol singularity %d", sing);
        SOLVER(cusolverSpDcsrlsvqr(h, 4, 4, descr, d_v, d_rp, d_ci, d_b, 0, 0, d_x, &sing));
        EXPECT(sing == 2, "device qr singularity %d", sing);

        // One-based indices.
        cusparseMatDescr_t one;
        EXPECT(cusparseCreateMatDescr(&one) == CUSPARSE_STATUS_SUCCESS, "cusparseCreateMatDescr");
        cusparseSetMatIndexBase(one, CUSPARSE_INDEX_BASE_ONE);
        std::vector<int> rp1 = {1, 2, 3, 4, 5}, ci1 = {1, 2, 3, 4};
        std::vector<double> v1 = {2, 4, 5, 8};
        SOLVER(cusolverSpDcsrlsvluHost(h, 4, 4, one, v1.data(), rp1.data(), ci1.data(), b.data(), 0, 0, x.data(), &sing));
        EXPECT(sing == -1 && x[0] == 0.5 && x[1] == 0.25 && x[2] == 0.2 && x[3] == 0.125, "one-based lu");

        // Bad arguments.
        EXPECT_STATUS(cusolverSpDcsrlsvluHost(h, 0, 4, descr, v.data(), rp.data(), ci.data(), b.data(), 0, 0, x.data(), &sing),
                      CUSOLVER_STATUS_INVALID_VALUE);
        EXPECT_STATUS(cusolverSpDcsrlsvluHost(h, 4, 4, descr, v.data(), rp.data(), ci.data(), b.data(), 0, 4, x.data(), &sing),
                      CUSOLVER_STATUS_INVALID_VALUE);
        EXPECT_STATUS(cusolverSpDcsrlsvqrHost(h, 4, 4, one, v.data(), rp.data(), ci.data(), b.data(), 0, 0, x.data(), &sing),
                      CUSOLVER_STATUS_INVALID_VALUE);
        EXPECT_STATUS(cusolverSpDcsrlsvqr(h, 4, 4, one, d_v, d_rp, d_ci, d_b, 0, 0, d_x, &sing),
                      CUSOLVER_STATUS_INVALID_VALUE);
        cusparseSetMatType(one, CUSPARSE_MATRIX_TYPE_SYMMETRIC);
        EXPECT_STATUS(cusolverSpDcsrlsvcholHost(h, 4, 4, one, v1.data(), rp1.data(), ci1.data(), b.data(), 0, 0, x.data(), &sing),
                      CUSOLVER_STATUS_MATRIX_TYPE_NOT_SUPPORTED);
        EXPECT_STATUS(cusolverSpXcsrsymrcmHost(h, 4, 4, one, rp1.data(), ci1.data(), p.data()),
                      CUSOLVER_STATUS_MATRIX_TYPE_NOT_SUPPORTED);
        EXPECT_STATUS(cusolverSpDcsrlsvqrHost(NULL, 4, 4, descr, v.data(), rp.data(), ci.data(), b.data(), 0, 0, x.data(), &sing),
                      CUSOLVER_STATUS_NOT_INITIALIZED);
        csrqrInfoHost_t info;
        SOLVER(cusolverSpCreateCsrqrInfoHost(&info));
        int pos;
        EXPECT_STATUS(cusolverSpDcsrqrZeroPivotHost(h, info, 0, &pos), CUSOLVER_STATUS_INVALID_VALUE);
        SOLVER(cusolverSpDestroyCsrqrInfoHost(info));
        cusparseDestroyMatDescr(one);
        CHECK(cudaFree(d_v));
        CHECK(cudaFree(d_b));
        CHECK(cudaFree(d_x));
        CHECK(cudaFree(d_rp));
        CHECK(cudaFree(d_ci));
    }
    printf("singular and bad arguments: ok\n");

    SOLVER(cusolverSpDestroy(h));
    std::vector<int> rp = {0, 1}, ci = {0};
    EXPECT_STATUS(cusolverSpXcsrsymrcmHost(h, 1, 1, descr, rp.data(), ci.data(), p.data()), CUSOLVER_STATUS_NOT_INITIALIZED);
    printf("use after destroy: ok\n");
    cusparseDestroyMatDescr(descr);
    CHECK(cudaStreamDestroy(stream));
    printf("PASS\n");
    return 0;
}
