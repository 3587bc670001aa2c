// Device helpers of the power iteration's dense sweep, shared by ppr_power.cu (one launch per
// iteration) and ppr_power_coop.cu (all iterations in one cooperative launch).
#pragma once

#include "ppr_common.cuh"

#define PPR_BUCKETS 8  // 6 lane-group buckets, block per vertex, split vertices
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

// Sum of c over the in-list [off, off + deg), this lane taking positions lane, lane + g, ...
// Four positions per step: their index loads, then their gathers, are independent and in
// flight together (the sweep is bound by load latency, not bandwidth).
template <typename Off, typename Deg, typename T>
__device__ __forceinline__ double pull_sum(const int* __restrict__ in_indices, const T* __restrict__ c,
                                           Off off, Deg deg, int lane, int g) {
    double s0 = 0.0, s1 = 0.0;
    Off j = lane;
    const Off end = (Off)deg;
    const int* idx = in_indices + off;
    for (; j + 3 * g < end; j += 4 * g) {
        const int a0 = idx[j];
        const int a1 = idx[j + g];
        const int a2 = idx[j + 2 * g];
        const int a3 = idx[j + 3 * g];
        s0 += (double)c[a0] + (double)c[a1];
        s1 += (double)c[a2] + (double)c[a3];
    }
    for (; j < end; j += g) s0 += (double)c[idx[j]];
    return s0 + s1;
}

// The epilogue of vertex v once its pull sum s is known: p'[v], c'[v], and this thread's share
// of the dangling sum and of the max change.
template <typename Deg, typename T>
__device__ __forceinline__ void sweep_vertex(int v, double s, const T* __restrict__ p, const double* __restrict__ pers,
                                             const Deg* __restrict__ out_degree, double dsum, int mode, double inv_n,
                                             double alpha, T* __restrict__ p_new, T* __restrict__ c_new,
                                             double& dm, double& diff) {
    const double x = ppr_power_new(s, v, pers, dsum, mode, inv_n, alpha);
    diff = fabs(x - (double)p[v]);  // (a thread finishes at most one vertex per virtual block)
    p_new[v] = (T)x;
    const Deg od = out_degree[v];
    if (od > 0) c_new[v] = (T)(x / (double)od); else { c_new[v] = (T)0; dm = x; }
}

// One virtual block `vb` of a dense iteration. order[] lists the vertices by in-degree;
// bucket b holds order[bstart[b] .. bstart[b+1]) and owns the virtual blocks [blk[b],
// blk[b+1]). Buckets 0-5: groups of 2^b lanes, one vertex each; bucket 6: a block per vertex;
// bucket 7 (in-degree above split): a block per `split` positions of an in-list (split_slot /
// split_part say which), whose partial sums meet in split_acc[slot]; the block that completes
// a vertex (split_count) finishes it and clears both slots for the next iteration. Adds this
// thread's share of the dangling sum to dm and of the max change to diff. `part` (32 doubles)
// and `finish` are the block's shared scratch; every thread of the block must call this.
template <typename Off, typename Deg, typename T>
__device__ __forceinline__ void sweep_block(int vb, const int* __restrict__ order, const int* __restrict__ bstart,
                                            const int* __restrict__ blk, const Off* __restrict__ in_offset,
                                            const Deg* __restrict__ in_degree, const int* __restrict__ in_indices,
                                            const Deg* __restrict__ out_degree, const T* __restrict__ c,
                                            const T* __restrict__ p, const double* __restrict__ pers, double dsum,
                                            int mode, double inv_n, double alpha, T* __restrict__ p_new,
                                            T* __restrict__ c_new, int split, const int* __restrict__ split_slot,
                                            const int* __restrict__ split_part, double* split_acc, int* split_count,
                                            double* part, int* finish, double& dm, double& diff) {
    int b = 0;
    while (b + 1 < PPR_BUCKETS && vb >= blk[b + 1]) ++b;
    const int local_block = vb - blk[b];
    const int count = bstart[b + 1] - bstart[b];
    double vdm = 0.0, vdiff = 0.0;
    if (b < PPR_BUCKETS - 2) {
        const int g = 1 << b;  // lanes per vertex
        const int item = local_block * (int)(blockDim.x >> b) + (int)(threadIdx.x >> b);
        const int lane = threadIdx.x & (g - 1);
        int v = -1;
        double s = 0.0;
        if (item < count) {
            v = order[bstart[b] + item];
            s = pull_sum(in_indices, c, in_offset[v], in_degree[v], lane, g);
        }
        for (int o = g >> 1; o > 0; o >>= 1) s += __shfl_xor_sync(SR_FULL_MASK, s, o);
        if (lane == 0 && v >= 0) sweep_vertex(v, s, p, pers, out_degree, dsum, mode, inv_n, alpha, p_new, c_new, vdm, vdiff);
    } else if (b == PPR_BUCKETS - 2) {  // a block per vertex
        const int v = order[bstart[b] + local_block];
        const double s = sr::block_sum(
            pull_sum(in_indices, c, in_offset[v], in_degree[v], (int)threadIdx.x, (int)blockDim.x), part);
        if (threadIdx.x == 0) sweep_vertex(v, s, p, pers, out_degree, dsum, mode, inv_n, alpha, p_new, c_new, vdm, vdiff);
    } else {  // a slice of a split vertex's in-list
        const int slot = split_slot[local_block];
        const int v = order[bstart[b] + slot];
        const Deg deg = in_degree[v];
        const Off lo = (Off)split_part[local_block] * (Off)split;
        const Off len = min((Off)deg - lo, (Off)split);
        const double s = sr::block_sum(
            pull_sum(in_indices, c, in_offset[v] + lo, len, (int)threadIdx.x, (int)blockDim.x), part);
        if (threadIdx.x == 0) {
            const int parts = (int)(((Off)deg + (Off)split - 1) / (Off)split);
            atomicAdd(&split_acc[slot], s);
            __threadfence();  // the sum is visible before the count says this slice is done
            *finish = (atomicAdd(&split_count[slot], 1) == parts - 1);
        }
        __syncthreads();
        if (threadIdx.x == 0 && *finish) {
            __threadfence();
            const double total = __longlong_as_double(
                (long long)atomicExch(reinterpret_cast<unsigned long long*>(&split_acc[slot]), 0ULL));
            split_count[slot] = 0;
            sweep_vertex(v, total, p, pers, out_degree, dsum, mode, inv_n, alpha, p_new, c_new, vdm, vdiff);
        }
    }
    dm += vdm;
    diff = fmax(diff, vdiff);
}

