// A stand-in for NVIDIA's cuRAND, for testing the `cuda` backend's cuRAND
// calls on hosts without a GPU, together with fake_libcuda.c (whose "device
// memory" is host memory, so the functions here write it directly).
//
// It exports every entry point rcud-cuda-driver resolves and validates their
// arguments as cuRAND documents (statuses below). Its values are not random:
// the 32-bit word at position p of a generator is seed + offset + p (mod
// 2^32), positions counting every word the generator handed out since its
// last setting; the distributions are simple functions of that word (see
// `word`, `uniform`, `normal`), so the tests can tell exactly which values a
// call wrote and where. Every call appends one line to the file FAKE_LOG:
// `<function> gen=<g> stream=<s> type=<t> n=<n>`, so the tests can tell which
// calls reached the library, for which generator and on which stream.
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#ifndef FAKE_LOG
#error "build with -DFAKE_LOG='\"path\"'"
#endif

enum {
    OK = 0,
    NOT_INITIALIZED = 101,
    ALLOCATION_FAILED = 102,
    TYPE_ERROR = 103,
    OUT_OF_RANGE = 104,
    LENGTH_NOT_MULTIPLE = 105,
};

struct gen {
    unsigned type;
    void *stream;
    unsigned long long seed, offset;
    unsigned ordering, dimensions;
    unsigned long long position;
};

static void note(const char *call, struct gen *g, size_t n) {
    FILE *f = fopen(FAKE_LOG, "a");
    if (!f) return;
    fprintf(f, "%s gen=%p stream=%p type=%u n=%zu\n", call, (void *)g, g ? g->stream : NULL,
            g ? g->type : 0, n);
    fclose(f);
}

static int quasi(unsigned t) { return t >= 201 && t <= 204; }
static int sobol64(unsigned t) { return t == 203 || t == 204; }
// MTGP32 and the quasi-random generators make one normal per word.
static int pairwise(unsigned t) { return t != 141 && !quasi(t); }

static int create(struct gen **out, unsigned type, const char *name) {
    if (!out) return OUT_OF_RANGE;
    switch (type) {
    case 100: case 101: case 121: case 141: case 142: case 161:
    case 201: case 202: case 203: case 204:
        break;
    default:
        note(name, NULL, 0);
        return TYPE_ERROR;
    }
    struct gen *g = calloc(1, sizeof *g);
    if (!g) return ALLOCATION_FAILED;
    g->type = type;
    g->ordering = quasi(type) ? 201 : 101;
    g->dimensions = 1;
    *out = g;
    note(name, g, 0);
    return OK;
}
int curandCreateGenerator(struct gen **out, unsigned type) {
    return create(out, type, "curandCreateGenerator");
}
// A host generator here is the same code, writing wherever it is told:
// the tests check the server hands it host memory of its own.
int curandCreateGeneratorHost(struct gen **out, unsigned type) {
    return create(out, type, "curandCreateGeneratorHost");
}
int curandDestroyGenerator(struct gen *g) {
    if (!g) return NOT_INITIALIZED;
    note("curandDestroyGenerator", g, 0);
    free(g);
    return OK;
}
int curandSetStream(struct gen *g, void *stream) {
    if (!g) return NOT_INITIALIZED;
    g->stream = stream;
    note("curandSetStream", g, 0);
    return OK;
}
int curandSetPseudoRandomGeneratorSeed(struct gen *g, unsigned long long seed) {
    if (!g) return NOT_INITIALIZED;
    note("curandSetPseudoRandomGeneratorSeed", g, 0);
    if (quasi(g->type)) return TYPE_ERROR;
    g->seed = seed;
    g->position = 0;
    return OK;
}
int curandSetGeneratorOffset(struct gen *g, unsigned long long offset) {
    if (!g) return NOT_INITIALIZED;
    note("curandSetGeneratorOffset", g, 0);
    if (g->type == 141 || g->type == 142) return TYPE_ERROR;
    g->offset = offset;
    g->position = 0;
    return OK;
}
int curandSetGeneratorOrdering(struct gen *g, unsigned ordering) {
    if (!g) return NOT_INITIALIZED;
    note("curandSetGeneratorOrdering", g, 0);
    int ok = quasi(g->type) ? ordering == 201 : ordering >= 100 && ordering <= 103;
    if (!ok) return OUT_OF_RANGE;
    g->ordering = ordering;
    g->position = 0;
    return OK;
}
int curandSetQuasiRandomGeneratorDimensions(struct gen *g, unsigned dimensions) {
    if (!g) return NOT_INITIALIZED;
    note("curandSetQuasiRandomGeneratorDimensions", g, 0);
    if (!quasi(g->type)) return TYPE_ERROR;
    if (dimensions < 1 || dimensions > 20000) return OUT_OF_RANGE;
    g->dimensions = dimensions;
    g->position = 0;
    return OK;
}

static unsigned word(struct gen *g) {
    return (unsigned)(g->seed + g->offset + g->position++);
}
static double uniform(unsigned w) { return ((w & 0xffff) + 1) / 65536.0; }
// -3 .. 3 standard deviations, by the word.
static double normal(unsigned w, double mean, double stddev) {
    return mean + stddev * ((int)(w % 7) - 3);
}

// The checks cuRAND makes before generating: whole points of a quasi
// generator, normals in Box-Muller pairs.
static int check(struct gen *g, size_t n, int normals) {
    if (quasi(g->type) && n % g->dimensions) return LENGTH_NOT_MULTIPLE;
    if (normals && pairwise(g->type) && n % 2) return LENGTH_NOT_MULTIPLE;
    return OK;
}

#define GENERATE(name, T, normals, value)                  \
    int name(struct gen *g, T *out, size_t n) {            \
        if (!g) return NOT_INITIALIZED;                    \
        note(#name, g, n);                                 \
        int s = check(g, n, normals);                      \
        if (s) return s;                                   \
        for (size_t i = 0; i < n; i++) {                   \
            unsigned w = word(g);                          \
            out[i] = (T)(value);                           \
        }                                                  \
        return OK;                                         \
    }

#define GENERATE_NORMAL(name, T, value)                                 \
    int name(struct gen *g, T *out, size_t n, T mean, T stddev) {       \
        if (!g) return NOT_INITIALIZED;                                 \
        note(#name, g, n);                                              \
        int s = check(g, n, 1);                                         \
        if (s) return s;                                                \
        for (size_t i = 0; i < n; i++) {                                \
            unsigned w = word(g);                                       \
            out[i] = (T)(value);                                        \
        }                                                               \
        return OK;                                                      \
    }

int curandGenerate(struct gen *g, unsigned *out, size_t n) {
    if (!g) return NOT_INITIALIZED;
    note("curandGenerate", g, n);
    if (sobol64(g->type)) return TYPE_ERROR;
    int s = check(g, n, 0);
    if (s) return s;
    for (size_t i = 0; i < n; i++) out[i] = word(g);
    return OK;
}
int curandGenerateLongLong(struct gen *g, unsigned long long *out, size_t n) {
    if (!g) return NOT_INITIALIZED;
    note("curandGenerateLongLong", g, n);
    if (!sobol64(g->type)) return TYPE_ERROR;
    int s = check(g, n, 0);
    if (s) return s;
    for (size_t i = 0; i < n; i++) out[i] = (unsigned long long)word(g) << 32;
    return OK;
}
GENERATE(curandGenerateUniform, float, 0, uniform(w))
GENERATE(curandGenerateUniformDouble, double, 0, uniform(w))
GENERATE_NORMAL(curandGenerateNormal, float, normal(w, mean, stddev))
GENERATE_NORMAL(curandGenerateNormalDouble, double, normal(w, mean, stddev))
GENERATE_NORMAL(curandGenerateLogNormal, float, exp(normal(w, mean, stddev)))
GENERATE_NORMAL(curandGenerateLogNormalDouble, double, exp(normal(w, mean, stddev)))
// Poisson: lambda checked as cuRAND checks it, then lambda + (w mod 3) - 1.
int curandGeneratePoisson(struct gen *g, unsigned *out, size_t n, double lambda) {
    if (!g) return NOT_INITIALIZED;
    note("curandGeneratePoisson", g, n);
    if (!(lambda > 0 && lambda <= 400000)) return OUT_OF_RANGE;
    int s = check(g, n, 0);
    if (s) return s;
    for (size_t i = 0; i < n; i++) out[i] = (unsigned)lambda + word(g) % 3 - 1;
    return OK;
}
