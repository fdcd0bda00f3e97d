// Struct-by-value arguments with awkward layouts and small integer types.
struct Odd {
    char c;        // 0
    double d;      // 8
    short s;       // 16
    int i[3];      // 20
    unsigned char u; // 32
};                 // size 40, align 8

struct __align__(16) Vec3 { float x, y, z; };

struct Small { unsigned char a; signed char b; unsigned short c; };

__global__ void take_structs(double *out, Odd o, unsigned char u8, Vec3 v, short s16,
                             Small sm, long long big, signed char s8) {
    out[0] = o.c; out[1] = o.d; out[2] = o.s; out[3] = o.i[0]; out[4] = o.i[1];
    out[5] = o.i[2]; out[6] = o.u; out[7] = u8; out[8] = v.x; out[9] = v.y; out[10] = v.z;
    out[11] = s16; out[12] = sm.a; out[13] = sm.b; out[14] = sm.c; out[15] = (double)big;
    out[16] = s8;
}

// Struct with a runtime index: the copy goes through local memory.
struct Table { int v[8]; };
__global__ void index_struct(int *out, Table t, int n) {
    int i = threadIdx.x;
    if (i < n) out[i] = t.v[(i * 5) & 7] * 3;
}
