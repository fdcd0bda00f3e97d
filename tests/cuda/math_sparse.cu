// cuSPARSE's generic API and conversions, checked against dense host
// computations: SpMV and SpMM (CSR, CSC, COO; f32, f64, c32, c64; zero and
// one base; 32- and 64-bit indices; transposes; row- and column-major dense
// matrices; host and device pointer mode), SpGEMM, SpSV (lower, upper,
// unit diagonal, transposed), Csr2cscEx2, Xcoo2csr, Xcsr2coo,
// SparseToDense, DenseToSparse; then the library's statuses for bad input.
//
// Prints one `<case>: ok` line per case; `FAIL: <reason>` and exit status 1
// on any mismatch, `PASS` as the last line on success.

#include <cuda_runtime.h>
#include <cusparse.h>

#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
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

typedef std::complex<double> C;

template <typename T> struct Type;
template <> struct Type<float> {
    static const cudaDataType id = CUDA_R_32F;
    static const char *name() { return "f32"; }
    static double tol() { return 2e-5; }
    static float from(C v) { return (float)v.real(); }
    static C to(float v) { return C(v, 0); }
};
template <> struct Type<double> {
    static const cudaDataType id = CUDA_R_64F;
    static const char *name() { return "f64"; }
    static double tol() { return 1e-12; }
    static double from(C v) { return v.real(); }
    static C to(double v) { return C(v, 0); }
};
template <> struct Type<std::complex<float> > {
    static const cudaDataType id = CUDA_C_32F;
    static const char *name() { return "c32"; }
    static double tol() { return 2e-5; }
    static std::complex<float> from(C v) { return std::complex<float>((float)v.real(), (float)v.imag()); }
    static C to(std::complex<float> v) { return C(v.real(), v.imag()); }
};
template <> struct Type<std::complex<double> > {
    static const cudaDataType id = CUDA_C_64F;
    static const char *name() { return "c64"; }
    static double tol() { return 1e-12; }
    static std::complex<double> from(C v) { return v; }
    static C to(std::complex<double> v) { return v; }
};

static unsigned rng_state = 12345;
static double rnd() {  // in [-1, 1), on a grid of 1/64 so sums stay exact-ish
    rng_state = rng_state * 1103515245u + 12345u;
    return (double)((int)((rng_state >> 16) % 128) - 64) / 64.0;
}

// A dense m x n host matrix (row-major) with about `density` of it nonzero.
static std::vector<C> random_sparse(int m, int n, double density, bool complex_values) {
    std::vector<C> a((size_t)m * n);
    for (size_t i = 0; i < a.size(); i++) {
        double keep = (rnd() + 1) / 2;
        if (keep < density) {
            double re = rnd();
            a[i] = C(re == 0 ? 0.5 : re, complex_values ? rnd() : 0);
        }
    }
    return a;
}

static bool close(C got, C want, double tol) {
    return std::abs(got - want) <= tol * (1 + std::abs(want));
}

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

// Host CSR (or, by rows of the transpose, CSC) of a row-major dense matrix.
template <typename T, typename I>
static void compress(const std::vector<C> &a, int m, int n, bool by_columns, int base,
                     std::vector<I> &offsets, std::vector<I> &indices, std::vector<T> &values) {
    int outer = by_columns ? n : m, inner = by_columns ? m : n;
    offsets.assign(1, (I)base);
    indices.clear();
    values.clear();
    for (int o = 0; o < outer; o++) {
        for (int i = 0; i < inner; i++) {
            C v = by_columns ? a[(size_t)i * n + o] : a[(size_t)o * n + i];
            if (v != C(0)) {
                indices.push_back((I)(i + base));
                values.push_back(Type<T>::from(v));
            }
        }
        offsets.push_back((I)(indices.size() + base));
    }
}

enum Format { CSR, CSC, COO };
static const char *format_name(Format f) { return f == CSR ? "csr" : f == CSC ? "csc" : "coo"; }

// A cuSPARSE matrix of `a` in `format`, with its device arrays.
template <typename T, typename I> struct DeviceSparse {
    cusparseSpMatDescr_t descr;
    I *offsets, *indices;
    T *values;
    int nnz;

    DeviceSparse(const std::vector<C> &a, int m, int n, Format format, int base) {
        std::vector<I> off, idx;
        std::vector<T> val;
        compress<T, I>(a, m, n, format == CSC, base, off, idx, val);
        nnz = (int)val.size();
        cusparseIndexType_t it = sizeof(I) == 4 ? CUSPARSE_INDEX_32I : CUSPARSE_INDEX_64I;
        cusparseIndexBase_t b = base ? CUSPARSE_INDEX_BASE_ONE : CUSPARSE_INDEX_BASE_ZERO;
        if (format == COO) {
            std::vector<I> rows;
            for (int r = 0; r < m; r++)
                for (I k = off[r]; k < off[r + 1]; k++) rows.push_back((I)(r + base));
            offsets = to_device(rows);
        } else {
            offsets = to_device(off);
        }
        indices = to_device(idx);
        values = to_device(val);
        if (format == CSR)
            SP(cusparseCreateCsr(&descr, m, n, nnz, offsets, indices, values, it, it, b, Type<T>::id));
        else if (format == CSC)
            SP(cusparseCreateCsc(&descr, m, n, nnz, offsets, indices, values, it, it, b, Type<T>::id));
        else
            SP(cusparseCreateCoo(&descr, m, n, nnz, offsets, indices, values, it, b, Type<T>::id));
    }
    ~DeviceSparse() {
        SP(cusparseDestroySpMat(descr));
        CHECK(cudaFree(offsets));
        CHECK(cudaFree(indices));
        CHECK(cudaFree(values));
    }
};

static C op_at(const std::vector<C> &a, int n, cusparseOperation_t op, int i, int j) {
    if (op == CUSPARSE_OPERATION_NON_TRANSPOSE) return a[(size_t)i * n + j];
    C v = a[(size_t)j * n + i];
    return op == CUSPARSE_OPERATION_TRANSPOSE ? v : std::conj(v);
}

template <typename T, typename I>
static void spmv_case(cusparseHandle_t h, Format format, int base, cusparseOperation_t op,
                      bool device_scalars) {
    const int m = 37, n = 29;
    bool cplx = Type<T>::id == CUDA_C_32F || Type<T>::id == CUDA_C_64F;
    std::vector<C> a = random_sparse(m, n, 0.2, cplx);
    int rows = op == CUSPARSE_OPERATION_NON_TRANSPOSE ? m : n;
    int cols = op == CUSPARSE_OPERATION_NON_TRANSPOSE ? n : m;
    std::vector<T> x(cols), y(rows);
    for (auto &v : x) v = Type<T>::from(C(rnd(), cplx ? rnd() : 0));
    for (auto &v : y) v = Type<T>::from(C(rnd(), cplx ? rnd() : 0));
    T alpha = Type<T>::from(C(1.5, cplx ? -0.5 : 0)), beta = Type<T>::from(C(-0.75, 0));
    DeviceSparse<T, I> sa(a, m, n, format, base);
    T *dx = to_device(x), *dy = to_device(y);
    cusparseDnVecDescr_t vx, vy;
    SP(cusparseCreateDnVec(&vx, cols, dx, Type<T>::id));
    SP(cusparseCreateDnVec(&vy, rows, dy, Type<T>::id));
    const void *pa = &alpha, *pb = &beta;
    T *dscalars = NULL;
    if (device_scalars) {
        std::vector<T> s = {alpha, beta};
        dscalars = to_device(s);
        pa = dscalars;
        pb = dscalars + 1;
        SP(cusparseSetPointerMode(h, CUSPARSE_POINTER_MODE_DEVICE));
    }
    size_t size = 0;
    SP(cusparseSpMV_bufferSize(h, op, pa, sa.descr, vx, pb, vy, Type<T>::id, CUSPARSE_SPMV_ALG_DEFAULT, &size));
    void *buffer = NULL;
    CHECK(cudaMalloc(&buffer, size));
    SP(cusparseSpMV(h, op, pa, sa.descr, vx, pb, vy, Type<T>::id, CUSPARSE_SPMV_ALG_DEFAULT, buffer));
    if (device_scalars) SP(cusparseSetPointerMode(h, CUSPARSE_POINTER_MODE_HOST));
    std::vector<T> got = to_host(dy, rows);
    for (int i = 0; i < rows; i++) {
        C sum = 0;
        for (int j = 0; j < cols; j++) sum += op_at(a, n, op, i, j) * Type<T>::to(x[j]);
        C want = Type<T>::to(alpha) * sum + Type<T>::to(beta) * Type<T>::to(y[i]);
        EXPECT(close(Type<T>::to(got[i]), want, Type<T>::tol()),
               "spmv %s %s y[%d] = (%g,%g), expected (%g,%g)", Type<T>::name(), format_name(format), i,
               Type<T>::to(got[i]).real(), Type<T>::to(got[i]).imag(), want.real(), want.imag());
    }
    SP(cusparseDestroyDnVec(vx));
    SP(cusparseDestroyDnVec(vy));
    CHECK(cudaFree(dx));
    CHECK(cudaFree(dy));
    CHECK(cudaFree(buffer));
    if (dscalars) CHECK(cudaFree(dscalars));
    printf("spmv %s %s i%d base %d op %d%s: ok\n", Type<T>::name(), format_name(format),
           (int)sizeof(I) * 8, base, (int)op, device_scalars ? " device scalars" : "");
}

template <typename T>
static void spmm_case(cusparseHandle_t h, Format format, cusparseOrder_t order,
                      cusparseOperation_t op_a, cusparseOperation_t op_b) {
    const int m = 23, k = 19, n = 7;
    bool cplx = Type<T>::id == CUDA_C_32F || Type<T>::id == CUDA_C_64F;
    // op(A) is m x k, op(B) is k x n, C is m x n.
    int ar = op_a == CUSPARSE_OPERATION_NON_TRANSPOSE ? m : k, ac = op_a == CUSPARSE_OPERATION_NON_TRANSPOSE ? k : m;
    int br = op_b == CUSPARSE_OPERATION_NON_TRANSPOSE ? k : n, bc = op_b == CUSPARSE_OPERATION_NON_TRANSPOSE ? n : k;
    std::vector<C> a = random_sparse(ar, ac, 0.25, cplx);
    bool row_major = order == CUSPARSE_ORDER_ROW;
    int ldb = (row_major ? bc : br) + 3, ldc = (row_major ? n : m) + 2;
    auto at = [&](int ld, int i, int j) { return row_major ? (size_t)i * ld + j : (size_t)j * ld + i; };
    std::vector<T> b((size_t)ldb * (row_major ? br : bc)), c((size_t)ldc * (row_major ? m : n));
    for (auto &v : b) v = Type<T>::from(C(rnd(), cplx ? rnd() : 0));
    for (auto &v : c) v = Type<T>::from(C(rnd(), 0));
    T alpha = Type<T>::from(C(0.5, 0)), beta = Type<T>::from(C(2, cplx ? 1 : 0));
    DeviceSparse<T, int32_t> sa(a, ar, ac, format, 0);
    T *db = to_device(b), *dc = to_device(c);
    cusparseDnMatDescr_t mb, mc;
    SP(cusparseCreateDnMat(&mb, br, bc, ldb, db, Type<T>::id, order));
    SP(cusparseCreateDnMat(&mc, m, n, ldc, dc, Type<T>::id, order));
    size_t size = 0;
    SP(cusparseSpMM_bufferSize(h, op_a, op_b, &alpha, sa.descr, mb, &beta, mc, Type<T>::id, CUSPARSE_SPMM_ALG_DEFAULT, &size));
    void *buffer = NULL;
    CHECK(cudaMalloc(&buffer, size));
    SP(cusparseSpMM_preprocess(h, op_a, op_b, &alpha, sa.descr, mb, &beta, mc, Type<T>::id, CUSPARSE_SPMM_ALG_DEFAULT, buffer));
    SP(cusparseSpMM(h, op_a, op_b, &alpha, sa.descr, mb, &beta, mc, Type<T>::id, CUSPARSE_SPMM_ALG_DEFAULT, buffer));
    std::vector<T> got = to_host(dc, c.size());
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            C sum = 0;
            for (int p = 0; p < k; p++) {
                C bv = op_b == CUSPARSE_OPERATION_NON_TRANSPOSE ? Type<T>::to(b[at(ldb, p, j)]) : Type<T>::to(b[at(ldb, j, p)]);
                if (op_b == CUSPARSE_OPERATION_CONJUGATE_TRANSPOSE) bv = std::conj(bv);
                sum += op_at(a, ac, op_a, i, p) * bv;
            }
            C want = Type<T>::to(alpha) * sum + Type<T>::to(beta) * Type<T>::to(c[at(ldc, i, j)]);
            EXPECT(close(Type<T>::to(got[at(ldc, i, j)]), want, Type<T>::tol()), "spmm %s C(%d,%d)", Type<T>::name(), i, j);
        }
    // The padding between columns (rows) is left alone.
    for (int o = 0; o < (row_major ? m : n); o++)
        for (int p = (row_major ? n : m); p < ldc; p++)
            EXPECT(Type<T>::to(got[(size_t)o * ldc + p]) == Type<T>::to(c[(size_t)o * ldc + p]), "spmm padding changed");
    SP(cusparseDestroyDnMat(mb));
    SP(cusparseDestroyDnMat(mc));
    CHECK(cudaFree(db));
    CHECK(cudaFree(dc));
    CHECK(cudaFree(buffer));
    printf("spmm %s %s %s op %d/%d: ok\n", Type<T>::name(), format_name(format), row_major ? "row" : "col",
           (int)op_a, (int)op_b);
}

template <typename T> static void spgemm_case(cusparseHandle_t h, int base) {
    const int m = 31, k = 27, n = 33;
    bool cplx = Type<T>::id == CUDA_C_32F || Type<T>::id == CUDA_C_64F;
    std::vector<C> a = random_sparse(m, k, 0.12, cplx), b = random_sparse(k, n, 0.12, cplx);
    DeviceSparse<T, int32_t> sa(a, m, k, CSR, base), sb(b, k, n, CSR, base);
    cusparseSpMatDescr_t mc;
    SP(cusparseCreateCsr(&mc, m, n, 0, NULL, NULL, NULL, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I,
                         base ? CUSPARSE_INDEX_BASE_ONE : CUSPARSE_INDEX_BASE_ZERO, Type<T>::id));
    T alpha = Type<T>::from(C(2, 0)), beta = Type<T>::from(C(0, 0));
    cusparseSpGEMMDescr_t g;
    SP(cusparseSpGEMM_createDescr(&g));
    cusparseOperation_t N = CUSPARSE_OPERATION_NON_TRANSPOSE;
    size_t size1 = 0, size2 = 0;
    SP(cusparseSpGEMM_workEstimation(h, N, N, &alpha, sa.descr, sb.descr, &beta, mc, Type<T>::id, CUSPARSE_SPGEMM_DEFAULT, g, &size1, NULL));
    void *buf1, *buf2;
    CHECK(cudaMalloc(&buf1, size1));
    SP(cusparseSpGEMM_workEstimation(h, N, N, &alpha, sa.descr, sb.descr, &beta, mc, Type<T>::id, CUSPARSE_SPGEMM_DEFAULT, g, &size1, buf1));
    SP(cusparseSpGEMM_compute(h, N, N, &alpha, sa.descr, sb.descr, &beta, mc, Type<T>::id, CUSPARSE_SPGEMM_DEFAULT, g, &size2, NULL));
    CHECK(cudaMalloc(&buf2, size2));
    SP(cusparseSpGEMM_compute(h, N, N, &alpha, sa.descr, sb.descr, &beta, mc, Type<T>::id, CUSPARSE_SPGEMM_DEFAULT, g, &size2, buf2));
    int64_t rows, cols, nnz;
    SP(cusparseSpMatGetSize(mc, &rows, &cols, &nnz));
    // The structural pattern of A B.
    std::vector<C> want((size_t)m * n);
    int64_t want_nnz = 0;
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            bool any = false;
            for (int p = 0; p < k; p++)
                if (a[(size_t)i * k + p] != C(0) && b[(size_t)p * n + j] != C(0)) {
                    any = true;
                    want[(size_t)i * n + j] += Type<T>::to(alpha) * a[(size_t)i * k + p] * b[(size_t)p * n + j];
                }
            want_nnz += any;
        }
    EXPECT(rows == m && cols == n && nnz == want_nnz, "spgemm size %lld x %lld nnz %lld, expected nnz %lld",
           (long long)rows, (long long)cols, (long long)nnz, (long long)want_nnz);
    int *c_off, *c_col;
    T *c_val;
    CHECK(cudaMalloc(&c_off, (m + 1) * sizeof(int)));
    CHECK(cudaMalloc(&c_col, nnz * sizeof(int)));
    CHECK(cudaMalloc(&c_val, nnz * sizeof(T)));
    SP(cusparseCsrSetPointers(mc, c_off, c_col, c_val));
    SP(cusparseSpGEMM_copy(h, N, N, &alpha, sa.descr, sb.descr, &beta, mc, Type<T>::id, CUSPARSE_SPGEMM_DEFAULT, g));
    std::vector<int> off = to_host(c_off, m + 1), col = to_host(c_col, nnz);
    std::vector<T> val = to_host(c_val, nnz);
    std::vector<C> got((size_t)m * n);
    EXPECT(off[0] == base && off[m] == nnz + base, "spgemm offsets");
    for (int i = 0; i < m; i++)
        for (int p = off[i] - base; p < off[i + 1] - base; p++) {
            int j = col[p] - base;
            EXPECT(j >= 0 && j < n, "spgemm column %d", j);
            got[(size_t)i * n + j] += Type<T>::to(val[p]);
        }
    for (size_t i = 0; i < got.size(); i++)
        EXPECT(close(got[i], want[i], Type<T>::tol()), "spgemm %s C[%zu]", Type<T>::name(), i);
    SP(cusparseSpGEMM_destroyDescr(g));
    SP(cusparseDestroySpMat(mc));
    CHECK(cudaFree(buf1));
    CHECK(cudaFree(buf2));
    CHECK(cudaFree(c_off));
    CHECK(cudaFree(c_col));
    CHECK(cudaFree(c_val));
    printf("spgemm %s base %d nnz %lld: ok\n", Type<T>::name(), base, (long long)nnz);
}

template <typename T>
static void spsv_case(cusparseHandle_t h, cusparseFillMode_t fill, cusparseDiagType_t diag, cusparseOperation_t op) {
    const int n = 41;
    bool cplx = Type<T>::id == CUDA_C_32F || Type<T>::id == CUDA_C_64F;
    // A full matrix: the solve must use only the triangle named by `fill`.
    std::vector<C> a = random_sparse(n, n, 0.3, cplx);
    for (int i = 0; i < n; i++) a[(size_t)i * n + i] = C(4 + i % 3, cplx ? 1 : 0);
    std::vector<T> x(n);
    for (auto &v : x) v = Type<T>::from(C(rnd(), cplx ? rnd() : 0));
    T alpha = Type<T>::from(C(1.25, 0));
    DeviceSparse<T, int32_t> sa(a, n, n, CSR, 0);
    SP(cusparseSpMatSetAttribute(sa.descr, CUSPARSE_SPMAT_FILL_MODE, &fill, sizeof(fill)));
    SP(cusparseSpMatSetAttribute(sa.descr, CUSPARSE_SPMAT_DIAG_TYPE, &diag, sizeof(diag)));
    cusparseFillMode_t fill_back;
    SP(cusparseSpMatGetAttribute(sa.descr, CUSPARSE_SPMAT_FILL_MODE, &fill_back, sizeof(fill_back)));
    EXPECT(fill_back == fill, "fill mode attribute");
    T *dx = to_device(x), *dy = to_device(std::vector<T>(n));
    cusparseDnVecDescr_t vx, vy;
    SP(cusparseCreateDnVec(&vx, n, dx, Type<T>::id));
    SP(cusparseCreateDnVec(&vy, n, dy, Type<T>::id));
    cusparseSpSVDescr_t d;
    SP(cusparseSpSV_createDescr(&d));
    size_t size = 0;
    SP(cusparseSpSV_bufferSize(h, op, &alpha, sa.descr, vx, vy, Type<T>::id, CUSPARSE_SPSV_ALG_DEFAULT, d, &size));
    void *buffer;
    CHECK(cudaMalloc(&buffer, size));
    SP(cusparseSpSV_analysis(h, op, &alpha, sa.descr, vx, vy, Type<T>::id, CUSPARSE_SPSV_ALG_DEFAULT, d, buffer));
    SP(cusparseSpSV_solve(h, op, &alpha, sa.descr, vx, vy, Type<T>::id, CUSPARSE_SPSV_ALG_DEFAULT, d));
    std::vector<T> y = to_host(dy, n);
    // op(tri(A)) y == alpha x.
    for (int i = 0; i < n; i++) {
        C sum = 0;
        for (int j = 0; j < n; j++) {
            // Entry (i, j) of op(A) is entry (r, c) of A.
            int r = op == CUSPARSE_OPERATION_NON_TRANSPOSE ? i : j, c = op == CUSPARSE_OPERATION_NON_TRANSPOSE ? j : i;
            bool kept = fill == CUSPARSE_FILL_MODE_LOWER ? c <= r : c >= r;
            if (!kept) continue;
            C v = r == c && diag == CUSPARSE_DIAG_TYPE_UNIT ? C(1) : op_at(a, n, op, i, j);
            sum += v * Type<T>::to(y[j]);
        }
        C want = Type<T>::to(alpha) * Type<T>::to(x[i]);
        EXPECT(close(sum, want, 50 * Type<T>::tol()), "spsv %s row %d: (%g,%g) vs (%g,%g)", Type<T>::name(), i,
               sum.real(), sum.imag(), want.real(), want.imag());
    }
    SP(cusparseSpSV_destroyDescr(d));
    SP(cusparseDestroyDnVec(vx));
    SP(cusparseDestroyDnVec(vy));
    CHECK(cudaFree(dx));
    CHECK(cudaFree(dy));
    CHECK(cudaFree(buffer));
    printf("spsv %s fill %d diag %d op %d: ok\n", Type<T>::name(), (int)fill, (int)diag, (int)op);
}

template <typename T> static void conversions_case(cusparseHandle_t h, int base) {
    const int m = 17, n = 23;
    bool cplx = Type<T>::id == CUDA_C_32F || Type<T>::id == CUDA_C_64F;
    std::vector<C> a = random_sparse(m, n, 0.2, cplx);
    std::vector<int> off, idx, coff, cidx;
    std::vector<T> val, cval;
    compress<T, int>(a, m, n, false, base, off, idx, val);
    compress<T, int>(a, m, n, true, base, coff, cidx, cval);
    int nnz = (int)val.size();
    int *d_off = to_device(off), *d_idx = to_device(idx);
    T *d_val = to_device(val);
    cusparseIndexBase_t b = base ? CUSPARSE_INDEX_BASE_ONE : CUSPARSE_INDEX_BASE_ZERO;

    // CSR -> CSC.
    int *d_coff, *d_cidx;
    T *d_cval;
    CHECK(cudaMalloc(&d_coff, (n + 1) * sizeof(int)));
    CHECK(cudaMalloc(&d_cidx, nnz * sizeof(int)));
    CHECK(cudaMalloc(&d_cval, nnz * sizeof(T)));
    size_t size = 0;
    SP(cusparseCsr2cscEx2_bufferSize(h, m, n, nnz, d_val, d_off, d_idx, d_cval, d_coff, d_cidx, Type<T>::id,
                                     CUSPARSE_ACTION_NUMERIC, b, CUSPARSE_CSR2CSC_ALG1, &size));
    void *buffer;
    CHECK(cudaMalloc(&buffer, size));
    SP(cusparseCsr2cscEx2(h, m, n, nnz, d_val, d_off, d_idx, d_cval, d_coff, d_cidx, Type<T>::id,
                          CUSPARSE_ACTION_NUMERIC, b, CUSPARSE_CSR2CSC_ALG1, buffer));
    EXPECT(to_host(d_coff, n + 1) == coff, "csr2csc offsets");
    EXPECT(to_host(d_cidx, nnz) == cidx, "csr2csc row indices");
    std::vector<T> got_cval = to_host(d_cval, nnz);
    for (int i = 0; i < nnz; i++) EXPECT(Type<T>::to(got_cval[i]) == Type<T>::to(cval[i]), "csr2csc value %d", i);
    printf("csr2csc %s base %d: ok\n", Type<T>::name(), base);

    // CSR -> COO rows -> CSR offsets.
    int *d_rows, *d_off2;
    CHECK(cudaMalloc(&d_rows, nnz * sizeof(int)));
    CHECK(cudaMalloc(&d_off2, (m + 1) * sizeof(int)));
    SP(cusparseXcsr2coo(h, d_off, nnz, m, d_rows, b));
    SP(cusparseXcoo2csr(h, d_rows, nnz, m, d_off2, b));
    std::vector<int> rows = to_host(d_rows, nnz);
    for (int r = 0; r < m; r++)
        for (int p = off[r] - base; p < off[r + 1] - base; p++) EXPECT(rows[p] == r + base, "csr2coo row of %d", p);
    EXPECT(to_host(d_off2, m + 1) == off, "coo2csr offsets");
    printf("csr2coo/coo2csr base %d: ok\n", base);

    // Sparse (COO) -> dense (column-major, padded), dense -> sparse (CSR).
    cusparseSpMatDescr_t coo, csr;
    SP(cusparseCreateCoo(&coo, m, n, nnz, d_rows, d_idx, d_val, CUSPARSE_INDEX_32I, b, Type<T>::id));
    const int ld = m + 5;
    T *d_dense = to_device(std::vector<T>((size_t)ld * n, Type<T>::from(C(99, 0))));
    cusparseDnMatDescr_t dense;
    SP(cusparseCreateDnMat(&dense, m, n, ld, d_dense, Type<T>::id, CUSPARSE_ORDER_COL));
    SP(cusparseSparseToDense_bufferSize(h, coo, dense, CUSPARSE_SPARSETODENSE_ALG_DEFAULT, &size));
    SP(cusparseSparseToDense(h, coo, dense, CUSPARSE_SPARSETODENSE_ALG_DEFAULT, buffer));
    std::vector<T> d = to_host(d_dense, (size_t)ld * n);
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) EXPECT(Type<T>::to(d[(size_t)j * ld + i]) == Type<T>::to(Type<T>::from(a[(size_t)i * n + j])), "sparse2dense (%d,%d)", i, j);
    printf("sparse2dense %s base %d: ok\n", Type<T>::name(), base);

    int *e_off, *e_idx;
    T *e_val;
    CHECK(cudaMalloc(&e_off, (m + 1) * sizeof(int)));
    SP(cusparseCreateCsr(&csr, m, n, 0, e_off, NULL, NULL, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I, b, Type<T>::id));
    SP(cusparseDenseToSparse_bufferSize(h, dense, csr, CUSPARSE_DENSETOSPARSE_ALG_DEFAULT, &size));
    SP(cusparseDenseToSparse_analysis(h, dense, csr, CUSPARSE_DENSETOSPARSE_ALG_DEFAULT, buffer));
    int64_t r64, c64, nnz64;
    SP(cusparseSpMatGetSize(csr, &r64, &c64, &nnz64));
    EXPECT(nnz64 == nnz, "dense2sparse nnz %lld, expected %d", (long long)nnz64, nnz);
    CHECK(cudaMalloc(&e_idx, nnz * sizeof(int)));
    CHECK(cudaMalloc(&e_val, nnz * sizeof(T)));
    SP(cusparseCsrSetPointers(csr, e_off, e_idx, e_val));
    SP(cusparseDenseToSparse_convert(h, dense, csr, CUSPARSE_DENSETOSPARSE_ALG_DEFAULT, buffer));
    EXPECT(to_host(e_off, m + 1) == off, "dense2sparse offsets");
    EXPECT(to_host(e_idx, nnz) == idx, "dense2sparse columns");
    std::vector<T> e = to_host(e_val, nnz);
    for (int i = 0; i < nnz; i++) EXPECT(Type<T>::to(e[i]) == Type<T>::to(val[i]), "dense2sparse value %d", i);
    printf("dense2sparse %s base %d: ok\n", Type<T>::name(), base);

    SP(cusparseDestroySpMat(coo));
    SP(cusparseDestroySpMat(csr));
    SP(cusparseDestroyDnMat(dense));
    void *ptrs[] = {d_off, d_idx, d_val, d_coff, d_cidx, d_cval, buffer, d_rows, d_off2, d_dense, e_off, e_idx, e_val};
    for (void *p : ptrs) CHECK(cudaFree(p));
}

template <typename T> static void all_ops(cusparseHandle_t h) {
    cusparseOperation_t N = CUSPARSE_OPERATION_NON_TRANSPOSE, Tr = CUSPARSE_OPERATION_TRANSPOSE,
                        H = CUSPARSE_OPERATION_CONJUGATE_TRANSPOSE;
    bool cplx = Type<T>::id == CUDA_C_32F || Type<T>::id == CUDA_C_64F;
    for (Format f : {CSR, CSC, COO})
        for (int base : {0, 1}) spmv_case<T, int32_t>(h, f, base, N, false);
    spmv_case<T, int32_t>(h, CSR, 0, Tr, false);
    spmv_case<T, int64_t>(h, CSR, 1, N, false);
    spmv_case<T, int64_t>(h, COO, 0, Tr, true);
    if (cplx) spmv_case<T, int32_t>(h, CSC, 0, H, false);
    for (Format f : {CSR, COO})
        for (cusparseOrder_t o : {CUSPARSE_ORDER_COL, CUSPARSE_ORDER_ROW}) spmm_case<T>(h, f, o, N, N);
    spmm_case<T>(h, CSR, CUSPARSE_ORDER_COL, Tr, Tr);
    spmm_case<T>(h, CSC, CUSPARSE_ORDER_ROW, N, cplx ? H : Tr);
    spgemm_case<T>(h, 0);
    spgemm_case<T>(h, 1);
    spsv_case<T>(h, CUSPARSE_FILL_MODE_LOWER, CUSPARSE_DIAG_TYPE_NON_UNIT, N);
    spsv_case<T>(h, CUSPARSE_FILL_MODE_UPPER, CUSPARSE_DIAG_TYPE_NON_UNIT, N);
    spsv_case<T>(h, CUSPARSE_FILL_MODE_LOWER, CUSPARSE_DIAG_TYPE_UNIT, N);
    spsv_case<T>(h, CUSPARSE_FILL_MODE_UPPER, CUSPARSE_DIAG_TYPE_NON_UNIT, Tr);
    conversions_case<T>(h, 0);
    conversions_case<T>(h, 1);
}

static void handle_case() {
    cusparseHandle_t h;
    SP(cusparseCreate(&h));
    int version = 0, major = 0, minor = 0;
    SP(cusparseGetVersion(h, &version));
    SP(cusparseGetProperty(MAJOR_VERSION, &major));
    SP(cusparseGetProperty(MINOR_VERSION, &minor));
    EXPECT(version == CUSPARSE_VERSION && major == CUSPARSE_VER_MAJOR && minor == CUSPARSE_VER_MINOR,
           "version %d (%d.%d)", version, major, minor);
    cudaStream_t s, got;
    CHECK(cudaStreamCreate(&s));
    SP(cusparseSetStream(h, s));
    SP(cusparseGetStream(h, &got));
    EXPECT(got == s, "stream");
    cusparsePointerMode_t mode;
    SP(cusparseSetPointerMode(h, CUSPARSE_POINTER_MODE_DEVICE));
    SP(cusparseGetPointerMode(h, &mode));
    EXPECT(mode == CUSPARSE_POINTER_MODE_DEVICE, "pointer mode");
    SP(cusparseSetPointerMode(h, CUSPARSE_POINTER_MODE_HOST));
    EXPECT(std::string(cusparseGetErrorName(CUSPARSE_STATUS_INVALID_VALUE)) == "CUSPARSE_STATUS_INVALID_VALUE", "error name");
    EXPECT(cusparseGetErrorString(CUSPARSE_STATUS_SUCCESS) != NULL, "error string");
    // Work on a stream of its own, then the default stream again.
    spmv_case<float, int32_t>(h, CSR, 0, CUSPARSE_OPERATION_NON_TRANSPOSE, false);
    SP(cusparseSetStream(h, 0));
    SP(cusparseDestroy(h));
    CHECK(cudaStreamDestroy(s));
    printf("handle: ok\n");
}

static void error_cases() {
    cusparseHandle_t h;
    SP(cusparseCreate(&h));
    std::vector<C> a = random_sparse(8, 6, 0.4, false);
    DeviceSparse<float, int32_t> sa(a, 8, 6, CSR, 0);
    float *dx = to_device(std::vector<float>(6, 1)), *dy = to_device(std::vector<float>(8, 0));
    cusparseDnVecDescr_t vx, vy, vshort, vwild;
    SP(cusparseCreateDnVec(&vx, 6, dx, CUDA_R_32F));
    SP(cusparseCreateDnVec(&vy, 8, dy, CUDA_R_32F));
    SP(cusparseCreateDnVec(&vshort, 5, dx, CUDA_R_32F));
    static float host_array[8];
    SP(cusparseCreateDnVec(&vwild, 8, host_array, CUDA_R_32F));
    float one = 1, zero = 0;
    cusparseOperation_t N = CUSPARSE_OPERATION_NON_TRANSPOSE;
    cusparseSpMVAlg_t alg = CUSPARSE_SPMV_ALG_DEFAULT;
    SP_EXPECT(cusparseSpMV(NULL, N, &one, sa.descr, vx, &zero, vy, CUDA_R_32F, alg, NULL), CUSPARSE_STATUS_NOT_INITIALIZED);
    SP_EXPECT(cusparseSpMV(h, N, &one, sa.descr, vshort, &zero, vy, CUDA_R_32F, alg, NULL), CUSPARSE_STATUS_INVALID_VALUE);
    SP_EXPECT(cusparseSpMV(h, N, &one, sa.descr, vx, &zero, vwild, CUDA_R_32F, alg, NULL), CUSPARSE_STATUS_INVALID_VALUE);
    SP_EXPECT(cusparseSpMV(h, N, NULL, sa.descr, vx, &zero, vy, CUDA_R_32F, alg, NULL), CUSPARSE_STATUS_INVALID_VALUE);
    SP_EXPECT(cusparseSpMV(h, (cusparseOperation_t)7, &one, sa.descr, vx, &zero, vy, CUDA_R_32F, alg, NULL), CUSPARSE_STATUS_INVALID_VALUE);
    SP_EXPECT(cusparseSpMV(h, N, &one, sa.descr, vx, &zero, vy, CUDA_R_16F, alg, NULL), CUSPARSE_STATUS_NOT_SUPPORTED);
    // Values pointing past their allocation.
    cusparseSpMatDescr_t shifted;
    SP(cusparseCreateCsr(&shifted, 8, 6, sa.nnz, sa.offsets, sa.indices, sa.values + 3, CUSPARSE_INDEX_32I,
                         CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
    SP_EXPECT(cusparseSpMV(h, N, &one, shifted, vx, &zero, vy, CUDA_R_32F, alg, NULL), CUSPARSE_STATUS_INVALID_VALUE);
    SP(cusparseDestroySpMat(shifted));
    cusparseSpMatDescr_t bad;
    SP_EXPECT(cusparseCreateCsr(&bad, -1, 6, 0, NULL, NULL, NULL, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I,
                                CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F), CUSPARSE_STATUS_INVALID_VALUE);
    SP_EXPECT(cusparseCreateCsr(&bad, 2, 2, 5, NULL, NULL, NULL, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I,
                                CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F), CUSPARSE_STATUS_INVALID_VALUE);
    // SpGEMM of a transposed operand: not supported by cuSPARSE either.
    cusparseSpGEMMDescr_t g;
    SP(cusparseSpGEMM_createDescr(&g));
    cusparseSpMatDescr_t mc;
    SP(cusparseCreateCsr(&mc, 6, 6, 0, NULL, NULL, NULL, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I,
                         CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
    size_t size;
    SP_EXPECT(cusparseSpGEMM_workEstimation(h, CUSPARSE_OPERATION_TRANSPOSE, N, &one, sa.descr, sa.descr, &zero, mc,
                                            CUDA_R_32F, CUSPARSE_SPGEMM_DEFAULT, g, &size, NULL), CUSPARSE_STATUS_NOT_SUPPORTED);
    SP(cusparseSpGEMM_destroyDescr(g));
    SP(cusparseDestroySpMat(mc));
    // Destroyed descriptors and handles.
    SP(cusparseDestroyDnVec(vshort));
    SP_EXPECT(cusparseSpMV(h, N, &one, sa.descr, vshort, &zero, vy, CUDA_R_32F, alg, NULL), CUSPARSE_STATUS_INVALID_VALUE);
    SP_EXPECT(cusparseDestroyDnVec(vshort), CUSPARSE_STATUS_INVALID_VALUE);
    SP(cusparseSpMV(h, N, &one, sa.descr, vx, &zero, vy, CUDA_R_32F, alg, NULL));
    SP(cusparseDestroy(h));
    SP_EXPECT(cusparseSpMV(h, N, &one, sa.descr, vx, &zero, vy, CUDA_R_32F, alg, NULL), CUSPARSE_STATUS_NOT_INITIALIZED);
    SP_EXPECT(cusparseDestroy(h), CUSPARSE_STATUS_NOT_INITIALIZED);
    SP_EXPECT(cusparseSetStream(h, 0), CUSPARSE_STATUS_NOT_INITIALIZED);
    SP(cusparseDestroyDnVec(vx));
    SP(cusparseDestroyDnVec(vy));
    SP(cusparseDestroyDnVec(vwild));
    CHECK(cudaFree(dx));
    CHECK(cudaFree(dy));
    printf("errors: ok\n");
}

int main() {
    handle_case();
    cusparseHandle_t h;
    SP(cusparseCreate(&h));
    all_ops<float>(h);
    all_ops<double>(h);
    all_ops<std::complex<float> >(h);
    all_ops<std::complex<double> >(h);
    SP(cusparseDestroy(h));
    error_cases();
    CHECK(cudaGetLastError());
    printf("PASS\n");
    return 0;
}
