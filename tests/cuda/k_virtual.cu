// Virtual functions in device code: objects made with `new` in one kernel
// and called through their vtables (device variables whose initialisers
// hold function addresses) in another, as NVIDIA's newdelete sample does.
#include <cuda_runtime.h>

#include "check.h"

struct Shape {
    __device__ virtual ~Shape() {}
    __device__ virtual float area() const = 0;
};

struct Square : Shape {
    float side;
    __device__ explicit Square(float s) : side(s) {}
    __device__ float area() const override { return side * side; }
};

struct Triangle : Shape {
    float base, height;
    __device__ Triangle(float b, float h) : base(b), height(h) {}
    __device__ float area() const override { return 0.5f * base * height; }
};

__device__ Shape *shapes[64];

__global__ void make() {
    int i = threadIdx.x;
    shapes[i] = (i % 2) ? static_cast<Shape *>(new Square((float)i))
                        : static_cast<Shape *>(new Triangle((float)i, 4.0f));
}

__global__ void areas(float *out) { out[threadIdx.x] = shapes[threadIdx.x]->area(); }

__global__ void destroy() { delete shapes[threadIdx.x]; }

int main() {
    float *out;
    CHECK(cudaMalloc(&out, 64 * sizeof(float)));
    make<<<1, 64>>>();
    areas<<<1, 64>>>(out);
    destroy<<<1, 64>>>();
    CHECK(cudaGetLastError());
    float host[64];
    CHECK(cudaMemcpy(host, out, sizeof host, cudaMemcpyDeviceToHost));
    for (int i = 0; i < 64; ++i) {
        float want = (i % 2) ? (float)i * i : 0.5f * i * 4.0f;
        EXPECT(host[i] == want, "shape %d: area %f, expected %f", i, host[i], want);
    }
    printf("virtual calls through device vtables: ok\n");
    CHECK(cudaFree(out));
    printf("PASS\n");
    return 0;
}
