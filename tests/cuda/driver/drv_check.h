// Checks shared by the driver-API test programs (C and C++): on failure they
// print `FAIL: <reason>` and exit with status 1; the harness reads that line.
// Every CUresult is checked; a failed call is named with cuGetErrorName.
#pragma once

#include <cuda.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

#define EXPECT(cond, ...)                                                           \
    do {                                                                            \
        if (!(cond)) {                                                              \
            printf("FAIL: ");                                                       \
            printf(__VA_ARGS__);                                                    \
            printf(" (%s, line %d)\n", #cond, __LINE__);                            \
            fflush(stdout);                                                         \
            exit(1);                                                                \
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
            exit(1);                                                                \
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
