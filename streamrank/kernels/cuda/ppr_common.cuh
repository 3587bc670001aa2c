// Shared helpers for the personalized PageRank kernels (ppr_*.cu).
#pragma once

#include "common.cuh"  // sr::warp_sum, sr::block_sum / block_max, sr::warp_append, SR_FULL_MASK

// Residual accumulation with one of the two write-conflict resolutions.
//   EXCH == 0: hardware atomicAdd on double.
//   EXCH == 1: the software exchange scheme of the write-conflict PageRank paper: swap the
//              target out (leaving 0), add, swap the sum back; if the swap returns a non-zero
//              value another thread stored meanwhile, take that value over and repeat until the
//              value swapped out is zero. Every value taken out of memory is held in a register
//              and written back, so no mass is lost.
// Returns a value the target held right after this thread's contribution (used only for
// the frontier threshold test).
template <int EXCH>
__device__ __forceinline__ double ppr_accumulate(double* addr, double add) {
    if (EXCH == 0) {
        return atomicAdd(addr, add) + add;
    } else {
        unsigned long long* a = reinterpret_cast<unsigned long long*>(addr);
        double wrote = add;
        while (true) {
            double cur = __longlong_as_double((long long)atomicExch(a, 0ULL));
            add += cur;
            wrote = add;
            double displaced = __longlong_as_double(
                (long long)atomicExch(a, (unsigned long long)__double_as_longlong(add)));
            if (displaced == 0.0) break;
            add = displaced;
        }
        return wrote;
    }
}

// Take a vertex's whole residual, leaving 0 (atomic in both schemes: a value held in another
// thread's register during an exchange is written back later and stays for the next round).
__device__ __forceinline__ double ppr_take(double* addr) {
    return __longlong_as_double(
        (long long)atomicExch(reinterpret_cast<unsigned long long*>(addr), 0ULL));
}
