// Personalized PageRank by power iteration (pull, synchronous): the exact reference.
#include "ppr_common.cuh"

// c[u] = p[u] / outdeg(u) (0 for dangling u); the dangling rank d . p is accumulated into
// *dsum (block reduction, one atomicAdd per block).
template <typename Deg>
__global__ void ppr_power_contrib(const double* __restrict__ p, const Deg* __restrict__ out_degree,
                                  int n, double* c, double* dsum) {
    __shared__ double part[32];
    const int v = blockIdx.x * blockDim.x + threadIdx.x;
    double dm = 0.0;
    if (v < n) {
        const Deg d = out_degree[v];
        const double x = p[v];
        if (d > 0) c[v] = x / (double)d; else { c[v] = 0.0; dm = x; }
    }
    dm = warp_sum(dm);
    if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = dm;
    __syncthreads();
    if (threadIdx.x < 32) {
        double s = (threadIdx.x < (blockDim.x >> 5)) ? part[threadIdx.x] : 0.0;
        s = warp_sum(s);
        if (threadIdx.x == 0 && s != 0.0) atomicAdd(dsum, s);
    }
}

__device__ __forceinline__ void atomic_max_nonneg(double* addr, double v) {
    // non-negative doubles order like their bit patterns as unsigned integers
    atomicMax(reinterpret_cast<unsigned long long*>(addr), (unsigned long long)__double_as_longlong(v));
}

__device__ __forceinline__ double ppr_power_new(double s, int v, const double* pers, const double* dsum,
                                                int mode, double inv_n, double alpha) {
    const double w = (mode == 0) ? pers[v] : inv_n;
    return alpha * s + alpha * (*dsum) * w + (1.0 - alpha) * pers[v];
}

// Thread per vertex for in-degree < switch_degree; writes p_new and the max |change| (*dmax).
template <typename Off, typename Deg>
__global__ void ppr_power_thread(int n, const Off* __restrict__ in_offset, const Deg* __restrict__ in_degree,
                                 const int* __restrict__ in_indices, const double* __restrict__ c,
                                 const double* __restrict__ p, const double* __restrict__ pers,
                                 const double* __restrict__ dsum, int mode, double inv_n, double alpha,
                                 int switch_degree, double* p_new, double* dmax) {
    const int v = blockIdx.x * blockDim.x + threadIdx.x;
    double diff = 0.0;
    if (v < n) {
        const Deg deg = in_degree[v];
        if (deg < (Deg)switch_degree) {
            const Off off = in_offset[v];
            double s = 0.0;
            for (Off j = 0; j < (Off)deg; ++j) s += c[in_indices[off + j]];
            const double x = ppr_power_new(s, v, pers, dsum, mode, inv_n, alpha);
            diff = fabs(x - p[v]);
            p_new[v] = x;
        }
    }
    for (int o = 16; o > 0; o >>= 1) diff = fmax(diff, __shfl_down_sync(PPR_FULL_MASK, diff, o));
    if ((threadIdx.x & 31) == 0 && diff > 0.0) atomic_max_nonneg(dmax, diff);
}

// Warp per vertex for the listed high in-degree vertices.
template <typename Off, typename Deg>
__global__ void ppr_power_warp(const int* __restrict__ list, int m, const Off* __restrict__ in_offset,
                               const Deg* __restrict__ in_degree, const int* __restrict__ in_indices,
                               const double* __restrict__ c, const double* __restrict__ p,
                               const double* __restrict__ pers, const double* __restrict__ dsum, int mode,
                               double inv_n, double alpha, double* p_new, double* dmax) {
    const int warp = (int)((blockIdx.x * (long long)blockDim.x + threadIdx.x) >> 5);
    const int lane = threadIdx.x & 31;
    if (warp >= m) return;
    const int v = list[warp];
    const Off off = in_offset[v];
    const Deg deg = in_degree[v];
    double s = 0.0;
    for (Off j = lane; j < (Off)deg; j += 32) s += c[in_indices[off + j]];
    s = warp_sum(s);
    if (lane == 0) {
        const double x = ppr_power_new(s, v, pers, dsum, mode, inv_n, alpha);
        const double diff = fabs(x - p[v]);
        p_new[v] = x;
        if (diff > 0.0) atomic_max_nonneg(dmax, diff);
    }
}
