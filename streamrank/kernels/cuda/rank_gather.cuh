// The in-edge gathers of the rank kernels (included by rank_common.cuh, after RankArgs).
#pragma once

// In-edge gathers shared by the rank kernels (pagerank.cu, frontier_loop.cu, sweep.cu): the sum
// of c[idx[o + k]] over k in [0, dg). Each lane adds its k = first, first + step, ... in that
// order (with LOOK: the plain values in that order, then the read-ahead ones in that order), so
// every kernel that uses the same helper gets the same bits. With SKIP (the local-form
// modes DT/DF/DF-P), an in-neighbour equal to `self` (an explicit self-loop) is left out of the
// sum and reported in `own` instead (solved_form divides it out).
namespace sr {

// The load of an in-edge index: each is read once per pass, so a kernel whose pass streams over
// every in-list (sweep.cu) defines SR_IDX_STREAM to load them as streaming data (evict first),
// which leaves more of L2 to the gathered contributions.
template <typename I>
__device__ __forceinline__ I load_idx(const I* p) {
#ifdef SR_IDX_STREAM
  return __ldcs(p);
#else
  return *p;
#endif
}

// The one-step lookahead of DF/DF-P in uniform mode (LooksAhead below): a gather reads an
// in-neighbour u of out-degree 1 (its one out-edge goes to the gathering vertex, so it has no
// self-loop and c[u] = x[u]) with at most SR_LOOK_MAX_IN in-edges as u's own Jacobi update from
// the same previous iterate, base + alpha * sum of c over u's in-neighbours (in list order),
// instead of c[u]. Uniform mode's extra iterations against self-loop mode come from error that
// returns to a vertex through such an in-neighbour (2-8-vertex frontiers lingering for 10-20
// iterations); reading it one step ahead closes the loop in half the iterations. The fixed point
// is the same: there u's update equals x[u]. The CPU's Jacobi steps do the same
// (streamrank/kernels/cpu/common.py, lookahead; LOOK_MAX_IN there is this bound).
#ifndef SR_LOOK_MAX_IN
#define SR_LOOK_MAX_IN 32
#endif

// The factor of a gather's term for in-edge slot e: none on an unweighted graph (Unit: the term
// is c[u] as it always was, no load), the slot's weight on a weighted one (Slots).
struct Unit {
  template <typename V, typename C>
  __device__ __forceinline__ V term(C cu, long long) const { return static_cast<V>(cu); }
};
struct Slots {
  const double* __restrict__ wt;
  template <typename V, typename C>
  __device__ __forceinline__ V term(C cu, long long e) const { return static_cast<V>(cu) * static_cast<V>(wt[e]); }
};
template <typename I, typename V>
struct Look {
  const long long* in_off;
  const I* in_deg;
  const I* in_idx;
  const I* out_deg;
  V alpha, base;
};

// Whether the in-edge from u is a lookahead candidate (out-degree 1, not the gathering vertex
// itself): its value is added after the plain ones (defer_ahead), so that the plain loads of a
// gather stay in flight together; a candidate of more than SR_LOOK_MAX_IN in-edges is then
// added plainly.
template <typename I, typename V>
__device__ __forceinline__ bool ahead_candidate(I u, I self, const Look<I, V>& look) {
  return look.out_deg[u] == I(1) && u != self;  // out_deg[u] is loaded beside c[u]
}

// The deferred value of a candidate u: u's update (above), or c[u] past SR_LOOK_MAX_IN.
template <typename V, typename C, typename I>
__device__ __forceinline__ V defer_ahead(const C* __restrict__ c, I u, const Look<I, V>& look) {
  const I dg = look.in_deg[u];
  if (dg > I(SR_LOOK_MAX_IN)) return static_cast<V>(c[u]);
  const long long o = look.in_off[u];
  V s = V(0);
  for (I k0 = 0; k0 < dg; k0 += 8) {  // 8 index loads, then 8 gathers in flight; sums in list order
    I e[8];
#pragma unroll
    for (int t = 0; t < 8; ++t) e[t] = k0 + t < dg ? look.in_idx[o + k0 + t] : I(-1);
#pragma unroll
    for (int t = 0; t < 8; ++t) s += e[t] >= 0 ? static_cast<V>(c[e[t]]) : V(0);
  }
  return look.base + look.alpha * s;
}

// A lane's candidates, met in its walk over in-edges first, first + step, ...: the first two
// are kept (registers, no indexing), a third makes the lane walk its in-edges again.
template <typename I>
struct Deferred {
  I a = I(0), b = I(0);
  int n = 0;
  __device__ __forceinline__ void add(I u) {
    a = n == 0 ? u : a;
    b = n == 1 ? u : b;
    ++n;
  }
};

// `s` plus the lane's candidates' deferred values, in list order.
template <typename V, typename C, typename I>
__device__ __forceinline__ V add_deferred(V s, const Deferred<I>& d, const C* __restrict__ c,
                                          const I* __restrict__ idx, long long o, I dg, I first, I step, I self,
                                          const Look<I, V>& look) {
  if (d.n == 0) return s;
  if (d.n <= 2) {
    s += defer_ahead<V>(c, d.a, look);
    if (d.n == 2) s += defer_ahead<V>(c, d.b, look);
    return s;
  }
  for (I k = first; k < dg; k += step) {
    const I u = load_idx(idx + o + k);
    if (ahead_candidate<I, V>(u, self, look)) s += defer_ahead<V>(c, u, look);
  }
  return s;
}

// By the G lanes of a group, `sub` being this lane's place in it; the sum lands in lane 0 of
// the group, `own` in every lane of it. Every lane of the warp must call it (full-mask shuffles
// and ballot). With LOOK, a lane adds its candidates after its plain values (add_deferred).
template <int G, typename V, bool SKIP = false, bool LOOK = false, typename C, typename I, typename WT = Unit>
__device__ __forceinline__ V group_gather(const C* __restrict__ c, const I* __restrict__ idx, long long o, I dg,
                                          int sub, I self = I(-1), bool* own = nullptr,
                                          const Look<I, V>& look = Look<I, V>{}, const WT& wts = WT{}) {
  V s = V(0);
  bool mine = false;
  Deferred<I> later;
#pragma unroll 4
  for (I k = sub; k < dg; k += G) {
    const I u = load_idx(idx + o + k);
    const V cu = wts.template term<V>(c[u], o + k);
    const bool ahead = LOOK && ahead_candidate<I, V>(u, self, look);
    if (ahead) later.add(u);
    if (SKIP) {
      mine |= u == self;
      s += (u == self || ahead) ? V(0) : cu;
    } else {
      s += ahead ? V(0) : cu;
    }
  }
  if (LOOK) s = add_deferred<V>(s, later, c, idx, o, dg, static_cast<I>(sub), static_cast<I>(G), self, look);
#pragma unroll
  for (int off = G / 2; off > 0; off >>= 1) s += __shfl_down_sync(SR_FULL_MASK, s, off, G);
  if (SKIP) {
    const unsigned bits = __ballot_sync(SR_FULL_MASK, mine);
    const unsigned group_mask = G == 32 ? 0xffffffffu : ((1u << (G & 31)) - 1u);
    *own = ((bits >> ((threadIdx.x & 31) & ~(G - 1))) & group_mask) != 0u;
  }
  return s;
}

// One thread's part of a gather by `step` threads, this one starting at `first`: it loads
// SR_GATHER_UNROLL indices, then issues as many gathers before it adds them, so that a hub of
// 100 k in-edges is not a long tail of dependent loads. With LOOK, a round's candidates are added
// after its plain values; with SKIP, `mine` is set when an in-edge comes from `self`.
#define SR_GATHER_UNROLL 8
template <typename V, bool SKIP, bool LOOK, typename C, typename I, typename WT = Unit>
__device__ __forceinline__ V strided_gather(const C* __restrict__ c, const I* __restrict__ idx, long long o, I dg,
                                            I first, I step, I self, int& mine, const Look<I, V>& look,
                                            const WT& wts = WT{}) {
  V s = V(0);
  for (I k0 = first; k0 < dg; k0 += SR_GATHER_UNROLL * step) {
    I e[SR_GATHER_UNROLL];
#pragma unroll
    for (int t = 0; t < SR_GATHER_UNROLL; ++t) {
      const I k = k0 + t * step;
      e[t] = k < dg ? load_idx(idx + o + k) : I(-1);
    }
    unsigned later = 0u;
#pragma unroll
    for (int t = 0; t < SR_GATHER_UNROLL; ++t) {
      if (SKIP) mine |= e[t] == self;
      const bool valid = e[t] >= 0 && (!SKIP || e[t] != self);
      const bool ahead = LOOK && valid && ahead_candidate<I, V>(e[t], self, look);
      if (LOOK) later |= static_cast<unsigned>(ahead) << t;
      s += (valid && !ahead) ? wts.template term<V>(c[e[t]], o + k0 + t * step) : V(0);
    }
    if (LOOK && later != 0u) {
#pragma unroll
      for (int t = 0; t < SR_GATHER_UNROLL; ++t) {  // static indices: e[] stays in registers
        if (later & (1u << t)) s += defer_ahead<V>(c, e[t], look);
      }
    }
  }
  return s;
}

// By the whole block (strided_gather). The sum lands in thread 0 (block_sum), `own` in every
// thread; `scratch` holds blockDim.x / 32 values. Every thread of the block must call it.
template <typename V, bool SKIP = false, bool LOOK = false, typename C, typename I, typename WT = Unit>
__device__ __forceinline__ V block_gather(const C* __restrict__ c, const I* __restrict__ idx, long long o, I dg,
                                          V* scratch, I self = I(-1), bool* own = nullptr,
                                          const Look<I, V>& look = Look<I, V>{}, const WT& wts = WT{}) {
  int mine = 0;
  const V s = strided_gather<V, SKIP, LOOK>(c, idx, o, dg, static_cast<I>(threadIdx.x), static_cast<I>(blockDim.x),
                                            self, mine, look, wts);
  if (SKIP) *own = __syncthreads_or(mine) != 0;
  return block_sum(s, scratch);
}

// The same by one thread (thread-per-vertex paths).
template <typename V, bool SKIP = false, bool LOOK = false, typename C, typename I, typename WT = Unit>
__device__ __forceinline__ V thread_gather(const C* __restrict__ c, const I* __restrict__ idx, long long o, I dg,
                                           I self = I(-1), bool* own = nullptr,
                                           const Look<I, V>& look = Look<I, V>{}, const WT& wts = WT{}) {
  V s = V(0);
  bool mine = false;
  Deferred<I> later;
#pragma unroll 4
  for (I k = 0; k < dg; ++k) {
    const I u = load_idx(idx + o + k);
    const V cu = wts.template term<V>(c[u], o + k);
    const bool ahead = LOOK && ahead_candidate<I, V>(u, self, look);
    if (ahead) later.add(u);
    if (SKIP) {
      mine |= u == self;
      s += (u == self || ahead) ? V(0) : cu;
    } else {
      s += ahead ? V(0) : cu;
    }
  }
  if (LOOK) s = add_deferred<V>(s, later, c, idx, o, dg, I(0), I(1), self, look);
  if (SKIP) *own = mine;
  return s;
}

}  // namespace sr
