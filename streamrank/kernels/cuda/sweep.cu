// Standard-form sweeps over every vertex (Static's first phase, warm, auto's warm part):
// y[v] = base + alpha * sum over in-neighbours u of c[u], c[u] = y[u] / d(u), with base and the
// convergence test kept by finish_iteration (rank_common.cuh) exactly as for MODE 3 of
// pagerank.cu. What differs from pagerank.cu's rank_small / rank_large (a thread per vertex
// below the switch degree, a 256-thread block per vertex above):
//
// - partition_buckets splits the vertices once per call by in-degree into four buckets and the
//   big list: below 4 in-edges a thread per vertex, 4..15 a group of 4 lanes, 16..63 a group of
//   16, 64 up to the big degree a warp, at or above it a block. Each vertex's in-edge indices
//   are then read by consecutive lanes (coalesced) and few lanes idle, with no per-edge
//   bookkeeping: the cost of an edge is one index load, one gather and one add;
// - sweep (one launch per sweep): some blocks walk the four buckets, the others take the big
//   list, a block per vertex with 8 independent gathers in flight per thread, so that a hub of
//   100 k in-edges is not one block's long tail and the two parts overlap;
// - warm sweeps run in place (the default, rank/gpu/sweeps.py; Static from scratch does not):
//   cbuf[0] and cbuf[1] are one buffer, so a vertex reads this sweep's value of an in-neighbour
//   updated before it (asynchronous relaxation; fewer sweeps, the same fixed point and test); an
//   8-byte aligned load or store is single-copy atomic, so a reader sees either value, never a
//   torn one;
// - the contributions may be stored as C = float while the iterate, its sums and the test stay
//   in V = double: the gathered vector is then half the bytes, at a cost in accuracy that
//   docs/architecture.md measures. The buffers cbuf[0..1] are V arrays; C values occupy their first
//   n * sizeof(C) bytes.
//
// List rows (RankArgs.lists) and counters during sweeps: 0 = bucket < 4, 1 = big, 2 = 4..15,
// 3 = 16..63, 4 = 64..big-1; the big degree is the argument struct's switch_degree.
// sweep reads status[0] first: once an iteration has converged, queued launches return. Its
// launch geometry is fixed (a.gt + a.gb blocks of SR_SMALL_THREADS) because every block writes
// its slot of the block results that finish_iteration reduces.
#define SR_IDX_STREAM  // every in-list is read once per sweep (rank_gather.cuh, load_idx)
#include "rank_common.cuh"

namespace {

template <typename I, typename V, typename C, int SELF>
__device__ __forceinline__ void sweep_commit(const RankArgs<I, V>& a, C* __restrict__ cn, V base, V alpha, I v,
                                             V s, I od, V yo, double& lmax, double& lsum, double& ldang) {
  const auto m = out_mass(a, v, od);  // the out-degree, or weighted the out-weight
  const V yn = closed_form<V, SELF>(s, alpha, m, base);
  a.x[v] = yn;
  cn[v] = static_cast<C>(contribution<V, SELF>(yn, m));
  const double diff = static_cast<double>(yn) - static_cast<double>(yo);
  lmax = fmax(lmax, fabs(diff));
  lsum += diff;
  if (!SELF && od == 0) ldang += static_cast<double>(yn);
}

// A group of G lanes per vertex over one bucket (G = 1: a thread per vertex), by the first
// `nblocks` blocks of the grid. Every lane of the warp calls it (the loop over the bucket is
// uniform over the warp; the shuffles are full-mask).
template <int G, typename I, typename V, typename C, int SELF>
__device__ __forceinline__ void bucket_pass(const RankArgs<I, V>& a, const View<I, V>& w, const C* c, C* cn,
                                            const I* __restrict__ list, long long count,
                                            int nblocks, double& lmax, double& lsum, double& ldang) {
  constexpr int kGroups = 32 / G;  // vertices a warp takes at once
  const int lane = threadIdx.x & 31;
  const int group = lane / G, sub = lane % G;
  const long long wid = (static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  const long long nwarps = (static_cast<long long>(nblocks) * blockDim.x) >> 5;
  const I* __restrict__ idx = a.in_idx;
  for (long long b = wid * kGroups; b < count; b += nwarps * kGroups) {  // uniform over the warp
    const long long i = b + group;
    const bool valid = i < count;
    const I v = valid ? list[i] : I(0);
    const long long o = valid ? a.in_off[v] : 0;
    const I dg = valid ? a.in_deg[v] : I(0);
    I od = 0;
    V yo = V(0);
    if (valid && sub == 0) {  // issued before the gather so their latency overlaps it
      od = a.out_deg[v];
      yo = a.x[v];
    }
    const V s = sr::group_gather<G, V>(c, idx, o, dg, sub, I(-1), nullptr, sr::Look<I, V>{}, edge_weights(a));
    if (valid && sub == 0) sweep_commit<I, V, C, SELF>(a, cn, w.base, w.alpha, v, s, od, yo, lmax, lsum, ldang);
  }
}

}  // namespace

// The degree split of every vertex into the four buckets and the big list (rows and counters
// as listed at the top; the counters must be zero). One pass over |V|, once per call. A block
// takes tiles of SR_PARTITION_ROUNDS * blockDim consecutive vertices: it counts each row's
// vertices of the tile (ballots, per warp), reserves each row's range with one global atomic per
// tile, then writes them. (A warp-aggregated append per warp and row put 1.4 M atomics on five
// counters at R-MAT 24, 0.38 ms of a 10 ms batch, H200.) The order within a row is by tile, then
// warp, then round: the sweeps' results do not depend on it.
#ifndef SR_PARTITION_ROUNDS
#define SR_PARTITION_ROUNDS 8
#endif
template <typename I>
__device__ __forceinline__ int bucket_row(I d, I big) {
  return d >= big ? 1 : (d < 4 ? 0 : (d < 16 ? 2 : (d < 64 ? 3 : 4)));
}

template <typename I, typename V>
__global__ void partition_buckets(const RankArgs<I, V>* __restrict__ args) {
  __shared__ int wcount[5][32];  // per row, per warp of the block (blockDim <= 1024)
  __shared__ int rbase[5];
  const RankArgs<I, V>& a = *args;
  const I big = static_cast<I>(a.switch_degree);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
  const unsigned below = (1u << lane) - 1u;
  const long long tile = static_cast<long long>(blockDim.x) * SR_PARTITION_ROUNDS;
  for (long long t0 = static_cast<long long>(blockIdx.x) * tile; t0 < a.n;
       t0 += static_cast<long long>(gridDim.x) * tile) {  // uniform over the block
    int cnt[5] = {0, 0, 0, 0, 0};
#pragma unroll
    for (int r = 0; r < SR_PARTITION_ROUNDS; ++r) {
      const long long i = t0 + static_cast<long long>(r) * blockDim.x + threadIdx.x;
      const int row = i < a.n ? bucket_row<I>(a.in_deg[i], big) : -1;
#pragma unroll
      for (int q = 0; q < 5; ++q) cnt[q] += __popc(__ballot_sync(SR_FULL_MASK, row == q));
    }
    if (lane == 0) {
#pragma unroll
      for (int q = 0; q < 5; ++q) wcount[q][warp] = cnt[q];
    }
    __syncthreads();
    if (threadIdx.x < 5) {
      const int q = threadIdx.x;
      int tot = 0;
      for (int w = 0; w < nwarps; ++w) tot += wcount[q][w];
      rbase[q] = tot ? atomicAdd(a.cnt + q, tot) : 0;
    }
    __syncthreads();
    int at[5];
#pragma unroll
    for (int q = 0; q < 5; ++q) {
      int before = 0;
      for (int w = 0; w < warp; ++w) before += wcount[q][w];
      at[q] = rbase[q] + before;
    }
#pragma unroll
    for (int r = 0; r < SR_PARTITION_ROUNDS; ++r) {
      const long long i = t0 + static_cast<long long>(r) * blockDim.x + threadIdx.x;
      const int row = i < a.n ? bucket_row<I>(a.in_deg[i], big) : -1;
#pragma unroll
      for (int q = 0; q < 5; ++q) {
        const unsigned b = __ballot_sync(SR_FULL_MASK, row == q);
        if (row == q) a.lists[q][at[q] + __popc(b & below)] = static_cast<I>(i);
        at[q] += __popc(b);
      }
    }
    __syncthreads();  // wcount and rbase are rewritten by the next tile
  }
}

// One launch per sweep: blocks [0, a.gt) walk the four buckets, blocks [a.gt, a.gt + a.gb) the big
// list, a block per vertex with SR_GATHER_UNROLL independent gathers in flight per thread, so that
// the two parts overlap and a hub of 100 k in-edges is not a long tail. The last block to finish
// runs finish_iteration. SR_SWEEP_MIN_BLOCKS (NVRTC -D, sweeps._MIN_BLOCKS) asks
// the compiler for that many resident blocks per multiprocessor (registers per thread).
#ifndef SR_SWEEP_MIN_BLOCKS
#define SR_SWEEP_MIN_BLOCKS 5
#endif
template <typename I, typename V, typename C, int SELF>
__global__ void __launch_bounds__(SR_SMALL_THREADS, SR_SWEEP_MIN_BLOCKS) sweep(const RankArgs<I, V>* __restrict__ args,
                                                                              int parity) {
  __shared__ double scratch[96];  // sr::block_max_sum of three values
  __shared__ V vscratch[32];
  __shared__ int last;
  const RankArgs<I, V>& a = *args;
  if (a.status[0]) return;  // uniform over the block: safe before the barriers below
  const View<I, V> w = view_of<I, V, 3>(a, parity);
  // c and cn are one buffer when the sweeps run in place (rank/gpu/sweeps.py): not restrict.
  const C* c = reinterpret_cast<const C*>(w.c);
  C* cn = reinterpret_cast<C*>(w.cn);
  double lmax = 0.0, lsum = 0.0, ldang = 0.0;
  if (static_cast<int>(blockIdx.x) < a.gt) {
    bucket_pass<32, I, V, C, SELF>(a, w, c, cn, a.lists[4], a.cnt[4], a.gt, lmax, lsum, ldang);
    bucket_pass<16, I, V, C, SELF>(a, w, c, cn, a.lists[3], a.cnt[3], a.gt, lmax, lsum, ldang);
    bucket_pass<4, I, V, C, SELF>(a, w, c, cn, a.lists[2], a.cnt[2], a.gt, lmax, lsum, ldang);
    bucket_pass<1, I, V, C, SELF>(a, w, c, cn, a.lists[0], a.cnt[0], a.gt, lmax, lsum, ldang);
    sr::block_max_sum(lmax, lsum, ldang, scratch);
  } else {
    const I* __restrict__ idx = a.in_idx;
    const I* __restrict__ list = a.lists[1];
    const long long count = a.cnt[1];
    for (long long i = blockIdx.x - a.gt; i < count; i += a.gb) {
      const I v = list[i];
      const long long o = a.in_off[v];
      const I dg = a.in_deg[v];
      I od = 0;
      V yo = V(0);
      if (threadIdx.x == 0) {  // issued before the gather so their latency overlaps it
        od = a.out_deg[v];
        yo = a.x[v];
      }
      const V s = sr::block_gather(c, idx, o, dg, vscratch, I(-1), nullptr, sr::Look<I, V>{}, edge_weights(a));
      if (threadIdx.x == 0) sweep_commit<I, V, C, SELF>(a, cn, w.base, w.alpha, v, s, od, yo, lmax, lsum, ldang);
    }
  }
  if (threadIdx.x == 0) write_block_results(a, blockIdx.x, lmax, lsum, ldang);
  if (last_block_done(a.cnt + 6, &last)) finish_iteration<I, V, 3>(a, w, scratch);
}

// cbuf[0] as C contributions of x (after init_state, which wrote them as V): one pass over |V|.
// Each thread reads x[v] and writes only C element v, which lies at or below byte 8 * v of the
// buffer, so no thread overwrites a V element another thread still needs (they read x, not c).
template <typename I, typename V, typename C, int SELF>
__global__ void contributions_as(const RankArgs<I, V>* __restrict__ args) {
  const RankArgs<I, V>& a = *args;
  C* __restrict__ c = reinterpret_cast<C*>(a.cbuf[0]);
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long v = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; v < a.n; v += stride) {
    c[v] = static_cast<C>(contribution<V, SELF>(a.x[v], vertex_mass(a, v)));
  }
}
