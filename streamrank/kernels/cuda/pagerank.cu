// PageRank kernels of the GPU backend (streamrank.rank.gpu.pagerank): pull-based rank updates in the
// local form, frontier marking, degree partition and reductions.
//
// Local form (docs/architecture.md): x[v] = 1 + alpha * S(v), S(v) = sum over in-neighbours u of
// c[u], with c[u] = x[u] / d(u) precomputed once per iteration ("contribution"), d(u) = outdeg(u)
// (+1 with SELF, the implicit self-loop, whose own term is solved in closed form:
// x[v] = (1 + alpha * S) / (1 - alpha / d(v))). Iterations are Jacobi: rank kernels read c and
// write the new contribution to cn; the post kernel commits cn -> c for the processed vertices
// (MODE 3, where every vertex is processed, alternates the two buffers instead).
//
// Template parameters: I = vertex index type (int), V = rank type (float or double), SELF = 1
// for dangling="self-loop", MODE = 0 (DT: a fixed list of vertices; ND: every vertex, local
// form), 1 (DF: the frontier grows), 2 (DF-P: it grows and prunes), 3 (Static and warm with
// the "rank" sweep kernel of streamrank/rank/gpu/sweeps.py, the older kernels that sweep.cu replaced: every vertex, iterating the standard form
// y = base + alpha * P^T y with base = (alpha * dangling mass + (1 - alpha) * sum(y)) / n, whose
// fixed point is y = base * x: the same ranks p = y / sum(y) = x / sum(x), reached in fewer
// iterations because the dominant error component is projected out every step; the host turns
// y into x = y / base at the end).
//
// Lists and counters live on the device: kernels read their list lengths there and loop over a
// fixed grid, so the host never needs a frontier size to launch. Every kernel first reads
// status[0] ("done"); once an iteration has declared convergence, launches already queued by the
// host return at once.
#include "rank_common.cuh"

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

// The same over sorted ids, each distinct id once (the sources of a batch's changed edges,
// sorted on the device, so the host needs no count of the distinct ones).
template <typename I>
__global__ void partition_unique(const I* __restrict__ sorted_ids, long long n, const I* __restrict__ degree,
                                 I switch_degree, I* __restrict__ small_list, I* __restrict__ large_list,
                                 int* __restrict__ counters) {
  const int lane = threadIdx.x & 31;
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long base = static_cast<long long>(blockIdx.x) * blockDim.x + (threadIdx.x - lane); base < n;
       base += stride) {
    const long long i = base + lane;
    const bool valid = i < n && (i == 0 || sorted_ids[i] != sorted_ids[i - 1]);
    const I v = valid ? sorted_ids[i] : I(0);
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


template <typename I, typename V, int SELF, int MODE>
__global__ void __launch_bounds__(SR_SMALL_THREADS, 4) rank_small(const RankArgs<I, V>* __restrict__ args, int parity) {
  __shared__ double scratch[96];  // sr::block_max_sum of three values
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
      bool own = false;
      const V s = sr::thread_gather<V, SolvesOwnLoop<MODE>::value, LooksAhead<SELF, MODE>::value>(
          w.c, a.in_idx, o, dg, v, &own, look_of(a, w), edge_weights(a));
      dec = update_vertex<I, V, SELF, MODE>(a, w, v, s, od, xo, lmax, lsum, ldang, own);
    }
    if (MODE == 1 || MODE == 2) {
      sr::warp_append_split<I>(dec.keep, v, dg, sw, w.next_small, w.next_large, w.next_count);
      sr::warp_append_split<I>(dec.flag, v, od, sw, a.lists[4], a.lists[5], a.cnt + 4);
    }
  }
  sr::block_max_sum(lmax, lsum, ldang, scratch);
  if (threadIdx.x == 0) write_block_results(a, blockIdx.x, lmax, lsum, ldang);
}

template <typename I, typename V, int SELF, int MODE>
__global__ void __launch_bounds__(256) rank_large(const RankArgs<I, V>* __restrict__ args, int parity) {
  __shared__ double scratch[96];  // finish_iteration's sr::block_max_sum
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
    bool own = false;
    const V s = sr::block_gather<V, SolvesOwnLoop<MODE>::value, LooksAhead<SELF, MODE>::value>(
        w.c, a.in_idx, o, dg, vscratch, v, &own, look_of(a, w), edge_weights(a));  // SR_GATHER_UNROLL in flight
    if (more) {
      o_next = a.in_off[v_next];
      dg_next = a.in_deg[v_next];
    }
    if (threadIdx.x == 0) {
      const Decision dec = update_vertex<I, V, SELF, MODE>(a, w, v, s, od, xo, lmax, lsum, ldang, own);
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
  __shared__ double scratch[96];  // finish_iteration's sr::block_max_sum
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
  __shared__ double scratch[96];  // finish_iteration's sr::block_max_sum
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
    const auto od = vertex_mass(a, v);  // the out-degree, or weighted the out-weight
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

// ---------------------------------------------------------------------------------------------
// Copy a list pair with its counters (the launch sequence taking over frontier_loop.cu's frontier).
template <typename I>
__global__ void copy_pair(const I* __restrict__ src_small, const I* __restrict__ src_large,
                          const int* __restrict__ src_cnt, I* __restrict__ dst_small, I* __restrict__ dst_large,
                          int* __restrict__ dst_cnt) {
  const long long c0 = src_cnt[0], c1 = src_cnt[1];
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long t = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; t < c0 + c1; t += stride) {
    if (t < c0) dst_small[t] = src_small[t];
    else dst_large[t - c0] = src_large[t - c0];
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    dst_cnt[0] = static_cast<int>(c0);
    dst_cnt[1] = static_cast<int>(c1);
  }
}
