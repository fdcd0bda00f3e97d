// A stand-in for NVIDIA's cuSPARSE, for testing the `cuda` backend's
// cuSPARSE calls on hosts without a GPU, together with fake_libcuda.c (whose
// "device memory" is host memory, so the functions here compute on it
// directly).
//
// It exports every entry point rcud-cuda-driver resolves. On CSR matrices
// with 32-bit indices and CUDA_R_32F values it computes SpMV (op N),
// SpGEMM, SpSV (lower, op N), SparseToDense and DenseToSparse (column-
// major); Csr2cscEx2, Xcoo2csr and Xcsr2coo compute, as do the legacy
// sorts, CreateIdentityPermutation and Gather/Scatter (below); everything else
// answers CUSPARSE_STATUS_NOT_SUPPORTED (the tests check what reaches the
// library, not its arithmetic). As NVIDIA's library requires, a call that
// takes an external buffer fails with INVALID_VALUE when it gets NULL
// after a non-zero `*_bufferSize` (and the fake writes the whole buffer),
// SpSV_solve needs SpSV_analysis first and SpGEMM_copy needs compute.
// A handle without a stream answers EXECUTION_FAILED. Every call appends
// one line to the file FAKE_LOG: `<function> handle=<h> stream=<s>
// mode=<pointer mode>` and what else it was given.
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef FAKE_LOG
#error "build with -DFAKE_LOG='\"path\"'"
#endif

enum { OK = 0, NOT_INITIALIZED = 1, INVALID_VALUE = 3, EXECUTION_FAILED = 6, NOT_SUPPORTED = 10 };
enum { CSR = 1, CSC = 2, COO = 3 };
enum { R32F = 0, I32 = 2 };
#define BUFFER 256

struct handle {
    void *stream;
    int mode;
};

struct descr {
    int kind; // 1 sparse, 2 dense vector, 3 dense matrix, 4 SpGEMM, 5 SpSV
    int format, otype, itype, base, vtype, order, fill, diag;
    int64_t rows, cols, nnz, ld;
    void *offsets, *indices, *values;
    // SpGEMM: the product, kept from compute to copy; SpSV: analysed.
    int ready;
    int *c_offsets, *c_columns;
    float *c_values;
};

__attribute__((format(printf, 2, 3)))
static void note(struct handle *h, const char *fmt, ...) {
    FILE *f = fopen(FAKE_LOG, "a");
    if (!f) return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    if (h) fprintf(f, " handle=%p stream=%p mode=%d", (void *)h, h->stream, h->mode);
    fputc('\n', f);
    fclose(f);
}

// A compute call's common checks: a stream, and a buffer where one is due.
static int ready(struct handle *h, void *buffer, int needs_buffer) {
    if (!h) return NOT_INITIALIZED;
    if (!h->stream) return EXECUTION_FAILED;
    if (needs_buffer) {
        if (!buffer) return INVALID_VALUE;
        memset(buffer, 0xab, BUFFER);
    }
    return OK;
}

static int simple_csr(const struct descr *m) {
    return m->kind == 1 && m->format == CSR && m->otype == I32 && m->itype == I32 &&
           m->vtype == R32F;
}

int cusparseCreate(struct handle **out) {
    struct handle *h = calloc(1, sizeof *h);
    if (!h) return 2;
    *out = h;
    note(h, "cusparseCreate");
    return OK;
}
int cusparseDestroy(struct handle *h) {
    note(h, "cusparseDestroy");
    free(h);
    return OK;
}
int cusparseSetStream(struct handle *h, void *stream) {
    h->stream = stream;
    note(h, "cusparseSetStream");
    return OK;
}
int cusparseSetPointerMode(struct handle *h, int mode) {
    if (mode != 0 && mode != 1) return INVALID_VALUE;
    h->mode = mode;
    return OK;
}

static int sparse(struct descr **out, int format, int64_t rows, int64_t cols, int64_t nnz,
                  void *offsets, void *indices, void *values, int otype, int itype, int base,
                  int vtype) {
    if (rows < 0 || cols < 0 || nnz < 0) return INVALID_VALUE;
    struct descr *d = calloc(1, sizeof *d);
    if (!d) return 2;
    *d = (struct descr){.kind = 1, .format = format, .rows = rows, .cols = cols, .nnz = nnz,
                        .offsets = offsets, .indices = indices, .values = values,
                        .otype = otype, .itype = itype, .base = base, .vtype = vtype};
    *out = d;
    note(NULL, "cusparseCreateSpMat format=%d rows=%lld cols=%lld nnz=%lld offsets=%p", format,
         (long long)rows, (long long)cols, (long long)nnz, offsets);
    return OK;
}
int cusparseCreateCsr(struct descr **out, int64_t rows, int64_t cols, int64_t nnz, void *o,
                      void *i, void *v, int ot, int it, int base, int vt) {
    return sparse(out, CSR, rows, cols, nnz, o, i, v, ot, it, base, vt);
}
int cusparseCreateCsc(struct descr **out, int64_t rows, int64_t cols, int64_t nnz, void *o,
                      void *i, void *v, int ot, int it, int base, int vt) {
    return sparse(out, CSC, rows, cols, nnz, o, i, v, ot, it, base, vt);
}
int cusparseCreateCoo(struct descr **out, int64_t rows, int64_t cols, int64_t nnz, void *r,
                      void *c, void *v, int it, int base, int vt) {
    return sparse(out, COO, rows, cols, nnz, r, c, v, it, it, base, vt);
}
static int destroy(const char *name, struct descr *d) {
    note(NULL, "%s", name);
    if (!d) return INVALID_VALUE;
    free(d->c_offsets);
    free(d->c_columns);
    free(d->c_values);
    free(d);
    return OK;
}
int cusparseDestroySpMat(struct descr *d) { return destroy("cusparseDestroySpMat", d); }
int cusparseSpMatSetAttribute(struct descr *d, int attribute, void *data, size_t size) {
    if (!d || d->kind != 1 || size != sizeof(int)) return INVALID_VALUE;
    int v = *(int *)data;
    if (attribute == 0) d->fill = v;
    else if (attribute == 1) d->diag = v;
    else return INVALID_VALUE;
    note(NULL, "cusparseSpMatSetAttribute attribute=%d value=%d", attribute, v);
    return OK;
}
int cusparseSpMatGetSize(struct descr *d, int64_t *rows, int64_t *cols, int64_t *nnz) {
    *rows = d->rows, *cols = d->cols, *nnz = d->nnz;
    return OK;
}
int cusparseCsrSetPointers(struct descr *d, void *o, void *i, void *v) {
    d->offsets = o, d->indices = i, d->values = v;
    return OK;
}
int cusparseCreateDnVec(struct descr **out, int64_t size, void *values, int vtype) {
    struct descr *d = calloc(1, sizeof *d);
    if (!d) return 2;
    *d = (struct descr){.kind = 2, .rows = size, .cols = 1, .values = values, .vtype = vtype};
    *out = d;
    return OK;
}
int cusparseDestroyDnVec(struct descr *d) { return destroy("cusparseDestroyDnVec", d); }
int cusparseCreateDnMat(struct descr **out, int64_t rows, int64_t cols, int64_t ld, void *values,
                        int vtype, int order) {
    struct descr *d = calloc(1, sizeof *d);
    if (!d) return 2;
    *d = (struct descr){.kind = 3, .rows = rows, .cols = cols, .ld = ld, .values = values,
                        .vtype = vtype, .order = order};
    *out = d;
    return OK;
}
int cusparseDestroyDnMat(struct descr *d) { return destroy("cusparseDestroyDnMat", d); }

// --- SpMV, SpMM ----------------------------------------------------------

int cusparseSpMV_bufferSize(struct handle *h, int op, const void *alpha, struct descr *a,
                            struct descr *x, const void *beta, struct descr *y, int ct, int alg,
                            size_t *size) {
    (void)op, (void)alpha, (void)a, (void)x, (void)beta, (void)y, (void)ct, (void)alg;
    note(h, "cusparseSpMV_bufferSize");
    *size = BUFFER;
    return OK;
}
int cusparseSpMV(struct handle *h, int op, const void *alpha, struct descr *a, struct descr *x,
                 const void *beta, struct descr *y, int ct, int alg, void *buffer) {
    (void)alg;
    int s = ready(h, buffer, 1);
    note(h, "cusparseSpMV op=%d alpha=%p buffer=%p", op, alpha, buffer);
    if (s) return s;
    if (!simple_csr(a) || op != 0 || ct != R32F) return NOT_SUPPORTED;
    // Host or device pointer mode alike: the fake's device memory is the host's.
    float al = *(const float *)alpha, be = *(const float *)beta;
    const int *o = a->offsets, *c = a->indices;
    const float *v = a->values, *xv = x->values;
    float *yv = y->values;
    for (int64_t i = 0; i < a->rows; i++) {
        float sum = 0;
        for (int k = o[i] - a->base; k < o[i + 1] - a->base; k++) sum += v[k] * xv[c[k] - a->base];
        yv[i] = al * sum + be * yv[i];
    }
    return OK;
}
int cusparseSpMM_bufferSize(struct handle *h, int opa, int opb, const void *alpha, struct descr *a,
                            struct descr *b, const void *beta, struct descr *c, int ct, int alg,
                            size_t *size) {
    (void)opa, (void)opb, (void)alpha, (void)a, (void)b, (void)beta, (void)c, (void)ct, (void)alg;
    note(h, "cusparseSpMM_bufferSize");
    *size = BUFFER;
    return OK;
}
int cusparseSpMM(struct handle *h, int opa, int opb, const void *alpha, struct descr *a,
                 struct descr *b, const void *beta, struct descr *c, int ct, int alg, void *buffer) {
    (void)alpha, (void)a, (void)b, (void)beta, (void)c, (void)ct, (void)alg;
    int s = ready(h, buffer, 1);
    note(h, "cusparseSpMM opA=%d opB=%d", opa, opb);
    return s ? s : NOT_SUPPORTED;
}

// --- SpGEMM ----------------------------------------------------------------

int cusparseSpGEMM_createDescr(struct descr **out) {
    struct descr *d = calloc(1, sizeof *d);
    if (!d) return 2;
    d->kind = 4;
    *out = d;
    note(NULL, "cusparseSpGEMM_createDescr");
    return OK;
}
int cusparseSpGEMM_destroyDescr(struct descr *d) { return destroy("cusparseSpGEMM_destroyDescr", d); }

int cusparseSpGEMM_workEstimation(struct handle *h, int opa, int opb, const void *alpha,
                                  struct descr *a, struct descr *b, const void *beta,
                                  struct descr *c, int ct, int alg, struct descr *d, size_t *size,
                                  void *buffer) {
    (void)alpha, (void)beta, (void)ct, (void)alg, (void)d;
    note(h, "cusparseSpGEMM_workEstimation buffer=%p", buffer);
    if (opa != 0 || opb != 0 || !simple_csr(a) || !simple_csr(b) || c->format != CSR)
        return NOT_SUPPORTED;
    if (!buffer) {
        *size = BUFFER;
        return OK;
    }
    return ready(h, buffer, 1);
}

int cusparseSpGEMM_compute(struct handle *h, int opa, int opb, const void *alpha, struct descr *a,
                           struct descr *b, const void *beta, struct descr *c, int ct, int alg,
                           struct descr *d, size_t *size, void *buffer) {
    (void)opa, (void)opb, (void)alg;
    note(h, "cusparseSpGEMM_compute buffer=%p c_offsets=%p", buffer, c->offsets);
    if (!buffer) {
        *size = BUFFER;
        return OK;
    }
    int s = ready(h, buffer, 1);
    if (s) return s;
    if (ct != R32F) return NOT_SUPPORTED;
    // C starts empty: beta must be zero (read in the handle's pointer mode).
    if (*(const float *)beta != 0) return INVALID_VALUE;
    float al = *(const float *)alpha;
    int64_t n = b->cols;
    float *row = calloc(n ? n : 1, sizeof *row);
    char *seen = calloc(n ? n : 1, 1);
    free(d->c_offsets), free(d->c_columns), free(d->c_values);
    d->c_offsets = calloc(a->rows + 1, sizeof(int));
    d->c_columns = malloc(sizeof(int) * (a->rows * n + 1));
    d->c_values = malloc(sizeof(float) * (a->rows * n + 1));
    const int *ao = a->offsets, *ac = a->indices, *bo = b->offsets, *bc = b->indices;
    const float *av = a->values, *bv = b->values;
    int nnz = 0;
    for (int64_t i = 0; i < a->rows; i++) {
        for (int k = ao[i] - a->base; k < ao[i + 1] - a->base; k++) {
            int j = ac[k] - a->base;
            for (int l = bo[j] - b->base; l < bo[j + 1] - b->base; l++) {
                int col = bc[l] - b->base;
                seen[col] = 1;
                row[col] += av[k] * bv[l];
            }
        }
        for (int64_t col = 0; col < n; col++) {
            if (seen[col]) {
                d->c_columns[nnz] = (int)col;
                d->c_values[nnz++] = al * row[col];
            }
            seen[col] = 0, row[col] = 0;
        }
        d->c_offsets[i + 1] = nnz;
    }
    free(row), free(seen);
    d->rows = a->rows;
    d->nnz = nnz;
    d->ready = 1;
    c->nnz = nnz;
    return OK;
}

int cusparseSpGEMM_copy(struct handle *h, int opa, int opb, const void *alpha, struct descr *a,
                        struct descr *b, const void *beta, struct descr *c, int ct, int alg,
                        struct descr *d) {
    (void)opa, (void)opb, (void)alpha, (void)a, (void)b, (void)beta, (void)ct, (void)alg;
    int s = ready(h, NULL, 0);
    note(h, "cusparseSpGEMM_copy nnz=%lld", (long long)d->nnz);
    if (s) return s;
    if (!d->ready || c->nnz != d->nnz) return INVALID_VALUE;
    int *o = c->offsets, *cols = c->indices;
    float *v = c->values;
    for (int64_t i = 0; i <= d->rows; i++) o[i] = d->c_offsets[i] + c->base;
    for (int64_t k = 0; k < d->nnz; k++) cols[k] = d->c_columns[k] + c->base, v[k] = d->c_values[k];
    return OK;
}

// --- SpSV ------------------------------------------------------------------

int cusparseSpSV_createDescr(struct descr **out) {
    struct descr *d = calloc(1, sizeof *d);
    if (!d) return 2;
    d->kind = 5;
    *out = d;
    return OK;
}
int cusparseSpSV_destroyDescr(struct descr *d) { return destroy("cusparseSpSV_destroyDescr", d); }
int cusparseSpSV_bufferSize(struct handle *h, int op, const void *alpha, struct descr *a,
                            struct descr *x, struct descr *y, int ct, int alg, struct descr *d,
                            size_t *size) {
    (void)op, (void)alpha, (void)a, (void)x, (void)y, (void)ct, (void)alg, (void)d;
    note(h, "cusparseSpSV_bufferSize");
    *size = BUFFER;
    return OK;
}
int cusparseSpSV_analysis(struct handle *h, int op, const void *alpha, struct descr *a,
                          struct descr *x, struct descr *y, int ct, int alg, struct descr *d,
                          void *buffer) {
    (void)op, (void)alpha, (void)x, (void)y, (void)ct, (void)alg;
    int s = ready(h, buffer, 1);
    note(h, "cusparseSpSV_analysis fill=%d diag=%d", a->fill, a->diag);
    if (s) return s;
    d->ready = 1;
    return OK;
}
int cusparseSpSV_solve(struct handle *h, int op, const void *alpha, struct descr *a,
                       struct descr *x, struct descr *y, int ct, int alg, struct descr *d) {
    (void)alg;
    int s = ready(h, NULL, 0);
    note(h, "cusparseSpSV_solve op=%d", op);
    if (s) return s;
    if (!d->ready) return INVALID_VALUE;
    if (!simple_csr(a) || op != 0 || a->fill != 0 || ct != R32F) return NOT_SUPPORTED;
    float al = *(const float *)alpha;
    const int *o = a->offsets, *c = a->indices;
    const float *v = a->values, *xv = x->values;
    float *yv = y->values;
    for (int64_t i = 0; i < a->rows; i++) {
        float sum = al * xv[i], diag = 1;
        for (int k = o[i] - a->base; k < o[i + 1] - a->base; k++) {
            int64_t j = c[k] - a->base;
            if (j < i) sum -= v[k] * yv[j];
            else if (j == i && !a->diag) diag = v[k];
        }
        yv[i] = sum / diag;
    }
    return OK;
}

// --- conversions -------------------------------------------------------------

int cusparseCsr2cscEx2_bufferSize(struct handle *h, int m, int n, int nnz, const void *cv,
                                  const int *co, const int *cc, void *sv, int *so, int *sr, int vt,
                                  int action, int base, int alg, size_t *size) {
    (void)m, (void)n, (void)nnz, (void)cv, (void)co, (void)cc, (void)sv, (void)so, (void)sr;
    (void)vt, (void)action, (void)base, (void)alg;
    note(h, "cusparseCsr2cscEx2_bufferSize");
    *size = BUFFER;
    return OK;
}
int cusparseCsr2cscEx2(struct handle *h, int m, int n, int nnz, const void *cv, const int *co,
                       const int *cc, void *sv, int *so, int *sr, int vt, int action, int base,
                       int alg, void *buffer) {
    int s = ready(h, buffer, 1);
    note(h, "cusparseCsr2cscEx2 m=%d n=%d nnz=%d action=%d alg=%d", m, n, nnz, action, alg);
    if (s) return s;
    if (action == 1 && vt != R32F) return NOT_SUPPORTED;
    memset(so, 0, sizeof(int) * (n + 1));
    for (int k = 0; k < nnz; k++) so[cc[k] - base + 1]++;
    for (int j = 0; j < n; j++) so[j + 1] += so[j];
    int *next = malloc(sizeof(int) * (n + 1));
    memcpy(next, so, sizeof(int) * (n + 1));
    for (int i = 0; i < m; i++) {
        for (int k = co[i] - base; k < co[i + 1] - base; k++) {
            int at = next[cc[k] - base]++;
            sr[at] = i + base;
            if (action == 1) ((float *)sv)[at] = ((const float *)cv)[k];
        }
    }
    for (int j = 0; j <= n; j++) so[j] += base;
    free(next);
    return OK;
}
int cusparseXcoo2csr(struct handle *h, const int *rows, int nnz, int m, int *offsets, int base) {
    int s = ready(h, NULL, 0);
    note(h, "cusparseXcoo2csr nnz=%d m=%d", nnz, m);
    if (s) return s;
    memset(offsets, 0, sizeof(int) * (m + 1));
    for (int k = 0; k < nnz; k++) offsets[rows[k] - base + 1]++;
    for (int i = 0; i < m; i++) offsets[i + 1] += offsets[i];
    for (int i = 0; i <= m; i++) offsets[i] += base;
    return OK;
}
int cusparseXcsr2coo(struct handle *h, const int *offsets, int nnz, int m, int *rows, int base) {
    int s = ready(h, NULL, 0);
    note(h, "cusparseXcsr2coo nnz=%d m=%d", nnz, m);
    if (s) return s;
    for (int i = 0; i < m; i++)
        for (int k = offsets[i] - base; k < offsets[i + 1] - base; k++) rows[k] = i + base;
    return OK;
}

int cusparseSparseToDense_bufferSize(struct handle *h, struct descr *a, struct descr *b, int alg,
                                     size_t *size) {
    (void)a, (void)b, (void)alg;
    note(h, "cusparseSparseToDense_bufferSize");
    *size = BUFFER;
    return OK;
}
int cusparseSparseToDense(struct handle *h, struct descr *a, struct descr *b, int alg,
                          void *buffer) {
    (void)alg;
    int s = ready(h, buffer, 1);
    note(h, "cusparseSparseToDense");
    if (s) return s;
    if (!simple_csr(a) || b->order != 1) return NOT_SUPPORTED;
    float *d = b->values;
    const int *o = a->offsets, *c = a->indices;
    const float *v = a->values;
    for (int64_t j = 0; j < b->cols; j++)
        for (int64_t i = 0; i < b->rows; i++) d[j * b->ld + i] = 0;
    for (int64_t i = 0; i < a->rows; i++)
        for (int k = o[i] - a->base; k < o[i + 1] - a->base; k++)
            d[(c[k] - a->base) * b->ld + i] += v[k];
    return OK;
}

int cusparseDenseToSparse_bufferSize(struct handle *h, struct descr *a, struct descr *b, int alg,
                                     size_t *size) {
    (void)a, (void)b, (void)alg;
    note(h, "cusparseDenseToSparse_bufferSize");
    *size = BUFFER;
    return OK;
}
int cusparseDenseToSparse_analysis(struct handle *h, struct descr *a, struct descr *b, int alg,
                                   void *buffer) {
    (void)alg;
    int s = ready(h, buffer, 1);
    note(h, "cusparseDenseToSparse_analysis");
    if (s) return s;
    if (b->kind != 1 || b->format != CSR || b->otype != I32 || a->vtype != R32F || a->order != 1)
        return NOT_SUPPORTED;
    const float *d = a->values;
    int *o = b->offsets, nnz = 0;
    o[0] = b->base;
    for (int64_t i = 0; i < a->rows; i++) {
        for (int64_t j = 0; j < a->cols; j++) nnz += d[j * a->ld + i] != 0;
        o[i + 1] = nnz + b->base;
    }
    b->nnz = nnz;
    // The buffer carries the analysis to the conversion.
    memcpy(buffer, &nnz, sizeof nnz);
    return OK;
}
int cusparseDenseToSparse_convert(struct handle *h, struct descr *a, struct descr *b, int alg,
                                  void *buffer) {
    (void)alg;
    int analysed;
    if (buffer) memcpy(&analysed, buffer, sizeof analysed);
    note(h, "cusparseDenseToSparse_convert nnz=%lld", (long long)b->nnz);
    if (!buffer || analysed != b->nnz) return INVALID_VALUE;
    int s = ready(h, NULL, 0);
    if (s) return s;
    const float *d = a->values;
    int *c = b->indices, k = 0;
    float *v = b->values;
    for (int64_t i = 0; i < a->rows; i++)
        for (int64_t j = 0; j < a->cols; j++)
            if (d[j * a->ld + i] != 0) c[k] = (int)j + b->base, v[k++] = d[j * a->ld + i];
    return OK;
}

// The legacy sorts, the identity permutation and Gather/Scatter. The sorts
// ask for a BUFFER-byte buffer and compute (stably, carrying P along; P must
// not be NULL, as the backend must always pass one); Gather and Scatter
// compute for 32-bit indices and CUDA_R_32F values.
int cusparseCreateIdentityPermutation(struct handle *h, int n, int *p) {
    note(h, "cusparseCreateIdentityPermutation n=%d p=%p", n, (void *)p);
    int r = ready(h, NULL, 0);
    if (r) return r;
    if (n < 0 || (n > 0 && !p)) return INVALID_VALUE;
    for (int i = 0; i < n; i++) p[i] = i;
    return OK;
}

static int sort_size(struct handle *h, const char *name, int m, int n, int nnz, size_t *size) {
    note(h, "%s m=%d n=%d nnz=%d", name, m, n, nnz);
    if (!h) return NOT_INITIALIZED;
    *size = BUFFER;
    return OK;
}
int cusparseXcoosort_bufferSizeExt(struct handle *h, int m, int n, int nnz, const int *r,
                                   const int *c, size_t *size) {
    (void)r, (void)c;
    return sort_size(h, "cusparseXcoosort_bufferSizeExt", m, n, nnz, size);
}
int cusparseXcsrsort_bufferSizeExt(struct handle *h, int m, int n, int nnz, const int *o,
                                   const int *i, size_t *size) {
    (void)o, (void)i;
    return sort_size(h, "cusparseXcsrsort_bufferSizeExt", m, n, nnz, size);
}

// Stable insertion sort of entries [lo, hi) by (key1, key2), moving key1,
// key2 (when not NULL) and p along.
static void sort_by(int *key1, int *key2, int *p, int lo, int hi) {
    for (int i = lo + 1; i < hi; i++)
        for (int j = i; j > lo; j--) {
            int a = key1[j - 1], b = key1[j];
            int a2 = key2 ? key2[j - 1] : 0, b2 = key2 ? key2[j] : 0;
            if (a < b || (a == b && a2 <= b2)) break;
            key1[j - 1] = b, key1[j] = a;
            if (key2) key2[j - 1] = b2, key2[j] = a2;
            int t = p[j - 1];
            p[j - 1] = p[j], p[j] = t;
        }
}

static int coosort(struct handle *h, const char *name, int by_row, int m, int n, int nnz,
                   int *rows, int *cols, int *p, void *buffer) {
    note(h, "%s m=%d n=%d nnz=%d P=%p buffer=%p", name, m, n, nnz, (void *)p, buffer);
    int r = ready(h, buffer, 1);
    if (r) return r;
    if (m < 0 || n < 0 || nnz < 0 || !p) return INVALID_VALUE;
    if (by_row) sort_by(rows, cols, p, 0, nnz);
    else sort_by(cols, rows, p, 0, nnz);
    return OK;
}
int cusparseXcoosortByRow(struct handle *h, int m, int n, int nnz, int *r, int *c, int *p,
                          void *buffer) {
    return coosort(h, "cusparseXcoosortByRow", 1, m, n, nnz, r, c, p, buffer);
}
int cusparseXcoosortByColumn(struct handle *h, int m, int n, int nnz, int *r, int *c, int *p,
                             void *buffer) {
    return coosort(h, "cusparseXcoosortByColumn", 0, m, n, nnz, r, c, p, buffer);
}

// cusparseMatDescr_t: kind 6, only its index base is used.
int cusparseCreateMatDescr(struct descr **out) {
    struct descr *d = calloc(1, sizeof *d);
    if (!d) return 2;
    d->kind = 6;
    *out = d;
    return OK;
}
int cusparseDestroyMatDescr(struct descr *d) { return destroy("cusparseDestroyMatDescr", d); }
int cusparseSetMatIndexBase(struct descr *d, int base) {
    if (!d || d->kind != 6 || base < 0 || base > 1) return INVALID_VALUE;
    d->base = base;
    return OK;
}

int cusparseXcsrsort(struct handle *h, int m, int n, int nnz, const struct descr *d,
                     const int *offsets, int *indices, int *p, void *buffer) {
    note(h, "cusparseXcsrsort m=%d n=%d nnz=%d base=%d P=%p buffer=%p", m, n, nnz,
         d ? d->base : -1, (void *)p, buffer);
    int r = ready(h, buffer, 1);
    if (r) return r;
    if (!d || d->kind != 6 || m < 0 || n < 0 || nnz < 0 || !p) return INVALID_VALUE;
    for (int i = 0; i < m; i++)
        sort_by(indices, NULL, p, offsets[i] - d->base, offsets[i + 1] - d->base);
    return OK;
}

// cusparseSpVecDescr_t: kind 7 (rows = size).
int cusparseCreateSpVec(struct descr **out, int64_t size, int64_t nnz, void *indices,
                        void *values, int itype, int base, int vtype) {
    if (size < 0 || nnz < 0 || nnz > size) return INVALID_VALUE;
    struct descr *d = calloc(1, sizeof *d);
    if (!d) return 2;
    *d = (struct descr){.kind = 7, .rows = size, .nnz = nnz, .indices = indices,
                        .values = values, .itype = itype, .base = base, .vtype = vtype};
    *out = d;
    note(NULL, "cusparseCreateSpVec size=%lld nnz=%lld itype=%d base=%d vtype=%d",
         (long long)size, (long long)nnz, itype, base, vtype);
    return OK;
}
int cusparseDestroySpVec(struct descr *d) { return destroy("cusparseDestroySpVec", d); }

static int gather_scatter(struct handle *h, int scatter, struct descr *x, struct descr *y) {
    note(h, "%s nnz=%lld size=%lld", scatter ? "cusparseScatter" : "cusparseGather",
         x ? (long long)x->nnz : -1LL, y ? (long long)y->rows : -1LL);
    int r = ready(h, NULL, 0);
    if (r) return r;
    if (!x || x->kind != 7 || !y || y->kind != 2) return INVALID_VALUE;
    if (x->itype != I32 || x->vtype != R32F || y->vtype != R32F) return NOT_SUPPORTED;
    const int *idx = x->indices;
    float *xv = x->values, *yv = y->values;
    for (int64_t k = 0; k < x->nnz; k++) {
        int64_t i = idx[k] - x->base;
        if (i < 0 || i >= y->rows) return INVALID_VALUE;
        if (scatter) yv[i] = xv[k];
        else xv[k] = yv[i];
    }
    return OK;
}
int cusparseGather(struct handle *h, struct descr *y, struct descr *x) {
    return gather_scatter(h, 0, x, y);
}
int cusparseScatter(struct handle *h, struct descr *x, struct descr *y) {
    return gather_scatter(h, 1, x, y);
}
