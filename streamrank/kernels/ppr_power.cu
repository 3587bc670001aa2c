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
// support pushes c along its out-edges with atomics (ppr_sparse_scatter), the touched vertices
// are listed, and ppr_sparse_finish writes their new values.
#include "ppr_common.cuh"

#define PPR_BUCKETS 7
#define PPR_MODE_PERSONALIZATION 0
#define PPR_MODE_UNIFORM 1
#define PPR_MODE_LEAKY 2

__device__ __forceinline__ double ppr_power_new(double s, int v, const double* pers, double dsum,
                                                int mode, double inv_n, double alpha) {
    const double pv = pers[v];
    const double w = (mode == PPR_MODE_PERSONALIZATION) ? pv : ((mode == PPR_MODE_UNIFORM) ? inv_n : 0.0);
    return alpha * s + alpha * dsum * w + (1.0 - alpha) * pv;
}

// The block's sum of s into *sum_out (atomicAdd) and max of m into *max_out (either may be
// null). Every thread of the block must call it.
__device__ __forceinline__ void block_sum_max(double s, double m, double* sum_out, double* max_out) {
    __shared__ double scratch[32];
    if (sum_out != nullptr) {  // a kernel argument: uniform over the block
        s = sr::block_sum(s, scratch);
        if (threadIdx.x == 0 && s != 0.0) atomicAdd(sum_out, s);
    }
    if (max_out != nullptr) {
        m = sr::block_max(m, scratch);
        if (threadIdx.x == 0 && m > 0.0) sr::atomic_max_nonneg(max_out, m);
    }
}

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

// Sum of c over the in-list [off, off + deg), this lane taking positions lane, lane + g, ...
// Four positions per step: their index loads, then their gathers, are independent and in
// flight together (the sweep is bound by load latency, not bandwidth).
template <typename Off, typename Deg, typename T>
__device__ __forceinline__ double pull_sum(const int* __restrict__ in_indices, const T* __restrict__ c,
                                           Off off, Deg deg, int lane, int g) {
    double s0 = 0.0, s1 = 0.0;
    Off j = lane;
    const Off end = (Off)deg;
    for (; j + 3 * g < end; j += 4 * g) {
        const int a0 = in_indices[off + j];
        const int a1 = in_indices[off + j + g];
        const int a2 = in_indices[off + j + 2 * g];
        const int a3 = in_indices[off + j + 3 * g];
        s0 += (double)c[a0] + (double)c[a1];
        s1 += (double)c[a2] + (double)c[a3];
    }
    for (; j < end; j += g) s0 += (double)c[in_indices[off + j]];
    return s0 + s1;
}

// One dense iteration. order[] lists the vertices bucket by bucket; bucket b holds
// order[bstart[b] .. bstart[b+1]) and owns blocks [blk[b], blk[b+1]). dsum_in is d . p of the
// previous iterate; the launch accumulates d . p' into *dsum_out and max |p' - p| into *dmax.
// T is the type of p and c (double; float for the fast approximate mode).
template <typename Off, typename Deg, typename T>
__global__ void ppr_power_sweep(const int* __restrict__ order, const int* __restrict__ bstart,
                                const int* __restrict__ blk, const Off* __restrict__ in_offset,
                                const Deg* __restrict__ in_degree, const int* __restrict__ in_indices,
                                const Deg* __restrict__ out_degree, const T* __restrict__ c,
                                const T* __restrict__ p, const double* __restrict__ pers,
                                const double* __restrict__ dsum_in, int mode, double inv_n, double alpha,
                                T* __restrict__ p_new, T* __restrict__ c_new,
                                double* dsum_out, double* dmax) {
    __shared__ double part[32];  // block-per-vertex reduction
    int b = 0;
    while (b + 1 < PPR_BUCKETS && (int)blockIdx.x >= blk[b + 1]) ++b;
    const int local_block = (int)blockIdx.x - blk[b];
    const int count = bstart[b + 1] - bstart[b];
    const double dsum = (mode == PPR_MODE_LEAKY) ? 0.0 : *dsum_in;
    int v = -1;
    double s = 0.0;
    bool leader;
    if (b < PPR_BUCKETS - 1) {
        const int g = 1 << b;  // lanes per vertex
        const int item = local_block * (int)(blockDim.x >> b) + (int)(threadIdx.x >> b);
        const int lane = threadIdx.x & (g - 1);
        if (item < count) {
            v = order[bstart[b] + item];
            const Off off = in_offset[v];
            const Deg deg = in_degree[v];
            s = pull_sum(in_indices, c, off, deg, lane, g);
        }
        for (int o = g >> 1; o > 0; o >>= 1) s += __shfl_xor_sync(SR_FULL_MASK, s, o);
        leader = (lane == 0) && (v >= 0);
    } else {  // a block per vertex
        v = order[bstart[b] + local_block];
        const Off off = in_offset[v];
        const Deg deg = in_degree[v];
        s = sr::block_sum(pull_sum(in_indices, c, off, deg, (int)threadIdx.x, (int)blockDim.x), part);
        leader = (threadIdx.x == 0);
    }
    double diff = 0.0, dm = 0.0;
    if (leader) {
        const double x = ppr_power_new(s, v, pers, dsum, mode, inv_n, alpha);
        diff = fabs(x - (double)p[v]);
        p_new[v] = (T)x;
        const Deg od = out_degree[v];
        if (od > 0) c_new[v] = (T)(x / (double)od); else { c_new[v] = (T)0; dm = x; }
    }
    block_sum_max(dm, diff, dsum_out, dmax);
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

// Sparse phase, step 1: a warp per support vertex u pushes c = p[u] / outdeg(u) to its
// out-neighbours (acc[w] += c); a neighbour marked here first is appended to the next support
// list (sr::warp_append). The dangling part of the support goes to *dsum.
template <typename Off, typename Deg>
__global__ void ppr_sparse_scatter(const int* __restrict__ support, int m, const Off* __restrict__ out_offset,
                                   const Deg* __restrict__ out_degree, const int* __restrict__ out_indices,
                                   const double* __restrict__ p, double* __restrict__ acc,
                                   unsigned int* __restrict__ mark, int* __restrict__ list,
                                   int* __restrict__ count, double* dsum) {
    const int warp = (int)((blockIdx.x * (long long)blockDim.x + threadIdx.x) >> 5);
    const int lane = threadIdx.x & 31;
    double dm = 0.0;
    if (warp < m) {
        const int u = support[warp];
        const Deg deg = out_degree[u];
        const double x = p[u];
        if (deg == 0) {
            if (lane == 0) dm = x;
        } else if (x != 0.0) {
            const double cu = x / (double)deg;
            const Off off = out_offset[u];
            for (Off b0 = 0; b0 < (Off)deg; b0 += 32) {  // uniform trip count: warp_append is convergent
                const Off j = b0 + lane;
                int w = 0;
                bool fresh = false;
                if (j < (Off)deg) {
                    w = out_indices[off + j];
                    atomicAdd(&acc[w], cu);
                    fresh = mark[w] == 0u && atomicExch(&mark[w], 1u) == 0u;
                }
                sr::warp_append<int>(fresh, w, list, count);
            }
        }
    }
    block_sum_max(dm, 0.0, dsum, nullptr);
}

// Sparse phase, step 2 (a thread per entry of the new support list, *count of them; the grid
// covers an upper bound): p_new[w] from acc[w], then acc and mark are cleared. Accumulates
// max |p_new - p| over the list into *dmax and the list's out-degree sum into *volume.
template <typename Deg>
__global__ void ppr_sparse_finish(const int* __restrict__ list, const int* __restrict__ count,
                                  const Deg* __restrict__ out_degree, const double* __restrict__ pers,
                                  const double* __restrict__ dsum_in, int mode, double inv_n, double alpha,
                                  double* __restrict__ acc, unsigned int* __restrict__ mark,
                                  const double* __restrict__ p, double* __restrict__ p_new, double* dmax,
                                  double* volume) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    double diff = 0.0, vol = 0.0;
    if (i < *count) {
        const int w = list[i];
        const double dsum = (mode == PPR_MODE_LEAKY) ? 0.0 : *dsum_in;
        const double x = ppr_power_new(acc[w], w, pers, dsum, mode, inv_n, alpha);
        p_new[w] = x;
        diff = fabs(x - p[w]);
        vol = (double)out_degree[w];
        acc[w] = 0.0;
        mark[w] = 0u;
    }
    block_sum_max(vol, diff, volume, dmax);
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
