// Personalized PageRank by complete-path Monte Carlo: one thread per walker, each with its
// own counter-based random stream (splitmix64 of (seed, walker, counter)). A walker starts
// walks at a seed (drawn from the personalization), counts every vertex visited, moves to a
// random out-neighbour with probability alpha and ends the walk otherwise; it respawns until
// its share of the step budget is spent (the walk in progress is finished, not cut). A first
// step from a seed goes to out-neighbour (walker + walk * walkers) mod outdeg, spreading the
// walkers over the seed's neighbours; visits to the start vertex of single-seed queries are
// counted in a register and added once per warp, so the seed's counter is no hot spot.
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

template <typename Off, typename Deg>
__global__ void ppr_mc_walk(int walkers, long long steps_per_walker, unsigned long long rng_seed,
                            const Off* __restrict__ out_offset, const Deg* __restrict__ out_degree,
                            const int* __restrict__ out_indices, int n,
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
