// Device code shared by the rank kernels (pagerank.cu: one launch per phase; frontier_loop.cu:
// the whole DF/DF-P loop of a batch in one cooperative launch). The semantics are described at the
// top of pagerank.cu.
#pragma once

#include "common.cuh"

// Weighted graphs (the module compiled with -DSR_WEIGHTED=1, streamrank.rank.gpu.state): a
// vertex's out-weight W[v] (RankArgs.out_w) replaces its out-degree d(v) in the contributions and
// the closed forms, and a gather multiplies each in-neighbour's contribution by the weight of
// its in-edge (RankArgs.in_wt, sr::Slots). The unweighted build loads no weight: its gathers
// take sr::Unit, its masses are the out-degrees, and its arithmetic is what it was before
// weights existed, bit for bit. The lookahead (LooksAhead) is unweighted only; an explicit
// self-loop is solved in both (its weight found by own_loop_weight).
#ifndef SR_WEIGHTED
#define SR_WEIGHTED 0
#endif

namespace {

// `od` is a vertex's out-mass: its out-degree (int) or, weighted, its out-weight (double).
template <typename V, int SELF, typename D>
__device__ __forceinline__ V closed_form(V s, V alpha, D od, V base) {
  if (SELF) return (base + alpha * s) / (V(1) - alpha / V(od + 1));
  return base + alpha * s;
}

// The local-form value with the vertex's own explicit self-loop solved for (`own`): its term
// alpha * x / d(v) is left out of the in-sum `s` and divided out, x = (base + alpha * s) /
// (1 - alpha * loops / d(v)), loops = own + SELF. A vertex whose only out-edge is its own loop
// then gets its value in one update, where summing the loop shrinks its error by alpha per
// iteration. Without a loop this is closed_form, bit for bit.
template <typename V, int SELF, typename D>
__device__ __forceinline__ V solved_form(V s, V alpha, D od, V base, bool own) {
  if (!own) return closed_form<V, SELF>(s, alpha, od, base);
  return (base + alpha * s) / (V(1) - alpha * V(1 + SELF) / V(od + SELF));
}

// The same with the loop's weight `loop` (weighted graphs: the loop's share is loop / W).
template <typename V, int SELF>
__device__ __forceinline__ V solved_form_weighted(V s, V alpha, double od, V base, double loop) {
  return (base + alpha * s) / (V(1) - alpha * V(loop + SELF) / V(od + SELF));
}

template <typename V, int SELF, typename D>
__device__ __forceinline__ V contribution(V x, D od) {
  const D d = od + SELF;
  return d > 0 ? x / V(d) : V(0);
}

// Single-thread append (block kernels, where only thread 0 decides).
template <typename I>
__device__ __forceinline__ void append_split_one(I value, I degree, I switch_degree, I* small_list,
                                                 I* large_list, int* counters) {
  if (degree >= switch_degree) large_list[atomicAdd(counters + 1, 1)] = value;
  else small_list[atomicAdd(counters, 1)] = value;
}

// The decisions a rank kernel takes for one processed vertex (DF / DF-P).
struct Decision {
  bool keep;  // stays in the frontier for the next iteration
  bool flag;  // its out-neighbours must be marked
};

template <int MODE, typename D>
__device__ __forceinline__ Decision decide(double xn, double xo, D od, double tau_f, double tau_p) {
  Decision d{false, false};
  if (MODE == 0) return d;
  const double big = xn > xo ? xn : xo;
  const double rel = big > 0.0 ? fabs(xn - xo) / big : 0.0;
  d.flag = rel > tau_f && od > 0;
  d.keep = (MODE == 1) || rel > tau_p;
  return d;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// The arguments of one rank computation, in one device struct (built once per call by
// streamrank.rank.gpu.pagerank._Args): a launch then passes two scalars, which keeps the host-side
// launch cost of an iteration small. Layout: 25 pointers, 4 doubles, 1 long long, 4 ints.
template <typename I, typename V>
struct RankArgs {
  const long long* in_off;
  const I* in_deg;
  const I* in_idx;
  const long long* out_off;
  const I* out_deg;
  const I* out_idx;
  V* x;          // the iterate (local form x; for MODE 3 the standard-form y)
  V* cbuf[2];    // contributions: read cbuf[0], write cbuf[1] (MODE 3 alternates by parity)
  int* aff;      // affected flags (DF/DF-P)
  I* lists[6];   // pair A (small, large), pair B, flags (small, large)
  int* cnt;      // counters: A 0,1  B 2,3  flags 4,5  last-block ticket 6
  int* status;   // done, iterations, converged
  double* total; // sum of the iterate
  double* base;  // additive term: 1 (local form) or (alpha*D + (1-alpha)*T)/n (MODE 3)
  double* part;  // block results: max |dx| [0, nb), sum dx [nb, 2nb), dangling sum [2nb, 3nb)
  int* hist;     // vertices processed per iteration
  const double* in_wt;   // weighted build: the weight of every in-edge slot (else null)
  const double* out_wt;  // weighted build: the weight of every out-edge slot (else null)
  const double* out_w;   // weighted build: every vertex's out-weight W (else null)
  double alpha, tau_f, tau_p, tol;
  long long n;
  int max_iter, switch_degree, gt, gb;
};

// ---------------------------------------------------------------------------------------------
// One iteration = up to four launches, each reading its list length on the device:
//   rank_small  (gt blocks x 256 threads): thread per vertex, in-degree below the switch degree;
//   rank_large  (gb blocks x 64-256):      block per vertex, strided in-edge loop and a
//                                          shared-memory reduction, in-degree at or above it;
//   post_small  (gt blocks x 256):         commit cn -> c of the processed vertices, and marking
//                                          of out-neighbours of flagged vertices of small
//                                          out-degree, thread per vertex (DF/DF-P);
//   mark_large  (gb blocks x 64-256):      the same marking, block per vertex, for large
//                                          out-degree (DF/DF-P).
// The last launch of an iteration (rank_large for MODE 3, post_small for MODE 0, mark_large
// for DF/DF-P) ends with the last block to finish (ticket counter) running finish_iteration.
// Pull-based rank updates: one writer per vertex, no atomics on ranks; Jacobi (read c, write cn).
// Small blocks on the block path keep many large vertices in flight per multiprocessor.
#define SR_SMALL_THREADS 256  // the block-path kernels take any multiple of 32 up to 256

#include "rank_gather.cuh"

namespace {

template <typename I, typename V>
struct View {  // per-iteration view of RankArgs
  const V* c;
  V* cn;
  V alpha, base;
  I* next_small;
  I* next_large;
  int* next_count;
  int cur;
};

template <typename I, typename V, int MODE>
__device__ __forceinline__ View<I, V> view_of(const RankArgs<I, V>& a, int parity) {
  View<I, V> w;
  w.cur = (MODE == 1 || MODE == 2) ? parity : 0;
  const int nxt = 1 - w.cur;
  const bool swap = MODE == 3 && parity;
  w.c = a.cbuf[swap ? 1 : 0];
  w.cn = a.cbuf[swap ? 0 : 1];
  w.alpha = static_cast<V>(a.alpha);
  w.base = static_cast<V>(a.base[0]);
  w.next_small = a.lists[2 * nxt];
  w.next_large = a.lists[2 * nxt + 1];
  w.next_count = a.cnt + 2 * nxt;
  return w;
}

// Whether a mode's rank update solves an explicit self-loop for its own vertex: the local-form
// modes (0: DT, and ND's sweeps over every vertex; 1: DF; 2: DF-P), as the CPU backend's
// frontier steps do; MODE 3 (the standard form, like the sweeps of sweep.cu) sums it as any
// in-edge.
template <int MODE>
struct SolvesOwnLoop {
  static constexpr bool value = MODE != 3;
};

// Whether a mode's gathers read in-neighbours of out-degree 1 one step ahead (sr::defer_ahead): DF
// and DF-P in uniform mode, as the CPU backend's Jacobi frontier steps do.
template <int SELF, int MODE>
struct LooksAhead {
  static constexpr bool value = !SR_WEIGHTED && SELF == 0 && (MODE == 1 || MODE == 2);
};

// The gathers' edge weights of this build (sr::Unit unweighted: nothing loaded).
#if SR_WEIGHTED
using EdgeWeights = sr::Slots;
#else
using EdgeWeights = sr::Unit;
#endif

template <typename I, typename V>
__device__ __forceinline__ EdgeWeights edge_weights(const RankArgs<I, V>& a) {
#if SR_WEIGHTED
  return EdgeWeights{a.in_wt};
#else
  return EdgeWeights{};
#endif
}

// v's out-mass: its out-weight (weighted build) or `od`, its out-degree as the caller loaded it.
template <typename I, typename V>
__device__ __forceinline__ auto out_mass(const RankArgs<I, V>& a, I v, I od) {
#if SR_WEIGHTED
  return a.out_w[v];
#else
  return od;
#endif
}

// v's out-mass loaded here (one load: the out-weight, or the out-degree).
template <typename I, typename V>
__device__ __forceinline__ auto vertex_mass(const RankArgs<I, V>& a, long long v) {
#if SR_WEIGHTED
  return a.out_w[v];
#else
  return a.out_deg[v];
#endif
}

// The weight of v's explicit self-loop (weighted build; called only for a vertex whose gather met
// one): a scan of the shorter of its in- and out-list (the store keeps one edge per pair).
template <typename I, typename V>
__device__ double own_loop_weight(const RankArgs<I, V>& a, I v) {
  const I din = a.in_deg[v], dout = a.out_deg[v];
  const bool in = din <= dout;
  const long long o = in ? a.in_off[v] : a.out_off[v];
  const I* idx = in ? a.in_idx : a.out_idx;
  const double* wt = in ? a.in_wt : a.out_wt;
  const I d = in ? din : dout;
  for (I k = 0; k < d; ++k) {
    if (idx[o + k] == v) return wt[o + k];
  }
  return 0.0;
}

template <typename I, typename V>
__device__ __forceinline__ sr::Look<I, V> look_of(const RankArgs<I, V>& a, const View<I, V>& w) {
  return sr::Look<I, V>{a.in_off, a.in_deg, a.in_idx, a.out_deg, w.alpha, w.base};
}

// New value of v from its in-sum, bookkeeping of the change; returns the decision (DF/DF-P).
// `own`: v has an explicit self-loop, left out of `s` (the local-form modes; always false in MODE 3).
// FLAGS: the caller keeps DF-P's frontier membership in `aff`, so a pruned vertex's flag is
// cleared (the launch sequence); the cooperative loop keeps it in stamps (loop_marking.cuh) and
// passes false.
template <typename I, typename V, int SELF, int MODE, bool FLAGS = true>
__device__ __forceinline__ Decision update_vertex(const RankArgs<I, V>& a, const View<I, V>& w, I v, V s,
                                                  I od, V xo, double& lmax, double& lsum, double& ldang,
                                                  bool own = false) {
  const auto m = out_mass(a, v, od);
#if SR_WEIGHTED
  const V xn = own ? solved_form_weighted<V, SELF>(s, w.alpha, m, w.base, own_loop_weight(a, v))
                   : closed_form<V, SELF>(s, w.alpha, m, w.base);
#else
  const V xn = solved_form<V, SELF>(s, w.alpha, m, w.base, own);
#endif
  a.x[v] = xn;  // only this vertex's thread reads x[v]; others read contributions
  w.cn[v] = contribution<V, SELF>(xn, m);
  const double diff = static_cast<double>(xn) - static_cast<double>(xo);
  lmax = fmax(lmax, fabs(diff));
  lsum += diff;
  if (MODE == 3 && !SELF && od == 0) ldang += static_cast<double>(xn);
  const Decision dec =
      decide<(MODE == 1 || MODE == 2) ? MODE : 0>(static_cast<double>(xn), static_cast<double>(xo), od, a.tau_f, a.tau_p);
  if (FLAGS && MODE == 2 && !dec.keep) a.aff[v] = 0;
  return dec;
}

template <typename I, typename V>
__device__ __forceinline__ void write_block_results(const RankArgs<I, V>& a, int slot, double lmax, double lsum,
                                                    double ldang) {
  const int nb = a.gt + a.gb;
  a.part[slot] = lmax;
  a.part[nb + slot] = lsum;
  a.part[2 * nb + slot] = ldang;
}

// Second stage of the convergence check, run by the last block of an iteration's last launch:
// reduce the block results (max |dx|, sum dx, dangling sum), keep sum(x) current, record the
// iteration, decide (max|dx| / sum(x) < tol, or an empty frontier), zero the counters that the
// next iteration refills; MODE 3 computes the next base term. `scratch` holds 96 values.
template <typename I, typename V, int MODE>
__device__ void finish_iteration(const RankArgs<I, V>& a, const View<I, V>& w, double* scratch) {
  const int nb = a.gt + a.gb;
  double m = 0.0, s = 0.0, dang = 0.0;
  for (int i = threadIdx.x; i < nb; i += blockDim.x) {
    m = fmax(m, a.part[i]);
    s += a.part[nb + i];
    dang += a.part[2 * nb + i];
  }
  sr::block_max_sum(m, s, dang, scratch);  // scratch: 96 values
  if (threadIdx.x == 0) {
    const double t = a.total[0] + s;
    a.total[0] = t;
    if (MODE == 3) a.base[0] = (a.alpha * dang + (1.0 - a.alpha) * t) / static_cast<double>(a.n);
    const int it = a.status[1] + 1;
    a.status[1] = it;
    a.hist[it - 1] = a.cnt[2 * w.cur] + a.cnt[2 * w.cur + 1];
    bool conv = t > 0.0 && m / t < a.tol;
    if ((MODE == 1 || MODE == 2) && w.next_count[0] + w.next_count[1] == 0) conv = true;  // frontier empty
    a.status[2] = conv ? 1 : 0;
    if (conv || it >= a.max_iter) a.status[0] = 1;
    if (MODE == 1 || MODE == 2) {
      a.cnt[2 * w.cur] = 0;
      a.cnt[2 * w.cur + 1] = 0;
      a.cnt[4] = 0;
      a.cnt[5] = 0;
    }
    a.cnt[6] = 0;
  }
}

// True in every thread of the block that finished last among the grid's blocks.
__device__ __forceinline__ bool last_block_done(int* ticket, int* flag) {
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    *flag = atomicAdd(ticket, 1) == static_cast<int>(gridDim.x) - 1;
  }
  __syncthreads();
  const bool last = *flag != 0;
  if (last) __threadfence();
  return last;
}

// Marking of out-neighbours (DF/DF-P inside an iteration, DT's traversal outside): a
// neighbour u not yet affected becomes affected (aff[u] 0 -> 1) and is appended to the next
// lists, split by split_deg[u] vs switch_degree.
template <typename I>
__device__ __forceinline__ bool try_mark(int* aff, I u, bool valid) {
  return valid && aff[u] == 0 && atomicCAS(aff + u, 0, 1) == 0;
}

// Thread per vertex (out-list out_idx[o .. o + od), od = 0 for an idle lane). Every lane of
// the warp must call it: the loop runs to the warp's largest degree so that the
// warp-aggregated append stays convergent. Two out-edges per step: loads and CAS in flight
// together.
template <typename I>
__device__ __forceinline__ void mark_out_thread(const I* __restrict__ out_idx, long long o, I od, int* aff,
                                                const I* __restrict__ split_deg, I switch_degree, I* next_small,
                                                I* next_large, int* next_count) {
  const int widest = static_cast<int>(__reduce_max_sync(SR_FULL_MASK, static_cast<unsigned>(od)));
  for (int k = 0; k < widest; k += 2) {
    const I u0 = k < od ? out_idx[o + k] : I(0);
    const I u1 = k + 1 < od ? out_idx[o + k + 1] : I(0);
    const bool p0 = try_mark<I>(aff, u0, k < od);
    const bool p1 = try_mark<I>(aff, u1, k + 1 < od);
    sr::warp_append_split<I>(p0, u0, p0 ? split_deg[u0] : I(0), switch_degree, next_small, next_large, next_count);
    sr::warp_append_split<I>(p1, u1, p1 ? split_deg[u1] : I(0), switch_degree, next_small, next_large, next_count);
  }
}

// Block per vertex. Every thread of the block must call it (the round count is uniform over
// the block). Four out-edges per thread per round: loads and CAS in flight together.
template <typename I>
__device__ __forceinline__ void mark_out_block(const I* __restrict__ out_idx, long long o, I od, int* aff,
                                               const I* __restrict__ split_deg, I switch_degree, I* next_small,
                                               I* next_large, int* next_count) {
  constexpr int kUnroll = 4;
  for (I b0 = 0; b0 < od; b0 += kUnroll * blockDim.x) {
    I u[kUnroll];
    bool p[kUnroll];
#pragma unroll
    for (int j = 0; j < kUnroll; ++j) {
      const I k = b0 + j * blockDim.x + threadIdx.x;
      p[j] = k < od;
      u[j] = p[j] ? out_idx[o + k] : I(0);
    }
#pragma unroll
    for (int j = 0; j < kUnroll; ++j) p[j] = try_mark<I>(aff, u[j], p[j]);
#pragma unroll
    for (int j = 0; j < kUnroll; ++j) {
      sr::warp_append_split<I>(p[j], u[j], p[j] ? split_deg[u[j]] : I(0), switch_degree, next_small, next_large,
                               next_count);
    }
  }
}

}  // namespace
