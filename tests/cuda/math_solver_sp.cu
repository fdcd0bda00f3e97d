// cuSOLVER's sparse API: orderings (symrcm, symamd, metisnd) and csrperm on
// a scrambled 2-D Laplacian; csrlsvlu/qr/chol (host and device) and the
// low-level Cholesky and QR (host and device) and the batched QR
// (csrqrsvBatched: square and least-squares systems) in every element type, each
// checked by its residual on the host; the singularity of a singular
// matrix; the statuses of bad handles, sizes, descriptors and reorderings;
// the low-level sparse LU on the host (factor, solve, zero pivot, extract,
// checked as P*A*Q^T == L*U) in every element type; cusolverRf (setup from
// the host and the device, refactor with new values, solve, extraction,
// boost, settings and bad arguments); cusolverRf's batched API (a batch
// of systems checked against a CPU reference, new values, a zero pivot);
// in D and Z, csrlsqvqrHost (full rank and rank deficient, against the
// normal equations), csreigvsi and csreigvsiHost (against a known
// spectrum), csreigsHost (counts in boxes), csrzfdHost (zeros on the
// diagonal, structural singularity) and csrcholDiag (against a dense
// Cholesky), with their bad arguments; symmdq among the orderings.
#include <cuComplex.h>
#include <cuda_runtime.h>
#include <cusolverRf.h>
#include <cusolverSp.h>
#include <cusolverSp_LOWLEVEL_PREVIEW.h>
#include <cusparse.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <vector>

#include "solver_check.h"

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
        static cusolverStatus_t luBufH(cusolverSpHandle_t h, int n, int nnz, cusparseMatDescr_t d, const T *v,           \
                                       const int *rp, const int *ci, csrluInfoHost_t i, size_t *a, size_t *b) {         \
            return cusolverSp##P##csrluBufferInfoHost(h, n, nnz, d, v, rp, ci, i, a, b);                                 \
        }                                                                                                                \
        static cusolverStatus_t luFacH(cusolverSpHandle_t h, int n, int nnz, cusparseMatDescr_t d, const T *v,           \
                                       const int *rp, const int *ci, csrluInfoHost_t i, R thr, void *w) {               \
            return cusolverSp##P##csrluFactorHost(h, n, nnz, d, v, rp, ci, i, thr, w);                                   \
        }                                                                                                                \
        static cusolverStatus_t luZpH(cusolverSpHandle_t h, csrluInfoHost_t i, R tol, int *p) {                          \
            return cusolverSp##P##csrluZeroPivotHost(h, i, tol, p);                                                      \
        }                                                                                                                \
        static cusolverStatus_t luSolveH(cusolverSpHandle_t h, int n, const T *b, T *x, csrluInfoHost_t i, void *w) {    \
            return cusolverSp##P##csrluSolveHost(h, n, b, x, i, w);                                                      \
        }                                                                                                                \
        static cusolverStatus_t luExtractH(cusolverSpHandle_t h, int *p, int *q, cusparseMatDescr_t dl, T *vl, int *rl, \
                                           int *cl, cusparseMatDescr_t du, T *vu, int *ru, int *cu, csrluInfoHost_t i,  \
                                           void *w) {                                                                    \
            return cusolverSp##P##csrluExtractHost(h, p, q, dl, vl, rl, cl, du, vu, ru, cu, i, w);                       \
        }                                                                                                                \
        static cusolverStatus_t qrBufBatched(cusolverSpHandle_t h, int m, int n, int nnz, cusparseMatDescr_t d,         \
                                             const T *v, const int *rp, const int *ci, int batch, csrqrInfo_t i,        \
                                             size_t *a, size_t *b) {                                                     \
            return cusolverSp##P##csrqrBufferInfoBatched(h, m, n, nnz, d, v, rp, ci, batch, i, a, b);                    \
        }                                                                                                                \
        static cusolverStatus_t qrsvBatched(cusolverSpHandle_t h, int m, int n, int nnz, cusparseMatDescr_t d,          \
                                            const T *v, const int *rp, const int *ci, const T *b, T *x, int batch,      \
                                            csrqrInfo_t i, void *w) {                                                    \
            return cusolverSp##P##csrqrsvBatched(h, m, n, nnz, d, v, rp, ci, b, x, batch, i, w);                         \
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

// A nonsymmetric matrix on lap2d's pattern whose diagonal is small: LU
// must pivot. `shift` is added to the diagonal (new values, same pattern).
static Csr weak_diagonal(int k, bool complex, double shift) {
    Csr a = lap2d(k, complex);
    for (int i = 0; i < a.n; i++)
        for (int t = a.rowptr[i]; t < a.rowptr[i + 1]; t++) {
            int j = a.colind[t];
            a.val[t] = i == j ? cd(0.05 + shift, 0)
                              : cd(1.0 + ((i * 7 + j * 3) % 5) * 0.3, complex ? 0.1 * (i % 3) : 0);
        }
    return a;
}

// Dense n×n of a CSR (base 0), `unit` adding a unit diagonal.
static std::vector<cd> dense(int n, const std::vector<int> &rp, const std::vector<int> &ci, const std::vector<cd> &v,
                             bool unit) {
    std::vector<cd> d((size_t)n * n);
    for (int i = 0; i < n; i++) {
        for (int t = rp[i]; t < rp[i + 1]; t++) d[(size_t)i * n + ci[t]] += v[t];
        if (unit) d[(size_t)i * n + i] = 1;
    }
    return d;
}

template <typename T> static void run_lu(cusolverSpHandle_t h, cusparseMatDescr_t descr, bool complex) {
    typedef Sp<T> S;
    Csr a = weak_diagonal(6, complex, 0);
    int n = a.n, nnz = (int)a.val.size();
    std::vector<T> v;
    for (auto &z : a.val) v.push_back(from_c<T>(z));
    csrluInfoHost_t info;
    SOLVER(cusolverSpCreateCsrluInfoHost(&info));
    SOLVER(cusolverSpXcsrluAnalysisHost(h, n, nnz, descr, a.rowptr.data(), a.colind.data(), info));
    size_t internal = 0, work = 0;
    SOLVER(S::luBufH(h, n, nnz, descr, v.data(), a.rowptr.data(), a.colind.data(), info, &internal, &work));
    EXPECT(internal > 0 && work > 0, "csrluBufferInfoHost sizes %zu %zu", internal, work);
    std::vector<char> buffer(work);
    SOLVER(S::luFacH(h, n, nnz, descr, v.data(), a.rowptr.data(), a.colind.data(), info, 1, buffer.data()));
    int pos = 7;
    SOLVER(S::luZpH(h, info, 0, &pos));
    EXPECT(pos == -1, "%s csrlu zero pivot %d", S::name(), pos);
    std::vector<cd> bc(n);
    std::vector<T> b(n), x(n);
    for (int i = 0; i < n; i++) {
        bc[i] = cd(1 + i % 4, complex ? 0.5 : 0);
        b[i] = from_c<T>(bc[i]);
    }
    SOLVER(S::luSolveH(h, n, b.data(), x.data(), info, buffer.data()));
    double r = residual(a, as_c(x), bc);
    EXPECT(r < S::eps() * 100, "%s csrluSolveHost residual %g", S::name(), r);

    // P*A*Q^T == L*U with L's unit diagonal implicit; one-based output.
    int nnzL = 0, nnzU = 0;
    SOLVER(cusolverSpXcsrluNnzHost(h, &nnzL, &nnzU, info));
    EXPECT(nnzL > 0 && nnzU >= n && nnzL + nnzU < n * n / 2, "%s nnzL %d nnzU %d", S::name(), nnzL, nnzU);
    cusparseMatDescr_t one;
    EXPECT(cusparseCreateMatDescr(&one) == CUSPARSE_STATUS_SUCCESS, "cusparseCreateMatDescr");
    cusparseSetMatIndexBase(one, CUSPARSE_INDEX_BASE_ONE);
    std::vector<int> P(n), Q(n), rl(n + 1), cl(nnzL), ru(n + 1), cu(nnzU);
    std::vector<T> vl(nnzL), vu(nnzU);
    SOLVER(S::luExtractH(h, P.data(), Q.data(), descr, vl.data(), rl.data(), cl.data(), one, vu.data(), ru.data(),
                         cu.data(), info, buffer.data()));
    EXPECT(is_perm(P, n) && is_perm(Q, n), "%s csrluExtractHost P, Q", S::name());
    bool pivoted = false;
    for (int i = 0; i < n; i++) pivoted |= P[i] != i;
    EXPECT(pivoted, "%s: a weak diagonal must pivot", S::name());
    for (auto &c : cu) c -= 1;
    for (auto &c : ru) c -= 1;
    bool triangular = true;
    for (int i = 0; i < n; i++) {
        for (int t = rl[i]; t < rl[i + 1]; t++) triangular &= cl[t] < i;
        for (int t = ru[i]; t < ru[i + 1]; t++) triangular &= cu[t] >= i;
    }
    EXPECT(triangular, "%s: L strictly lower, U upper", S::name());
    std::vector<cd> L = dense(n, rl, cl, as_c(vl), true), U = dense(n, ru, cu, as_c(vu), false);
    std::vector<cd> A = dense(n, a.rowptr, a.colind, a.val, false);
    double err = 0, scale = 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            cd lu = 0;
            for (int k = 0; k < n; k++) lu += L[(size_t)i * n + k] * U[(size_t)k * n + j];
            cd paq = A[(size_t)P[i] * n + Q[j]];
            err = std::max(err, std::abs(lu - paq));
            scale = std::max(scale, std::abs(paq));
        }
    EXPECT(err / scale < S::eps() * 100, "%s P*A*Q^T - L*U = %g", S::name(), err / scale);

    // A singular matrix: column 1 is empty.
    std::vector<int> srp = {0, 2, 3, 5}, sci = {0, 2, 0, 0, 2};
    std::vector<T> sv = {from_c<T>(1), from_c<T>(2), from_c<T>(3), from_c<T>(1), from_c<T>(2)};
    SOLVER(cusolverSpXcsrluAnalysisHost(h, 3, 5, descr, srp.data(), sci.data(), info));
    SOLVER(S::luFacH(h, 3, 5, descr, sv.data(), srp.data(), sci.data(), info, 1, buffer.data()));
    SOLVER(S::luZpH(h, info, 0, &pos));
    EXPECT(pos == 1, "%s csrlu singular zero pivot %d", S::name(), pos);

    // Bad arguments: another n, a threshold past 1, NULL outputs.
    EXPECT_STATUS(S::luFacH(h, 4, 5, descr, sv.data(), srp.data(), sci.data(), info, 1, buffer.data()),
                  CUSOLVER_STATUS_INVALID_VALUE);
    EXPECT_STATUS(S::luFacH(h, 3, 5, descr, sv.data(), srp.data(), sci.data(), info, 2, buffer.data()),
                  CUSOLVER_STATUS_INVALID_VALUE);
    EXPECT_STATUS(cusolverSpXcsrluNnzHost(h, NULL, &nnzU, info), CUSOLVER_STATUS_INVALID_VALUE);
    SOLVER(cusolverSpDestroyCsrluInfoHost(info));
    EXPECT_STATUS(S::luZpH(h, info, 0, &pos), CUSOLVER_STATUS_INVALID_VALUE);
    cusparseDestroyMatDescr(one);
    printf("%s csrluHost: ok\n", S::name());
}

#define RF(call)                                                                    \
    do {                                                                            \
        cusolverStatus_t st_ = (call);                                              \
        if (st_ != CUSOLVER_STATUS_SUCCESS) {                                       \
            printf("FAIL: %s returned status %d at line %d\n", #call, (int)st_,     \
                   __LINE__);                                                       \
            fflush(stdout);                                                         \
            exit(1);                                                                \
        }                                                                           \
    } while (0)

static std::vector<double> real_parts(const Csr &a) {
    std::vector<double> v;
    for (auto &z : a.val) v.push_back(z.real());
    return v;
}

// Solves A x = b with the Rf object and answers max |A x - b| / max |b|.
static double rf_residual(cusolverRfHandle_t rf, const Csr &a, int *d_P, int *d_Q) {
    int n = a.n;
    std::vector<double> b(n);
    std::vector<cd> bc(n);
    for (int i = 0; i < n; i++) bc[i] = b[i] = 1 + (i % 5) * 0.25;
    double *d_x = upload(b), *d_T;
    CHECK(cudaMalloc(&d_T, n * sizeof(double)));
    RF(cusolverRfSolve(rf, d_P, d_Q, 1, d_T, n, d_x, n));
    CHECK(cudaDeviceSynchronize());
    std::vector<cd> x = download(d_x, n);
    CHECK(cudaFree(d_x));
    CHECK(cudaFree(d_T));
    return residual(a, x, bc);
}

// The LU that sets an Rf object up, by the sample's recipe: B = A(order,
// order), LU of B, P = order(Plu), Q = order(Qlu); L's unit diagonal is
// not stored.
struct RfLu {
    int nnzL, nnzU;
    std::vector<int> rl, cl, ru, cu, P, Q;
    std::vector<double> vl, vu;
};

static RfLu rf_lu(cusolverSpHandle_t h, cusparseMatDescr_t descr, const Csr &a) {
    int n = a.n, nnz = (int)a.val.size();
    std::vector<int> order(n);
    SOLVER(cusolverSpXcsrsymrcmHost(h, n, nnz, descr, a.rowptr.data(), a.colind.data(), order.data()));
    Csr b = permute(a, order);
    std::vector<double> bv = real_parts(b);
    csrluInfoHost_t info;
    SOLVER(cusolverSpCreateCsrluInfoHost(&info));
    SOLVER(cusolverSpXcsrluAnalysisHost(h, n, nnz, descr, b.rowptr.data(), b.colind.data(), info));
    size_t internal, work;
    SOLVER(cusolverSpDcsrluBufferInfoHost(h, n, nnz, descr, bv.data(), b.rowptr.data(), b.colind.data(), info,
                                          &internal, &work));
    std::vector<char> buffer(work);
    SOLVER(cusolverSpDcsrluFactorHost(h, n, nnz, descr, bv.data(), b.rowptr.data(), b.colind.data(), info, 1.0,
                                      buffer.data()));
    RfLu f;
    SOLVER(cusolverSpXcsrluNnzHost(h, &f.nnzL, &f.nnzU, info));
    std::vector<int> Plu(n), Qlu(n);
    f.rl.resize(n + 1);
    f.cl.resize(f.nnzL);
    f.ru.resize(n + 1);
    f.cu.resize(f.nnzU);
    f.vl.resize(f.nnzL);
    f.vu.resize(f.nnzU);
    f.P.resize(n);
    f.Q.resize(n);
    SOLVER(cusolverSpDcsrluExtractHost(h, Plu.data(), Qlu.data(), descr, f.vl.data(), f.rl.data(), f.cl.data(),
                                       descr, f.vu.data(), f.ru.data(), f.cu.data(), info, buffer.data()));
    SOLVER(cusolverSpDestroyCsrluInfoHost(info));
    for (int i = 0; i < n; i++) {
        f.P[i] = order[Plu[i]];
        f.Q[i] = order[Qlu[i]];
    }
    return f;
}

static void run_rf(cusolverSpHandle_t h, cusparseMatDescr_t descr) {
    Csr a = weak_diagonal(8, false, 0);
    int n = a.n, nnz = (int)a.val.size();
    std::vector<double> av = real_parts(a);
    RfLu f = rf_lu(h, descr, a);
    int nnzL = f.nnzL, nnzU = f.nnzU;
    std::vector<int> &rl = f.rl, &cl = f.cl, &ru = f.ru, &cu = f.cu, &P = f.P, &Q = f.Q;
    std::vector<double> &vl = f.vl, &vu = f.vu;

    cusolverRfHandle_t rf;
    RF(cusolverRfCreate(&rf));
    cusolverRfMatrixFormat_t format;
    cusolverRfUnitDiagonal_t diag;
    RF(cusolverRfGetMatrixFormat(rf, &format, &diag));
    EXPECT(format == CUSOLVERRF_MATRIX_FORMAT_CSR && diag == CUSOLVERRF_UNIT_DIAGONAL_STORED_L, "Rf defaults");
    RF(cusolverRfSetMatrixFormat(rf, CUSOLVERRF_MATRIX_FORMAT_CSR, CUSOLVERRF_UNIT_DIAGONAL_ASSUMED_L));
    RF(cusolverRfGetMatrixFormat(rf, &format, &diag));
    EXPECT(diag == CUSOLVERRF_UNIT_DIAGONAL_ASSUMED_L, "Rf unit diagonal %d", (int)diag);
    RF(cusolverRfSetNumericProperties(rf, 0.0, 0.0));
    double zero = -1, boost = -1;
    RF(cusolverRfGetNumericProperties(rf, &zero, &boost));
    EXPECT(zero == 0 && boost == 0, "Rf numeric properties %g %g", zero, boost);
    RF(cusolverRfSetAlgs(rf, CUSOLVERRF_FACTORIZATION_ALG0, CUSOLVERRF_TRIANGULAR_SOLVE_ALG1));
    cusolverRfFactorization_t fact;
    cusolverRfTriangularSolve_t solve;
    RF(cusolverRfGetAlgs(rf, &fact, &solve));
    EXPECT(fact == CUSOLVERRF_FACTORIZATION_ALG0 && solve == CUSOLVERRF_TRIANGULAR_SOLVE_ALG1, "Rf algs");
    RF(cusolverRfSetResetValuesFastMode(rf, CUSOLVERRF_RESET_VALUES_FAST_MODE_ON));
    cusolverRfResetValuesFastMode_t fast;
    RF(cusolverRfGetResetValuesFastMode(rf, &fast));
    EXPECT(fast == CUSOLVERRF_RESET_VALUES_FAST_MODE_ON, "Rf fast mode");
    EXPECT_STATUS(cusolverRfRefactor(rf), CUSOLVER_STATUS_NOT_INITIALIZED);

    RF(cusolverRfSetupHost(n, nnz, a.rowptr.data(), a.colind.data(), av.data(), nnzL, rl.data(), cl.data(),
                           vl.data(), nnzU, ru.data(), cu.data(), vu.data(), P.data(), Q.data(), rf));
    RF(cusolverRfAnalyze(rf));
    RF(cusolverRfRefactor(rf));
    int *d_P = upload(P), *d_Q = upload(Q);
    double r = rf_residual(rf, a, d_P, d_Q);
    EXPECT(r < 1e-10, "Rf solve residual %g", r);

    // New values on the same pattern, from the device.
    Csr a2 = weak_diagonal(8, false, 0.7);
    std::vector<double> a2v = real_parts(a2);
    int *d_rp = upload(a2.rowptr), *d_ci = upload(a2.colind);
    double *d_v = upload(a2v);
    RF(cusolverRfResetValues(n, nnz, d_rp, d_ci, d_v, d_P, d_Q, rf));
    RF(cusolverRfRefactor(rf));
    r = rf_residual(rf, a2, d_P, d_Q);
    EXPECT(r < 1e-10, "Rf refactor residual %g", r);

    // Extraction: the bundle has L's and U's entries; the split too.
    int nnzM = 0, *Mp, *Mi;
    double *Mx;
    RF(cusolverRfExtractBundledFactorsHost(rf, &nnzM, &Mp, &Mi, &Mx));
    EXPECT(nnzM == nnzL + nnzU && Mp[n] == nnzM, "Rf bundle %d entries, L %d U %d", nnzM, nnzL, nnzU);
    int sL, sU, *Lp, *Li, *Up, *Ui;
    double *Lx, *Ux;
    RF(cusolverRfExtractSplitFactorsHost(rf, &sL, &Lp, &Li, &Lx, &sU, &Up, &Ui, &Ux));
    EXPECT(sL == nnzL && sU == nnzU && Lp[n] == sL && Up[n] == sU, "Rf split L %d U %d", sL, sU);
    bool diag_first = true;
    for (int i = 0; i < n; i++) diag_first &= Ui[Up[i]] == i;
    EXPECT(diag_first, "Rf split: U's rows start at the diagonal");
    int dnnz = 0, *dMp, *dMi;
    double *dMx;
    RF(cusolverRfAccessBundledFactorsDevice(rf, &dnnz, &dMp, &dMi, &dMx));
    int last = -1;
    CHECK(cudaMemcpy(&last, dMp + n, sizeof(int), cudaMemcpyDeviceToHost));
    double first = 0;
    CHECK(cudaMemcpy(&first, dMx, sizeof(double), cudaMemcpyDeviceToHost));
    EXPECT(dnnz == nnzM && last == nnzM && first == Mx[0], "Rf device bundle");

    // A zero pivot is boosted.
    std::vector<double> zeros(nnz, 0.0);
    double *d_z = upload(zeros);
    RF(cusolverRfSetNumericProperties(rf, 1e-14, 1.0));
    RF(cusolverRfResetValues(n, nnz, d_rp, d_ci, d_z, d_P, d_Q, rf));
    RF(cusolverRfRefactor(rf));
    cusolverRfNumericBoostReport_t report;
    RF(cusolverRfGetNumericBoostReport(rf, &report));
    EXPECT(report == CUSOLVERRF_NUMERIC_BOOST_USED, "Rf boost report %d", (int)report);

    // Bad arguments.
    double *d_T;
    CHECK(cudaMalloc(&d_T, 2 * n * sizeof(double)));
    EXPECT_STATUS(cusolverRfSolve(rf, d_P, d_Q, 2, d_T, n, d_v, n), CUSOLVER_STATUS_INVALID_VALUE);
    EXPECT_STATUS(cusolverRfSolve(rf, d_P, d_Q, 1, d_T, n - 1, d_v, n), CUSOLVER_STATUS_INVALID_VALUE);
    EXPECT_STATUS(cusolverRfResetValues(n + 1, nnz, d_rp, d_ci, d_v, d_P, d_Q, rf), CUSOLVER_STATUS_INVALID_VALUE);
    EXPECT_STATUS(cusolverRfResetValues(n, nnz, d_rp, d_ci, d_v, d_Q, d_P, rf), CUSOLVER_STATUS_INVALID_VALUE);
    EXPECT_STATUS(cusolverRfSetMatrixFormat(rf, (cusolverRfMatrixFormat_t)5, CUSOLVERRF_UNIT_DIAGONAL_STORED_L),
                  CUSOLVER_STATUS_INVALID_VALUE);
    EXPECT_STATUS(cusolverRfSetNumericProperties(rf, -1.0, 0.0), CUSOLVER_STATUS_INVALID_VALUE);
    EXPECT_STATUS(cusolverRfGetAlgs(rf, NULL, &solve), CUSOLVER_STATUS_INVALID_VALUE);
    std::vector<int> badQ(Q);
    badQ[0] = badQ[1];
    cusolverRfHandle_t rf2;
    RF(cusolverRfCreate(&rf2));
    RF(cusolverRfSetMatrixFormat(rf2, CUSOLVERRF_MATRIX_FORMAT_CSR, CUSOLVERRF_UNIT_DIAGONAL_ASSUMED_L));
    EXPECT_STATUS(cusolverRfSetupHost(n, nnz, a.rowptr.data(), a.colind.data(), av.data(), nnzL, rl.data(),
                                      cl.data(), vl.data(), nnzU, ru.data(), cu.data(), vu.data(), P.data(),
                                      badQ.data(), rf2),
                  CUSOLVER_STATUS_INVALID_VALUE);

    // The device setup gives the same solution.
    int *d_arp = upload(a.rowptr), *d_aci = upload(a.colind), *d_lrp = upload(rl), *d_lci = upload(cl);
    int *d_urp = upload(ru), *d_uci = upload(cu);
    double *d_av = upload(av), *d_lv = upload(vl), *d_uv = upload(vu);
    RF(cusolverRfSetupDevice(n, nnz, d_arp, d_aci, d_av, nnzL, d_lrp, d_lci, d_lv, nnzU, d_urp, d_uci, d_uv, d_P,
                             d_Q, rf2));
    RF(cusolverRfAnalyze(rf2));
    RF(cusolverRfRefactor(rf2));
    r = rf_residual(rf2, a, d_P, d_Q);
    EXPECT(r < 1e-10, "Rf device setup residual %g", r);
    EXPECT_STATUS(cusolverRfSetupDevice(n, nnz, d_arp, d_aci, d_av, nnzL, d_lrp, d_lci, d_lv, nnzU, d_urp, d_uci,
                                        d_uv, d_P, d_Q + 1, rf2),
                  CUSOLVER_STATUS_INVALID_VALUE);
    RF(cusolverRfDestroy(rf2));
    RF(cusolverRfDestroy(rf));
    EXPECT_STATUS(cusolverRfRefactor(rf), CUSOLVER_STATUS_NOT_INITIALIZED);
    EXPECT_STATUS(cusolverRfDestroy(rf), CUSOLVER_STATUS_NOT_INITIALIZED);
    for (void *p : {(void *)d_P, (void *)d_Q, (void *)d_rp, (void *)d_ci, (void *)d_v, (void *)d_z, (void *)d_T,
                    (void *)d_arp, (void *)d_aci, (void *)d_lrp, (void *)d_lci, (void *)d_urp, (void *)d_uci,
                    (void *)d_av, (void *)d_lv, (void *)d_uv})
        CHECK(cudaFree(p));
    printf("cusolverRf: ok\n");
}

// x from A x = b by dense Gaussian elimination with partial pivoting: the
// CPU reference of the batched solves.
static std::vector<double> dense_solve(const Csr &a, std::vector<double> b) {
    int n = a.n;
    std::vector<cd> d = dense(n, a.rowptr, a.colind, a.val, false);
    std::vector<double> m(d.size());
    for (size_t i = 0; i < d.size(); i++) m[i] = d[i].real();
    for (int k = 0; k < n; k++) {
        int piv = k;
        for (int i = k + 1; i < n; i++)
            if (std::abs(m[(size_t)i * n + k]) > std::abs(m[(size_t)piv * n + k])) piv = i;
        for (int j = 0; j < n; j++) std::swap(m[(size_t)k * n + j], m[(size_t)piv * n + j]);
        std::swap(b[k], b[piv]);
        for (int i = k + 1; i < n; i++) {
            double l = m[(size_t)i * n + k] / m[(size_t)k * n + k];
            for (int j = k; j < n; j++) m[(size_t)i * n + j] -= l * m[(size_t)k * n + j];
            b[i] -= l * b[k];
        }
    }
    for (int i = n - 1; i >= 0; i--) {
        for (int j = i + 1; j < n; j++) b[i] -= m[(size_t)i * n + j] * b[j];
        b[i] /= m[(size_t)i * n + i];
    }
    return b;
}

// Solves every member j < `upto` of the batch through a device array of
// pointers and answers the largest max |x - x_ref| / max |x_ref|.
static double rf_batch_error(cusolverRfHandle_t rf, const std::vector<Csr> &as, int upto, int *d_P, int *d_Q) {
    int n = as[0].n, batch = (int)as.size();
    std::vector<std::vector<double>> bs(batch);
    std::vector<double *> xs(batch);
    for (int j = 0; j < batch; j++) {
        for (int i = 0; i < n; i++) bs[j].push_back(1 + ((i + 3 * j) % 7) * 0.5 - j * 0.25);
        xs[j] = upload(bs[j]);
    }
    double **d_xs = upload(xs), *d_T;
    CHECK(cudaMalloc(&d_T, 2 * batch * n * sizeof(double)));
    RF(cusolverRfBatchSolve(rf, d_P, d_Q, 1, d_T, n, d_xs, n));
    CHECK(cudaDeviceSynchronize());
    double worst = 0;
    for (int j = 0; j < batch; j++) {
        std::vector<double> x(n);
        CHECK(cudaMemcpy(x.data(), xs[j], n * sizeof(double), cudaMemcpyDeviceToHost));
        CHECK(cudaFree(xs[j]));
        if (j >= upto) continue;
        std::vector<double> ref = dense_solve(as[j], bs[j]);
        double err = 0, scale = 0;
        for (int i = 0; i < n; i++) {
            err = std::max(err, std::abs(x[i] - ref[i]));
            scale = std::max(scale, std::abs(ref[i]));
        }
        worst = std::max(worst, err / scale);
    }
    CHECK(cudaFree(d_xs));
    CHECK(cudaFree(d_T));
    return worst;
}

// cusolverRf's batched API: four matrices on one pattern (the last all
// zeros: a zero pivot), solved against a CPU reference; new values for all
// four from the device; bad arguments.
static void run_rf_batch(cusolverSpHandle_t h, cusparseMatDescr_t descr) {
    const int batch = 4;
    std::vector<Csr> as;
    for (double shift : {0.0, 0.3, 0.7, 0.0}) as.push_back(weak_diagonal(8, false, shift));
    for (auto &v : as[3].val) v = 0;
    int n = as[0].n, nnz = (int)as[0].val.size();
    RfLu f = rf_lu(h, descr, as[0]);
    std::vector<std::vector<double>> vals;
    std::vector<double *> h_vals;
    for (auto &a : as) vals.push_back(real_parts(a));
    for (auto &v : vals) h_vals.push_back(v.data());

    cusolverRfHandle_t rf;
    RF(cusolverRfCreate(&rf));
    RF(cusolverRfSetMatrixFormat(rf, CUSOLVERRF_MATRIX_FORMAT_CSR, CUSOLVERRF_UNIT_DIAGONAL_ASSUMED_L));
    EXPECT_STATUS(cusolverRfBatchRefactor(rf), CUSOLVER_STATUS_NOT_INITIALIZED);
    EXPECT_STATUS(cusolverRfBatchAnalyze(NULL), CUSOLVER_STATUS_NOT_INITIALIZED);
    std::vector<int> position(batch, 7);
    EXPECT_STATUS(cusolverRfBatchZeroPivot(rf, position.data()), CUSOLVER_STATUS_NOT_INITIALIZED);
    int *rp = as[0].rowptr.data(), *ci = as[0].colind.data();
    EXPECT_STATUS(cusolverRfBatchSetupHost(0, n, nnz, rp, ci, h_vals.data(), f.nnzL, f.rl.data(), f.cl.data(),
                                           f.vl.data(), f.nnzU, f.ru.data(), f.cu.data(), f.vu.data(), f.P.data(),
                                           f.Q.data(), rf),
                  CUSOLVER_STATUS_INVALID_VALUE);
    RF(cusolverRfBatchSetupHost(batch, n, nnz, rp, ci, h_vals.data(), f.nnzL, f.rl.data(), f.cl.data(), f.vl.data(),
                                f.nnzU, f.ru.data(), f.cu.data(), f.vu.data(), f.P.data(), f.Q.data(), rf));
    RF(cusolverRfBatchAnalyze(rf));
    RF(cusolverRfBatchRefactor(rf));
    EXPECT_STATUS(cusolverRfBatchZeroPivot(rf, position.data()), CUSOLVER_STATUS_ZERO_PIVOT);
    EXPECT(position[0] == -1 && position[1] == -1 && position[2] == -1 && position[3] >= 0 && position[3] < n,
           "Rf batch zero pivots %d %d %d %d", position[0], position[1], position[2], position[3]);
    int *d_P = upload(f.P), *d_Q = upload(f.Q);
    double err = rf_batch_error(rf, as, 3, d_P, d_Q);
    EXPECT(err < 1e-10, "Rf batch solve error %g", err);

    // New values for all four (the fourth no longer singular), from the
    // device.
    std::vector<Csr> bs;
    for (double shift : {1.5, 0.2, 0.9, 0.4}) bs.push_back(weak_diagonal(8, false, shift));
    std::vector<double *> d_vals;
    for (auto &b : bs) d_vals.push_back(upload(real_parts(b)));
    double **d_array = upload(d_vals);
    int *d_rp = upload(bs[0].rowptr), *d_ci = upload(bs[0].colind);
    RF(cusolverRfBatchResetValues(batch, n, nnz, d_rp, d_ci, d_array, d_P, d_Q, rf));
    RF(cusolverRfBatchRefactor(rf));
    RF(cusolverRfBatchZeroPivot(rf, position.data()));
    EXPECT(position[0] == -1 && position[1] == -1 && position[2] == -1 && position[3] == -1,
           "Rf batch zero pivots after the reset %d %d %d %d", position[0], position[1], position[2], position[3]);
    err = rf_batch_error(rf, bs, batch, d_P, d_Q);
    EXPECT(err < 1e-10, "Rf batch refactor error %g", err);

    // Bad arguments: another batch size or nnz, a host pointer among the
    // values, nrhs 2, ldt < n, P and Q swapped, no position array. Nothing
    // changes: the solves still match.
    EXPECT_STATUS(cusolverRfBatchResetValues(batch - 1, n, nnz, d_rp, d_ci, d_array, d_P, d_Q, rf),
                  CUSOLVER_STATUS_INVALID_VALUE);
    EXPECT_STATUS(cusolverRfBatchResetValues(batch, n, nnz + 1, d_rp, d_ci, d_array, d_P, d_Q, rf),
                  CUSOLVER_STATUS_INVALID_VALUE);
    std::vector<double *> mixed(d_vals);
    mixed[2] = h_vals[2];
    double **d_mixed = upload(mixed);
    EXPECT_STATUS(cusolverRfBatchResetValues(batch, n, nnz, d_rp, d_ci, d_mixed, d_P, d_Q, rf),
                  CUSOLVER_STATUS_INVALID_VALUE);
    EXPECT_STATUS(cusolverRfBatchResetValues(batch, n, nnz, d_rp, d_ci, d_array, d_Q, d_P, rf),
                  CUSOLVER_STATUS_INVALID_VALUE);
    double *d_T;
    CHECK(cudaMalloc(&d_T, 2 * batch * n * sizeof(double)));
    EXPECT_STATUS(cusolverRfBatchSolve(rf, d_P, d_Q, 2, d_T, n, d_mixed, n), CUSOLVER_STATUS_INVALID_VALUE);
    EXPECT_STATUS(cusolverRfBatchSolve(rf, d_P, d_Q, 1, d_T, n - 1, d_array, n), CUSOLVER_STATUS_INVALID_VALUE);
    EXPECT_STATUS(cusolverRfBatchSolve(rf, d_P, d_Q, 1, d_T, n, d_mixed, n), CUSOLVER_STATUS_INVALID_VALUE);
    EXPECT_STATUS(cusolverRfBatchZeroPivot(rf, NULL), CUSOLVER_STATUS_INVALID_VALUE);
    RF(cusolverRfBatchRefactor(rf));
    err = rf_batch_error(rf, bs, batch, d_P, d_Q);
    EXPECT(err < 1e-10, "Rf batch error after refused calls %g", err);

    RF(cusolverRfDestroy(rf));
    EXPECT_STATUS(cusolverRfBatchRefactor(rf), CUSOLVER_STATUS_NOT_INITIALIZED);
    for (double *p : d_vals) CHECK(cudaFree(p));
    for (void *p : {(void *)d_array, (void *)d_mixed, (void *)d_rp, (void *)d_ci, (void *)d_P, (void *)d_Q,
                    (void *)d_T})
        CHECK(cudaFree(p));
    printf("cusolverRf batched: ok\n");
}

// ---- csrlsqvqrHost, csreigvsi(Host), csreigsHost, csrzfdHost, csrcholDiag ----

template <typename T> struct Ex;
#define EX_TYPE(T, R, P, CORNER)                                                                                         \
    template <> struct Ex<T> {                                                                                           \
        static cusolverStatus_t lsq(cusolverSpHandle_t h, int m, int n, int nnz, cusparseMatDescr_t d, const T *v,       \
                                    const int *rp, const int *ci, const T *b, R tol, int *rank, T *x, int *p, R *mn) {  \
            return cusolverSp##P##csrlsqvqrHost(h, m, n, nnz, d, v, rp, ci, b, tol, rank, x, p, mn);                     \
        }                                                                                                                \
        static cusolverStatus_t vsiH(cusolverSpHandle_t h, int m, int nnz, cusparseMatDescr_t d, const T *v,             \
                                     const int *rp, const int *ci, T mu0, const T *x0, int maxite, R eps, T *mu, T *x) { \
            return cusolverSp##P##csreigvsiHost(h, m, nnz, d, v, rp, ci, mu0, x0, maxite, eps, mu, x);                   \
        }                                                                                                                \
        static cusolverStatus_t vsi(cusolverSpHandle_t h, int m, int nnz, cusparseMatDescr_t d, const T *v,              \
                                    const int *rp, const int *ci, T mu0, const T *x0, int maxite, R eps, T *mu, T *x) {  \
            return cusolverSp##P##csreigvsi(h, m, nnz, d, v, rp, ci, mu0, x0, maxite, eps, mu, x);                       \
        }                                                                                                                \
        static cusolverStatus_t eigs(cusolverSpHandle_t h, int m, int nnz, cusparseMatDescr_t d, const T *v,             \
                                     const int *rp, const int *ci, CORNER lb, CORNER ru, int *num) {                     \
            return cusolverSp##P##csreigsHost(h, m, nnz, d, v, rp, ci, lb, ru, num);                                     \
        }                                                                                                                \
        static cusolverStatus_t zfd(cusolverSpHandle_t h, int n, int nnz, cusparseMatDescr_t d, const T *v,              \
                                    const int *rp, const int *ci, int *p, int *numnz) {                                  \
            return cusolverSp##P##csrzfdHost(h, n, nnz, d, v, rp, ci, p, numnz);                                         \
        }                                                                                                                \
        static cusolverStatus_t diag(cusolverSpHandle_t h, csrcholInfo_t i, R *out) {                                    \
            return cusolverSp##P##csrcholDiag(h, i, out);                                                                \
        }                                                                                                                \
    };
EX_TYPE(double, double, D, cuDoubleComplex)
EX_TYPE(cuDoubleComplex, double, Z, cuDoubleComplex)

// A rectangular CSR matrix from dense rows (zeros left out), values as T.
template <typename T> struct Rect {
    int m, n;
    std::vector<int> rowptr, colind;
    std::vector<T> val;
    std::vector<std::vector<cd>> dense;
    int nnz() const { return (int)val.size(); }
};

template <typename T> static Rect<T> rect(const std::vector<std::vector<cd>> &rows) {
    Rect<T> a;
    a.m = (int)rows.size();
    a.n = (int)rows[0].size();
    a.dense = rows;
    a.rowptr.push_back(0);
    for (auto &row : rows) {
        for (int j = 0; j < a.n; j++)
            if (row[j] != cd(0, 0)) {
                a.colind.push_back(j);
                a.val.push_back(from_c<T>(row[j]));
            }
        a.rowptr.push_back((int)a.colind.size());
    }
    return a;
}

template <typename T> static std::vector<cd> rect_mv(const Rect<T> &a, const std::vector<cd> &x) {
    std::vector<cd> y(a.m);
    for (int i = 0; i < a.m; i++)
        for (int j = 0; j < a.n; j++) y[i] += a.dense[i][j] * x[j];
    return y;
}

static double norm2(const std::vector<cd> &v) {
    double s = 0;
    for (auto &z : v) s += std::norm(z);
    return std::sqrt(s);
}

// Hermitian tridiagonal: 2 on the diagonal, -w above, -conj(w) below, |w| = 1:
// eigenvalues 2 - 2 cos(k pi / (n + 1)), k = 1..n.
static std::vector<std::vector<cd>> tridiag(int n, cd w) {
    std::vector<std::vector<cd>> rows(n, std::vector<cd>(n));
    for (int i = 0; i < n; i++) {
        rows[i][i] = 2;
        if (i + 1 < n) rows[i][i + 1] = -w;
        if (i > 0) rows[i][i - 1] = -std::conj(w);
    }
    return rows;
}

template <typename T> static void run_extras(cusolverSpHandle_t h, cusparseMatDescr_t descr, bool complex) {
    typedef Sp<T> S;
    const double pi = 3.14159265358979323846;

    // csrlsqvqrHost: a full-rank 12x5 and a rank-4 12x5 (column 4 = column 0
    // + column 1), checked by the normal equations, p, rank and min_norm.
    for (int deficient = 0; deficient <= 1; deficient++) {
        int m = 12, n = 5;
        std::vector<std::vector<cd>> rows(m, std::vector<cd>(n));
        for (int i = 0; i < m; i++)
            for (int j = 0; j < 4; j++)
                if ((i + 2 * j) % 3 == 0 || i == j) rows[i][j] = cd(1.0 + i - 0.5 * j, complex ? 0.3 * i * j : 0);
        for (int i = 0; i < m; i++)
            rows[i][4] = deficient ? rows[i][0] + rows[i][1] : cd(i % 4 == 1 ? 2.0 + i : 0, complex ? 0.25 : 0);
        Rect<T> a = rect<T>(rows);
        std::vector<T> b(m), x(n);
        for (int i = 0; i < m; i++) b[i] = from_c<T>(cd(1.0 + i, complex ? -0.5 * i : 0));
        std::vector<int> p(n, -1);
        int rank = -1;
        double min_norm = -1;
        SOLVER(Ex<T>::lsq(h, m, n, a.nnz(), descr, a.val.data(), a.rowptr.data(), a.colind.data(), b.data(), 1e-10,
                          &rank, x.data(), p.data(), &min_norm));
        EXPECT(rank == (deficient ? 4 : 5), "%s csrlsqvqrHost rank %d", S::name(), rank);
        EXPECT(is_perm(p, n), "%s csrlsqvqrHost p", S::name());
        std::vector<cd> xc = as_c(x), r = rect_mv(a, xc);
        for (int i = 0; i < m; i++) r[i] -= to_c(b[i]);
        EXPECT(std::fabs(norm2(r) - min_norm) < 1e-9 * norm2(as_c(b)), "%s csrlsqvqrHost min_norm %g vs %g", S::name(),
               min_norm, norm2(r));
        double ne = 0;
        for (int j = 0; j < n; j++) {
            cd s = 0;
            for (int i = 0; i < m; i++) s += std::conj(rows[i][j]) * r[i];
            ne = std::max(ne, std::abs(s));
        }
        EXPECT(ne < 1e-8, "%s csrlsqvqrHost normal equations %g", S::name(), ne);
        if (deficient) {
            cd along = xc[0] + xc[1] - xc[4];
            EXPECT(std::abs(along) < 1e-9, "%s csrlsqvqrHost not the minimum-norm solution", S::name());
        }
    }
    printf("%s csrlsqvqr: ok\n", S::name());

    // csreigvsi, host and device: the eigenvalue nearest mu0 of a Hermitian
    // tridiagonal matrix with a known spectrum.
    int n = 20;
    cd w = complex ? cd(0.6, 0.8) : cd(1, 0);
    Rect<T> t = rect<T>(tridiag(n, w));
    auto lambda = [&](int k) { return 2 - 2 * std::cos(k * pi / (n + 1)); };
    std::vector<T> x0(n, from_c<T>(cd(1, 0))), x(n);
    {
        struct {
            double mu0;
            int k;
        } cases[] = {{0.05, 1}, {lambda(6) + 0.02, 6}, {3.99, 20}};
        T *d_val = upload(t.val), *d_x0 = upload(x0), *d_mu, *d_x;
        int *d_rp = upload(t.rowptr), *d_ci = upload(t.colind);
        CHECK(cudaMalloc(&d_mu, sizeof(T)));
        CHECK(cudaMalloc(&d_x, n * sizeof(T)));
        for (auto &c : cases) {
            for (int device = 0; device <= 1; device++) {
                T mu;
                if (device) {
                    SOLVER(Ex<T>::vsi(h, n, t.nnz(), descr, d_val, d_rp, d_ci, from_c<T>(cd(c.mu0, 0)), d_x0, 100, 1e-12,
                                      d_mu, d_x));
                    CHECK(cudaMemcpy(&mu, d_mu, sizeof(T), cudaMemcpyDeviceToHost));
                    CHECK(cudaMemcpy(x.data(), d_x, n * sizeof(T), cudaMemcpyDeviceToHost));
                } else {
                    SOLVER(Ex<T>::vsiH(h, n, t.nnz(), descr, t.val.data(), t.rowptr.data(), t.colind.data(),
                                       from_c<T>(cd(c.mu0, 0)), x0.data(), 100, 1e-12, &mu, x.data()));
                }
                cd m = to_c(mu);
                EXPECT(std::abs(m - lambda(c.k)) < 1e-8, "%s csreigvsi%s mu %g%+gi, expected %g", S::name(),
                       device ? "" : "Host", m.real(), m.imag(), lambda(c.k));
                std::vector<cd> xc = as_c(x), r = rect_mv(t, xc);
                for (int i = 0; i < n; i++) r[i] -= m * xc[i];
                EXPECT(norm2(r) < 1e-7 && std::fabs(norm2(xc) - 1) < 1e-9, "%s csreigvsi%s residual %g", S::name(),
                       device ? "" : "Host", norm2(r));
            }
        }
        // maxite <= 0 and a device pointer outside the allocations.
        EXPECT_STATUS(Ex<T>::vsi(h, n, t.nnz(), descr, d_val, d_rp, d_ci, from_c<T>(cd(0, 0)), d_x0, 0, 1e-12, d_mu, d_x),
                      CUSOLVER_STATUS_INVALID_VALUE);
        EXPECT_STATUS(Ex<T>::vsiH(h, n, t.nnz(), descr, t.val.data(), t.rowptr.data(), t.colind.data(),
                                  from_c<T>(cd(0, 0)), x0.data(), -1, 1e-12, x.data(), x.data()),
                      CUSOLVER_STATUS_INVALID_VALUE);
        EXPECT_STATUS(Ex<T>::vsi(h, n, t.nnz(), descr, d_val, d_rp, d_ci, from_c<T>(cd(0, 0)), d_x0, 10, 1e-12, d_mu,
                                 reinterpret_cast<T *>(0x1000)),
                      CUSOLVER_STATUS_INVALID_VALUE);
        EXPECT_STATUS(Ex<T>::vsi(NULL, n, t.nnz(), descr, d_val, d_rp, d_ci, from_c<T>(cd(0, 0)), d_x0, 10, 1e-12, d_mu,
                                 d_x),
                      CUSOLVER_STATUS_NOT_INITIALIZED);
        CHECK(cudaFree(d_val));
        CHECK(cudaFree(d_x0));
        CHECK(cudaFree(d_mu));
        CHECK(cudaFree(d_x));
        CHECK(cudaFree(d_rp));
        CHECK(cudaFree(d_ci));
    }
    printf("%s csreigvsi: ok\n", S::name());

    // csreigsHost: eigenvalues of the tridiagonal matrix in boxes.
    {
        double boxes[][2] = {{0, 1.1}, {1.5, 3.0}, {-1, 5}, {3.999, 5}};
        for (auto &box : boxes) {
            int expect = 0;
            for (int k = 1; k <= n; k++) expect += lambda(k) >= box[0] && lambda(k) <= box[1];
            int found = -1;
            SOLVER(Ex<T>::eigs(h, n, t.nnz(), descr, t.val.data(), t.rowptr.data(), t.colind.data(),
                               make_cuDoubleComplex(box[0], -0.5), make_cuDoubleComplex(box[1], 0.5), &found));
            EXPECT(found == expect, "%s csreigsHost [%g, %g]: %d, expected %d", S::name(), box[0], box[1], found, expect);
        }
    }
    printf("%s csreigs: ok\n", S::name());

    // csrzfdHost: zeros on the diagonal (one stored), then a structurally
    // singular matrix.
    {
        cd o = complex ? cd(1, 1) : cd(1, 0);
        std::vector<std::vector<cd>> rows = {
            {0, o, 2.0 * o, 0}, {3.0 * o, 0, 0, 0}, {0, 4.0 * o, 0, 5.0 * o}, {0, 0, 6.0 * o, 0}};
        Rect<T> a = rect<T>(rows);
        // Store A(0, 0) = 0 explicitly.
        a.colind.insert(a.colind.begin(), 0);
        a.val.insert(a.val.begin(), from_c<T>(cd(0, 0)));
        for (int i = 1; i <= 4; i++) a.rowptr[i]++;
        std::vector<int> p(4, -1);
        int numnz = -1;
        SOLVER(Ex<T>::zfd(h, 4, a.nnz(), descr, a.val.data(), a.rowptr.data(), a.colind.data(), p.data(), &numnz));
        EXPECT(numnz == 4 && is_perm(p, 4), "%s csrzfdHost numnz %d", S::name(), numnz);
        for (int j = 0; j < 4; j++) EXPECT(rows[p[j]][j] != cd(0, 0), "%s csrzfdHost: A(P, :)(%d, %d) is zero", S::name(), j, j);
        Rect<T> s = rect<T>({{o, o, 0}, {o, o, 0}, {0, 0, 0}});
        std::vector<int> q(3, -1);
        SOLVER(Ex<T>::zfd(h, 3, s.nnz(), descr, s.val.data(), s.rowptr.data(), s.colind.data(), q.data(), &numnz));
        EXPECT(numnz == 2 && is_perm(q, 3), "%s csrzfdHost structurally singular numnz %d", S::name(), numnz);
    }
    printf("%s csrzfd: ok\n", S::name());

    // csrcholDiag: the diagonal of L against a dense Cholesky on the host.
    {
        Csr a = lap2d(4, complex);
        int m = a.n, nnz = (int)a.val.size();
        std::vector<T> val;
        for (auto &v : a.val) val.push_back(from_c<T>(v));
        std::vector<std::vector<cd>> l(m, std::vector<cd>(m));
        for (int i = 0; i < m; i++)
            for (int k = a.rowptr[i]; k < a.rowptr[i + 1]; k++) l[i][a.colind[k]] = a.val[k];
        for (int j = 0; j < m; j++) {
            double d = l[j][j].real();
            for (int k = 0; k < j; k++) d -= std::norm(l[j][k]);
            l[j][j] = std::sqrt(d);
            for (int i = j + 1; i < m; i++) {
                cd s = l[i][j];
                for (int k = 0; k < j; k++) s -= l[i][k] * std::conj(l[j][k]);
                l[i][j] = s / l[j][j];
            }
        }
        T *d_val = upload(val);
        int *d_rp = upload(a.rowptr), *d_ci = upload(a.colind);
        double *d_diag;
        CHECK(cudaMalloc(&d_diag, m * sizeof(double)));
        csrcholInfo_t info;
        SOLVER(cusolverSpCreateCsrcholInfo(&info));
        EXPECT_STATUS(Ex<T>::diag(h, info, d_diag), CUSOLVER_STATUS_INVALID_VALUE);
        SOLVER(cusolverSpXcsrcholAnalysis(h, m, nnz, descr, d_rp, d_ci, info));
        size_t internal = 0, work = 0;
        SOLVER(S::cholBuf(h, m, nnz, descr, d_val, d_rp, d_ci, info, &internal, &work));
        void *d_work;
        CHECK(cudaMalloc(&d_work, work));
        SOLVER(S::cholFac(h, m, nnz, descr, d_val, d_rp, d_ci, info, d_work));
        SOLVER(Ex<T>::diag(h, info, d_diag));
        std::vector<double> diag(m);
        CHECK(cudaMemcpy(diag.data(), d_diag, m * sizeof(double), cudaMemcpyDeviceToHost));
        for (int i = 0; i < m; i++)
            EXPECT(std::fabs(diag[i] - l[i][i].real()) < 1e-12, "%s csrcholDiag[%d] %g vs %g", S::name(), i, diag[i],
                   l[i][i].real());
        EXPECT_STATUS(Ex<T>::diag(h, info, NULL), CUSOLVER_STATUS_INVALID_VALUE);
        SOLVER(cusolverSpDestroyCsrcholInfo(info));
        CHECK(cudaFree(d_work));
        CHECK(cudaFree(d_diag));
        CHECK(cudaFree(d_val));
        CHECK(cudaFree(d_rp));
        CHECK(cudaFree(d_ci));
    }
    printf("%s csrcholDiag: ok\n", S::name());

    // Bad arguments: m < n, a null handle, a general-only descriptor.
    {
        Rect<T> wide = rect<T>(std::vector<std::vector<cd>>{{cd(1), cd(2)}});
        std::vector<T> b(1), x(2);
        int rank, p[2];
        double mn;
        EXPECT_STATUS(Ex<T>::lsq(h, 1, 2, wide.nnz(), descr, wide.val.data(), wide.rowptr.data(), wide.colind.data(),
                                 b.data(), 0, &rank, x.data(), p, &mn),
                      CUSOLVER_STATUS_INVALID_VALUE);
        int found;
        EXPECT_STATUS(Ex<T>::eigs(NULL, n, t.nnz(), descr, t.val.data(), t.rowptr.data(), t.colind.data(),
                                  make_cuDoubleComplex(0, 0), make_cuDoubleComplex(1, 1), &found),
                      CUSOLVER_STATUS_NOT_INITIALIZED);
        cusparseMatDescr_t sym;
        EXPECT(cusparseCreateMatDescr(&sym) == CUSPARSE_STATUS_SUCCESS, "cusparseCreateMatDescr");
        cusparseSetMatType(sym, CUSPARSE_MATRIX_TYPE_SYMMETRIC);
        int numnz;
        std::vector<int> q(n);
        EXPECT_STATUS(Ex<T>::zfd(h, n, t.nnz(), sym, t.val.data(), t.rowptr.data(), t.colind.data(), q.data(), &numnz),
                      CUSOLVER_STATUS_MATRIX_TYPE_NOT_SUPPORTED);
        cusparseDestroyMatDescr(sym);
    }
    printf("%s sparse extras bad arguments: ok\n", S::name());
}

// ---- batched QR: XcsrqrAnalysisBatched, csrqrBufferInfoBatched, csrqrsvBatched ----

// A tall m×n CSR matrix (m = n + n/2): a shifted Laplacian on top and a
// sparse block below, with values that depend on the system `j`.
static Csr tall(int k, int j, bool complex, int *rows) {
    Csr a = lap2d(k, complex);
    int n = a.n, extra = n / 2;
    for (auto &v : a.val) v *= 1.0 + 0.1 * j;
    for (int i = 0; i < extra; i++) {
        a.colind.push_back(i);
        a.val.push_back(cd(1.0 + j, complex ? 0.25 * j : 0));
        a.colind.push_back(n - 1 - i);
        a.val.push_back(cd(-0.5, complex ? 0.5 : 0));
        a.rowptr.push_back((int)a.colind.size());
    }
    *rows = n + extra;
    return a;
}

// max |Aᴴ (A x - b)| / (max |Aᴴ b|): zero exactly at the least-squares solution.
static double normal_residual(const Csr &a, int m, int n, const std::vector<cd> &x, const std::vector<cd> &b) {
    std::vector<cd> r(m), g(n, 0), gb(n, 0);
    for (int i = 0; i < m; i++) {
        cd s = 0;
        for (int k = a.rowptr[i]; k < a.rowptr[i + 1]; k++) s += a.val[k] * x[a.colind[k]];
        r[i] = s - b[i];
        for (int k = a.rowptr[i]; k < a.rowptr[i + 1]; k++) {
            g[a.colind[k]] += std::conj(a.val[k]) * r[i];
            gb[a.colind[k]] += std::conj(a.val[k]) * b[i];
        }
    }
    double num = 0, den = 0;
    for (int c = 0; c < n; c++) {
        num = std::max(num, std::abs(g[c]));
        den = std::max(den, std::abs(gb[c]));
    }
    return num / den;
}

template <typename T> static void run_qr_batched(cusolverSpHandle_t h, cusparseMatDescr_t descr, bool complex) {
    typedef Sp<T> S;
    const int batch = 5;
    for (int shape = 0; shape < 2; shape++) { // square, then tall (least squares)
        std::vector<Csr> as;
        int m = 0;
        for (int j = 0; j < batch; j++) {
            if (shape == 0) {
                as.push_back(lap2d(6, complex));
                for (auto &v : as.back().val) v *= 1.0 + 0.1 * j;
                m = as.back().n;
            } else {
                as.push_back(tall(6, j, complex, &m));
            }
        }
        int n = as[0].n, nnz = (int)as[0].val.size();
        std::vector<T> val, b, x(n * batch);
        for (int j = 0; j < batch; j++) {
            for (auto &v : as[j].val) val.push_back(from_c<T>(v));
            for (int i = 0; i < m; i++) b.push_back(from_c<T>(cd(1.0 + 0.01 * i - 0.1 * j, complex ? 0.3 : 0)));
        }
        T *d_val = upload(val), *d_b = upload(b), *d_x;
        int *d_rp = upload(as[0].rowptr), *d_ci = upload(as[0].colind);
        CHECK(cudaMalloc(&d_x, x.size() * sizeof(T)));
        csrqrInfo_t info;
        SOLVER(cusolverSpCreateCsrqrInfo(&info));
        // Before the analysis there are no sizes.
        size_t internal = 0, work = 0;
        EXPECT_STATUS(S::qrBufBatched(h, m, n, nnz, descr, d_val, d_rp, d_ci, batch, info, &internal, &work),
                      CUSOLVER_STATUS_INVALID_VALUE);
        SOLVER(cusolverSpXcsrqrAnalysisBatched(h, m, n, nnz, descr, d_rp, d_ci, info));
        SOLVER(S::qrBufBatched(h, m, n, nnz, descr, d_val, d_rp, d_ci, batch, info, &internal, &work));
        size_t internal1 = 0, work1 = 0;
        SOLVER(S::qrBufBatched(h, m, n, nnz, descr, d_val, d_rp, d_ci, 1, info, &internal1, &work1));
        EXPECT(work1 > 0 && work == batch * work1 && internal == batch * internal1,
               "%s csrqrBufferInfoBatched sizes %zu/%zu for %d, %zu/%zu for one", S::name(), internal, work, batch,
               internal1, work1);
        void *buffer;
        CHECK(cudaMalloc(&buffer, work));
        SOLVER(S::qrsvBatched(h, m, n, nnz, descr, d_val, d_rp, d_ci, d_b, d_x, batch, info, buffer));
        std::vector<cd> xs = download(d_x, n * batch);
        for (int j = 0; j < batch; j++) {
            Csr a_t = as[j];
            a_t.val = as_c(std::vector<T>(val.begin() + j * nnz, val.begin() + (j + 1) * nnz));
            std::vector<cd> xj(xs.begin() + j * n, xs.begin() + (j + 1) * n);
            std::vector<cd> bj = as_c(std::vector<T>(b.begin() + j * m, b.begin() + (j + 1) * m));
            double r = shape == 0 ? residual(a_t, xj, bj) : normal_residual(a_t, m, n, xj, bj);
            EXPECT(r < 100 * S::eps(), "%s csrqrsvBatched shape %d system %d residual %g", S::name(), shape, j, r);
        }
        // Bad arguments leave x alone.
        EXPECT_STATUS(S::qrsvBatched(h, m, n, nnz, descr, d_val, d_rp, d_ci, d_b, d_x, 0, info, buffer),
                      CUSOLVER_STATUS_INVALID_VALUE);
        EXPECT_STATUS(S::qrsvBatched(h, m + 1, n, nnz, descr, d_val, d_rp, d_ci, d_b, d_x, batch, info, buffer),
                      CUSOLVER_STATUS_INVALID_VALUE);
        EXPECT_STATUS(S::qrsvBatched(h, m, n, nnz, descr, d_val, d_rp, d_ci, d_b, d_x, batch, info, NULL),
                      CUSOLVER_STATUS_INVALID_VALUE);
        EXPECT_STATUS(S::qrsvBatched(NULL, m, n, nnz, descr, d_val, d_rp, d_ci, d_b, d_x, batch, info, buffer),
                      CUSOLVER_STATUS_NOT_INITIALIZED);
        std::vector<cd> again = download(d_x, n * batch);
        EXPECT(again == xs, "%s csrqrsvBatched: a refused call changed x", S::name());
        // One system more than the operands hold: refused before the server touches memory.
        EXPECT_STATUS(S::qrsvBatched(h, m, n, nnz, descr, d_val, d_rp, d_ci, d_b, d_x, batch + 1, info, buffer),
                      CUSOLVER_STATUS_INVALID_VALUE);
        EXPECT(download(d_x, n * batch) == xs, "%s csrqrsvBatched: an overlong batch changed x", S::name());
        SOLVER(cusolverSpDestroyCsrqrInfo(info));
        CHECK(cudaFree(buffer));
        CHECK(cudaFree(d_val));
        CHECK(cudaFree(d_b));
        CHECK(cudaFree(d_x));
        CHECK(cudaFree(d_rp));
        CHECK(cudaFree(d_ci));
    }
    printf("%s csrqrsvBatched: ok\n", S::name());
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
    SOLVER(cusolverSpXcsrsymmdqHost(h, n, nnz, descr, scrambled.rowptr.data(), scrambled.colind.data(), q.data()));
    EXPECT(is_perm(q, n), "symmdq: not a permutation");
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
    run_lu<float>(h, descr, false);
    run_lu<double>(h, descr, false);
    run_lu<cuComplex>(h, descr, true);
    run_lu<cuDoubleComplex>(h, descr, true);
    run_extras<double>(h, descr, false);
    run_extras<cuDoubleComplex>(h, descr, true);
    run_qr_batched<float>(h, descr, false);
    run_qr_batched<double>(h, descr, false);
    run_qr_batched<cuComplex>(h, descr, true);
    run_qr_batched<cuDoubleComplex>(h, descr, true);
    run_rf(h, descr);
    run_rf_batch(h, descr);

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
