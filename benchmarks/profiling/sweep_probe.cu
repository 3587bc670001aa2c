// A stripped copy of the engine's float32-contribution sweep (kernels/cuda/sweep.cu: Jacobi, the
// four degree buckets and the big list, no convergence test) with the variants that
// benchmarks/profiling/sweep_probe.py times against it:
//   HUB  > 0: the contributions of vertices [0, HUB) (the highest-degree ids of a bulk load)
//             are copied into shared memory at the start of each block and gathered from there;
//   HINT & 1: in-edge indices loaded with __ldcs (streaming: evict first, keep c in L2);
//   HINT & 2: gathers of ids below `hot` kept in L1 (evict last), the others not allocated there;
//   HINT & 4: every gather through L2 only (ld.global.cg);
//   HINT & 8: gathers of ids below `hot` marked evict-last in L2, the others evict-first there;
//   HINT & 16: gathers of ids below `hot` marked evict-last in L2, the others plain.
#define FULL 0xffffffffu

template <int HUB, int HINT>
__device__ __forceinline__ int ld_idx(const int* __restrict__ p) {
  if (HINT & 1) return __ldcs(p);
  return *p;
}

// One gather, without branches (predicated loads keep the unrolled gathers in flight together).
template <int HUB, int HINT>
__device__ __forceinline__ float ld_c(const float* __restrict__ c, const float* hub, int u, int hot) {
  float v;
  if (HUB > 0) {  // ids below HUB from shared memory
    const unsigned sa = static_cast<unsigned>(__cvta_generic_to_shared(hub)) + 4u * static_cast<unsigned>(u);
    asm("{\n .reg .pred q;\n setp.lt.s32 q, %2, %3;\n @q ld.shared.f32 %0, [%4];\n @!q ld.global.f32 %0, [%1];\n}"
        : "=f"(v) : "l"(c + u), "r"(u), "r"(HUB), "r"(sa));
    return v;
  }
  if (HINT & 2) {  // ids below `hot` kept in L1 (evict last), the others not allocated in L1
    asm("{\n .reg .pred q;\n setp.lt.s32 q, %2, %3;\n @q ld.global.L1::evict_last.f32 %0, [%1];\n"
        " @!q ld.global.L1::no_allocate.f32 %0, [%1];\n}"
        : "=f"(v) : "l"(c + u), "r"(u), "r"(hot));
    return v;
  }
  if (HINT & 24) {  // L2 eviction priority by id: hot ids evict-last
    unsigned long long pl, pf;
    asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(pl));
    if (HINT & 8) {
      asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pf));
    } else {
      asm("createpolicy.fractional.L2::evict_normal.b64 %0, 1.0;" : "=l"(pf));
    }
    const unsigned long long pol = u < hot ? pl : pf;
    asm("ld.global.L2::cache_hint.f32 %0, [%1], %2;" : "=f"(v) : "l"(c + u), "l"(pol));
    return v;
  }
  if (HINT & 4) {  // every gather through L2 only
    asm("ld.global.cg.f32 %0, [%1];" : "=f"(v) : "l"(c + u));
    return v;
  }
  return c[u];
}

__device__ __forceinline__ void commit(int v, double s, const int* __restrict__ od, double* __restrict__ y,
                                       float* __restrict__ cn, double base, double alpha) {
  const double yn = base + alpha * s;
  y[v] = yn;
  const int d = od[v];
  cn[v] = static_cast<float>(d > 0 ? yn / d : yn);
}

template <int G, int HUB, int HINT>
__device__ __forceinline__ void pass(const float* __restrict__ c, const float* hub, float* __restrict__ cn,
                                     const int* __restrict__ idx, const long long* __restrict__ off,
                                     const int* __restrict__ deg, const int* __restrict__ od,
                                     double* __restrict__ y, const int* __restrict__ list, long long count,
                                     int nblocks, double base, double alpha, int hot) {
  constexpr int kGroups = 32 / G;
  const int lane = threadIdx.x & 31;
  const int group = lane / G, sub = lane % G;
  const long long wid = (static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  const long long nwarps = (static_cast<long long>(nblocks) * blockDim.x) >> 5;
  for (long long b = wid * kGroups; b < count; b += nwarps * kGroups) {
    const long long i = b + group;
    const bool valid = i < count;
    const int v = valid ? list[i] : 0;
    const long long o = valid ? off[v] : 0;
    const int dg = valid ? deg[v] : 0;
    double s = 0.0;
#pragma unroll 4
    for (int k = sub; k < dg; k += G) s += static_cast<double>(ld_c<HUB, HINT>(c, hub, ld_idx<HUB, HINT>(idx + o + k), hot));
#pragma unroll
    for (int w = G / 2; w > 0; w >>= 1) s += __shfl_down_sync(FULL, s, w, G);
    if (valid && sub == 0) commit(v, s, od, y, cn, base, alpha);
  }
}

template <int HUB, int HINT>
#ifndef PMB
#define PMB 3
#endif
__global__ void __launch_bounds__(256, PMB)
psweep(const float* __restrict__ c, float* __restrict__ cn, const int* __restrict__ idx,
       const long long* __restrict__ off, const int* __restrict__ deg, const int* __restrict__ od,
       double* __restrict__ y, const int* l0, const int* l1, const int* l2, const int* l3, const int* l4,
       const long long* __restrict__ cnt, int n, int gt, int gb, double base, double alpha, int hot) {
  extern __shared__ float hub[];
  __shared__ double red[8];
  if (HUB > 0) {
    const int h = n < HUB ? n : HUB;
    for (int i = threadIdx.x; i < h; i += blockDim.x) hub[i] = c[i];
    __syncthreads();
  }
  if (static_cast<int>(blockIdx.x) < gt) {
    pass<32, HUB, HINT>(c, hub, cn, idx, off, deg, od, y, l4, cnt[4], gt, base, alpha, hot);
    pass<16, HUB, HINT>(c, hub, cn, idx, off, deg, od, y, l3, cnt[3], gt, base, alpha, hot);
    pass<4, HUB, HINT>(c, hub, cn, idx, off, deg, od, y, l2, cnt[2], gt, base, alpha, hot);
    pass<1, HUB, HINT>(c, hub, cn, idx, off, deg, od, y, l0, cnt[0], gt, base, alpha, hot);
    return;
  }
  const long long count = cnt[1];
  for (long long i = blockIdx.x - gt; i < count; i += gb) {
    const int v = l1[i];
    const long long o = off[v];
    const int dg = deg[v];
    double s = 0.0;
    for (int k0 = threadIdx.x; k0 < dg; k0 += 8 * blockDim.x) {
      int e[8];
#pragma unroll
      for (int t = 0; t < 8; ++t) {
        const int k = k0 + t * blockDim.x;
        e[t] = k < dg ? ld_idx<HUB, HINT>(idx + o + k) : -1;
      }
#pragma unroll
      for (int t = 0; t < 8; ++t) s += e[t] >= 0 ? static_cast<double>(ld_c<HUB, HINT>(c, hub, e[t], hot)) : 0.0;
    }
#pragma unroll
    for (int w = 16; w > 0; w >>= 1) s += __shfl_down_sync(FULL, s, w);
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = s;
    __syncthreads();
    if (threadIdx.x == 0) {
      double t = 0.0;
      for (int w = 0; w < (int)(blockDim.x >> 5); ++w) t += red[w];
      commit(v, t, od, y, cn, base, alpha);
    }
    __syncthreads();
  }
}
