// Personalized PageRank for a batch of seed sets at once: power iteration on a row-major
// |V| x W matrix, column j the iterate of query j (W = 32 * NCH columns, the batch padded).
//
// One iteration (ppr_batch_sweep, then ppr_batch_seeds) is the single-query iteration
//   p' = alpha X p + alpha (d . p) w + (1 - alpha) v
// applied to every column: a pull over the snapshot's in-CSR where a warp takes one item (a
// vertex, or a slice of at most `slice` positions of a long in-list) and its lanes take the
// columns, so each in-edge costs one broadcast index and W contiguous values. The seeds of all
// queries (the "flagged" vertices, flag[v] = their row in the weight table W_f) are finished
// by ppr_batch_seeds, which adds the personalization terms; the sweep only stores their pull
// sums.
//
// Reductions per column (the dangling sum d . p' and the max change) go through shared memory
// and then one atomic per block and column.
#include "ppr_common.cuh"

#define PPR_MODE_PERSONALIZATION 0
#define PPR_MODE_UNIFORM 1
#define PPR_MODE_LEAKY 2
#define PPR_BATCH_WARPS 8  // warps per block of the sweep

// p[v, :] = c[v, :] = 0 everywhere except the seeds (the caller zeroes p and c):
// p[F[f], j] = wts[f, j]; c = p / outdeg, or the dangling sum dsum[j] += p.
template <typename Deg, typename T>
__global__ void ppr_batch_init(const int* __restrict__ flagged, int nf, int width, const double* __restrict__ wts,
                               const Deg* __restrict__ out_degree, T* __restrict__ p, T* __restrict__ c,
                               double* dsum) {
    const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i >= (long long)nf * width) return;
    const int f = (int)(i / width), j = (int)(i % width);
    const double w = wts[i];
    if (w == 0.0) return;
    const int v = flagged[f];
    const long long at = (long long)v * width + j;
    p[at] = (T)w;
    const Deg od = out_degree[v];
    if (od > 0) c[at] = (T)(w / (double)od); else atomicAdd(&dsum[j], w);
}

// One sweep. Items: item_v[i] (vertex), item_lo[i] (first position in its in-list) and
// item_len[i]; an item whose length is the whole in-list finishes its vertex, the slices of a
// list longer than `slice` (item_slot[i] >= 0) add their sums into acc[slot, :] and the last
// one to finish (count[slot]) finishes the vertex and clears both. Flagged vertices (seeds) get their pull
// sums stored in seed_sum[flag[v], :] and are finished by ppr_batch_seeds.
//
// Early exit: when every column's previous change (prev_change[0 .. width)) is below tol the
// batch has converged and the launch does nothing.
template <typename Off, typename Deg, typename T, int NCH>
__global__ void __launch_bounds__(PPR_BATCH_WARPS * 32)
ppr_batch_sweep(const int* __restrict__ item_v, const Off* __restrict__ item_lo,
                const int* __restrict__ item_len, const int* __restrict__ item_slot, long long items, int slice,
                const Off* __restrict__ in_offset, const Deg* __restrict__ in_degree,
                const int* __restrict__ in_indices, const Deg* __restrict__ out_degree,
                const int* __restrict__ flag, const T* __restrict__ c, const T* __restrict__ p,
                const double* __restrict__ dsum_in, int mode, double inv_n, double alpha,
                const double* __restrict__ prev_change, double tol, T* __restrict__ p_new,
                T* __restrict__ c_new, double* __restrict__ seed_sum, double* acc, int* count,
                double* dsum_out, double* dmax) {
    constexpr int W = 32 * NCH;
    __shared__ double red_sum[PPR_BATCH_WARPS][W];
    __shared__ double red_max[PPR_BATCH_WARPS][W];
    __shared__ int any_open;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (threadIdx.x == 0) any_open = 0;
    __syncthreads();
    for (int j = threadIdx.x; j < W; j += blockDim.x)
        if (!(prev_change[j] < tol)) any_open = 1;
    __syncthreads();
    if (!any_open) return;  // uniform over the grid
    double uni[NCH], dm[NCH], diff[NCH];
#pragma unroll
    for (int h = 0; h < NCH; ++h) {
        uni[h] = (mode == PPR_MODE_UNIFORM) ? alpha * dsum_in[h * 32 + lane] * inv_n : 0.0;
        dm[h] = 0.0;
        diff[h] = 0.0;
    }
    const long long warps = (long long)gridDim.x * PPR_BATCH_WARPS;
    for (long long it = blockIdx.x * (long long)PPR_BATCH_WARPS + warp; it < items; it += warps) {
        const long long i = items - 1 - it;  // items are sorted by in-degree: the largest first
        const int v = item_v[i];
        const int len = item_len[i];
        const Off base = in_offset[v] + item_lo[i];
        double s[NCH];
#pragma unroll
        for (int h = 0; h < NCH; ++h) s[h] = 0.0;
        for (int e0 = 0; e0 < len; e0 += 32) {
            const int mine = (e0 + lane < len) ? __ldcs(in_indices + base + e0 + lane) : 0;
            const int cnt = min(32, len - e0);
            int e = 0;
            for (; e + 1 < cnt; e += 2) {  // two rows in flight
                const long long u0 = (long long)__shfl_sync(SR_FULL_MASK, mine, e) * W;
                const long long u1 = (long long)__shfl_sync(SR_FULL_MASK, mine, e + 1) * W;
#pragma unroll
                for (int h = 0; h < NCH; ++h)
                    s[h] += (double)__ldg(c + u0 + h * 32 + lane) + (double)__ldg(c + u1 + h * 32 + lane);
            }
            if (e < cnt) {
                const long long u0 = (long long)__shfl_sync(SR_FULL_MASK, mine, e) * W;
#pragma unroll
                for (int h = 0; h < NCH; ++h) s[h] += (double)__ldg(c + u0 + h * 32 + lane);
            }
        }
        const int slot = item_slot[i];
        bool finish = true;
        if (slot >= 0) {  // a slice: add into the slot; the last slice finishes the vertex
#pragma unroll
            for (int h = 0; h < NCH; ++h) atomicAdd(&acc[(long long)slot * W + h * 32 + lane], s[h]);
            __threadfence();
            int done = 0;
            if (lane == 0) {
                const int parts = (int)(((Off)in_degree[v] + (Off)slice - 1) / (Off)slice);
                done = (atomicAdd(&count[slot], 1) == parts - 1);
            }
            finish = __shfl_sync(SR_FULL_MASK, done, 0) != 0;
            if (finish) {
                __threadfence();
#pragma unroll
                for (int h = 0; h < NCH; ++h)
                    s[h] = __longlong_as_double((long long)atomicExch(
                        reinterpret_cast<unsigned long long*>(&acc[(long long)slot * W + h * 32 + lane]), 0ULL));
                if (lane == 0) count[slot] = 0;
            }
        }
        if (!finish) continue;
        const int fv = flag[v];
        if (fv >= 0) {  // a seed of some query: ppr_batch_seeds finishes it
#pragma unroll
            for (int h = 0; h < NCH; ++h) seed_sum[(long long)fv * W + h * 32 + lane] = s[h];
            continue;
        }
        const Deg od = out_degree[v];
        const long long row = (long long)v * W;
#pragma unroll
        for (int h = 0; h < NCH; ++h) {
            const long long at = row + h * 32 + lane;
            const double x = alpha * s[h] + uni[h];
            diff[h] = fmax(diff[h], fabs(x - (double)p[at]));
            p_new[at] = (T)x;
            if (od > 0) c_new[at] = (T)(x / (double)od); else { c_new[at] = (T)0; dm[h] += x; }
        }
    }
#pragma unroll
    for (int h = 0; h < NCH; ++h) {
        red_sum[warp][h * 32 + lane] = dm[h];
        red_max[warp][h * 32 + lane] = diff[h];
    }
    __syncthreads();
    for (int j = threadIdx.x; j < W; j += blockDim.x) {
        double a = 0.0, m = 0.0;
        for (int w = 0; w < PPR_BATCH_WARPS; ++w) {
            a += red_sum[w][j];
            m = fmax(m, red_max[w][j]);
        }
        if (a != 0.0) atomicAdd(&dsum_out[j], a);
        if (m > 0.0) sr::atomic_max_nonneg(&dmax[j], m);
    }
}

// Finishes the flagged vertices (a thread per flagged vertex and column): their pull sums
// from the sweep plus the personalization terms of each column.
template <typename Deg, typename T>
__global__ void ppr_batch_seeds(const int* __restrict__ flagged, int nf, int width, const double* __restrict__ wts,
                                const double* __restrict__ seed_sum, const Deg* __restrict__ out_degree,
                                const double* __restrict__ dsum_in, int mode, double inv_n, double alpha,
                                const double* __restrict__ prev_change, double tol, const T* __restrict__ p,
                                T* __restrict__ p_new, T* __restrict__ c_new, double* dsum_out, double* dmax) {
    const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i >= (long long)nf * width) return;
    const int f = (int)(i / width), j = (int)(i % width);
    bool open = false;  // the same early exit as the sweep (every column below tol: nothing to do)
    for (int h = 0; h < width; ++h) open |= !(prev_change[h] < tol);
    if (!open) return;
    const int v = flagged[f];
    const double w = wts[i];
    const double dsum = (mode == PPR_MODE_LEAKY) ? 0.0 : dsum_in[j];
    const double wd = (mode == PPR_MODE_PERSONALIZATION) ? w : ((mode == PPR_MODE_UNIFORM) ? inv_n : 0.0);
    const double x = alpha * seed_sum[i] + alpha * dsum * wd + (1.0 - alpha) * w;
    const long long at = (long long)v * width + j;
    const double d = fabs(x - (double)p[at]);
    p_new[at] = (T)x;
    const Deg od = out_degree[v];
    if (od > 0) c_new[at] = (T)(x / (double)od); else { c_new[at] = (T)0; if (x != 0.0) atomicAdd(&dsum_out[j], x); }
    if (d > 0.0) sr::atomic_max_nonneg(&dmax[j], d);
}

// Top-k of every column, step 1: maxima[b, j] = max of column j over rows [b * chunk, ...)
// (a block per chunk, a thread per column). Step 2 is ppr_kth_largest (ppr_topk.cu), a block
// per column.
template <typename T>
__global__ void ppr_batch_chunk_max(const T* __restrict__ p, long long n, int width, long long chunk,
                                    double* __restrict__ maxima) {
    const long long lo = (long long)blockIdx.x * chunk;
    const long long hi = min(lo + chunk, n);
    for (int j = threadIdx.x; j < width; j += blockDim.x) {
        double m = 0.0;
        for (long long r = lo; r < hi; ++r) m = fmax(m, (double)p[r * width + j]);
        maxima[(long long)blockIdx.x * width + j] = m;
    }
}

// Step 3: every entry p[r, j] >= t[j] (t[j] > 0; else every positive entry) of the first
// `used` columns is listed as r * width + j in out[0 .. cap) (sr::warp_slot); *count ends as
// the number of such entries, which may exceed cap (the caller then runs again with room).
template <typename T>
__global__ void ppr_batch_select(const T* __restrict__ p, long long total, int width, int used,
                                 const double* __restrict__ t, long long* __restrict__ out, int cap,
                                 int* __restrict__ count) {
    const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    bool take = false;
    if (i < total) {
        const int j = (int)(i % width);
        if (j < used) {
            const double x = (double)p[i], th = t[j];
            take = (th > 0.0) ? (x >= th) : (x > 0.0);
        }
    }
    const int at = sr::warp_slot(take, count);
    if (take && at < cap) out[at] = i;
}
