// Virtual calls: objects made in one kernel and called through their
// vtables (module variables whose initialisers hold function addresses)
// in another, lanes of one warp calling different functions.
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
    // The 0.5 is an immediate: the function's constants must be ready even
    // though no kernel calls it by name.
    __device__ float area() const override { return 0.5f * base * height; }
};

__device__ Shape *shapes[64];

extern "C" __global__ void make() {
    int i = threadIdx.x;
    shapes[i] = (i % 3) ? static_cast<Shape *>(new Square((float)i))
                        : static_cast<Shape *>(new Triangle((float)i, 4.0f));
}

extern "C" __global__ void areas(float *out) { out[threadIdx.x] = shapes[threadIdx.x]->area(); }

extern "C" __global__ void destroy() { delete shapes[threadIdx.x]; }
