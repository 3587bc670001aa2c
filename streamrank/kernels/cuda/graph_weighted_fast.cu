// The fused small-batch update of the weighted store (streamrank.store.gpu_weighted_fast): a host
// batch of up to FU_MAX edges with their weights in nine launches queued back to back, no host
// round trip inside. The unweighted fused update (graph_fast_update.cu, compiled with
// -DFU_WEIGHTED=1 so that its commit moves each slot's weight with its target) changes the
// structure; these kernels come before and after it:
//
//   1. wfast_sort (one block of FU_THREADS threads): the records sorted by (src, dst, arrival)
//      (block bitonic), numbered by pair;
//   2. wfast_pairs (a grid, a warp per pair: the pairs' lookups run side by side, not one warp's
//      share after another in a single block): the endpoints' internal ids (the id map) and the
//      stored weight (the shorter of out(u) and in(v) scanned by the warp; NaN: absent), then the
//      pair's records folded in arrival order under `set` or `sum` (weights_fold.cuh: the CPU
//      store's rule, kernels/cpu/weighted_csr.py);
//   3. wfast_classify (one block): a pair absent before and present after is an insertion, present
//      before and absent after a deletion, present both times with another weight a reweight; the
//      structural records (insertions, then deletions) go into a staged batch in fast_update_hdr's
//      layout, padded to the batch's size with deletions of an id no map holds (absent: they
//      change nothing and keep the changes buffer's sections at the batch's stride); the drop
//      counts (duplicates, present insertions, absent deletions) are this kernel's, by the
//      weighted rule;
//   fast_update_hdr, fast_update_plan, fast_update_scan, fast_update_commit: the structure;
//   wfast_weights (a grid, a warp per pair), after it, unless the update overflowed (then nothing
//     was written and the host applies the batch through another path): the weight of every
//     inserted and reweighted pair written into its slot in both directions (found by a warp's
//     scan of the list; the ids are looked up again: new vertices have theirs now); reweighted
//     pairs listed for the rank update;
//   wfast_rows (a grid, a warp per changed pair's source): W[u] summed afresh over u's out-slots
//     (as row_sums in graph_weights.cu), and the weighted counters written.
#include "common.cuh"
#include "idhash.cuh"
#include "fast_update_defs.cuh"
#include "fast_update_block.cuh"
#include "weights_fold.cuh"

// Counter slots written by wfast_rows after the structural update's (C_* in fast_update_defs.cuh;
// frontier_loop.cu reads WC_REW as SR_COUNT_REWEIGHTED).
#define WC_DUP 9        // in-batch repeats (records beyond the first of each pair)
#define WC_PRESENT 10   // pairs whose last record inserts and whose weight did not change
#define WC_ABSENT 11    // pairs whose last record deletes and that were absent
#define WC_REW 12       // reweighted pairs
// Pair kinds.
#define WK_SAME 0
#define WK_NEW 1
#define WK_GONE 2
#define WK_REW 3
// The padding records' id: no map holds it (ids are non-negative, -1 marks an empty slot).
#define WF_NONE (-2LL)

namespace {

// The scratch of one weighted batch (the host allocates WF_WORK_BYTES >= sizeof).
struct WfWork {
  long long ps[FU_MAX], pd[FU_MAX];  // pair p's external source and target
  int pstart[FU_MAX + 1];            // pair p's records in sorted order: [pstart[p], pstart[p + 1])
  int prec[FU_MAX];                  // sorted position -> record (arrival index)
  double pw[FU_MAX];                 // pair p's weight after the batch (NaN: absent)
  int pkind[FU_MAX];                 // WK_*
  int prew[FU_MAX];                  // a reweighted pair's place among the reweights
  int npairs;
  long long dup, present, absent, nrew;
  long long* changes;                // the fused update's changes buffer (sections of stride m)
  long long m;
};

__device__ __forceinline__ long long wf_warp() {
  return (static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
}

__device__ __forceinline__ long long wf_warps() { return (static_cast<long long>(gridDim.x) * blockDim.x) >> 5; }

// The position of `want` in list[base, base + d) found by the whole warp, or -1.
__device__ __forceinline__ long long warp_find(const int* __restrict__ list, long long base, int d, int want) {
  const int lane = threadIdx.x & 31;
  for (int p0 = 0; p0 < d; p0 += 32) {
    const int p = p0 + lane;
    const bool hit = p < d && list[base + p] == want;
    const unsigned b = __ballot_sync(SR_FULL_MASK, hit);
    if (b) return base + p0 + __ffs(b) - 1;
  }
  return -1;
}

}  // namespace

// The batch as the host staged it (WeightedFastUpdater), read by the three kernels of steps 1-3:
// a 64-byte header (m edges, 1..FU_MAX; the vertex count n; the room for new vertices; the used
// ends of both idx; the changes buffer's address; 1 for `sum`), then src and dst (external ids),
// the weights (NaN on a deletion without one) and the insert flags, FU_MAX entries each, in
// arrival order. Everything that changes from batch to batch is there, so that a captured graph
// replays the update.
struct WfStage {
  long long m, room, out_end, in_end, changes;
  int n, summing;
  const long long* src;
  const long long* dst;
  const double* weight;
  const unsigned char* ins;
};

__device__ __forceinline__ WfStage wf_stage(const long long* __restrict__ stage) {
  WfStage b;
  b.m = stage[0];
  b.n = static_cast<int>(stage[1]);
  b.room = stage[2];
  b.out_end = stage[3];
  b.in_end = stage[4];
  b.changes = stage[5];
  b.summing = static_cast<int>(stage[6]);
  b.src = stage + 8;
  b.dst = b.src + FU_MAX;
  b.weight = reinterpret_cast<const double*>(b.dst + FU_MAX);
  b.ins = reinterpret_cast<const unsigned char*>(b.weight + FU_MAX);
  return b;
}

__device__ __forceinline__ bool wf_bad_size(long long m) { return m < 1 || m > FU_MAX; }

// Step 1 above (one block): the records sorted, the pairs numbered (their sources, targets and
// records in work). A batch of a size the host never stages gets no pairs.
__global__ void __launch_bounds__(FU_THREADS, 1)
wfast_sort(const long long* __restrict__ stage, unsigned char* work) {
  const WfStage b = wf_stage(stage);
  const long long m = b.m;
  const long long* __restrict__ src = b.src;
  const long long* __restrict__ dst = b.dst;
  __shared__ long long sh_s[FU_MAX];
  __shared__ long long sh_d[FU_MAX];
  __shared__ int sh_i[FU_MAX];
  __shared__ int sh_scan[32];
  WfWork* w = reinterpret_cast<WfWork*>(work);
  const int tid = threadIdx.x;
  if (wf_bad_size(m)) {  // uniform
    if (tid == 0) w->npairs = 0;
    return;
  }

  // 1. sort by (src, dst, arrival)
  int P = 1;
  while (P < m) P <<= 1;
  for (int i = tid; i < P; i += FU_THREADS) {
    sh_s[i] = i < m ? src[i] : FU_KEY_MAX;
    sh_d[i] = i < m ? dst[i] : FU_KEY_MAX;
    sh_i[i] = i < m ? i : 0x7fffffff;
  }
  __syncthreads();
  block_bitonic(P, [&](int i, int l, bool up) {
    const long long si = sh_s[i], sl = sh_s[l], di = sh_d[i], dl = sh_d[l];
    const int ii = sh_i[i], il = sh_i[l];
    const bool after = si != sl ? si > sl : (di != dl ? di > dl : ii > il);
    if (after == up) {
      sh_s[i] = sl;
      sh_s[l] = si;
      sh_d[i] = dl;
      sh_d[l] = di;
      sh_i[i] = il;
      sh_i[l] = ii;
    }
  });
  // pairs: the first record of each (two sorted positions per thread)
  int first[2];
#pragma unroll
  for (int j = 0; j < 2; ++j) {
    const int r = 2 * tid + j;
    first[j] = (r < m && (r == 0 || sh_s[r] != sh_s[r - 1] || sh_d[r] != sh_d[r - 1])) ? 1 : 0;
  }
  const int fl[2] = {first[0], first[1]};
  const int npairs = block_scan_items<2, int>(first, sh_scan);
#pragma unroll
  for (int j = 0; j < 2; ++j) {
    const int r = 2 * tid + j;
    if (r < m) w->prec[r] = sh_i[r];
    if (fl[j]) {
      const int p = first[j];
      w->pstart[p] = r;
      w->ps[p] = sh_s[r];
      w->pd[p] = sh_d[r];
    }
  }
  if (tid == 0) {
    w->pstart[npairs] = m;
    w->npairs = npairs;
  }
  __syncthreads();
}

// Step 2 above (a grid, a warp per pair): the endpoints' internal ids, the stored weight, the fold.
__global__ void wfast_pairs(const long long* __restrict__ stage, double zero_rel, const long long* __restrict__ hkeys,
                            const int* __restrict__ hvals, unsigned long long hmask,
                            const long long* __restrict__ out_off, const int* __restrict__ out_deg,
                            const int* __restrict__ out_idx, const double* __restrict__ out_wt,
                            const long long* __restrict__ in_off, const int* __restrict__ in_deg,
                            const int* __restrict__ in_idx, const double* __restrict__ in_wt, unsigned char* work) {
  const WfStage b = wf_stage(stage);
  const int n = b.n, summing = b.summing;
  const double* __restrict__ weight = b.weight;
  const unsigned char* __restrict__ ins = b.ins;
  WfWork* w = reinterpret_cast<WfWork*>(work);
  const int lane = threadIdx.x & 31;
  const int npairs = w->npairs;
  for (long long p = wf_warp(); p < npairs; p += wf_warps()) {  // uniform over the warp
    const long long s = w->ps[p], d = w->pd[p];
    const int u = static_cast<int>(sr::hash_find(hkeys, hvals, hmask, s));
    const int v = static_cast<int>(sr::hash_find(hkeys, hvals, hmask, d));
    double before = wfold_nan();
    if (u >= 0 && v >= 0 && u < n && v < n) {
      const int du = out_deg[u], dv = in_deg[v];  // the shorter list (both hold the weight)
      if (du <= dv) {
        const long long at = warp_find(out_idx, out_off[u], du, v);
        if (at >= 0) before = out_wt[at];
      } else {
        const long long at = warp_find(in_idx, in_off[v], dv, u);
        if (at >= 0) before = in_wt[at];
      }
    }
    if (lane == 0) {
      const int* rec = w->prec;  // sorted position -> record: the pair's records in arrival order
      const auto record = [&](long long r, bool& insert, double& x) {
        insert = ins[rec[r]] != 0;
        x = weight[rec[r]];
      };
      const double after = fold_records(before, w->pstart[p], w->pstart[p + 1], record, summing, zero_rel);
      const bool was = !isnan(before), now = !isnan(after);
      int kind = WK_SAME;
      if (now && !was) kind = WK_NEW;
      else if (was && !now) kind = WK_GONE;
      else if (was && now && after != before) kind = WK_REW;
      w->pw[p] = after;
      w->pkind[p] = kind;
    }
  }
}

// Step 3 above (one block): the structural records staged in hdr (fast_update_hdr's layout), the
// reweights' places and the drop counts. A batch of a size the host never stages gets hdr[0] = 0:
// fast_update_hdr refuses it as an argument, nothing is written.
__global__ void __launch_bounds__(FU_THREADS, 1)
wfast_classify(const long long* __restrict__ stage, long long* __restrict__ hdr, unsigned char* work) {
  const WfStage b = wf_stage(stage);
  const long long m = b.m;
  const unsigned char* __restrict__ ins = b.ins;
  __shared__ int sh_scan[32];
  WfWork* w = reinterpret_cast<WfWork*>(work);
  const int tid = threadIdx.x;
  if (wf_bad_size(m)) {  // uniform
    if (tid == 0) hdr[0] = 0;
    return;
  }
  const int npairs = w->npairs;

  // 3. the structural records, the reweights' places and the drop counts (pairs p = 2 tid + j)
  int c_new[2], c_gone[2], c_rew[2], c_pres[2], c_abs[2];
#pragma unroll
  for (int j = 0; j < 2; ++j) {
    const int p = 2 * tid + j;
    const int k = p < npairs ? w->pkind[p] : -1;
    const bool last_insert = p < npairs && ins[w->prec[w->pstart[p + 1] - 1]] != 0;
    c_new[j] = k == WK_NEW;
    c_gone[j] = k == WK_GONE;
    c_rew[j] = k == WK_REW;
    c_pres[j] = k == WK_SAME && last_insert;
    c_abs[j] = k == WK_SAME && !last_insert;
  }
  const int nnew = block_scan_items<2, int>(c_new, sh_scan);
  const int ngone = block_scan_items<2, int>(c_gone, sh_scan);
  const int nrew = block_scan_items<2, int>(c_rew, sh_scan);
  const int npres = block_scan_items<2, int>(c_pres, sh_scan);
  const int nabs = block_scan_items<2, int>(c_abs, sh_scan);
  long long* const bsrc = hdr + 8;
  long long* const bdst = bsrc + FU_MAX;
  unsigned char* const bins = reinterpret_cast<unsigned char*>(bdst + FU_MAX);
#pragma unroll
  for (int j = 0; j < 2; ++j) {
    const int p = 2 * tid + j;
    if (p >= npairs) continue;
    const int k = w->pkind[p];
    if (k == WK_NEW || k == WK_GONE) {
      const int at = k == WK_NEW ? c_new[j] : nnew + c_gone[j];
      bsrc[at] = w->ps[p];
      bdst[at] = w->pd[p];
      bins[at] = k == WK_NEW ? 1 : 0;
    }
    w->prew[p] = k == WK_REW ? c_rew[j] : -1;
  }
  for (int at = nnew + ngone + tid; at < m; at += FU_THREADS) {  // padding: absent deletions
    bsrc[at] = WF_NONE;
    bdst[at] = WF_NONE;
    bins[at] = 0;
  }
  if (tid == 0) {
    hdr[0] = m;
    hdr[1] = b.n;
    hdr[2] = b.room;
    hdr[3] = b.out_end;
    hdr[4] = b.in_end;
    hdr[5] = b.changes;
    w->changes = reinterpret_cast<long long*>(b.changes);
    w->m = m;
    w->dup = m - npairs;
    w->present = npres;
    w->absent = nabs;
    w->nrew = nrew;
  }
}

// After the structural update: the weights of the inserted and reweighted pairs in both
// directions, and the reweighted pairs' internal ids after the applied insertions in the changes
// buffer's ins_src and ins_dst sections (at most m pairs in all): a rank update queued behind reads
// them as insertions (frontier_loop.cu), the host as the batch's reweighted pairs.
__global__ void wfast_weights(const long long* __restrict__ hkeys, const int* __restrict__ hvals,
                              unsigned long long hmask, const long long* __restrict__ out_off,
                              const int* __restrict__ out_deg, const int* __restrict__ out_idx, double* out_wt,
                              const long long* __restrict__ in_off, const int* __restrict__ in_deg,
                              const int* __restrict__ in_idx, double* in_wt, const unsigned char* __restrict__ work,
                              const long long* __restrict__ counters) {
  if (counters[C_OVERFLOW] != 0) return;  // uniform: nothing was written
  const WfWork* w = reinterpret_cast<const WfWork*>(work);
  const int lane = threadIdx.x & 31;
  const int npairs = w->npairs;
  for (long long p = wf_warp(); p < npairs; p += wf_warps()) {  // uniform over the warp
    const int k = w->pkind[p];
    if (k != WK_NEW && k != WK_REW) continue;
    const int u = static_cast<int>(sr::hash_find(hkeys, hvals, hmask, w->ps[p]));
    const int v = static_cast<int>(sr::hash_find(hkeys, hvals, hmask, w->pd[p]));
    const double x = w->pw[p];
    const long long a = warp_find(out_idx, out_off[u], out_deg[u], v);
    const long long b = warp_find(in_idx, in_off[v], in_deg[v], u);
    if (lane == 0) {
      if (a >= 0) out_wt[a] = x;  // (always found: the pair is present after the batch)
      if (b >= 0) in_wt[b] = x;
      if (k == WK_REW) {
        const long long at = counters[C_INS] + w->prew[p];
        w->changes[at] = u;
        w->changes[w->m + at] = v;
      }
    }
  }
}

// W[u] summed afresh for the source of every changed pair (a warp each, in list order per lane,
// then the warp's tree), and the weighted counters (slots WC_*) into `counters` and, when not
// null, the mapped pinned `hcounters`.
__global__ void wfast_rows(const long long* __restrict__ hkeys, const int* __restrict__ hvals, unsigned long long hmask,
                           const long long* __restrict__ out_off, const int* __restrict__ out_deg,
                           const double* __restrict__ out_wt, double* W, const unsigned char* __restrict__ work,
                           long long* counters, long long* hcounters) {
  if (counters[C_OVERFLOW] != 0) return;  // uniform
  const WfWork* w = reinterpret_cast<const WfWork*>(work);
  const int lane = threadIdx.x & 31;
  const int npairs = w->npairs;
  for (long long p = wf_warp(); p < npairs; p += wf_warps()) {  // uniform over the warp
    if (w->pkind[p] == WK_SAME) continue;
    const int u = static_cast<int>(sr::hash_find(hkeys, hvals, hmask, w->ps[p]));
    const long long base = out_off[u];
    const int d = out_deg[u];
    double s = 0.0;
    for (int q = lane; q < d; q += 32) s += out_wt[base + q];
    s = sr::warp_sum(s);
    if (lane == 0) W[u] = s;  // (a source of several pairs: every warp writes the same sum)
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    const long long v[4] = {w->dup, w->present, w->absent, w->nrew};
    for (int i = 0; i < 4; ++i) {
      counters[WC_DUP + i] = v[i];
      if (hcounters != nullptr) hcounters[WC_DUP + i] = v[i];
    }
  }
}
