#include <cstdio>
// Device printf with many conversions.
extern "C" __global__ void hello(int n) {
    int t = threadIdx.x;
    if (t < n) {
        printf("thread %d of %u: %5.2f|%-4d|%04x|%c|%s|%lld|%e|%g|%%|%llu|%X|%o|%+d\n", t,
               blockDim.x, t * 1.25f, t, 255 + t, 'a' + t, "str", -1234567890123ll * (t + 1),
               12345.678 * t, 0.0001 * (t + 1), 18446744073709551615ull, 0xABCDu, 8, t);
    }
    if (t == 0) printf("block %d done %ld %5s %.3s %i\n", blockIdx.x, 42l, "ab", "abcdef", -7);
}
