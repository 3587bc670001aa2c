// Batch updates of the gapped CSR (streamrank.store.gpu.GpuGraph), one direction at a time.
//
// A direction is (off, deg, cap, idx): vertex u's neighbours are idx[off[u] .. off[u]+deg[u]),
// and the slots up to off[u]+cap[u] are free. Changes arrive as sorted 64-bit keys
// (u << 32 | t), grouped by u; group g spans [i, gend[i]). One warp serves one group, so no two
// warps ever touch the same vertex's list and no atomics are needed on the lists. Work is
// O(batch + degrees of the touched vertices): nothing here looks at all vertices or edges,
// except relocate_all (compaction) and gather_edges (export), which are meant to.
#include "common.cuh"

#define SR_NO_KEY 0x7fffffffffffffffLL

namespace {

__device__ __forceinline__ long long warp_id_global() {
  return (static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
}

__device__ __forceinline__ long long warps_in_grid() {
  return (static_cast<long long>(gridDim.x) * blockDim.x) >> 5;
}

// First index in keys[lo, hi) holding `key`, or -1.
__device__ __forceinline__ bool sorted_contains(const long long* keys, long long lo, long long hi,
                                                long long key) {
  while (lo < hi) {
    const long long mid = (lo + hi) >> 1;
    const long long k = keys[mid];
    if (k == key) return true;
    if (k < key) lo = mid + 1; else hi = mid;
  }
  return false;
}

// Whether bit t of the target mask is set (mark_targets): a target no deletion key of the batch
// names is kept without a search of the group's keys.
__device__ __forceinline__ bool maybe_target(const unsigned* __restrict__ tmask, long long t) {
  return (tmask[t >> 5] >> (t & 31)) & 1u;
}

__device__ __forceinline__ bool is_group_leader(const long long* keys, long long i) {
  const long long k = keys[i];
  if (k == SR_NO_KEY) return false;
  return i == 0 || (keys[i - 1] >> 32) != (k >> 32);
}

}  // namespace

// found[q] = 1 when edge qs[q] -> qd[q] exists (qs or qd negative: 0). One warp per query scans
// the shorter of out(qs) and in(qd).
template <typename I>
__global__ void edge_find(const I* __restrict__ qs, const I* __restrict__ qd, long long nq,
                          const long long* __restrict__ out_off, const I* __restrict__ out_deg,
                          const I* __restrict__ out_idx, const long long* __restrict__ in_off,
                          const I* __restrict__ in_deg, const I* __restrict__ in_idx,
                          unsigned char* __restrict__ found) {
  const int lane = threadIdx.x & 31;
  for (long long q = warp_id_global(); q < nq; q += warps_in_grid()) {
    const I u = qs[q], v = qd[q];
    bool hit = false;
    if (u >= 0 && v >= 0) {
      const I du = out_deg[u], dv = in_deg[v];
      const bool use_out = du <= dv;
      const long long base = use_out ? out_off[u] : in_off[v];
      const I d = use_out ? du : dv;
      const I* list = use_out ? out_idx : in_idx;
      const I want = use_out ? v : u;
      for (I p0 = 0; p0 < d && !hit; p0 += 32) {
        const I p = p0 + lane;
        const bool eq = (p < d) && list[base + p] == want;
        hit = __ballot_sync(SR_FULL_MASK, eq) != 0u;
      }
    }
    if (lane == 0) found[q] = hit ? 1 : 0;
  }
}

// Remove, for every group (u, targets), the targets from u's list: one warp per group compacts
// the list in place (order is not kept) and lowers deg[u].
// Lists of degree >= big are left to big_delete_scan / big_delete_move.
template <typename I>
__global__ void delete_grouped(const long long* __restrict__ keys, const long long* __restrict__ gend,
                               long long m, const long long* __restrict__ off, I* __restrict__ deg,
                               I* __restrict__ idx, I big, const unsigned* __restrict__ tmask) {
  const int lane = threadIdx.x & 31;
  for (long long i = warp_id_global(); i < m; i += warps_in_grid()) {
    if (!is_group_leader(keys, i)) continue;
    const long long hi = gend[i];
    const I u = static_cast<I>(keys[i] >> 32);
    const long long base = off[u];
    const I d = deg[u];
    if (d >= big) continue;
    const long long high = static_cast<long long>(u) << 32;
    I w = 0;
    for (I p0 = 0; p0 < d; p0 += 32) {
      const I p = p0 + lane;
      const bool valid = p < d;
      const I t = valid ? idx[base + p] : I(0);
      const bool drop = valid && maybe_target(tmask, t) &&
                        sorted_contains(keys, i, hi, high | static_cast<long long>(t));
      const bool keep = valid && !drop;
      const unsigned b = __ballot_sync(SR_FULL_MASK, keep);
      if (keep) idx[base + w + __popc(b & ((1u << lane) - 1u))] = t;
      w += __popc(b);
    }
    if (lane == 0) deg[u] = w;
  }
}

// Deletions from long lists (degree >= big) by the whole grid, in two launches after
// plan_big_deletions: a hub's list is scanned by every block rather than one, so a batch that
// deletes from a list of millions of entries costs that list's length over the grid.
//
// sizes[i] = deg[u] for the leader i of a group whose list u is long, else 0. The caller turns
// sizes into its inclusive prefix sum `csum`: the long lists laid end to end, csum[m-1] entries.
template <typename I>
__global__ void plan_big_deletions(const long long* __restrict__ keys, long long m, const I* __restrict__ deg,
                                   I big, long long* __restrict__ sizes) {
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < m; i += stride) {
    long long s = 0;
    if (is_group_leader(keys, i)) {
      const I d = deg[keys[i] >> 32];
      if (d >= big) s = static_cast<long long>(d);
    }
    sizes[i] = s;
  }
}

// One thread per entry of the long lists (entry v of csum's layout). With k = the group's keys
// (all present in the list, distinct) the list keeps d - k entries: a deleted entry below d - k
// is a hole, a kept entry at or above d - k a survivor; both are collected (positions) in the
// group's own range [i, i + k) of holes / surv, and there are as many of each. A warp takes
// chunks of 32 * SR_SCAN_ROUNDS consecutive entries: lane 0 finds the chunk's group by a binary
// search over csum; each lane searches again from there for its first entry and when it crosses
// into the next list (at most once more per chunk, since a long list has at least 2,048
// entries); targets outside the batch's target mask are kept without searching the group's keys.
#ifndef SR_SCAN_ROUNDS
#define SR_SCAN_ROUNDS 8
#endif
__device__ __forceinline__ long long first_above(const long long* __restrict__ csum, long long lo,
                                                 long long up, long long v) {
  while (lo < up) {  // first i in [lo, up) with csum[i] > v
    const long long mid = (lo + up) >> 1;
    if (csum[mid] <= v) lo = mid + 1; else up = mid;
  }
  return lo;
}

template <typename I>
__global__ void big_delete_scan(const long long* __restrict__ keys, const long long* __restrict__ gend,
                                long long m, const long long* __restrict__ csum,
                                const long long* __restrict__ off, const I* __restrict__ deg,
                                const I* __restrict__ idx, const unsigned* __restrict__ tmask,
                                I* __restrict__ holes, I* __restrict__ surv,
                                int* __restrict__ hcnt, int* __restrict__ scnt) {
  if (m <= 0) return;
  const long long total = csum[m - 1];  // read on the device: no host sync sizes this grid
  const int lane = threadIdx.x & 31;
  const long long chunk = 32LL * SR_SCAN_ROUNDS;
  for (long long c0 = warp_id_global() * chunk; c0 < total; c0 += warps_in_grid() * chunk) {
    long long g = 0;
    if (lane == 0) g = first_above(csum, 0, m, c0);
    g = __shfl_sync(SR_FULL_MASK, g, 0);
    long long end = -1, start = 0, base = 0, hi = 0, high = 0, keep = 0;
    for (int r = 0; r < SR_SCAN_ROUNDS; ++r) {
      const long long v = c0 + static_cast<long long>(r) * 32 + lane;
      if (v >= total) break;
      if (v >= end) {  // this lane's first entry, or it crossed into the next long list
        // the first i >= g with csum[i] > v (the chunk's start lies in g, so v's list is g or later)
        g = first_above(csum, g, m, v);
        end = csum[g];
        const long long u = keys[g] >> 32;
        const long long d = static_cast<long long>(deg[u]);
        start = end - d;
        base = off[u];
        hi = gend[g];
        high = u << 32;
        keep = d - (hi - g);
      }
      const long long p = v - start;
      const I t = idx[base + p];
      const bool drop = maybe_target(tmask, t) && sorted_contains(keys, g, hi, high | static_cast<long long>(t));
      if (p < keep) {
        if (drop) holes[g + atomicAdd(hcnt + g, 1)] = static_cast<I>(p);
      } else if (!drop) {
        surv[g + atomicAdd(scnt + g, 1)] = static_cast<I>(p);
      }
    }
  }
}

// The target mask of sorted keys u << 32 | t (the first m): bit t set (tmask zeroed by the caller).
template <typename K>
__global__ void mark_targets(const K* __restrict__ keys, long long m, unsigned* __restrict__ tmask) {
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < m; i += stride) {
    const long long t = keys[i] & 0xffffffffLL;
    atomicOr(tmask + (t >> 5), 1u << (t & 31));
  }
}

// One warp per long-list group: survivors move into the holes, deg[u] drops by k.
template <typename I>
__global__ void big_delete_move(const long long* __restrict__ keys, const long long* __restrict__ gend,
                                long long m, const long long* __restrict__ off, I* __restrict__ deg,
                                I* __restrict__ idx, I big, const I* __restrict__ holes,
                                const I* __restrict__ surv, const int* __restrict__ hcnt) {
  const int lane = threadIdx.x & 31;
  for (long long i = warp_id_global(); i < m; i += warps_in_grid()) {
    if (!is_group_leader(keys, i)) continue;
    const long long u = keys[i] >> 32;
    const I d = deg[u];
    if (d < big) continue;
    const long long base = off[u];
    const int h = hcnt[i];
    for (int j = lane; j < h; j += 32) idx[base + holes[i + j]] = idx[base + surv[i + j]];
    if (lane == 0) deg[u] = d - static_cast<I>(gend[i] - i);
  }
}

// Append, for every group (u, targets), the targets to u's list. Where new_off[i] >= 0 the list
// first moves to [new_off[i], new_off[i] + new_cap[i]) (slots reserved by the host beyond the
// used end of idx); the old slots become garbage until the next compaction.
template <typename I>
__global__ void insert_grouped(const long long* __restrict__ keys, const long long* __restrict__ gend,
                               long long m, const long long* __restrict__ new_off,
                               const I* __restrict__ new_cap, long long* __restrict__ off,
                               I* __restrict__ deg, I* __restrict__ cap, I* __restrict__ idx) {
  const int lane = threadIdx.x & 31;
  for (long long i = warp_id_global(); i < m; i += warps_in_grid()) {
    if (!is_group_leader(keys, i)) continue;
    const long long hi = gend[i];
    const I u = static_cast<I>(keys[i] >> 32);
    long long base = off[u];
    const I d = deg[u];
    const long long moved = new_off[i];
    if (moved >= 0) {
      for (I p = lane; p < d; p += 32) idx[moved + p] = idx[base + p];
      base = moved;
    }
    const long long k = hi - i;
    for (long long j = lane; j < k; j += 32) {
      idx[base + d + j] = static_cast<I>(keys[i + j] & 0xffffffffLL);
    }
    __syncwarp();  // every lane has read off[u] and deg[u] (above) before lane 0 rewrites them
    if (lane == 0) {
      if (moved >= 0) {
        off[u] = moved;
        cap[u] = new_cap[i];
      }
      deg[u] = d + static_cast<I>(k);
    }
  }
}

// Compaction: copy every vertex's list to new_off[u] (one warp per vertex).
template <typename I>
__global__ void relocate_all(long long n, const long long* __restrict__ old_off,
                             const I* __restrict__ deg, const long long* __restrict__ new_off,
                             const I* __restrict__ old_idx, I* __restrict__ new_idx) {
  const int lane = threadIdx.x & 31;
  for (long long u = warp_id_global(); u < n; u += warps_in_grid()) {
    const long long a = old_off[u], b = new_off[u];
    const I d = deg[u];
    for (I p = lane; p < d; p += 32) new_idx[b + p] = old_idx[a + p];
  }
}

// Export: the edges of every vertex u as (u, t) pairs at out positions start[u] .. + deg[u].
template <typename I>
__global__ void gather_edges(long long n, const long long* __restrict__ off, const I* __restrict__ deg,
                             const long long* __restrict__ start, const I* __restrict__ idx,
                             long long* __restrict__ out_src, long long* __restrict__ out_dst) {
  const int lane = threadIdx.x & 31;
  for (long long u = warp_id_global(); u < n; u += warps_in_grid()) {
    const long long a = off[u], s = start[u];
    const I d = deg[u];
    for (I p = lane; p < d; p += 32) {
      out_src[s + p] = u;
      out_dst[s + p] = idx[a + p];
    }
  }
}

// Grouping plan of sorted keys (u << 32 | t; SR_NO_KEY entries last): gend[i] = end of i's group;
// for group leaders whose list would overflow, need[i] = slots of the relocated list
// (max(4, 2 * (deg + k))), else 0. One thread per key; O(log m) each.
template <typename I>
__global__ void plan_groups(const long long* __restrict__ keys, long long m, const I* __restrict__ deg,
                            const I* __restrict__ cap, long long* __restrict__ gend,
                            long long* __restrict__ need) {
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < m; i += stride) {
    const long long k0 = keys[i];
    if (k0 == SR_NO_KEY) {
      gend[i] = i + 1;
      need[i] = 0;
      continue;
    }
    const long long hi = k0 >> 32;
    long long lo = i + 1, up = m;  // first index whose key >> 32 exceeds hi
    while (lo < up) {
      const long long mid = (lo + up) >> 1;
      if ((keys[mid] >> 32) <= hi) lo = mid + 1; else up = mid;
    }
    gend[i] = lo;
    long long want = 0;
    if (i == 0 || (keys[i - 1] >> 32) != hi) {
      const long long d = deg[hi], k = lo - i;
      if (d + k > static_cast<long long>(cap[hi])) want = 2 * (d + k) > 4 ? 2 * (d + k) : 4;
    }
    need[i] = want;
  }
}

// Counts of the true flags of a[0, na) and of b[0, nb), added to out[0] and out[1] (zeroed by
// the caller). One compiled kernel for every size: CuPy's own reductions (bool.sum()) compile a
// specialization per size class on first use, seconds of NVRTC that a daemon would otherwise pay
// mid-stream when a batch falls in a new class (docs/daemon.md).
template <typename F>
__global__ void count_flags2(const F* __restrict__ a, long long na, const F* __restrict__ b,
                             long long nb, unsigned long long* __restrict__ out) {
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  const long long t0 = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  unsigned long long ca = 0, cb = 0;
  for (long long i = t0; i < na; i += stride) ca += a[i] ? 1ull : 0ull;
  for (long long i = t0; i < nb; i += stride) cb += b[i] ? 1ull : 0ull;
  ca = sr::warp_sum(ca);
  cb = sr::warp_sum(cb);
  if ((threadIdx.x & 31) == 0) {
    if (ca) atomicAdd(out, ca);
    if (cb) atomicAdd(out + 1, cb);
  }
}

// flag[0] = 1 when some id of a[0, n) or b[0, n) lies outside [0, 2^31) (flag zeroed by the
// caller; a plain store: every writer writes 1). Whether the slow path may collapse a batch by
// one sort of packed keys src << 32 | dst.
template <typename T>
__global__ void ids_out_of_range(const T* __restrict__ a, const T* __restrict__ b, long long n,
                                 int* __restrict__ flag) {
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  bool bad = false;
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    bad |= (static_cast<unsigned long long>(a[i]) | static_cast<unsigned long long>(b[i])) >> 31;
  if (__any_sync(SR_FULL_MASK, bad) && (threadIdx.x & 31) == 0) *flag = 1;
}
