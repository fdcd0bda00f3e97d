// The second translation unit of main.cu (compiled with it by
// cli/tests/kernels.rs, `-rdc=true`); not a program of its own.
__device__ int scale = 3;
__constant__ int offsets[4];
__device__ int calls;

__device__ int twice(int x) { return 2 * x; }

__device__ int count_calls() { return atomicAdd(&calls, 1); }
