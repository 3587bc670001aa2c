// PageRank kernels of the GPU backend (streamrank.pagerank_gpu): pull-based rank updates in the
// local form, frontier marking, degree partition and reductions.
//
// Local form (docs/ARCHITECTURE.md): x[v] = 1 + alpha * S(v), S(v) = sum over in-neighbours u of
// c[u], with c[u] = x[u] / d(u) precomputed once per iteration ("contribution"), d(u) = outdeg(u)
// (+1 with SELF, the implicit self-loop, whose own term is solved in closed form:
// x[v] = (1 + alpha * S) / (1 - alpha / d(v))). Iterations are Jacobi: rank kernels read c and
// write the new contribution to cn; the post kernel commits cn -> c for the processed vertices
// (MODE 3, where every vertex is processed, alternates the two buffers instead).
//
// Template parameters: I = vertex index type (int), V = rank type (float or double), SELF = 1
// for dangling="self-loop", MODE = 0 (DT: a fixed list of vertices), 1 (DF: the frontier grows),
// 2 (DF-P: it grows and prunes), 3 (Static/ND: every vertex, iterating the standard form
// y = base + alpha * P^T y with base = (alpha * dangling mass + (1 - alpha) * sum(y)) / n, whose
// fixed point is y = base * x: the same ranks p = y / sum(y) = x / sum(x), reached in fewer
// iterations because the dominant error component is projected out every step; the host turns
// y into x = y / base at the end).
//
// Lists and counters live on the device: kernels read their list lengths there and loop over a
// fixed grid, so the host never needs a frontier size to launch. Every kernel first reads
// status[0] ("done"); once an iteration has declared convergence, launches already queued by the
// host return at once.
#include "common.cuh"

namespace {

template <typename V, int SELF>
__device__ __forceinline__ V closed_form(V s, V alpha, int od, V base) {
  if (SELF) return (base + alpha * s) / (V(1) - alpha / V(od + 1));
  return base + alpha * s;
}

template <typename V, int SELF>
__device__ __forceinline__ V contribution(V x, int od) {
  const int d = od + SELF;
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

template <int MODE>
__device__ __forceinline__ Decision decide(double xn, double xo, int od, double tau_f, double tau_p) {
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
// Partition: ids (or 0..n-1 when ids == nullptr) split into small/large lists by degree[] vs
// switch_degree, appended with warp-aggregated atomics (order kept within a warp).
template <typename I>
__global__ void partition_by_degree(const I* __restrict__ ids, long long n, const I* __restrict__ degree,
                                    I switch_degree, I* __restrict__ small_list,
                                    I* __restrict__ large_list, int* __restrict__ counters) {
  const int lane = threadIdx.x & 31;
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long base = static_cast<long long>(blockIdx.x) * blockDim.x + (threadIdx.x - lane); base < n;
       base += stride) {
    const long long i = base + lane;
    const bool valid = i < n;
    const I v = valid ? (ids ? ids[i] : static_cast<I>(i)) : I(0);
    const I d = valid ? degree[v] : I(0);
    sr::warp_append_split<I>(valid, v, d, switch_degree, small_list, large_list, counters);
  }
}

// Direct marking: every id not yet affected becomes affected and is appended (split by
// split_degree). Used for the initial marks of a batch and the seeds of DT's traversal.
template <typename I>
__global__ void mark_direct(const I* __restrict__ ids, long long n, int* __restrict__ aff,
                            const I* __restrict__ split_degree, I switch_degree, I* __restrict__ small_list,
                            I* __restrict__ large_list, int* __restrict__ counters) {
  const int lane = threadIdx.x & 31;
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long base = static_cast<long long>(blockIdx.x) * blockDim.x + (threadIdx.x - lane); base < n;
       base += stride) {
    const long long i = base + lane;
    bool pred = false;
    I w = 0, d = 0;
    if (i < n) {
      w = ids[i];
      pred = aff[w] == 0 && atomicCAS(aff + w, 0, 1) == 0;
      if (pred) d = split_degree[w];
    }
    sr::warp_append_split<I>(pred, w, d, switch_degree, small_list, large_list, counters);
  }
}

// ---------------------------------------------------------------------------------------------
// The arguments of one rank computation, in one device struct (built once per call by
// streamrank.pagerank_gpu._Args): a launch then passes two scalars, which keeps the host-side
// launch cost of an iteration small. Layout: 24 pointers, 4 doubles, 1 long long, 4 ints.
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

// New value of v from its in-sum, bookkeeping of the change; returns the decision (DF/DF-P).
template <typename I, typename V, int SELF, int MODE>
__device__ __forceinline__ Decision update_vertex(const RankArgs<I, V>& a, const View<I, V>& w, I v, V s,
                                                  I od, V xo, double& lmax, double& lsum, double& ldang) {
  const V xn = closed_form<V, SELF>(s, w.alpha, od, w.base);
  a.x[v] = xn;  // only this vertex's thread reads x[v]; others read contributions
  w.cn[v] = contribution<V, SELF>(xn, od);
  const double diff = static_cast<double>(xn) - static_cast<double>(xo);
  lmax = fmax(lmax, fabs(diff));
  lsum += diff;
  if (MODE == 3 && !SELF && od == 0) ldang += static_cast<double>(xn);
  const Decision dec =
      decide<(MODE == 1 || MODE == 2) ? MODE : 0>(static_cast<double>(xn), static_cast<double>(xo), od, a.tau_f, a.tau_p);
  if (MODE == 2 && !dec.keep) a.aff[v] = 0;
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
// next iteration refills; MODE 3 computes the next base term.
template <typename I, typename V, int MODE>
__device__ void finish_iteration(const RankArgs<I, V>& a, const View<I, V>& w, double* scratch) {
  const int nb = a.gt + a.gb;
  double m = 0.0, s = 0.0, dang = 0.0;
  for (int i = threadIdx.x; i < nb; i += blockDim.x) {
    m = fmax(m, a.part[i]);
    s += a.part[nb + i];
    dang += a.part[2 * nb + i];
  }
  m = sr::block_max(m, scratch);
  s = sr::block_sum(s, scratch);
  dang = sr::block_sum(dang, scratch);
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

template <typename I, typename V, int SELF, int MODE>
__global__ void __launch_bounds__(SR_SMALL_THREADS, 4) rank_small(const RankArgs<I, V>* __restrict__ args, int parity) {
  __shared__ double scratch[32];
  const RankArgs<I, V>& a = *args;
  if (a.status[0]) return;  // uniform over the block: safe before the barriers below
  const View<I, V> w = view_of<I, V, MODE>(a, parity);
  const I sw = static_cast<I>(a.switch_degree);
  const I* list = a.lists[2 * w.cur];
  const long long count = a.cnt[2 * w.cur];
  const int lane = threadIdx.x & 31;
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  double lmax = 0.0, lsum = 0.0, ldang = 0.0;
  for (long long b0 = static_cast<long long>(blockIdx.x) * blockDim.x + (threadIdx.x - lane); b0 < count; b0 += stride) {
    const long long i = b0 + lane;
    I v = 0, dg = 0, od = 0;
    Decision dec{false, false};
    if (i < count) {
      v = list[i];
      const long long o = a.in_off[v];
      dg = a.in_deg[v];
      od = a.out_deg[v];  // issued before the gather so its latency overlaps it
      const V xo = a.x[v];
      V s = V(0);
#pragma unroll 4
      for (I k = 0; k < dg; ++k) s += w.c[a.in_idx[o + k]];
      dec = update_vertex<I, V, SELF, MODE>(a, w, v, s, od, xo, lmax, lsum, ldang);
    }
    if (MODE == 1 || MODE == 2) {
      sr::warp_append_split<I>(dec.keep, v, dg, sw, w.next_small, w.next_large, w.next_count);
      sr::warp_append_split<I>(dec.flag, v, od, sw, a.lists[4], a.lists[5], a.cnt + 4);
    }
  }
  lmax = sr::block_max(lmax, scratch);
  lsum = sr::block_sum(lsum, scratch);
  ldang = sr::block_sum(ldang, scratch);
  if (threadIdx.x == 0) write_block_results(a, blockIdx.x, lmax, lsum, ldang);
}

template <typename I, typename V, int SELF, int MODE>
__global__ void __launch_bounds__(256) rank_large(const RankArgs<I, V>* __restrict__ args, int parity) {
  __shared__ double scratch[32];
  __shared__ V vscratch[32];
  __shared__ int last;
  const RankArgs<I, V>& a = *args;
  if (a.status[0]) return;
  const View<I, V> w = view_of<I, V, MODE>(a, parity);
  const I sw = static_cast<I>(a.switch_degree);
  const I* list = a.lists[2 * w.cur + 1];
  const long long count = a.cnt[2 * w.cur + 1];
  double lmax = 0.0, lsum = 0.0, ldang = 0.0;
  // Software pipelining: the next vertex's id is loaded at the top of an iteration and its
  // offset and degree right after this vertex's gather, so those dependent loads overlap work.
  I v_next = 0, dg_next = 0;
  long long o_next = 0;
  if (static_cast<long long>(blockIdx.x) < count) {
    v_next = list[blockIdx.x];
    o_next = a.in_off[v_next];
    dg_next = a.in_deg[v_next];
  }
  for (long long i = blockIdx.x; i < count; i += gridDim.x) {
    const I v = v_next;
    const long long o = o_next;
    const I dg = dg_next;
    const long long j = i + gridDim.x;
    const bool more = j < count;
    if (more) v_next = list[j];
    I od = 0;
    V xo = V(0);
    if (threadIdx.x == 0) {  // issued before the gather so their latency overlaps it
      od = a.out_deg[v];
      xo = a.x[v];
    }
    V s = V(0);
#pragma unroll 8
    for (I k = threadIdx.x; k < dg; k += blockDim.x) s += w.c[a.in_idx[o + k]];  // 8 gathers in flight
    s = sr::block_sum(s, vscratch);
    if (more) {
      o_next = a.in_off[v_next];
      dg_next = a.in_deg[v_next];
    }
    if (threadIdx.x == 0) {
      const Decision dec = update_vertex<I, V, SELF, MODE>(a, w, v, s, od, xo, lmax, lsum, ldang);
      if (MODE == 1 || MODE == 2) {
        if (dec.keep) append_split_one<I>(v, dg, sw, w.next_small, w.next_large, w.next_count);
        if (dec.flag) append_split_one<I>(v, od, sw, a.lists[4], a.lists[5], a.cnt + 4);
      }
    }
  }
  if (threadIdx.x == 0) write_block_results(a, a.gt + blockIdx.x, lmax, lsum, ldang);
  if (MODE == 3 && last_block_done(a.cnt + 6, &last)) finish_iteration<I, V, MODE>(a, w, scratch);
}

template <typename I, typename V, int MODE>
__global__ void __launch_bounds__(SR_SMALL_THREADS) post_small(const RankArgs<I, V>* __restrict__ args, int parity) {
  __shared__ double scratch[32];
  __shared__ int last;
  const RankArgs<I, V>& a = *args;
  if (a.status[0]) return;
  const View<I, V> w = view_of<I, V, MODE>(a, parity);
  const I sw = static_cast<I>(a.switch_degree);
  const long long tid = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  const long long n0 = a.cnt[2 * w.cur], n1 = a.cnt[2 * w.cur + 1];
  const I* cs = a.lists[2 * w.cur];
  const I* cl = a.lists[2 * w.cur + 1];
  for (long long t = tid; t < n0 + n1; t += stride) {
    const I v = t < n0 ? cs[t] : cl[t - n0];
    a.cbuf[0][v] = a.cbuf[1][v];
  }
  if (MODE == 1 || MODE == 2) {
    const int lane = threadIdx.x & 31;
    const long long fc = a.cnt[4];
    for (long long b0 = tid - lane; b0 < fc; b0 += stride) {
      const long long i = b0 + lane;
      const bool valid = i < fc;
      const I v = valid ? a.lists[4][i] : I(0);
      const I od = valid ? a.out_deg[v] : I(0);
      const long long o = valid ? a.out_off[v] : 0;
      mark_out_thread<I>(a.out_idx, o, od, a.aff, a.in_deg, sw, w.next_small, w.next_large, w.next_count);
    }
  }
  if (MODE == 0 && last_block_done(a.cnt + 6, &last)) finish_iteration<I, V, MODE>(a, w, scratch);
}

template <typename I, typename V, int MODE>
__global__ void __launch_bounds__(256) mark_large(const RankArgs<I, V>* __restrict__ args, int parity) {
  __shared__ double scratch[32];
  __shared__ int last;
  const RankArgs<I, V>& a = *args;
  if (a.status[0]) return;
  const View<I, V> w = view_of<I, V, MODE>(a, parity);
  const I sw = static_cast<I>(a.switch_degree);
  const long long fc = a.cnt[5];
  I v_next = 0, od_next = 0;  // software pipelining, as in rank_large
  long long o_next = 0;
  if (static_cast<long long>(blockIdx.x) < fc) {
    v_next = a.lists[5][blockIdx.x];
    o_next = a.out_off[v_next];
    od_next = a.out_deg[v_next];
  }
  for (long long i = blockIdx.x; i < fc; i += gridDim.x) {
    const long long o = o_next;
    const I od = od_next;
    const long long nx = i + gridDim.x;
    if (nx < fc) v_next = a.lists[5][nx];
    mark_out_block<I>(a.out_idx, o, od, a.aff, a.in_deg, sw, w.next_small, w.next_large, w.next_count);
    if (nx < fc) {
      o_next = a.out_off[v_next];
      od_next = a.out_deg[v_next];
    }
  }
  if (last_block_done(a.cnt + 6, &last)) finish_iteration<I, V, MODE>(a, w, scratch);
}

// ---------------------------------------------------------------------------------------------
// After the rank kernels: commit cn -> c for the vertices of the current lists (when
// commit_count is non-null) and mark the out-neighbours of the flagged vertices of small
// out-degree, thread per vertex (the inner loop runs to the warp's largest degree so that the
// warp-aggregated append stays convergent). Newly affected vertices are appended to the next
// lists, split by split_degree.
template <typename I, typename V>
__global__ void post_thread(const I* __restrict__ cur_small, const I* __restrict__ cur_large,
                            const int* __restrict__ commit_count, const V* __restrict__ cn,
                            V* __restrict__ c, const I* __restrict__ flag_small,
                            const int* __restrict__ flag_count, const long long* __restrict__ out_off,
                            const I* __restrict__ out_deg, const I* __restrict__ out_idx,
                            const I* __restrict__ split_degree, int* __restrict__ aff,
                            I* __restrict__ next_small, I* __restrict__ next_large,
                            int* __restrict__ next_count, I switch_degree, const int* __restrict__ status) {
  if (status[0]) return;
  const long long tid = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  if (commit_count) {
    const long long n0 = commit_count[0], n1 = commit_count[1];
    for (long long t = tid; t < n0 + n1; t += stride) {
      const I v = t < n0 ? cur_small[t] : cur_large[t - n0];
      c[v] = cn[v];
    }
  }
  if (!flag_count) return;
  const long long fc = flag_count[0];
  const int lane = threadIdx.x & 31;
  for (long long base = tid - lane; base < fc; base += stride) {
    const long long i = base + lane;
    const bool valid = i < fc;
    const I v = valid ? flag_small[i] : I(0);
    const I od = valid ? out_deg[v] : I(0);
    const long long o = valid ? out_off[v] : 0;
    mark_out_thread<I>(out_idx, o, od, aff, split_degree, switch_degree, next_small, next_large, next_count);
  }
}

// Marking of out-neighbours of flagged vertices of large out-degree, block per vertex.
template <typename I>
__global__ void mark_block(const I* __restrict__ flag_large, const int* __restrict__ flag_count,
                           const long long* __restrict__ out_off, const I* __restrict__ out_deg,
                           const I* __restrict__ out_idx, const I* __restrict__ split_degree,
                           int* __restrict__ aff, I* __restrict__ next_small, I* __restrict__ next_large,
                           int* __restrict__ next_count, I switch_degree, const int* __restrict__ status) {
  if (status[0]) return;
  const long long fc = flag_count[1];
  for (long long i = blockIdx.x; i < fc; i += gridDim.x) {
    const I v = flag_large[i];
    mark_out_block<I>(out_idx, out_off[v], out_deg[v], aff, split_degree, switch_degree, next_small, next_large,
                      next_count);
  }
}

// ---------------------------------------------------------------------------------------------
// Start of an update (the one pass over all vertices that remains per call): x = x_prev
// extended with 1 for the n - n_prev new vertices, c = x / d, block sums of x and of the
// dangling entries; start_totals then sets total and base. For MODE 3 (standard form) the
// iterate starts as x itself (any positive start converges to the same ranks). x_prev may be
// x itself (a restart in place).
template <typename I, typename V, int SELF>
__global__ void init_state(const RankArgs<I, V>* __restrict__ args, long long n_prev, const V* x_prev) {
  __shared__ double scratch[32];
  const RankArgs<I, V>& a = *args;
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  double s = 0.0, dang = 0.0;
  for (long long v = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; v < a.n; v += stride) {
    const V xv = v < n_prev ? x_prev[v] : V(1);
    const int od = a.out_deg[v];
    a.x[v] = xv;
    a.cbuf[0][v] = contribution<V, SELF>(xv, od);
    s += static_cast<double>(xv);
    if (!SELF && od == 0) dang += static_cast<double>(xv);
  }
  s = sr::block_sum(s, scratch);
  dang = sr::block_sum(dang, scratch);
  if (threadIdx.x == 0) {
    a.part[blockIdx.x] = s;
    a.part[2 * (a.gt + a.gb) + blockIdx.x] = dang;
  }
}

// One block: total = sum of init_state's block results; base = 1 (local form) or the standard
// form's (alpha * D + (1 - alpha) * T) / n; status and counters reset.
template <typename I, typename V>
__global__ void start_totals(const RankArgs<I, V>* __restrict__ args, int nblocks, int standard) {
  __shared__ double scratch[32];
  const RankArgs<I, V>& a = *args;
  const int nb = a.gt + a.gb;
  double s = 0.0, dang = 0.0;
  for (int i = threadIdx.x; i < nblocks; i += blockDim.x) {
    s += a.part[i];
    dang += a.part[2 * nb + i];
  }
  s = sr::block_sum(s, scratch);
  dang = sr::block_sum(dang, scratch);
  if (threadIdx.x == 0) {
    a.total[0] = s;
    a.base[0] = standard ? (a.alpha * dang + (1.0 - a.alpha) * s) / static_cast<double>(a.n) : 1.0;
  }
}

// Affected flags back to zero for the vertices of a list pair (frontier-sized, not |V|).
template <typename I>
__global__ void clear_marks(const I* __restrict__ small_list, const I* __restrict__ large_list,
                            const int* __restrict__ counters, int* __restrict__ aff) {
  const long long n0 = counters[0], n1 = counters[1];
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long t = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; t < n0 + n1; t += stride) {
    aff[t < n0 ? small_list[t] : large_list[t - n0]] = 0;
  }
}

// ---------------------------------------------------------------------------------------------
// L-infinity norm of a - b: block results, then one block over them (one scalar to the host).
template <typename V>
__global__ void linf_blocks(const V* __restrict__ a, const V* __restrict__ b, long long n,
                            double* __restrict__ part) {
  __shared__ double scratch[32];
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  double m = 0.0;
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    m = fmax(m, fabs(static_cast<double>(a[i]) - static_cast<double>(b[i])));
  }
  m = sr::block_max(m, scratch);
  if (threadIdx.x == 0) part[blockIdx.x] = m;
}

// op 0: sum, op 1: max of part[0..nparts) into out[0].
__global__ void reduce_blocks(const double* __restrict__ part, int nparts, double* __restrict__ out, int op) {
  __shared__ double scratch[32];
  double v = 0.0;
  for (int i = threadIdx.x; i < nparts; i += blockDim.x) v = op ? fmax(v, part[i]) : v + part[i];
  v = op ? sr::block_max(v, scratch) : sr::block_sum(v, scratch);
  if (threadIdx.x == 0) out[0] = v;
}
