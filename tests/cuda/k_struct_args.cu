// Kernel parameters of awkward layouts passed by value: structs with padding,
// nested structs, a 1-byte struct, arrays inside structs, 16-byte aligned
// structs and CUDA vector types, a large (808-byte) struct, small integer
// types (char, signed/unsigned char, short, unsigned short, bool) and mixed
// argument orders with the output pointer in the middle. Each kernel writes
// every value it received, widened to 64 bits (floating point as its bit
// pattern), to device memory; the host compares them with what it passed.
//
// Prints `<kernel>: ok` per kernel, e.g. `k_awkward: ok`.
// Self-checking: `FAIL: <reason>` and exit status 1 on any mismatch, `PASS` as
// the last line on success.

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "check.h"

struct Awkward {  // c@0, d@8, s@16, t@22; size 24
    char c;
    double d;
    short s[3];
    char t;
};

struct Inner {  // a@0, b@4; size 8
    short a;
    int b;
};

struct Nested {  // tag@0, in@4, x@16, arr@24, last@40; size 48
    char tag;
    Inner in;
    double x;
    Inner arr[2];
    unsigned char last;
};

struct Tiny {  // size 1
    unsigned char v;
};

struct WithArray {  // n@0, vals@4, name@24; size 32
    int n;
    float vals[5];
    char name[7];
};

struct __align__(16) Aligned {  // size 16, alignment 16
    float x;
    int y;
};

struct Big {  // v@0, tail@800; size 808
    int v[200];
    long long tail;
};

static const int MAX_SLOTS = 256;

__device__ long long fbits(float f) { return (long long)(unsigned)__float_as_int(f); }
__device__ long long dbits(double d) { return __double_as_longlong(d); }

__global__ void k_awkward(Awkward a, long long *out) {
    out[0] = a.c;
    out[1] = dbits(a.d);
    out[2] = a.s[0];
    out[3] = a.s[1];
    out[4] = a.s[2];
    out[5] = a.t;
}

__global__ void k_nested(long long *out, Nested n) {
    out[0] = n.tag;
    out[1] = n.in.a;
    out[2] = n.in.b;
    out[3] = dbits(n.x);
    out[4] = n.arr[0].a;
    out[5] = n.arr[0].b;
    out[6] = n.arr[1].a;
    out[7] = n.arr[1].b;
    out[8] = n.last;
}

__global__ void k_tiny(Tiny t, char c, Tiny u, long long *out, Tiny w) {
    out[0] = t.v;
    out[1] = c;
    out[2] = u.v;
    out[3] = w.v;
}

__global__ void k_with_array(WithArray w, long long *out) {
    out[0] = w.n;
    for (int i = 0; i < 5; i++) out[1 + i] = fbits(w.vals[i]);
    for (int i = 0; i < 7; i++) out[6 + i] = w.name[i];
}

__global__ void k_small_ints(char c, unsigned char uc, short s, unsigned short us, bool b,
                             signed char sc, bool b2, long long *out) {
    out[0] = c;
    out[1] = uc;
    out[2] = s;
    out[3] = us;
    out[4] = b;
    out[5] = sc;
    out[6] = b2;
}

__global__ void k_mixed(char a, double b, short c, long long *out, bool d, float e,
                        unsigned char f, long long g, Tiny t, double h, int i) {
    out[0] = a;
    out[1] = dbits(b);
    out[2] = c;
    out[3] = d;
    out[4] = fbits(e);
    out[5] = f;
    out[6] = g;
    out[7] = t.v;
    out[8] = dbits(h);
    out[9] = i;
}

__global__ void k_aligned(char c, Aligned a, char d, int2 v2, double2 dv, float4 f4,
                          long long *out) {
    out[0] = c;
    out[1] = fbits(a.x);
    out[2] = a.y;
    out[3] = d;
    out[4] = v2.x;
    out[5] = v2.y;
    out[6] = dbits(dv.x);
    out[7] = dbits(dv.y);
    out[8] = fbits(f4.x);
    out[9] = fbits(f4.y);
    out[10] = fbits(f4.z);
    out[11] = fbits(f4.w);
}

__global__ void k_big(short before, Big b, long long *out, short after) {
    out[0] = before;
    for (int i = 0; i < 200; i++) out[1 + i] = b.v[i];
    out[201] = b.tail;
    out[202] = after;
}

static long long hf(float f) {
    unsigned u;
    memcpy(&u, &f, sizeof u);
    return (long long)u;
}

static long long hd(double d) {
    long long v;
    memcpy(&v, &d, sizeof v);
    return v;
}

static long long *d_out = NULL;

static void reset_out() { CHECK(cudaMemset(d_out, 0xEE, MAX_SLOTS * sizeof(long long))); }

static void check_out(const char *kernel, const long long *want, int count) {
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    long long got[MAX_SLOTS];
    CHECK(cudaMemcpy(got, d_out, sizeof got, cudaMemcpyDeviceToHost));
    for (int i = 0; i < count; i++)
        EXPECT(got[i] == want[i], "%s: value %d is %lld (0x%llx), expected %lld (0x%llx)", kernel,
               i, got[i], (unsigned long long)got[i], want[i], (unsigned long long)want[i]);
    printf("%s: ok\n", kernel);
}

int main() {
    CHECK(cudaSetDevice(0));
    CHECK(cudaMalloc(&d_out, MAX_SLOTS * sizeof(long long)));

    {
        Awkward a;
        memset(&a, 0x5C, sizeof a);  // padding full of junk
        a.c = 'q';
        a.d = -1234.5678125;
        a.s[0] = -2;
        a.s[1] = 32767;
        a.s[2] = -32768;
        a.t = 'Z';
        reset_out();
        k_awkward<<<1, 1>>>(a, d_out);
        const long long want[] = {'q', hd(-1234.5678125), -2, 32767, -32768, 'Z'};
        check_out("k_awkward", want, 6);

        // The same through cudaLaunchKernel with an argument array.
        a.c = 'r';
        a.d = 3.0e300;
        a.s[1] = 12345;
        reset_out();
        long long *out = d_out;
        void *args[] = {&a, &out};
        CHECK(cudaLaunchKernel((const void *)k_awkward, dim3(1), dim3(1), args, 0, 0));
        const long long want2[] = {'r', hd(3.0e300), -2, 12345, -32768, 'Z'};
        check_out("k_awkward via cudaLaunchKernel", want2, 6);
    }
    {
        Nested n;
        memset(&n, 0xA7, sizeof n);
        n.tag = 7;
        n.in.a = -300;
        n.in.b = 0x7fffffff;
        n.x = 0.1;
        n.arr[0].a = 11;
        n.arr[0].b = -2000000000;
        n.arr[1].a = -12;
        n.arr[1].b = 123456789;
        n.last = 254;
        reset_out();
        k_nested<<<1, 1>>>(d_out, n);
        const long long want[] = {7, -300, 0x7fffffff, hd(0.1), 11, -2000000000, -12,
                                  123456789, 254};
        check_out("k_nested", want, 9);
    }
    {
        Tiny t = {200}, u = {1}, w = {0};
        reset_out();
        k_tiny<<<1, 1>>>(t, 'x', u, d_out, w);
        const long long want[] = {200, 'x', 1, 0};
        check_out("k_tiny", want, 4);
    }
    {
        WithArray w;
        memset(&w, 0x33, sizeof w);
        w.n = -42;
        const float vals[5] = {1.5f, -0.0f, 3.4e38f, 1e-40f, -7.25f};
        memcpy(w.vals, vals, sizeof vals);
        memcpy(w.name, "rcud-6", 7);
        reset_out();
        k_with_array<<<1, 1>>>(w, d_out);
        long long want[13] = {-42};
        for (int i = 0; i < 5; i++) want[1 + i] = hf(vals[i]);
        for (int i = 0; i < 7; i++) want[6 + i] = w.name[i];
        check_out("k_with_array", want, 13);
    }
    {
        reset_out();
        k_small_ints<<<1, 1>>>('A', (unsigned char)250, (short)-12345, (unsigned short)60000, true,
                               (signed char)-100, false, d_out);
        const long long want[] = {'A', 250, -12345, 60000, 1, -100, 0};
        check_out("k_small_ints", want, 7);
    }
    {
        Tiny t = {0x81};
        reset_out();
        k_mixed<<<1, 1>>>('m', 2.718281828459045, (short)-7, d_out, true, -0.375f,
                          (unsigned char)0xFF, -9000000000000000000LL, t, -1e-300, -123456);
        const long long want[] = {'m', hd(2.718281828459045), -7,   1,   hf(-0.375f),
                                  255, -9000000000000000000LL, 0x81, hd(-1e-300), -123456};
        check_out("k_mixed", want, 10);
    }
    {
        Aligned a;
        memset(&a, 0x11, sizeof a);
        a.x = 6.5f;
        a.y = -99;
        const int2 v2 = make_int2(-1, 2147483647);
        const double2 dv = make_double2(1.0 / 3.0, -2.5e-8);
        const float4 f4 = make_float4(1.0f, -2.0f, 0.125f, 1e30f);
        reset_out();
        k_aligned<<<1, 1>>>('c', a, 'd', v2, dv, f4, d_out);
        const long long want[] = {'c',          hf(6.5f),      -99,       'd',
                                  -1,           2147483647,    hd(1.0 / 3.0), hd(-2.5e-8),
                                  hf(1.0f),     hf(-2.0f),     hf(0.125f), hf(1e30f)};
        check_out("k_aligned", want, 12);
    }
    {
        static Big b;
        for (int i = 0; i < 200; i++) b.v[i] = i * i * 3 - 5000;
        b.tail = 0x0123456789ABCDEFLL;
        reset_out();
        k_big<<<1, 1>>>((short)-1, b, d_out, (short)31000);
        long long want[203];
        want[0] = -1;
        for (int i = 0; i < 200; i++) want[1 + i] = b.v[i];
        want[201] = b.tail;
        want[202] = 31000;
        check_out("k_big", want, 203);
    }

    CHECK(cudaFree(d_out));
    printf("PASS\n");
    return 0;
}
