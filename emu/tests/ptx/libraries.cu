// Library code from the CUDA toolkit: CUB block scan, reduce and radix sort;
// cooperative groups tiles and reductions; a virtual call.
#include <cub/cub.cuh>
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;
extern "C" __global__ void scan(const int *in, int *out) {
  typedef cub::BlockScan<int, 128> Scan;
  typedef cub::BlockReduce<int, 128> Red;
  __shared__ typename Scan::TempStorage ts;
  __shared__ typename Red::TempStorage rs;
  int v = in[blockIdx.x * 128 + threadIdx.x];
  int s; Scan(ts).ExclusiveSum(v, s);
  __syncthreads();
  int r = Red(rs).Sum(v);
  out[blockIdx.x * 128 + threadIdx.x] = s + (threadIdx.x == 0 ? r : 0);
}
extern "C" __global__ void groups(const float *in, float *out) {
  cg::thread_block b = cg::this_thread_block();
  cg::thread_block_tile<32> w = cg::tiled_partition<32>(b);
  float v = in[b.thread_rank()];
  float s = cg::reduce(w, v, cg::plus<float>());
  auto t4 = cg::tiled_partition<4>(w);
  float m = cg::reduce(t4, v, cg::greater<float>());
  b.sync();
  out[b.thread_rank()] = s + m + w.shfl(v, 3) + t4.thread_rank();
}
struct Shape { __device__ virtual float area() const = 0; };
struct Sq : Shape { float a; __device__ Sq(float a): a(a) {} __device__ float area() const override { return a*a; } };
extern "C" __global__ void virt(float *out) { Sq s(threadIdx.x); Shape *p = &s; out[threadIdx.x] = p->area(); }
extern "C" __global__ void sorted(int *d) {
  typedef cub::BlockRadixSort<int, 64, 4> Sort;
  __shared__ typename Sort::TempStorage ts;
  int k[4]; for (int i = 0; i < 4; i++) k[i] = d[threadIdx.x * 4 + i];
  Sort(ts).Sort(k);
  for (int i = 0; i < 4; i++) d[threadIdx.x * 4 + i] = k[i];
}
