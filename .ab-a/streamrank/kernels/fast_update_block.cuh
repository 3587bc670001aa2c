// Block-wide building blocks of the fused graph update (graph_fast_update.cu): prefix sums and
// the bitonic sort, for one block of exactly FU_THREADS threads.
#pragma once

#include "fast_update_defs.cuh"

namespace {

// Exclusive block-wide prefix sum of one value per thread (blockDim.x == FU_THREADS); `total`
// gets the sum. Every thread must call it (it synchronizes).
template <typename T>
__device__ __forceinline__ T block_exclusive_scan(T v, T* scratch, T& total) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const T x = sr::warp_inclusive_sum(v);
  __syncthreads();  // scratch may still be read by the previous call
  if (lane == 31) scratch[warp] = x;
  __syncthreads();
  if (warp == 0) {
    scratch[lane] = sr::warp_inclusive_sum(scratch[lane]);  // inclusive prefix over warps
  }
  __syncthreads();
  total = scratch[31];
  return (warp > 0 ? scratch[warp - 1] : T(0)) + x - v;
}

// K consecutive items per thread (item threadIdx.x * K + j in v[j], 0 beyond the count):
// v[j] becomes its exclusive prefix sum over all items; returns the total. Every thread calls it.
template <int K, typename T>
__device__ __forceinline__ T block_scan_items(T (&v)[K], T* scratch) {
  T s = 0;
#pragma unroll
  for (int j = 0; j < K; ++j) {
    const T x = v[j];
    v[j] = s;
    s += x;
  }
  T total;
  const T off = block_exclusive_scan(s, scratch, total);
#pragma unroll
  for (int j = 0; j < K; ++j) v[j] += off;
  return total;
}

// Bitonic network over positions [0, P) (P a power of two) of position-indexed shared arrays:
// cas(i, l, up), for i < l, compares the entries at i and l and swaps them when they are out of
// order for the direction `up` (ascending when true). The keys move with their payload, so every
// access is at i or i ^ j (no bank conflicts, no indirection; sorting a permutation by keys read
// through it took 0.36 us a stage, 16 us for 512 entries). Thread t handles positions t,
// t + FU_THREADS, ...: a stage of distance j < 32 pairs positions of one warp, so only the stages
// of distance 32 and more end with a block barrier, the others with a warp one (20 block barriers
// instead of 55 for 1,024 entries). The caller synchronizes before (the arrays written); it ends
// synchronized.
template <typename Cas>
__device__ __forceinline__ void block_bitonic(int P, Cas cas) {
  for (int k = 2; k <= P; k <<= 1) {
    int j = k >> 1;
    if (j >= 32) __syncthreads();  // the previous merge's warp stages done in every warp
    for (; j > 0; j >>= 1) {
      for (int i = threadIdx.x; i < P; i += FU_THREADS) {
        const int l = i ^ j;
        if (l > i) cas(i, l, (i & k) == 0);
      }
      if (j >= 32) __syncthreads(); else __syncwarp();  // uniform: j is the same in every thread
    }
  }
  __syncthreads();  // also when P == 1
}

// Compare-exchange of two keys in registers for the direction `up` (ascending when true).
__device__ __forceinline__ void cx_keys(long long& x, long long& y, bool up) {
  if ((x > y) == up) {
    const long long t = x;
    x = y;
    y = t;
  }
}

// The same network for 64-bit keys alone (step 4's), two stages per round: thread t loads the four
// positions q, q + j/2, q + j, q + j + j/2 of its quad into registers, runs the stages of distance
// j and j/2 on them and stores them back (half the shared-memory round trips and rounds of the
// stage-per-round network); a merge's last stage of distance 1, when left over, pairs 4t with
// 4t + 1 and 4t + 2 with 4t + 3. While j <= 64 every warp keeps the same 128 positions from round
// to round, so those rounds end with a warp barrier; wider rounds with a block barrier. At most
// 4 * FU_THREADS positions. Merges stop at size `top` (P: one sorted array; P / 2: two halves
// sorted independently, both ascending). The caller synchronizes before (keys written); it ends
// synchronized.
__device__ __forceinline__ void block_sort_keys(long long* a, int P, int top) {
  const int tid = threadIdx.x;
  bool wide_prev = true;
  for (int k = 2; k <= top; k <<= 1) {
    for (int j = k >> 1; j > 0;) {
      const bool wide = j >= 128;  // this round's quads leave their warp's 128 positions
      if (wide || wide_prev) __syncthreads(); else __syncwarp();  // uniform: j, k the same everywhere
      wide_prev = wide;
      if (j >= 2) {
        const int j2 = j >> 1, b = __ffs(j2) - 1;
        for (int t = tid; t < (P >> 2); t += FU_THREADS) {
          const int q = ((t >> b) << (b + 2)) | (t & (j2 - 1));  // bits b and b + 1 of q are 0
          const bool up = k == top || (q & k) == 0;  // the same for the quad (k > j + j2)
          long long x0 = a[q], x1 = a[q + j2], x2 = a[q + j], x3 = a[q + j + j2];
          cx_keys(x0, x2, up);  // distance j
          cx_keys(x1, x3, up);
          cx_keys(x0, x1, up);  // distance j / 2
          cx_keys(x2, x3, up);
          a[q] = x0;
          a[q + j2] = x1;
          a[q + j] = x2;
          a[q + j + j2] = x3;
        }
        j >>= 2;
      } else {
        for (int t = tid; 4 * t < P; t += FU_THREADS) {
          const int q = 4 * t;
          long long x0 = a[q], x1 = a[q + 1];
          cx_keys(x0, x1, k == top || (q & k) == 0);
          a[q] = x0;
          a[q + 1] = x1;
          if (q + 3 < P) {
            long long x2 = a[q + 2], x3 = a[q + 3];
            cx_keys(x2, x3, k == top || ((q + 2) & k) == 0);
            a[q + 2] = x2;
            a[q + 3] = x3;
          }
        }
        j = 0;
      }
    }
  }
  __syncthreads();
}

}  // namespace
