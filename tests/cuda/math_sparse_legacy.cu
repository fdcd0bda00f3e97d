// cuSPARSE's legacy API that programs still call, checked against host
// computations: Xcoosort (by row, by column), Xcsrsort, Xcscsort and
// CreateIdentityPermutation (sorted indices, stable, P the permutation
// applied), Gather and Scatter, the incomplete factorizations csrilu02 and
// csric02 (the factors reproduce A on its pattern) in S/D/C/Z and both
// bases, zero pivots (structural and numerical, host and device pointer
// mode), csrilu02_numericBoost; then the statuses for bad input.
//
// Prints one `<case>: ok` line per case; `FAIL: <reason>` and exit status 1
// on any mismatch, `PASS` as the last line on success.

// The legacy API is deprecated in CUDA 12/13 headers; it is what is tested.
#define DISABLE_CUSPARSE_DEPRECATED

#include <cuda_runtime.h>
#include <cusparse.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "check.h"

#define SP(call)                                                                    \
    do {                                                                            \
        cusparseStatus_t st_ = (call);                                              \
        if (st_ != CUSPARSE_STATUS_SUCCESS) {                                       \
            printf("FAIL: %s returned %s (%d) at line %d\n", #call,                 \
                   cusparseGetErrorName(st_), (int)st_, __LINE__);                  \
            fflush(stdout);                                                         \
            exit(1);                                                                \
        }                                                                           \
    } while (0)

#define SP_EXPECT(call, expected)                                                   \
    do {                                                                            \
        cusparseStatus_t st_ = (call);                                              \
        printf("%s -> %s\n", #call, cusparseGetErrorName(st_));                     \
        if (st_ != (expected)) {                                                    \
            printf("FAIL: %s returned %s (%d), expected %s at line %d\n", #call,    \
                   cusparseGetErrorName(st_), (int)st_, #expected, __LINE__);       \
            fflush(stdout);                                                         \
            exit(1);                                                                \
        }                                                                           \
    } while (0)

#define EXPECT(cond, ...)                                                           \
    do {                                                                            \
        if (!(cond)) {                                                              \
            printf("FAIL: " __VA_ARGS__);                                           \
            printf(" (line %d)\n", __LINE__);                                       \
            fflush(stdout);                                                         \
            exit(1);                                                                \
        }                                                                           \
    } while (0)

typedef std::complex<double> C;

static unsigned rng_state = 777;
static int rnd_int(int n) {
    rng_state = rng_state * 1103515245u + 12345u;
    return (int)((rng_state >> 16) % (unsigned)n);
}
static double rnd() { return (double)(rnd_int(128) - 64) / 64.0; }

template <typename T> static T *to_device(const std::vector<T> &v) {
    T *d = NULL;
    CHECK(cudaMalloc(&d, v.size() * sizeof(T) + 1));
    if (!v.empty()) CHECK(cudaMemcpy(d, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
    return d;
}

template <typename T> static std::vector<T> to_host(const T *d, size_t n) {
    std::vector<T> v(n);
    CHECK(cudaDeviceSynchronize());
    if (n) CHECK(cudaMemcpy(v.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost));
    return v;
}

// --- Sorting -------------------------------------------------------------------

// COO entries in random order, with repeated (row, col) pairs to see that
// the sort is stable; values are the original positions, gathered through P.
static void coosort_case(cusparseHandle_t h, bool by_row) {
    const int m = 7, n = 5, nnz = 40;
    std::vector<int> rows(nnz), cols(nnz);
    std::vector<double> vals(nnz);
    for (int k = 0; k < nnz; k++) {
        rows[k] = rnd_int(m);
        cols[k] = rnd_int(n);
        vals[k] = 100.0 + k;
    }
    int *drows = to_device(rows), *dcols = to_device(cols), *dp = to_device(std::vector<int>(nnz, -7));
    double *dvals = to_device(vals), *dsorted = to_device(std::vector<double>(nnz, 0));
    size_t size = 0;
    SP(cusparseXcoosort_bufferSizeExt(h, m, n, nnz, drows, dcols, &size));
    void *buffer;
    CHECK(cudaMalloc(&buffer, size + 1));
    SP(cusparseCreateIdentityPermutation(h, nnz, dp));
    std::vector<int> p = to_host(dp, nnz);
    for (int k = 0; k < nnz; k++) EXPECT(p[k] == k, "identity permutation p[%d] = %d", k, p[k]);
    if (by_row)
        SP(cusparseXcoosortByRow(h, m, n, nnz, drows, dcols, dp, buffer));
    else
        SP(cusparseXcoosortByColumn(h, m, n, nnz, drows, dcols, dp, buffer));
    // CuPy's way of applying P: Gather with P as a sparse vector's indices.
    cusparseSpVecDescr_t vx;
    cusparseDnVecDescr_t vy;
    SP(cusparseCreateSpVec(&vx, nnz, nnz, dp, dsorted, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_64F));
    SP(cusparseCreateDnVec(&vy, nnz, dvals, CUDA_R_64F));
    SP(cusparseGather(h, vy, vx));
    std::vector<int> r = to_host(drows, nnz), c = to_host(dcols, nnz);
    p = to_host(dp, nnz);
    std::vector<double> sorted = to_host(dsorted, nnz);
    std::vector<int> order(nnz);
    for (int k = 0; k < nnz; k++) order[k] = k;
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
        return by_row ? std::make_pair(rows[a], cols[a]) < std::make_pair(rows[b], cols[b])
                      : std::make_pair(cols[a], rows[a]) < std::make_pair(cols[b], rows[b]);
    });
    for (int k = 0; k < nnz; k++) {
        EXPECT(p[k] == order[k], "coosort P[%d] = %d, want %d", k, p[k], order[k]);
        EXPECT(r[k] == rows[order[k]] && c[k] == cols[order[k]], "coosort entry %d", k);
        EXPECT(sorted[k] == vals[order[k]], "gathered value %d: %g", k, sorted[k]);
    }
    SP(cusparseDestroySpVec(vx));
    SP(cusparseDestroyDnVec(vy));
    CHECK(cudaFree(drows));
    CHECK(cudaFree(dcols));
    CHECK(cudaFree(dp));
    CHECK(cudaFree(dvals));
    CHECK(cudaFree(dsorted));
    CHECK(cudaFree(buffer));
    printf("coosort by %s: ok\n", by_row ? "row" : "column");
}

// CSR (or CSC) with each row's minor indices shuffled; sorted within each
// row, P the permutation, stable for equal indices.
static void compressed_sort_case(cusparseHandle_t h, bool csr, int base) {
    const int m = 9, n = 6;
    int major = csr ? m : n, minor = csr ? n : m;
    std::vector<int> offsets(1, base), idx;
    for (int o = 0; o < major; o++) {
        int count = rnd_int(minor + 2);
        for (int k = 0; k < count; k++) idx.push_back(rnd_int(minor) + base);
        offsets.push_back((int)idx.size() + base);
    }
    int nnz = (int)idx.size();
    cusparseMatDescr_t descr;
    SP(cusparseCreateMatDescr(&descr));
    SP(cusparseSetMatIndexBase(descr, base ? CUSPARSE_INDEX_BASE_ONE : CUSPARSE_INDEX_BASE_ZERO));
    int *doff = to_device(offsets), *didx = to_device(idx), *dp = to_device(std::vector<int>(nnz));
    size_t size = 0;
    if (csr)
        SP(cusparseXcsrsort_bufferSizeExt(h, m, n, nnz, doff, didx, &size));
    else
        SP(cusparseXcscsort_bufferSizeExt(h, m, n, nnz, doff, didx, &size));
    void *buffer;
    CHECK(cudaMalloc(&buffer, size + 1));
    SP(cusparseCreateIdentityPermutation(h, nnz, dp));
    if (csr)
        SP(cusparseXcsrsort(h, m, n, nnz, descr, doff, didx, dp, buffer));
    else
        SP(cusparseXcscsort(h, m, n, nnz, descr, doff, didx, dp, buffer));
    std::vector<int> got = to_host(didx, nnz), p = to_host(dp, nnz);
    for (int o = 0; o < major; o++) {
        std::vector<int> order;
        for (int k = offsets[o] - base; k < offsets[o + 1] - base; k++) order.push_back(k);
        std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return idx[a] < idx[b]; });
        for (size_t j = 0; j < order.size(); j++) {
            int k = offsets[o] - base + (int)j;
            EXPECT(p[k] == order[j] && got[k] == idx[order[j]], "%s sort entry %d: P %d index %d", csr ? "csr" : "csc", k,
                   p[k], got[k]);
        }
    }
    SP(cusparseDestroyMatDescr(descr));
    CHECK(cudaFree(doff));
    CHECK(cudaFree(didx));
    CHECK(cudaFree(dp));
    CHECK(cudaFree(buffer));
    printf("%ssort base %d: ok\n", csr ? "csr" : "csc", base);
}

static void scatter_case(cusparseHandle_t h) {
    std::vector<int> idx = {4, 1, 6};  // base one
    std::vector<std::complex<float> > x = {{1, 2}, {3, 4}, {5, 6}}, y(6, std::complex<float>(-1, 0));
    int *didx = to_device(idx);
    std::complex<float> *dx = to_device(x), *dy = to_device(y);
    cusparseSpVecDescr_t vx;
    cusparseDnVecDescr_t vy;
    SP(cusparseCreateSpVec(&vx, 6, 3, didx, dx, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ONE, CUDA_C_32F));
    SP(cusparseCreateDnVec(&vy, 6, dy, CUDA_C_32F));
    SP(cusparseScatter(h, vx, vy));
    std::vector<std::complex<float> > got = to_host(dy, 6);
    for (int i = 0; i < 6; i++) {
        std::complex<float> want = i == 3 ? x[0] : i == 0 ? x[1] : i == 5 ? x[2] : std::complex<float>(-1, 0);
        EXPECT(got[i] == want, "scatter y[%d] = (%g, %g)", i, got[i].real(), got[i].imag());
    }
    int64_t size, nnz;
    void *pi, *pv;
    cusparseIndexType_t it;
    cusparseIndexBase_t ib;
    cudaDataType vt;
    SP(cusparseSpVecGet(vx, &size, &nnz, &pi, &pv, &it, &ib, &vt));
    EXPECT(size == 6 && nnz == 3 && pi == didx && pv == dx && it == CUSPARSE_INDEX_32I && ib == CUSPARSE_INDEX_BASE_ONE &&
               vt == CUDA_C_32F,
           "SpVecGet");
    SP(cusparseDestroySpVec(vx));
    SP(cusparseDestroyDnVec(vy));
    CHECK(cudaFree(didx));
    CHECK(cudaFree(dx));
    CHECK(cudaFree(dy));
    printf("scatter c32: ok\n");
}

// --- Incomplete factorizations --------------------------------------------------

template <typename T> struct Type;
template <> struct Type<float> {
    static const char *name() { return "f32"; }
    static double tol() { return 1e-4; }
    static float from(C v) { return (float)v.real(); }
    static C to(float v) { return C(v, 0); }
    static bool complex() { return false; }
};
template <> struct Type<double> {
    static const char *name() { return "f64"; }
    static double tol() { return 1e-12; }
    static double from(C v) { return v.real(); }
    static C to(double v) { return C(v, 0); }
    static bool complex() { return false; }
};
template <> struct Type<std::complex<float> > {
    static const char *name() { return "c32"; }
    static double tol() { return 1e-4; }
    static std::complex<float> from(C v) { return std::complex<float>((float)v.real(), (float)v.imag()); }
    static C to(std::complex<float> v) { return C(v.real(), v.imag()); }
    static bool complex() { return true; }
};
template <> struct Type<std::complex<double> > {
    static const char *name() { return "c64"; }
    static double tol() { return 1e-12; }
    static std::complex<double> from(C v) { return v; }
    static C to(std::complex<double> v) { return v; }
    static bool complex() { return true; }
};

// The typed entry points, overloaded so that one template tests all four.
#define FACTOR_API(T, X)                                                                                            \
    static cusparseStatus_t ilu_buffer(cusparseHandle_t h, int m, int nnz, cusparseMatDescr_t d, T *v, int *o,     \
                                       int *c, csrilu02Info_t i, int *s) {                                          \
        return cusparse##X##csrilu02_bufferSize(h, m, nnz, d, (X##type *)v, o, c, i, s);                            \
    }                                                                                                               \
    static cusparseStatus_t ilu_analysis(cusparseHandle_t h, int m, int nnz, cusparseMatDescr_t d, T *v, int *o,   \
                                         int *c, csrilu02Info_t i, void *b) {                                       \
        return cusparse##X##csrilu02_analysis(h, m, nnz, d, (X##type *)v, o, c, i,                                  \
                                              CUSPARSE_SOLVE_POLICY_USE_LEVEL, b);                                  \
    }                                                                                                               \
    static cusparseStatus_t ilu(cusparseHandle_t h, int m, int nnz, cusparseMatDescr_t d, T *v, int *o, int *c,    \
                                csrilu02Info_t i, void *b) {                                                        \
        return cusparse##X##csrilu02(h, m, nnz, d, (X##type *)v, o, c, i, CUSPARSE_SOLVE_POLICY_NO_LEVEL, b);       \
    }                                                                                                               \
    static cusparseStatus_t ic_buffer(cusparseHandle_t h, int m, int nnz, cusparseMatDescr_t d, T *v, int *o,      \
                                      int *c, csric02Info_t i, int *s) {                                            \
        return cusparse##X##csric02_bufferSize(h, m, nnz, d, (X##type *)v, o, c, i, s);                             \
    }                                                                                                               \
    static cusparseStatus_t ic_analysis(cusparseHandle_t h, int m, int nnz, cusparseMatDescr_t d, T *v, int *o,    \
                                        int *c, csric02Info_t i, void *b) {                                         \
        return cusparse##X##csric02_analysis(h, m, nnz, d, (X##type *)v, o, c, i, CUSPARSE_SOLVE_POLICY_USE_LEVEL,  \
                                             b);                                                                    \
    }                                                                                                               \
    static cusparseStatus_t ic(cusparseHandle_t h, int m, int nnz, cusparseMatDescr_t d, T *v, int *o, int *c,     \
                               csric02Info_t i, void *b) {                                                          \
        return cusparse##X##csric02(h, m, nnz, d, (X##type *)v, o, c, i, CUSPARSE_SOLVE_POLICY_NO_LEVEL, b);        \
    }

typedef float Stype;
typedef double Dtype;
typedef cuComplex Ctype;
typedef cuDoubleComplex Ztype;
FACTOR_API(float, S)
FACTOR_API(double, D)
FACTOR_API(std::complex<float>, C)
FACTOR_API(std::complex<double>, Z)

// A random n x n pattern with the whole diagonal, symmetric when
// `hermitian` (values then Hermitian); diagonally dominant, so the
// factorizations have no zero pivot.
static std::vector<C> random_matrix(int n, bool hermitian, bool complex_values) {
    std::vector<C> a((size_t)n * n);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < (hermitian ? i : n); j++)
            if (i != j && rnd_int(100) < 30) {
                C v(rnd(), complex_values ? rnd() : 0);
                if (v == C(0)) v = C(0.25, 0);
                a[(size_t)i * n + j] = v;
                if (hermitian) a[(size_t)j * n + i] = std::conj(v);
            }
    for (int i = 0; i < n; i++) {
        double sum = 0;
        for (int j = 0; j < n; j++) sum += std::abs(a[(size_t)i * n + j]) + std::abs(a[(size_t)j * n + i]);
        a[(size_t)i * n + i] = C(sum + 1, 0);
    }
    return a;
}

template <typename T> struct HostCsr {
    std::vector<int> offsets, cols;
    std::vector<T> values;
    HostCsr(const std::vector<C> &a, int n, int base) {
        offsets.push_back(base);
        for (int i = 0; i < n; i++) {
            for (int j = 0; j < n; j++)
                if (a[(size_t)i * n + j] != C(0)) {
                    cols.push_back(j + base);
                    values.push_back(Type<T>::from(a[(size_t)i * n + j]));
                }
            offsets.push_back((int)cols.size() + base);
        }
    }
};

template <typename T> static void ilu_case(cusparseHandle_t h, int base) {
    const int n = 14;
    std::vector<C> a = random_matrix(n, false, Type<T>::complex());
    HostCsr<T> csr(a, n, base);
    int nnz = (int)csr.cols.size();
    int *doff = to_device(csr.offsets), *dcol = to_device(csr.cols);
    T *dval = to_device(csr.values);
    cusparseMatDescr_t descr;
    SP(cusparseCreateMatDescr(&descr));
    SP(cusparseSetMatType(descr, CUSPARSE_MATRIX_TYPE_GENERAL));
    SP(cusparseSetMatIndexBase(descr, base ? CUSPARSE_INDEX_BASE_ONE : CUSPARSE_INDEX_BASE_ZERO));
    csrilu02Info_t info;
    SP(cusparseCreateCsrilu02Info(&info));
    int size = 0;
    SP(ilu_buffer(h, n, nnz, descr, dval, doff, dcol, info, &size));
    EXPECT(size > 0, "buffer size %d", size);
    void *buffer;
    CHECK(cudaMalloc(&buffer, size));
    SP(ilu_analysis(h, n, nnz, descr, dval, doff, dcol, info, buffer));
    int pivot = 99;
    SP(cusparseXcsrilu02_zeroPivot(h, info, &pivot));
    EXPECT(pivot == -1, "structural pivot %d", pivot);
    SP(ilu(h, n, nnz, descr, dval, doff, dcol, info, buffer));
    SP(cusparseXcsrilu02_zeroPivot(h, info, &pivot));
    EXPECT(pivot == -1, "numerical pivot %d", pivot);
    std::vector<T> f = to_host(dval, nnz);
    // L (unit lower) and U (upper) from the factors, dense.
    std::vector<C> l((size_t)n * n), u((size_t)n * n);
    for (int i = 0; i < n; i++) {
        l[(size_t)i * n + i] = 1;
        for (int k = csr.offsets[i] - base; k < csr.offsets[i + 1] - base; k++) {
            int j = csr.cols[k] - base;
            (j < i ? l : u)[(size_t)i * n + j] = Type<T>::to(f[k]);
        }
    }
    for (int i = 0; i < n; i++)
        for (int k = csr.offsets[i] - base; k < csr.offsets[i + 1] - base; k++) {
            int j = csr.cols[k] - base;
            C lu = 0;
            for (int q = 0; q <= std::min(i, j); q++) lu += l[(size_t)i * n + q] * u[(size_t)q * n + j];
            C want = a[(size_t)i * n + j];
            EXPECT(std::abs(lu - want) <= Type<T>::tol() * (1 + std::abs(want)), "ilu0 %s (LU)(%d,%d) = (%g,%g) want (%g,%g)",
                   Type<T>::name(), i, j, lu.real(), lu.imag(), want.real(), want.imag());
        }
    SP(cusparseDestroyCsrilu02Info(info));
    SP(cusparseDestroyMatDescr(descr));
    CHECK(cudaFree(doff));
    CHECK(cudaFree(dcol));
    CHECK(cudaFree(dval));
    CHECK(cudaFree(buffer));
    printf("ilu0 %s base %d: ok\n", Type<T>::name(), base);
}

template <typename T> static void ic_case(cusparseHandle_t h, int base) {
    const int n = 13;
    std::vector<C> a = random_matrix(n, true, Type<T>::complex());
    HostCsr<T> csr(a, n, base);
    int nnz = (int)csr.cols.size();
    int *doff = to_device(csr.offsets), *dcol = to_device(csr.cols);
    T *dval = to_device(csr.values);
    cusparseMatDescr_t descr;
    SP(cusparseCreateMatDescr(&descr));
    SP(cusparseSetMatIndexBase(descr, base ? CUSPARSE_INDEX_BASE_ONE : CUSPARSE_INDEX_BASE_ZERO));
    csric02Info_t info;
    SP(cusparseCreateCsric02Info(&info));
    int size = 0;
    SP(ic_buffer(h, n, nnz, descr, dval, doff, dcol, info, &size));
    void *buffer;
    CHECK(cudaMalloc(&buffer, size));
    SP(ic_analysis(h, n, nnz, descr, dval, doff, dcol, info, buffer));
    SP(ic(h, n, nnz, descr, dval, doff, dcol, info, buffer));
    int pivot = 99;
    SP(cusparseXcsric02_zeroPivot(h, info, &pivot));
    EXPECT(pivot == -1, "ic0 pivot %d", pivot);
    std::vector<T> f = to_host(dval, nnz);
    std::vector<C> l((size_t)n * n);
    for (int i = 0; i < n; i++)
        for (int k = csr.offsets[i] - base; k < csr.offsets[i + 1] - base; k++) {
            int j = csr.cols[k] - base;
            if (j <= i)
                l[(size_t)i * n + j] = Type<T>::to(f[k]);
            else  // the upper triangle is left as it was
                EXPECT(f[k] == csr.values[k], "ic0 changed upper entry (%d,%d)", i, j);
        }
    for (int i = 0; i < n; i++)
        for (int k = csr.offsets[i] - base; k < csr.offsets[i + 1] - base; k++) {
            int j = csr.cols[k] - base;
            if (j > i) continue;
            C llh = 0;
            for (int q = 0; q <= j; q++) llh += l[(size_t)i * n + q] * std::conj(l[(size_t)j * n + q]);
            C want = a[(size_t)i * n + j];
            EXPECT(std::abs(llh - want) <= Type<T>::tol() * (1 + std::abs(want)),
                   "ic0 %s (LL^H)(%d,%d) = (%g,%g) want (%g,%g)", Type<T>::name(), i, j, llh.real(), llh.imag(),
                   want.real(), want.imag());
        }
    SP(cusparseDestroyCsric02Info(info));
    SP(cusparseDestroyMatDescr(descr));
    CHECK(cudaFree(doff));
    CHECK(cudaFree(dcol));
    CHECK(cudaFree(dval));
    CHECK(cudaFree(buffer));
    printf("ic0 %s base %d: ok\n", Type<T>::name(), base);
}

// Zero pivots: a structural one (row 2 has no diagonal entry, base one,
// so position 3) found by the analysis; a numerical one (U(1,1) = 1 - 1)
// in host and device pointer mode; the same matrix with a boost.
static void zero_pivot_case(cusparseHandle_t h) {
    cusparseMatDescr_t descr;
    SP(cusparseCreateMatDescr(&descr));
    SP(cusparseSetMatIndexBase(descr, CUSPARSE_INDEX_BASE_ONE));
    csrilu02Info_t info;
    SP(cusparseCreateCsrilu02Info(&info));
    // [[2, 1, 0], [1, 2, 0], [1, 0, 0]]: row 3 (base one) lacks (3,3).
    std::vector<int> off = {1, 3, 5, 6}, col = {1, 2, 1, 2, 1};
    std::vector<double> val = {2, 1, 1, 2, 1};
    int *doff = to_device(off), *dcol = to_device(col);
    double *dval = to_device(val);
    void *buffer;
    CHECK(cudaMalloc(&buffer, 256));
    SP(cusparseDcsrilu02_analysis(h, 3, 5, descr, dval, doff, dcol, info, CUSPARSE_SOLVE_POLICY_NO_LEVEL, buffer));
    int pivot = 0;
    SP_EXPECT(cusparseXcsrilu02_zeroPivot(h, info, &pivot), CUSPARSE_STATUS_ZERO_PIVOT);
    EXPECT(pivot == 3, "structural zero pivot at %d, want 3", pivot);
    // [[1, 1], [1, 1]], base zero: U(1,1) = 0.
    SP(cusparseSetMatIndexBase(descr, CUSPARSE_INDEX_BASE_ZERO));
    std::vector<int> off2 = {0, 2, 4}, col2 = {0, 1, 0, 1};
    std::vector<float> ones(4, 1.0f);
    int *doff2 = to_device(off2), *dcol2 = to_device(col2);
    float *dval2 = to_device(ones);
    SP(cusparseScsrilu02_analysis(h, 2, 4, descr, dval2, doff2, dcol2, info, CUSPARSE_SOLVE_POLICY_NO_LEVEL, buffer));
    SP(cusparseXcsrilu02_zeroPivot(h, info, &pivot));
    EXPECT(pivot == -1, "no structural zero, got %d", pivot);
    SP(cusparseScsrilu02(h, 2, 4, descr, dval2, doff2, dcol2, info, CUSPARSE_SOLVE_POLICY_NO_LEVEL, buffer));
    int *dpivot = to_device(std::vector<int>(1, 42));
    SP(cusparseSetPointerMode(h, CUSPARSE_POINTER_MODE_DEVICE));
    SP_EXPECT(cusparseXcsrilu02_zeroPivot(h, info, dpivot), CUSPARSE_STATUS_ZERO_PIVOT);
    SP(cusparseSetPointerMode(h, CUSPARSE_POINTER_MODE_HOST));
    EXPECT(to_host(dpivot, 1)[0] == 1, "numerical zero pivot (device) at %d, want 1", to_host(dpivot, 1)[0]);
    // With a boost, the zero pivot becomes 4 and is not reported.
    CHECK(cudaMemcpy(dval2, ones.data(), 4 * sizeof(float), cudaMemcpyHostToDevice));
    double tol = 1e-6;
    float boost = 4;
    SP(cusparseScsrilu02_numericBoost(h, info, 1, &tol, &boost));
    SP(cusparseScsrilu02(h, 2, 4, descr, dval2, doff2, dcol2, info, CUSPARSE_SOLVE_POLICY_NO_LEVEL, buffer));
    SP(cusparseXcsrilu02_zeroPivot(h, info, &pivot));
    EXPECT(pivot == -1, "boosted pivot reported at %d", pivot);
    std::vector<float> f = to_host(dval2, 4);
    EXPECT(f[0] == 1 && f[1] == 1 && f[2] == 1 && f[3] == 4, "boosted factors %g %g %g %g", f[0], f[1], f[2], f[3]);
    SP(cusparseScsrilu02_numericBoost(h, info, 0, &tol, &boost));
    SP(cusparseDestroyCsrilu02Info(info));
    // IC(0): [[1, 1], [1, 1]] gives L(1,1) = sqrt(0).
    csric02Info_t icinfo;
    SP(cusparseCreateCsric02Info(&icinfo));
    CHECK(cudaMemcpy(dval2, ones.data(), 4 * sizeof(float), cudaMemcpyHostToDevice));
    SP(cusparseScsric02_analysis(h, 2, 4, descr, dval2, doff2, dcol2, icinfo, CUSPARSE_SOLVE_POLICY_NO_LEVEL, buffer));
    SP(cusparseScsric02(h, 2, 4, descr, dval2, doff2, dcol2, icinfo, CUSPARSE_SOLVE_POLICY_NO_LEVEL, buffer));
    SP_EXPECT(cusparseXcsric02_zeroPivot(h, icinfo, &pivot), CUSPARSE_STATUS_ZERO_PIVOT);
    EXPECT(pivot == 1, "ic0 numerical zero pivot at %d, want 1", pivot);
    SP(cusparseDestroyCsric02Info(icinfo));
    SP(cusparseDestroyMatDescr(descr));
    CHECK(cudaFree(doff));
    CHECK(cudaFree(dcol));
    CHECK(cudaFree(dval));
    CHECK(cudaFree(doff2));
    CHECK(cudaFree(dcol2));
    CHECK(cudaFree(dval2));
    CHECK(cudaFree(dpivot));
    CHECK(cudaFree(buffer));
    printf("zero pivots: ok\n");
}

static void error_cases() {
    cusparseHandle_t h;
    SP(cusparseCreate(&h));
    int *d = to_device(std::vector<int>(8, 0));
    double *dv = to_device(std::vector<double>(8, 0));
    size_t size;
    int isize;
    cusparseMatDescr_t descr;
    SP(cusparseCreateMatDescr(&descr));
    SP_EXPECT(cusparseCreateIdentityPermutation(NULL, 4, d), CUSPARSE_STATUS_NOT_INITIALIZED);
    SP_EXPECT(cusparseCreateIdentityPermutation(h, -1, d), CUSPARSE_STATUS_INVALID_VALUE);
    SP_EXPECT(cusparseCreateIdentityPermutation(h, 4, NULL), CUSPARSE_STATUS_INVALID_VALUE);
    SP_EXPECT(cusparseXcoosort_bufferSizeExt(h, 2, -2, 2, d, d, &size), CUSPARSE_STATUS_INVALID_VALUE);
    SP_EXPECT(cusparseXcoosort_bufferSizeExt(h, 2, 2, 2, d, d, NULL), CUSPARSE_STATUS_INVALID_VALUE);
    SP_EXPECT(cusparseXcoosortByRow(h, 2, 2, -1, d, d, d, NULL), CUSPARSE_STATUS_INVALID_VALUE);
    SP_EXPECT(cusparseXcoosortByColumn(h, 2, 2, 4, NULL, d, d, NULL), CUSPARSE_STATUS_INVALID_VALUE);
    SP_EXPECT(cusparseXcsrsort(h, 2, 2, 2, NULL, d, d, d, NULL), CUSPARSE_STATUS_INVALID_VALUE);
    SP_EXPECT(cusparseXcscsort(h, 2, 2, 200, descr, d, d, d, NULL), CUSPARSE_STATUS_INVALID_VALUE);
    // Gather with sizes that do not agree.
    cusparseSpVecDescr_t vx;
    cusparseDnVecDescr_t vy;
    SP(cusparseCreateSpVec(&vx, 8, 4, d, dv, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_64F));
    SP(cusparseCreateDnVec(&vy, 7, dv, CUDA_R_64F));
    SP_EXPECT(cusparseGather(h, vy, vx), CUSPARSE_STATUS_INVALID_VALUE);
    SP_EXPECT(cusparseCreateSpVec(&vx, 4, 5, d, dv, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_64F),
              CUSPARSE_STATUS_INVALID_VALUE);
    SP(cusparseDestroySpVec(vx));
    SP_EXPECT(cusparseDestroySpVec(vx), CUSPARSE_STATUS_INVALID_VALUE);
    SP(cusparseDestroyDnVec(vy));
    // Factorizations: bad sizes, wrong info kind, matrix type, policy.
    csrilu02Info_t ilu;
    csric02Info_t icinfo;
    SP(cusparseCreateCsrilu02Info(&ilu));
    SP(cusparseCreateCsric02Info(&icinfo));
    SP_EXPECT(cusparseCreateCsrilu02Info(NULL), CUSPARSE_STATUS_INVALID_VALUE);
    SP_EXPECT(cusparseDcsrilu02_bufferSize(NULL, 2, 2, descr, dv, d, d, ilu, &isize), CUSPARSE_STATUS_NOT_INITIALIZED);
    SP_EXPECT(cusparseDcsrilu02_bufferSize(h, -1, 2, descr, dv, d, d, ilu, &isize), CUSPARSE_STATUS_INVALID_VALUE);
    SP_EXPECT(cusparseDcsrilu02_bufferSize(h, 2, 2, descr, dv, d, d, ilu, NULL), CUSPARSE_STATUS_INVALID_VALUE);
    SP_EXPECT(cusparseDcsrilu02_analysis(h, 2, -3, descr, dv, d, d, ilu, CUSPARSE_SOLVE_POLICY_NO_LEVEL, NULL),
              CUSPARSE_STATUS_INVALID_VALUE);
    SP_EXPECT(cusparseDcsrilu02(h, 2, 2, descr, dv, d, d, (csrilu02Info_t)icinfo, CUSPARSE_SOLVE_POLICY_NO_LEVEL, NULL),
              CUSPARSE_STATUS_INVALID_VALUE);
    SP_EXPECT(cusparseDcsric02(h, 2, 2, descr, dv, NULL, d, icinfo, CUSPARSE_SOLVE_POLICY_NO_LEVEL, NULL),
              CUSPARSE_STATUS_INVALID_VALUE);
    SP_EXPECT(cusparseDcsric02(h, 2, 2, descr, dv, d, d, icinfo, (cusparseSolvePolicy_t)5, NULL),
              CUSPARSE_STATUS_INVALID_VALUE);
    SP(cusparseSetMatType(descr, CUSPARSE_MATRIX_TYPE_SYMMETRIC));
    SP_EXPECT(cusparseDcsric02_analysis(h, 2, 2, descr, dv, d, d, icinfo, CUSPARSE_SOLVE_POLICY_NO_LEVEL, NULL),
              CUSPARSE_STATUS_MATRIX_TYPE_NOT_SUPPORTED);
    int pivot;
    SP_EXPECT(cusparseXcsrilu02_zeroPivot(h, ilu, NULL), CUSPARSE_STATUS_INVALID_VALUE);
    SP_EXPECT(cusparseXcsric02_zeroPivot(h, (csric02Info_t)ilu, &pivot), CUSPARSE_STATUS_INVALID_VALUE);
    SP(cusparseDestroyCsrilu02Info(ilu));
    SP_EXPECT(cusparseXcsrilu02_zeroPivot(h, ilu, &pivot), CUSPARSE_STATUS_INVALID_VALUE);
    SP_EXPECT(cusparseDestroyCsrilu02Info(ilu), CUSPARSE_STATUS_INVALID_VALUE);
    SP(cusparseDestroyCsric02Info(icinfo));
    SP(cusparseDestroyMatDescr(descr));
    SP(cusparseDestroy(h));
    CHECK(cudaFree(d));
    CHECK(cudaFree(dv));
    printf("errors: ok\n");
}

int main() {
    cusparseHandle_t h;
    SP(cusparseCreate(&h));
    coosort_case(h, true);
    coosort_case(h, false);
    compressed_sort_case(h, true, 0);
    compressed_sort_case(h, false, 1);
    scatter_case(h);
    for (int base = 0; base < 2; base++) {
        ilu_case<float>(h, base);
        ilu_case<double>(h, base);
        ilu_case<std::complex<float> >(h, base);
        ilu_case<std::complex<double> >(h, base);
        ic_case<float>(h, base);
        ic_case<double>(h, base);
        ic_case<std::complex<float> >(h, base);
        ic_case<std::complex<double> >(h, base);
    }
    zero_pivot_case(h);
    SP(cusparseDestroy(h));
    error_cases();
    CHECK(cudaGetLastError());
    printf("PASS\n");
    return 0;
}
