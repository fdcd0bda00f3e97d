// Checks shared by the CUDA test programs: on failure they print
// `FAIL: <reason>` and exit with status 1; the harness reads that line.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <unistd.h>

#define CHECK(call)                                                                 \
    do {                                                                            \
        cudaError_t err_ = (call);                                                  \
        if (err_ != cudaSuccess) {                                                  \
            printf("FAIL: %s returned %s (%d) at line %d\n", #call,                 \
                   cudaGetErrorName(err_), (int)err_, __LINE__);                    \
            fflush(stdout);                                                         \
            exit(1);                                                                \
        }                                                                           \
    } while (0)

// With RCUD_CHECK_SURVEY set, an unexpected error code is reported and the
// program goes on (and exits with status 1 at the end), so that one run on a
// real GPU lists every difference from the driver at once.
static int check_mismatches_ __attribute__((unused)) = 0;
__attribute__((unused)) static void check_exit_(void) {
    if (check_mismatches_) _exit(1);
}
__attribute__((unused)) static void check_mismatch_(void) {
    if (getenv("RCUD_CHECK_SURVEY") == NULL) exit(1);
    if (check_mismatches_++ == 0) atexit(check_exit_);
}

#define EXPECT(cond, ...)                                                           \
    do {                                                                            \
        if (!(cond)) {                                                              \
            printf("FAIL: ");                                                       \
            printf(__VA_ARGS__);                                                    \
            printf(" (%s, line %d)\n", #cond, __LINE__);                            \
            fflush(stdout);                                                         \
            check_mismatch_();                                                      \
        }                                                                           \
    } while (0)

// Runs `call`, prints `<label> -> <error name>`, checks the result against
// `expected`, and clears the last error so that cases do not leak into each other.
#define EXPECT_ERR_AS(label, call, expected)                                        \
    do {                                                                            \
        cudaError_t err_ = (call);                                                  \
        printf("%s -> %s\n", label, cudaGetErrorName(err_));                        \
        fflush(stdout);                                                             \
        if (err_ != (expected)) {                                                   \
            printf("FAIL: %s returned %s (%d), expected %s at line %d\n", #call,    \
                   cudaGetErrorName(err_), (int)err_, #expected, __LINE__);         \
            fflush(stdout);                                                         \
            check_mismatch_();                                                      \
        }                                                                           \
        (void)cudaGetLastError();                                                   \
    } while (0)

#define EXPECT_ERR(call, expected) EXPECT_ERR_AS(#call, call, expected)
