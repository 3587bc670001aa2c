// The fused graph update's work on one vertex's list (graph_fast_update.cu): membership of an
// edge (step 3), the scan of a list for its deleted entries and the commit of a planned group of
// changes by a thread, a warp or a block (step 5).
#pragma once

#include "fast_update_defs.cuh"

// The weighted store's build (-DFU_WEIGHTED=1, streamrank.store.gpu_weighted_fast): the commit
// moves each slot's weight `wt[j]` with its target `idx[j]`; the weights of appended slots are
// written after the update (graph_weighted_fast.cu). The unweighted build has no weight array.
#ifndef FU_WEIGHTED
#define FU_WEIGHTED 0
#endif

namespace {

// Whether want is among list[base, base + d), by LANES lanes (1: the calling thread alone; 32: a
// warp whose lanes all call it with the same arguments), LOADS loads of each lane issued together
// per round of LANES * LOADS entries.
template <int LANES, int LOADS>
__device__ __forceinline__ bool list_has(const int* list, long long base, int d, int want) {
  const int lane = LANES == 1 ? 0 : static_cast<int>(threadIdx.x & (LANES - 1));
  for (int p0 = 0; p0 < d; p0 += LANES * LOADS) {
    int t[LOADS];
#pragma unroll
    for (int j = 0; j < LOADS; ++j) {
      const int p = p0 + LANES * j + lane;
      t[j] = p < d ? list[base + p] : -1;
    }
    bool eq = false;
#pragma unroll
    for (int j = 0; j < LOADS; ++j) eq = eq || t[j] == want;
    if (LANES == 1 ? eq : __any_sync(SR_FULL_MASK, eq)) return true;
  }
  return false;
}

// Whether the group led by r deletes key: a binary search over its deletions, the first kd
// entries of the group (sorted by target).
__device__ __forceinline__ bool group_deletes(const FuDir& D, int r, int kd, long long key) {
  int lo = r, hi = r + kd;
  while (lo < hi) {
    const int mid = (lo + hi) >> 1;
    const long long k = D.key[mid];
    if (k == key) return true;
    if (k < key) lo = mid + 1; else hi = mid;
  }
  return false;
}

// Commit an insert-only group (kd == 0, at most FU_THREAD_INS insertions, a moved list of at most
// FU_SHORT entries) with one thread: move the list when planned, append the targets.
__device__ __forceinline__ void thread_commit(const FuDir& D, int r, long long* off, int* deg, int* cap,
                                              int* idx, double* wt) {
  const int u = static_cast<int>(D.key[r] >> 32);
  const int ge = D.gend[r], d = D.d0[r];
  long long base = off[u];
  const long long moved = D.noff[r];
  if (moved >= 0) {
    for (int p0 = 0; p0 < d; p0 += 8) {  // all loads of a round before its stores
      int t[8];
#pragma unroll
      for (int j = 0; j < 8; ++j) t[j] = p0 + j < d ? idx[base + p0 + j] : 0;
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        if (p0 + j < d) idx[moved + p0 + j] = t[j];
      }
#if FU_WEIGHTED
      for (int j = 0; j < 8 && p0 + j < d; ++j) wt[moved + p0 + j] = wt[base + p0 + j];
#endif
    }
    base = moved;
    off[u] = moved;
    cap[u] = D.ncap[r];
  }
  for (int j0 = r; j0 < ge; j0 += 4) {  // every entry of the group is an insertion
    long long k[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) k[j] = j0 + j < ge ? D.key[j0 + j] : 0;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      if (j0 + j < ge) idx[base + d + (j0 + j - r)] = static_cast<int>(k[j] & 0xffffffffLL);
    }
  }
  deg[u] = d + (ge - r);
}

// Mark the deleted and kept entries of chunk c of the list of the group led by r (vertex u, whose
// group deletes kd > 0 of its d0 entries) in D.hole / D.surv (the layout of FuDir): a block of
// FU_SCAN_THREADS threads, FU_CHUNK entries, the loads issued together before the lookups. Every
// deleted target is in the list (step 3 checked it) and a list holds a target once, so the chunks
// of one list find kd deleted entries in all, as many holes (below d0 - kd) as survivors (from
// d0 - kd up).
__device__ __forceinline__ void scan_chunk(FuDir& D, int r, int c, const long long* off, const int* idx) {
  const long long key = D.key[r];
  const int u = static_cast<int>(key >> 32);
  const long long high = static_cast<long long>(u) << 32;
  const int d = D.d0[r], kd = D.kd[r], keep = d - kd;
  const long long base = off[u];
  const int p0 = c * FU_CHUNK + static_cast<int>(threadIdx.x);
  int t[FU_CHUNK / FU_SCAN_THREADS];
#pragma unroll
  for (int j = 0; j < FU_CHUNK / FU_SCAN_THREADS; ++j) {
    const int p = p0 + j * FU_SCAN_THREADS;
    t[j] = p < d ? idx[base + p] : -1;
  }
#pragma unroll
  for (int j = 0; j < FU_CHUNK / FU_SCAN_THREADS; ++j) {
    const int p = p0 + j * FU_SCAN_THREADS;
    if (p >= d) break;
    const bool del = group_deletes(D, r, kd, high | static_cast<long long>(t[j]));
    if (p < keep) {
      if (del) D.hole[r + atomicAdd(&D.hcnt[r], 1)] = p;
    } else if (!del) {
      D.surv[r + atomicAdd(&D.scnt[r], 1)] = p;
    }
  }
}

// Commit the group led by r (vertex u) with a team of `width` threads (this one is `rank`): move
// the survivors of u's list into its holes (found by scan_chunk), move the list to its tail slots
// when planned, append the inserted targets (the group's entries from r + kd on, in target
// order). `sync` is the team's barrier: a warp (__syncwarp) or a block of the grid, for a long
// list that moves (__syncthreads; every thread of the block calls it with the same r). List order
// is not kept: survivors fill the holes.
template <typename Sync>
__device__ __forceinline__ void team_commit(const FuDir& D, int r, long long* off, int* deg, int* cap, int* idx,
                                            double* wt, int rank, int width, Sync sync) {
  const long long key = D.key[r];
  const int u = static_cast<int>(key >> 32);
  const int ge = D.gend[r], d = D.d0[r], kd = D.kd[r], ki = D.ki[r];
  long long base = off[u];
  if (kd > 0) {
    const int h = D.hcnt[r];
    for (int j = rank; j < h; j += width) {
      idx[base + D.hole[r + j]] = idx[base + D.surv[r + j]];
#if FU_WEIGHTED
      wt[base + D.hole[r + j]] = wt[base + D.surv[r + j]];
#endif
    }
    sync();  // the compacted list is visible to the whole team before it is copied
  }
  const int d1 = d - kd;
  const long long moved = ki > 0 ? D.noff[r] : -1;
  if (ki > 0) {
    if (moved >= 0) {
      for (int p = rank; p < d1; p += width) {
        idx[moved + p] = idx[base + p];
#if FU_WEIGHTED
        wt[moved + p] = wt[base + p];
#endif
      }
      base = moved;
    }
    const int i0 = r + kd;  // the first insertion
    for (int j = i0 + rank; j < ge; j += width) idx[base + d1 + (j - i0)] = static_cast<int>(D.key[j] & 0xffffffffLL);
  }
  sync();  // the whole team has read off[u] (above) before its first thread rewrites it
  if (rank == 0) {
    if (moved >= 0) {
      off[u] = moved;
      cap[u] = D.ncap[r];
    }
    deg[u] = d1 + ki;
  }
}

}  // namespace
