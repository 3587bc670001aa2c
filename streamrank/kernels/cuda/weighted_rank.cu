// PageRank of weighted graphs on the GPU (streamrank.rank.gpu.weighted): Static, ND, DT, DF, DF-P.
//
// A vertex u sends x[u] w(u, v) / W[u] along (u, v), W[u] its out-weight (plus the implicit
// loop's weight 1 in self-loop mode; inv[u] = 1 / W[u], 0 for a dangling vertex in uniform
// mode). The local form (pagerank.cu's, with weights; the CPU's kernels/cpu/common.py with weights):
//   x[v] = (1 + alpha * sum_j c[u_j] wt[j]) / (1 - alpha * loops * inv[v]),  c[u] = x[u] inv[u],
// over v's in-edges j from u_j != v; loops = the weight of v's explicit self-loop (if any) + 1
// in self-loop mode, solved in closed form. Iterations are Jacobi (read c, write xnew, then
// commit), so the results do not depend on the order of the vertices in a list.
//
// These kernels are separate from the unweighted ones (pagerank.cu, frontier_loop.cu, sweep.cu),
// whose instantiations are unchanged: an unweighted graph never loads a weight. The iteration
// loop of a call runs in one cooperative launch (w_loop): MODE 0 updates a fixed list (DT; with
// list == nullptr every vertex: Static, ND, warm), MODE 1 (DF) grows the list by the
// out-neighbours of the vertices whose relative change exceeds tau_f, MODE 2 (DF-P) also drops
// the vertices whose relative change is at most tau_p.
#include <cooperative_groups.h>

#include "common.cuh"

namespace cg = cooperative_groups;

namespace {

__device__ __forceinline__ double warp_allsum(double v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(SR_FULL_MASK, v, o);
  return v;
}

// The local-form value of v by a whole warp (every lane gets it).
template <typename V>
__device__ __forceinline__ double pull_value(long long v, const long long* __restrict__ in_off,
                                             const int* __restrict__ in_deg, const int* __restrict__ in_idx,
                                             const double* __restrict__ in_wt, const V* __restrict__ c,
                                             const double* __restrict__ inv, double alpha, int self) {
  const int lane = threadIdx.x & 31;
  const long long o = in_off[v];
  const int dg = in_deg[v];
  double acc = 0.0, loop = 0.0;
  for (int k = lane; k < dg; k += 32) {
    const int u = in_idx[o + k];
    const double w = in_wt[o + k];
    if (u == v) loop += w;
    else acc += static_cast<double>(c[u]) * w;
  }
  acc = warp_allsum(acc);
  loop = warp_allsum(loop) + static_cast<double>(self);
  return (1.0 + alpha * acc) / (1.0 - alpha * loop * inv[v]);
}

}  // namespace

// The start of a call, for v < n: x[v] = x_prev[v] (v < k) or 1 (a new vertex), inv[v] = 1 / (W[v]
// + self) (0 when that is 0), c[v] = x[v] inv[v], and total[0] += sum x (zeroed by the caller).
template <typename V>
__global__ void w_prepare(long long n, long long k, const V* __restrict__ x_prev, const double* __restrict__ W,
                          int self, V* __restrict__ x, V* __restrict__ c, double* __restrict__ inv,
                          double* __restrict__ total) {
  __shared__ double scratch[32];
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  double s = 0.0;
  for (long long v = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; v < n; v += stride) {
    const V xv = v < k ? x_prev[v] : V(1);
    const double d = W[v] + static_cast<double>(self);
    const double iv = d > 0.0 ? 1.0 / d : 0.0;
    x[v] = xv;
    inv[v] = iv;
    c[v] = static_cast<V>(static_cast<double>(xv) * iv);
    s += static_cast<double>(xv);
  }
  s = sr::block_sum(s, scratch);
  if (threadIdx.x == 0 && s != 0.0) atomicAdd(total, s);
}

// Marks ids[i] (int64; -1 ignored) not yet marked: flags 0 -> 1, appended to list (cnt[0]).
template <typename I>
__global__ void w_mark_ids(const long long* __restrict__ ids, long long m, int* __restrict__ flags,
                           int* __restrict__ list, int* __restrict__ cnt) {
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < m; i += stride) {
    const long long v = ids[i];
    if (v >= 0 && flags[v] == 0 && atomicCAS(flags + v, 0, 1) == 0) list[atomicAdd(cnt, 1)] = static_cast<int>(v);
  }
}

// Marks the out-neighbours of sources lo .. hi (a warp per source): `src` int64 ids (src32 ==
// nullptr; -1 ignored), or int32 ids src32 (a level of a breadth-first traversal: the list being
// appended to).
template <typename I>
__global__ void w_mark_out(const long long* __restrict__ src, const I* src32, long long lo,
                           long long hi, const long long* __restrict__ out_off,
                           const int* __restrict__ out_deg, const int* __restrict__ out_idx,
                           int* __restrict__ flags, int* list, int* __restrict__ cnt) {
  const int lane = threadIdx.x & 31;
  const long long warps = (static_cast<long long>(gridDim.x) * blockDim.x) >> 5;
  for (long long i = lo + ((static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5); i < hi;
       i += warps) {
    const long long u = src32 ? static_cast<long long>(src32[i]) : src[i];
    if (u < 0) continue;
    const long long o = out_off[u];
    const int d = out_deg[u];
    for (int k = lane; k < d; k += 32) {
      const int w = out_idx[o + k];
      if (flags[w] == 0 && atomicCAS(flags + w, 0, 1) == 0) list[atomicAdd(cnt, 1)] = w;
    }
  }
}

// The iteration loop of one call, in one cooperative launch.
//   lists: L0, L1 (frontier pair, iteration it reads L[it & 1] of cnt[it & 1] vertices and builds
//   the other; MODE 0 reads L0 only, or every vertex when L0 == nullptr), S (this iteration's
//   spreading vertices, cnt[2 + (it & 1)]); acc: per parity max |dx| and sum dx; out: [0]
//   iterations, [1] converged, [2] initially listed, [3] sum x (in and out), [4 + it] vertices
//   updated by iteration it (one buffer: the host reads the outcome in one copy).
template <typename V, int MODE>
__global__ void __launch_bounds__(256) w_loop(
    long long n, const long long* __restrict__ in_off, const int* __restrict__ in_deg,
    const int* __restrict__ in_idx, const double* __restrict__ in_wt, const long long* __restrict__ out_off,
    const int* __restrict__ out_deg, const int* __restrict__ out_idx, V* __restrict__ x, V* __restrict__ c,
    const double* __restrict__ inv, V* __restrict__ xnew, int* __restrict__ flags, int* L0, int* L1,
    int* __restrict__ S, int* cnt, double* acc, double* out, double alpha, int self, double tol, double tau_f, double tau_p, int max_iter) {
  __shared__ double smax[32];
  __shared__ double ssum[32];
  cg::grid_group grid = cg::this_grid();
  const int lane = threadIdx.x & 31;
  const long long tid = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  const long long threads = static_cast<long long>(gridDim.x) * blockDim.x;
  const long long gwarp = tid >> 5, warps = threads >> 5;
  const bool leader = blockIdx.x == 0 && threadIdx.x == 0;
  const bool all = MODE == 0 && L0 == nullptr;
  if (leader) out[2] = all ? static_cast<double>(n) : static_cast<double>(cnt[0]);
  double tot = out[3];
  int iters = 0;
  bool conv = false;
  for (int it = 0; it < max_iter; ++it) {
    const int p = MODE == 0 ? 0 : (it & 1), q = 1 - p;
    const int a = it & 1;  // the accumulators' parity (read after the last barrier of an iteration)
    const int* cur = p ? L1 : L0;
    int* nxt = p ? L0 : L1;
    const long long count = all ? n : static_cast<long long>(cnt[p]);
    if (MODE != 0 && count == 0) {  // an empty frontier: converged (every block reads the same count)
      conv = true;
      break;
    }
    if (leader) {  // nobody reads these before the barrier below
      acc[2 * a] = 0.0;
      acc[2 * a + 1] = 0.0;
      if (MODE != 0) {
        cnt[q] = 0;
        cnt[2 + p] = 0;
      }
    }
    for (long long i = gwarp; i < count; i += warps) {  // new values, a warp per vertex
      const long long v = all ? i : static_cast<long long>(cur[i]);
      const double val = pull_value<V>(v, in_off, in_deg, in_idx, in_wt, c, inv, alpha, self);
      if (lane == 0) xnew[i] = static_cast<V>(val);
    }
    grid.sync();
    double lmax = 0.0, lsum = 0.0;
    for (long long i = tid; i < count; i += threads) {  // commit, prune, spread
      const long long v = all ? i : static_cast<long long>(cur[i]);
      const V nv = xnew[i];
      const double xn = static_cast<double>(nv), xo = static_cast<double>(x[v]);
      const double d = fabs(xn - xo), top = fmax(xn, xo);
      x[v] = nv;
      c[v] = static_cast<V>(xn * inv[v]);
      lmax = fmax(lmax, d);
      lsum += xn - xo;
      if (MODE != 0) {
        if (MODE == 2 && d <= tau_p * top) flags[v] = 0;
        else nxt[atomicAdd(cnt + q, 1)] = static_cast<int>(v);
        if (d > tau_f * top) S[atomicAdd(cnt + 2 + p, 1)] = static_cast<int>(v);
      }
    }
    lmax = sr::block_max(lmax, smax);
    lsum = sr::block_sum(lsum, ssum);
    if (threadIdx.x == 0) {
      atomicMax(reinterpret_cast<unsigned long long*>(acc + 2 * a),
                static_cast<unsigned long long>(__double_as_longlong(lmax)));
      atomicAdd(acc + 2 * a + 1, lsum);
    }
    grid.sync();
    if (MODE != 0) {  // mark the out-neighbours of the spreading vertices
      const long long sc = cnt[2 + p];
      for (long long i = gwarp; i < sc; i += warps) {
        const long long u = S[i];
        const long long o = out_off[u];
        const int d = out_deg[u];
        for (int k = lane; k < d; k += 32) {
          const int w = out_idx[o + k];
          if (flags[w] == 0 && atomicCAS(flags + w, 0, 1) == 0) nxt[atomicAdd(cnt + q, 1)] = w;
        }
      }
      grid.sync();
    }
    const double m = acc[2 * a];
    tot += acc[2 * a + 1];
    if (leader) out[4 + it] = static_cast<double>(count);
    iters = it + 1;
    if (m < tol * tot) {
      conv = true;
      break;
    }
  }
  if (leader) {
    out[0] = static_cast<double>(iters);
    out[1] = conv ? 1.0 : 0.0;
    out[3] = tot;
  }
}
