// Frontier membership and out-neighbour marking of the cooperative loop (frontier_loop.cu).
//
// The loop runs an iteration as one phase between grid barriers, so a vertex's membership of the
// frontier being read, F(k), and of the one being built, F(k+1), must both be readable during
// the phase. Each vertex has two stamps (slot k mod 2): v is in F(k) exactly when
// stamp[2v + k mod 2] == epoch + k. Whoever raises the stamp of F(k+1)'s slot to epoch + k + 1
// first (atomicMax) appends v, once; F(k)'s slot is not written during iteration k. The host
// raises `epoch` past every stamp of earlier batches (frontier_loop.py), so nothing is cleared
// between batches.
//
// Frontier lists are split by the larger of a vertex's in- and out-degree: the small list
// (both below the switch degree) takes a group of lanes per vertex, which gathers its in-edges
// and marks its out-edges; the large list a block (or half a block, team_gather) per vertex.
#pragma once

#include "rank_common.cuh"

namespace loopmark {

// The key that splits the frontier lists.
template <typename I>
__device__ __forceinline__ I split_key(I in_deg, I out_deg) {
  return in_deg > out_deg ? in_deg : out_deg;
}

// Where iteration k's phase appends: the stamp value and slot of F(k+1), its lists, the
// degrees that split them.
template <typename I>
struct NextFrontier {
  unsigned* stamp;
  unsigned value;  // epoch + k + 1
  int slot;        // (k + 1) mod 2
  const I* in_deg;
  const I* out_deg;
  I switch_degree;
  I* small_list;
  I* large_list;
  int* counters;  // [0] small, [1] large

  // True for the one caller that enters v into F(k+1). With PLAIN_FIRST a plain read of the stamp
  // comes first and skips most repeats (a stale value there is only ever lower, and then the
  // atomic decides); without it, one round trip less and an atomic for every candidate (self-loop
  // mode's marking, frontier_loop.cu).
  template <bool PLAIN_FIRST = true>
  __device__ __forceinline__ bool claim(I v, bool valid) const {
    unsigned* s = stamp + 2 * static_cast<long long>(v) + slot;
    return valid && (!PLAIN_FIRST || *s != value) && atomicMax(s, value) < value;
  }
};

// Lanes append their claimed vertices u[j] (p[j]) of split keys key[j]: one atomic per list
// and warp for all N items of every lane, both lists' in flight together. Every lane of the warp
// must call it.
template <int N, typename I>
__device__ __forceinline__ void warp_append_many(const bool (&p)[N], const I (&u)[N], const I (&key)[N],
                                                 const NextFrontier<I>& nf) {
  int ns = 0, nl = 0;
#pragma unroll
  for (int j = 0; j < N; ++j) {
    ns += (p[j] && key[j] < nf.switch_degree) ? 1 : 0;
    nl += (p[j] && key[j] >= nf.switch_degree) ? 1 : 0;
  }
  const int lane = threadIdx.x & 31;
  int is, il, total_s, total_l;  // inclusive prefix sums over the lanes, and the warp's totals
  if constexpr (N == 1) {  // 0 or 1 per lane: ballots instead of scans
    const unsigned bs = __ballot_sync(SR_FULL_MASK, ns != 0), bl = __ballot_sync(SR_FULL_MASK, nl != 0);
    const unsigned upto = 0xffffffffu >> (31 - lane);  // lanes 0..lane
    is = __popc(bs & upto);
    il = __popc(bl & upto);
    total_s = __popc(bs);
    total_l = __popc(bl);
  } else {
    is = sr::warp_inclusive_sum(ns);
    il = sr::warp_inclusive_sum(nl);
    total_s = __shfl_sync(SR_FULL_MASK, is, 31);
    total_l = __shfl_sync(SR_FULL_MASK, il, 31);
  }
  int base_s = 0, base_l = 0;
  if (lane == 31) {  // both reservations in flight together
    if (total_s) base_s = atomicAdd(nf.counters, total_s);
    if (total_l) base_l = atomicAdd(nf.counters + 1, total_l);
  }
  int at_s = __shfl_sync(SR_FULL_MASK, base_s, 31) + is - ns;
  int at_l = __shfl_sync(SR_FULL_MASK, base_l, 31) + il - nl;
#pragma unroll
  for (int j = 0; j < N; ++j) {
    if (p[j]) {
      if (key[j] < nf.switch_degree) nf.small_list[at_s++] = u[j];
      else nf.large_list[at_l++] = u[j];
    }
  }
}

// warp_append_many for one item per lane: v (when p) of split key `key`.
template <typename I>
__device__ __forceinline__ void warp_append_one(bool p, I v, I key, const NextFrontier<I>& nf) {
  const bool ps[1] = {p};
  const I vs[1] = {v}, keys[1] = {key};
  warp_append_many<1, I>(ps, vs, keys, nf);
}

// Mark the out-neighbours out_idx[o + e], e = first, first + step, ... < od, four per lane and
// round (loads, claims and degree reads each in flight together); `widest` is the largest
// od over the warp, so that every lane runs the same rounds. With FOLD, the lanes where
// `extra_p` holds also enter `extra` (of split key `extra_key`) into F(k+1) in the first round
// (its claim and append beside those of the marks: a kept vertex's, no round trip of its own).
// With ATOMIC the claims skip their plain read (NextFrontier::claim<false>): one round trip less
// per round, an atomic for every candidate. Every lane of the warp must call it.
template <typename I, bool FOLD = false, bool ATOMIC = false>
__device__ __forceinline__ void mark_strided(const I* __restrict__ out_idx, long long o, I od, I widest, int first,
                                             int step, const NextFrontier<I>& nf, I extra = I(0),
                                             I extra_key = I(0), bool extra_p = false) {
  constexpr int kUnroll = 4;
  constexpr int kItems = FOLD ? kUnroll + 1 : kUnroll;
  const bool fold = FOLD && __any_sync(SR_FULL_MASK, extra_p);
  for (I b0 = 0; b0 < widest || (fold && b0 == 0); b0 += kUnroll * step) {  // uniform over the warp
    I u[kItems], key[kItems];
    bool p[kItems];
#pragma unroll
    for (int j = 0; j < kUnroll; ++j) {
      const I e = b0 + j * step + first;
      p[j] = e < od;
      u[j] = p[j] ? out_idx[o + e] : I(0);
    }
    if (FOLD) {
      p[kUnroll] = extra_p && b0 == 0;
      u[kUnroll] = extra;
    }
#pragma unroll
    for (int j = 0; j < kItems; ++j) p[j] = nf.template claim<!ATOMIC>(u[j], p[j]);
#pragma unroll
    for (int j = 0; j < kUnroll; ++j) key[j] = p[j] ? split_key<I>(nf.in_deg[u[j]], nf.out_deg[u[j]]) : I(0);
    if (FOLD) key[kUnroll] = extra_key;
    warp_append_many<kItems, I>(p, u, key, nf);
  }
}

// A barrier of the W threads of a team: the whole block (W == 256 == blockDim.x), or threads
// [team * W, (team + 1) * W) of two teams of 128 with named barrier 1 + team (barrier 0 is
// __syncthreads').
template <int W>
__device__ __forceinline__ void team_sync(int team) {
  if (W == 256) {
    __syncthreads();
  } else if (team == 0) {  // immediate ids: the kernel reserves these two, not all sixteen
    asm volatile("bar.sync 1, %0;" ::"n"(W) : "memory");
  } else {
    asm volatile("bar.sync 2, %0;" ::"n"(W) : "memory");
  }
}

// The in-sum of a large vertex by a team of W threads (sr::strided_gather): the sum and `own`
// in every thread of the team, summed in the same order by each. `scratch` holds 64 values
// (the warps' sums, then their own flags). Every thread of the team must call it.
template <int W, typename V, bool LOOK, typename C, typename I, typename WT>
__device__ __forceinline__ V team_gather(const C* __restrict__ c, const I* __restrict__ idx, long long o, I dg,
                                         V* scratch, I self, bool* own, const sr::Look<I, V>& look, const WT& wts) {
  const int team = threadIdx.x / W, warp = threadIdx.x >> 5;
  int mine = 0;
  V s = sr::strided_gather<V, true, LOOK>(c, idx, o, dg, static_cast<I>(threadIdx.x % W), static_cast<I>(W), self,
                                          mine, look, wts);
  s = sr::warp_sum(s);
  const bool any = __any_sync(SR_FULL_MASK, mine != 0);
  team_sync<W>(team);  // the team's previous sums are read
  if ((threadIdx.x & 31) == 0) {
    scratch[warp] = s;
    scratch[32 + warp] = any ? V(1) : V(0);
  }
  team_sync<W>(team);
  V t = V(0);
  bool o_any = false;
#pragma unroll
  for (int j = 0; j < W / 32; ++j) {
    t += scratch[team * (W / 32) + j];
    o_any |= scratch[32 + team * (W / 32) + j] != V(0);
  }
  *own = o_any;
  return t;
}

}  // namespace loopmark
