// Cost of one grid-wide barrier (cooperative_groups grid.sync) for a given grid shape, measured
// on the device clock by thread 0 over `rounds` barriers (grid_barrier_cost.py).
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

#include "common.cuh"  // sr::device_ns (streamrank/kernels, on the include path)
using sr::device_ns;

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

// The grid barrier written out, against cooperative_groups' (which fences, waits for its arrival
// atomic's result and polls): thread 0 of each block adds its arrival to a counter that only
// grows (round r waits for (r + 1) * gridDim.x; the counter is zero at the launch) and polls it.
// variant 1: the arrival a release reduction (no result to wait for), polls by acquire loads;
// 2: a release atomic whose result is not used before the polls; 3: __threadfence, then a relaxed
// reduction, acquire polls; 4: as 1 with relaxed polls and one acquire fence after them.
__device__ __forceinline__ void own_sync(unsigned* count, unsigned target, int variant) {
  __syncthreads();  // the block's work is done
  if (threadIdx.x == 0) {
    if (variant == 1 || variant == 4) {
      asm volatile("red.release.gpu.global.add.u32 [%0], %1;" ::"l"(count), "r"(1u) : "memory");
    } else if (variant == 2) {
      unsigned old;
      asm volatile("atom.add.release.gpu.global.u32 %0, [%1], %2;" : "=r"(old) : "l"(count), "r"(1u) : "memory");
      (void)old;  // the returning atomic is what this variant measures, not its result
    } else {
      __threadfence();
      asm volatile("red.relaxed.gpu.global.add.u32 [%0], %1;" ::"l"(count), "r"(1u) : "memory");
    }
    unsigned seen;
    if (variant == 4) {  // relaxed polls (no L1 invalidation each), one acquire fence after them
      do {
        asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(seen) : "l"(count) : "memory");
      } while (static_cast<int>(seen - target) < 0);
      asm volatile("fence.acq_rel.gpu;" ::: "memory");
    } else {
      do {
        asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(seen) : "l"(count) : "memory");
      } while (static_cast<int>(seen - target) < 0);
    }
  }
  __syncthreads();  // every block has arrived, and what they wrote before is visible
}

// Rounds of barriers: cooperative_groups' grid.sync() (variant 0) or own_sync's (1-4, `count` zero at
// the launch). work: each thread adds into one global slot per round before the barrier (0: none),
// so that the barrier is measured with the memory system busy as in a loop iteration.
extern "C" __global__ void barriers(int rounds, int work, double* sink, unsigned* count, int variant,
                                    unsigned long long* out) {
  cg::grid_group grid = cg::this_grid();
  const long long tid = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  grid.sync();
  const unsigned long long t0 = device_ns();
  for (int r = 0; r < rounds; ++r) {
    if (work) sink[tid] += 1.0;
    if (variant == 0) {
      grid.sync();
    } else {
      own_sync(count, static_cast<unsigned>(r + 1) * gridDim.x, variant);
    }
  }
  if (tid == 0) out[0] = device_ns() - t0;
}
