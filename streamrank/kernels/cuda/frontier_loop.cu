// One batch's DF / DF-P rank update in one cooperative launch: the start of the iterate, the
// initial marks and the whole iteration loop (streamrank.rank.gpu.pagerank, docs/architecture.md).
//
// With a small frontier (a few thousand vertices) an iteration of pagerank.cu's launch sequence
// is bound by launches and their grids, not by work. Here a grid that is resident all at once
// runs the iterations itself, one grid-wide barrier each, and decides convergence on the device;
// the host uploads one argument buffer, launches once and reads the result once. Same semantics,
// decisions and arithmetic as the launch sequence (rank_small/rank_large/post_small/mark_large
// with MODE 1 or 2): Jacobi iterations, the same frontiers, so both give the same ranks and
// iteration counts.
//
// Iteration k reads the contributions of buffer B(k) = cbuf[k mod 2] and writes those of the
// vertices it updates into B(k+1), so nothing is committed between two barriers. Every vertex's
// value in B(k+1) must be current when iteration k+1 starts: F(k)'s are written by their update,
// and a vertex of F(k-1) that is not in F(k) has its value copied from B(k) (B(k+1) still holds
// the one from before iteration k-1). Frontier membership is told by iteration stamps
// (loop_marking.cuh), which also decide who appends a vertex to F(k+1).
//
// Iteration k, frontier pair F(k) (small and large lists, split by the larger degree):
//   copies:  v in F(k-1) and not in F(k): B(k+1)[v] = B(k)[v];
//   large:   block per vertex: in-edges gathered from B(k), the update, and when its
//            out-neighbours need marking, the block marks them into F(k+1);
//   small:   a group of SR_GROUP lanes per vertex while the list is short (else a thread per
//            vertex) gathers, updates and marks the same way;
//            kept vertices enter F(k+1) too; block results (max |dx|, sum dx) go into the
//            accumulators of iteration k (one atomicMax and one atomicAdd per block, into one
//            of SR_SPREAD copies); thread 0 of the grid zeroes the counters of F(k+2), which
//            nobody reads or writes during this phase;
//   barrier
//   decide:  warp 0 of every block combines the accumulators' copies, exactly (integers), so all
//            blocks agree bit for bit: sum(x) += sum dx; stop when max|dx| / sum(x) < tol, F(k+1)
//            is empty or max_iter is reached. Three accumulator sets rotate: a fast block may
//            already add into those of iteration k+1 while a slow one still reads iteration k's,
//            and threads of block 0 zero those of iteration k+2 during iteration k.
// Four frontier pairs rotate (F(k-1) is read for the copies while F(k+1) fills and F(k+2)'s
// counters are zeroed). If the frontier grows past `handover` vertices the loop stops
// (status[3] = pair + 1), leaves the current contributions in cbuf[0] and the next frontier's
// affected flags set, and the host continues with the launch sequence, whose wider grids suit
// large frontiers better.
#include <cooperative_groups.h>

#include "loop_marking.cuh"

namespace cg = cooperative_groups;

// Sources of at least this out-degree are marked by a block in phase M, smaller ones by a warp
// (NVRTC option -DSR_BLOCK_SOURCE=...).
#ifndef SR_BLOCK_SOURCE
#define SR_BLOCK_SOURCE 64
#endif
// Lanes per vertex of the group mode (short lists of small degree): 2, 4, 8, 16 or 32
// (NVRTC option -DSR_GROUP=...).
#ifndef SR_GROUP
#define SR_GROUP 8
#endif
// Short small lists take a warp per vertex (one pass over the list) or 16 lanes (up to two
// passes) before SR_GROUP lanes (1; 0: SR_GROUP lanes whatever the length) (-DSR_TIERS=...).
#ifndef SR_TIERS
#define SR_TIERS 1
#endif
// A small vertex kept in the frontier enters F(k+1) in its marking's first round: 1 in self-loop
// mode, 2 in both modes, 0 in neither (-DSR_FOLD=...).
#ifndef SR_FOLD
#define SR_FOLD 1
#endif
// Half-block teams for large lists longer than the grid: -1 in uniform mode only (below), 1 in
// both modes, 0 in neither (-DSR_HALVES=...).
#ifndef SR_HALVES
#define SR_HALVES -1
#endif
// The argument structs read from a shared-memory copy: bits 1 RankArgs, 2 LoopLists, 4 the LoopLists
// fields of the decision (-DSR_ARGS_SHARED=...).
#ifndef SR_ARGS_SHARED
#define SR_ARGS_SHARED 5
#endif
// Profiling (-DSR_TRACE=1, frontier_loop._LOOP_TRACE; streamrank/rank/gpu/frontier_loop.py has the
// layout): per warp and iteration, the device clock when its large-list work, its small-list work
// and its copies end, and its small groups and largest degrees; per iteration the list sizes.
#ifndef SR_TRACE
#define SR_TRACE 0
#endif
// Blocks of 256 threads that must fit one multiprocessor at once (the compiler keeps the registers
// per thread under 65,536 / (256 * blocks)), in self-loop and in uniform mode; the launch puts up to
// frontier_loop._LOOP_BLOCKS_PER_SM (4) per multiprocessor, as many as are resident
// (-DSR_MIN_BLOCKS_SELF=... / -DSR_MIN_BLOCKS_UNIFORM=...).
// Self-loop mode: 4 (64 registers, 36 / 72 bytes of spills), its loop 7% faster per batch on
// sx-mathoverflow than with 3 (80 registers, no spills); 5 (48 registers) was slower than 4.
// Uniform mode: 3 (80 registers); with 4 its read-ahead gathers spill 256 / 340 bytes and its loop
// was 4% slower.
#ifndef SR_MIN_BLOCKS_SELF
#define SR_MIN_BLOCKS_SELF 4
#endif
#ifndef SR_MIN_BLOCKS_UNIFORM
#define SR_MIN_BLOCKS_UNIFORM 3
#endif
// The iteration's sum dx is accumulated over the blocks in fixed point with this many fraction
// bits (2^-32, about 2.3e-10 per block result; integer additions are exact, so the sum does not
// depend on the order in which the blocks add and every run decides the same).
#define SR_FIXED 4294967296.0
// Copies of each accumulator, at most 32: the blocks' atomics spread over them (one address for
// all added about 2 us to a busy phase R); warp 0 combines the copies (NVRTC option
// -DSR_SPREAD=..., streamrank/rank/gpu/frontier_loop.py sizes the buffer from the same value).
#ifndef SR_SPREAD
#define SR_SPREAD 32
#endif
// The weighted store's graph update counts its reweighted pairs in this counter slot and lists
// them after its insertions (WC_REW in graph_weighted_fast.cu): a reweight acts as an insertion.
#define SR_COUNT_REWEIGHTED 12

// The lists of the loop and the batch, in one device struct (streamrank.rank.gpu.pagerank packs it).
template <typename I, typename V>
struct LoopLists {
  I* front[8];        // frontier pairs 0..3: small (larger degree < switch), large
  int* front_cnt[4];  // each pair's counters: [0] small, [1] large
  double* part;       // [gridDim.x] sums of x at the start, then the iterations' accumulators
                      // (8 bytes each), [3][2][SR_SPREAD], rotating: max |dx| (the bits of a
                      // non-negative double, atomicMax) and sum dx in fixed point (SR_FIXED,
                      // atomicAdd), block b adding into copy b mod SR_SPREAD
  unsigned* stamp;    // [2 * vertices] frontier stamps (loop_marking.cuh)
  long long handover; // stop and hand over when a frontier exceeds this many vertices
  long long warp_limit;  // lists up to this long take a group of lanes per vertex, not a thread
  const V* x_prev;    // the previous ranks (n_prev entries; new vertices start at 1)
  const long long* ins_src;  // the batch's changed edges (internal ids, sorted by source)
  const long long* del_src;
  const long long* del_dst;
  long long n_prev, n_ins, n_del;
  unsigned long long* ticks;  // profiling (or null): the device clock (ns), written by thread 0 of
                              // the grid: [0] start, [1] after phase I, [2] after phase M, then per
                              // iteration i [3 + 3i] its start, [4 + 3i] after its barrier
                              // ([5 + 3i] unused: the slot of a former second phase, kept so
                              // that the profiling scripts read every build); [3 + 3n]
                              // the end (n iterations)
  const long long* counts;    // null, or the counters of the graph update queued before this launch
                              // (graph_fast_update.cu: [0] overflow, [1] new vertices, [2] applied
                              // insertions, [3] applied deletions): then they give the vertex count
                              // (n_prev + new) and n_ins, n_del, and an overflow (the graph update
                              // wrote nothing) makes the loop return before it writes anything
  long long epoch;            // stamps of this batch are epoch + k (k <= max_iter), all above
                              // those of earlier batches
};

// *dst = *src by the block's threads, 8 bytes each (the argument structs hold 8-byte fields).
template <typename T>
__device__ __forceinline__ void copy_words(T* dst, const T* __restrict__ src) {
  static_assert(sizeof(T) % 8 == 0 && alignof(T) >= 8, "copy_words copies whole 8-byte words");
  const long long* s = reinterpret_cast<const long long*>(src);
  long long* d = reinterpret_cast<long long*>(dst);
  for (int i = threadIdx.x; i < static_cast<int>(sizeof(T) / 8); i += blockDim.x) d[i] = s[i];
}

// A lane count as a type (the group width of by_groups in frontier_loop).
template <int N>
struct Lanes {
  static constexpr int value = N;
};

using sr::device_ns;

// Entry t of frontier pair p: its small list's n_small entries, then its large list's.
template <typename I, typename V>
__device__ __forceinline__ I pair_entry(const LoopLists<I, V>& L, int p, long long n_small, long long t) {
  return t < n_small ? L.front[2 * p][t] : L.front[2 * p + 1][t - n_small];
}

// One batch's DF / DF-P rank update in one cooperative launch:
//   phase I: x = x_prev (new vertices at 1), c = x / d in both buffers, block sums of x; counters
//            and status zeroed (the one pass over all vertices);
//   barrier
//   phase M: initial marking into F(0): the targets of deletions (and in self-loop mode the
//            sources themselves), then the out-neighbours of every distinct source of a changed
//            edge (warp per source, block per source of out-degree >= SR_BLOCK_SOURCE);
//   barrier
//   then the iterations described above.
template <typename I, typename V, int SELF, int MODE>
__global__ void __launch_bounds__(256, SELF ? SR_MIN_BLOCKS_SELF : SR_MIN_BLOCKS_UNIFORM) frontier_loop(const RankArgs<I, V>* __restrict__ args,
                                                     const LoopLists<I, V>* __restrict__ lists) {
  __shared__ double scratch[64];
  __shared__ V vscratch[64];
  __shared__ int stop_code;  // 0: go on, 1: stop, 2: hand over
  __shared__ long long next_size[2];  // with stop_code: the next frontier pair's sizes
  __shared__ int team_flag[2];  // the team's vertex needs its out-neighbours marked
  // The launch's two argument structs, copied into shared memory once (SR_ARGS_SHARED): every
  // grid barrier invalidates the L1 cache (cooperative_groups' acquire), so their fields read from
  // global memory cost an L2 round trip again after each one, at the head of every iteration's
  // chains and of its decision.
  __shared__ RankArgs<I, V> args_copy;
  __shared__ LoopLists<I, V> lists_copy;
  cg::grid_group grid = cg::this_grid();
  // The LoopLists fields of the decision in shared memory too (SR_ARGS_SHARED 4): the frontier
  // pairs' counters and the hand-over size (LoopLists whole, bit 2, made the registers spill)
  __shared__ int* counters_of[4];
  __shared__ long long handover_at;
  if (SR_ARGS_SHARED) {
    if (SR_ARGS_SHARED & 1) copy_words(&args_copy, args);
    if (SR_ARGS_SHARED & 2) copy_words(&lists_copy, lists);
    if ((SR_ARGS_SHARED & 4) && threadIdx.x < 4) counters_of[threadIdx.x] = lists->front_cnt[threadIdx.x];
    if ((SR_ARGS_SHARED & 4) && threadIdx.x == 4) handover_at = lists->handover;
    __syncthreads();  // the copies are complete
  }
  const RankArgs<I, V>& a = (SR_ARGS_SHARED & 1) ? args_copy : *args;
  const LoopLists<I, V>& L = (SR_ARGS_SHARED & 2) ? lists_copy : *lists;
  const I sw = static_cast<I>(a.switch_degree);
  const int nblocks = gridDim.x;
  const int lane = threadIdx.x & 31;
  const long long tid = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  const long long stride = static_cast<long long>(nblocks) * blockDim.x;
  const long long wid = tid >> 5, nwarps = stride >> 5;
  View<I, V> w;
  w.alpha = static_cast<V>(a.alpha);
  w.base = V(1);  // the local form
  w.cur = 0;
  constexpr bool kLook = LooksAhead<SELF, MODE>::value;  // uniform DF/DF-P: sr::defer_ahead
  // Half-block teams for large lists longer than the grid: uniform mode, whose gathers read ahead
  // (its loop 9-10% faster per batch on sx-mathoverflow); in self-loop mode a hub's marking by
  // 128 threads took longer than two hubs one after the other (3-4% slower per batch).
  constexpr bool kHalves = SR_HALVES < 0 ? kLook : SR_HALVES != 0;
  // A small vertex kept in the frontier enters F(k+1) in its marking's first round
  // (loopmark::mark_strided<I, true>): self-loop mode, where it shortens the chain of a small
  // vertex; uniform mode's gathers need the registers (-DSR_FOLD: 1 self-loop
  // mode, 2 both, 0 neither). A large vertex's team always folds it (by_teams below).
  constexpr bool kFold = SR_FOLD == 2 || (SR_FOLD == 1 && !kLook);
  // The marking claims out-neighbours by the atomic alone (no plain read of the stamp first) in
  // self-loop mode: its loop 4-8% faster per batch on sx-mathoverflow; in uniform mode, whose
  // floods claim more stamps twice, about 1 us slower over 10,000 frontier vertices.
  constexpr bool kAtomic = !kLook;
  const sr::Look<I, V> look = look_of(a, w);
  const EdgeWeights wts = edge_weights(a);
  double* const init_part = L.part;
  unsigned long long* const acc = reinterpret_cast<unsigned long long*>(L.part + nblocks);  // [3][2][SR_SPREAD]
  const unsigned epoch = static_cast<unsigned>(L.epoch);
  long long n_all = a.n, n_ins = L.n_ins, n_del = L.n_del;
  if (L.counts) {  // the batch's sizes from the graph update on the device (no host round trip)
    if (L.counts[0] != 0) return;  // uniform: the graph update overflowed and changed nothing
    n_all = L.n_prev + L.counts[1];
    n_ins = L.counts[2];
#if SR_WEIGHTED
    n_ins += L.counts[SR_COUNT_REWEIGHTED];  // reweighted pairs, listed after the insertions
#endif
    n_del = L.counts[3];
  }

  // ---- phase I: the start of the iterate, one pass over all vertices
  if (L.ticks && tid == 0) L.ticks[0] = device_ns();
  if (tid == 0) {
    for (int j = 0; j < 4; ++j) L.front_cnt[j][0] = L.front_cnt[j][1] = 0;
    a.status[0] = a.status[1] = a.status[2] = a.status[3] = 0;
    a.base[0] = 1.0;
  }
  if (blockIdx.x == 0 && threadIdx.x < 6 * SR_SPREAD) acc[threadIdx.x] = 0;
  double s0 = 0.0;
  for (long long v = tid; v < n_all; v += stride) {
    const V xv = v < L.n_prev ? L.x_prev[v] : V(1);
    a.x[v] = xv;
    const V cv = contribution<V, SELF>(xv, vertex_mass(a, v));
    a.cbuf[0][v] = cv;
    a.cbuf[1][v] = cv;
    s0 += static_cast<double>(xv);
  }
  s0 = sr::block_sum(s0, scratch);
  if (threadIdx.x == 0) init_part[blockIdx.x] = s0;
  grid.sync();  // x, both buffers and the block sums are complete; every counter is zero
  if (L.ticks && tid == 0) L.ticks[1] = device_ns();

  // ---- phase M: the initial marks (into frontier pair 0, stamp epoch + 0)
  double total = 0.0;  // sum(x), kept by thread 0 of every block, identically
  {
    double t = 0.0;
    for (int j = threadIdx.x; j < nblocks; j += blockDim.x) t += init_part[j];
    total = sr::block_sum(t, scratch);
    if (tid == 0) a.total[0] = total;
  }
  const loopmark::NextFrontier<I> first{L.stamp, epoch, 0, a.in_deg, a.out_deg, sw, L.front[0], L.front[1],
                                        L.front_cnt[0]};
  const long long n_direct = SELF ? n_del + n_ins + n_del : n_del;
  for (long long b0 = tid - lane; b0 < n_direct; b0 += stride) {  // uniform over the warp
    const long long i = b0 + lane;
    bool pred = false;
    I u = 0, d = 0;
    if (i < n_direct) {
      const long long id = i < n_del ? L.del_dst[i]
                           : (i < n_del + n_ins ? L.ins_src[i - n_del] : L.del_src[i - n_del - n_ins]);
      u = static_cast<I>(id);
      pred = first.claim(u, true);
      if (pred) d = loopmark::split_key<I>(a.in_deg[u], a.out_deg[u]);
    }
    loopmark::warp_append_one<I>(pred, u, d, first);
  }
  const long long n_sources = n_ins + n_del;
  for (long long j = wid; j < n_sources; j += nwarps) {  // a warp per source; uniform over the warp
    const long long* arr = j < n_ins ? L.ins_src : L.del_src;
    const long long k = j < n_ins ? j : j - n_ins;
    if (k > 0 && arr[k - 1] == arr[k]) continue;  // sorted: a repeated source follows its first
    const I u = static_cast<I>(arr[k]);
    const I od = a.out_deg[u];
    if (od >= SR_BLOCK_SOURCE) continue;
    loopmark::mark_strided<I, false, kAtomic>(a.out_idx, a.out_off[u], od, od, lane, 32, first);
  }
  for (long long j = blockIdx.x; j < n_sources; j += nblocks) {  // a block per large source
    const long long* arr = j < n_ins ? L.ins_src : L.del_src;
    const long long k = j < n_ins ? j : j - n_ins;
    if (k > 0 && arr[k - 1] == arr[k]) continue;  // uniform over the block
    const I u = static_cast<I>(arr[k]);
    const I od = a.out_deg[u];
    if (od < SR_BLOCK_SOURCE) continue;
    loopmark::mark_strided<I, false, kAtomic>(a.out_idx, a.out_off[u], od, od, threadIdx.x, blockDim.x, first);
  }
  grid.sync();  // frontier pair 0 holds every initially affected vertex
  if (L.ticks && tid == 0) L.ticks[2] = device_ns();

  int it = 0, fi = 0;
  int code = 0;
  if (threadIdx.x == 0) {  // F(0)'s sizes; F(k+1)'s are loaded by iteration k's decision
    next_size[0] = L.front_cnt[0][0];
    next_size[1] = L.front_cnt[0][1];
  }
  __syncthreads();
  while (true) {
    if (L.ticks && tid == 0) L.ticks[3 + 3 * it] = device_ns();
    const int ni = (fi + 1) & 3, zi = (fi + 2) & 3, pi = (fi + 3) & 3;
    const I* cur_small = L.front[2 * fi];
    const I* cur_large = L.front[2 * fi + 1];
    const long long n0 = next_size[0], n1 = next_size[1];
    w.c = a.cbuf[it & 1];
    w.cn = a.cbuf[(it + 1) & 1];
    const loopmark::NextFrontier<I> nf{L.stamp, epoch + it + 1, (it + 1) & 1, a.in_deg, a.out_deg, sw,
                                       L.front[2 * ni], L.front[2 * ni + 1], L.front_cnt[ni]};
    unsigned long long* const it_acc = acc + 2 * SR_SPREAD * (it % 3);  // max copies, then sum copies

    double lmax = 0.0, lsum = 0.0, ldang = 0.0;
    constexpr int kTraceIts = 64;
    unsigned long long* const trace = (SR_TRACE && L.ticks && it < kTraceIts)
                                          ? L.ticks + 2048 + (static_cast<long long>(it) * nwarps + wid) * 4
                                          : nullptr;
    unsigned tr_units = 0, tr_mark = 0, tr_in = 0;
    if (SR_TRACE && trace && tid == 0) {
      L.ticks[2048 + kTraceIts * nwarps * 4 + 2 * it] = static_cast<unsigned long long>(n0);
      L.ticks[2048 + kTraceIts * nwarps * 4 + 2 * it + 1] = static_cast<unsigned long long>(n1);
    }
    // large list: a team per vertex gathers, updates and marks (the block, or with kHalves each half
    // of it when the list is longer than the grid's blocks: two vertices at once, where one block
    // took two in turn); the next vertex's id is loaded ahead
    auto by_teams = [&](auto width) {
      constexpr int W = decltype(width)::value;
      const int team = threadIdx.x / W, rank = threadIdx.x % W;
      // team t of every block after team t - 1 of all (blocks are 256 threads: __launch_bounds__)
      const long long unit = team * nblocks + blockIdx.x, units = (256 / W) * nblocks;
      I v_next = unit < n1 ? cur_large[unit] : I(0);
      for (long long i = unit; i < n1; i += units) {  // uniform over the team
        const I v = v_next;
        const long long o = a.in_off[v];
        const I dg = a.in_deg[v];
        const long long oo = a.out_off[v];
        const I od = a.out_deg[v];
        if (i + units < n1) v_next = cur_large[i + units];
        V xo = V(0);
        if (rank == 0) xo = a.x[v];  // issued before the gather so its latency overlaps it
        bool own = false;
        const V s = loopmark::team_gather<W, V, kLook>(w.c, a.in_idx, o, dg, vscratch, v, &own, look, wts);
        Decision dec{false, false};
        if (rank == 0) {
          dec = update_vertex<I, V, SELF, MODE, false>(a, w, v, s, od, xo, lmax, lsum, ldang, own);
          team_flag[team] = dec.flag ? 1 : 0;
        }
        loopmark::team_sync<W>(team);  // team_flag is set (set again only past the next gather's barriers)
        const I mark_deg = team_flag[team] ? od : I(0);
        // a kept vertex enters F(k+1) in the marking's first round (its claim and append beside
        // the marks', after the barrier: not before it)
        loopmark::mark_strided<I, true, kAtomic>(a.out_idx, oo, mark_deg, mark_deg, rank, W, nf, v,
                                                  loopmark::split_key<I>(dg, od), rank == 0 && dec.keep);
      }
    };
    if (kHalves && n1 > nblocks) {
      by_teams(Lanes<128>{});
    } else {
      by_teams(Lanes<256>{});
    }
    if (SR_TRACE && trace && lane == 0) trace[0] = device_ns();
    // small list: a group of lanes (or a thread) per vertex
    // The blocks with fewer large vertices (or teams busy with one) start it: the others' small
    // vertices would wait for them.
    const long long skip = (n1 % nblocks) * (blockDim.x >> 5);
    const long long swid = wid >= skip ? wid - skip : wid - skip + nwarps;
    auto by_groups = [&](auto width) {  // G lanes per vertex (1: a thread), 32 / G vertices per warp at once
      constexpr int G = decltype(width)::value;
      const int group = lane / G, sub = lane % G;
      for (long long b = swid * (32 / G); b < n0; b += nwarps * (32 / G)) {  // uniform over the warp
        const long long i = b + group;
        const bool valid = i < n0;
        const I v = valid ? cur_small[i] : I(0);
        const long long o = valid ? a.in_off[v] : 0;
        const I dg = valid ? a.in_deg[v] : I(0);
        const long long oo = valid ? a.out_off[v] : 0;  // every lane: the group marks together
        const I od = valid ? a.out_deg[v] : I(0);
        V xo = V(0);
        if (valid && sub == 0) xo = a.x[v];  // issued before the gather so its latency overlaps it
        bool own = false;
        const V s = sr::group_gather<G, V, true, kLook>(w.c, a.in_idx, o, dg, sub, v, &own, look, wts);
        Decision dec{false, false};
        if (valid && sub == 0) dec = update_vertex<I, V, SELF, MODE, false>(a, w, v, s, od, xo, lmax, lsum, ldang, own);
        const bool flag = __shfl_sync(SR_FULL_MASK, dec.flag, lane - sub);  // the group's lane 0 decided
        const I mark_deg = flag ? od : I(0);
        const I widest = static_cast<I>(__reduce_max_sync(SR_FULL_MASK, static_cast<unsigned>(mark_deg)));
        if (SR_TRACE) {
          ++tr_units;
          tr_mark = max(tr_mark, static_cast<unsigned>(widest));
          tr_in = max(tr_in, __reduce_max_sync(SR_FULL_MASK, static_cast<unsigned>(dg)));
        }
        const I key = loopmark::split_key<I>(dg, od);
        if (kFold) {  // a kept vertex enters F(k+1) in the marking's first round
          loopmark::mark_strided<I, true, kAtomic>(a.out_idx, oo, mark_deg, widest, sub, G, nf, v, key,
                                                    sub == 0 && dec.keep);
        } else {
          const bool keep = sub == 0 && dec.keep && nf.claim(v, true);
          // (two ballots and two atomics one after the other: loopmark::warp_append_one's atomics in
          // flight together spilled 8 / 72 more bytes (stores / loads) in uniform mode)
          sr::warp_append_split<I>(keep, v, key, sw, nf.small_list, nf.large_list, nf.counters);
          loopmark::mark_strided<I, false, kAtomic>(a.out_idx, oo, mark_deg, widest, sub, G, nf);
        }
      }
    };
    // the widest groups that take the list in one pass (a warp) or two (16 lanes), then
    // SR_GROUP lanes up to warp_limit (SR_TIERS 0: SR_GROUP lanes for every short list)
    if (SR_TIERS && n0 <= nwarps) {
      by_groups(Lanes<32>{});
    } else if (SR_TIERS && n0 <= 4 * nwarps) {
      by_groups(Lanes<16>{});
    } else if (n0 <= L.warp_limit) {
      by_groups(Lanes<SR_GROUP>{});
    } else {
      by_groups(Lanes<1>{});  // a thread per vertex (group_gather<1> sums as sr::thread_gather)
    }
    if (SR_TRACE && trace && lane == 0) {
      trace[1] = device_ns();
      unsigned smid;
      asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));  // the multiprocessor the warp runs on
      trace[2] = (static_cast<unsigned long long>(min(smid, 0xFFu)) << 52) |
                 (static_cast<unsigned long long>(min(tr_units, 0xFFFu)) << 40) |
                 (static_cast<unsigned long long>(min(tr_mark, 0xFFFFFu)) << 20) | min(tr_in, 0xFFFFFu);
    }
    // copies: F(k-1) without F(k), from the highest threads down (the least busy above)
    if (it > 0) {
      const unsigned in_cur = epoch + it;
      const int cur_slot = it & 1;
      const long long p0 = L.front_cnt[pi][0], p1 = L.front_cnt[pi][1];
      for (long long t = stride - 1 - tid; t < p0 + p1; t += stride) {
        const I v = pair_entry(L, pi, p0, t);
        if (__ldcg(L.stamp + 2 * static_cast<long long>(v) + cur_slot) != in_cur) w.cn[v] = w.c[v];
      }
    }
    if (SR_TRACE && trace && lane == 0) trace[3] = device_ns();
    sr::block_max_sum(lmax, lsum, scratch);
    if (threadIdx.x == 0) {  // results unused: reductions the memory system does without waiting
      const int copy = blockIdx.x % SR_SPREAD;
      if (lmax > 0.0) atomicMax(&it_acc[copy], static_cast<unsigned long long>(__double_as_longlong(lmax)));
      const long long q = llrint(lsum * SR_FIXED);
      if (q != 0) atomicAdd(&it_acc[SR_SPREAD + copy], static_cast<unsigned long long>(q));
    }
    if (tid == 0) {
      L.front_cnt[zi][0] = 0;
      L.front_cnt[zi][1] = 0;
    }
    if (blockIdx.x == 0 && threadIdx.x < 2 * SR_SPREAD) {  // iteration k+2's, read last in iteration k-1
      acc[2 * SR_SPREAD * ((it + 2) % 3) + threadIdx.x] = 0;
    }
    grid.sync();  // every update, copy, append and block result of the iteration is visible
    if (L.ticks && tid == 0) L.ticks[4 + 3 * it] = device_ns();

    // ---- decide (identically in every block): warp 0 combines the copies (exact: integer max and
    // sum), thread 0 decides
    // Thread 0 loads F(k+1)'s sizes beside the accumulators and passes them with the decision
    // (shared memory): the next iteration starts without that round trip.
    if (threadIdx.x < 32) {
      long long next = 0;
      if (threadIdx.x == 0) {
        const int* const next_cnt = (SR_ARGS_SHARED & 4) ? counters_of[ni] : L.front_cnt[ni];
        next_size[0] = next_cnt[0];
        next_size[1] = next_cnt[1];
        next = next_size[0] + next_size[1];
      }
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
        const bool conv = (total > 0.0 && m / total < a.tol) || next == 0;
        if (blockIdx.x == 0) {
          a.hist[it] = static_cast<int>(n0 + n1);
          a.status[1] = it + 1;
          a.status[2] = conv ? 1 : 0;
          a.total[0] = total;
        }
        const long long handover = (SR_ARGS_SHARED & 4) ? handover_at : L.handover;
        stop_code = (conv || it + 1 >= a.max_iter) ? 1 : (next > handover ? 2 : 0);
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
  if (code == 2) {  // the launch sequence takes over from frontier pair fi = F(it)
    // it expects the current contributions in cbuf[0] (they are in B(it)) and the affected flags
    // of F(it) set: B(it) differs from B(it - 1) = cbuf[0] only on F(it - 1)
    const int pl = (fi + 3) & 3;
    const long long l0 = L.front_cnt[pl][0], l1 = L.front_cnt[pl][1];
    if (it & 1) {
      for (long long t = tid; t < l0 + l1; t += stride) {
        const I v = pair_entry(L, pl, l0, t);
        a.cbuf[0][v] = a.cbuf[1][v];
      }
    }
    const long long c0 = L.front_cnt[fi][0], c1 = L.front_cnt[fi][1];
    for (long long t = tid; t < c0 + c1; t += stride) a.aff[pair_entry(L, fi, c0, t)] = 1;
    if (tid == 0) a.status[3] = fi + 1;
  } else if (tid == 0) {
    a.status[0] = 1;
  }
}
