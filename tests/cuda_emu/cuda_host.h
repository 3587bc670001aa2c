// Host emulation of the CUDA features used by kernels/cuda/graph_fast_update.cu, graph_weighted_fast.cu and idhash.cu,
// so that tests/test_fast_update_emulated.py can run the real kernel source on a machine without
// a GPU: one block = real threads (std::thread), __syncthreads = a std::barrier over the block,
// warp intrinsics = a barrier per warp with a slot per lane, atomics = GCC builtins. Threads run
// truly concurrently, so missing barriers show up as wrong results, as they can on a GPU.
// Test code only; it covers the intrinsics those files use, nothing more.
#pragma once
#include <atomic>
#include <barrier>
#include <thread>
#include <vector>
#include <cmath>
#include <cstring>
#include <cstdint>
using std::isnan;
#define __global__
#define __device__
#define __forceinline__ inline
#define __restrict__ __restrict
#define __shared__ static
#define __launch_bounds__(...)
struct Dim3 { unsigned x; };
thread_local Dim3 threadIdx{0};
Dim3 blockDim{1}, gridDim{1}, blockIdx{0};
static std::barrier<>* g_block = nullptr;
struct WarpSync { std::barrier<> bar{32}; unsigned long long slot[32]; };
static WarpSync* g_warps = nullptr;
inline void __syncthreads() { g_block->arrive_and_wait(); }
inline void __syncwarp() { g_warps[threadIdx.x >> 5].bar.arrive_and_wait(); }
inline unsigned __ballot_sync(unsigned, bool p) {
  WarpSync& W = g_warps[threadIdx.x >> 5];
  const int l = threadIdx.x & 31;
  W.slot[l] = p ? 1 : 0;
  W.bar.arrive_and_wait();
  unsigned r = 0;
  for (int i = 0; i < 32; ++i) if (W.slot[i]) r |= 1u << i;
  W.bar.arrive_and_wait();
  return r;
}
inline bool __any_sync(unsigned m, bool p) { return __ballot_sync(m, p) != 0u; }
template <class T> T shfl_from(T v, int src) {
  WarpSync& W = g_warps[threadIdx.x >> 5];
  const int l = threadIdx.x & 31;
  unsigned long long bits = 0; std::memcpy(&bits, &v, sizeof(T));
  W.slot[l] = bits;
  W.bar.arrive_and_wait();
  T r = v;
  if (src >= 0 && src < 32) { unsigned long long b = W.slot[src]; std::memcpy(&r, &b, sizeof(T)); }
  W.bar.arrive_and_wait();
  return r;
}
template <class T> T __shfl_up_sync(unsigned, T v, int o) { const int l = threadIdx.x & 31; return shfl_from(v, l >= o ? l - o : l); }
template <class T> T __shfl_down_sync(unsigned, T v, int o) { const int l = threadIdx.x & 31; return shfl_from(v, l + o < 32 ? l + o : l); }
template <class T> T __shfl_sync(unsigned, T v, int s) { return shfl_from(v, s); }
template <class T> T __shfl_xor_sync(unsigned, T v, int m) { return shfl_from(v, (threadIdx.x & 31) ^ m); }
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __clz(int x) { return x ? __builtin_clz(static_cast<unsigned>(x)) : 32; }
inline unsigned long long atomicCAS(unsigned long long* a, unsigned long long c, unsigned long long v) {
  __atomic_compare_exchange_n(a, &c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  return c;
}
inline int atomicCAS(int* a, int c, int v) {
  __atomic_compare_exchange_n(a, &c, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  return c;
}
inline int atomicMax(int* a, int v) {
  int old = __atomic_load_n(a, __ATOMIC_SEQ_CST);
  while (v > old && !__atomic_compare_exchange_n(a, &old, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {}
  return old;
}
inline int atomicMin(int* a, int v) {
  int old = __atomic_load_n(a, __ATOMIC_SEQ_CST);
  while (v < old && !__atomic_compare_exchange_n(a, &old, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {}
  return old;
}
inline int atomicAdd(int* a, int v) { return __atomic_fetch_add(a, v, __ATOMIC_SEQ_CST); }
inline int atomicOr(int* a, int v) { return __atomic_fetch_or(a, v, __ATOMIC_SEQ_CST); }
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline unsigned long long atomicMax(unsigned long long* a, unsigned long long v) {
  unsigned long long old = __atomic_load_n(a, __ATOMIC_SEQ_CST);
  while (v > old && !__atomic_compare_exchange_n(a, &old, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {}
  return old;
}
inline long long __double_as_longlong(double d) { long long r; std::memcpy(&r, &d, 8); return r; }
inline double __longlong_as_double(long long b) { double r; std::memcpy(&r, &b, 8); return r; }

// One launch: the blocks one after another (the grid kernels' blocks are independent), each as
// `threads` real threads.
template <class F>
static void run_grid(unsigned blocks, unsigned threads, F body) {
  gridDim.x = blocks;
  blockDim.x = threads;
  for (unsigned b = 0; b < blocks; ++b) {
    blockIdx.x = b;
    g_block = new std::barrier<>(threads);
    g_warps = new WarpSync[threads / 32];
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t) {
      pool.emplace_back([=] {
        threadIdx.x = t;
        body();
      });
    }
    for (auto& t : pool) t.join();
    delete g_block;
    delete[] g_warps;
    g_block = nullptr;
    g_warps = nullptr;
  }
}

// The id map's insertion (idhash.cu) on the host, for the tests' models of the store.
#define EMU_HASH_INSERT                                                                                      \
  extern "C" void emu_hash_insert(long long* keys, int* vals, unsigned long long mask, const long long* ids, \
                                  long long count, long long first_val) {                                    \
    blockDim.x = 1;                                                                                          \
    gridDim.x = 1;                                                                                           \
    blockIdx.x = 0;                                                                                          \
    threadIdx.x = 0;                                                                                         \
    hash_insert_range(keys, vals, mask, ids, count, first_val);                                              \
  }
