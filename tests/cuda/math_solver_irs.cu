// cuSOLVER's iterative-refinement solvers: cusolverDn<t1><t2>gesv and
// <t1><t2>gels for main precisions S, D, C, Z with each lower precision,
// the expert API (cusolverDnIRSXgesv/IRSXgels with params and infos,
// residual history), the fallback to the main precision, and the statuses
// of bad arguments. Every solution is checked on the host.
#include <cuComplex.h>
#include <cuda_runtime.h>
#include <cusolverDn.h>

#include <cmath>
#include <complex>
#include <vector>

#include "solver_check.h"

template <typename T> static bool is_complex();
template <> bool is_complex<float>() { return false; }
template <> bool is_complex<double>() { return false; }
template <> bool is_complex<cuComplex>() { return true; }
template <> bool is_complex<cuDoubleComplex>() { return true; }

static unsigned long long rng_state = 12345;
static double uniform() {
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(rng_state >> 11) / 9007199254740992.0 - 0.5;
}

template <typename T> static std::vector<T> random_matrix(int rows, int cols, bool dominant) {
    std::vector<T> a(rows * cols);
    for (int j = 0; j < cols; j++)
        for (int i = 0; i < rows; i++) {
            cd z(uniform(), is_complex<T>() ? uniform() : 0.0);
            if (dominant && i == j) z += cd(rows, 0);
            a[i + j * rows] = from_c<T>(z);
        }
    return a;
}

template <typename T> static T *upload(const std::vector<T> &h) {
    T *d;
    CHECK(cudaMalloc(&d, h.size() * sizeof(T) + 16));
    CHECK(cudaMemcpy(d, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice));
    return d;
}

template <typename T> static std::vector<T> download(const T *d, size_t count) {
    std::vector<T> h(count);
    CHECK(cudaMemcpy(h.data(), d, count * sizeof(T), cudaMemcpyDeviceToHost));
    return h;
}

static int read_info(const int *d) {
    int v;
    CHECK(cudaMemcpy(&v, d, sizeof v, cudaMemcpyDeviceToHost));
    return v;
}

// max |B - A X| / (|A| |X|) over the columns: the backward error.
template <typename T>
static double backward_error(const std::vector<T> &a, const std::vector<T> &x, const std::vector<T> &b, int n,
                             int nrhs) {
    double anorm = 0, worst = 0;
    for (int i = 0; i < n; i++) {
        double row = 0;
        for (int j = 0; j < n; j++) row += std::abs(to_c(a[i + j * n]));
        anorm = std::fmax(anorm, row);
    }
    for (int c = 0; c < nrhs; c++) {
        double r = 0, xn = 0;
        for (int i = 0; i < n; i++) {
            cd s = to_c(b[i + c * n]);
            for (int k = 0; k < n; k++) s -= to_c(a[i + k * n]) * to_c(x[k + c * n]);
            r = std::fmax(r, std::abs(s));
            xn = std::fmax(xn, std::abs(to_c(x[i + c * n])));
        }
        worst = std::fmax(worst, r / (anorm * xn));
    }
    return worst;
}

typedef cusolverStatus_t (*GesvSize)(cusolverDnHandle_t, int, int, void *, int, int *, void *, int, void *, int,
                                     void *, size_t *);
typedef cusolverStatus_t (*Gesv)(cusolverDnHandle_t, int, int, void *, int, int *, void *, int, void *, int, void *,
                                 size_t, int *, int *);
typedef cusolverStatus_t (*GelsSize)(cusolverDnHandle_t, int, int, int, void *, int, void *, int, void *, int, void *,
                                     size_t *);
typedef cusolverStatus_t (*Gels)(cusolverDnHandle_t, int, int, int, void *, int, void *, int, void *, int, void *,
                                 size_t, int *, int *);

// One <t1><t2>gesv: a dominant n×n system with nrhs right-hand sides.
template <typename T>
static void check_gesv(cusolverDnHandle_t h, const char *name, GesvSize size_fn, Gesv solve, double bound,
                       bool keeps_a) {
    const int n = 40, nrhs = 3;
    std::vector<T> a = random_matrix<T>(n, n, true), b = random_matrix<T>(n, nrhs, false);
    T *da = upload(a), *db = upload(b), *dx;
    int *dipiv, *dinfo;
    CHECK(cudaMalloc(&dx, n * nrhs * sizeof(T)));
    CHECK(cudaMalloc(&dipiv, n * sizeof(int)));
    CHECK(cudaMalloc(&dinfo, sizeof(int)));
    size_t lwork = 0;
    SOLVER(size_fn(h, n, nrhs, da, n, dipiv, db, n, dx, n, NULL, &lwork));
    void *work;
    CHECK(cudaMalloc(&work, lwork));
    int niters = -1000;
    SOLVER(solve(h, n, nrhs, da, n, dipiv, db, n, dx, n, work, lwork, &niters, dinfo));
    EXPECT(niters >= 0, "%s: niters %d", name, niters);
    EXPECT(read_info(dinfo) == 0, "%s: info %d", name, read_info(dinfo));
    std::vector<T> x = download(dx, n * nrhs);
    double err = backward_error(a, x, b, n, nrhs);
    EXPECT(err < bound, "%s: backward error %g", name, err);
    std::vector<int> ipiv = download(dipiv, n);
    for (int i = 0; i < n; i++) EXPECT(ipiv[i] >= i + 1 && ipiv[i] <= n, "%s: ipiv[%d] = %d", name, i, ipiv[i]);
    // A converged refinement from a lower precision leaves A as it was.
    if (keeps_a) {
        std::vector<T> after = download(da, n * n);
        bool same = true;
        for (int i = 0; i < n * n; i++) same = same && to_c(after[i]) == to_c(a[i]);
        EXPECT(same, "%s: A changed", name);
    }
    printf("%s: ok (%d iterations)\n", name, niters);
    cudaFree(da);
    cudaFree(db);
    cudaFree(dx);
    cudaFree(dipiv);
    cudaFree(dinfo);
    cudaFree(work);
}

// The least-squares solution by the normal equations on the host, in
// double: accurate enough for these well-conditioned tall matrices.
template <typename T>
static std::vector<cd> normal_equations(const std::vector<T> &a, const std::vector<T> &b, int m, int n, int nrhs) {
    std::vector<cd> g(n * n), y(n * nrhs);
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < n; j++) {
            cd s = 0;
            for (int k = 0; k < m; k++) s += std::conj(to_c(a[k + i * m])) * to_c(a[k + j * m]);
            g[i + j * n] = s;
        }
        for (int c = 0; c < nrhs; c++) {
            cd s = 0;
            for (int k = 0; k < m; k++) s += std::conj(to_c(a[k + i * m])) * to_c(b[k + c * m]);
            y[i + c * n] = s;
        }
    }
    // Gaussian elimination with partial pivoting.
    for (int k = 0; k < n; k++) {
        int p = k;
        for (int i = k + 1; i < n; i++)
            if (std::abs(g[i + k * n]) > std::abs(g[p + k * n])) p = i;
        for (int j = 0; j < n; j++) std::swap(g[k + j * n], g[p + j * n]);
        for (int c = 0; c < nrhs; c++) std::swap(y[k + c * n], y[p + c * n]);
        for (int i = k + 1; i < n; i++) {
            cd l = g[i + k * n] / g[k + k * n];
            for (int j = k; j < n; j++) g[i + j * n] -= l * g[k + j * n];
            for (int c = 0; c < nrhs; c++) y[i + c * n] -= l * y[k + c * n];
        }
    }
    for (int c = 0; c < nrhs; c++)
        for (int i = n - 1; i >= 0; i--) {
            cd s = y[i + c * n];
            for (int j = i + 1; j < n; j++) s -= g[i + j * n] * y[j + c * n];
            y[i + c * n] = s / g[i + i * n];
        }
    return y;
}

template <typename T>
static void check_gels(cusolverDnHandle_t h, const char *name, GelsSize size_fn, Gels solve, double bound) {
    const int m = 50, n = 20, nrhs = 2;
    std::vector<T> a = random_matrix<T>(m, n, false), b = random_matrix<T>(m, nrhs, false);
    T *da = upload(a), *db = upload(b), *dx;
    int *dinfo;
    CHECK(cudaMalloc(&dx, n * nrhs * sizeof(T)));
    CHECK(cudaMalloc(&dinfo, sizeof(int)));
    size_t lwork = 0;
    SOLVER(size_fn(h, m, n, nrhs, da, m, db, m, dx, n, NULL, &lwork));
    void *work;
    CHECK(cudaMalloc(&work, lwork));
    int niters = -1000;
    SOLVER(solve(h, m, n, nrhs, da, m, db, m, dx, n, work, lwork, &niters, dinfo));
    EXPECT(niters >= 0, "%s: niters %d", name, niters);
    EXPECT(read_info(dinfo) == 0, "%s: info %d", name, read_info(dinfo));
    std::vector<T> x = download(dx, n * nrhs);
    std::vector<cd> ref = normal_equations(a, b, m, n, nrhs);
    double err = 0, scale = 0;
    for (int i = 0; i < n * nrhs; i++) {
        err = std::fmax(err, std::abs(to_c(x[i]) - ref[i]));
        scale = std::fmax(scale, std::abs(ref[i]));
    }
    EXPECT(err / scale < bound, "%s: relative error %g", name, err / scale);
    printf("%s: ok (%d iterations)\n", name, niters);
    cudaFree(da);
    cudaFree(db);
    cudaFree(dx);
    cudaFree(dinfo);
    cudaFree(work);
}

#define GESV(T, P, BOUND, KEEPS)                                                                            \
    check_gesv<T>(h, #P "gesv", (GesvSize)cusolverDn##P##gesv_bufferSize, (Gesv)cusolverDn##P##gesv, BOUND, \
                  KEEPS)
#define GELS(T, P, BOUND) \
    check_gels<T>(h, #P "gels", (GelsSize)cusolverDn##P##gels_bufferSize, (Gels)cusolverDn##P##gels, BOUND)

// The expert API: a D system refined from half precision, with the
// residual history, then Hilbert's matrix, which bfloat16 factors cannot
// refine: the fallback, then the same without it.
static void check_expert(cusolverDnHandle_t h) {
    const int n = 30, nrhs = 1;
    std::vector<double> a = random_matrix<double>(n, n, true), b = random_matrix<double>(n, nrhs, false);
    double *da = upload(a), *db = upload(b), *dx;
    int *dinfo;
    CHECK(cudaMalloc(&dx, n * sizeof(double)));
    CHECK(cudaMalloc(&dinfo, sizeof(int)));
    cusolverDnIRSParams_t params;
    cusolverDnIRSInfos_t infos;
    SOLVER(cusolverDnIRSParamsCreate(&params));
    SOLVER(cusolverDnIRSInfosCreate(&infos));
    SOLVER(cusolverDnIRSParamsSetSolverPrecisions(params, CUSOLVER_R_64F, CUSOLVER_R_16F));
    size_t lwork = 0;
    // The refinement solver must be set before a solve.
    EXPECT_STATUS(cusolverDnIRSXgesv_bufferSize(h, params, n, nrhs, &lwork),
                  CUSOLVER_STATUS_IRS_PARAMS_INVALID_REFINE);
    SOLVER(cusolverDnIRSParamsSetRefinementSolver(params, CUSOLVER_IRS_REFINE_CLASSICAL));
    SOLVER(cusolverDnIRSParamsSetMaxIters(params, 30));
    int max_iters = 0;
    SOLVER(cusolverDnIRSParamsGetMaxIters(params, &max_iters));
    EXPECT(max_iters == 30, "params max iters %d", max_iters);
    SOLVER(cusolverDnIRSInfosRequestResidual(infos));
    SOLVER(cusolverDnIRSXgesv_bufferSize(h, params, n, nrhs, &lwork));
    void *work;
    CHECK(cudaMalloc(&work, lwork + 4096));
    int niters = -1000;
    SOLVER(cusolverDnIRSXgesv(h, params, infos, n, nrhs, da, n, db, n, dx, n, work, lwork, &niters, dinfo));
    EXPECT(niters > 0, "IRSXgesv from half: niters %d", niters);
    std::vector<double> x = download(dx, n);
    double err = backward_error(a, x, b, n, nrhs);
    EXPECT(err < 1e-14, "IRSXgesv: backward error %g", err);
    int got = 0;
    SOLVER(cusolverDnIRSInfosGetNiters(infos, &got));
    EXPECT(got == niters, "infos niters %d, call %d", got, niters);
    SOLVER(cusolverDnIRSInfosGetOuterNiters(infos, &got));
    EXPECT(got == niters, "outer niters %d", got);
    SOLVER(cusolverDnIRSInfosGetMaxIters(infos, &got));
    EXPECT(got == 30, "infos max iters %d", got);
    void *history = NULL;
    SOLVER(cusolverDnIRSInfosGetResidualHistory(infos, &history));
    EXPECT(history != NULL, "no residual history");
    if (history) {
        const double *rows = (const double *)history;
        EXPECT(rows[0] == 0.0 && rows[2 * niters] == niters, "history iterations %g .. %g", rows[0],
               rows[2 * niters]);
        EXPECT(rows[2 * niters + 1] < rows[1], "residual %g did not fall below %g", rows[2 * niters + 1], rows[1]);
    }
    printf("IRSXgesv: ok (%d iterations)\n", niters);

    // Hilbert's matrix.
    const int k = 10;
    std::vector<double> hil(k * k), hb(k);
    for (int i = 0; i < k; i++) {
        hb[i] = 1.0;
        for (int j = 0; j < k; j++) hil[i + j * k] = 1.0 / (i + j + 1);
    }
    double *dh = upload(hil), *dhb = upload(hb);
    SOLVER(cusolverDnIRSParamsSetSolverLowestPrecision(params, CUSOLVER_R_16BF));
    SOLVER(cusolverDnIRSParamsSetMaxIters(params, 5));
    SOLVER(cusolverDnIRSXgesv(h, params, infos, k, 1, dh, k, dhb, k, dx, k, work, lwork, &niters, dinfo));
    EXPECT(niters < 0, "Hilbert from bfloat16 converged (%d)", niters);
    x = download(dx, k);
    err = backward_error(hil, x, hb, k, 1);
    EXPECT(err < 1e-14, "fallback: backward error %g", err);
    CHECK(cudaMemcpy(dh, hil.data(), k * k * sizeof(double), cudaMemcpyHostToDevice));
    SOLVER(cusolverDnIRSParamsDisableFallback(params));
    SOLVER(cusolverDnIRSXgesv(h, params, infos, k, 1, dh, k, dhb, k, dx, k, work, lwork, &niters, dinfo));
    EXPECT(niters == -5, "without fallback: niters %d", niters);
    SOLVER(cusolverDnIRSParamsEnableFallback(params));
    printf("fallback: ok\n");

    // IRSXgels in single precision from TF32.
    const int m = 40, nn = 16;
    std::vector<float> ga = random_matrix<float>(m, nn, false), gb = random_matrix<float>(m, 1, false);
    float *dga = upload(ga), *dgb = upload(gb), *dgx;
    CHECK(cudaMalloc(&dgx, nn * sizeof(float)));
    SOLVER(cusolverDnIRSParamsSetSolverPrecisions(params, CUSOLVER_R_32F, CUSOLVER_R_TF32));
    SOLVER(cusolverDnIRSParamsSetMaxIters(params, 50));
    SOLVER(cusolverDnIRSXgels_bufferSize(h, params, m, nn, 1, &lwork));
    void *gwork;
    CHECK(cudaMalloc(&gwork, lwork));
    SOLVER(cusolverDnIRSXgels(h, params, infos, m, nn, 1, dga, m, dgb, m, dgx, nn, gwork, lwork, &niters, dinfo));
    EXPECT(niters >= 0, "IRSXgels: niters %d", niters);
    std::vector<float> gx = download(dgx, nn);
    std::vector<cd> ref = normal_equations(ga, gb, m, nn, 1);
    double gerr = 0, scale = 0;
    for (int i = 0; i < nn; i++) {
        gerr = std::fmax(gerr, std::abs(to_c(gx[i]) - ref[i]));
        scale = std::fmax(scale, std::abs(ref[i]));
    }
    EXPECT(gerr / scale < 1e-5, "IRSXgels: relative error %g", gerr / scale);
    printf("IRSXgels: ok (%d iterations)\n", niters);

    // Statuses.
    SOLVER(cusolverDnIRSParamsSetSolverPrecisions(params, CUSOLVER_R_32F, CUSOLVER_R_64F));
    EXPECT_STATUS(cusolverDnIRSXgesv_bufferSize(h, params, n, 1, &lwork), CUSOLVER_STATUS_IRS_PARAMS_INVALID_PREC);
    SOLVER(cusolverDnIRSParamsSetSolverPrecisions(params, CUSOLVER_R_64F, CUSOLVER_R_32F));
    SOLVER(cusolverDnIRSParamsSetRefinementSolver(params, CUSOLVER_IRS_REFINE_GMRES));
    EXPECT_STATUS(cusolverDnIRSXgesv(h, params, infos, n, 2, da, n, db, n, dx, n, work, lwork, &niters, dinfo),
                  CUSOLVER_STATUS_IRS_NRHS_NOT_SUPPORTED_FOR_REFINE_GMRES);
    EXPECT_STATUS(cusolverDnIRSParamsSetMaxIters(params, 0), CUSOLVER_STATUS_IRS_PARAMS_INVALID_MAXITER);
    SOLVER(cusolverDnIRSInfosDestroy(infos));
    EXPECT_STATUS(cusolverDnIRSInfosGetNiters(infos, &got), CUSOLVER_STATUS_IRS_INFOS_NOT_INITIALIZED);
    SOLVER(cusolverDnIRSParamsDestroy(params));
    EXPECT_STATUS(cusolverDnIRSParamsSetMaxIters(params, 3), CUSOLVER_STATUS_IRS_PARAMS_NOT_INITIALIZED);
    printf("expert statuses: ok\n");
    cudaFree(da);
    cudaFree(db);
    cudaFree(dx);
    cudaFree(dh);
    cudaFree(dhb);
    cudaFree(dga);
    cudaFree(dgb);
    cudaFree(dgx);
    cudaFree(dinfo);
    cudaFree(work);
    cudaFree(gwork);
}

// A singular system, an underdetermined least squares, a short workspace,
// a NULL niters.
static void check_statuses(cusolverDnHandle_t h) {
    const int n = 8;
    std::vector<double> a = random_matrix<double>(n, n, true), b = random_matrix<double>(n, 1, false);
    for (int j = 0; j < n; j++) a[5 + j * n] = 0.0;
    double *da = upload(a), *db = upload(b), *dx;
    int *dipiv, *dinfo;
    CHECK(cudaMalloc(&dx, n * sizeof(double)));
    CHECK(cudaMalloc(&dipiv, n * sizeof(int)));
    CHECK(cudaMalloc(&dinfo, sizeof(int)));
    size_t lwork = 0;
    SOLVER(cusolverDnDSgesv_bufferSize(h, n, 1, da, n, dipiv, db, n, dx, n, NULL, &lwork));
    void *work;
    CHECK(cudaMalloc(&work, lwork));
    int niters = 0;
    SOLVER(cusolverDnDSgesv(h, n, 1, da, n, dipiv, db, n, dx, n, work, lwork, &niters, dinfo));
    EXPECT(read_info(dinfo) > 0, "singular: info %d", read_info(dinfo));
    EXPECT(niters < 0, "singular: niters %d", niters);
    EXPECT_STATUS(cusolverDnDSgesv(h, n, 1, da, n, dipiv, db, n, dx, n, work, 8, &niters, dinfo),
                  CUSOLVER_STATUS_INVALID_VALUE);
    EXPECT_STATUS(cusolverDnDSgesv(h, n, 1, da, n, dipiv, db, n, dx, n, work, lwork, NULL, dinfo),
                  CUSOLVER_STATUS_INVALID_VALUE);
    EXPECT_STATUS(cusolverDnDSgesv(h, n, 1, da, n - 1, dipiv, db, n, dx, n, work, lwork, &niters, dinfo),
                  CUSOLVER_STATUS_INVALID_VALUE);
    EXPECT_STATUS(cusolverDnDDgels_bufferSize(h, 4, 8, 1, da, 4, db, 8, dx, 8, NULL, &lwork),
                  CUSOLVER_STATUS_IRS_NOT_SUPPORTED);
    printf("statuses: ok\n");
    cudaFree(da);
    cudaFree(db);
    cudaFree(dx);
    cudaFree(dipiv);
    cudaFree(dinfo);
    cudaFree(work);
}

int main() {
    cusolverDnHandle_t h;
    SOLVER(cusolverDnCreate(&h));
    GESV(double, DD, 1e-14, false);
    GESV(double, DS, 1e-14, true);
    GESV(double, DH, 1e-14, true);
    GESV(double, DB, 1e-14, true);
    GESV(double, DX, 1e-14, true);
    GESV(float, SS, 1e-5, false);
    GESV(float, SH, 1e-5, true);
    GESV(float, SB, 1e-5, true);
    GESV(float, SX, 1e-5, true);
    GESV(cuDoubleComplex, ZZ, 1e-14, false);
    GESV(cuDoubleComplex, ZC, 1e-14, true);
    GESV(cuDoubleComplex, ZK, 1e-14, true);
    GESV(cuDoubleComplex, ZE, 1e-14, true);
    GESV(cuDoubleComplex, ZY, 1e-14, true);
    GESV(cuComplex, CC, 1e-5, false);
    GESV(cuComplex, CK, 1e-5, true);
    GESV(cuComplex, CE, 1e-5, true);
    GESV(cuComplex, CY, 1e-5, true);
    GELS(double, DD, 1e-11);
    GELS(double, DS, 1e-11);
    GELS(double, DH, 1e-11);
    GELS(double, DX, 1e-11);
    GELS(float, SS, 1e-4);
    GELS(float, SH, 1e-4);
    GELS(cuDoubleComplex, ZK, 1e-11);
    GELS(cuComplex, CY, 1e-4);
    check_expert(h);
    check_statuses(h);
    SOLVER(cusolverDnDestroy(h));
    CHECK(cudaDeviceSynchronize());
    printf("PASS\n");
    return 0;
}
