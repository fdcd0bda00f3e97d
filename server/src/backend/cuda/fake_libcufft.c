// A stand-in for NVIDIA's cuFFT, for testing the `cuda` backend's cuFFT
// calls on hosts without a GPU, together with fake_libcuda.c (whose "device
// memory" is host memory, so the transforms here compute on it directly).
//
// It exports every entry point rcud-cuda-driver resolves. Plans are checked
// as cuFFT checks them (rank 1 to 3, positive sizes and batch); one-
// dimensional C2C, Z2Z and R2C transforms in the basic layout compute (a
// plain DFT), everything else answers CUFFT_NOT_SUPPORTED (the tests check
// what reaches the library, not its arithmetic). Every call appends one
// line to the file FAKE_LOG, e.g. `cufftExecC2C plan=1 stream=0x.. dir=-1`.
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#ifndef FAKE_LOG
#error "build with -DFAKE_LOG='\"path\"'"
#endif

enum { OK = 0, INVALID_PLAN = 1, INVALID_VALUE = 4, INVALID_SIZE = 8, NOT_SUPPORTED = 16 };
enum { R2C = 0x2a, C2R = 0x2c, C2C = 0x29, D2Z = 0x6a, Z2D = 0x6c, Z2Z = 0x69 };

#define MAX_PLANS 64
static struct plan {
    int live, made, type, rank, basic;
    long long n, batch;
    void *stream;
} plans[MAX_PLANS];

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

static struct plan *get(int h) {
    return h > 0 && h < MAX_PLANS && plans[h].live ? &plans[h] : NULL;
}

int cufftCreate(int *out) {
    for (int h = 1; h < MAX_PLANS; h++) {
        if (!plans[h].live) {
            plans[h] = (struct plan){.live = 1};
            *out = h;
            note("cufftCreate plan=%d", h);
            return OK;
        }
    }
    return 5; // CUFFT_INTERNAL_ERROR
}

int cufftDestroy(int h) {
    struct plan *p = get(h);
    note("cufftDestroy plan=%d", h);
    if (!p) return INVALID_PLAN;
    p->live = 0;
    return OK;
}

int cufftSetStream(int h, void *stream) {
    struct plan *p = get(h);
    if (!p) return INVALID_PLAN;
    p->stream = stream;
    note("cufftSetStream plan=%d stream=%p", h, stream);
    return OK;
}

int cufftMakePlanMany64(int h, int rank, long long *n, long long *inembed, long long istride,
                        long long idist, long long *onembed, long long ostride, long long odist,
                        int type, long long batch, size_t *work) {
    (void)istride, (void)idist, (void)ostride, (void)odist;
    struct plan *p = get(h);
    if (!p) return INVALID_PLAN;
    if (rank < 1 || rank > 3 || batch < 1) return INVALID_SIZE;
    for (int k = 0; k < rank; k++)
        if (n[k] < 1) return INVALID_SIZE;
    p->made = 1;
    p->type = type;
    p->rank = rank;
    p->n = n[0];
    p->batch = batch;
    p->basic = inembed == NULL && onembed == NULL;
    *work = 0;
    note("cufftMakePlanMany64 plan=%d rank=%d n0=%lld batch=%lld type=%#x basic=%d stream=%p", h,
         rank, n[0], batch, type, p->basic, p->stream);
    return OK;
}

// A one-dimensional DFT of n complex values, `batch` times, contiguous.
#define DFT(T)                                                                                   \
    static void dft_##T(const T *in, T *out, long long n, long long batch, int dir, int real) {  \
        const double pi = 3.14159265358979323846;                                                \
        long long outs = real ? n / 2 + 1 : n;                                                   \
        for (long long b = 0; b < batch; b++) {                                                  \
            const T *x = in + b * (real ? n : 2 * n);                                            \
            T *y = out + b * 2 * outs;                                                           \
            for (long long k = 0; k < outs; k++) {                                               \
                double re = 0, im = 0;                                                           \
                for (long long j = 0; j < n; j++) {                                              \
                    double a = dir * 2 * pi * (double)(j * k % n) / (double)n;                   \
                    double xr = real ? x[j] : x[2 * j], xi = real ? 0 : x[2 * j + 1];            \
                    re += xr * cos(a) - xi * sin(a);                                             \
                    im += xr * sin(a) + xi * cos(a);                                             \
                }                                                                                \
                y[2 * k] = (T)re;                                                                \
                y[2 * k + 1] = (T)im;                                                            \
            }                                                                                    \
        }                                                                                        \
    }
DFT(float)
DFT(double)

static int exec(const char *name, int h, int type, void *in, void *out, int dir) {
    struct plan *p = get(h);
    note("%s plan=%d stream=%p dir=%d", name, h, p ? p->stream : NULL, dir);
    if (!p || !p->made) return INVALID_PLAN;
    if (p->type != type) return 3; // CUFFT_INVALID_TYPE
    if (p->rank != 1 || !p->basic || in == out) return NOT_SUPPORTED;
    switch (type) {
    case C2C: dft_float(in, out, p->n, p->batch, dir, 0); return OK;
    case Z2Z: dft_double(in, out, p->n, p->batch, dir, 0); return OK;
    case R2C: dft_float(in, out, p->n, p->batch, -1, 1); return OK;
    default: return NOT_SUPPORTED;
    }
}

int cufftExecC2C(int h, void *in, void *out, int dir) { return exec("cufftExecC2C", h, C2C, in, out, dir); }
int cufftExecZ2Z(int h, void *in, void *out, int dir) { return exec("cufftExecZ2Z", h, Z2Z, in, out, dir); }
int cufftExecR2C(int h, void *in, void *out) { return exec("cufftExecR2C", h, R2C, in, out, -1); }
int cufftExecD2Z(int h, void *in, void *out) { return exec("cufftExecD2Z", h, D2Z, in, out, -1); }
int cufftExecC2R(int h, void *in, void *out) { return exec("cufftExecC2R", h, C2R, in, out, 1); }
int cufftExecZ2D(int h, void *in, void *out) { return exec("cufftExecZ2D", h, Z2D, in, out, 1); }
