// The fast path of GpuGraph.apply (streamrank/store/gpu_fast.py): a whole small batch in four
// launches queued back to back, with no host round trip inside: fast_update (or fast_update_hdr),
// ONE block of FU_THREADS threads, steps 1-4 below; fast_update_plan, two blocks, step 5 (one
// block both directions, or a direction each for a large batch) and the new ids of step
// 6; fast_update_scan, a grid, the lists that lose entries; fast_update_commit, a grid, the lists'
// commit (step 6).
//
// Semantics are those of the slow path (store/gpu.py, normalize.py, graph.py):
//   1. collapse to the last op per (src, dst) pair in arrival order (a table of pairs in shared
//      memory: each pair's last arrival survives); survivors in arrival order, duplicates counted;
//   2. id lookup of every endpoint in the device hash map (idhash.cuh);
//   3. new vertex ids in the CPU store's order: first appearance over the interleaved
//      (src, dst) of the collapsed insertions in (src, dst) order (the insertions with an
//      unknown endpoint are sorted by (src, dst) with a block bitonic sort; a small temporary
//      table keeps, per unknown id, the first position it occurs at; a block scan over
//      positions numbers the firsts);
//   4. membership against the graph before the batch: the shorter of out(u) and in(v) is scanned
//      by one thread when it is short (FU_SHORT), else by warps (a list past FU_MPART entries in
//      up to FU_MPARTS parts);
//   5. per direction: the applied changes sorted as keys u << 32 | t (block_sort_keys; both
//      directions side by side when they fit, then planned in one pass over both), grouped by
//      u, and planned: lists that would overflow move to the reserved tail of idx (offsets by a
//      block scan);
//   6. only when everything fits (vertex / id map room, both idx tails) the commit: new ids
//      into the id map (fast_update_plan's finishing block); then every list that loses entries is scanned in chunks
//      of FU_CHUNK entries spread over a grid (fast_update_scan: its deleted entries below its
//      new length are holes, its kept ones from there up survivors); then per touched list, with
//      one writer each, the survivors move into the holes (order not kept) and the insertions are
//      appended: small insert-only groups by one thread, lists of at least FU_BIG entries that
//      move to the tail by a block, the others by a warp (fast_update_commit).
//      Otherwise NOTHING of the graph or the id map is written and the overflow counter says
//      why (the kernels after read it and return); the host then runs the slow path, which
//      re-plans and reserves.
// (One block read every long list alone before: 275 us of a 1,000-edge batch on an 11 M-edge
// R-MAT graph, whose deletions land on hub lists.)
// Work lists (queries left to warps, groups per kind of writer) are filled with shared-memory
// atomics, so their order varies between runs; every entry is independent of the others.
// Thread 0 of the first kernel writes the counters (slots C_*) when it refuses the batch, else
// thread 0 of fast_update_plan's finishing block, also into mapped host memory when given one
// (hcounters, null: the host copies them); the host reads them after its wait.
#include "common.cuh"
#include "idhash.cuh"
#include "fast_update_defs.cuh"
#include "fast_update_block.cuh"
#include "fast_update_lists.cuh"

#include "fast_update_run.cuh"

// The kernel: the batch and its sizes as arguments.
__global__ void __launch_bounds__(FU_THREADS, 1)
fast_update(const long long* __restrict__ bsrc, const long long* __restrict__ bdst,
            const unsigned char* __restrict__ bins, int m,
            long long* hkeys, int* hvals, unsigned long long hmask, long long* ext, int n, int room,
            long long* out_off, int* out_deg, int* out_cap, int* out_idx, long long out_end, long long out_size,
            long long* in_off, int* in_deg, int* in_cap, int* in_idx, long long in_end, long long in_size,
            unsigned char* work, long long work_bytes, long long* changes, long long* counters,
            long long* hcounters) {
  fast_update_run(bsrc, bdst, bins, m, hkeys, hvals, hmask, ext, n, room, out_off, out_deg, out_cap, out_idx,
                  out_end, out_size, in_off, in_deg, in_cap, in_idx, in_end, in_size, work, work_bytes, changes,
                  counters, hcounters);
}

// The same with everything that changes from batch to batch in one staged buffer, so that a
// captured CUDA graph can replay the launch (streamrank/rank/gpu/capture.py): hdr[0] the batch size
// m, [1] the vertex count n, [2] the room for new vertices, [3] and [4] the used ends of the out-
// and in-direction's idx, [5] the address of the changes buffer (4 m entries); the batch after the
// 64-byte header: src at hdr + 8, dst FU_MAX entries further, then the insert flags (bytes). The
// buffer may be mapped pinned host memory (read across the bus, no copy before the launch: stop
// 28), so the header is read once and the batch copied into the scratch before the update, which
// reads it more than once.
__global__ void __launch_bounds__(FU_THREADS, 1)
fast_update_hdr(const long long* __restrict__ hdr, long long* hkeys, int* hvals, unsigned long long hmask,
                long long* ext, long long* out_off, int* out_deg, int* out_cap, int* out_idx, long long out_size,
                long long* in_off, int* in_deg, int* in_cap, int* in_idx, long long in_size,
                unsigned char* work, long long work_bytes, long long* counters, long long* hcounters) {
  const long long* bsrc = hdr + 8;
  const long long* bdst = bsrc + FU_MAX;
  const unsigned char* bins = reinterpret_cast<const unsigned char*>(bdst + FU_MAX);
  // Each thread's first edge is read beside the header, before m is known (entries past m are
  // dropped): one round trip across the bus for a batch of up to blockDim.x edges, not two.
  const int t0 = static_cast<int>(threadIdx.x);
  const bool in_buf = t0 < FU_MAX;  // (the update refuses any block but FU_THREADS <= FU_MAX)
  const long long s0 = in_buf ? bsrc[t0] : 0, d0 = in_buf ? bdst[t0] : 0;
  const unsigned char f0 = in_buf ? bins[t0] : 0;
  long long h[6];
#pragma unroll
  for (int i = 0; i < 6; ++i) h[i] = hdr[i];  // one request per warp and entry
  const long long m = h[0];
  FuWork* w = reinterpret_cast<FuWork*>(work);
  if (work_bytes >= static_cast<long long>(sizeof(FuWork)) && m >= 1 && m <= FU_MAX) {  // uniform
    if (in_buf && t0 < m) {
      w->bsrc[t0] = s0;
      w->bdst[t0] = d0;
      w->bins[t0] = f0;
    }
    for (int i = t0 + static_cast<int>(blockDim.x); i < m; i += blockDim.x) {
      w->bsrc[i] = bsrc[i];
      w->bdst[i] = bdst[i];
      w->bins[i] = bins[i];
    }
  }
  __syncthreads();  // the batch in the scratch (fast_update_run checks the arguments)
  const int mi = m >= 1 && m <= FU_MAX ? static_cast<int>(m) : -1;  // (-1: refused as an argument)
  fast_update_run(w->bsrc, w->bdst, w->bins, mi, hkeys, hvals, hmask, ext, static_cast<int>(h[1]),
                  static_cast<int>(h[2]), out_off, out_deg, out_cap, out_idx, h[3], out_size, in_off, in_deg, in_cap,
                  in_idx, h[4], in_size, work, work_bytes, reinterpret_cast<long long*>(h[5]), counters, hcounters);
}

// The sections 4 (sort and plan) and 5 (new ids) below, after the first kernel's 1-3 (the header's
// step 5 and the new ids of step 6). One block plans both directions in one pass when the batch
// has at most FU_SPLIT applied changes (block 1 returns at once); a larger one is planned by two
// blocks, block b direction b, each on its own multiprocessor (the sort and the planning are
// bound by one multiprocessor's issue rate: two blocks take 5 us off a 1,000-edge batch's 17 us), and
// the second block to finish commits the new ids and writes the counters. Exactly FU_THREADS
// threads and two blocks; returns at once when the first kernel refused the batch (its counter
// of overflow is set).
__global__ void __launch_bounds__(FU_THREADS, 1)
fast_update_plan(const int* __restrict__ out_deg, const int* __restrict__ out_cap, const int* __restrict__ in_deg,
                 const int* __restrict__ in_cap, long long* hkeys, int* hvals, unsigned long long hmask,
                 long long* ext, unsigned char* work, long long* counters, long long* hcounters) {
  __shared__ long long sh_a[FU_MAX];  // sort keys
  __shared__ long long sh_b[FU_MAX];  // the sort's scratch, then insertions before each position
  __shared__ int sh_iscan[32];
  __shared__ long long sh_lscan[32];
  __shared__ long long sh_tail[2];
  __shared__ long long s_split[2];  // the out-direction's totals of a pass over both
  __shared__ int s_over, s_tq, s_wq, s_bq, s_last;  // overflow bits, lengths of the work lists
  if (counters[C_OVERFLOW] != 0) return;  // uniform: the first kernel refused the batch (and said why)
  const int tid = threadIdx.x;
  FuWork* w = reinterpret_cast<FuWork*>(work);
  const FuPlan& pl = w->plan;
  const int m = static_cast<int>(pl.m), n = static_cast<int>(pl.n);
  const int nD = static_cast<int>(pl.nD), nI = static_cast<int>(pl.nI);
  const int nDa = static_cast<int>(pl.nDa), nIa = static_cast<int>(pl.nIa), nNew = static_cast<int>(pl.nNew);
  const long long out_end = pl.out_end, in_end = pl.in_end, out_size = pl.out_size, in_size = pl.in_size;
  long long* const changes = pl.changes;
  if (blockDim.x != FU_THREADS || gridDim.x != 2) {  // uniform; nothing of the graph was written yet
    if (tid == 0 && blockIdx.x == 0) {
      write_counters(counters, hcounters, FU_OVER_ARGS, 0, 0, 0, 0, 0, 0, out_end, in_end);
    }
    return;
  }
  const int c = nIa + nDa;  // applied changes: deletions are elements [0, nDa), insertions after
  int Pc = 1;  // positions per direction
  while (Pc < c) Pc <<= 1;
  // two blocks past FU_SPLIT changes, and whenever both directions' keys would not fit sh_a side by side
  const bool split = c > FU_SPLIT || 2 * Pc > FU_MAX;
  if (!split && blockIdx.x != 0) return;  // uniform: one block plans both directions
  const int lbase = split ? static_cast<int>(blockIdx.x) * FU_MAX : 0;  // this block's region of the work lists
  if (tid == 0) {
    s_over = 0;
    s_tq = 0;
    s_wq = 0;
    s_bq = 0;
    sh_tail[0] = 0;
    sh_tail[1] = 0;
  }
  __syncthreads();

  // ---------------------------------------------------------------- 4. sort and plan per direction
  // Both directions' keys are sorted by one network when they fit side by side (two halves of Pc
  // positions sorted independently) and then planned in one pass over both halves (position q:
  // direction q >= Pc, entry q - Pc of it); else (split) block b sorts and plans direction b. A
  // sort key is u << 32 | t with bit 31 set for an insertion (ids are below 2^31): a
  // group's deletions come first, each part in target order, and the key alone says what it is
  // (no permutation moves with it). The pass's prefix sums run over all its positions: the
  // out-direction's come first, so an in-direction entry subtracts the out-direction's total
  // (the prefix at q = Pc, `s_split`), or counts in the high half of a packed int.
  const bool both = !split;  // (then 2 Pc <= FU_MAX)
  const int P = both ? 2 * Pc : Pc;  // positions of a pass
  {
    const int pass = split ? static_cast<int>(blockIdx.x) : 0;  // (both: the pass over both directions)
    {
      // this thread's deletions and insertions k = tid, tid + FU_THREADS: positions and ids
      // loaded at once (one round trip to the scratch, for both directions' keys)
      int dp[2], ip[2];
      long long da[2], db[2], ia[2], ib[2];
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const int k = tid + r * FU_THREADS;
        dp[r] = k < nD ? w->dpos[k] : -1;
        ip[r] = k < nI ? w->ipos[k] : -1;
        da[r] = w->du[k];
        db[r] = w->dv[k];
        ia[r] = w->iu[k];
        ib[r] = w->iv[k];
      }
      for (int e = both ? 0 : pass; e <= (both ? 1 : pass); ++e) {  // direction e at offset o
        const int o = both ? e * Pc : 0;
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          if (dp[r] >= 0) sh_a[o + dp[r]] = e == 0 ? (da[r] << 32) | db[r] : (db[r] << 32) | da[r];
          if (ip[r] >= 0) {
            sh_a[o + nDa + ip[r]] = (e == 0 ? (ia[r] << 32) | ib[r] : (ib[r] << 32) | ia[r]) | FU_INS_BIT;
          }
        }
        for (int i = c + tid; i < Pc; i += FU_THREADS) sh_a[o + i] = FU_KEY_MAX;  // padding sorts last
      }
      __syncthreads();
      // sorted in place: sh_a[o + r] the r-th key (keys are distinct, or both padding)
      block_sort_keys(sh_a, sh_b, P, Pc);  // sh_b: scratch (free until the planning)
    }
    if (pass == 0) fu_tick(w, 8);
    // this thread's positions q = 2 * tid + j: direction qe[j], entry qr[j] of it (valid: < c)
    int qe[2], qr[2];
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const int q = 2 * tid + j;
      qe[j] = both ? (q >= Pc ? 1 : 0) : pass;
      qr[j] = both && q >= Pc ? q - Pc : q;
    }
    // insertions before each position, per direction: 1 (out) or 1 << 16 (in) per insertion
    int pre[2];
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const int q = 2 * tid + j;
      pre[j] = (qr[j] < c && (sh_a[q] & FU_INS_BIT) != 0) ? (qe[j] == 0 ? 1 : 1 << 16) : 0;
    }
    block_scan_items<2, int>(pre, sh_iscan);
    // sh_b (free in this step) keeps the insertions before each sorted position for the planning
    // below, which reads the sorted keys from sh_a: shared memory, not D's copies in global memory
    long long* const sh_ipos = sh_b;
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const int q = 2 * tid + j, r = qr[j];
      if (r >= c) continue;
      const long long kq = sh_a[q];
      const bool ins = (kq & FU_INS_BIT) != 0;
      const long long key = kq & ~FU_INS_BIT;
      const int before = qe[j] == 0 ? (pre[j] & 0xffff) : (pre[j] >> 16);
      w->dir[qe[j]].key[r] = key;
      sh_ipos[q] = before;
      if (qe[j] == 0) {  // the changes, sorted by (src, dst) of internal ids
        const int at = ins ? before : r - before;
        long long* out = changes + (ins ? 0 : 2 * static_cast<long long>(m));
        out[at] = key >> 32;
        out[m + at] = key & 0xffffffffLL;
      }
    }
    __syncthreads();  // D.key and sh_ipos complete
    if (pass == 0) fu_tick(w, 9);
    long long need[2], at[2], dc[2];  // dc: (1 << 32) | chunks for a group with deletions
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const int q = 2 * tid + j, r = qr[j], dir = qe[j];
      need[j] = 0;
      dc[j] = 0;
      if (r >= c) continue;
      const long long* const ka = sh_a + (q - r);  // this direction's sorted keys
      const long long* const kip = sh_ipos + (q - r);
      const long long hi = ka[r] >> 32;
      if (r > 0 && (ka[r - 1] >> 32) == hi) continue;  // not a group leader
      // the first position of the next vertex: most groups are short, so the next FU_LOOK
      // positions are read first (in flight together), and only a longer group is searched
      long long nx[FU_LOOK];
#pragma unroll
      for (int s = 0; s < FU_LOOK; ++s) nx[s] = r + 1 + s < c ? ka[r + 1 + s] : FU_KEY_MAX;
      int lo = r + 1 + FU_LOOK;
#pragma unroll
      for (int s = FU_LOOK - 1; s >= 0; --s) {
        if ((nx[s] >> 32) != hi) lo = r + 1 + s;  // (the padding's high half is above every id)
      }
      if (lo > c) lo = c;
      int up = c;
      if (lo == r + 1 + FU_LOOK) {
        while (lo < up) {  // a group longer than FU_LOOK: binary search
          const int mid = (lo + up) >> 1;
          if ((ka[mid] >> 32) <= hi) lo = mid + 1; else up = mid;
        }
      }
      const int u = static_cast<int>(hi);
      const int ki = static_cast<int>((lo < c ? kip[lo] : nIa) - kip[r]);
      const int kd = (lo - r) - ki;
      // vertices from n on (new ones) have degree and capacity 0 (the store keeps them so)
      const int d = u < n ? (dir == 0 ? out_deg[u] : in_deg[u]) : 0;
      const int cp = u < n ? (dir == 0 ? out_cap[u] : in_cap[u]) : 0;
      const long long want = static_cast<long long>(d - kd) + ki;
      if (ki > 0 && want > cp) need[j] = 2 * want > 4 ? 2 * want : 4;
      FuDir& D = w->dir[dir];
      D.gend[r] = lo;
      D.d0[r] = d;
      D.kd[r] = kd;
      D.ki[r] = ki;
      D.ncap[r] = static_cast<int>(need[j]);
      if (kd > 0) {
        D.hcnt[r] = 0;
        D.scnt[r] = 0;
        dc[j] = (1LL << 32) | ((d + FU_CHUNK - 1) / FU_CHUNK);
      }
      const int entry = (dir << 16) | r;
      if (kd == 0 && ki <= FU_THREAD_INS && (need[j] == 0 || d <= FU_SHORT)) {
        w->tlist[lbase + atomicAdd(&s_tq, 1)] = entry;
      } else if (d >= FU_BIG && need[j] > 0) {
        w->blist[lbase + atomicAdd(&s_bq, 1)] = entry;
      } else {
        w->wlist[lbase + atomicAdd(&s_wq, 1)] = entry;
      }
    }
    const bool has_del[2] = {dc[0] != 0, dc[1] != 0};
    at[0] = need[0];
    at[1] = need[1];
    const long long tail = block_scan_items<2, long long>(at, sh_lscan);
    const long long dtot = block_scan_items<2, long long>(dc, sh_lscan);
    // the out-direction's totals: the prefixes at the in-direction's first position (q = Pc)
    if (both && tid == (Pc >> 1)) {
      s_split[0] = (Pc & 1) ? at[1] : at[0];  // (not at[Pc & 1]: a dynamic index puts at on the stack)
      s_split[1] = (Pc & 1) ? dc[1] : dc[0];
    }
    __syncthreads();  // s_split written
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      const int r = qr[j], dir = qe[j];
      if (r >= c) continue;
      const bool later = both && dir == 1;  // an in-direction entry after the out-direction's
      FuDir& D = w->dir[dir];
      const long long end = dir == 0 ? out_end : in_end;
      D.noff[r] = need[j] > 0 ? end + at[j] - (later ? s_split[0] : 0) : -1;
      if (!has_del[j]) continue;
      const long long g = dc[j] - (later ? s_split[1] : 0);
      D.dlead[static_cast<int>(g >> 32)] = r;
      D.dchunk[static_cast<int>(g >> 32)] = static_cast<int>(g & 0xffffffffLL);
    }
    if (tid == 0) {
      for (int e = both ? 0 : pass; e <= (both ? 1 : pass); ++e) {
        const long long t = !both ? tail : (e == 0 ? s_split[0] : tail - s_split[0]);
        const long long dt = !both ? dtot : (e == 0 ? s_split[1] : dtot - s_split[1]);
        w->ndel_groups[e] = static_cast<int>(dt >> 32);
        w->nchunks[e] = static_cast<int>(dt & 0xffffffffLL);
        sh_tail[e] = t;
        const long long end = e == 0 ? out_end : in_end;
        const long long size = e == 0 ? out_size : in_size;
        if (end + t > size) s_over |= e == 0 ? FU_OVER_OUT_TAIL : FU_OVER_IN_TAIL;
      }
    }
    __syncthreads();  // D complete (and, one direction at a time, sh_a free for the next)
    // ticks: [4] the out-direction's end; [5] the later of both (one pass: the same clock)
    if (pass == 0) fu_tick(w, 4);
    if (both) fu_tick(w, 5); else fu_tick_max(w, 5);
  }
  if (tid == 0) {  // this block's work lists (region 1 empty when one block planned both)
    const int b = split ? static_cast<int>(blockIdx.x) : 0;
    w->nlist[b][0] = s_tq;
    w->nlist[b][1] = s_wq;
    w->nlist[b][2] = s_bq;
    if (!split) w->nlist[1][0] = w->nlist[1][1] = w->nlist[1][2] = 0;
  }
  if (split) {  // the second block to finish completes the update (it reads the other's tail and bits)
    if (tid == 0) {
      w->plan_tail[blockIdx.x] = sh_tail[blockIdx.x];
      if (s_over != 0) atomicOr(&w->plan_over, s_over);
      __threadfence();  // the tail and the bits are visible before this block is counted
      s_last = atomicAdd(&w->plan_done, 1) == 1 ? 1 : 0;
    }
    __syncthreads();
    if (s_last == 0) return;  // uniform
    if (tid == 0) {
      __threadfence();
      const int o = 1 - static_cast<int>(blockIdx.x);
      s_over = *reinterpret_cast<volatile int*>(&w->plan_over);  // (volatile: from L2, not a stale L1 line)
      sh_tail[o] = *reinterpret_cast<volatile long long*>(&w->plan_tail[o]);
    }
    __syncthreads();
  }
  if (s_over != 0) {  // uniform (read after the barrier above)
    if (tid == 0) write_counters(counters, hcounters, s_over, 0, 0, 0, 0, 0, 0, out_end, in_end);
    return;
  }

  // ---------------------------------------------------------------- 5. commit: new ids (one block)
  for (int j = tid; j < nNew; j += FU_THREADS) {
    const long long x = w->new_ext[j];
    ext[n + j] = x;
    sr::hash_insert(hkeys, hvals, hmask, x, n + j);
  }
  // The lists: fast_update_scan and fast_update_commit, launched after this kernel, read the work
  // lists and their lengths from w.
  if (tid == 0) {
    write_counters(counters, hcounters, 0, nNew, nIa, nDa, m - nI - nD, nI - nIa, nD - nDa,
                   out_end + sh_tail[0], in_end + sh_tail[1]);
  }
}

// The last group g < G whose first chunk dchunk[g] is <= tt (dchunk increases from dchunk[0] = 0):
// each warp searches alone (all get the same answer, no barrier), 32 entries a round, so up to
// 2,048 groups take 3 dependent loads where a binary search took 11.
__device__ __forceinline__ int chunk_group(const int* dchunk, int G, int tt) {
  const int lane = static_cast<int>(threadIdx.x & 31);
  int lo = 0, len = G;
  while (len > 1) {  // uniform over the warp
    const int step = (len + 31) >> 5;
    const int i = lo + lane * step;
    const unsigned ok = __ballot_sync(SR_FULL_MASK, i < lo + len && dchunk[i] <= tt);
    const int k = 31 - __clz(static_cast<int>(ok));  // the last segment starting at or below tt (bit 0 is set)
    lo += k * step;
    len = len - k * step < step ? len - k * step : step;
  }
  return lo;
}

// The commit's deletion scan (step 6 above): chunk t of the lists that lose entries (out-direction chunks first),
// one chunk per block and round. Blocks of exactly FU_SCAN_THREADS threads, any grid. Returns at
// once when the first kernel reported an overflow (it then planned nothing).
__global__ void __launch_bounds__(FU_SCAN_THREADS)
fast_update_scan(const long long* __restrict__ out_off, const int* __restrict__ out_idx,
                 const long long* __restrict__ in_off, const int* __restrict__ in_idx, unsigned char* work,
                 const long long* __restrict__ counters) {
  if (blockDim.x != FU_SCAN_THREADS || counters[C_OVERFLOW] != 0) return;  // uniform
  FuWork* w = reinterpret_cast<FuWork*>(work);
  const int n0 = w->nchunks[0], total = n0 + w->nchunks[1];
  for (int t = blockIdx.x; t < total; t += gridDim.x) {  // uniform over the block
    const int dir = t < n0 ? 0 : 1;
    const int tt = dir == 0 ? t : t - n0;
    FuDir& D = w->dir[dir];
    const int lo = chunk_group(D.dchunk, w->ndel_groups[dir], tt);
    if (dir == 0) scan_chunk(D, D.dlead[lo], tt - D.dchunk[lo], out_off, out_idx);
    else scan_chunk(D, D.dlead[lo], tt - D.dchunk[lo], in_off, in_idx);
  }
  fu_tick_max(w, 10);
}

// The commit of the lists (step 6 above): every planned group by its writer (a thread, a warp or a block of the grid);
// each list belongs to one group and each group to one writer, so no two writers meet. Blocks of
// a multiple of 32 threads, any grid; returns at once after an overflow.
__global__ void __launch_bounds__(FU_COMMIT_THREADS)
fast_update_commit(long long* out_off, int* out_deg, int* out_cap, int* out_idx, long long* in_off, int* in_deg,
                   int* in_cap, int* in_idx, unsigned char* work, const long long* __restrict__ counters,
                   double* out_wt, double* in_wt) {
  if (counters[C_OVERFLOW] != 0) return;  // uniform
  FuWork* w = reinterpret_cast<FuWork*>(work);
  // the work lists' two regions (fast_update_plan: block b appended from b * FU_MAX on)
  const int t0 = w->nlist[0][0], w0 = w->nlist[0][1], b0 = w->nlist[0][2];
  const int tq = t0 + w->nlist[1][0], wq = w0 + w->nlist[1][1], bq = b0 + w->nlist[1][2];
  const int nt = static_cast<int>(gridDim.x * blockDim.x);
  const int gt = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  for (int i = gt; i < tq; i += nt) {
    const int e = w->tlist[i < t0 ? i : FU_MAX + i - t0];
    const int dir = e >> 16, r = e & 0xffff;
    if (dir == 0) thread_commit(w->dir[0], r, out_off, out_deg, out_cap, out_idx, out_wt);
    else thread_commit(w->dir[1], r, in_off, in_deg, in_cap, in_idx, in_wt);
  }
  for (int i = gt >> 5; i < wq; i += nt >> 5) {  // uniform over the warp
    const int e = w->wlist[i < w0 ? i : FU_MAX + i - w0];
    const int dir = e >> 16, r = e & 0xffff;
    const auto warp_sync = [] { __syncwarp(); };
    if (dir == 0) team_commit(w->dir[0], r, out_off, out_deg, out_cap, out_idx, out_wt, gt & 31, 32, warp_sync);
    else team_commit(w->dir[1], r, in_off, in_deg, in_cap, in_idx, in_wt, gt & 31, 32, warp_sync);
  }
  for (int h = blockIdx.x; h < bq; h += gridDim.x) {  // uniform over the block; team_commit synchronizes
    const int e = w->blist[h < b0 ? h : FU_MAX + h - b0];
    const int dir = e >> 16, r = e & 0xffff;
    const int tid = static_cast<int>(threadIdx.x), nt = static_cast<int>(blockDim.x);
    const auto block_sync = [] { __syncthreads(); };
    if (dir == 0) team_commit(w->dir[0], r, out_off, out_deg, out_cap, out_idx, out_wt, tid, nt, block_sync);
    else team_commit(w->dir[1], r, in_off, in_deg, in_cap, in_idx, in_wt, tid, nt, block_sync);
  }
  fu_tick_max(w, 6);
}
