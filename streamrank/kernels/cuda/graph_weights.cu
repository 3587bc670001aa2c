// Batch updates of the weighted gapped CSR (streamrank.store.gpu_weighted.WeightedGpuGraph).
//
// A weighted direction is graph_update.cu's (off, deg, cap, idx) plus `wt` (double) beside idx:
// the weight of the edge stored in idx[j] is wt[j]. These kernels are graph_update.cu's list
// updates with the weights moved along (and the batch fold, weight lookups and out-weight sums
// a weighted batch needs); the unweighted store never loads this module, so its kernels are
// unchanged. Keys are sorted 64-bit (u << 32 | t), grouped by u, one warp per group: no two
// warps touch the same list. Work is O(batch + degrees of the touched vertices), except
// relocate_all_w (compaction), gather_edges_w (export) and fill_weights (builds).
#include "common.cuh"
#include "idhash.cuh"
#include "weights_fold.cuh"

#define SR_NO_KEY 0x7fffffffffffffffLL

namespace {

__device__ __forceinline__ long long warp_id_global() {
  return (static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
}

__device__ __forceinline__ long long warps_in_grid() {
  return (static_cast<long long>(gridDim.x) * blockDim.x) >> 5;
}

__device__ __forceinline__ bool sorted_contains(const long long* keys, long long lo, long long hi, long long key) {
  while (lo < hi) {
    const long long mid = (lo + hi) >> 1;
    const long long k = keys[mid];
    if (k == key) return true;
    if (k < key) lo = mid + 1; else hi = mid;
  }
  return false;
}

__device__ __forceinline__ bool is_group_leader(const long long* keys, long long i) {
  const long long k = keys[i];
  if (k == SR_NO_KEY) return false;
  return i == 0 || (keys[i - 1] >> 32) != (k >> 32);
}

// Position of t in u's list (base .. base + d), found by the whole warp, or -1.
template <typename I>
__device__ __forceinline__ long long find_in_row(const I* __restrict__ idx, long long base, I d, I t) {
  const int lane = threadIdx.x & 31;
  for (I p0 = 0; p0 < d; p0 += 32) {
    const I p = p0 + lane;
    const bool eq = (p < d) && idx[base + p] == t;
    const unsigned b = __ballot_sync(SR_FULL_MASK, eq);
    if (b) return base + p0 + (__ffs(b) - 1);
  }
  return -1;
}

}  // namespace

// out[q] = weight of qs[q] -> qd[q] in this direction (NaN when absent or an id is negative).
template <typename I>
__global__ void edge_weight(const long long* __restrict__ qs, const long long* __restrict__ qd, long long nq,
                            const long long* __restrict__ off, const I* __restrict__ deg,
                            const I* __restrict__ idx, const double* __restrict__ wt, double* __restrict__ out) {
  const int lane = threadIdx.x & 31;
  for (long long q = warp_id_global(); q < nq; q += warps_in_grid()) {
    const long long u = qs[q], v = qd[q];
    double w = __longlong_as_double(0x7ff8000000000000LL);  // NaN: absent
    if (u >= 0 && v >= 0) {
      const long long at = find_in_row<I>(idx, off[u], deg[u], static_cast<I>(v));
      if (at >= 0) w = wt[at];
    }
    if (lane == 0) out[q] = w;
  }
}

// What the host planning of a small batch needs of its np distinct pairs (external ids q[p] ->
// q[np + p]), one warp per pair, into one int64 buffer of 7 np entries: the source's and the
// target's internal ids (-1: unknown), the pair's stored weight (its bits; NaN: absent), the
// source's out-degree and out-capacity and the target's in-degree and in-capacity (0 for an
// unknown vertex).
template <typename I>
__global__ void pair_info(const long long* __restrict__ hkeys, const int* __restrict__ hvals, unsigned long long mask,
                          const long long* __restrict__ q, long long np, const long long* __restrict__ out_off,
                          const I* __restrict__ out_deg, const I* __restrict__ out_cap, const I* __restrict__ out_idx,
                          const double* __restrict__ out_wt, const I* __restrict__ in_deg,
                          const I* __restrict__ in_cap, long long* __restrict__ info) {
  const int lane = threadIdx.x & 31;
  for (long long p = warp_id_global(); p < np; p += warps_in_grid()) {
    long long u = -1, v = -1;
    if (lane == 0) {
      u = sr::hash_find(hkeys, hvals, mask, q[p]);
      v = sr::hash_find(hkeys, hvals, mask, q[np + p]);
    }
    u = __shfl_sync(SR_FULL_MASK, u, 0);
    v = __shfl_sync(SR_FULL_MASK, v, 0);
    double w = __longlong_as_double(0x7ff8000000000000LL);  // NaN: absent
    if (u >= 0 && v >= 0) {
      const long long at = find_in_row<I>(out_idx, out_off[u], out_deg[u], static_cast<I>(v));
      if (at >= 0) w = out_wt[at];
    }
    if (lane == 0) {
      info[p] = u;
      info[np + p] = v;
      info[2 * np + p] = __double_as_longlong(w);
      info[3 * np + p] = u >= 0 ? static_cast<long long>(out_deg[u]) : 0;
      info[4 * np + p] = u >= 0 ? static_cast<long long>(out_cap[u]) : 0;
      info[5 * np + p] = v >= 0 ? static_cast<long long>(in_deg[v]) : 0;
      info[6 * np + p] = v >= 0 ? static_cast<long long>(in_cap[v]) : 0;
    }
  }
}

// wt of the stored edge qs[q] -> qd[q] (present) becomes w[q].
template <typename I>
__global__ void set_weight(const long long* __restrict__ qs, const long long* __restrict__ qd, long long nq,
                           const long long* __restrict__ off, const I* __restrict__ deg, const I* __restrict__ idx,
                           double* __restrict__ wt, const double* __restrict__ w) {
  const int lane = threadIdx.x & 31;
  for (long long q = warp_id_global(); q < nq; q += warps_in_grid()) {
    const long long u = qs[q];
    const long long at = find_in_row<I>(idx, off[u], deg[u], static_cast<I>(qd[q]));
    if (lane == 0 && at >= 0) wt[at] = w[q];
  }
}

// The final weight of each pair (NaN: absent) after its records in arrival order, records of
// pair p at [starts[p], starts[p + 1]); weight NaN on a deletion: none given. `set`: an
// insertion sets the weight, a deletion removes the edge. `sum`: an insertion adds, a deletion
// with a weight subtracts (the edge goes when at most zero_rel of the weight before is left),
// one without removes it. The CPU store's fold (kernels/cpu/weighted_csr.py, fold_pairs).
template <typename B>
__global__ void fold_pairs(const long long* __restrict__ starts, long long npairs, const B* __restrict__ insert,
                           const double* __restrict__ weight, const double* __restrict__ before, int summing,
                           double zero_rel, double* __restrict__ after) {
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  const auto record = [&](long long r, bool& ins, double& x) {
    ins = insert[r] != 0;
    x = weight[r];
  };
  for (long long p = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; p < npairs; p += stride) {
    after[p] = fold_records(before[p], starts[p], starts[p + 1], record, summing, zero_rel);
  }
}

// W[v] = sum of v's list weights (in list order per lane, then the warp's tree), for each listed v.
template <typename I>
__global__ void row_sums(const long long* __restrict__ verts, long long m, const long long* __restrict__ off,
                         const I* __restrict__ deg, const double* __restrict__ wt, double* __restrict__ W) {
  const int lane = threadIdx.x & 31;
  for (long long i = warp_id_global(); i < m; i += warps_in_grid()) {
    const long long v = verts ? verts[i] : i;
    const long long base = off[v];
    const I d = deg[v];
    double s = 0.0;
    for (I p = lane; p < d; p += 32) s += wt[base + p];
    s = sr::warp_sum(s);
    if (lane == 0) W[v] = s;
  }
}

// Builds: wt of every stored edge from the sorted keys (u << 32 | t, or t << 32 | u for the
// in-direction: `reverse`) and their weights kw; one warp per vertex, a binary search per slot.
template <typename I>
__global__ void fill_weights(long long n, const long long* __restrict__ off, const I* __restrict__ deg,
                             const I* __restrict__ idx, double* __restrict__ wt, const long long* __restrict__ keys,
                             const double* __restrict__ kw, long long nk, int reverse) {
  const int lane = threadIdx.x & 31;
  for (long long u = warp_id_global(); u < n; u += warps_in_grid()) {
    const long long base = off[u];
    const I d = deg[u];
    for (I p = lane; p < d; p += 32) {
      const long long t = idx[base + p];
      const long long key = reverse ? ((t << 32) | u) : ((u << 32) | t);
      long long lo = 0, hi = nk;
      while (lo < hi) {
        const long long mid = (lo + hi) >> 1;
        if (keys[mid] < key) lo = mid + 1; else hi = mid;
      }
      wt[base + p] = (lo < nk && keys[lo] == key) ? kw[lo] : 0.0;
    }
  }
}

// Remove, for every group (u, targets), the targets from u's list with their weights: one warp
// per group compacts the list in place (order is not kept), any degree.
template <typename I>
__global__ void delete_grouped_w(const long long* __restrict__ keys, const long long* __restrict__ gend, long long m,
                                 const long long* __restrict__ off, I* __restrict__ deg, I* __restrict__ idx,
                                 double* __restrict__ wt) {
  const int lane = threadIdx.x & 31;
  for (long long i = warp_id_global(); i < m; i += warps_in_grid()) {
    if (!is_group_leader(keys, i)) continue;
    const long long hi = gend[i];
    const I u = static_cast<I>(keys[i] >> 32);
    const long long base = off[u];
    const I d = deg[u];
    const long long high = static_cast<long long>(u) << 32;
    I w = 0;
    for (I p0 = 0; p0 < d; p0 += 32) {
      const I p = p0 + lane;
      const bool valid = p < d;
      const I t = valid ? idx[base + p] : I(0);
      const double x = valid ? wt[base + p] : 0.0;
      const bool drop = valid && sorted_contains(keys, i, hi, high | static_cast<long long>(t));
      const bool keep = valid && !drop;
      const unsigned b = __ballot_sync(SR_FULL_MASK, keep);  // every lane has read its slot
      if (keep) {
        const long long at = base + w + __popc(b & ((1u << lane) - 1u));
        idx[at] = t;
        wt[at] = x;
      }
      w += __popc(b);
    }
    if (lane == 0) deg[u] = w;
  }
}

// Append, for every group (u, targets), the targets with their weights kw to u's list; where
// new_off[i] >= 0 the list first moves there (graph_update.cu, insert_grouped).
template <typename I>
__global__ void insert_grouped_w(const long long* __restrict__ keys, const double* __restrict__ kw,
                                 const long long* __restrict__ gend, long long m,
                                 const long long* __restrict__ new_off, const I* __restrict__ new_cap,
                                 long long* __restrict__ off, I* __restrict__ deg, I* __restrict__ cap,
                                 I* __restrict__ idx, double* __restrict__ wt) {
  const int lane = threadIdx.x & 31;
  for (long long i = warp_id_global(); i < m; i += warps_in_grid()) {
    if (!is_group_leader(keys, i)) continue;
    const long long hi = gend[i];
    const I u = static_cast<I>(keys[i] >> 32);
    long long base = off[u];
    const I d = deg[u];
    const long long moved = new_off[i];
    if (moved >= 0) {
      for (I p = lane; p < d; p += 32) {
        idx[moved + p] = idx[base + p];
        wt[moved + p] = wt[base + p];
      }
      base = moved;
    }
    const long long k = hi - i;
    for (long long j = lane; j < k; j += 32) {
      idx[base + d + j] = static_cast<I>(keys[i + j] & 0xffffffffLL);
      wt[base + d + j] = kw[i + j];
    }
    __syncwarp();
    if (lane == 0) {
      if (moved >= 0) {
        off[u] = moved;
        cap[u] = new_cap[i];
      }
      deg[u] = d + static_cast<I>(k);
    }
  }
}

// Compaction: copy every vertex's list and weights to new_off[u] (one warp per vertex).
template <typename I>
__global__ void relocate_all_w(long long n, const long long* __restrict__ old_off, const I* __restrict__ deg,
                               const long long* __restrict__ new_off, const I* __restrict__ old_idx,
                               I* __restrict__ new_idx, const double* __restrict__ old_wt,
                               double* __restrict__ new_wt) {
  const int lane = threadIdx.x & 31;
  for (long long u = warp_id_global(); u < n; u += warps_in_grid()) {
    const long long a = old_off[u], b = new_off[u];
    const I d = deg[u];
    for (I p = lane; p < d; p += 32) {
      new_idx[b + p] = old_idx[a + p];
      new_wt[b + p] = old_wt[a + p];
    }
  }
}

// Export: (u, t, w) of every edge at positions start[u] .. + deg[u].
template <typename I>
__global__ void gather_edges_w(long long n, const long long* __restrict__ off, const I* __restrict__ deg,
                               const long long* __restrict__ start, const I* __restrict__ idx,
                               const double* __restrict__ wt, long long* __restrict__ out_src,
                               long long* __restrict__ out_dst, double* __restrict__ out_w) {
  const int lane = threadIdx.x & 31;
  for (long long u = warp_id_global(); u < n; u += warps_in_grid()) {
    const long long a = off[u], s = start[u];
    const I d = deg[u];
    for (I p = lane; p < d; p += 32) {
      out_src[s + p] = u;
      out_dst[s + p] = idx[a + p];
      out_w[s + p] = wt[a + p];
    }
  }
}
