// Personalized PageRank: forward push (atomics), lock-free forward pull, and the
// micro-benchmarks behind the hybrid cost model. Graph arrays follow the store contract:
// neighbours of v are indices[offset[v] .. offset[v] + degree[v]) (gaps allowed beyond).
//
// WT == 1 instantiations take a weighted graph: the weights beside the indices (out_wt,
// in_wt, per slot) and the out-weights W[u] (out_w); u hands alpha r[u] w(u, v) / W[u] to v
// where the unweighted kernels hand alpha r[u] / outdeg(u). WT == 0 instantiations never read
// those pointers (callers pass null): the same code as without them.
#include "ppr_common.cuh"

// Queue t for the next round when its residual nv reached eps * max(outdeg t, 1); the flag
// makes the append happen once.
template <typename Deg>
__device__ __forceinline__ void ppr_queue_if_above(int t, double nv, double eps, const Deg* __restrict__ out_degree,
                                                   int* flag, int* next, int* next_count) {
    const Deg dt = out_degree[t];
    if (nv >= eps * (double)(dt > 0 ? dt : 1)) {
        __threadfence();
        if (atomicExch(&flag[t], 1) == 0) next[atomicAdd(next_count, 1)] = t;
    }
}

// ---------------------------------------------------------------------------------------
// Forward push: one warp per frontier vertex u. The owner takes r[u] atomically, settles
// (1 - alpha) r[u] into p[u] and pushes alpha r[u] / outdeg(u) (WT: alpha r[u] w / W[u]) to
// each out-neighbour with ppr_accumulate<EXCH>. A target whose residual reaches
// eps * max(outdeg, 1) is appended once (flag) to the next frontier queue. A dangling u
// sends alpha r[u] to the seeds (mode 0, "personalization") or to the scalar `lost`
// (mode 1, "uniform": leaky part).
template <typename Off, typename Deg, int EXCH, int WT>
__global__ void ppr_push_warp(const int* __restrict__ frontier, int fsize,
                              const Off* __restrict__ out_offset, const Deg* __restrict__ out_degree,
                              const int* __restrict__ out_indices,
                              const double* __restrict__ out_w, const double* __restrict__ out_wt,
                              double* r, double* p, int* flag, int* next, int* next_count,
                              const int* __restrict__ seeds, const double* __restrict__ seed_w,
                              int nseeds, int mode, double* lost, double alpha, double eps) {
    const int warp = (int)((blockIdx.x * (long long)blockDim.x + threadIdx.x) >> 5);
    const int lane = threadIdx.x & 31;
    if (warp >= fsize) return;
    const int u = frontier[warp];
    double val = 0.0;
    if (lane == 0) {
        flag[u] = 0;          // clear first: an adder after our take re-queues u
        __threadfence();
        val = ppr_take(&r[u]);
        p[u] += (1.0 - alpha) * val;  // the frontier holds u once: one writer
    }
    val = __shfl_sync(SR_FULL_MASK, val, 0);
    if (val == 0.0) return;
    const Deg deg = out_degree[u];
    if (deg == 0) {
        if (mode == 1) {
            if (lane == 0) ppr_accumulate<EXCH>(lost, alpha * val);
            return;
        }
        for (int i = lane; i < nseeds; i += 32) {
            const int t = seeds[i];
            const double nv = ppr_accumulate<EXCH>(&r[t], alpha * val * seed_w[i]);
            ppr_queue_if_above(t, nv, eps, out_degree, flag, next, next_count);
        }
        return;
    }
    const double add = WT ? alpha * val / out_w[u] : alpha * val / (double)deg;
    const Off off = out_offset[u];
    for (Off j = lane; j < (Off)deg; j += 32) {
        const int t = out_indices[off + j];
        const double nv = ppr_accumulate<EXCH>(&r[t], WT ? add * out_wt[off + j] : add);
        if (nv >= eps) ppr_queue_if_above(t, nv, eps, out_degree, flag, next, next_count);
    }
}

// ---------------------------------------------------------------------------------------
// Lock-free forward pull, step 1: one warp per frontier vertex u. The owner settles r[u]
// into p[u], stores its per-edge contribution c[u] = alpha r[u] / outdeg(u) (WT: per unit of
// weight, alpha r[u] / W[u]; or its dangling mass in dmass[i]), and the lanes write u's
// out-neighbours into the target list at the positions given by the exclusive scan `tpos` of
// the frontier's out-degrees, recording in mark[t] the position (plain stores: the last
// writer wins, which is what deduplicates). No other thread writes r[u], c[u] or p[u] in
// this kernel.
template <typename Off, typename Deg, int WT>
__global__ void ppr_pull_scatter(const int* __restrict__ frontier, int fsize,
                                 const long long* __restrict__ tpos,
                                 const Off* __restrict__ out_offset, const Deg* __restrict__ out_degree,
                                 const int* __restrict__ out_indices, const double* __restrict__ out_w,
                                 double* r, double* p, double* c, double* dmass, int* flag,
                                 int* targets, long long* mark, double alpha) {
    const int warp = (int)((blockIdx.x * (long long)blockDim.x + threadIdx.x) >> 5);
    const int lane = threadIdx.x & 31;
    if (warp >= fsize) return;
    const int u = frontier[warp];
    const double val = r[u];
    const Deg deg = out_degree[u];
    if (lane == 0) {
        flag[u] = 0;
        r[u] = 0.0;
        p[u] += (1.0 - alpha) * val;
        if (deg > 0) { c[u] = WT ? alpha * val / out_w[u] : alpha * val / (double)deg; dmass[warp] = 0.0; }
        else { dmass[warp] = alpha * val; }
    }
    const Off off = out_offset[u];
    const long long base = tpos[warp];
    for (Off j = lane; j < (Off)deg; j += 32) {
        const int t = out_indices[off + j];
        targets[base + j] = t;
        mark[t] = base + j;
    }
}

// Step 1b: the seeds join the target list (after the scatter, so their mark wins).
__global__ void ppr_pull_add_seeds(const int* __restrict__ seeds, int nseeds, long long base,
                                   int* targets, long long* mark) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < nseeds) { targets[base + i] = seeds[i]; mark[seeds[i]] = base + i; }
}

// Step 2: keep[e] = 1 where target e is the recorded (unique) copy of its vertex.
__global__ void ppr_pull_dedup(const int* __restrict__ targets, long long total,
                               const long long* __restrict__ mark, unsigned char* keep) {
    const long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (e < total) keep[e] = (mark[targets[e]] == e) ? 1 : 0;
}

// Step 3: one warp per pulling vertex v: r[v] += sum over in-neighbours of c[u] (WT: times
// the in-edge's weight; zero for vertices outside the frontier) + the dangling mass returned
// to v (dangling_to_v[v] times the device scalar *dsum, mode 0). One writer per r[v]: no
// atomics. Sets above[i] when v reaches the push threshold.
template <typename Off, typename Deg, int WT>
__global__ void ppr_pull_gather(const int* __restrict__ pulling, int nsize,
                                const Off* __restrict__ in_offset, const Deg* __restrict__ in_degree,
                                const int* __restrict__ in_indices, const double* __restrict__ in_wt,
                                const Deg* __restrict__ out_degree,
                                const double* __restrict__ c, const double* __restrict__ pers,
                                const double* __restrict__ dsum, int mode,
                                double* r, unsigned char* above, double eps) {
    const int warp = (int)((blockIdx.x * (long long)blockDim.x + threadIdx.x) >> 5);
    const int lane = threadIdx.x & 31;
    if (warp >= nsize) return;
    const int v = pulling[warp];
    const Off off = in_offset[v];
    const Deg deg = in_degree[v];
    double s = 0.0;
    for (Off j = lane; j < (Off)deg; j += 32) {
        if (WT) s += c[in_indices[off + j]] * in_wt[off + j];
        else s += c[in_indices[off + j]];
    }
    s = sr::warp_sum(s);
    if (lane == 0) {
        if (mode == 0) s += (*dsum) * pers[v];
        const double nv = r[v] + s;
        r[v] = nv;
        const Deg dv = out_degree[v];
        above[warp] = (nv >= eps * (double)(dv > 0 ? dv : 1)) ? 1 : 0;
    }
}

// ---------------------------------------------------------------------------------------
// Micro-benchmarks for the hybrid cost model's unit costs (lambda1 : lambda2 : lambda3).
template <int EXCH>
__global__ void ppr_micro_rand_write(double* a, const int* __restrict__ idx, long long n, double v) {
    const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) ppr_accumulate<EXCH>(&a[idx[i]], v);
}

__global__ void ppr_micro_rand_read(const double* __restrict__ a, const int* __restrict__ idx,
                                    long long n, double* out) {
    const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    double v = (i < n) ? a[idx[i]] : 0.0;
    v = sr::warp_sum(v);
    if ((threadIdx.x & 31) == 0 && v == 12345.678) out[0] = v;  // keeps the loads alive
}

__global__ void ppr_micro_seq_write(double* a, long long n, double v) {
    const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) a[i] = v;
}
