// Personalized PageRank by complete-path Monte Carlo: one thread per walker, each with its
// own counter-based random stream (splitmix64 of (seed, walker, counter)). A walker starts
// walks at a seed (drawn from the personalization), counts every vertex visited, moves to a
// random out-neighbour with probability alpha and ends the walk otherwise; it respawns until
// its share of the step budget is spent (the walk in progress is finished, not cut). A first
// step from a seed goes to out-neighbour (walker + walk * walkers) mod outdeg, spreading the
// walkers over the seed's neighbours; visits to the start vertex of single-seed queries are
// counted in a register and added once per warp, so the seed's counter is no hot spot.
//
// WT == 1 instantiations walk a weighted graph: out_cum holds per out-slot the running sum of
// the weights within its vertex's list (ppr_segment_sums), and a step from u draws x uniform in
// [0, 1) and takes the first slot whose running sum exceeds x times u's total (a binary search
// over u's list: O(log outdeg) per step); a first step from a seed takes x = frac(k * 0.618...)
// for the walker's k-th walk overall, spreading the first steps evenly in proportion to the
// weights. WT == 0 instantiations never read out_cum (callers pass null).
#include "ppr_common.cuh"

__device__ __forceinline__ unsigned long long splitmix64(unsigned long long x) {
    x += 0x9E3779B97F4A7C15ULL;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
}

__device__ __forceinline__ unsigned long long ppr_rand(unsigned long long seed, unsigned long long walker,
                                                       unsigned long long ctr) {
    return splitmix64(seed ^ splitmix64(walker * 0xD1B54A32D192ED03ULL + ctr));
}

__device__ __forceinline__ int pick_seed(const int* seeds, const double* cdf, int nseeds, unsigned int r32) {
    if (nseeds == 1) return seeds[0];
    const double u = (double)r32 * (1.0 / 4294967296.0);
    int lo = 0, hi = nseeds - 1;
    while (lo < hi) { const int mid = (lo + hi) >> 1; if (cdf[mid] > u) hi = mid; else lo = mid + 1; }
    return seeds[lo];
}

// The slot of [lo, hi) (hi > lo) whose running weight sum cum[] first exceeds x * cum[hi - 1].
template <typename Off>
__device__ __forceinline__ Off ppr_weighted_slot(const double* __restrict__ cum, Off lo, Off hi, double x) {
    const double target = x * cum[hi - 1];
    while (lo < hi - 1) {
        const Off mid = lo + (hi - 1 - lo) / 2;
        if (cum[mid] > target) hi = mid + 1; else lo = mid + 1;
    }
    return lo;
}

// Per out-slot the running sum of wt within its vertex's list (the slot included): a warp per
// vertex, 32 slots at a time (a warp scan plus the carry of the slots before).
template <typename Off, typename Deg>
__global__ void ppr_segment_sums(int n, const Off* __restrict__ offset, const Deg* __restrict__ degree,
                                 const double* __restrict__ wt, double* __restrict__ cum) {
    const long long warp = (blockIdx.x * (long long)blockDim.x + threadIdx.x) >> 5;
    const int lane = threadIdx.x & 31;
    if (warp >= n) return;
    const Off off = offset[warp];
    const Off deg = (Off)degree[warp];
    double carry = 0.0;
    for (Off j0 = 0; j0 < deg; j0 += 32) {
        const Off j = j0 + lane;
        const double x = sr::warp_inclusive_sum(j < deg ? wt[off + j] : 0.0);
        if (j < deg) cum[off + j] = carry + x;
        carry += __shfl_sync(SR_FULL_MASK, x, 31);
    }
}

template <typename Off, typename Deg, int WT>
__global__ void ppr_mc_walk(int walkers, long long steps_per_walker, unsigned long long rng_seed,
                            const Off* __restrict__ out_offset, const Deg* __restrict__ out_degree,
                            const int* __restrict__ out_indices, const double* __restrict__ out_cum, int n,
                            const int* __restrict__ seeds, const double* __restrict__ cdf, int nseeds,
                            int mode, unsigned int alpha_u32,
                            unsigned int* counts, unsigned long long* totals /* [walks, steps] */) {
    const int w = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned long long local_start = 0, walks = 0, used = 0;
    if (w < walkers) {
        unsigned long long ctr = 0;
        while ((long long)used < steps_per_walker) {
            unsigned long long h = ppr_rand(rng_seed, (unsigned long long)w, ctr++);
            const int s = pick_seed(seeds, cdf, nseeds, (unsigned int)(h >> 32));
            if (nseeds == 1) ++local_start; else atomicAdd(&counts[s], 1u);
            ++used;
            int cur = s;
            bool first = true;
            while (true) {
                h = ppr_rand(rng_seed, (unsigned long long)w, ctr++);
                if ((unsigned int)h >= alpha_u32) break;  // ends with probability 1 - alpha
                const unsigned int r32 = (unsigned int)(h >> 32);
                const Deg deg = out_degree[cur];
                if (deg == 0) {
                    cur = (mode == 0) ? pick_seed(seeds, cdf, nseeds, r32)
                                      : (int)(((unsigned long long)r32 * (unsigned long long)n) >> 32);
                } else if (WT) {
                    const Off lo = out_offset[cur];
                    double x;
                    if (first) {
                        const double k = (double)((unsigned long long)w + walks * (unsigned long long)walkers);
                        x = k * 0.6180339887498949;
                        x -= floor(x);
                    } else {
                        x = (double)r32 * (1.0 / 4294967296.0);
                    }
                    cur = out_indices[ppr_weighted_slot(out_cum, lo, lo + (Off)deg, x)];
                } else {
                    unsigned long long j;
                    if (first) j = ((unsigned long long)w + walks * (unsigned long long)walkers) % (unsigned long long)deg;
                    else j = ((unsigned long long)r32 * (unsigned long long)deg) >> 32;
                    cur = out_indices[out_offset[cur] + (Off)j];
                }
                first = false;
                if (nseeds == 1 && cur == seeds[0]) ++local_start; else atomicAdd(&counts[cur], 1u);
                ++used;
            }
            ++walks;
        }
    }
    // warp-reduce the per-walker tallies: one atomic per warp
    local_start = sr::warp_sum(local_start);
    walks = sr::warp_sum(walks);
    used = sr::warp_sum(used);
    if ((threadIdx.x & 31) == 0) {
        if (local_start) atomicAdd(&counts[seeds[0]], (unsigned int)local_start);
        atomicAdd(&totals[0], walks);
        atomicAdd(&totals[1], used);
    }
}
