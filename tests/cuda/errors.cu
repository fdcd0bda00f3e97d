// Error reporting of the CUDA runtime: the codes returned by invalid calls,
// cudaGetLastError / cudaPeekAtLastError, cudaGetErrorString and
// cudaGetErrorName, and that none of these errors is sticky. No kernels.
//
// Each case prints `<call> -> <cudaGetErrorName(result)>`. Self-checking:
// `FAIL: <reason>` and exit status 1 on any mismatch, `PASS` as the last line
// on success.

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "check.h"

// A host-to-device-to-host round trip that must work whatever failed before.
static void round_trip(const char *when) {
    const size_t n = 1u << 20;
    unsigned char *host = (unsigned char *)malloc(n);
    unsigned char *back = (unsigned char *)malloc(n);
    EXPECT(host != NULL && back != NULL, "host malloc failed");
    for (size_t i = 0; i < n; i++) host[i] = (unsigned char)(i * 7 + 3);
    memset(back, 0, n);
    void *d = NULL;
    CHECK(cudaMalloc(&d, n));
    CHECK(cudaMemcpy(d, host, n, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(back, d, n, cudaMemcpyDeviceToHost));
    EXPECT(memcmp(host, back, n) == 0, "%s: round trip data mismatch", when);
    CHECK(cudaFree(d));
    free(host);
    free(back);
    printf("%s: malloc/memcpy round trip ok\n", when);
}

int main() {
    int count = 0;
    CHECK(cudaGetDeviceCount(&count));
    printf("device count: %d\n", count);
    EXPECT(count >= 1, "no CUDA device");
    CHECK(cudaSetDevice(0));
    round_trip("before errors");

    // Invalid device ordinals.
    EXPECT_ERR_AS("cudaSetDevice(count)", cudaSetDevice(count), cudaErrorInvalidDevice);
    int current = -1;
    CHECK(cudaGetDevice(&current));
    EXPECT(current == 0, "a failed cudaSetDevice changed the current device to %d", current);
    cudaDeviceProp prop;
    EXPECT_ERR_AS("cudaGetDeviceProperties(&prop, -1)", cudaGetDeviceProperties(&prop, -1),
               cudaErrorInvalidDevice);

    // Allocation failure.
    void *huge = NULL;
    EXPECT_ERR_AS("cudaMalloc(&p, 1<<50)", cudaMalloc(&huge, (size_t)1 << 50),
               cudaErrorMemoryAllocation);

    // Frees.
    EXPECT_ERR_AS("cudaFree((void*)0x1234)", cudaFree((void *)0x1234), cudaErrorInvalidValue);
    EXPECT_ERR_AS("cudaFree(NULL)", cudaFree(NULL), cudaSuccess);
    void *d = NULL;
    CHECK(cudaMalloc(&d, 4096));
    CHECK(cudaFree(d));
    EXPECT_ERR_AS("cudaFree(p) twice", cudaFree(d), cudaErrorInvalidValue);

    // Copies and memsets outside any allocation.
    const size_t n = 4096;
    unsigned char *host = (unsigned char *)calloc(1, 2 * n);
    EXPECT(host != NULL, "host calloc failed");
    unsigned char *buf = NULL;
    CHECK(cudaMalloc((void **)&buf, n));
    EXPECT_ERR_AS("cudaMemcpy(H2D, invalid device pointer)",
               cudaMemcpy((void *)0x1234, host, n, cudaMemcpyHostToDevice), cudaErrorInvalidValue);
    EXPECT_ERR_AS("cudaMemcpy(D2H, past the end of the allocation)",
               cudaMemcpy(host, buf + n / 2, n, cudaMemcpyDeviceToHost), cudaErrorInvalidValue);
    EXPECT_ERR_AS("cudaMemset(past the end of the allocation)", cudaMemset(buf + 1, 0, n),
               cudaErrorInvalidValue);

    // cudaGetLastError returns the last error, then cudaSuccess; a successful
    // call in between does not clear it, and cudaPeekAtLastError does not reset it.
    CHECK(cudaGetLastError());
    cudaError_t first = cudaSetDevice(count);
    EXPECT(first == cudaErrorInvalidDevice, "cudaSetDevice(count) returned %s",
           cudaGetErrorName(first));
    CHECK(cudaGetDeviceCount(&count));
    cudaError_t peek1 = cudaPeekAtLastError();
    cudaError_t peek2 = cudaPeekAtLastError();
    printf("cudaPeekAtLastError() -> %s\n", cudaGetErrorName(peek1));
    printf("cudaPeekAtLastError() again -> %s\n", cudaGetErrorName(peek2));
    EXPECT(peek1 == cudaErrorInvalidDevice, "cudaPeekAtLastError returned %s",
           cudaGetErrorName(peek1));
    EXPECT(peek2 == cudaErrorInvalidDevice, "second cudaPeekAtLastError returned %s",
           cudaGetErrorName(peek2));
    cudaError_t last1 = cudaGetLastError();
    cudaError_t last2 = cudaGetLastError();
    printf("cudaGetLastError() -> %s\n", cudaGetErrorName(last1));
    printf("cudaGetLastError() again -> %s\n", cudaGetErrorName(last2));
    EXPECT(last1 == cudaErrorInvalidDevice, "cudaGetLastError returned %s",
           cudaGetErrorName(last1));
    EXPECT(last2 == cudaSuccess, "second cudaGetLastError returned %s", cudaGetErrorName(last2));

    // The last error is the most recent one.
    CHECK(cudaFree(buf));
    (void)cudaSetDevice(count);
    (void)cudaFree((void *)0x1234);
    cudaError_t last3 = cudaGetLastError();
    printf("cudaGetLastError() after two errors -> %s\n", cudaGetErrorName(last3));
    EXPECT(last3 == cudaErrorInvalidValue, "cudaGetLastError after two errors returned %s",
           cudaGetErrorName(last3));

    // Names and strings.
    const char *s = cudaGetErrorString(cudaErrorInvalidValue);
    printf("cudaGetErrorString(cudaErrorInvalidValue) = \"%s\"\n", s ? s : "(null)");
    EXPECT(s != NULL && strcmp(s, "invalid argument") == 0,
           "cudaGetErrorString(cudaErrorInvalidValue) is not \"invalid argument\"");
    const char *name = cudaGetErrorName(cudaErrorInvalidValue);
    printf("cudaGetErrorName(cudaErrorInvalidValue) = \"%s\"\n", name ? name : "(null)");
    EXPECT(name != NULL && strcmp(name, "cudaErrorInvalidValue") == 0,
           "cudaGetErrorName(cudaErrorInvalidValue) is wrong");
    const char *ok = cudaGetErrorName(cudaSuccess);
    printf("cudaGetErrorName(cudaSuccess) = \"%s\"\n", ok ? ok : "(null)");
    EXPECT(ok != NULL && strcmp(ok, "cudaSuccess") == 0, "cudaGetErrorName(cudaSuccess) is wrong");
    const char *unknown = cudaGetErrorName((cudaError_t)12345);
    printf("cudaGetErrorName(12345) = \"%s\"\n", unknown ? unknown : "(null)");
    EXPECT(unknown != NULL && strcmp(unknown, "unrecognized error code") == 0,
           "cudaGetErrorName(12345) is not \"unrecognized error code\"");

    // None of these errors is sticky: the device still works.
    EXPECT(cudaGetLastError() == cudaSuccess, "an error is still pending");
    round_trip("after errors");
    free(host);

    CHECK(cudaDeviceSynchronize());
    CHECK(cudaGetLastError());
    printf("PASS\n");
    return 0;
}
