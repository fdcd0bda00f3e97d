// cuRAND's host API against its device API (curand_kernel.h, run in
// kernels by the emulated device), in the order NVIDIA's library places
// the values (docs/math/rand.md, measured against NVIDIA's own library by
// math/tests/curand_oracle.rs): XORWOW's output unit n comes from stream
// n mod 4096, i.e. curand_init(seed, n mod 4096, position) with the
// stream's values handed out in order; MRG32k3a's likewise from 81920
// streams (4096 in the legacy ordering); Philox4_32_10's in units of four
// values (curand4 and friends) from 65536 streams. Plus MT19937's first
// value (that of the reference sequence) and the documented statuses.
// MTGP32: runs of 256 values from 192 blocks (64 in the legacy ordering),
// against curand_kernel.h's MTGP32 set up by the header's own
// curandMakeMTGP32Constants/curandMakeMTGP32KernelState, and against values
// of NVIDIA's library. Sobol32/Sobol64: dimension-major output with
// offsets and successive calls against curand_kernel.h's Sobol states
// initialised with curandGetDirectionVectors32/64. Poisson (MTGP32): each
// value the inverse transform of one word of curandGenerate's order
// (curand_poisson.h's _curand_poisson_ITR_double, run in a kernel), values
// of NVIDIA's library, and lambda's statuses.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include <curand.h>
#include <curand_kernel.h>
#include <curand_mtgp32_host.h>
#include <curand_mtgp32dc_p_11213.h>

#include "check.h"

#define CURAND_CHECK(call)                                                          \
    do {                                                                            \
        curandStatus_t st_ = (call);                                                \
        EXPECT(st_ == CURAND_STATUS_SUCCESS, "%s returned %d", #call, (int)st_);    \
    } while (0)

#define EXPECT_STATUS(call, expected)                                               \
    do {                                                                            \
        curandStatus_t st_ = (call);                                                \
        printf("%s -> %d\n", #call, (int)st_);                                      \
        EXPECT(st_ == (expected), "%s returned %d, expected %d", #call, (int)st_,   \
               (int)(expected));                                                    \
    } while (0)

// Philox4_32_10's streams.
static const unsigned long long PHILOX_STREAMS = 65536;

enum Kind { BITS, UNIFORM, UNIFORM_DOUBLE, NORMAL, NORMAL_DOUBLE, LOG_NORMAL, LOG_NORMAL_DOUBLE };
static const char *KIND_NAMES[] = {"bits", "uniform", "uniform_double", "normal",
                                   "normal_double", "log_normal", "log_normal_double"};

// 32-bit words (MRG32k3a: draws) one output unit takes from its stream, as
// the device API's function for it does; values it gives; bytes per value.
static int unit_words(curandRngType_t rng, int kind) {
    bool pair = kind >= NORMAL;
    bool dbl = kind == UNIFORM_DOUBLE || kind == NORMAL_DOUBLE || kind == LOG_NORMAL_DOUBLE;
    if (rng == CURAND_RNG_PSEUDO_MRG32K3A) return pair ? 2 : 1;
    return (pair ? 2 : 1) * (dbl ? 2 : 1);
}
static int unit_values(int kind) { return kind >= NORMAL ? 2 : 1; }
static int value_size(int kind) {
    return (kind == UNIFORM_DOUBLE || kind == NORMAL_DOUBLE || kind == LOG_NORMAL_DOUBLE) ? 8 : 4;
}

// One thread per output unit u = first + j: stream u mod streams at word
// position words * (u / streams), as the host API's order defines it.
template <class State>
__global__ void mirror(unsigned long long seed, unsigned long long first, int kind, int words,
                       unsigned long long streams, size_t units, void *out, float mean,
                       float stddev, double meand, double stddevd) {
    size_t j = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (j >= units) return;
    unsigned long long u = first + j;
    State st;
    curand_init(seed, u % streams, words * (u / streams), &st);
    switch (kind) {
    case BITS: ((unsigned *)out)[j] = curand(&st); break;
    case UNIFORM: ((float *)out)[j] = curand_uniform(&st); break;
    case UNIFORM_DOUBLE: ((double *)out)[j] = curand_uniform_double(&st); break;
    case NORMAL: {
        float2 z = curand_normal2(&st);
        ((float *)out)[2 * j] = mean + stddev * z.x;
        ((float *)out)[2 * j + 1] = mean + stddev * z.y;
        break;
    }
    case LOG_NORMAL: {
        float2 z = curand_log_normal2(&st, mean, stddev);
        ((float *)out)[2 * j] = z.x;
        ((float *)out)[2 * j + 1] = z.y;
        break;
    }
    case NORMAL_DOUBLE: {
        double2 z = curand_normal2_double(&st);
        ((double *)out)[2 * j] = meand + stddevd * z.x;
        ((double *)out)[2 * j + 1] = meand + stddevd * z.y;
        break;
    }
    case LOG_NORMAL_DOUBLE: {
        double2 z = curand_log_normal2_double(&st, meand, stddevd);
        ((double *)out)[2 * j] = z.x;
        ((double *)out)[2 * j + 1] = z.y;
        break;
    }
    }
}

// Philox4_32_10: one thread per unit u of four values, from stream
// u mod 65536, starting at its (u / 65536)-th block (two blocks for doubles).
__global__ void mirror_philox(unsigned long long seed, int kind, size_t units, void *out,
                              float mean, float stddev, double meand, double stddevd) {
    size_t u = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (u >= units) return;
    curandStatePhilox4_32_10_t st;
    // A stream's k-th unit starts at its block k, doubles too (they then
    // share a block with the next unit, as NVIDIA's library does).
    curand_init(seed, u % PHILOX_STREAMS, (u / PHILOX_STREAMS) * 4, &st);
    float *f = (float *)out + 4 * u;
    double *d = (double *)out + 4 * u;
    switch (kind) {
    case BITS: {
        uint4 v = curand4(&st);
        unsigned *o = (unsigned *)out + 4 * u;
        o[0] = v.x; o[1] = v.y; o[2] = v.z; o[3] = v.w;
        break;
    }
    case UNIFORM: {
        float4 v = curand_uniform4(&st);
        f[0] = v.x; f[1] = v.y; f[2] = v.z; f[3] = v.w;
        break;
    }
    case NORMAL: {
        float4 v = curand_normal4(&st);
        f[0] = mean + stddev * v.x; f[1] = mean + stddev * v.y;
        f[2] = mean + stddev * v.z; f[3] = mean + stddev * v.w;
        break;
    }
    case LOG_NORMAL: {
        float4 v = curand_log_normal4(&st, mean, stddev);
        f[0] = v.x; f[1] = v.y; f[2] = v.z; f[3] = v.w;
        break;
    }
    default:
        for (int half = 0; half < 2; half++) {
            double2 v = kind == UNIFORM_DOUBLE  ? curand_uniform2_double(&st)
                        : kind == NORMAL_DOUBLE ? curand_normal2_double(&st)
                                                : curand_log_normal2_double(&st, meand, stddevd);
            if (kind == NORMAL_DOUBLE) {
                v.x = meand + stddevd * v.x;
                v.y = meand + stddevd * v.y;
            }
            d[2 * half] = v.x;
            d[2 * half + 1] = v.y;
        }
    }
}

// Whether a and b agree: bit for bit for integers and uniforms; within a
// few ulps where the device's logf/expf/log/sincospi (libdevice) and the
// server's (Rust's libm) may round differently.
static bool close(int kind, const unsigned char *a, const unsigned char *b, size_t i) {
    if (kind <= UNIFORM_DOUBLE) return memcmp(a + i * value_size(kind), b + i * value_size(kind), value_size(kind)) == 0;
    if (value_size(kind) == 4) {
        float x = ((const float *)a)[i], y = ((const float *)b)[i];
        return fabsf(x - y) <= 4e-6f * fmaxf(1.0f, fabsf(y));
    }
    double x = ((const double *)a)[i], y = ((const double *)b)[i];
    return fabs(x - y) <= 1e-13 * fmax(1.0, fabs(y));
}

static curandStatus_t host_generate(curandGenerator_t g, int kind, void *out, size_t n) {
    switch (kind) {
    case BITS: return curandGenerate(g, (unsigned *)out, n);
    case UNIFORM: return curandGenerateUniform(g, (float *)out, n);
    case UNIFORM_DOUBLE: return curandGenerateUniformDouble(g, (double *)out, n);
    case NORMAL: return curandGenerateNormal(g, (float *)out, n, 1.5f, 2.0f);
    case NORMAL_DOUBLE: return curandGenerateNormalDouble(g, (double *)out, n, 1.5, 2.0);
    case LOG_NORMAL: return curandGenerateLogNormal(g, (float *)out, n, 0.25f, 0.5f);
    default: return curandGenerateLogNormalDouble(g, (double *)out, n, 0.25, 0.5);
    }
}

// Host API (device and host generators) against the mirror kernel.
template <class State>
static void compare(curandRngType_t rng, const char *rng_name, int kind, size_t n,
                    unsigned long long seed) {
    size_t bytes = n * value_size(kind);
    void *d_api = nullptr, *d_mirror = nullptr;
    CHECK(cudaMalloc(&d_api, bytes));
    CHECK(cudaMalloc(&d_mirror, bytes));

    curandGenerator_t gen, host_gen;
    CURAND_CHECK(curandCreateGenerator(&gen, rng));
    CURAND_CHECK(curandSetPseudoRandomGeneratorSeed(gen, seed));
    CURAND_CHECK(host_generate(gen, kind, d_api, n));
    CURAND_CHECK(curandCreateGeneratorHost(&host_gen, rng));
    CURAND_CHECK(curandSetPseudoRandomGeneratorSeed(host_gen, seed));
    std::vector<unsigned char> from_host(bytes), api(bytes), mirrored(bytes);
    CURAND_CHECK(host_generate(host_gen, kind, from_host.data(), n));

    bool log = kind == LOG_NORMAL || kind == LOG_NORMAL_DOUBLE;
    float mean = log ? 0.25f : 1.5f, stddev = log ? 0.5f : 2.0f;
    if (rng == CURAND_RNG_PSEUDO_PHILOX4_32_10) {
        size_t units = n / 4;
        mirror_philox<<<(units + 127) / 128, 128>>>(seed, kind, units, d_mirror, mean, stddev,
                                                    mean, stddev);
    } else {
        size_t units = n / unit_values(kind);
        unsigned long long streams = rng == CURAND_RNG_PSEUDO_MRG32K3A ? 81920 : 4096;
        mirror<State><<<(units + 127) / 128, 128>>>(seed, 0, kind, unit_words(rng, kind), streams,
                                                     units, d_mirror, mean, stddev, mean, stddev);
    }
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(api.data(), d_api, bytes, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(mirrored.data(), d_mirror, bytes, cudaMemcpyDeviceToHost));
    // NVIDIA's host and device generators agree bit for bit on words and
    // uniforms; device normals use the GPU's own transcendental functions,
    // which differ from the host's in the last bits (seen on an H200).
    for (size_t i = 0; i < n; i++)
        EXPECT(close(kind, api.data(), from_host.data(), i),
               "%s %s: host value %zu differs from the device generator's", rng_name,
               KIND_NAMES[kind], i);
    size_t worst = 0;
    for (size_t i = 0; i < n; i++) {
        EXPECT(close(kind, api.data(), mirrored.data(), i),
               "%s %s: value %zu differs from curand_kernel.h", rng_name, KIND_NAMES[kind], i);
        if (kind > UNIFORM_DOUBLE && memcmp(api.data() + i * value_size(kind),
                                            mirrored.data() + i * value_size(kind),
                                            value_size(kind)) != 0)
            worst++;
    }
    printf("%s %s: %zu values match curand_kernel.h (%zu within rounding, the rest bit for bit)\n",
           rng_name, KIND_NAMES[kind], n, worst);
    CURAND_CHECK(curandDestroyGenerator(gen));
    CURAND_CHECK(curandDestroyGenerator(host_gen));
    CHECK(cudaFree(d_api));
    CHECK(cudaFree(d_mirror));
}

// Offset and successive calls: 32-bit values continue the one order.
template <class State>
static void offsets(curandRngType_t rng, const char *rng_name) {
    const unsigned long long seed = 42, offset = 1000;
    const size_t first = 3000, second = 5000;
    unsigned *d = nullptr, *m = nullptr;
    CHECK(cudaMalloc(&d, (first + second) * 4));
    CHECK(cudaMalloc(&m, (first + second) * 4));
    curandGenerator_t gen;
    CURAND_CHECK(curandCreateGenerator(&gen, rng));
    CURAND_CHECK(curandSetPseudoRandomGeneratorSeed(gen, seed));
    CURAND_CHECK(curandSetGeneratorOffset(gen, offset));
    CURAND_CHECK(curandSetGeneratorOrdering(gen, CURAND_ORDERING_PSEUDO_LEGACY));
    cudaStream_t stream;
    CHECK(cudaStreamCreate(&stream));
    CURAND_CHECK(curandSetStream(gen, stream));
    CURAND_CHECK(curandGenerate(gen, d, first));
    CURAND_CHECK(curandGenerate(gen, d + first, second));
    CHECK(cudaStreamSynchronize(stream));
    if (rng == CURAND_RNG_PSEUDO_PHILOX4_32_10) {
        // Units of four values: the offset is a multiple of four here.
        std::vector<unsigned> all((offset + first + second));
        unsigned *whole = nullptr;
        CHECK(cudaMalloc(&whole, all.size() * 4));
        mirror_philox<<<(all.size() / 4 + 127) / 128, 128>>>(seed, BITS, all.size() / 4, whole, 0,
                                                             1, 0, 1);
        CHECK(cudaMemcpy(m, whole + offset, (first + second) * 4, cudaMemcpyDeviceToDevice));
        CHECK(cudaFree(whole));
    } else {
        // The legacy ordering: 4096 streams for XORWOW and MRG32k3a alike.
        mirror<State><<<(first + second + 127) / 128, 128>>>(seed, offset, BITS, 1, 4096,
                                                            first + second, m, 0, 1, 0, 1);
    }
    std::vector<unsigned> api(first + second), mirrored(first + second);
    CHECK(cudaMemcpy(api.data(), d, api.size() * 4, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(mirrored.data(), m, api.size() * 4, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < api.size(); i++)
        EXPECT(api[i] == mirrored[i], "%s offset %llu: value %zu is %u, curand_kernel.h gives %u",
               rng_name, offset, i, api[i], mirrored[i]);
    printf("%s: offset %llu and two calls: %zu values match curand_kernel.h\n", rng_name, offset,
           api.size());
    CURAND_CHECK(curandDestroyGenerator(gen));
    CHECK(cudaStreamDestroy(stream));
    CHECK(cudaFree(d));
    CHECK(cudaFree(m));
}

static void mt19937() {
    // NVIDIA's MT19937 starts with the reference sequence's first value; its
    // later values interleave parallel streams, which rcud does not
    // reproduce (docs/math/rand.md).
    curandGenerator_t gen;
    CURAND_CHECK(curandCreateGeneratorHost(&gen, CURAND_RNG_PSEUDO_MT19937));
    CURAND_CHECK(curandSetPseudoRandomGeneratorSeed(gen, 5489));
    EXPECT_STATUS(curandSetGeneratorOffset(gen, 10), CURAND_STATUS_TYPE_ERROR);
    EXPECT_STATUS(curandSetGeneratorOrdering(gen, CURAND_ORDERING_PSEUDO_BEST),
                  CURAND_STATUS_OUT_OF_RANGE);
    std::vector<unsigned> out(1000);
    CURAND_CHECK(curandGenerate(gen, out.data(), 1000));
    EXPECT(out[0] == 3499211612u, "MT19937 seed 5489 starts with %u", out[0]);
    CURAND_CHECK(curandDestroyGenerator(gen));
    // The device generator gives the same.
    unsigned *d = nullptr;
    CHECK(cudaMalloc(&d, 1000 * 4));
    CURAND_CHECK(curandCreateGenerator(&gen, CURAND_RNG_PSEUDO_MT19937));
    CURAND_CHECK(curandSetPseudoRandomGeneratorSeed(gen, 5489));
    CURAND_CHECK(curandGenerate(gen, d, 1000));
    std::vector<unsigned> dev(1000);
    CHECK(cudaMemcpy(dev.data(), d, 1000 * 4, cudaMemcpyDeviceToHost));
    EXPECT(memcmp(dev.data(), out.data(), 1000 * 4) == 0, "MT19937 device and host differ");
    CURAND_CHECK(curandDestroyGenerator(gen));
    CHECK(cudaFree(d));
    printf("MT19937: first value, statuses, device and host agree\n");
}

// curand_poisson.h's inverse transform of each word.
__global__ void mirror_poisson(const unsigned *words, size_t n, double lambda, unsigned *out) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) out[i] = _curand_poisson_ITR_double(words[i], lambda);
}

static void poisson() {
    const size_t n = 3001;  // odd: one word per value
    const double lambdas[] = {50.0, 777.25};
    unsigned *words = nullptr, *d = nullptr, *mirror = nullptr;
    CHECK(cudaMalloc(&words, n * 4));
    CHECK(cudaMalloc(&d, n * 4));
    CHECK(cudaMalloc(&mirror, n * 4));
    for (double lambda : lambdas) {
        curandGenerator_t gen;
        CURAND_CHECK(curandCreateGenerator(&gen, CURAND_RNG_PSEUDO_MTGP32));
        CURAND_CHECK(curandSetPseudoRandomGeneratorSeed(gen, 1234));
        CURAND_CHECK(curandGenerate(gen, words, n));
        CURAND_CHECK(curandDestroyGenerator(gen));
        CURAND_CHECK(curandCreateGenerator(&gen, CURAND_RNG_PSEUDO_MTGP32));
        CURAND_CHECK(curandSetPseudoRandomGeneratorSeed(gen, 1234));
        CURAND_CHECK(curandGeneratePoisson(gen, d, n, lambda));
        CURAND_CHECK(curandDestroyGenerator(gen));
        mirror_poisson<<<(n + 255) / 256, 256>>>(words, n, lambda, mirror);
        CHECK(cudaGetLastError());
        std::vector<unsigned> got(n), want(n), host(n);
        CHECK(cudaMemcpy(got.data(), d, n * 4, cudaMemcpyDeviceToHost));
        CHECK(cudaMemcpy(want.data(), mirror, n * 4, cudaMemcpyDeviceToHost));
        size_t differ = 0;
        for (size_t i = 0; i < n; i++) differ += got[i] != want[i];
        EXPECT(differ == 0, "Poisson lambda %g: %zu of %zu values differ from curand_poisson.h's",
               lambda, differ, n);
        // The host generator gives the same values.
        CURAND_CHECK(curandCreateGeneratorHost(&gen, CURAND_RNG_PSEUDO_MTGP32));
        CURAND_CHECK(curandSetPseudoRandomGeneratorSeed(gen, 1234));
        CURAND_CHECK(curandGeneratePoisson(gen, host.data(), n, lambda));
        CURAND_CHECK(curandDestroyGenerator(gen));
        EXPECT(host == got, "Poisson lambda %g: host and device generators differ", lambda);
        if (lambda == 50.0) {
            // NVIDIA's library, seed 1234.
            const unsigned nvidia[] = {51, 49, 52, 70, 42, 46};
            for (int i = 0; i < 6; i++)
                EXPECT(got[i] == nvidia[i], "Poisson 50 value %d: %u, NVIDIA's %u", i, got[i], nvidia[i]);
        }
        printf("Poisson lambda %g: %zu values as curand_poisson.h's\n", lambda, n);
    }
    // Above lambda 8000 the normal approximation: NVIDIA's values.
    {
        curandGenerator_t gen;
        std::vector<unsigned> got(6);
        CURAND_CHECK(curandCreateGeneratorHost(&gen, CURAND_RNG_PSEUDO_MTGP32));
        CURAND_CHECK(curandSetPseudoRandomGeneratorSeed(gen, 1234));
        CURAND_CHECK(curandGeneratePoisson(gen, got.data(), 6, 400000.0));
        const unsigned nvidia[] = {400131, 399942, 400186};
        for (int i = 0; i < 3; i++)
            EXPECT(got[i] == nvidia[i], "Poisson 400000 value %d: %u, NVIDIA's %u", i, got[i], nvidia[i]);
        // Lambda outside (0, 400000], device and host generators alike.
        EXPECT_STATUS(curandGeneratePoisson(gen, got.data(), 6, 0.0), CURAND_STATUS_OUT_OF_RANGE);
        EXPECT_STATUS(curandGeneratePoisson(gen, got.data(), 6, 400001.0), CURAND_STATUS_OUT_OF_RANGE);
        CURAND_CHECK(curandDestroyGenerator(gen));
        CURAND_CHECK(curandCreateGenerator(&gen, CURAND_RNG_PSEUDO_XORWOW));
        EXPECT_STATUS(curandGeneratePoisson(gen, d, 6, -1.0), CURAND_STATUS_OUT_OF_RANGE);
        CURAND_CHECK(curandGeneratePoisson(gen, d, 7, 3.5));
        CURAND_CHECK(curandDestroyGenerator(gen));
    }
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaFree(words));
    CHECK(cudaFree(d));
    CHECK(cudaFree(mirror));
}

// One MTGP32 block per parameter set, 256 threads: round r of block b is
// chunk r * blocks + b of the host API's order.
__global__ void mirror_mtgp32(curandStateMtgp32_t *states, int rounds, unsigned *out) {
    for (int r = 0; r < rounds; r++) {
        unsigned v = curand(&states[blockIdx.x]);
        out[((size_t)r * gridDim.x + blockIdx.x) * 256 + threadIdx.x] = v;
    }
}

static void mtgp32(curandOrdering_t ordering, int blocks, int rounds) {
    const unsigned long long seed = 1234;
    const size_t n = (size_t)blocks * 256 * rounds;
    unsigned *d = nullptr, *m = nullptr;
    CHECK(cudaMalloc(&d, n * 4));
    CHECK(cudaMalloc(&m, n * 4));
    curandGenerator_t gen, host_gen;
    CURAND_CHECK(curandCreateGenerator(&gen, CURAND_RNG_PSEUDO_MTGP32));
    CURAND_CHECK(curandSetPseudoRandomGeneratorSeed(gen, seed));
    CURAND_CHECK(curandSetGeneratorOrdering(gen, ordering));
    EXPECT_STATUS(curandSetGeneratorOffset(gen, 10), CURAND_STATUS_TYPE_ERROR);
    // Successive calls of odd sizes continue the one order.
    CURAND_CHECK(curandGenerate(gen, d, 1001));
    CURAND_CHECK(curandGenerate(gen, d + 1001, n - 1001));
    CURAND_CHECK(curandCreateGeneratorHost(&host_gen, CURAND_RNG_PSEUDO_MTGP32));
    CURAND_CHECK(curandSetPseudoRandomGeneratorSeed(host_gen, seed));
    CURAND_CHECK(curandSetGeneratorOrdering(host_gen, ordering));
    std::vector<unsigned> api(n), from_host(n), mirrored(n);
    CURAND_CHECK(curandGenerate(host_gen, from_host.data(), n));

    mtgp32_kernel_params_t *params = nullptr;
    curandStateMtgp32_t *states = nullptr;
    CHECK(cudaMalloc(&params, sizeof(mtgp32_kernel_params_t)));
    CHECK(cudaMalloc(&states, blocks * sizeof(curandStateMtgp32_t)));
    CURAND_CHECK(curandMakeMTGP32Constants(mtgp32dc_params_fast_11213, params));
    CURAND_CHECK(curandMakeMTGP32KernelState(states, mtgp32dc_params_fast_11213, params, blocks, seed));
    mirror_mtgp32<<<blocks, 256>>>(states, rounds, m);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(api.data(), d, n * 4, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(mirrored.data(), m, n * 4, cudaMemcpyDeviceToHost));
    EXPECT(api == from_host, "MTGP32: the host generator differs from the device generator");
    for (size_t i = 0; i < n; i++)
        EXPECT(api[i] == mirrored[i], "MTGP32 %d blocks: value %zu is %u, curand_kernel.h gives %u",
               blocks, i, api[i], mirrored[i]);
    // NVIDIA's libcurand.so.10 (host generator, seed 1234): values 0, 1, 256
    // and the first of block 0's second run.
    EXPECT(api[0] == 2501053709u && api[1] == 1991185121u && api[(size_t)blocks * 256] == 809145794u,
           "MTGP32 differs from NVIDIA's values");
    if (blocks > 1) EXPECT(api[256] == 3018620328u, "MTGP32 value 256 is %u", api[256]);
    // Normals are one per value (inverse CDF): odd counts are fine.
    CURAND_CHECK(curandGenerateNormal(host_gen, (float *)from_host.data(), 7, 0.0f, 1.0f));
    printf("MTGP32 %d blocks: %zu values match curand_kernel.h and NVIDIA's\n", blocks, n);
    CURAND_CHECK(curandDestroyGenerator(gen));
    CURAND_CHECK(curandDestroyGenerator(host_gen));
    CHECK(cudaFree(params));
    CHECK(cudaFree(states));
    CHECK(cudaFree(d));
    CHECK(cudaFree(m));
}

// Value i of a call of `per` points in each of `dims` dimensions (dimension
// major): point offset + i % per of dimension i / per.
template <class State, class Vectors, class Word>
__global__ void mirror_sobol(Vectors *vectors, unsigned long long offset, size_t per, int dims,
                             Word *out) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i >= per * dims) return;
    State st;
    curand_init(vectors[i / per], offset + i % per, &st);
    out[i] = curand(&st);
}

template <class State, class Vectors, class Word>
static void sobol(curandRngType_t rng, const char *name, curandDirectionVectorSet_t set) {
    const int dims = 3;
    const unsigned long long offset = 17;
    // The second call is more than one host request (65536 values): its
    // requests' points go to their places in every dimension.
    const size_t per[2] = {301, 30001};
    const size_t n = dims * (per[0] + per[1]);
    Word *d = nullptr, *m = nullptr;
    CHECK(cudaMalloc(&d, n * sizeof(Word)));
    CHECK(cudaMalloc(&m, n * sizeof(Word)));
    curandGenerator_t gen, host_gen;
    CURAND_CHECK(curandCreateGenerator(&gen, rng));
    CURAND_CHECK(curandCreateGeneratorHost(&host_gen, rng));
    std::vector<Word> api(n), from_host(n), mirrored(n);
    for (curandGenerator_t g : {gen, host_gen}) {
        CURAND_CHECK(curandSetGeneratorOffset(g, offset));
        CURAND_CHECK(curandSetQuasiRandomGeneratorDimensions(g, dims));
        CURAND_CHECK(curandSetGeneratorOrdering(g, CURAND_ORDERING_QUASI_DEFAULT));
        Word *out = g == gen ? d : from_host.data();
        for (int call = 0; call < 2; call++) {
            size_t count = dims * per[call];
            curandStatus_t st = sizeof(Word) == 8
                ? curandGenerateLongLong(g, (unsigned long long *)out, count)
                : curandGenerate(g, (unsigned *)out, count);
            EXPECT(st == CURAND_STATUS_SUCCESS, "%s call %d: status %d", name, call, (int)st);
            out += count;
        }
    }
    Vectors *host_vectors = nullptr, *vectors = nullptr;
    CURAND_CHECK(sizeof(Word) == 8
        ? curandGetDirectionVectors64((curandDirectionVectors64_t **)&host_vectors, set)
        : curandGetDirectionVectors32((curandDirectionVectors32_t **)&host_vectors, set));
    CHECK(cudaMalloc(&vectors, dims * sizeof(Vectors)));
    CHECK(cudaMemcpy(vectors, host_vectors, dims * sizeof(Vectors), cudaMemcpyHostToDevice));
    mirror_sobol<State><<<(dims * per[0] + 127) / 128, 128>>>(vectors, offset, per[0], dims, m);
    mirror_sobol<State><<<(dims * per[1] + 127) / 128, 128>>>(vectors, offset + per[0], per[1],
                                                              dims, m + dims * per[0]);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(api.data(), d, n * sizeof(Word), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(mirrored.data(), m, n * sizeof(Word), cudaMemcpyDeviceToHost));
    EXPECT(api == from_host, "%s: the host generator differs from the device generator", name);
    for (size_t i = 0; i < n; i++)
        EXPECT(api[i] == mirrored[i], "%s: value %zu is %llu, curand_kernel.h gives %llu", name, i,
               (unsigned long long)api[i], (unsigned long long)mirrored[i]);
    // Van der Corput's dimension: point 17 (Gray code 25 = 11001b).
    EXPECT(api[0] == (Word)(((Word)1 << (sizeof(Word) * 8 - 1)) | ((Word)1 << (sizeof(Word) * 8 - 4)) |
                            ((Word)1 << (sizeof(Word) * 8 - 5))),
           "%s: point 17 of dimension 1 is %llu", name, (unsigned long long)api[0]);
    // Whole points only; normals are one per value (inverse CDF).
    EXPECT_STATUS(curandGenerateUniform(host_gen, (float *)from_host.data(), dims * 2 + 1),
                  CURAND_STATUS_LENGTH_NOT_MULTIPLE);
    CURAND_CHECK(curandGenerateNormal(host_gen, (float *)from_host.data(), dims, 0.0f, 1.0f));
    EXPECT_STATUS(curandSetPseudoRandomGeneratorSeed(gen, 1), CURAND_STATUS_TYPE_ERROR);
    EXPECT_STATUS(curandSetQuasiRandomGeneratorDimensions(gen, 20001), CURAND_STATUS_OUT_OF_RANGE);
    EXPECT_STATUS(sizeof(Word) == 8 ? curandGenerate(gen, (unsigned *)d, dims)
                                    : curandGenerateLongLong(gen, (unsigned long long *)d, dims),
                  CURAND_STATUS_TYPE_ERROR);
    printf("%s: %zu values in %d dimensions match curand_kernel.h\n", name, n, dims);
    CURAND_CHECK(curandDestroyGenerator(gen));
    CURAND_CHECK(curandDestroyGenerator(host_gen));
    CHECK(cudaFree(vectors));
    CHECK(cudaFree(d));
    CHECK(cudaFree(m));
}

static void statuses() {
    int version = 0;
    CURAND_CHECK(curandGetVersion(&version));
    // rcud answers one cuRAND 10 version whatever header a program saw.
    EXPECT(version / 1000 == CURAND_VER_MAJOR, "curandGetVersion gave %d", version);
    int major = 0;
    CURAND_CHECK(curandGetProperty(MAJOR_VERSION, &major));
    EXPECT(major == CURAND_VER_MAJOR, "major version %d", major);

    curandGenerator_t gen;
    float *d = nullptr;
    CHECK(cudaMalloc(&d, 64 * sizeof(float)));
    CURAND_CHECK(curandCreateGenerator(&gen, CURAND_RNG_PSEUDO_DEFAULT));
    EXPECT_STATUS(curandGenerateNormal(gen, d, 63, 0.0f, 1.0f), CURAND_STATUS_LENGTH_NOT_MULTIPLE);
    EXPECT_STATUS(curandGenerateLongLong(gen, (unsigned long long *)d, 8), CURAND_STATUS_TYPE_ERROR);
    EXPECT_STATUS(curandSetQuasiRandomGeneratorDimensions(gen, 2), CURAND_STATUS_TYPE_ERROR);
    EXPECT_STATUS(curandSetGeneratorOrdering(gen, CURAND_ORDERING_QUASI_DEFAULT), CURAND_STATUS_OUT_OF_RANGE);
    CURAND_CHECK(curandGenerateUniform(gen, d, 64));
    CURAND_CHECK(curandGenerateSeeds(gen));
    CURAND_CHECK(curandDestroyGenerator(gen));
    EXPECT_STATUS(curandCreateGenerator(&gen, (curandRngType_t)12345), CURAND_STATUS_TYPE_ERROR);
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaFree(d));
}

// rcud's refusals of what a local GPU leaves undefined (output past the
// allocation, a destroyed generator: natively cuRAND writes past the end
// and uses freed memory), so this runs under rcud only: `math_rand hostile`.
static void hostile() {
    curandGenerator_t gen;
    float *d = nullptr;
    CHECK(cudaMalloc(&d, 64 * sizeof(float)));
    CURAND_CHECK(curandCreateGenerator(&gen, CURAND_RNG_PSEUDO_DEFAULT));
    // Past the end of the allocation: refused before anything is launched.
    EXPECT_STATUS(curandGenerateUniform(gen, d, 65), CURAND_STATUS_LAUNCH_FAILURE);
    CURAND_CHECK(curandDestroyGenerator(gen));
    EXPECT_STATUS(curandGenerateUniform(gen, d, 64), CURAND_STATUS_NOT_INITIALIZED);
    EXPECT_STATUS(curandSetPseudoRandomGeneratorSeed(gen, 1), CURAND_STATUS_NOT_INITIALIZED);
    EXPECT_STATUS(curandDestroyGenerator(gen), CURAND_STATUS_NOT_INITIALIZED);
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaFree(d));
    printf("hostile calls refused\n");
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "hostile") == 0) {
        hostile();
        printf("PASS\n");
        return 0;
    }
    const size_t n = 5000;  // more than 4096: every XORWOW stream, and some twice
    for (int kind = BITS; kind <= LOG_NORMAL_DOUBLE; kind++) {
        compare<curandStateXORWOW_t>(CURAND_RNG_PSEUDO_XORWOW, "XORWOW", kind, n, 1234);
        compare<curandStatePhilox4_32_10_t>(CURAND_RNG_PSEUDO_PHILOX4_32_10, "Philox4_32_10", kind, n, 0x123456789abcull);
        compare<curandStateMRG32k3a_t>(CURAND_RNG_PSEUDO_MRG32K3A, "MRG32k3a", kind, n, 987654321);
    }
    offsets<curandStateXORWOW_t>(CURAND_RNG_PSEUDO_XORWOW, "XORWOW");
    offsets<curandStatePhilox4_32_10_t>(CURAND_RNG_PSEUDO_PHILOX4_32_10, "Philox4_32_10");
    offsets<curandStateMRG32k3a_t>(CURAND_RNG_PSEUDO_MRG32K3A, "MRG32k3a");
    mt19937();
    mtgp32(CURAND_ORDERING_PSEUDO_LEGACY, 64, 2);
    mtgp32(CURAND_ORDERING_PSEUDO_DEFAULT, 192, 2);
    sobol<curandStateSobol32_t, curandDirectionVectors32_t, unsigned>(
        CURAND_RNG_QUASI_SOBOL32, "Sobol32", CURAND_DIRECTION_VECTORS_32_JOEKUO6);
    sobol<curandStateSobol64_t, curandDirectionVectors64_t, unsigned long long>(
        CURAND_RNG_QUASI_SOBOL64, "Sobol64", CURAND_DIRECTION_VECTORS_64_JOEKUO6);
    poisson();
    statuses();
    printf("PASS\n");
    return 0;
}
