// A stand-in for NVIDIA's cuBLASLt, for testing the `cuda` backend's
// cublasLtMatmul on hosts without a GPU, together with fake_libcuda.c (whose
// "device memory" is host memory, so the product here computes on it
// directly).
//
// It exports every entry point rcud-cuda-driver resolves and keeps the
// attributes rcud sets. Matmul computes FP32 products (A, B, C, D and the
// scale type CUDA_R_32F; host or device scalars; strided batches; the bias
// and ReLU epilogues); any other type answers CUBLAS_STATUS_NOT_SUPPORTED
// (the tests check what reaches the library, not its arithmetic). Like the
// real library it refuses an algorithm that wants more workspace than it
// was given. Every call that matters appends one line to FAKE_LOG.
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef FAKE_LOG
#error "build with -DFAKE_LOG='\"path\"'"
#endif

enum { OK = 0, NOT_INITIALIZED = 1, INVALID_VALUE = 7, NOT_SUPPORTED = 15 };
enum { R32F = 0 };

__attribute__((format(printf, 1, 2)))
static void note(const char *fmt, ...) {
    FILE *f = fopen(FAKE_LOG, "a");
    if (!f) return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    fputc('\n', f);
    fclose(f);
}

struct handle { int magic; };
struct desc { int compute, scale, pointer_mode, transa, transb; uint32_t epilogue; const float *bias; int64_t bias_stride; };
struct layout { int type; uint64_t rows, cols; int64_t ld; int batch; int64_t stride; };
struct preference { uint64_t max_workspace; };
struct algo { uint64_t data[8]; };
struct heuristic { struct algo algo; size_t workspace; int state; float waves; int reserved[4]; };

// The workspace the one algorithm here "needs": the tests give less to see
// the refusal, rcud gives 32 MiB.
#define ALGO_WORKSPACE (1u << 20)

int cublasLtCreate(struct handle **out) {
    *out = calloc(1, sizeof **out);
    (*out)->magic = 0x17;
    note("cublasLtCreate");
    return OK;
}

int cublasLtDestroy(struct handle *h) {
    note("cublasLtDestroy");
    if (!h || h->magic != 0x17) return NOT_INITIALIZED;
    h->magic = 0;
    free(h);
    return OK;
}

int cublasLtMatmulDescCreate(struct desc **out, int compute, int scale) {
    *out = calloc(1, sizeof **out);
    (*out)->compute = compute;
    (*out)->scale = scale;
    (*out)->epilogue = 1;
    return OK;
}

int cublasLtMatmulDescDestroy(struct desc *d) { free(d); return OK; }

#define TAKE(field, type) do { if (size != sizeof(type)) return INVALID_VALUE; memcpy(&d->field, buf, size); } while (0)

int cublasLtMatmulDescSetAttribute(struct desc *d, int attr, const void *buf, size_t size) {
    switch (attr) {
    case 2: TAKE(pointer_mode, int); break;
    case 3: TAKE(transa, int); break;
    case 4: TAKE(transb, int); break;
    case 7: TAKE(epilogue, uint32_t); break;
    case 8: TAKE(bias, void *); break;
    case 10: TAKE(bias_stride, int64_t); break;
    default: return INVALID_VALUE;
    }
    return OK;
}
#undef TAKE

int cublasLtMatrixLayoutCreate(struct layout **out, int type, uint64_t rows, uint64_t cols, int64_t ld) {
    if (ld < (int64_t)(rows ? rows : 1)) return INVALID_VALUE;
    *out = calloc(1, sizeof **out);
    **out = (struct layout){.type = type, .rows = rows, .cols = cols, .ld = ld, .batch = 1};
    return OK;
}

int cublasLtMatrixLayoutDestroy(struct layout *l) { free(l); return OK; }

int cublasLtMatrixLayoutSetAttribute(struct layout *l, int attr, const void *buf, size_t size) {
    if (attr == 5 && size == sizeof(int)) memcpy(&l->batch, buf, size);
    else if (attr == 6 && size == sizeof(int64_t)) memcpy(&l->stride, buf, size);
    else return INVALID_VALUE;
    return OK;
}

int cublasLtMatmulPreferenceCreate(struct preference **out) {
    *out = calloc(1, sizeof **out);
    return OK;
}

int cublasLtMatmulPreferenceDestroy(struct preference *p) { free(p); return OK; }

int cublasLtMatmulPreferenceSetAttribute(struct preference *p, int attr, const void *buf, size_t size) {
    if (attr != 1 || size != sizeof(uint64_t)) return INVALID_VALUE;
    memcpy(&p->max_workspace, buf, size);
    return OK;
}

int cublasLtMatmulAlgoGetHeuristic(struct handle *h, struct desc *d, struct layout *a, struct layout *b,
                                   struct layout *c, struct layout *dl, struct preference *p, int requested,
                                   struct heuristic *results, int *count) {
    (void)d, (void)a, (void)b, (void)c, (void)dl;
    if (!h || h->magic != 0x17) return NOT_INITIALIZED;
    if (requested < 1) return INVALID_VALUE;
    note("cublasLtMatmulAlgoGetHeuristic max_workspace=%llu", (unsigned long long)p->max_workspace);
    if (p->max_workspace < ALGO_WORKSPACE) {
        *count = 0;
        return NOT_SUPPORTED;
    }
    memset(results, 0, sizeof *results);
    results->algo.data[0] = 0xa160;
    results->workspace = ALGO_WORKSPACE;
    *count = 1;
    return OK;
}

static float at(const float *m, const struct layout *l, int batch, int trans, uint64_t r, uint64_t c) {
    const float *base = m + batch * l->stride;
    return trans ? base[c + r * l->ld] : base[r + c * l->ld];
}

int cublasLtMatmul(struct handle *h, struct desc *d, const void *alpha, const void *A, struct layout *al,
                   const void *B, struct layout *bl, const void *beta, const void *C, struct layout *cl,
                   void *D, struct layout *dl, const struct algo *algo, void *workspace, size_t workspace_size,
                   void *stream) {
    if (!h || h->magic != 0x17) return NOT_INITIALIZED;
    note("cublasLtMatmul stream=%p transa=%d transb=%d m=%llu n=%llu batch=%d epilogue=%u pointer_mode=%d "
         "algo=%#llx workspace=%zu bias=%d",
         stream, d->transa, d->transb, (unsigned long long)dl->rows, (unsigned long long)dl->cols, dl->batch,
         d->epilogue, d->pointer_mode, algo ? (unsigned long long)algo->data[0] : 0ull, workspace_size,
         d->bias != NULL);
    if (algo && workspace_size < ALGO_WORKSPACE) return INVALID_VALUE;
    if (workspace_size && !workspace) return INVALID_VALUE;
    if (d->scale != R32F || al->type != R32F || bl->type != R32F || cl->type != R32F || dl->type != R32F)
        return NOT_SUPPORTED;
    // Device scalars are host memory too under fake_libcuda.c.
    float a = *(const float *)alpha;
    float bt = *(const float *)beta;
    uint64_t m = dl->rows, n = dl->cols, k = d->transa ? al->rows : al->cols;
    for (int i = 0; i < dl->batch; i++) {
        for (uint64_t c = 0; c < n; c++) {
            for (uint64_t r = 0; r < m; r++) {
                float acc = 0;
                for (uint64_t j = 0; j < k; j++)
                    acc += at(A, al, i, d->transa, r, j) * at(B, bl, i, d->transb, j, c);
                float x = a * acc + bt * at(C, cl, i, 0, r, c);
                if (d->epilogue & 4) x += d->bias[i * d->bias_stride + r];
                if (d->epilogue & 2 && x < 0) x = 0;
                ((float *)D)[i * dl->stride + r + c * dl->ld] = x;
            }
        }
    }
    return OK;
}
