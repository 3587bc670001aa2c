// Shared device helpers for streamrank's kernels.
//
// Conventions: vertex ids and degrees are of the index type I (int), edge offsets are
// long long (a gapped CSR can exceed 2**31 slots), counters are int. Every kernel uses a
// grid-stride loop whose trip count is uniform across a warp, so that warp-wide intrinsics
// (__ballot_sync with a full mask) are legal inside it.
#pragma once

#define SR_FULL_MASK 0xffffffffu

namespace sr {

// The device's clock in ns (%globaltimer), for the profiling stamps.
__device__ __forceinline__ unsigned long long device_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Warp-aggregated slot reservation: the lanes where `pred` holds get consecutive positions
// counter[0], counter[0] + 1, ... (one atomic per warp); the return value is meaningful only on
// those lanes. Every lane of the warp must call this (convergent point).
template <typename C>
__device__ __forceinline__ C warp_slot(bool pred, C* counter) {
  const unsigned ballot = __ballot_sync(SR_FULL_MASK, pred);
  if (ballot == 0u) return C(0);
  const int lane = threadIdx.x & 31;
  const int leader = __ffs(ballot) - 1;
  C base = 0;
  if (lane == leader) base = atomicAdd(counter, C(__popc(ballot)));
  base = __shfl_sync(SR_FULL_MASK, base, leader);
  return base + C(__popc(ballot & ((1u << lane) - 1u)));
}

// Append `value` to `list` when `pred` holds, with one atomic per warp (warp_slot). Every lane
// of the warp must call this; lanes with pred == false add nothing.
template <typename I>
__device__ __forceinline__ void warp_append(bool pred, I value, I* list, int* counter) {
  const int at = warp_slot(pred, counter);
  if (pred) list[at] = value;
}

// Append to the small or the large list depending on `degree >= switch_degree`.
template <typename I>
__device__ __forceinline__ void warp_append_split(bool pred, I value, I degree, I switch_degree,
                                                  I* small_list, I* large_list, int* counters) {
  const bool large = degree >= switch_degree;
  warp_append<I>(pred && !large, value, small_list, counters);
  warp_append<I>(pred && large, value, large_list, counters + 1);
}

template <typename T>
__device__ __forceinline__ T warp_sum(T v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(SR_FULL_MASK, v, o);
  return v;
}

template <typename T>
__device__ __forceinline__ T warp_max(T v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    T w = __shfl_down_sync(SR_FULL_MASK, v, o);
    v = w > v ? w : v;
  }
  return v;
}

struct SumOp {
  template <typename T>
  __device__ __forceinline__ static T warp(T v) { return warp_sum(v); }
};
struct MaxOp {
  template <typename T>
  __device__ __forceinline__ static T warp(T v) { return warp_max(v); }
};

// Block-wide reduction (Op = SumOp or MaxOp; max of non-negative values: idle lanes give 0);
// the result is valid in thread 0. `scratch` holds blockDim.x / 32 values.
template <typename Op, typename T>
__device__ __forceinline__ T block_reduce(T v, T* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  v = Op::warp(v);
  __syncthreads();  // scratch may still be read by a previous call
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  const int nw = (blockDim.x + 31) >> 5;
  v = (threadIdx.x < nw) ? scratch[threadIdx.x] : T(0);
  if (warp == 0) v = Op::warp(v);
  return v;
}

template <typename T>
__device__ __forceinline__ T block_sum(T v, T* scratch) { return block_reduce<SumOp>(v, scratch); }

template <typename T>
__device__ __forceinline__ T block_max(T v, T* scratch) { return block_reduce<MaxOp>(v, scratch); }

// Inclusive prefix sum of one value per lane over the warp. Every lane of the warp must call it.
template <typename T>
__device__ __forceinline__ T warp_inclusive_sum(T v) {
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {
    const T t = __shfl_up_sync(SR_FULL_MASK, v, d);
    if (lane >= d) v += t;
  }
  return v;
}

// The max (of non-negative values) and N sums over the block in one pass (two barriers, where
// separate block_reduce calls take two each); all valid in thread 0, each summed in the order
// block_sum sums it. `scratch` holds 32 * (N + 1) values.
template <int N, typename T>
__device__ __forceinline__ void block_max_sums(T& mx, T (&sm)[N], T* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  mx = warp_max(mx);
#pragma unroll
  for (int j = 0; j < N; ++j) sm[j] = warp_sum(sm[j]);
  __syncthreads();  // scratch may still be read by a previous call
  if (lane == 0) {
    scratch[warp] = mx;
#pragma unroll
    for (int j = 0; j < N; ++j) scratch[32 * (j + 1) + warp] = sm[j];
  }
  __syncthreads();
  const int nw = (blockDim.x + 31) >> 5;
  const bool live = threadIdx.x < nw;
  mx = live ? scratch[threadIdx.x] : T(0);
#pragma unroll
  for (int j = 0; j < N; ++j) sm[j] = live ? scratch[32 * (j + 1) + threadIdx.x] : T(0);
  if (warp == 0) {
    mx = warp_max(mx);
#pragma unroll
    for (int j = 0; j < N; ++j) sm[j] = warp_sum(sm[j]);
  }
}

// The max and one sum (`scratch`: 64 values), or the max and two sums (96 values), in one pass.
template <typename T>
__device__ __forceinline__ void block_max_sum(T& mx, T& sm, T* scratch) {
  T s[1] = {sm};
  block_max_sums<1>(mx, s, scratch);
  sm = s[0];
}

template <typename T>
__device__ __forceinline__ void block_max_sum(T& mx, T& sm, T& sm2, T* scratch) {
  T s[2] = {sm, sm2};
  block_max_sums<2>(mx, s, scratch);
  sm = s[0];
  sm2 = s[1];
}

// atomicMax for non-negative doubles (they order like their bit patterns as unsigned integers).
__device__ __forceinline__ void atomic_max_nonneg(double* addr, double v) {
  atomicMax(reinterpret_cast<unsigned long long*>(addr), static_cast<unsigned long long>(__double_as_longlong(v)));
}

}  // namespace sr
