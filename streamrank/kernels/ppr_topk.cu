// Top-k selection of a PPR vector: the candidates above a lower bound of the k-th largest value.
#include "ppr_common.cuh"

// Appends the index of every p[i] >= t to out (at most cap entries; *count may exceed cap,
// which tells the caller to fall back). One atomic per warp: the lanes that take an entry
// get consecutive slots from the warp's ballot. The order of out is arbitrary.
__global__ void ppr_select_ge(const double* __restrict__ p, int n, double t, int* __restrict__ out, int cap,
                              int* __restrict__ count) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const int lane = threadIdx.x & 31;
    const bool take = (i < n) && (p[i] >= t);
    const unsigned mask = __ballot_sync(PPR_FULL_MASK, take);
    if (mask == 0) return;  // uniform across the warp
    const int leader = __ffs(mask) - 1;
    int base = 0;
    if (lane == leader) base = atomicAdd(count, __popc(mask));
    base = __shfl_sync(PPR_FULL_MASK, base, leader);
    if (take) {
        const int pos = base + __popc(mask & ((1u << lane) - 1u));
        if (pos < cap) out[pos] = i;
    }
}
