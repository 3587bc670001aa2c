// Personalized PageRank by power iteration (synchronous): the exact reference.
//
// One iteration is  p' = alpha X p + alpha (d . p) w + (1 - alpha) v  with w = v
// ("personalization"), w = 1/|V| ("uniform") or no dangling term ("leaky").
//
// Dense phase: one launch of ppr_power_sweep per iteration pulls over the in-CSR with the
// vertices grouped by in-degree (a "plan", built once per graph version): bucket b < 6 gives
// each vertex a group of 2^b lanes, bucket 6 a whole block. The same launch writes the next
// contributions c' = p' / outdeg, the dangling sum d . p' and the max |p' - p|, so an iteration
// is one pass over the edges and no separate pass over the vertices.
//
// Sparse phase (first iterations from a few seeds, while the support of p is small): the
// support pushes c along its out-edges with atomics (ppr_sparse_scatter, a thread per edge),
// the touched vertices are listed, and ppr_sparse_finish writes their new values.
#include "ppr_power.cuh"

// c[u] = p[u] / outdeg(u) (0 for dangling u); *dsum += the dangling rank d . p.
template <typename Deg, typename T>
__global__ void ppr_power_contrib(const T* __restrict__ p, const Deg* __restrict__ out_degree,
                                  int n, T* c, double* dsum) {
    const int v = blockIdx.x * blockDim.x + threadIdx.x;
    double dm = 0.0;
    if (v < n) {
        const Deg d = out_degree[v];
        const double x = (double)p[v];
        if (d > 0) c[v] = (T)(x / (double)d); else { c[v] = (T)0; dm = x; }
    }
    block_sum_max(dm, 0.0, dsum, nullptr);
}

// One dense iteration, a block per virtual block (sweep_block), taken from the end so that the
// largest in-lists start first. dsum_in is d . p of the previous iterate; the launch
// accumulates d . p' into *dsum_out and max |p' - p| into *dmax. T is the type of p and c
// (double; float for the fast approximate mode).
//
// Early exit: when *prev_change (the previous iteration's max change) is below tol the
// iteration has converged already and the launch does nothing; so the host can queue several
// iterations and read their changes once (the iterations after a converged one read a change
// of 0 and do nothing either).
template <typename Off, typename Deg, typename T>
__global__ void ppr_power_sweep(const int* __restrict__ order, const int* __restrict__ bstart,
                                const int* __restrict__ blk, const Off* __restrict__ in_offset,
                                const Deg* __restrict__ in_degree, const int* __restrict__ in_indices,
                                const Deg* __restrict__ out_degree, const T* __restrict__ c,
                                const T* __restrict__ p, const double* __restrict__ pers,
                                const double* __restrict__ dsum_in, int mode, double inv_n, double alpha,
                                const double* __restrict__ prev_change, double tol,
                                T* __restrict__ p_new, T* __restrict__ c_new,
                                double* dsum_out, double* dmax, int split, const int* __restrict__ split_slot,
                                const int* __restrict__ split_part, double* split_acc, int* split_count) {
    __shared__ double part[32];
    __shared__ int finish;
    if (*prev_change < tol) return;  // uniform over the grid
    const double dsum = (mode == PPR_MODE_LEAKY) ? 0.0 : *dsum_in;
    double dm = 0.0, diff = 0.0;
    sweep_block((int)(gridDim.x - 1 - blockIdx.x), order, bstart, blk, in_offset, in_degree, in_indices, out_degree,
                c, p, pers, dsum, mode, inv_n, alpha, p_new, c_new, split, split_slot, split_part, split_acc,
                split_count, part, &finish, dm, diff);
    block_sum_max(dm, diff, dsum_out, dmax);
}

// A query's seeds, from one host copy sw = (s store ids as doubles, then their s weights):
// pers[id] = weight (pers zeroed by the caller) and seeds[i] = id.
__global__ void ppr_seed_setup(const double* __restrict__ sw, int s, double* __restrict__ pers,
                               int* __restrict__ seeds) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < s) {
        const int v = (int)sw[i];
        pers[v] = sw[s + i];
        seeds[i] = v;
    }
}

// Sparse phase, step 0: the seeds open the next support list (they always get their
// (1 - alpha) v share): list[0..s) = seeds, marked, *count = s.
__global__ void ppr_sparse_seed(const int* __restrict__ seeds, int s, unsigned int* __restrict__ mark,
                                int* __restrict__ list, int* __restrict__ count) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < s) {
        mark[seeds[i]] = 1u;
        list[i] = seeds[i];
    }
    if (i == 0) *count = s;
}

// Sparse phase, step 1a (a thread per support vertex): deg[i] = outdeg(support[i]), for the
// prefix sums that balance step 1b; the dangling part of the support's rank goes to *dsum.
template <typename Deg>
__global__ void ppr_sparse_prep(const int* __restrict__ support, int m, const Deg* __restrict__ out_degree,
                                const double* __restrict__ p, long long* __restrict__ deg, double* dsum) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    double dm = 0.0;
    if (i < m) {
        const int u = support[i];
        const Deg d = out_degree[u];
        deg[i] = (long long)d;
        if (d == 0) dm = p[u];
    }
    block_sum_max(dm, 0.0, dsum, nullptr);
}

// Sparse phase, step 1b: a thread per out-edge of the support (total of them; ends[] holds the
// inclusive prefix sums of the support's out-degrees, so a hub's edges spread over many
// threads instead of one warp). The thread finds its source u by binary search in ends[],
// pushes c = p[u] / outdeg(u) to the target w (acc[w] += c), and a target marked here first is
// appended to the next support list (sr::warp_append, one atomic per warp).
template <typename Off, typename Deg>
__global__ void ppr_sparse_scatter(const int* __restrict__ support, int m, const long long* __restrict__ ends,
                                   long long total, const Off* __restrict__ out_offset,
                                   const Deg* __restrict__ out_degree, const int* __restrict__ out_indices,
                                   const double* __restrict__ p, double* __restrict__ acc,
                                   unsigned int* __restrict__ mark, int* __restrict__ list,
                                   int* __restrict__ count) {
    const long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    int w = 0;
    bool fresh = false;
    if (e < total) {
        int lo = 0, hi = m - 1;  // the first i with ends[i] > e
        while (lo < hi) {
            const int mid = (lo + hi) >> 1;
            if (ends[mid] > e) hi = mid; else lo = mid + 1;
        }
        const int u = support[lo];
        const Deg deg = out_degree[u];
        const double x = p[u];
        if (x != 0.0) {
            w = out_indices[out_offset[u] + (Off)(e - (ends[lo] - (long long)deg))];
            atomicAdd(&acc[w], x / (double)deg);
            fresh = mark[w] == 0u && atomicExch(&mark[w], 1u) == 0u;
        }
    }
    sr::warp_append<int>(fresh, w, list, count);  // every lane calls it
}

// Sparse phase, step 2 (a thread per entry of the new support list, *count of them; the grid
// covers an upper bound): p_new[w] from acc[w], then acc and mark are cleared. Writes the
// list's length to status[0], and accumulates its out-degree sum into status[1] and max
// |p_new - p| over it into status[2].
template <typename Deg>
__global__ void ppr_sparse_finish(const int* __restrict__ list, const int* __restrict__ count,
                                  const Deg* __restrict__ out_degree, const double* __restrict__ pers,
                                  const double* __restrict__ dsum_in, int mode, double inv_n, double alpha,
                                  double* __restrict__ acc, unsigned int* __restrict__ mark,
                                  const double* __restrict__ p, double* __restrict__ p_new, double* status) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const int len = *count;
    double diff = 0.0, vol = 0.0;
    if (i == 0) status[0] = (double)len;
    if (i < len) {
        const int w = list[i];
        const double dsum = (mode == PPR_MODE_LEAKY) ? 0.0 : *dsum_in;
        const double x = ppr_power_new(acc[w], w, pers, dsum, mode, inv_n, alpha);
        p_new[w] = x;
        diff = fabs(x - p[w]);
        vol = (double)out_degree[w];
        acc[w] = 0.0;
        mark[w] = 0u;
    }
    block_sum_max(vol, diff, status + 1, status + 2);
}

// Sparse phase, step 3: max |p_new - p| over the old support (its vertices that left the
// support now have p_new = 0).
__global__ void ppr_sparse_diff(const int* __restrict__ list, int m, const double* __restrict__ p,
                                const double* __restrict__ p_new, double* dmax) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    double diff = 0.0;
    if (i < m) {
        const int w = list[i];
        diff = fabs(p_new[w] - p[w]);
    }
    block_sum_max(0.0, diff, nullptr, dmax);
}

// Sparse phase: zero p at the listed vertices (the support two iterations back, before its
// buffer is reused).
__global__ void ppr_sparse_clear(const int* __restrict__ list, int m, double* __restrict__ p) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < m) p[list[i]] = 0.0;
}
