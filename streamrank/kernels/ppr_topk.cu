// Top-k selection of a PPR vector: the candidates above a lower bound of the k-th largest value.
//
// The maxima of disjoint chunks are distinct entries, so the k-th largest chunk maximum is at
// most the k-th largest entry: every entry of the top k is >= it. Three launches, no host
// round trip between them: chunk maxima, their k-th largest (one block), the candidates.
#include "ppr_common.cuh"

// maxima[b] = max of p over chunk b = [b * chunk, min((b + 1) * chunk, n)) (a block per chunk;
// p >= 0, so an empty tail gives 0).
__global__ void ppr_chunk_max(const double* __restrict__ p, long long n, long long chunk,
                              double* __restrict__ maxima) {
    __shared__ double scratch[32];
    const long long lo = (long long)blockIdx.x * chunk;
    const long long hi = min(lo + chunk, n);
    double m = 0.0;
    for (long long i = lo + threadIdx.x; i < hi; i += blockDim.x) m = fmax(m, p[i]);
    m = sr::block_max(m, scratch);
    if (threadIdx.x == 0) maxima[blockIdx.x] = m;
}

// *out = the k-th largest of x[0 .. m) (1 <= k <= m <= size, size a power of two whose
// doubles fit in the block's dynamic shared memory): a bitonic sort, descending, in one block.
__global__ void ppr_kth_largest(const double* __restrict__ x, int m, int size, int k, double* out) {
    extern __shared__ double v[];
    for (int i = threadIdx.x; i < size; i += blockDim.x) v[i] = (i < m) ? x[i] : -1.0;  // x >= 0: pads sort last
    __syncthreads();
    for (int len = 2; len <= size; len <<= 1) {
        for (int stride = len >> 1; stride > 0; stride >>= 1) {
            for (int i = threadIdx.x; i < size; i += blockDim.x) {
                const int j = i ^ stride;
                if (j > i) {
                    const bool desc = (i & len) == 0;
                    const double a = v[i], b = v[j];
                    if (desc ? (a < b) : (a > b)) { v[i] = b; v[j] = a; }
                }
            }
            __syncthreads();
        }
    }
    if (threadIdx.x == 0) *out = v[k - 1];
}

// Appends the index of every p[i] >= *t (t > 0; with t <= 0 every positive entry) to out
// (sized for all n; order arbitrary) with sr::warp_append, one atomic per warp.
__global__ void ppr_select_ge(const double* __restrict__ p, int n, const double* __restrict__ t,
                              int* __restrict__ out, int* __restrict__ count) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const double th = *t;
    bool take = false;
    if (i < n) take = (th > 0.0) ? (p[i] >= th) : (p[i] > 0.0);
    sr::warp_append<int>(take, i, out, count);  // every lane calls it
}
