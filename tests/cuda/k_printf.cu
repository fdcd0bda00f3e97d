// Device-side printf: %d %u %x %f %s %c %lld, a width, a precision, flags,
// `%%`, and many threads in several blocks, some of them in a divergent
// branch. The host prints nothing but `PASS` (after the last
// cudaDeviceSynchronize); every device line starts with `[dev] ` and the
// harness checks the set of device lines (their order between threads is
// unspecified):
//   `[dev] block B thread T: d=<7-1000*G> u=<4000000000+G> x=<hex of 0xdeadbe00+G>
//    f=<G*1.25 as %f> s=<name G> c=<'A'+G> lld=<-1234567890123*(G+1)>` for
//    blocks 0..2, threads 0..3, G = 3*B + T, names alpha beta gamma delta
//    epsilon zeta;
//   `[dev] hello from the device`
//   `[dev] 100% done, %d is literal`
//   `[dev] padded: [   42] [42   ] [0000beef] [3.142] [     right]`
//   `[dev] double 0.67 and float 0.5, end`
//   `[dev] many G` for G in 0..128 with G % 3 != 1.

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#include "check.h"

__device__ const char *name_of(int i) {
    switch (i) {
    case 0: return "alpha";
    case 1: return "beta";
    case 2: return "gamma";
    case 3: return "delta";
    case 4: return "epsilon";
    default: return "zeta";
    }
}

__global__ void print_values(int base) {
    const int g = blockIdx.x * blockDim.x + threadIdx.x;
    const int d = base - g * 1000;
    const unsigned u = 4000000000u + (unsigned)g;
    const unsigned x = 0xdeadbe00u + (unsigned)g;
    const float f = (float)g * 1.25f;
    const char c = (char)('A' + g);
    const long long ll = -1234567890123LL * (g + 1);
    printf("[dev] block %d thread %d: d=%d u=%u x=%x f=%f s=%s c=%c lld=%lld\n", blockIdx.x,
           threadIdx.x, d, u, x, f, name_of(g), c, ll);
}

__global__ void print_formats() {
    printf("[dev] hello from the device\n");
    printf("[dev] 100%% done, %%d is literal\n");
    printf("[dev] padded: [%5d] [%-5d] [%08x] [%.3f] [%10s]\n", 42, 42, 0xbeefu, 3.14159,
           "right");
    printf("[dev] double %.2f and float %.1f, %s\n", 2.0 / 3.0, 0.5f, "end");
}

__global__ void print_many() {
    const int g = blockIdx.x * blockDim.x + threadIdx.x;
    if (g % 3 != 1) printf("[dev] many %d\n", g);
}

int main() {
    CHECK(cudaSetDevice(0));
    print_values<<<2, 3>>>(7);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    print_formats<<<1, 1>>>();
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    print_many<<<4, 32>>>();
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    fflush(stdout);
    printf("PASS\n");
    return 0;
}
