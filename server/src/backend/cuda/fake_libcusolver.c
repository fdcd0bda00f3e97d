// A stand-in for NVIDIA's cuSOLVER (dense), for testing the `cuda` backend's
// cuSOLVER calls on hosts without a GPU, together with fake_libcuda.c (whose
// "device memory" is host memory, so the functions here compute on it
// directly).
//
// It exports every entry point rcud-cuda-driver resolves. What it enforces
// as cuSOLVER does, or as matters to the backend: a handle's stream must
// have been set (else CUSOLVER_STATUS_EXECUTION_FAILED: the backend must
// bind every handle to its context's stream); every routine that takes a
// workspace gets a non-NULL one of at least what its _bufferSize answered
// (else CUSOLVER_STATUS_INVALID_VALUE), and the fake writes all of it, so
// that a workspace that is not real memory faults the test; gesvd's rwork
// holds min(m, n) - 1 reals. What it computes, for S and D: getrf (partial
// pivoting, or none with ipiv NULL), getrs (op N), potrf and potrs (lower
// or upper); geqrf, ormqr and orgqr of an upper triangular A (whose
// reflectors are the identity: tau = 0); syevd and gesvd of a diagonal A.
// Anything else (the complex forms, a matrix outside those shapes) answers
// CUSOLVER_STATUS_NOT_SUPPORTED: the tests check what reaches the library,
// not its arithmetic. Every call appends one line to the file FAKE_LOG:
// `<function> handle=<h> stream=<s> <arguments>`.
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef FAKE_LOG
#error "build with -DFAKE_LOG='\"path\"'"
#endif

enum {
    OK = 0,
    NOT_INITIALIZED = 1,
    INVALID_VALUE = 3,
    EXECUTION_FAILED = 6,
    NOT_SUPPORTED = 9,
};

struct handle {
    void *stream;
};

__attribute__((format(printf, 3, 4)))
static void note(const char *call, struct handle *h, const char *fmt, ...) {
    FILE *f = fopen(FAKE_LOG, "a");
    if (!f) return;
    fprintf(f, "%s handle=%p stream=%p ", call, (void *)h, h ? h->stream : NULL);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    fputc('\n', f);
    fclose(f);
}

int cusolverDnCreate(struct handle **out) {
    struct handle *h = calloc(1, sizeof *h);
    if (!h) return 2; // CUSOLVER_STATUS_ALLOC_FAILED
    *out = h;
    note("cusolverDnCreate", h, "%s", "");
    return OK;
}

int cusolverDnDestroy(struct handle *h) {
    note("cusolverDnDestroy", h, "%s", "");
    free(h);
    return OK;
}

int cusolverDnSetStream(struct handle *h, void *stream) {
    if (!h) return NOT_INITIALIZED;
    h->stream = stream;
    note("cusolverDnSetStream", h, "%s", "");
    return OK;
}

// The workspace every routine asks for, in elements: enough to tell a
// workspace of the server's own sized from the query from a bogus one.
static int lwork_of(int m, int n) { return 64 + (m > 0 ? m : 0) * (n > 0 ? n : 0); }

// A call's preconditions: a live handle bound to a stream, and (when `size`
// is not 0) a workspace of at least `need` elements of `size` bytes, which
// is then written through.
static int ready(struct handle *h, void *work, int lwork, int need, size_t size) {
    if (!h) return NOT_INITIALIZED;
    if (!h->stream) return EXECUTION_FAILED;
    if (size) {
        if (!work || lwork < need) return INVALID_VALUE;
        memset(work, 0xA5, (size_t)need * size);
    }
    return OK;
}

#define A_(i, j) a[(long)(j) * lda + (i)]
#define B_(i, j) b[(long)(j) * ldb + (i)]

// The real forms: P is S or D, T float or double.
#define REAL(P, T)                                                                               \
    int cusolverDn##P##getrf_bufferSize(struct handle *h, int m, int n, T *a, int lda,         \
                                        int *lwork) {                                           \
        (void)a, (void)lda;                                                                     \
        note("cusolverDn" #P "getrf_bufferSize", h, "m=%d n=%d", m, n);                         \
        *lwork = lwork_of(m, n);                                                                \
        return h ? OK : NOT_INITIALIZED;                                                        \
    }                                                                                           \
    int cusolverDn##P##getrf(struct handle *h, int m, int n, T *a, int lda, T *work, int *ipiv, \
                             int *info) {                                                       \
        note("cusolverDn" #P "getrf", h, "m=%d n=%d lda=%d ipiv=%p work=%p", m, n, lda,         \
             (void *)ipiv, (void *)work);                                                       \
        int r = ready(h, work, lwork_of(m, n), lwork_of(m, n), sizeof(T));                      \
        if (r) return r;                                                                        \
        int k = m < n ? m : n;                                                                  \
        *info = 0;                                                                              \
        for (int j = 0; j < k; j++) {                                                           \
            int p = j;                                                                          \
            if (ipiv) {                                                                         \
                for (int i = j + 1; i < m; i++)                                                 \
                    if (fabs((double)A_(i, j)) > fabs((double)A_(p, j))) p = i;                 \
                ipiv[j] = p + 1;                                                                \
                for (int c = 0; c < n; c++) {                                                   \
                    T t = A_(j, c);                                                             \
                    A_(j, c) = A_(p, c);                                                        \
                    A_(p, c) = t;                                                               \
                }                                                                               \
            }                                                                                   \
            if (A_(j, j) == 0) {                                                                \
                if (!*info) *info = j + 1;                                                      \
                continue;                                                                       \
            }                                                                                   \
            for (int i = j + 1; i < m; i++) {                                                   \
                A_(i, j) /= A_(j, j);                                                           \
                for (int c = j + 1; c < n; c++) A_(i, c) -= A_(i, j) * A_(j, c);                \
            }                                                                                   \
        }                                                                                       \
        return OK;                                                                              \
    }                                                                                           \
    int cusolverDn##P##getrs(struct handle *h, int trans, int n, int nrhs, const T *a, int lda, \
                             const int *ipiv, T *b, int ldb, int *info) {                       \
        note("cusolverDn" #P "getrs", h, "trans=%d n=%d nrhs=%d ipiv=%p", trans, n, nrhs,       \
             (const void *)ipiv);                                                               \
        int r = ready(h, NULL, 0, 0, 0);                                                        \
        if (r) return r;                                                                        \
        if (trans != 0) return NOT_SUPPORTED;                                                   \
        for (int c = 0; c < nrhs; c++) {                                                        \
            if (ipiv)                                                                           \
                for (int i = 0; i < n; i++) {                                                   \
                    T t = B_(i, c);                                                             \
                    B_(i, c) = B_(ipiv[i] - 1, c);                                              \
                    B_(ipiv[i] - 1, c) = t;                                                     \
                }                                                                               \
            for (int i = 0; i < n; i++)                                                         \
                for (int j = 0; j < i; j++) B_(i, c) -= A_(i, j) * B_(j, c);                    \
            for (int i = n - 1; i >= 0; i--) {                                                  \
                for (int j = i + 1; j < n; j++) B_(i, c) -= A_(i, j) * B_(j, c);                \
                B_(i, c) /= A_(i, i);                                                           \
            }                                                                                   \
        }                                                                                       \
        *info = 0;                                                                              \
        return OK;                                                                              \
    }                                                                                           \
    int cusolverDn##P##potrf_bufferSize(struct handle *h, int uplo, int n, T *a, int lda,      \
                                        int *lwork) {                                           \
        (void)a, (void)lda;                                                                     \
        note("cusolverDn" #P "potrf_bufferSize", h, "uplo=%d n=%d", uplo, n);                   \
        *lwork = lwork_of(n, n);                                                                \
        return h ? OK : NOT_INITIALIZED;                                                        \
    }                                                                                           \
    /* The lower factor L (A = L Lᵀ); the upper one is Lᵀ in the other triangle. */           \
    static T P##chol(const T *a, int lda, int upper, int i, int j) {                            \
        return upper ? A_(j, i) : A_(i, j);                                                     \
    }                                                                                           \
    int cusolverDn##P##potrf(struct handle *h, int uplo, int n, T *a, int lda, T *work,         \
                             int lwork, int *info) {                                            \
        note("cusolverDn" #P "potrf", h, "uplo=%d n=%d lda=%d lwork=%d work=%p", uplo, n, lda,  \
             lwork, (void *)work);                                                              \
        int r = ready(h, work, lwork, lwork_of(n, n), sizeof(T));                               \
        if (r) return r;                                                                        \
        *info = 0;                                                                              \
        for (int j = 0; j < n; j++) {                                                           \
            double d = P##chol(a, lda, uplo, j, j);                                             \
            for (int k = 0; k < j; k++) d -= pow(P##chol(a, lda, uplo, j, k), 2);               \
            if (d <= 0) {                                                                       \
                *info = j + 1;                                                                  \
                return OK;                                                                      \
            }                                                                                   \
            T l = (T)sqrt(d);                                                                   \
            A_(j, j) = l;                                                                       \
            for (int i = j + 1; i < n; i++) {                                                   \
                double s = P##chol(a, lda, uplo, i, j);                                         \
                for (int k = 0; k < j; k++)                                                     \
                    s -= P##chol(a, lda, uplo, i, k) * P##chol(a, lda, uplo, j, k);             \
                if (uplo) A_(j, i) = (T)(s / l); else A_(i, j) = (T)(s / l);                    \
            }                                                                                   \
        }                                                                                       \
        return OK;                                                                              \
    }                                                                                           \
    int cusolverDn##P##potrs(struct handle *h, int uplo, int n, int nrhs, const T *a, int lda,  \
                             T *b, int ldb, int *info) {                                        \
        note("cusolverDn" #P "potrs", h, "uplo=%d n=%d nrhs=%d", uplo, n, nrhs);                \
        int r = ready(h, NULL, 0, 0, 0);                                                        \
        if (r) return r;                                                                        \
        for (int c = 0; c < nrhs; c++) {                                                        \
            for (int i = 0; i < n; i++) {                                                       \
                for (int k = 0; k < i; k++) B_(i, c) -= P##chol(a, lda, uplo, i, k) * B_(k, c); \
                B_(i, c) /= P##chol(a, lda, uplo, i, i);                                        \
            }                                                                                   \
            for (int i = n - 1; i >= 0; i--) {                                                  \
                for (int k = i + 1; k < n; k++) B_(i, c) -= P##chol(a, lda, uplo, k, i) * B_(k, c); \
                B_(i, c) /= P##chol(a, lda, uplo, i, i);                                        \
            }                                                                                   \
        }                                                                                       \
        *info = 0;                                                                              \
        return OK;                                                                              \
    }                                                                                           \
    /* Whether the m x n A is upper triangular (its reflectors the identity). */              \
    static int P##upper(const T *a, int lda, int m, int n) {                                    \
        for (int j = 0; j < n; j++)                                                             \
            for (int i = j + 1; i < m; i++)                                                     \
                if (A_(i, j) != 0) return 0;                                                    \
        return 1;                                                                               \
    }                                                                                           \
    static int P##zero(const T *tau, int k) {                                                   \
        for (int i = 0; i < k; i++)                                                             \
            if (tau[i] != 0) return 0;                                                          \
        return 1;                                                                               \
    }                                                                                           \
    int cusolverDn##P##geqrf_bufferSize(struct handle *h, int m, int n, T *a, int lda,         \
                                        int *lwork) {                                           \
        (void)a, (void)lda;                                                                     \
        note("cusolverDn" #P "geqrf_bufferSize", h, "m=%d n=%d", m, n);                         \
        *lwork = lwork_of(m, n);                                                                \
        return h ? OK : NOT_INITIALIZED;                                                        \
    }                                                                                           \
    int cusolverDn##P##geqrf(struct handle *h, int m, int n, T *a, int lda, T *tau, T *work,    \
                             int lwork, int *info) {                                            \
        note("cusolverDn" #P "geqrf", h, "m=%d n=%d lda=%d lwork=%d", m, n, lda, lwork);        \
        int r = ready(h, work, lwork, lwork_of(m, n), sizeof(T));                               \
        if (r) return r;                                                                        \
        if (!P##upper(a, lda, m, n)) return NOT_SUPPORTED;                                      \
        for (int i = 0; i < (m < n ? m : n); i++) tau[i] = 0;                                   \
        *info = 0;                                                                              \
        return OK;                                                                              \
    }                                                                                           \
    int cusolverDn##P##ormqr_bufferSize(struct handle *h, int side, int trans, int m, int n,   \
                                        int k, const T *a, int lda, const T *tau, const T *c,  \
                                        int ldc, int *lwork) {                                  \
        (void)a, (void)lda, (void)tau, (void)c, (void)ldc;                                      \
        note("cusolverDn" #P "ormqr_bufferSize", h, "side=%d trans=%d m=%d n=%d k=%d", side,    \
             trans, m, n, k);                                                                   \
        *lwork = lwork_of(m, n);                                                                \
        return h ? OK : NOT_INITIALIZED;                                                        \
    }                                                                                           \
    int cusolverDn##P##ormqr(struct handle *h, int side, int trans, int m, int n, int k,        \
                             const T *a, int lda, const T *tau, T *c, int ldc, T *work,         \
                             int lwork, int *info) {                                            \
        (void)a, (void)lda, (void)c, (void)ldc;                                                 \
        note("cusolverDn" #P "ormqr", h, "side=%d trans=%d m=%d n=%d k=%d lwork=%d", side,      \
             trans, m, n, k, lwork);                                                            \
        int r = ready(h, work, lwork, lwork_of(m, n), sizeof(T));                               \
        if (r) return r;                                                                        \
        if (!P##zero(tau, k)) return NOT_SUPPORTED;                                             \
        *info = 0; /* Q = I: C stays. */                                                        \
        return OK;                                                                              \
    }                                                                                           \
    int cusolverDn##P##orgqr_bufferSize(struct handle *h, int m, int n, int k, const T *a,     \
                                        int lda, const T *tau, int *lwork) {                    \
        (void)a, (void)lda, (void)tau;                                                          \
        note("cusolverDn" #P "orgqr_bufferSize", h, "m=%d n=%d k=%d", m, n, k);                 \
        *lwork = lwork_of(m, n);                                                                \
        return h ? OK : NOT_INITIALIZED;                                                        \
    }                                                                                           \
    int cusolverDn##P##orgqr(struct handle *h, int m, int n, int k, T *a, int lda,              \
                             const T *tau, T *work, int lwork, int *info) {                     \
        note("cusolverDn" #P "orgqr", h, "m=%d n=%d k=%d lwork=%d", m, n, k, lwork);            \
        int r = ready(h, work, lwork, lwork_of(m, n), sizeof(T));                               \
        if (r) return r;                                                                        \
        if (!P##zero(tau, k)) return NOT_SUPPORTED;                                             \
        for (int j = 0; j < n; j++)                                                             \
            for (int i = 0; i < m; i++) A_(i, j) = i == j;                                      \
        *info = 0;                                                                              \
        return OK;                                                                              \
    }                                                                                           \
    int cusolverDn##P##syevd_bufferSize(struct handle *h, int jobz, int uplo, int n,           \
                                        const T *a, int lda, const T *w, int *lwork) {          \
        (void)a, (void)lda, (void)w;                                                            \
        note("cusolverDn" #P "syevd_bufferSize", h, "jobz=%d uplo=%d n=%d", jobz, uplo, n);     \
        *lwork = lwork_of(n, n);                                                                \
        return h ? OK : NOT_INITIALIZED;                                                        \
    }                                                                                           \
    int cusolverDn##P##syevd(struct handle *h, int jobz, int uplo, int n, T *a, int lda, T *w,  \
                             T *work, int lwork, int *info) {                                   \
        note("cusolverDn" #P "syevd", h, "jobz=%d uplo=%d n=%d lwork=%d", jobz, uplo, n,        \
             lwork);                                                                            \
        int r = ready(h, work, lwork, lwork_of(n, n), sizeof(T));                               \
        if (r) return r;                                                                        \
        for (int j = 0; j < n; j++)                                                             \
            for (int i = 0; i < n; i++)                                                         \
                if (i != j && A_(i, j) != 0) return NOT_SUPPORTED;                              \
        for (int i = 0; i + 1 < n; i++)  /* eigenvalues come ascending */                       \
            if (A_(i, i) > A_(i + 1, i + 1)) return NOT_SUPPORTED;                              \
        for (int i = 0; i < n; i++) w[i] = A_(i, i);                                            \
        if (jobz)                                                                               \
            for (int j = 0; j < n; j++)                                                         \
                for (int i = 0; i < n; i++) A_(i, j) = i == j;                                  \
        *info = 0;                                                                              \
        return OK;                                                                              \
    }                                                                                           \
    int cusolverDn##P##gesvd_bufferSize(struct handle *h, int m, int n, int *lwork) {          \
        note("cusolverDn" #P "gesvd_bufferSize", h, "m=%d n=%d", m, n);                         \
        *lwork = lwork_of(m, n);                                                                \
        return h ? OK : NOT_INITIALIZED;                                                        \
    }                                                                                           \
    int cusolverDn##P##gesvd(struct handle *h, signed char jobu, signed char jobvt, int m,      \
                             int n, T *a, int lda, T *s, T *u, int ldu, T *vt, int ldvt,        \
                             T *work, int lwork, T *rwork, int *info) {                         \
        (void)u, (void)ldu, (void)vt, (void)ldvt;                                               \
        note("cusolverDn" #P "gesvd", h, "jobu=%c jobvt=%c m=%d n=%d lwork=%d rwork=%p", jobu,  \
             jobvt, m, n, lwork, (void *)rwork);                                                \
        int r = ready(h, work, lwork, lwork_of(m, n), sizeof(T));                               \
        if (r) return r;                                                                        \
        int k = m < n ? m : n;                                                                  \
        if (k > 1) {                                                                            \
            if (!rwork) return INVALID_VALUE;                                                   \
            memset(rwork, 0x5A, (size_t)(k - 1) * sizeof(T));                                   \
        }                                                                                       \
        if (jobu != 'N' || jobvt != 'N') return NOT_SUPPORTED;                                  \
        for (int j = 0; j < n; j++)                                                             \
            for (int i = 0; i < m; i++)                                                         \
                if (i != j && A_(i, j) != 0) return NOT_SUPPORTED;                              \
        for (int i = 0; i < k; i++) s[i] = (T)fabs((double)A_(i, i));                           \
        *info = 0;                                                                              \
        return OK;                                                                              \
    }

REAL(S, float)
REAL(D, double)

// The complex forms check and log like the real ones and compute nothing.
#define COMPLEX(P, E)                                                                            \
    int cusolverDn##P##getrf_bufferSize(struct handle *h, int m, int n, void *a, int lda,       \
                                        int *lwork) {                                            \
        (void)a, (void)lda;                                                                      \
        note("cusolverDn" #P "getrf_bufferSize", h, "m=%d n=%d", m, n);                          \
        *lwork = lwork_of(m, n);                                                                 \
        return h ? OK : NOT_INITIALIZED;                                                         \
    }                                                                                            \
    int cusolverDn##P##getrf(struct handle *h, int m, int n, void *a, int lda, void *work,       \
                             int *ipiv, int *info) {                                             \
        (void)a, (void)lda, (void)ipiv, (void)info;                                              \
        note("cusolverDn" #P "getrf", h, "m=%d n=%d", m, n);                                     \
        int r = ready(h, work, lwork_of(m, n), lwork_of(m, n), E);                               \
        return r ? r : NOT_SUPPORTED;                                                            \
    }                                                                                            \
    int cusolverDn##P##getrs(struct handle *h, int trans, int n, int nrhs, const void *a,       \
                             int lda, const int *ipiv, void *b, int ldb, int *info) {            \
        (void)a, (void)lda, (void)ipiv, (void)b, (void)ldb, (void)info;                          \
        note("cusolverDn" #P "getrs", h, "trans=%d n=%d nrhs=%d", trans, n, nrhs);               \
        int r = ready(h, NULL, 0, 0, 0);                                                         \
        return r ? r : NOT_SUPPORTED;                                                            \
    }                                                                                            \
    int cusolverDn##P##potrf_bufferSize(struct handle *h, int uplo, int n, void *a, int lda,    \
                                        int *lwork) {                                            \
        (void)a, (void)lda;                                                                      \
        note("cusolverDn" #P "potrf_bufferSize", h, "uplo=%d n=%d", uplo, n);                    \
        *lwork = lwork_of(n, n);                                                                 \
        return h ? OK : NOT_INITIALIZED;                                                         \
    }                                                                                            \
    int cusolverDn##P##potrf(struct handle *h, int uplo, int n, void *a, int lda, void *work,    \
                             int lwork, int *info) {                                             \
        (void)a, (void)lda, (void)info;                                                          \
        note("cusolverDn" #P "potrf", h, "uplo=%d n=%d lwork=%d", uplo, n, lwork);               \
        int r = ready(h, work, lwork, lwork_of(n, n), E);                                        \
        return r ? r : NOT_SUPPORTED;                                                            \
    }                                                                                            \
    int cusolverDn##P##potrs(struct handle *h, int uplo, int n, int nrhs, const void *a,        \
                             int lda, void *b, int ldb, int *info) {                             \
        (void)a, (void)lda, (void)b, (void)ldb, (void)info;                                      \
        note("cusolverDn" #P "potrs", h, "uplo=%d n=%d nrhs=%d", uplo, n, nrhs);                 \
        int r = ready(h, NULL, 0, 0, 0);                                                         \
        return r ? r : NOT_SUPPORTED;                                                            \
    }                                                                                            \
    int cusolverDn##P##geqrf_bufferSize(struct handle *h, int m, int n, void *a, int lda,       \
                                        int *lwork) {                                            \
        (void)a, (void)lda;                                                                      \
        note("cusolverDn" #P "geqrf_bufferSize", h, "m=%d n=%d", m, n);                          \
        *lwork = lwork_of(m, n);                                                                 \
        return h ? OK : NOT_INITIALIZED;                                                         \
    }                                                                                            \
    int cusolverDn##P##geqrf(struct handle *h, int m, int n, void *a, int lda, void *tau,        \
                             void *work, int lwork, int *info) {                                 \
        (void)a, (void)lda, (void)tau, (void)info;                                               \
        note("cusolverDn" #P "geqrf", h, "m=%d n=%d lwork=%d", m, n, lwork);                     \
        int r = ready(h, work, lwork, lwork_of(m, n), E);                                        \
        return r ? r : NOT_SUPPORTED;                                                            \
    }                                                                                            \
    int cusolverDn##P##unmqr_bufferSize(struct handle *h, int side, int trans, int m, int n,    \
                                        int k, const void *a, int lda, const void *tau,         \
                                        const void *c, int ldc, int *lwork) {                    \
        (void)a, (void)lda, (void)tau, (void)c, (void)ldc;                                       \
        note("cusolverDn" #P "unmqr_bufferSize", h, "side=%d trans=%d m=%d n=%d k=%d", side,     \
             trans, m, n, k);                                                                    \
        *lwork = lwork_of(m, n);                                                                 \
        return h ? OK : NOT_INITIALIZED;                                                         \
    }                                                                                            \
    int cusolverDn##P##unmqr(struct handle *h, int side, int trans, int m, int n, int k,         \
                             const void *a, int lda, const void *tau, void *c, int ldc,          \
                             void *work, int lwork, int *info) {                                 \
        (void)a, (void)lda, (void)tau, (void)c, (void)ldc, (void)info;                           \
        note("cusolverDn" #P "unmqr", h, "side=%d trans=%d m=%d n=%d k=%d lwork=%d", side,       \
             trans, m, n, k, lwork);                                                             \
        int r = ready(h, work, lwork, lwork_of(m, n), E);                                        \
        return r ? r : NOT_SUPPORTED;                                                            \
    }                                                                                            \
    int cusolverDn##P##ungqr_bufferSize(struct handle *h, int m, int n, int k, const void *a,   \
                                        int lda, const void *tau, int *lwork) {                  \
        (void)a, (void)lda, (void)tau;                                                           \
        note("cusolverDn" #P "ungqr_bufferSize", h, "m=%d n=%d k=%d", m, n, k);                  \
        *lwork = lwork_of(m, n);                                                                 \
        return h ? OK : NOT_INITIALIZED;                                                         \
    }                                                                                            \
    int cusolverDn##P##ungqr(struct handle *h, int m, int n, int k, void *a, int lda,            \
                             const void *tau, void *work, int lwork, int *info) {                \
        (void)a, (void)lda, (void)tau, (void)info;                                               \
        note("cusolverDn" #P "ungqr", h, "m=%d n=%d k=%d lwork=%d", m, n, k, lwork);             \
        int r = ready(h, work, lwork, lwork_of(m, n), E);                                        \
        return r ? r : NOT_SUPPORTED;                                                            \
    }                                                                                            \
    int cusolverDn##P##heevd_bufferSize(struct handle *h, int jobz, int uplo, int n,            \
                                        const void *a, int lda, const void *w, int *lwork) {     \
        (void)a, (void)lda, (void)w;                                                             \
        note("cusolverDn" #P "heevd_bufferSize", h, "jobz=%d uplo=%d n=%d", jobz, uplo, n);      \
        *lwork = lwork_of(n, n);                                                                 \
        return h ? OK : NOT_INITIALIZED;                                                         \
    }                                                                                            \
    int cusolverDn##P##heevd(struct handle *h, int jobz, int uplo, int n, void *a, int lda,      \
                             void *w, void *work, int lwork, int *info) {                        \
        (void)a, (void)lda, (void)w, (void)info;                                                 \
        note("cusolverDn" #P "heevd", h, "jobz=%d uplo=%d n=%d lwork=%d", jobz, uplo, n, lwork); \
        int r = ready(h, work, lwork, lwork_of(n, n), E);                                        \
        return r ? r : NOT_SUPPORTED;                                                            \
    }                                                                                            \
    int cusolverDn##P##gesvd_bufferSize(struct handle *h, int m, int n, int *lwork) {           \
        note("cusolverDn" #P "gesvd_bufferSize", h, "m=%d n=%d", m, n);                          \
        *lwork = lwork_of(m, n);                                                                 \
        return h ? OK : NOT_INITIALIZED;                                                         \
    }                                                                                            \
    int cusolverDn##P##gesvd(struct handle *h, signed char jobu, signed char jobvt, int m,       \
                             int n, void *a, int lda, void *s, void *u, int ldu, void *vt,       \
                             int ldvt, void *work, int lwork, void *rwork, int *info) {          \
        (void)a, (void)lda, (void)s, (void)u, (void)ldu, (void)vt, (void)ldvt, (void)info;       \
        note("cusolverDn" #P "gesvd", h, "jobu=%c jobvt=%c m=%d n=%d lwork=%d rwork=%p", jobu,   \
             jobvt, m, n, lwork, rwork);                                                         \
        int r = ready(h, work, lwork, lwork_of(m, n), E);                                        \
        return r ? r : NOT_SUPPORTED;                                                            \
    }

COMPLEX(C, 8)
COMPLEX(Z, 16)

// The 64-bit API's general eigensolver. Params objects are real objects
// (a NULL or foreign one is INVALID_VALUE); every argument is logged with
// its cudaDataType. The workspaces asked are 256 + 8 n^2 bytes on the device
// and 32 + n bytes on the host, both checked and written through. It
// computes D with a D compute type of a diagonal A only: W = A's diagonal
// (complex W, or a real W of 2n reals: real parts, then imaginary parts)
// and identity vectors; anything else answers NOT_SUPPORTED.
struct params {
    unsigned magic;
};
#define PARAMS_MAGIC 0x9ee7u

int cusolverDnCreateParams(struct params **out) {
    struct params *p = calloc(1, sizeof *p);
    if (!p) return 2;
    p->magic = PARAMS_MAGIC;
    *out = p;
    note("cusolverDnCreateParams", NULL, "params=%p", (void *)p);
    return OK;
}

int cusolverDnDestroyParams(struct params *p) {
    note("cusolverDnDestroyParams", NULL, "params=%p", (void *)p);
    if (!p || p->magic != PARAMS_MAGIC) return INVALID_VALUE;
    p->magic = 0;
    free(p);
    return OK;
}

static size_t geev_device(long n) { return 256 + 8 * (size_t)n * (size_t)n; }
static size_t geev_host(long n) { return 32 + (size_t)n; }

int cusolverDnXgeev_bufferSize(struct handle *h, struct params *p, int jobvl, int jobvr, long n,
                               int ta, const void *a, long lda, int tw, const void *w, int tvl,
                               const void *vl, long ldvl, int tvr, const void *vr, long ldvr,
                               int tc, size_t *device, size_t *host) {
    (void)a, (void)w, (void)vl, (void)vr;
    note("cusolverDnXgeev_bufferSize", h,
         "params=%p jobvl=%d jobvr=%d n=%ld A=%d lda=%ld W=%d VL=%d ldvl=%ld VR=%d ldvr=%ld "
         "compute=%d",
         (void *)p, jobvl, jobvr, n, ta, lda, tw, tvl, ldvl, tvr, ldvr, tc);
    if (!h) return NOT_INITIALIZED;
    if (!p || p->magic != PARAMS_MAGIC) return INVALID_VALUE;
    *device = geev_device(n);
    *host = geev_host(n);
    return OK;
}

int cusolverDnXgeev(struct handle *h, struct params *p, int jobvl, int jobvr, long n, int ta,
                    void *a_, long lda, int tw, void *w_, int tvl, void *vl_, long ldvl, int tvr,
                    void *vr_, long ldvr, int tc, void *device, size_t device_bytes, void *host,
                    size_t host_bytes, int *info) {
    note("cusolverDnXgeev", h,
         "params=%p jobvl=%d jobvr=%d n=%ld A=%d lda=%ld W=%d VL=%d ldvl=%ld VR=%d ldvr=%ld "
         "compute=%d device_bytes=%zu host_bytes=%zu device=%p host=%p",
         (void *)p, jobvl, jobvr, n, ta, lda, tw, tvl, ldvl, tvr, ldvr, tc, device_bytes,
         host_bytes, device, host);
    int r = ready(h, NULL, 0, 0, 0);
    if (r) return r;
    if (!p || p->magic != PARAMS_MAGIC) return INVALID_VALUE;
    if (!device || device_bytes < geev_device(n) || !host || host_bytes < geev_host(n))
        return INVALID_VALUE;
    memset(device, 0xA5, geev_device(n));
    memset(host, 0x5A, geev_host(n));
    if (ta != 1 || tvl != 1 || tvr != 1 || tc != 1 || (tw != 1 && tw != 5)) return NOT_SUPPORTED;
    const double *a = a_;
    for (long j = 0; j < n; j++)
        for (long i = 0; i < n; i++)
            if (i != j && A_(i, j) != 0) return NOT_SUPPORTED;
    double *w = w_;
    for (long i = 0; i < n; i++) {
        if (tw == 5) {
            w[2 * i] = A_(i, i);
            w[2 * i + 1] = 0;
        } else {
            w[i] = A_(i, i);
            w[n + i] = 0;
        }
    }
    double *vs[2] = {jobvl ? vl_ : NULL, jobvr ? vr_ : NULL};
    long lds[2] = {ldvl, ldvr};
    for (int k = 0; k < 2; k++)
        if (vs[k])
            for (long j = 0; j < n; j++)
                for (long i = 0; i < n; i++) vs[k][j * lds[k] + i] = i == j;
    *info = 0;
    return OK;
}

// ---------------------------------------------------------------------------
// Iterative refinement: DDgesv and DHgesv by name, and the expert API. For a
// diagonal A the solve is X = B / diag(A) (anything else: NOT_SUPPORTED);
// the typed routines write ipiv = 1..n and niters 0 (DD) or 2 (DH), the
// expert ones niters = the params' maximum minus one, so that a test sees
// the settings arrived. Workspaces: 256 + 8·n·(n + nrhs) bytes, written.
// ---------------------------------------------------------------------------
static size_t irs_bytes(int n, int nrhs) { return 256 + 8 * (size_t)n * (size_t)(n + nrhs); }

static int diagonal_solve(int m, int n, int nrhs, const double *a, int lda, const double *b, int ldb,
                          double *x, int ldx) {
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++)
            if (i != j && A_(i, j) != 0) return NOT_SUPPORTED;
    for (int c = 0; c < nrhs; c++)
        for (int i = 0; i < n; i++) x[(long)c * ldx + i] = B_(i, c) / A_(i, i);
    return OK;
}

#define TYPED_GESV(P, ITERS)                                                                      \
    int cusolverDn##P##gesv_bufferSize(struct handle *h, int n, int nrhs, void *a, int lda,       \
                                       int *ipiv, void *b, int ldb, void *x, int ldx, void *work, \
                                       size_t *bytes) {                                           \
        (void)a, (void)ipiv, (void)b, (void)x, (void)work;                                        \
        note("cusolverDn" #P "gesv_bufferSize", h, "n=%d nrhs=%d lda=%d ldb=%d ldx=%d", n, nrhs,  \
             lda, ldb, ldx);                                                                      \
        if (!h) return NOT_INITIALIZED;                                                           \
        *bytes = irs_bytes(n, nrhs);                                                              \
        return OK;                                                                                \
    }                                                                                             \
    int cusolverDn##P##gesv(struct handle *h, int n, int nrhs, double *a, int lda, int *ipiv,     \
                            double *b, int ldb, double *x, int ldx, void *work, size_t bytes,     \
                            int *iter, int *info) {                                               \
        note("cusolverDn" #P "gesv", h, "n=%d nrhs=%d lda=%d ldb=%d ldx=%d bytes=%zu work=%p", n, \
             nrhs, lda, ldb, ldx, bytes, work);                                                   \
        int r = ready(h, NULL, 0, 0, 0);                                                          \
        if (r) return r;                                                                          \
        if (!work || bytes < irs_bytes(n, nrhs)) return INVALID_VALUE;                            \
        memset(work, 0xA5, irs_bytes(n, nrhs));                                                   \
        r = diagonal_solve(n, n, nrhs, a, lda, b, ldb, x, ldx);                                   \
        if (r) return r;                                                                          \
        for (int i = 0; i < n; i++) ipiv[i] = i + 1;                                              \
        *iter = ITERS;                                                                            \
        *info = 0;                                                                                \
        return OK;                                                                                \
    }
TYPED_GESV(DD, 0)
TYPED_GESV(DH, 2)

#define IRS_MAGIC 0x1125
struct irs_params {
    int magic, main, lowest, refine, max_iters, fallback;
    double tol;
};
struct irs_infos {
    int magic;
};

int cusolverDnIRSParamsCreate(struct irs_params **out) {
    struct irs_params *p = calloc(1, sizeof *p);
    if (!p) return 2;
    p->magic = IRS_MAGIC;
    p->refine = 1100;
    p->max_iters = 50;
    p->fallback = 1;
    *out = p;
    note("cusolverDnIRSParamsCreate", NULL, "params=%p", (void *)p);
    return OK;
}

int cusolverDnIRSParamsDestroy(struct irs_params *p) {
    note("cusolverDnIRSParamsDestroy", NULL, "params=%p", (void *)p);
    if (!p || p->magic != IRS_MAGIC) return 12;
    p->magic = 0;
    free(p);
    return OK;
}

#define IRS_SET(NAME, FIELD, TYPE)                           \
    int NAME(struct irs_params *p, TYPE v) {                 \
        if (!p || p->magic != IRS_MAGIC) return 12;          \
        p->FIELD = v;                                        \
        return OK;                                           \
    }
IRS_SET(cusolverDnIRSParamsSetRefinementSolver, refine, int)
IRS_SET(cusolverDnIRSParamsSetTol, tol, double)
IRS_SET(cusolverDnIRSParamsSetMaxIters, max_iters, int)

int cusolverDnIRSParamsSetSolverPrecisions(struct irs_params *p, int main, int lowest) {
    if (!p || p->magic != IRS_MAGIC) return 12;
    p->main = main;
    p->lowest = lowest;
    return OK;
}

int cusolverDnIRSParamsEnableFallback(struct irs_params *p) {
    if (!p || p->magic != IRS_MAGIC) return 12;
    p->fallback = 1;
    return OK;
}

int cusolverDnIRSParamsDisableFallback(struct irs_params *p) {
    if (!p || p->magic != IRS_MAGIC) return 12;
    p->fallback = 0;
    return OK;
}

int cusolverDnIRSInfosCreate(struct irs_infos **out) {
    struct irs_infos *i = calloc(1, sizeof *i);
    if (!i) return 2;
    i->magic = IRS_MAGIC;
    *out = i;
    note("cusolverDnIRSInfosCreate", NULL, "infos=%p", (void *)i);
    return OK;
}

int cusolverDnIRSInfosDestroy(struct irs_infos *i) {
    note("cusolverDnIRSInfosDestroy", NULL, "infos=%p", (void *)i);
    if (!i || i->magic != IRS_MAGIC) return 25;
    i->magic = 0;
    free(i);
    return OK;
}

static int irs_valid(struct irs_params *p) {
    if (!p || p->magic != IRS_MAGIC) return 12;
    if (p->refine == 1100) return 15;
    return OK;
}

static void note_params(const char *call, struct handle *h, struct irs_params *p, int m, int n,
                        int nrhs) {
    note(call, h, "params=%p main=%d lowest=%d refine=%d max_iters=%d tol=%g fallback=%d m=%d n=%d nrhs=%d",
         (void *)p, p->main, p->lowest, p->refine, p->max_iters, p->tol, p->fallback, m, n, nrhs);
}

int cusolverDnIRSXgesv_bufferSize(struct handle *h, struct irs_params *p, int n, int nrhs,
                                  size_t *bytes) {
    int r = irs_valid(p);
    if (r) return r;
    note_params("cusolverDnIRSXgesv_bufferSize", h, p, n, n, nrhs);
    if (!h) return NOT_INITIALIZED;
    *bytes = irs_bytes(n, nrhs);
    return OK;
}

int cusolverDnIRSXgels_bufferSize(struct handle *h, struct irs_params *p, int m, int n, int nrhs,
                                  size_t *bytes) {
    int r = irs_valid(p);
    if (r) return r;
    note_params("cusolverDnIRSXgels_bufferSize", h, p, m, n, nrhs);
    if (!h) return NOT_INITIALIZED;
    *bytes = irs_bytes(m, nrhs);
    return OK;
}

static int irs_run(const char *call, struct handle *h, struct irs_params *p, struct irs_infos *i,
                   int m, int n, int nrhs, double *a, int lda, double *b, int ldb, double *x,
                   int ldx, void *work, size_t bytes, int *niters, int *info) {
    int r = irs_valid(p);
    if (r) return r;
    note_params(call, h, p, m, n, nrhs);
    r = ready(h, NULL, 0, 0, 0);
    if (r) return r;
    if (!i || i->magic != IRS_MAGIC) return 25;
    if (!work || bytes < irs_bytes(m, nrhs)) return INVALID_VALUE;
    memset(work, 0xA5, irs_bytes(m, nrhs));
    if (p->main != 1203) return NOT_SUPPORTED;
    r = diagonal_solve(m, n, nrhs, a, lda, b, ldb, x, ldx);
    if (r) return r;
    *niters = p->max_iters - 1;
    *info = 0;
    return OK;
}

int cusolverDnIRSXgesv(struct handle *h, struct irs_params *p, struct irs_infos *i, int n, int nrhs,
                       double *a, int lda, double *b, int ldb, double *x, int ldx, void *work,
                       size_t bytes, int *niters, int *info) {
    return irs_run("cusolverDnIRSXgesv", h, p, i, n, n, nrhs, a, lda, b, ldb, x, ldx, work, bytes,
                   niters, info);
}

int cusolverDnIRSXgels(struct handle *h, struct irs_params *p, struct irs_infos *i, int m, int n,
                       int nrhs, double *a, int lda, double *b, int ldb, double *x, int ldx,
                       void *work, size_t bytes, int *niters, int *info) {
    return irs_run("cusolverDnIRSXgels", h, p, i, m, n, nrhs, a, lda, b, ldb, x, ldx, work, bytes,
                   niters, info);
}

// ---------------------------------------------------------------------------
// Jacobi solvers and gesvda. The info objects keep their settings; every
// call logs them. D computes on diagonal matrices only (syevj: W = diag(A),
// V = I; gesvdj and gesvda: S = diag(A), U = V = I, h_R_nrmF = 0); the S, C
// and Z forms exist (rcud resolves all four) and answer NOT_SUPPORTED.
// Workspaces: lwork_of(m, n) elements, written.
// ---------------------------------------------------------------------------
#define JACOBI_MAGIC 0x5e77
struct jacobi_info {
    int magic, max_sweeps, sort;
    double tol;
};

#define JACOBI_INFO(KIND)                                                            \
    int cusolverDnCreate##KIND##Info(struct jacobi_info **out) {                     \
        struct jacobi_info *i = calloc(1, sizeof *i);                                \
        if (!i) return 2;                                                            \
        i->magic = JACOBI_MAGIC;                                                     \
        i->max_sweeps = 100;                                                         \
        i->sort = 1;                                                                 \
        *out = i;                                                                    \
        note("cusolverDnCreate" #KIND "Info", NULL, "info=%p", (void *)i);           \
        return OK;                                                                   \
    }                                                                                \
    int cusolverDnDestroy##KIND##Info(struct jacobi_info *i) {                       \
        note("cusolverDnDestroy" #KIND "Info", NULL, "info=%p", (void *)i);          \
        if (!i || i->magic != JACOBI_MAGIC) return INVALID_VALUE;                    \
        i->magic = 0;                                                                \
        free(i);                                                                     \
        return OK;                                                                   \
    }
JACOBI_INFO(Syevj)
JACOBI_INFO(Gesvdj)

#define JACOBI_SET(NAME, FIELD, TYPE)                         \
    int NAME(struct jacobi_info *i, TYPE v) {                 \
        if (!i || i->magic != JACOBI_MAGIC) return INVALID_VALUE; \
        i->FIELD = v;                                         \
        return OK;                                            \
    }
JACOBI_SET(cusolverDnXsyevjSetTolerance, tol, double)
JACOBI_SET(cusolverDnXsyevjSetMaxSweeps, max_sweeps, int)
JACOBI_SET(cusolverDnXsyevjSetSortEig, sort, int)
JACOBI_SET(cusolverDnXgesvdjSetTolerance, tol, double)
JACOBI_SET(cusolverDnXgesvdjSetMaxSweeps, max_sweeps, int)
JACOBI_SET(cusolverDnXgesvdjSetSortEig, sort, int)

static int jacobi_ok(struct jacobi_info *i) { return i && i->magic == JACOBI_MAGIC; }

// A diagonal m×n D matrix's diagonal into `d`, identities into the vector
// matrices given (NULL: skipped); NOT_SUPPORTED for any other matrix.
static int diagonal_decomposition(int m, int n, const double *a, int lda, double *d, double *u,
                                  int ldu, int ucols, double *v, int ldv, int vcols) {
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++)
            if (i != j && A_(i, j) != 0) return NOT_SUPPORTED;
    for (int i = 0; i < (m < n ? m : n); i++) d[i] = A_(i, i);
    if (u)
        for (int j = 0; j < ucols; j++)
            for (int i = 0; i < m; i++) u[(long)j * ldu + i] = i == j;
    if (v)
        for (int j = 0; j < vcols; j++)
            for (int i = 0; i < n; i++) v[(long)j * ldv + i] = i == j;
    return OK;
}

#define SYEVJ(P, NAME, T)                                                                          \
    int cusolverDn##P##NAME##_bufferSize(struct handle *h, int jobz, int uplo, int n, T *a,       \
                                         int lda, void *w, int *lwork, struct jacobi_info *i) {   \
        (void)a, (void)w;                                                                          \
        note("cusolverDn" #P #NAME "_bufferSize", h, "jobz=%d uplo=%d n=%d lda=%d", jobz, uplo, n, \
             lda);                                                                                 \
        if (!h) return NOT_INITIALIZED;                                                            \
        if (!jacobi_ok(i)) return INVALID_VALUE;                                                   \
        *lwork = lwork_of(n, n);                                                                   \
        return OK;                                                                                 \
    }                                                                                              \
    int cusolverDn##P##NAME(struct handle *h, int jobz, int uplo, int n, T *a, int lda, void *w,  \
                            T *work, int lwork, int *info, struct jacobi_info *i) {               \
        note("cusolverDn" #P #NAME, h, "jobz=%d uplo=%d n=%d lda=%d tol=%g sweeps=%d sort=%d",    \
             jobz, uplo, n, lda, jacobi_ok(i) ? i->tol : -1.0, jacobi_ok(i) ? i->max_sweeps : -1, \
             jacobi_ok(i) ? i->sort : -1);                                                         \
        int r = ready(h, work, lwork, lwork_of(n, n), sizeof(T));                                  \
        if (r) return r;                                                                           \
        if (!jacobi_ok(i)) return INVALID_VALUE;                                                   \
        if (sizeof(T) != sizeof(double) || #P[0] != 'D') return NOT_SUPPORTED;                     \
        r = diagonal_decomposition(n, n, (const double *)a, lda, w, jobz ? (double *)a : NULL,    \
                                   lda, n, NULL, 1, 0);                                            \
        if (r) return r;                                                                           \
        *info = 0;                                                                                 \
        return OK;                                                                                 \
    }                                                                                              \
    int cusolverDn##P##NAME##Batched_bufferSize(struct handle *h, int jobz, int uplo, int n,      \
                                                T *a, int lda, void *w, int *lwork,               \
                                                struct jacobi_info *i, int batch) {               \
        (void)a, (void)w;                                                                          \
        note("cusolverDn" #P #NAME "Batched_bufferSize", h, "n=%d batch=%d", n, batch);            \
        if (!h) return NOT_INITIALIZED;                                                            \
        if (!jacobi_ok(i)) return INVALID_VALUE;                                                   \
        *lwork = lwork_of(n, n * batch);                                                           \
        return OK;                                                                                 \
    }                                                                                              \
    int cusolverDn##P##NAME##Batched(struct handle *h, int jobz, int uplo, int n, T *a, int lda,  \
                                     void *w, T *work, int lwork, int *info,                      \
                                     struct jacobi_info *i, int batch) {                          \
        note("cusolverDn" #P #NAME "Batched", h,                                                   \
             "jobz=%d uplo=%d n=%d lda=%d batch=%d tol=%g sweeps=%d sort=%d", jobz, uplo, n, lda,  \
             batch, jacobi_ok(i) ? i->tol : -1.0, jacobi_ok(i) ? i->max_sweeps : -1,              \
             jacobi_ok(i) ? i->sort : -1);                                                         \
        int r = ready(h, work, lwork, lwork_of(n, n * batch), sizeof(T));                          \
        if (r) return r;                                                                           \
        if (!jacobi_ok(i)) return INVALID_VALUE;                                                   \
        if (sizeof(T) != sizeof(double) || #P[0] != 'D') return NOT_SUPPORTED;                     \
        for (int k = 0; k < batch; k++) {                                                          \
            double *ak = (double *)a + (long)k * lda * n;                                          \
            r = diagonal_decomposition(n, n, ak, lda, (double *)w + (long)k * n,                  \
                                       jobz ? ak : NULL, lda, n, NULL, 1, 0);                      \
            if (r) return r;                                                                       \
            info[k] = 0;                                                                           \
        }                                                                                          \
        return OK;                                                                                 \
    }
SYEVJ(S, syevj, float)
SYEVJ(D, syevj, double)
SYEVJ(C, heevj, float _Complex)
SYEVJ(Z, heevj, double _Complex)

#define GESVDJ(P, T)                                                                               \
    int cusolverDn##P##gesvdj_bufferSize(struct handle *h, int jobz, int econ, int m, int n,      \
                                         T *a, int lda, void *s, T *u, int ldu, T *v, int ldv,    \
                                         int *lwork, struct jacobi_info *i) {                     \
        (void)a, (void)s, (void)u, (void)v;                                                        \
        note("cusolverDn" #P "gesvdj_bufferSize", h, "jobz=%d econ=%d m=%d n=%d lda=%d ldu=%d "   \
             "ldv=%d", jobz, econ, m, n, lda, ldu, ldv);                                           \
        if (!h) return NOT_INITIALIZED;                                                            \
        if (!jacobi_ok(i)) return INVALID_VALUE;                                                   \
        *lwork = lwork_of(m, n);                                                                   \
        return OK;                                                                                 \
    }                                                                                              \
    int cusolverDn##P##gesvdj(struct handle *h, int jobz, int econ, int m, int n, T *a, int lda,  \
                              void *s, T *u, int ldu, T *v, int ldv, T *work, int lwork,          \
                              int *info, struct jacobi_info *i) {                                 \
        note("cusolverDn" #P "gesvdj", h,                                                          \
             "jobz=%d econ=%d m=%d n=%d lda=%d tol=%g sweeps=%d sort=%d", jobz, econ, m, n, lda,   \
             jacobi_ok(i) ? i->tol : -1.0, jacobi_ok(i) ? i->max_sweeps : -1,                      \
             jacobi_ok(i) ? i->sort : -1);                                                         \
        int r = ready(h, work, lwork, lwork_of(m, n), sizeof(T));                                  \
        if (r) return r;                                                                           \
        if (!jacobi_ok(i)) return INVALID_VALUE;                                                   \
        if (sizeof(T) != sizeof(double) || #P[0] != 'D') return NOT_SUPPORTED;                     \
        int k = m < n ? m : n;                                                                     \
        r = diagonal_decomposition(m, n, (const double *)a, lda, s, jobz ? (double *)u : NULL,    \
                                   ldu, econ ? k : m, jobz ? (double *)v : NULL, ldv,              \
                                   econ ? k : n);                                                  \
        if (r) return r;                                                                           \
        *info = 0;                                                                                 \
        return OK;                                                                                 \
    }                                                                                              \
    int cusolverDn##P##gesvdjBatched_bufferSize(struct handle *h, int jobz, int m, int n, T *a,   \
                                                int lda, void *s, T *u, int ldu, T *v, int ldv,   \
                                                int *lwork, struct jacobi_info *i, int batch) {   \
        (void)a, (void)s, (void)u, (void)v, (void)jobz, (void)ldu, (void)ldv, (void)lda;            \
        note("cusolverDn" #P "gesvdjBatched_bufferSize", h, "m=%d n=%d batch=%d", m, n, batch);    \
        if (!h) return NOT_INITIALIZED;                                                            \
        if (!jacobi_ok(i)) return INVALID_VALUE;                                                   \
        *lwork = lwork_of(m, n * batch);                                                           \
        return OK;                                                                                 \
    }                                                                                              \
    int cusolverDn##P##gesvdjBatched(struct handle *h, int jobz, int m, int n, T *a, int lda,     \
                                     void *s, T *u, int ldu, T *v, int ldv, T *work, int lwork,   \
                                     int *info, struct jacobi_info *i, int batch) {               \
        note("cusolverDn" #P "gesvdjBatched", h, "jobz=%d m=%d n=%d batch=%d sweeps=%d", jobz, m, \
             n, batch, jacobi_ok(i) ? i->max_sweeps : -1);                                         \
        int r = ready(h, work, lwork, lwork_of(m, n * batch), sizeof(T));                          \
        if (r) return r;                                                                           \
        if (!jacobi_ok(i)) return INVALID_VALUE;                                                   \
        if (sizeof(T) != sizeof(double) || #P[0] != 'D') return NOT_SUPPORTED;                     \
        int k = m < n ? m : n;                                                                     \
        for (int b = 0; b < batch; b++) {                                                          \
            r = diagonal_decomposition(                                                            \
                m, n, (const double *)a + (long)b * lda * n, lda, (double *)s + (long)b * k,       \
                jobz ? (double *)u + (long)b * ldu * m : NULL, ldu, m,                             \
                jobz ? (double *)v + (long)b * ldv * n : NULL, ldv, n);                            \
            if (r) return r;                                                                       \
            info[b] = 0;                                                                           \
        }                                                                                          \
        return OK;                                                                                 \
    }                                                                                              \
    int cusolverDn##P##gesvdaStridedBatched_bufferSize(                                            \
        struct handle *h, int jobz, int rank, int m, int n, const T *a, int lda, long long sa,     \
        const void *s, long long ss, const T *u, int ldu, long long su, const T *v, int ldv,       \
        long long sv, int *lwork, int batch) {                                                     \
        (void)a, (void)s, (void)u, (void)v;                                                        \
        note("cusolverDn" #P "gesvdaStridedBatched_bufferSize", h,                                 \
             "jobz=%d rank=%d m=%d n=%d lda=%d sa=%lld ss=%lld ldu=%d su=%lld ldv=%d sv=%lld "     \
             "batch=%d",                                                                           \
             jobz, rank, m, n, lda, sa, ss, ldu, su, ldv, sv, batch);                              \
        if (!h) return NOT_INITIALIZED;                                                            \
        *lwork = lwork_of(m, n);                                                                   \
        return OK;                                                                                 \
    }                                                                                              \
    int cusolverDn##P##gesvdaStridedBatched(                                                       \
        struct handle *h, int jobz, int rank, int m, int n, const T *a, int lda, long long sa,     \
        void *s, long long ss, T *u, int ldu, long long su, T *v, int ldv, long long sv, T *work,  \
        int lwork, int *info, double *nrm, int batch) {                                            \
        note("cusolverDn" #P "gesvdaStridedBatched", h, "jobz=%d rank=%d m=%d n=%d batch=%d",     \
             jobz, rank, m, n, batch);                                                             \
        int r = ready(h, work, lwork, lwork_of(m, n), sizeof(T));                                  \
        if (r) return r;                                                                           \
        if (sizeof(T) != sizeof(double) || #P[0] != 'D') return NOT_SUPPORTED;                     \
        for (int b = 0; b < batch; b++) {                                                          \
            double d[64];                                                                          \
            if (n > 64) return NOT_SUPPORTED;                                                      \
            r = diagonal_decomposition(m, n, (const double *)a + b * sa, lda, d,                   \
                                       jobz ? (double *)u + b * su : NULL, ldu, rank,              \
                                       jobz ? (double *)v + b * sv : NULL, ldv, rank);             \
            if (r) return r;                                                                       \
            for (int i = 0; i < rank; i++) ((double *)s)[b * ss + i] = d[i];                       \
            info[b] = 0;                                                                           \
            nrm[b] = 0;                                                                            \
        }                                                                                          \
        return OK;                                                                                 \
    }
GESVDJ(S, float)
GESVDJ(D, double)
GESVDJ(C, float _Complex)
GESVDJ(Z, double _Complex)

// ---------------------------------------------------------------------------
// Batched Cholesky of diagonal D matrices (the factor: the square roots of
// the diagonal); the S, C and Z forms exist and answer NOT_SUPPORTED. The
// pointer arrays are logged, so that a test sees they are the server's.
// ---------------------------------------------------------------------------
#define POTRF_BATCHED(P, T)                                                                        \
    int cusolverDn##P##potrfBatched(struct handle *h, int uplo, int n, T **arr, int lda, int *info, \
                                    int batch) {                                                   \
        note("cusolverDn" #P "potrfBatched", h, "uplo=%d n=%d lda=%d batch=%d Aarray=%p", uplo, n, \
             lda, batch, (void *)arr);                                                             \
        int r = ready(h, NULL, 0, 0, 0);                                                           \
        if (r) return r;                                                                           \
        if (#P[0] != 'D') return NOT_SUPPORTED;                                                    \
        for (int k = 0; k < batch; k++) {                                                          \
            double *a = (double *)arr[k];                                                          \
            for (int j = 0; j < n; j++)                                                            \
                for (int i = 0; i < n; i++)                                                        \
                    if (i != j && A_(i, j) != 0) return NOT_SUPPORTED;                             \
            info[k] = 0;                                                                           \
            for (int i = 0; i < n; i++) {                                                          \
                if (A_(i, i) <= 0) {                                                               \
                    info[k] = i + 1;                                                               \
                    break;                                                                         \
                }                                                                                  \
                A_(i, i) = sqrt(A_(i, i));                                                         \
            }                                                                                      \
        }                                                                                          \
        return OK;                                                                                 \
    }                                                                                              \
    int cusolverDn##P##potrsBatched(struct handle *h, int uplo, int n, int nrhs, T **aarr, int lda, \
                                    T **barr, int ldb, int *info, int batch) {                     \
        note("cusolverDn" #P "potrsBatched", h,                                                    \
             "uplo=%d n=%d nrhs=%d lda=%d ldb=%d batch=%d Aarray=%p Barray=%p", uplo, n, nrhs,     \
             lda, ldb, batch, (void *)aarr, (void *)barr);                                         \
        int r = ready(h, NULL, 0, 0, 0);                                                           \
        if (r) return r;                                                                           \
        if (#P[0] != 'D') return NOT_SUPPORTED;                                                    \
        for (int k = 0; k < batch; k++) {                                                          \
            double *a = (double *)aarr[k], *b = (double *)barr[k];                                 \
            for (int c = 0; c < nrhs; c++)                                                         \
                for (int i = 0; i < n; i++) B_(i, c) /= A_(i, i) * A_(i, i);                       \
        }                                                                                          \
        *info = 0;                                                                                 \
        return OK;                                                                                 \
    }
POTRF_BATCHED(S, float)
POTRF_BATCHED(D, double)
POTRF_BATCHED(C, float _Complex)
POTRF_BATCHED(Z, double _Complex)
