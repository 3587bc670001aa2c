// Top-k selection of a PPR vector: the candidates above a lower bound of the k-th largest value.
#include "ppr_common.cuh"

// Appends the index of every p[i] >= t to out (sized for all n; order arbitrary) with
// sr::warp_append, one atomic per warp.
__global__ void ppr_select_ge(const double* __restrict__ p, int n, double t, int* __restrict__ out,
                              int* __restrict__ count) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    sr::warp_append<int>((i < n) && (p[i] >= t), i, out, count);  // every lane calls it
}
