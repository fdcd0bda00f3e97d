// Checks and conversions shared by the cuSOLVER test programs: a call that
// must succeed (SOLVER) or return a given status (EXPECT_STATUS), and
// conversions between the element types and std::complex<double>.
#pragma once

#include <cuComplex.h>
#include <cusolver_common.h>

#include <complex>

#include "check.h"

typedef std::complex<double> cd;

#define SOLVER(call)                                                                \
    do {                                                                            \
        cusolverStatus_t st_ = (call);                                              \
        if (st_ != CUSOLVER_STATUS_SUCCESS) {                                       \
            printf("FAIL: %s returned status %d at line %d\n", #call, (int)st_,     \
                   __LINE__);                                                       \
            fflush(stdout);                                                         \
            exit(1);                                                                \
        }                                                                           \
    } while (0)

#define EXPECT_STATUS(call, expected)                                               \
    do {                                                                            \
        cusolverStatus_t st_ = (call);                                              \
        EXPECT(st_ == (expected), "%s returned %d, expected %d", #call, (int)st_,   \
               (int)(expected));                                                    \
    } while (0)

static inline cd to_c(float x) { return cd(x, 0); }
static inline cd to_c(double x) { return cd(x, 0); }
static inline cd to_c(cuComplex x) { return cd(x.x, x.y); }
static inline cd to_c(cuDoubleComplex x) { return cd(x.x, x.y); }
template <typename T> T from_c(cd z);
template <> inline float from_c<float>(cd z) { return (float)z.real(); }
template <> inline double from_c<double>(cd z) { return z.real(); }
template <> inline cuComplex from_c<cuComplex>(cd z) {
    return make_cuComplex((float)z.real(), (float)z.imag());
}
template <> inline cuDoubleComplex from_c<cuDoubleComplex>(cd z) {
    return make_cuDoubleComplex(z.real(), z.imag());
}
