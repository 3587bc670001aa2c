// Cost of one grid-wide barrier (cooperative_groups grid.sync) for a given grid shape, measured
// on the device clock by thread 0 over `rounds` barriers (grid_barrier_cost.py).
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

#include "common.cuh"  // sr::device_ns (streamrank/kernels, on the include path)
using sr::device_ns;

// work: each thread adds into one global slot per round before the barrier (0: none), so that
// the barrier is measured with the memory system busy as in a loop iteration
extern "C" __global__ void barriers(int rounds, int work, double* sink, unsigned long long* out) {
  cg::grid_group grid = cg::this_grid();
  const long long tid = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  grid.sync();
  const unsigned long long t0 = device_ns();
  for (int r = 0; r < rounds; ++r) {
    if (work) sink[tid] += 1.0;
    grid.sync();
  }
  if (tid == 0) out[0] = device_ns() - t0;
}

// One phase as the loop's appends make it: `active` warps each reserve one slot with an
// atomicAdd on a counter whose result they wait for (spread 1: all on one address; 32: on
// `wid mod 32`; 0: block-aggregated, a shared-memory atomic per warp and one global atomic per
// block), then a grid barrier; device-clock ns per phase into out[0].
extern "C" __global__ void appends(int rounds, int active, int spread, int* counters, int* sink,
                                   unsigned long long* out) {
  cg::grid_group grid = cg::this_grid();
  __shared__ int block_n, block_base;
  const long long tid = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  const int lane = threadIdx.x & 31;
  const long long wid = tid >> 5;
  grid.sync();
  const unsigned long long t0 = device_ns();
  for (int r = 0; r < rounds; ++r) {
    if (spread == 0) {
      if (threadIdx.x == 0) block_n = 0;
      __syncthreads();
      int at = 0;
      if (wid < active && lane == 0) at = atomicAdd(&block_n, 1);
      __syncthreads();
      if (threadIdx.x == 0 && block_n > 0) block_base = atomicAdd(&counters[r & 1], block_n);
      __syncthreads();
      if (wid < active && lane == 0) sink[(block_base + at) & 0xfffff] = r;
    } else if (wid < active && lane == 0) {
      const int at = atomicAdd(&counters[(r & 1) * 32 + static_cast<int>(wid % spread)], 1);
      sink[at & 0xfffff] = r;
    }
    grid.sync();
  }
  if (tid == 0) out[0] = device_ns() - t0;
}
