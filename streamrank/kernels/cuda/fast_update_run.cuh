// Steps 1-4 of the fused small-batch graph update (graph_fast_update.cu has the whole design):
// the first kernel's body, run by one block of FU_THREADS threads: the in-batch collapse, the
// id lookups, the new ids in the CPU store's order and the membership checks.
#pragma once
#include "common.cuh"
#include "idhash.cuh"
#include "fast_update_defs.cuh"
#include "fast_update_block.cuh"
#include "fast_update_lists.cuh"

// The batch: bsrc/bdst (external ids), bins (1 = insert) in arrival order, m edges.
// The id map: hkeys/hvals/hmask (idhash.cuh), ext (internal -> external, capacity >= n + room;
// written by fast_update_plan, not here; this kernel's arguments stay those of the one-block update),
// n vertices; `room` new vertices fit in the vertex arrays, ext and the table's load limit.
// Each direction: off/deg/cap/idx of the gapped CSR, the used end of idx and its size (the tail
// [end, size) is reserved for relocated lists). work: FuWork scratch (work_bytes long).
// changes: 4 * m int64 (ins_src, ins_dst, del_src, del_dst at offsets 0, m, 2m, 3m).
__device__ __forceinline__ void
fast_update_run(const long long* __restrict__ bsrc, const long long* __restrict__ bdst,
                const unsigned char* __restrict__ bins, int m,
                long long* hkeys, int* hvals, unsigned long long hmask, long long* ext, int n, int room,
                long long* out_off, int* out_deg, int* out_cap, int* out_idx, long long out_end, long long out_size,
                long long* in_off, int* in_deg, int* in_cap, int* in_idx, long long in_end, long long in_size,
                unsigned char* work, long long work_bytes, long long* changes, long long* counters,
                long long* hcounters) {
  __shared__ long long sh_a[FU_MAX];  // step 1's table of pairs, then step 2's sort keys: external src
  __shared__ long long sh_b[FU_MAX];  //   and external dst
  __shared__ int sh_perm[FU_MAX];
  __shared__ int sh_iscan[32];
  __shared__ int s_over, s_mq;  // overflow bits, length of the membership's work list

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  if (blockDim.x != FU_THREADS || gridDim.x != 1 || m < 1 || m > FU_MAX ||
      work_bytes < static_cast<long long>(sizeof(FuWork))) {
    if (tid == 0) write_counters(counters, hcounters, FU_OVER_ARGS, 0, 0, 0, 0, 0, 0, out_end, in_end);
    return;  // uniform: the condition is the same for every thread
  }
  FuWork* w = reinterpret_cast<FuWork*>(work);
  fu_tick(w, 0);
  if (FU_TICKS && tid == 0) w->ticks[5] = w->ticks[6] = w->ticks[10] = 0;  // the atomicMax slots

  // ---------------------------------------------------------------- 1. collapse
  // A table of (src, dst) pairs in shared memory (open addressing, load <= 1/2): an edge claims
  // its pair's slot or finds the edge that did (cown), and the slot keeps the pair's last arrival
  // (clast). The survivor of a pair is its last edge; survivors are numbered in arrival order.
  // The table lives in the sort arrays, free until step 2: TC <= 2 * FU_MAX slots fit sh_a and
  // sh_b read as int, and the edges' slots (cslot) fit sh_perm. (In global memory before: its
  // atomics were L2 round trips, 3.5-4.5 us of a 1,000-edge batch.)
  int TC = 64;
  while (TC < 2 * m) TC <<= 1;  // <= 2 * FU_MAX
  int* const cown = reinterpret_cast<int*>(sh_a);
  int* const clast = reinterpret_cast<int*>(sh_b);
  int* const cslot = sh_perm;
  const unsigned long long cmask = static_cast<unsigned long long>(TC - 1);
  for (int h = tid; h < TC; h += FU_THREADS) {
    cown[h] = -1;
    clast[h] = -1;
  }
  if (tid == 0) {
    s_over = 0;
    s_mq = 0;
  }
  __syncthreads();
  for (int i = tid; i < m; i += FU_THREADS) {
    const long long s = bsrc[i], d = bdst[i];
    unsigned long long h = sr::hash_mix(s ^ static_cast<long long>(sr::hash_mix(d))) & cmask;
    while (true) {
      const int prev = atomicCAS(&cown[h], -1, i);
      if (prev < 0 || (bsrc[prev] == s && bdst[prev] == d)) break;
      h = (h + 1) & cmask;
    }
    atomicMax(&clast[h], i);
    cslot[i] = static_cast<int>(h);
  }
  __syncthreads();
  fu_tick(w, 7);
  // One scan numbers the surviving insertions (low 16 bits) and deletions (high 16 bits; counts
  // are at most FU_MAX < 2^16), item i = 2 * tid + j.
  int ipre[2], dpre[2];
  bool surv[2], sins[2];
#pragma unroll
  for (int j = 0; j < 2; ++j) {
    const int i = 2 * tid + j;
    surv[j] = i < m && clast[cslot[i]] == i;  // read before the scan's barriers; step 2 reuses the arrays
    sins[j] = surv[j] && bins[i] != 0;
    ipre[j] = surv[j] ? (sins[j] ? 1 : 1 << 16) : 0;
  }
  const int nID = block_scan_items<2, int>(ipre, sh_iscan);
  const int nI = nID & 0xffff, nD = nID >> 16;
#pragma unroll
  for (int j = 0; j < 2; ++j) {
    dpre[j] = ipre[j] >> 16;
    ipre[j] &= 0xffff;
  }
  int upre[2];  // insertions with an endpoint the id map does not know (step 2)
#pragma unroll
  for (int j = 0; j < 2; ++j) {
    upre[j] = 0;
    if (!surv[j]) continue;
    const int i = 2 * tid + j;
    const long long s = bsrc[i], d = bdst[i];
    const int us = static_cast<int>(sr::hash_find(hkeys, hvals, hmask, s));
    const int vs = static_cast<int>(sr::hash_find(hkeys, hvals, hmask, d));
    if (sins[j]) {
      const int k = ipre[j];
      w->isrc[k] = s;
      w->idst[k] = d;
      w->iu[k] = us;
      w->iv[k] = vs;
      upre[j] = (us < 0 || vs < 0) ? 1 : 0;
    } else {
      const int k = dpre[j];
      w->du[k] = us;
      w->dv[k] = vs;
    }
  }
  const bool unknown[2] = {upre[0] != 0, upre[1] != 0};
  const int K = block_scan_items<2, int>(upre, sh_iscan);

  fu_tick(w, 1);  // (before the barrier below: thread 0's own lookups done)

  // ---------------------------------------------------------------- 2. new vertex ids
  // In the CPU store's order: first appearance over the interleaved (src, dst) of the collapsed
  // insertions in (src, dst) order. Only insertions with an unknown endpoint hold new ids, so
  // only those K are sorted by (src, dst) (none when every id exists, as in the published
  // protocol); position p of the interleaved sequence src0, dst0, src1, ... of the sorted K.
  // Nothing to number when every endpoint is known (K == 0, uniform: the published protocol and
  // batches between existing vertices): the sort, the temporary table and its barriers are skipped.
  int nNew = 0;
  if (K > 0) {
    int PK = 1;
    while (PK < K) PK <<= 1;
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      if (!unknown[j]) continue;
      const int k = ipre[j];
      sh_a[upre[j]] = w->isrc[k];
      sh_b[upre[j]] = w->idst[k];
      sh_perm[upre[j]] = k;
    }
    for (int r = K + tid; r < PK; r += FU_THREADS) {
      sh_a[r] = FU_KEY_MAX;
      sh_b[r] = FU_KEY_MAX;
      sh_perm[r] = -1;
    }
    __syncthreads();
    if (K > 1) {  // uniform; pairs are distinct after the collapse (padding ties only with padding)
      block_bitonic(PK, [&](int i, int l, bool up) {
        const long long ai = sh_a[i], al = sh_a[l], bi = sh_b[i], bl = sh_b[l];
        const bool after = ai != al ? ai > al : bi > bl;  // entry i sorts after l
        if (after == up) {
          sh_a[i] = al;
          sh_a[l] = ai;
          sh_b[i] = bl;
          sh_b[l] = bi;
          const int x = sh_perm[i];
          sh_perm[i] = sh_perm[l];
          sh_perm[l] = x;
        }
      });
    }
    const int L = 2 * K;
    int TT = 64;
    while (TT < 2 * L) TT <<= 1;  // <= FU_TEMP
    const unsigned long long tmask = static_cast<unsigned long long>(TT - 1);
    const unsigned long long empty = static_cast<unsigned long long>(SR_HASH_EMPTY);
    for (int s = tid; s < TT; s += FU_THREADS) {
      w->tkey[s] = empty;
      w->tmin[s] = 0x7fffffff;
    }
    __syncthreads();  // iu/iv/isrc/idst written, the temporary table cleared
    for (int p = tid; p < L; p += FU_THREADS) {
      const int k = sh_perm[p >> 1];
      if (((p & 1) ? w->iv[k] : w->iu[k]) >= 0) continue;
      const long long x = (p & 1) ? w->idst[k] : w->isrc[k];
      unsigned long long h = sr::hash_mix(x) & tmask;
      while (true) {
        const unsigned long long prev = atomicCAS(&w->tkey[h], empty, static_cast<unsigned long long>(x));
        if (prev == empty || prev == static_cast<unsigned long long>(x)) break;
        h = (h + 1) & tmask;
      }
      atomicMin(&w->tmin[h], p);
      w->pslot[p] = static_cast<int>(h);
    }
    __syncthreads();
    int fpre[4];
    bool first[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int p = 4 * tid + j;
      first[j] = false;
      if (p < L) {
        const int k = sh_perm[p >> 1];
        if (((p & 1) ? w->iv[k] : w->iu[k]) < 0) first[j] = w->tmin[w->pslot[p]] == p;
      }
      fpre[j] = first[j] ? 1 : 0;
    }
    nNew = block_scan_items<4, int>(fpre, sh_iscan);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      if (!first[j]) continue;
      const int p = 4 * tid + j;
      const int k = sh_perm[p >> 1];
      w->tval[w->pslot[p]] = n + fpre[j];
      w->new_ext[fpre[j]] = (p & 1) ? w->idst[k] : w->isrc[k];
    }
    __syncthreads();  // tval complete
    for (int p = tid; p < L; p += FU_THREADS) {
      const int k = sh_perm[p >> 1];
      if (p & 1) {
        if (w->iv[k] < 0) w->iv[k] = w->tval[w->pslot[p]];
      } else {
        if (w->iu[k] < 0) w->iu[k] = w->tval[w->pslot[p]];
      }
    }
  }
  if (tid == 0 && nNew > room) s_over |= FU_OVER_VERTICES;
  __syncthreads();
  fu_tick(w, 2);
  if (s_over != 0) {  // uniform (read after the barrier, written before it)
    if (tid == 0) write_counters(counters, hcounters, s_over, 0, 0, 0, 0, 0, 0, out_end, in_end);
    return;
  }

  // ---------------------------------------------------------------- 3. membership
  // Query q < nD: deletion q; else insertion q - nD. Short lists: this thread, FU_THREAD_LOADS
  // loads in flight. Longer ones go to the warps as items that carry what the scan needs (the
  // list's part, its length, the entry looked for, the query), written by the thread that found
  // the list: a warp's item is one round of loads before its scan (it re-read the query's ids,
  // degrees and offset before, three dependent round trips). A list past FU_MPART entries is cut
  // into at most FU_MPARTS parts, a warp each. A long query's answer starts as "absent" and a
  // part that finds the edge flips it (every writer writes the same value).
  for (int q = tid; q < nD + nI; q += FU_THREADS) {
    const bool is_del = q < nD;
    const int k = is_del ? q : q - nD;
    const int u = is_del ? w->du[k] : w->iu[k];
    const int v = is_del ? w->dv[k] : w->iv[k];
    bool hit = false;
    if (u >= 0 && v >= 0 && u < n && v < n) {  // else unknown (deletion) or new (insertion): absent
      const int du = out_deg[u], dv = in_deg[v];
      const bool use_out = du <= dv;
      const int d = use_out ? du : dv;
      const long long base = use_out ? out_off[u] : in_off[v];
      if (d > FU_SHORT) {  // hit stays false: absent until a part finds it (below)
        const int part = fu_mpart(d);
        const int parts = (d + part - 1) / part;
        const int at = atomicAdd(&s_mq, parts);
        for (int c = 0; c < parts; ++c) {
          w->mlist[at + c] = q;
          w->mbase[at + c] = base + static_cast<long long>(c) * part;
          w->mlen[at + c] = d - c * part < part ? d - c * part : part;
          w->mwant[at + c] = use_out ? v : ~u;  // ~u < 0: the list is in(v)
        }
      } else {
        hit = list_has<1, FU_THREAD_LOADS>(use_out ? out_idx : in_idx, base, d, use_out ? v : u);
      }
    }
    if (is_del) w->dok[k] = hit ? 1 : 0; else w->iok[k] = hit ? 0 : 1;
  }
  __syncthreads();
  const int mq = s_mq;
  for (int i = warp; i < mq; i += FU_THREADS / 32) {  // uniform over the warp
    const int q = w->mlist[i], len = w->mlen[i], want = w->mwant[i];
    const long long base = w->mbase[i];
    if (list_has<32, 8>(want < 0 ? in_idx : out_idx, base, len, want < 0 ? ~want : want) && lane == 0) {
      if (q < nD) w->dok[q] = 1; else w->iok[q - nD] = 0;
    }
  }
  __syncthreads();
  int apre[2];  // applied insertions (low 16 bits) and deletions (high 16 bits) before, one scan
#pragma unroll
  for (int j = 0; j < 2; ++j) {
    const int k = 2 * tid + j;
    apre[j] = (k < nI ? w->iok[k] : 0) + (k < nD ? w->dok[k] << 16 : 0);
  }
  const int nIDa = block_scan_items<2, int>(apre, sh_iscan);
  const int nIa = nIDa & 0xffff, nDa = nIDa >> 16;
#pragma unroll
  for (int j = 0; j < 2; ++j) {
    const int k = 2 * tid + j;
    if (k < nI) w->ipos[k] = w->iok[k] ? (apre[j] & 0xffff) : -1;
    if (k < nD) w->dpos[k] = w->dok[k] ? (apre[j] >> 16) : -1;
  }
  __syncthreads();
  fu_tick(w, 3);
  // ---------------------------------------------------------------- hand-over to fast_update_plan
  // Steps 4 and 5 run in the next kernel (two blocks, a direction each, when the batch is large).
  // The counter of overflow says "go on" (0; every exit above wrote its bits).
  if (tid == 0) {
    FuPlan& p = w->plan;
    p.m = m;
    p.n = n;
    p.nD = nD;
    p.nI = nI;
    p.nDa = nDa;
    p.nIa = nIa;
    p.nNew = nNew;
    p.out_end = out_end;
    p.in_end = in_end;
    p.out_size = out_size;
    p.in_size = in_size;
    p.changes = changes;
    w->plan_over = 0;
    w->plan_done = 0;
    counters[C_OVERFLOW] = 0;
  }
}
