// Atomics.
// - A 256-bin byte histogram with per-block bins in shared memory (`atomicAdd`
//   on `__shared__`) merged with global atomics, and one with global atomics
//   only.
// - Every atomic function on int, unsigned and unsigned long long (Add, Sub,
//   Min, Max, And, Or, Xor, Exch, CAS, and Inc/Dec on unsigned), and atomicAdd
//   on float and double, by many threads at once on the same words, in global
//   memory (several blocks) and in shared memory (one block). The final values
//   are order-independent; for Exch and Inc the multiset of returned old values
//   is checked too, and CAS is used to build a lock-free add.
//
// Prints `histogram shared+global n=<n>: ok`, `histogram global n=<n>: ok`,
// `atomics <int|unsigned|ull|float|double> <global|shared>: ok` and
// `atomicExch/atomicInc old values <global|shared>: ok`.
// Self-checking: `FAIL: <reason>` and exit status 1 on any mismatch, `PASS` as
// the last line on success.

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "check.h"

// --- Histograms -----------------------------------------------------------------

__global__ void hist_shared(const unsigned char *data, int n, unsigned *bins) {
    __shared__ unsigned local[256];
    for (int b = threadIdx.x; b < 256; b += blockDim.x) local[b] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        atomicAdd(&local[data[i]], 1u);
    __syncthreads();
    for (int b = threadIdx.x; b < 256; b += blockDim.x)
        if (local[b]) atomicAdd(&bins[b], local[b]);
}

__global__ void hist_global(const unsigned char *data, int n, unsigned *bins) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        atomicAdd(&bins[data[i]], 1u);
}

static void test_histogram(int n) {
    unsigned char *data = (unsigned char *)malloc(n);
    EXPECT(data != NULL, "host malloc failed");
    unsigned want[256] = {0};
    unsigned x = 12345;
    for (int i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        // Skewed: low bins are much more frequent, so atomics collide.
        unsigned char v = (unsigned char)((x >> 16) & 0xff);
        if (i % 3 == 0) v &= 0x7;
        data[i] = v;
        want[v]++;
    }
    unsigned char *ddata = NULL;
    unsigned *dbins = NULL;
    CHECK(cudaMalloc(&ddata, n));
    CHECK(cudaMalloc(&dbins, 256 * sizeof(unsigned)));
    CHECK(cudaMemcpy(ddata, data, n, cudaMemcpyHostToDevice));
    unsigned got[256];

    CHECK(cudaMemset(dbins, 0, 256 * sizeof(unsigned)));
    hist_shared<<<8, 192>>>(ddata, n, dbins);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(got, dbins, sizeof got, cudaMemcpyDeviceToHost));
    for (int b = 0; b < 256; b++)
        EXPECT(got[b] == want[b], "histogram shared+global n=%d: bin %d = %u, expected %u", n, b,
               got[b], want[b]);
    printf("histogram shared+global n=%d: ok\n", n);

    CHECK(cudaMemset(dbins, 0, 256 * sizeof(unsigned)));
    hist_global<<<16, 256>>>(ddata, n, dbins);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(got, dbins, sizeof got, cudaMemcpyDeviceToHost));
    for (int b = 0; b < 256; b++)
        EXPECT(got[b] == want[b], "histogram global n=%d: bin %d = %u, expected %u", n, b, got[b],
               want[b]);
    printf("histogram global n=%d: ok\n", n);

    CHECK(cudaFree(ddata));
    CHECK(cudaFree(dbins));
    free(data);
}

// --- All atomic functions ------------------------------------------------------------

// Words operated on, per type. Slots: see the index constants below.
struct Words {
    int i[10];
    unsigned u[12];
    unsigned long long ull[8];
    float f[2];
    double d[2];
};

enum { I_ADD, I_SUB, I_MIN, I_MAX, I_AND, I_OR, I_XOR, I_EXCH, I_CAS, I_CAS_MAX };
enum { U_ADD, U_SUB, U_MIN, U_MAX, U_AND, U_OR, U_XOR, U_EXCH, U_CAS, U_INC, U_DEC, U_CAS_MIN };
enum { L_ADD, L_MIN, L_MAX, L_AND, L_OR, L_XOR, L_EXCH, L_CAS };

// Per-thread values, the same on host and device.
__host__ __device__ int ival(int t) { return (t * 7919) % 2001 - 1000; }
__host__ __device__ unsigned uval(int t) { return (unsigned)t * 2654435761u; }
__host__ __device__ unsigned long long lval(int t) {
    return ((unsigned long long)uval(t) << 29) ^ (unsigned long long)(t * 40503);
}

static const unsigned INC_LIMIT = 37;
static const unsigned DEC_LIMIT = 41;

// Applies every operation once for thread t. `old` receives the old values
// returned by atomicExch on int and atomicInc on unsigned.
__device__ void apply_all(Words *w, int t, int *exch_old, unsigned *inc_old) {
    atomicAdd(&w->i[I_ADD], ival(t));
    atomicSub(&w->i[I_SUB], ival(t));
    atomicMin(&w->i[I_MIN], ival(t));
    atomicMax(&w->i[I_MAX], ival(t));
    atomicAnd(&w->i[I_AND], ~(1 << (t % 29)));
    atomicOr(&w->i[I_OR], 1 << (t % 23));
    atomicXor(&w->i[I_XOR], ival(t));
    exch_old[t] = atomicExch(&w->i[I_EXCH], t);
    {  // lock-free add with CAS
        int old = w->i[I_CAS], assumed;
        do {
            assumed = old;
            old = atomicCAS(&w->i[I_CAS], assumed, assumed + 3);
        } while (old != assumed);
    }
    {  // lock-free max with CAS
        int old = w->i[I_CAS_MAX], assumed;
        do {
            assumed = old;
            const int v = max(assumed, ival(t));
            old = atomicCAS(&w->i[I_CAS_MAX], assumed, v);
        } while (old != assumed);
    }

    atomicAdd(&w->u[U_ADD], uval(t));
    atomicSub(&w->u[U_SUB], uval(t));
    atomicMin(&w->u[U_MIN], uval(t));
    atomicMax(&w->u[U_MAX], uval(t));
    atomicAnd(&w->u[U_AND], ~(1u << (t % 31)));
    atomicOr(&w->u[U_OR], 1u << (t % 19 + 5));
    atomicXor(&w->u[U_XOR], uval(t));
    atomicExch(&w->u[U_EXCH], 0xC0DE0000u + (unsigned)t);
    {
        unsigned old = w->u[U_CAS], assumed;
        do {
            assumed = old;
            old = atomicCAS(&w->u[U_CAS], assumed, assumed + uval(t));
        } while (old != assumed);
    }
    inc_old[t] = atomicInc(&w->u[U_INC], INC_LIMIT);
    atomicDec(&w->u[U_DEC], DEC_LIMIT);
    {
        unsigned old = w->u[U_CAS_MIN], assumed;
        do {
            assumed = old;
            const unsigned v = min(assumed, uval(t));
            old = atomicCAS(&w->u[U_CAS_MIN], assumed, v);
        } while (old != assumed);
    }

    atomicAdd(&w->ull[L_ADD], lval(t));
    atomicMin(&w->ull[L_MIN], lval(t));
    atomicMax(&w->ull[L_MAX], lval(t));
    atomicAnd(&w->ull[L_AND], ~(1ull << (t % 61)));
    atomicOr(&w->ull[L_OR], 1ull << (t % 47 + 10));
    atomicXor(&w->ull[L_XOR], lval(t));
    atomicExch(&w->ull[L_EXCH], 0xABCD000000000000ull + (unsigned long long)t);
    {
        unsigned long long old = w->ull[L_CAS], assumed;
        do {
            assumed = old;
            old = atomicCAS(&w->ull[L_CAS], assumed, assumed + lval(t));
        } while (old != assumed);
    }

    // Multiples of 1/8 and 1/16 in small ranges: exact in any order.
    atomicAdd(&w->f[0], (float)(t % 17 - 8) * 0.125f);
    atomicAdd(&w->f[1], 1.0f);
    atomicAdd(&w->d[0], (double)(t % 29 - 14) * 0.0625);
    atomicAdd(&w->d[1], -2.0);
}

__global__ void atomics_global(Words *w, int *exch_old, unsigned *inc_old, int n) {
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t < n) apply_all(w, t, exch_old, inc_old);
}

// One block: the words live in shared memory while the threads work on them.
__global__ void atomics_shared(Words *w, int *exch_old, unsigned *inc_old, int n) {
    __shared__ Words s;
    if (threadIdx.x == 0) s = *w;
    __syncthreads();
    const int t = threadIdx.x;
    if (t < n) apply_all(&s, t, exch_old, inc_old);
    __syncthreads();
    if (threadIdx.x == 0) *w = s;
}

static Words initial_words() {
    Words w;
    memset(&w, 0, sizeof w);
    w.i[I_ADD] = 100;
    w.i[I_SUB] = -100;
    w.i[I_MIN] = 500;
    w.i[I_MAX] = -500;
    w.i[I_AND] = -1;
    w.i[I_OR] = 0;
    w.i[I_XOR] = 0x5a5a5a5a;
    w.i[I_EXCH] = -7;
    w.i[I_CAS] = 11;
    w.i[I_CAS_MAX] = -2000;
    w.u[U_ADD] = 1;
    w.u[U_SUB] = 0;
    w.u[U_MIN] = 0xFFFFFFFFu;
    w.u[U_MAX] = 0;
    w.u[U_AND] = 0xFFFFFFFFu;
    w.u[U_OR] = 1;
    w.u[U_XOR] = 0xFFFF0000u;
    w.u[U_EXCH] = 0;
    w.u[U_CAS] = 5;
    w.u[U_INC] = 0;
    w.u[U_DEC] = 0;
    w.u[U_CAS_MIN] = 0xFFFFFFFFu;
    w.ull[L_ADD] = 1ull << 40;
    w.ull[L_MIN] = ~0ull;
    w.ull[L_MAX] = 0;
    w.ull[L_AND] = ~0ull;
    w.ull[L_OR] = 0;
    w.ull[L_XOR] = 0x0123456789ABCDEFull;
    w.ull[L_EXCH] = 0;
    w.ull[L_CAS] = 3;
    w.f[0] = 0.5f;
    w.f[1] = 0;
    w.d[0] = -0.25;
    w.d[1] = 0;
    return w;
}

static void test_atomics(bool shared, int n) {
    const char *where = shared ? "shared" : "global";
    const Words init = initial_words();
    Words *dw = NULL;
    int *dexch = NULL;
    unsigned *dinc = NULL;
    CHECK(cudaMalloc(&dw, sizeof(Words)));
    CHECK(cudaMalloc(&dexch, n * sizeof(int)));
    CHECK(cudaMalloc(&dinc, n * sizeof(unsigned)));
    CHECK(cudaMemcpy(dw, &init, sizeof init, cudaMemcpyHostToDevice));
    if (shared)
        atomics_shared<<<1, n>>>(dw, dexch, dinc, n);
    else
        atomics_global<<<(n + 127) / 128, 128>>>(dw, dexch, dinc, n);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    Words got;
    int *exch_old = (int *)malloc(n * sizeof(int));
    unsigned *inc_old = (unsigned *)malloc(n * sizeof(unsigned));
    EXPECT(exch_old && inc_old, "host malloc failed");
    CHECK(cudaMemcpy(&got, dw, sizeof got, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(exch_old, dexch, n * sizeof(int), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(inc_old, dinc, n * sizeof(unsigned), cudaMemcpyDeviceToHost));

    // Expected final values.
    Words want = init;
    for (int t = 0; t < n; t++) {
        want.i[I_ADD] = (int)((unsigned)want.i[I_ADD] + (unsigned)ival(t));
        want.i[I_SUB] = (int)((unsigned)want.i[I_SUB] - (unsigned)ival(t));
        want.i[I_MIN] = ival(t) < want.i[I_MIN] ? ival(t) : want.i[I_MIN];
        want.i[I_MAX] = ival(t) > want.i[I_MAX] ? ival(t) : want.i[I_MAX];
        want.i[I_AND] &= ~(1 << (t % 29));
        want.i[I_OR] |= 1 << (t % 23);
        want.i[I_XOR] ^= ival(t);
        want.i[I_CAS] += 3;
        want.i[I_CAS_MAX] = ival(t) > want.i[I_CAS_MAX] ? ival(t) : want.i[I_CAS_MAX];
        want.u[U_ADD] += uval(t);
        want.u[U_SUB] -= uval(t);
        want.u[U_MIN] = uval(t) < want.u[U_MIN] ? uval(t) : want.u[U_MIN];
        want.u[U_MAX] = uval(t) > want.u[U_MAX] ? uval(t) : want.u[U_MAX];
        want.u[U_AND] &= ~(1u << (t % 31));
        want.u[U_OR] |= 1u << (t % 19 + 5);
        want.u[U_XOR] ^= uval(t);
        want.u[U_CAS] += uval(t);
        want.u[U_INC] = want.u[U_INC] >= INC_LIMIT ? 0 : want.u[U_INC] + 1;
        want.u[U_DEC] =
            (want.u[U_DEC] == 0 || want.u[U_DEC] > DEC_LIMIT) ? DEC_LIMIT : want.u[U_DEC] - 1;
        want.u[U_CAS_MIN] = uval(t) < want.u[U_CAS_MIN] ? uval(t) : want.u[U_CAS_MIN];
        want.ull[L_ADD] += lval(t);
        want.ull[L_MIN] = lval(t) < want.ull[L_MIN] ? lval(t) : want.ull[L_MIN];
        want.ull[L_MAX] = lval(t) > want.ull[L_MAX] ? lval(t) : want.ull[L_MAX];
        want.ull[L_AND] &= ~(1ull << (t % 61));
        want.ull[L_OR] |= 1ull << (t % 47 + 10);
        want.ull[L_XOR] ^= lval(t);
        want.ull[L_CAS] += lval(t);
        want.f[0] += (float)(t % 17 - 8) * 0.125f;
        want.f[1] += 1.0f;
        want.d[0] += (double)(t % 29 - 14) * 0.0625;
        want.d[1] += -2.0;
    }

    static const char *const inames[] = {"atomicAdd", "atomicSub", "atomicMin", "atomicMax",
                                         "atomicAnd", "atomicOr",  "atomicXor", "atomicExch",
                                         "atomicCAS add", "atomicCAS max"};
    static const char *const unames[] = {"atomicAdd", "atomicSub", "atomicMin", "atomicMax",
                                         "atomicAnd", "atomicOr",  "atomicXor", "atomicExch",
                                         "atomicCAS add", "atomicInc", "atomicDec",
                                         "atomicCAS min"};
    static const char *const lnames[] = {"atomicAdd", "atomicMin", "atomicMax", "atomicAnd",
                                         "atomicOr",  "atomicXor", "atomicExch", "atomicCAS add"};
    // Exch: the last writer is unknown; the multiset check below covers int.
    for (int k = 0; k < 10; k++) {
        if (k == I_EXCH) continue;
        EXPECT(got.i[k] == want.i[k], "int %s (%s): %d, expected %d", inames[k], where,
               got.i[k], want.i[k]);
    }
    printf("atomics int %s: ok\n", where);
    for (int k = 0; k < 12; k++) {
        if (k == U_EXCH) {
            EXPECT(got.u[k] >= 0xC0DE0000u && got.u[k] < 0xC0DE0000u + (unsigned)n,
                   "unsigned atomicExch (%s): final 0x%x is no thread's value", where, got.u[k]);
            continue;
        }
        EXPECT(got.u[k] == want.u[k], "unsigned %s (%s): %u, expected %u", unames[k], where,
               got.u[k], want.u[k]);
    }
    printf("atomics unsigned %s: ok\n", where);
    for (int k = 0; k < 8; k++) {
        if (k == L_EXCH) {
            EXPECT(got.ull[k] >= 0xABCD000000000000ull &&
                       got.ull[k] < 0xABCD000000000000ull + (unsigned long long)n,
                   "ull atomicExch (%s): final 0x%llx is no thread's value", where, got.ull[k]);
            continue;
        }
        EXPECT(got.ull[k] == want.ull[k], "ull %s (%s): 0x%llx, expected 0x%llx", lnames[k],
               where, got.ull[k], want.ull[k]);
    }
    printf("atomics ull %s: ok\n", where);
    EXPECT(got.f[0] == want.f[0] && got.f[1] == want.f[1],
           "float atomicAdd (%s): %g, %g, expected %g, %g", where, got.f[0], got.f[1], want.f[0],
           want.f[1]);
    printf("atomics float %s: ok\n", where);
    EXPECT(got.d[0] == want.d[0] && got.d[1] == want.d[1],
           "double atomicAdd (%s): %g, %g, expected %g, %g", where, got.d[0], got.d[1], want.d[0],
           want.d[1]);
    printf("atomics double %s: ok\n", where);

    // atomicExch on int: the old values returned plus the final value are the
    // initial value and every thread's value, each exactly once.
    {
        char *seen = (char *)calloc(n + 1, 1);  // index 0: the initial -7; t + 1: thread t
        EXPECT(seen != NULL, "host calloc failed");
        for (int t = 0; t <= n; t++) {
            const int v = t < n ? exch_old[t] : got.i[I_EXCH];
            const int slot = v == init.i[I_EXCH] ? 0 : v + 1;
            EXPECT(slot >= 0 && slot <= n && !seen[slot],
                   "atomicExch (%s): value %d returned twice or never stored", where, v);
            seen[slot] = 1;
        }
        free(seen);
    }
    // atomicInc: the old values are 0, 1, ..., INC_LIMIT, 0, 1, ... (n of them)
    // in some order.
    {
        unsigned counts[INC_LIMIT + 1];
        memset(counts, 0, sizeof counts);
        for (int t = 0; t < n; t++) {
            EXPECT(inc_old[t] <= INC_LIMIT, "atomicInc (%s): old value %u above the limit",
                   where, inc_old[t]);
            counts[inc_old[t]]++;
        }
        for (unsigned v = 0; v <= INC_LIMIT; v++) {
            const unsigned want_count =
                (unsigned)n / (INC_LIMIT + 1) + (v < (unsigned)n % (INC_LIMIT + 1) ? 1 : 0);
            EXPECT(counts[v] == want_count, "atomicInc (%s): old value %u returned %u times, "
                   "expected %u", where, v, counts[v], want_count);
        }
    }
    printf("atomicExch/atomicInc old values %s: ok\n", where);

    free(exch_old);
    free(inc_old);
    CHECK(cudaFree(dw));
    CHECK(cudaFree(dexch));
    CHECK(cudaFree(dinc));
}

int main() {
    CHECK(cudaSetDevice(0));
    test_histogram(1);
    test_histogram(1000);
    test_histogram(100003);
    test_atomics(false, 1000);
    test_atomics(true, 256);
    printf("PASS\n");
    return 0;
}
