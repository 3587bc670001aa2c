// One batch's DF / DF-P rank update in one cooperative launch: the start of the iterate, the
// initial marks and the whole iteration loop (streamrank.pagerank_gpu, docs/GPU.md "Rank update:
// one launch per batch").
//
// With a small frontier (a few thousand vertices) an iteration of pagerank.cu's launch sequence
// is bound by launches and their grids, not by work. Here a grid that is resident all at once
// runs the iterations itself, separated by grid-wide barriers, and decides convergence on the
// device; the host uploads one argument buffer, launches once and reads the result once. Same semantics, decisions and
// arithmetic as the launch sequence (rank_small/rank_large/post_small/mark_large with MODE 1 or
// 2), so both give the same ranks and iteration counts.
//
// Iteration i, frontier pair F(i) (small and large lists, split by in-degree):
//   phase R: rank update of F(i) (block per vertex for the large list; for the small one a group
//            of SR_GROUP lanes per vertex while the list is short, so that a vertex's in-edges
//            are gathered in parallel and an iteration costs a few memory latencies, else a
//            thread per vertex);
//            kept vertices go to F(i+1), vertices whose out-neighbours need marking
//            to the flag pair G(i mod 2) (split by out-degree); block results (max |dx|, sum dx)
//            into the accumulators of iteration i (one atomicMax and one atomicAdd per block,
//            into one of SR_SPREAD copies);
//   barrier
//   phase P: commit cn -> c for F(i); mark the out-neighbours of G(i mod 2) into F(i+1) (group or
//            thread per flagged vertex of small out-degree by the same rule, block per large); thread 0
//            of the grid zeroes the counters of F(i+2) and G((i+1) mod 2), which nobody reads or
//            writes during this phase;
//   barrier
//   decide:  warp 0 of every block combines the accumulators' copies, exactly (integers), so
//            all blocks agree bit for bit: sum(x) += sum dx; stop when max|dx| / sum(x) < tol, F(i+1) is empty or
//            max_iter is reached. Three accumulator pairs rotate: a fast block may already add
//            into those of iteration i+1 while a slow one still reads iteration i's, and threads
//            of block 0 zero those of iteration i+2 in phase P of iteration i.
// Three frontier pairs rotate so that the counters of the pair about to be written can be zeroed
// without another barrier. On exit the affected flags of the last frontier are cleared, unless
// the frontier grew past `handover` vertices: then the loop stops (status[3] = pair + 1) and the
// host continues with the launch sequence, whose wider grids suit large frontiers better.
#include <cooperative_groups.h>

#include "rank_common.cuh"

namespace cg = cooperative_groups;

// Sources of at least this out-degree are marked by a block in phase M, smaller ones by a warp
// (NVRTC option -DSR_BLOCK_SOURCE=..., knob STREAMRANK_LOOP_BLOCK_SOURCE).
#ifndef SR_BLOCK_SOURCE
#define SR_BLOCK_SOURCE 64
#endif
// Phase P marks the out-neighbours of the small flag list balanced over edges (1,
// mark_out_packed in rank_common.cuh) or a group of lanes / a thread per flagged vertex (0)
// (-DSR_MARK_PACKED=..., knob STREAMRANK_LOOP_MARK_PACKED).
#ifndef SR_MARK_PACKED
#define SR_MARK_PACKED 1
#endif
// Lanes per vertex of the group mode (short lists of small degree): 2, 4, 8, 16 or 32
// (NVRTC option -DSR_GROUP=..., knob STREAMRANK_LOOP_GROUP).
#ifndef SR_GROUP
#define SR_GROUP 8
#endif
// Blocks of 256 threads that must fit one multiprocessor at once (the compiler keeps the registers
// per thread under 65,536 / (256 * SR_MIN_BLOCKS)); the launch puts up to
// STREAMRANK_LOOP_BLOCKS_PER_SM (4) per multiprocessor, as many as are resident (-DSR_MIN_BLOCKS=...;
// 4 caps the registers at 64, which made phase R slower than the 3 blocks of 85 it costs).
#ifndef SR_MIN_BLOCKS
#define SR_MIN_BLOCKS 3
#endif
// The iteration's sum dx is accumulated over the blocks in fixed point with this many fraction
// bits (2^-32, about 2.3e-10 per block result; integer additions are exact, so the sum does not
// depend on the order in which the blocks add and every run decides the same).
#define SR_FIXED 4294967296.0
// Copies of each accumulator, at most 32: the blocks' atomics spread over them (one address for
// all added about 2 us to a busy phase R); warp 0 combines the copies (NVRTC option
// -DSR_SPREAD=..., streamrank/rank_gpu/frontier_loop.py sizes the buffer from the same value).
#ifndef SR_SPREAD
#define SR_SPREAD 32
#endif

// The lists of the loop and the batch, in one device struct (streamrank.pagerank_gpu packs it).
template <typename I, typename V>
struct LoopLists {
  I* front[6];        // frontier pairs 0, 1, 2: small (in-degree < switch), large
  int* front_cnt[3];  // each pair's counters: [0] small, [1] large
  I* flags[4];        // flag pairs 0, 1: small (out-degree < switch), large
  int* flag_cnt[2];
  double* part;       // [gridDim.x] sums of x at the start, then the iterations' accumulators
                      // (8 bytes each), [3][2][SR_SPREAD], rotating: max |dx| (the bits of a
                      // non-negative double, atomicMax) and sum dx in fixed point (SR_FIXED,
                      // atomicAdd), block b adding into copy b mod SR_SPREAD
  long long handover; // stop and hand over when a frontier exceeds this many vertices
  long long warp_limit;  // lists up to this long take a group of lanes per vertex, not a thread
  const V* x_prev;    // the previous ranks (n_prev entries; new vertices start at 1)
  const long long* ins_src;  // the batch's changed edges (internal ids, sorted by source)
  const long long* del_src;
  const long long* del_dst;
  long long n_prev, n_ins, n_del;
  unsigned long long* ticks;  // profiling (or null): the device clock (ns), written by thread 0 of
                              // the grid: [0] start, [1] after phase I, [2] after phase M, then per
                              // iteration i [3 + 3i] its start, [4 + 3i] after phase R, [5 + 3i]
                              // after phase P; [3 + 3n] the end (n iterations)
  const long long* counts;    // null, or the counters of the graph update queued before this launch
                              // (graph_fast_update.cu: [0] overflow, [1] new vertices, [2] applied
                              // insertions, [3] applied deletions): then they give the vertex count
                              // (n_prev + new) and n_ins, n_del, and an overflow (the graph update
                              // wrote nothing) makes the loop return before it writes anything
};

__device__ __forceinline__ unsigned long long device_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// One batch's DF / DF-P rank update in one cooperative launch:
//   phase I: x = x_prev (new vertices at 1), c = x / d, block sums of x; counters and status
//            zeroed (the one pass over all vertices);
//   barrier
//   phase M: initial marking into F(0): the targets of deletions (and in self-loop mode the
//            sources themselves), then the out-neighbours of every distinct source of a changed
//            edge (warp per source, block per source of out-degree >= SR_BLOCK_SOURCE);
//   barrier
//   then the iterations described above.
template <typename I, typename V, int SELF, int MODE>
__global__ void __launch_bounds__(256, SR_MIN_BLOCKS) frontier_loop(const RankArgs<I, V>* __restrict__ args,
                                                     const LoopLists<I, V>* __restrict__ lists) {
  __shared__ double scratch[32];
  __shared__ V vscratch[32];
  __shared__ int stop_code;  // 0: go on, 1: stop, 2: hand over
  cg::grid_group grid = cg::this_grid();
  const RankArgs<I, V>& a = *args;
  const LoopLists<I, V>& L = *lists;
  const I sw = static_cast<I>(a.switch_degree);
  const int nblocks = gridDim.x;
  const int lane = threadIdx.x & 31;
  const long long tid = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  const long long stride = static_cast<long long>(nblocks) * blockDim.x;
  const long long wid = tid >> 5, nwarps = stride >> 5;
  constexpr int kGroups = 32 / SR_GROUP;  // vertices a warp takes at once in the group mode
  const int group = lane / SR_GROUP, sub = lane % SR_GROUP;
  View<I, V> w;
  w.c = a.cbuf[0];
  w.cn = a.cbuf[1];
  w.alpha = static_cast<V>(a.alpha);
  w.base = V(1);  // the local form
  w.cur = 0;
  constexpr bool kLook = LooksAhead<SELF, MODE>::value;  // uniform DF/DF-P: sr::defer_ahead
  const sr::Look<I, V> look = look_of(a, w);
  double* const init_part = L.part;
  unsigned long long* const acc = reinterpret_cast<unsigned long long*>(L.part + nblocks);  // [3][2][SR_SPREAD]
  long long n_all = a.n, n_ins = L.n_ins, n_del = L.n_del;
  if (L.counts) {  // the batch's sizes from the graph update on the device (no host round trip)
    if (L.counts[0] != 0) return;  // uniform: the graph update overflowed and changed nothing
    n_all = L.n_prev + L.counts[1];
    n_ins = L.counts[2];
    n_del = L.counts[3];
  }

  // ---- phase I: the start of the iterate, one pass over all vertices
  if (L.ticks && tid == 0) L.ticks[0] = device_ns();
  if (tid == 0) {
    for (int j = 0; j < 3; ++j) L.front_cnt[j][0] = L.front_cnt[j][1] = 0;
    for (int j = 0; j < 2; ++j) L.flag_cnt[j][0] = L.flag_cnt[j][1] = 0;
    a.status[0] = a.status[1] = a.status[2] = a.status[3] = 0;
    a.base[0] = 1.0;
  }
  if (blockIdx.x == 0 && threadIdx.x < 6 * SR_SPREAD) acc[threadIdx.x] = 0;
  double s0 = 0.0;
  for (long long v = tid; v < n_all; v += stride) {
    const V xv = v < L.n_prev ? L.x_prev[v] : V(1);
    a.x[v] = xv;
    a.cbuf[0][v] = contribution<V, SELF>(xv, a.out_deg[v]);
    s0 += static_cast<double>(xv);
  }
  s0 = sr::block_sum(s0, scratch);
  if (threadIdx.x == 0) init_part[blockIdx.x] = s0;
  grid.sync();  // x, c and the block sums are complete; every counter is zero
  if (L.ticks && tid == 0) L.ticks[1] = device_ns();

  // ---- phase M: the initial marks (into frontier pair 0)
  double total = 0.0;  // sum(x), kept by thread 0 of every block, identically
  {
    double t = 0.0;
    for (int j = threadIdx.x; j < nblocks; j += blockDim.x) t += init_part[j];
    total = sr::block_sum(t, scratch);
    if (tid == 0) a.total[0] = total;
  }
  const long long n_direct = SELF ? n_del + n_ins + n_del : n_del;
  for (long long b0 = tid - lane; b0 < n_direct; b0 += stride) {  // uniform over the warp
    const long long i = b0 + lane;
    bool pred = false;
    I u = 0, d = 0;
    if (i < n_direct) {
      const long long id = i < n_del ? L.del_dst[i]
                           : (i < n_del + n_ins ? L.ins_src[i - n_del] : L.del_src[i - n_del - n_ins]);
      u = static_cast<I>(id);
      pred = try_mark<I>(a.aff, u, true);
      if (pred) d = a.in_deg[u];
    }
    sr::warp_append_split<I>(pred, u, d, sw, L.front[0], L.front[1], L.front_cnt[0]);
  }
  const long long n_sources = n_ins + n_del;
  for (long long j = wid; j < n_sources; j += nwarps) {  // a warp per source; uniform over the warp
    const long long* arr = j < n_ins ? L.ins_src : L.del_src;
    const long long k = j < n_ins ? j : j - n_ins;
    if (k > 0 && arr[k - 1] == arr[k]) continue;  // sorted: a repeated source follows its first
    const I u = static_cast<I>(arr[k]);
    const I od = a.out_deg[u];
    if (od >= SR_BLOCK_SOURCE) continue;
    const long long o = a.out_off[u];
    for (I k0 = 0; k0 < od; k0 += 32) {
      const I q = k0 + lane;
      const I t = q < od ? a.out_idx[o + q] : I(0);
      const bool p = try_mark<I>(a.aff, t, q < od);
      sr::warp_append_split<I>(p, t, p ? a.in_deg[t] : I(0), sw, L.front[0], L.front[1], L.front_cnt[0]);
    }
  }
  for (long long j = blockIdx.x; j < n_sources; j += nblocks) {  // a block per large source
    const long long* arr = j < n_ins ? L.ins_src : L.del_src;
    const long long k = j < n_ins ? j : j - n_ins;
    if (k > 0 && arr[k - 1] == arr[k]) continue;  // uniform over the block
    const I u = static_cast<I>(arr[k]);
    const I od = a.out_deg[u];
    if (od < SR_BLOCK_SOURCE) continue;
    mark_out_block<I>(a.out_idx, a.out_off[u], od, a.aff, a.in_deg, sw, L.front[0], L.front[1], L.front_cnt[0]);
  }
  grid.sync();  // frontier pair 0 holds every initially affected vertex
  if (L.ticks && tid == 0) L.ticks[2] = device_ns();

  int it = 0, fi = 0;
  int code = 0;
  while (true) {
    if (L.ticks && tid == 0) L.ticks[3 + 3 * it] = device_ns();
    const int ni = fi == 2 ? 0 : fi + 1;
    const int zi = ni == 2 ? 0 : ni + 1;
    const int par = it & 1;
    const I* cur_small = L.front[2 * fi];
    const I* cur_large = L.front[2 * fi + 1];
    const long long n0 = L.front_cnt[fi][0], n1 = L.front_cnt[fi][1];
    w.next_small = L.front[2 * ni];
    w.next_large = L.front[2 * ni + 1];
    w.next_count = L.front_cnt[ni];
    I* flag_small = L.flags[2 * par];
    I* flag_large = L.flags[2 * par + 1];
    int* flag_cnt = L.flag_cnt[par];
    unsigned long long* const it_acc = acc + 2 * SR_SPREAD * (it % 3);  // max copies, then sum copies

    // ---- phase R: rank update of the frontier
    double lmax = 0.0, lsum = 0.0, ldang = 0.0;
    for (long long i = blockIdx.x; i < n1; i += nblocks) {  // uniform over the block
      const I v = cur_large[i];
      const long long o = a.in_off[v];
      const I dg = a.in_deg[v];
      bool own = false;
      const V s = sr::block_gather<V, true, kLook>(w.c, a.in_idx, o, dg, vscratch, v, &own, look);
      if (threadIdx.x == 0) {
        const Decision dec =
            update_vertex<I, V, SELF, MODE>(a, w, v, s, a.out_deg[v], a.x[v], lmax, lsum, ldang, own);
        if (dec.keep) append_split_one<I>(v, dg, sw, w.next_small, w.next_large, w.next_count);
        if (dec.flag) append_split_one<I>(v, a.out_deg[v], sw, flag_small, flag_large, flag_cnt);
      }
    }
    if (n0 <= L.warp_limit) {
      for (long long b = wid * kGroups; b < n0; b += nwarps * kGroups) {  // uniform over the warp
        const long long i = b + group;
        const bool valid = i < n0;
        const I v = valid ? cur_small[i] : I(0);
        const long long o = valid ? a.in_off[v] : 0;
        const I dg = valid ? a.in_deg[v] : I(0);
        I od = 0;
        V xo = V(0);
        if (valid && sub == 0) {  // issued before the gather so their latency overlaps it
          od = a.out_deg[v];
          xo = a.x[v];
        }
        bool own = false;
        const V s = sr::group_gather<SR_GROUP, V, true, kLook>(w.c, a.in_idx, o, dg, sub, v, &own, look);
        Decision dec{false, false};
        if (valid && sub == 0) dec = update_vertex<I, V, SELF, MODE>(a, w, v, s, od, xo, lmax, lsum, ldang, own);
        sr::warp_append_split<I>(dec.keep, v, dg, sw, w.next_small, w.next_large, w.next_count);
        sr::warp_append_split<I>(dec.flag, v, od, sw, flag_small, flag_large, flag_cnt);
      }
    } else {
      for (long long b0 = tid - lane; b0 < n0; b0 += stride) {  // uniform over the warp
        const long long i = b0 + lane;
        I v = 0, dg = 0, od = 0;
        Decision dec{false, false};
        if (i < n0) {
          v = cur_small[i];
          const long long o = a.in_off[v];
          dg = a.in_deg[v];
          od = a.out_deg[v];
          const V xo = a.x[v];
          bool own = false;
          const V s = sr::thread_gather<V, true, kLook>(w.c, a.in_idx, o, dg, v, &own, look);
          dec = update_vertex<I, V, SELF, MODE>(a, w, v, s, od, xo, lmax, lsum, ldang, own);
        }
        sr::warp_append_split<I>(dec.keep, v, dg, sw, w.next_small, w.next_large, w.next_count);
        sr::warp_append_split<I>(dec.flag, v, od, sw, flag_small, flag_large, flag_cnt);
      }
    }
    lmax = sr::block_max(lmax, scratch);
    lsum = sr::block_sum(lsum, scratch);
    if (threadIdx.x == 0) {  // results unused: reductions the memory system does without waiting
      const int copy = blockIdx.x % SR_SPREAD;
      if (lmax > 0.0) atomicMax(&it_acc[copy], static_cast<unsigned long long>(__double_as_longlong(lmax)));
      const long long q = llrint(lsum * SR_FIXED);
      if (q != 0) atomicAdd(&it_acc[SR_SPREAD + copy], static_cast<unsigned long long>(q));
    }
    grid.sync();  // every rank update, append and block result of phase R is visible
    if (L.ticks && tid == 0) L.ticks[4 + 3 * it] = device_ns();

    // ---- phase P: commit and marking
    for (long long t = tid; t < n0 + n1; t += stride) {
      const I v = t < n0 ? cur_small[t] : cur_large[t - n0];
      a.cbuf[0][v] = a.cbuf[1][v];
    }
    const long long f0 = flag_cnt[0], f1 = flag_cnt[1];
    if (SR_MARK_PACKED) {
      const long long per_warp = (f0 + nwarps - 1) / nwarps;
      const int pack = static_cast<int>(per_warp < 1 ? 1 : (per_warp > 32 ? 32 : per_warp));
      mark_out_packed<I>(flag_small, f0, pack, wid, nwarps, a.out_off, a.out_deg, a.out_idx, a.aff, a.in_deg, sw,
                         w.next_small, w.next_large, w.next_count);
    } else if (f0 <= L.warp_limit) {
      for (long long b = wid * kGroups; b < f0; b += nwarps * kGroups) {  // uniform over the warp
        const long long i = b + group;
        const bool valid = i < f0;
        const I v = valid ? flag_small[i] : I(0);
        const long long o = valid ? a.out_off[v] : 0;
        const I od = valid ? a.out_deg[v] : I(0);
        // the same trip count in every lane, for the warp-aggregated append
        const I widest = static_cast<I>(__reduce_max_sync(SR_FULL_MASK, static_cast<unsigned>(od)));
        for (I k0 = 0; k0 < widest; k0 += SR_GROUP) {
          const I k = k0 + sub;
          const I u = k < od ? a.out_idx[o + k] : I(0);
          const bool p = try_mark<I>(a.aff, u, k < od);
          sr::warp_append_split<I>(p, u, p ? a.in_deg[u] : I(0), sw, w.next_small, w.next_large, w.next_count);
        }
      }
    } else {
      for (long long b0 = tid - lane; b0 < f0; b0 += stride) {  // uniform over the warp
        const long long i = b0 + lane;
        const bool valid = i < f0;
        const I v = valid ? flag_small[i] : I(0);
        const I od = valid ? a.out_deg[v] : I(0);
        const long long o = valid ? a.out_off[v] : 0;
        mark_out_thread<I>(a.out_idx, o, od, a.aff, a.in_deg, sw, w.next_small, w.next_large, w.next_count);
      }
    }
    for (long long i = blockIdx.x; i < f1; i += nblocks) {  // uniform over the block
      const I v = flag_large[i];
      mark_out_block<I>(a.out_idx, a.out_off[v], a.out_deg[v], a.aff, a.in_deg, sw, w.next_small, w.next_large,
                        w.next_count);
    }
    if (tid == 0) {
      L.front_cnt[zi][0] = 0;
      L.front_cnt[zi][1] = 0;
      L.flag_cnt[1 - par][0] = 0;
      L.flag_cnt[1 - par][1] = 0;
    }
    if (blockIdx.x == 0 && threadIdx.x < 2 * SR_SPREAD) {  // iteration i+2's, read last in iteration i-1
      acc[2 * SR_SPREAD * ((it + 2) % 3) + threadIdx.x] = 0;
    }
    grid.sync();  // F(i+1) is complete; the counters of F(i+2) and G(i+1) are zero
    if (L.ticks && tid == 0) L.ticks[5 + 3 * it] = device_ns();

    // ---- decide (identically in every block): warp 0 combines the copies (exact: integer max and
    // sum), thread 0 decides
    if (threadIdx.x < 32) {
      unsigned long long mx = lane < SR_SPREAD ? __ldcg(&it_acc[lane]) : 0ULL;
      long long sm = lane < SR_SPREAD ? static_cast<long long>(__ldcg(&it_acc[SR_SPREAD + lane])) : 0LL;
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) {
        const unsigned long long mo = __shfl_down_sync(SR_FULL_MASK, mx, o);
        mx = mo > mx ? mo : mx;
        sm += __shfl_down_sync(SR_FULL_MASK, sm, o);
      }
      if (threadIdx.x == 0) {
        const double m = __longlong_as_double(static_cast<long long>(mx));
        total += static_cast<double>(sm) * (1.0 / SR_FIXED);
        const long long next = static_cast<long long>(L.front_cnt[ni][0]) + L.front_cnt[ni][1];
        const bool conv = (total > 0.0 && m / total < a.tol) || next == 0;
        if (blockIdx.x == 0) {
          a.hist[it] = static_cast<int>(n0 + n1);
          a.status[1] = it + 1;
          a.status[2] = conv ? 1 : 0;
          a.total[0] = total;
        }
        stop_code = (conv || it + 1 >= a.max_iter) ? 1 : (next > L.handover ? 2 : 0);
      }
    }
    __syncthreads();
    code = stop_code;
    ++it;
    fi = ni;
    if (code) break;
    // stop_code is written again only after the barriers of the next iteration's reductions.
  }
  if (L.ticks && tid == 0) L.ticks[3 + 3 * it] = device_ns();
  if (code == 2) {  // the launch sequence takes over from frontier pair fi
    if (tid == 0) a.status[3] = fi + 1;
    return;
  }
  const I* last_small = L.front[2 * fi];
  const I* last_large = L.front[2 * fi + 1];
  const long long c0 = L.front_cnt[fi][0], c1 = L.front_cnt[fi][1];
  for (long long t = tid; t < c0 + c1; t += stride) a.aff[t < c0 ? last_small[t] : last_large[t - c0]] = 0;
  if (tid == 0) a.status[0] = 1;
}
