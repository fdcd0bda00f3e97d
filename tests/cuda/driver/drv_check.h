// Checks shared by the driver-API test programs (C and C++): on failure they
// print `FAIL: <reason>` and exit with status 1; the harness reads that line.
// Every CUresult is checked; a failed call is named with cuGetErrorName.
#pragma once

#include <cuda.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static inline const char *cu_error_name(CUresult r) {
    const char *name = NULL;
    if (cuGetErrorName(r, &name) != CUDA_SUCCESS || name == NULL) return "unknown CUresult";
    return name;
}

#define CU_CHECK(call)                                                              \
    do {                                                                            \
        CUresult r_ = (call);                                                       \
        if (r_ != CUDA_SUCCESS) {                                                   \
            printf("FAIL: %s returned %s (%d) at line %d\n", #call,                 \
                   cu_error_name(r_), (int)r_, __LINE__);                           \
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

// Runs `call`, prints `<label> -> <error name>` and checks the result against
// `expected`.
#define CU_EXPECT_ERR_AS(label, call, expected)                                     \
    do {                                                                            \
        CUresult r_ = (call);                                                       \
        printf("%s -> %s\n", label, cu_error_name(r_));                             \
        fflush(stdout);                                                             \
        if (r_ != (expected)) {                                                     \
            printf("FAIL: %s returned %s (%d), expected %s at line %d\n", #call,    \
                   cu_error_name(r_), (int)r_, #expected, __LINE__);                \
            fflush(stdout);                                                         \
            check_mismatch_();                                                      \
        }                                                                           \
    } while (0)

#define CU_EXPECT_ERR(call, expected) CU_EXPECT_ERR_AS(#call, call, expected)

// The whole file at `path`, followed by a NUL byte (PTX must be a C string);
// `*size` (when not NULL) gets the file's size without the NUL.
static inline char *read_file(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    EXPECT(f != NULL, "cannot open %s", path);
    EXPECT(fseek(f, 0, SEEK_END) == 0, "cannot seek in %s", path);
    long len = ftell(f);
    EXPECT(len > 0, "%s is empty or unreadable", path);
    rewind(f);
    char *data = (char *)malloc((size_t)len + 1);
    EXPECT(data != NULL, "out of memory for %s", path);
    EXPECT(fread(data, 1, (size_t)len, f) == (size_t)len, "short read of %s", path);
    fclose(f);
    data[len] = '\0';
    if (size) *size = (size_t)len;
    return data;
}
