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

// Step 4's sort of 64-bit keys: positions [0, P) of `a` (P a power of two, at most
// 2 * FU_THREADS), in runs of `top` positions sorted independently and ascending (P: one sorted
// array; P / 2: two halves). `tmp` (P entries of shared memory) is scratch. Two phases:
//   1. each warp sorts runs of R = min(top, 64) of its 64 positions in registers: lane l holds
//      positions 64 w + 2 l and 64 w + 2 l + 1, the bitonic network's stages of distance 1 compare
//      within the lane and the others exchange keys by shuffles (no shared memory, no barrier: 21
//      stages for R = 64, 15 of them shuffles; holding l and l + 32 instead would keep only the
//      one stage of distance 32 in the lane);
//   2. runs of R are merged pairwise until they have `top` positions: each thread writes two
//      consecutive outputs, found by a binary search of the merge path (how many of its first
//      outputs come from the first run), then two steps of the merge (log2(top / R) rounds, one
//      block barrier each; ties take the first run's key).
// (The whole network in shared memory, two stages per round, takes 30 rounds for 2,048 positions,
// 13.6 us of a 1,000-edge batch.) The phases alternate between `a` and `tmp`
// so that the last one writes `a`. The caller synchronizes before (keys written); it ends
// synchronized.
__device__ __forceinline__ void block_sort_keys(long long* a, long long* tmp, int P, int top) {
  const int tid = threadIdx.x, lane = tid & 31, base = tid & ~31;  // base: 32 * warp
  const int R = top < 64 ? top : 64;
  int rounds = 0;
  for (int len = R; len < top; len <<= 1) ++rounds;
  long long* src = (rounds & 1) ? tmp : a;  // phase 1 writes here; the merges end in `a`
  // ---- 1. runs of R in registers, one warp per 64 positions, lane l holding the adjacent
  // positions 64 w + 2 l and 64 w + 2 l + 1: the stages of distance 1 (6 of the 21 for R = 64)
  // compare within the lane, the others exchange keys with lane l ^ (j / 2) by shuffles
  const int p0 = 2 * base + 2 * lane, p1 = p0 + 1;
  if (2 * base < P) {  // uniform over the warp
    long long x0 = p0 < P ? a[p0] : FU_KEY_MAX;  // (P < 64: positions past P pad whole runs)
    long long x1 = p1 < P ? a[p1] : FU_KEY_MAX;
    for (int k = 2; k <= R; k <<= 1) {
      // ascending where bit k of the position is 0, or in the last merge of a run (the same for
      // p0 and p1: they differ in bit 0 only)
      const bool up = k == R || (p0 & k) == 0;
      for (int j = k >> 1; j > 1; j >>= 1) {
        const long long y0 = __shfl_xor_sync(0xffffffffu, x0, j >> 1);
        const long long y1 = __shfl_xor_sync(0xffffffffu, x1, j >> 1);
        // the lower position of a pair keeps the smaller key when ascending; the pair's two
        // lanes decide alike, so equal keys (padding) stay as they are
        const bool keep_min = ((p0 & j) == 0) == up;
        x0 = (y0 < x0) == keep_min ? y0 : x0;
        x1 = (y1 < x1) == keep_min ? y1 : x1;
      }
      cx_keys(x0, x1, up);  // distance 1: positions p0 and p1 of this lane
    }
    if (p0 < P) src[p0] = x0;
    if (p1 < P) src[p1] = x1;
  }
  __syncthreads();
  // ---- 2. merges: runs of len into runs of 2 len, two outputs per thread (four, with half the
  // searches, were slower)
  for (int len = R; len < top; len <<= 1) {
    long long* const dst = src == a ? tmp : a;
    const int o = 2 * tid;  // this thread's first output
    if (o < P) {
      const int s = o & ~(2 * len - 1), i = o - s;  // its pair of runs starts at s
      const long long* const A = src + s;
      const long long* const B = A + len;
      int lo = i > len ? i - len : 0, hi = i < len ? i : len;
      while (lo < hi) {  // the number of A's keys among the pair's first i outputs
        const int mid = (lo + hi) >> 1;
        if (A[mid] <= B[i - mid - 1]) lo = mid + 1; else hi = mid;
      }
      int ia = lo, ib = i - lo;
#pragma unroll
      for (int q = 0; q < 2; ++q) {
        const bool take_a = ib >= len || (ia < len && A[ia] <= B[ib]);
        dst[o + q] = take_a ? A[ia++] : B[ib++];
      }
    }
    __syncthreads();
    src = dst;
  }
}

}  // namespace
