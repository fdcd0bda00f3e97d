// A stand-in for NVIDIA's cuBLAS, for testing the `cuda` backend's cuBLAS
// calls on hosts without a GPU, together with fake_libcuda.c (whose "device
// memory" is host memory, so the functions here compute on it directly).
//
// It exports every entry point rcud-cuda-driver resolves. The real-valued
// forms (S and D) of axpy, scal, dot, nrm2, asum, amax, amin, copy, swap,
// rot, gemv, cublasGemmEx / StridedBatchedEx / BatchedEx with FP32 or FP64
// operands, Zscal (with positive increments), Sgeam, Sdgmm and the batched
// LU routines in FP32 (Sgetrf/Sgetrs/Sgetri/SmatinvBatched), StrsmBatched
// (side left, no transpose), Sgemv(Strided)Batched and Srotg compute;
// the others answer
// CUBLAS_STATUS_NOT_SUPPORTED (the tests check what reaches them, not
// their arithmetic). Every call appends one line to the file
// FAKE_LOG: `<function> handle=<h> stream=<s> mode=<pointer mode>`, so the
// tests can tell which calls reached the library, on which stream and in
// which pointer mode.
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#ifndef FAKE_LOG
#error "build with -DFAKE_LOG='\"path\"'"
#endif

enum { OK = 0, NOT_INITIALIZED = 1, INVALID_VALUE = 7, NOT_SUPPORTED = 15 };

struct handle {
    void *stream;
    int mode;
};

static void note(const char *call, struct handle *h) {
    FILE *f = fopen(FAKE_LOG, "a");
    if (!f) return;
    fprintf(f, "%s handle=%p stream=%p mode=%d\n", call, (void *)h, h ? h->stream : NULL,
            h ? h->mode : -1);
    fclose(f);
}

int cublasCreate_v2(struct handle **out) {
    struct handle *h = calloc(1, sizeof *h);
    if (!h) return 3;
    *out = h;
    note("cublasCreate", h);
    return OK;
}
int cublasDestroy_v2(struct handle *h) {
    note("cublasDestroy", h);
    free(h);
    return OK;
}
int cublasSetStream_v2(struct handle *h, void *stream) {
    h->stream = stream;
    note("cublasSetStream", h);
    return OK;
}
int cublasSetPointerMode_v2(struct handle *h, int mode) {
    if (mode != 0 && mode != 1) return INVALID_VALUE;
    h->mode = mode;
    return OK;
}

// Element i of a vector of n with increment inc, as BLAS indexes it.
#define AT(v, i, n, inc) (v)[(inc) >= 0 ? (long)(i) * (inc) : (long)((n) - 1 - (i)) * -(inc)]

#define REAL_LEVEL1(P, p, T)                                                                  \
    int cublas##P##axpy_v2(struct handle *h, int n, const T *a, const T *x, int ix, T *y,  \
                           int iy) {                                                       \
        note("cublas" #P "axpy", h);                                                       \
        for (int i = 0; i < n; i++) AT(y, i, n, iy) += *a * AT(x, i, n, ix);              \
        return OK;                                                                         \
    }                                                                                      \
    int cublas##P##scal_v2(struct handle *h, int n, const T *a, T *x, int ix) {            \
        note("cublas" #P "scal", h);                                                       \
        for (int i = 0; i < n; i++) AT(x, i, n, ix) *= *a;                                 \
        return OK;                                                                         \
    }                                                                                      \
    int cublas##P##dot_v2(struct handle *h, int n, const T *x, int ix, const T *y, int iy, \
                          T *r) {                                                          \
        note("cublas" #P "dot", h);                                                        \
        T s = 0;                                                                           \
        for (int i = 0; i < n; i++) s += AT(x, i, n, ix) * AT(y, i, n, iy);               \
        *r = s;                                                                            \
        return OK;                                                                         \
    }                                                                                      \
    int cublas##P##nrm2_v2(struct handle *h, int n, const T *x, int ix, T *r) {            \
        note("cublas" #P "nrm2", h);                                                       \
        double s = 0;                                                                      \
        for (int i = 0; i < n; i++) s += (double)AT(x, i, n, ix) * AT(x, i, n, ix);        \
        *r = (T)sqrt(s);                                                                   \
        return OK;                                                                         \
    }                                                                                      \
    int cublas##P##asum_v2(struct handle *h, int n, const T *x, int ix, T *r) {            \
        note("cublas" #P "asum", h);                                                       \
        T s = 0;                                                                           \
        for (int i = 0; i < n; i++) s += fabs(AT(x, i, n, ix));                            \
        *r = s;                                                                            \
        return OK;                                                                         \
    }                                                                                      \
    int cublasI##p##amax_v2(struct handle *h, int n, const T *x, int ix, int *r) {         \
        note("cublasI" #p "amax", h);                                                      \
        int best = 0;                                                                      \
        for (int i = 0; i < n; i++)                                                        \
            if (!best || fabs(AT(x, i, n, ix)) > fabs(AT(x, best - 1, n, ix))) best = i + 1; \
        *r = best;                                                                         \
        return OK;                                                                         \
    }                                                                                      \
    int cublasI##p##amin_v2(struct handle *h, int n, const T *x, int ix, int *r) {         \
        note("cublasI" #p "amin", h);                                                      \
        int best = 0;                                                                      \
        for (int i = 0; i < n; i++)                                                        \
            if (!best || fabs(AT(x, i, n, ix)) < fabs(AT(x, best - 1, n, ix))) best = i + 1; \
        *r = best;                                                                         \
        return OK;                                                                         \
    }                                                                                      \
    int cublas##P##copy_v2(struct handle *h, int n, const T *x, int ix, T *y, int iy) {    \
        note("cublas" #P "copy", h);                                                       \
        for (int i = 0; i < n; i++) AT(y, i, n, iy) = AT(x, i, n, ix);                     \
        return OK;                                                                         \
    }                                                                                      \
    int cublas##P##swap_v2(struct handle *h, int n, T *x, int ix, T *y, int iy) {          \
        note("cublas" #P "swap", h);                                                       \
        for (int i = 0; i < n; i++) {                                                      \
            T t = AT(x, i, n, ix);                                                         \
            AT(x, i, n, ix) = AT(y, i, n, iy);                                             \
            AT(y, i, n, iy) = t;                                                           \
        }                                                                                  \
        return OK;                                                                         \
    }                                                                                      \
    int cublas##P##rot_v2(struct handle *h, int n, T *x, int ix, T *y, int iy, const T *c, \
                          const T *s) {                                                    \
        note("cublas" #P "rot", h);                                                        \
        for (int i = 0; i < n; i++) {                                                      \
            T a = AT(x, i, n, ix), b = AT(y, i, n, iy);                                    \
            AT(x, i, n, ix) = *c * a + *s * b;                                             \
            AT(y, i, n, iy) = *c * b - *s * a;                                             \
        }                                                                                  \
        return OK;                                                                         \
    }                                                                                      \
    int cublas##P##gemv_v2(struct handle *h, int trans, int m, int n, const T *alpha,      \
                           const T *a, int lda, const T *x, int ix, const T *beta, T *y,   \
                           int iy) {                                                       \
        note("cublas" #P "gemv", h);                                                       \
        if (m < 0 || n < 0 || lda < (m > 1 ? m : 1)) return INVALID_VALUE;                 \
        int rows = trans ? n : m, cols = trans ? m : n;                                    \
        for (int i = 0; i < rows; i++) {                                                   \
            T s = 0;                                                                       \
            for (int j = 0; j < cols; j++)                                                 \
                s += (trans ? a[j + (long)i * lda] : a[i + (long)j * lda]) * AT(x, j, cols, ix); \
            AT(y, i, rows, iy) = *alpha * s + *beta * AT(y, i, rows, iy);                  \
        }                                                                                  \
        return OK;                                                                         \
    }

REAL_LEVEL1(S, s, float)
REAL_LEVEL1(D, d, double)

// NVIDIA's Zscal loads a host alpha with an aligned 16-byte instruction and
// faults when alpha is not 16-byte aligned (seen on an H200, cuBLAS 13.1);
// here that is an invalid value, so that the tests see it.
int cublasZscal_v2(struct handle *h, int n, const double *a, double *x, int ix) {
    note("cublasZscal", h);
    if (h->mode == 0 && ((uintptr_t)a % 16) != 0) return INVALID_VALUE;
    for (int i = 0; i < n; i++) {
        double *v = &x[2 * (long)i * ix], re = v[0], im = v[1];
        v[0] = a[0] * re - a[1] * im;
        v[1] = a[0] * im + a[1] * re;
    }
    return OK;
}

// The complex forms: present, not computed here.
#define UNSUPPORTED(name)                                                                  \
    int name(struct handle *h) {                                                           \
        note(#name, h);                                                                    \
        return NOT_SUPPORTED;                                                              \
    }
UNSUPPORTED(cublasCaxpy_v2)
UNSUPPORTED(cublasZaxpy_v2)
UNSUPPORTED(cublasCscal_v2)
UNSUPPORTED(cublasCsscal_v2)
UNSUPPORTED(cublasZdscal_v2)
UNSUPPORTED(cublasCdotu_v2)
UNSUPPORTED(cublasZdotu_v2)
UNSUPPORTED(cublasCdotc_v2)
UNSUPPORTED(cublasZdotc_v2)
UNSUPPORTED(cublasScnrm2_v2)
UNSUPPORTED(cublasDznrm2_v2)
UNSUPPORTED(cublasScasum_v2)
UNSUPPORTED(cublasDzasum_v2)
UNSUPPORTED(cublasIcamax_v2)
UNSUPPORTED(cublasIzamax_v2)
UNSUPPORTED(cublasIcamin_v2)
UNSUPPORTED(cublasIzamin_v2)
UNSUPPORTED(cublasCcopy_v2)
UNSUPPORTED(cublasZcopy_v2)
UNSUPPORTED(cublasCswap_v2)
UNSUPPORTED(cublasZswap_v2)
UNSUPPORTED(cublasCrot_v2)
UNSUPPORTED(cublasZrot_v2)
UNSUPPORTED(cublasCsrot_v2)
UNSUPPORTED(cublasZdrot_v2)
UNSUPPORTED(cublasCgemv_v2)
UNSUPPORTED(cublasZgemv_v2)

// One product C = alpha op(A) op(B) + beta C in FP32 (type 0, compute 68)
// or FP64 (type 1, compute 70).
static int gemm1(int ta, int tb, int m, int n, int k, const void *alpha, const void *a,
                 int type, int lda, const void *b, int ldb, const void *beta, void *c, int ldc,
                 int compute) {
    if (m < 0 || n < 0 || k < 0) return INVALID_VALUE;
    if (!((type == 0 && compute == 68) || (type == 1 && compute == 70))) return NOT_SUPPORTED;
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) {
            double s = 0;
            for (int l = 0; l < k; l++) {
                long ai = ta ? l + (long)i * lda : i + (long)l * lda;
                long bi = tb ? j + (long)l * ldb : l + (long)j * ldb;
                s += type ? ((const double *)a)[ai] * ((const double *)b)[bi]
                          : (double)((const float *)a)[ai] * ((const float *)b)[bi];
            }
            long ci = i + (long)j * ldc;
            if (type)
                ((double *)c)[ci] = *(const double *)alpha * s +
                                    *(const double *)beta * ((double *)c)[ci];
            else
                ((float *)c)[ci] = (float)(*(const float *)alpha * s +
                                           *(const float *)beta * ((float *)c)[ci]);
        }
    return OK;
}

int cublasGemmEx(struct handle *h, int ta, int tb, int m, int n, int k, const void *alpha,
                 const void *a, int at, int lda, const void *b, int bt, int ldb,
                 const void *beta, void *c, int ct, int ldc, int compute, int algo) {
    (void)algo;
    note("cublasGemmEx", h);
    if (at != bt || bt != ct) return NOT_SUPPORTED;
    return gemm1(ta, tb, m, n, k, alpha, a, at, lda, b, ldb, beta, c, ldc, compute);
}

int cublasGemmStridedBatchedEx(struct handle *h, int ta, int tb, int m, int n, int k,
                               const void *alpha, const void *a, int at, int lda, int64_t sa,
                               const void *b, int bt, int ldb, int64_t sb, const void *beta,
                               void *c, int ct, int ldc, int64_t sc, int batch, int compute,
                               int algo) {
    (void)algo;
    note("cublasGemmStridedBatchedEx", h);
    if (at != bt || bt != ct) return NOT_SUPPORTED;
    size_t e = at ? 8 : 4;
    for (int i = 0; i < batch; i++) {
        int r = gemm1(ta, tb, m, n, k, alpha, (const char *)a + i * sa * e, at, lda,
                      (const char *)b + i * sb * e, ldb, beta, (char *)c + i * sc * e, ldc,
                      compute);
        if (r) return r;
    }
    return OK;
}

int cublasGemmBatchedEx(struct handle *h, int ta, int tb, int m, int n, int k,
                        const void *alpha, const void *const *a, int at, int lda,
                        const void *const *b, int bt, int ldb, const void *beta,
                        void *const *c, int ct, int ldc, int batch, int compute, int algo) {
    (void)algo;
    note("cublasGemmBatchedEx", h);
    if (at != bt || bt != ct) return NOT_SUPPORTED;
    for (int i = 0; i < batch; i++) {
        int r = gemm1(ta, tb, m, n, k, alpha, a[i], at, lda, b[i], ldb, beta, c[i], ldc,
                      compute);
        if (r) return r;
    }
    return OK;
}

// geam and dgmm compute in FP32; the other level-2 and level-3 forms are
// present and answer CUBLAS_STATUS_NOT_SUPPORTED.
int cublasSgeam(struct handle *h, int ta, int tb, int m, int n, const float *alpha,
                const float *a, int lda, const float *beta, const float *b, int ldb, float *c,
                int ldc) {
    note("cublasSgeam", h);
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++)
            c[i + (long)j * ldc] = *alpha * (ta ? a[j + (long)i * lda] : a[i + (long)j * lda]) +
                                   *beta * (tb ? b[j + (long)i * ldb] : b[i + (long)j * ldb]);
    return OK;
}
int cublasSdgmm(struct handle *h, int side, int m, int n, const float *a, int lda,
                const float *x, int incx, float *c, int ldc) {
    note("cublasSdgmm", h);
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) {
            int d = side ? j : i;
            c[i + (long)j * ldc] = a[i + (long)j * lda] * x[(long)d * incx];
        }
    return OK;
}
UNSUPPORTED(cublasDgeam)
UNSUPPORTED(cublasCgeam)
UNSUPPORTED(cublasZgeam)
UNSUPPORTED(cublasDdgmm)
UNSUPPORTED(cublasCdgmm)
UNSUPPORTED(cublasZdgmm)
#define ALL4(f) UNSUPPORTED(cublasS##f##_v2) UNSUPPORTED(cublasD##f##_v2) \
    UNSUPPORTED(cublasC##f##_v2) UNSUPPORTED(cublasZ##f##_v2)
UNSUPPORTED(cublasSger_v2)
UNSUPPORTED(cublasDger_v2)
UNSUPPORTED(cublasCgeru_v2)
UNSUPPORTED(cublasZgeru_v2)
UNSUPPORTED(cublasCgerc_v2)
UNSUPPORTED(cublasZgerc_v2)
ALL4(symv)
UNSUPPORTED(cublasChemv_v2)
UNSUPPORTED(cublasZhemv_v2)
ALL4(trmv)
ALL4(trsv)
ALL4(symm)
UNSUPPORTED(cublasChemm_v2)
UNSUPPORTED(cublasZhemm_v2)
ALL4(syrk)
UNSUPPORTED(cublasCherk_v2)
UNSUPPORTED(cublasZherk_v2)
ALL4(trmm)
ALL4(trsm)

// Banded, packed, rank updates, syr2k/syrkx, rotations: logged, not
// computed, but Srotg (host or device pointer mode: both are host memory
// here), which checks that the server answers host-mode outputs.
ALL4(gbmv)
UNSUPPORTED(cublasSsbmv_v2)
UNSUPPORTED(cublasDsbmv_v2)
UNSUPPORTED(cublasChbmv_v2)
UNSUPPORTED(cublasZhbmv_v2)
UNSUPPORTED(cublasSspmv_v2)
UNSUPPORTED(cublasDspmv_v2)
UNSUPPORTED(cublasChpmv_v2)
UNSUPPORTED(cublasZhpmv_v2)
ALL4(tbmv)
ALL4(tbsv)
ALL4(tpmv)
ALL4(tpsv)
ALL4(syr)
UNSUPPORTED(cublasCher_v2)
UNSUPPORTED(cublasZher_v2)
ALL4(syr2)
UNSUPPORTED(cublasCher2_v2)
UNSUPPORTED(cublasZher2_v2)
UNSUPPORTED(cublasSspr_v2)
UNSUPPORTED(cublasDspr_v2)
UNSUPPORTED(cublasChpr_v2)
UNSUPPORTED(cublasZhpr_v2)
UNSUPPORTED(cublasSspr2_v2)
UNSUPPORTED(cublasDspr2_v2)
UNSUPPORTED(cublasChpr2_v2)
UNSUPPORTED(cublasZhpr2_v2)
ALL4(syr2k)
UNSUPPORTED(cublasCher2k_v2)
UNSUPPORTED(cublasZher2k_v2)
UNSUPPORTED(cublasSsyrkx)
UNSUPPORTED(cublasDsyrkx)
UNSUPPORTED(cublasCsyrkx)
UNSUPPORTED(cublasZsyrkx)
UNSUPPORTED(cublasCherkx)
UNSUPPORTED(cublasZherkx)
int cublasSrotg_v2(struct handle *h, float *a, float *b, float *c, float *s) {
    note("cublasSrotg_v2", h);
    float r = hypotf(*a, *b);
    if (fabsf(*a) <= fabsf(*b)) r = copysignf(r, *b); else r = copysignf(r, *a);
    if (r == 0) {
        *c = 1; *s = 0; *a = 0; *b = 0;
        return OK;
    }
    *c = *a / r;
    *s = *b / r;
    *b = fabsf(*a) > fabsf(*b) ? *s : (*c != 0 ? 1 / *c : 1);
    *a = r;
    return OK;
}
UNSUPPORTED(cublasDrotg_v2)
UNSUPPORTED(cublasCrotg_v2)
UNSUPPORTED(cublasZrotg_v2)
UNSUPPORTED(cublasSrotmg_v2)
UNSUPPORTED(cublasDrotmg_v2)
UNSUPPORTED(cublasSrotm_v2)
UNSUPPORTED(cublasDrotm_v2)

// Batched LU: Sgetrf (with or without pivoting), Sgetrs (no transpose) and
// Sgetri compute on host memory; the other types answer NOT_SUPPORTED.
// Each logs the pointer arrays it was given, so that the tests can tell
// they are the server's copies, not the client's.
static void note_arrays(const char *call, struct handle *h, const void *a, const void *b) {
    FILE *f = fopen(FAKE_LOG, "a");
    if (!f) return;
    fprintf(f, "%s handle=%p stream=%p mode=%d arrays=%p,%p\n", call, (void *)h,
            h ? h->stream : NULL, h ? h->mode : -1, a, b);
    fclose(f);
}

static int sgetrf1(int n, float *a, int lda, int *piv) {
    int info = 0;
    for (int j = 0; j < n; j++) {
        int p = j;
        if (piv) {
            for (int i = j + 1; i < n; i++)
                if (fabsf(a[i + (long)j * lda]) > fabsf(a[p + (long)j * lda])) p = i;
            piv[j] = p + 1;
        }
        if (a[p + (long)j * lda] == 0.0f) {
            if (!info) info = j + 1;
            continue;
        }
        if (p != j)
            for (int c = 0; c < n; c++) {
                float t = a[j + (long)c * lda];
                a[j + (long)c * lda] = a[p + (long)c * lda];
                a[p + (long)c * lda] = t;
            }
        for (int i = j + 1; i < n; i++) a[i + (long)j * lda] /= a[j + (long)j * lda];
        for (int c = j + 1; c < n; c++)
            for (int i = j + 1; i < n; i++)
                a[i + (long)c * lda] -= a[i + (long)j * lda] * a[j + (long)c * lda];
    }
    return info;
}

// Solves A x = b for one column with getrf's factors.
static void sgetrs1(int n, const float *lu, int lda, const int *piv, float *b) {
    if (piv)
        for (int i = 0; i < n; i++) {
            float t = b[i];
            b[i] = b[piv[i] - 1];
            b[piv[i] - 1] = t;
        }
    for (int j = 0; j < n; j++)
        for (int i = j + 1; i < n; i++) b[i] -= lu[i + (long)j * lda] * b[j];
    for (int j = n - 1; j >= 0; j--) {
        b[j] /= lu[j + (long)j * lda];
        for (int i = 0; i < j; i++) b[i] -= lu[i + (long)j * lda] * b[j];
    }
}

int cublasSgetrfBatched(struct handle *h, int n, float *const a[], int lda, int *piv, int *info,
                        int batch) {
    note_arrays("cublasSgetrfBatched", h, a, NULL);
    for (int i = 0; i < batch; i++) info[i] = sgetrf1(n, a[i], lda, piv ? piv + (long)i * n : NULL);
    return OK;
}
int cublasSgetrsBatched(struct handle *h, int trans, int n, int nrhs, const float *const a[],
                        int lda, const int *piv, float *const b[], int ldb, int *info, int batch) {
    note_arrays("cublasSgetrsBatched", h, a, b);
    if (trans != 0) return NOT_SUPPORTED;
    for (int i = 0; i < batch; i++)
        for (int c = 0; c < nrhs; c++)
            sgetrs1(n, a[i], lda, piv ? piv + (long)i * n : NULL, b[i] + (long)c * ldb);
    *info = 0;
    return OK;
}
int cublasSgetriBatched(struct handle *h, int n, const float *const a[], int lda, const int *piv,
                        float *const c[], int ldc, int *info, int batch) {
    note_arrays("cublasSgetriBatched", h, a, c);
    for (int i = 0; i < batch; i++) {
        info[i] = 0;
        for (int k = 0; k < n; k++)
            if (a[i][k + (long)k * lda] == 0.0f) info[i] = k + 1;
        if (info[i]) continue;
        for (int col = 0; col < n; col++) {
            float *x = c[i] + (long)col * ldc;
            for (int r = 0; r < n; r++) x[r] = r == col ? 1.0f : 0.0f;
            sgetrs1(n, a[i], lda, piv ? piv + (long)i * n : NULL, x);
        }
    }
    return OK;
}
int cublasSmatinvBatched(struct handle *h, int n, const float *const a[], int lda,
                         float *const c[], int ldc, int *info, int batch) {
    note_arrays("cublasSmatinvBatched", h, a, c);
    if (n > 32) return INVALID_VALUE;
    for (int i = 0; i < batch; i++) {
        float lu[32 * 32];
        int piv[32];
        for (int col = 0; col < n; col++)
            for (int r = 0; r < n; r++) lu[r + col * n] = a[i][r + (long)col * lda];
        info[i] = sgetrf1(n, lu, n, piv);
        for (int col = 0; col < n; col++) {
            float *x = c[i] + (long)col * ldc;
            for (int r = 0; r < n; r++) x[r] = r == col ? 1.0f : 0.0f;
            sgetrs1(n, lu, n, piv, x);
        }
    }
    return OK;
}
#define MATINV_UNSUPPORTED(t, type)                                                                \
    int cublas##t##matinvBatched(struct handle *h, int n, const type *const a[], int lda,          \
                                 type *const c[], int ldc, int *info, int batch) {                 \
        (void)n, (void)a, (void)lda, (void)c, (void)ldc, (void)info, (void)batch;                  \
        note("cublas" #t "matinvBatched", h);                                                      \
        return NOT_SUPPORTED;                                                                      \
    }
MATINV_UNSUPPORTED(D, double)
MATINV_UNSUPPORTED(C, float)
MATINV_UNSUPPORTED(Z, double)
#define LU_UNSUPPORTED(t, type)                                                                    \
    int cublas##t##getrfBatched(struct handle *h, int n, type *const a[], int lda, int *piv,       \
                                int *info, int batch) {                                            \
        (void)n, (void)a, (void)lda, (void)piv, (void)info, (void)batch;                           \
        note("cublas" #t "getrfBatched", h);                                                       \
        return NOT_SUPPORTED;                                                                      \
    }                                                                                              \
    int cublas##t##getrsBatched(struct handle *h, int trans, int n, int nrhs,                      \
                                const type *const a[], int lda, const int *piv, type *const b[],   \
                                int ldb, int *info, int batch) {                                   \
        (void)trans, (void)n, (void)nrhs, (void)a, (void)lda, (void)piv, (void)b, (void)ldb,       \
            (void)info, (void)batch;                                                               \
        note("cublas" #t "getrsBatched", h);                                                       \
        return NOT_SUPPORTED;                                                                      \
    }                                                                                              \
    int cublas##t##getriBatched(struct handle *h, int n, const type *const a[], int lda,           \
                                const int *piv, type *const c[], int ldc, int *info, int batch) {  \
        (void)n, (void)a, (void)lda, (void)piv, (void)c, (void)ldc, (void)info, (void)batch;       \
        note("cublas" #t "getriBatched", h);                                                       \
        return NOT_SUPPORTED;                                                                      \
    }
LU_UNSUPPORTED(D, double)
LU_UNSUPPORTED(C, float)
LU_UNSUPPORTED(Z, double)

// Batched trsm and gemv: Strsm (side left, no transpose) and Sgemv (both
// layouts) compute; Sgeqrf and Sgels log their arrays and answer
// NOT_SUPPORTED; the other types answer NOT_SUPPORTED.
int cublasStrsmBatched(struct handle *h, int side, int uplo, int trans, int diag, int m, int n,
                       const float *alpha, const float *const a[], int lda, float *const b[],
                       int ldb, int batch) {
    note_arrays("cublasStrsmBatched", h, a, b);
    if (side != 0 || trans != 0) return NOT_SUPPORTED;
    for (int i = 0; i < batch; i++)
        for (int c = 0; c < n; c++) {
            float *x = b[i] + (long)c * ldb;
            for (int r = 0; r < m; r++) x[r] *= *alpha;
            // Forward (lower) or backward (upper) substitution.
            for (int s = 0; s < m; s++) {
                int j = uplo == 0 ? s : m - 1 - s;
                if (diag == 0) x[j] /= a[i][j + (long)j * lda];
                for (int r = 0; r < m; r++)
                    if ((uplo == 0 && r > j) || (uplo == 1 && r < j))
                        x[r] -= a[i][r + (long)j * lda] * x[j];
            }
        }
    return OK;
}

// y = alpha op(A) x + beta y for one item, in FP32.
static void sgemv1(int trans, int m, int n, float alpha, const float *a, int lda, const float *x,
                   int incx, float beta, float *y, int incy) {
    int lx = trans == 0 ? n : m, ly = trans == 0 ? m : n;
    for (int i = 0; i < ly; i++) {
        float s = 0.0f;
        for (int j = 0; j < lx; j++)
            s += (trans == 0 ? a[i + (long)j * lda] : a[j + (long)i * lda]) * AT(x, j, lx, incx);
        AT(y, i, ly, incy) = alpha * s + (beta == 0.0f ? 0.0f : beta * AT(y, i, ly, incy));
    }
}

int cublasSgemvBatched(struct handle *h, int trans, int m, int n, const float *alpha,
                       const float *const a[], int lda, const float *const x[], int incx,
                       const float *beta, float *const y[], int incy, int batch) {
    note_arrays("cublasSgemvBatched", h, a, y);
    if (h->mode != 0) return NOT_SUPPORTED;
    for (int i = 0; i < batch; i++)
        sgemv1(trans, m, n, *alpha, a[i], lda, x[i], incx, *beta, y[i], incy);
    return OK;
}
int cublasSgemvStridedBatched(struct handle *h, int trans, int m, int n, const float *alpha,
                              const float *a, int lda, long long sa, const float *x, int incx,
                              long long sx, const float *beta, float *y, int incy, long long sy,
                              int batch) {
    note("cublasSgemvStridedBatched", h);
    if (h->mode != 0) return NOT_SUPPORTED;
    for (int i = 0; i < batch; i++)
        sgemv1(trans, m, n, *alpha, a + i * sa, lda, x + i * sx, incx, *beta, y + i * sy, incy);
    return OK;
}
int cublasSgeqrfBatched(struct handle *h, int m, int n, float *const a[], int lda,
                        float *const tau[], int *info, int batch) {
    (void)m, (void)n, (void)lda, (void)batch;
    note_arrays("cublasSgeqrfBatched", h, a, tau);
    *info = 0;
    return NOT_SUPPORTED;
}
int cublasSgelsBatched(struct handle *h, int trans, int m, int n, int nrhs, float *const a[],
                       int lda, float *const c[], int ldc, int *info, int *dev_info, int batch) {
    (void)trans, (void)m, (void)n, (void)nrhs, (void)lda, (void)ldc, (void)batch;
    note_arrays("cublasSgelsBatched", h, a, c);
    *info = 0;
    if (dev_info)
        for (int i = 0; i < batch; i++) dev_info[i] = 0;
    return NOT_SUPPORTED;
}
UNSUPPORTED(cublasDtrsmBatched)
UNSUPPORTED(cublasCtrsmBatched)
UNSUPPORTED(cublasZtrsmBatched)
UNSUPPORTED(cublasDgemvBatched)
UNSUPPORTED(cublasCgemvBatched)
UNSUPPORTED(cublasZgemvBatched)
UNSUPPORTED(cublasDgemvStridedBatched)
UNSUPPORTED(cublasCgemvStridedBatched)
UNSUPPORTED(cublasZgemvStridedBatched)
UNSUPPORTED(cublasDgeqrfBatched)
UNSUPPORTED(cublasCgeqrfBatched)
UNSUPPORTED(cublasZgeqrfBatched)
UNSUPPORTED(cublasDgelsBatched)
UNSUPPORTED(cublasCgelsBatched)
UNSUPPORTED(cublasZgelsBatched)
