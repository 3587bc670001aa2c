// Top-k selection of a PPR vector: the candidates above a lower bound of the k-th largest value.
//
// The maxima of disjoint chunks are distinct entries, so the k-th largest chunk maximum is at
// most the k-th largest entry: every entry of the top k is >= it. Three launches, no host
// round trip between them: chunk maxima, their k-th largest (one block), the candidates.
// ppr_kth_largest also serves the batched top-k (ppr_batch.cu), a block per column.
#include "ppr_common.cuh"

// maxima[b] = max of p over chunk b = [b * chunk, min((b + 1) * chunk, n)) (a block per chunk;
// p >= 0, so an empty tail gives 0).
template <typename T>
__global__ void ppr_chunk_max(const T* __restrict__ p, long long n, long long chunk, double* __restrict__ maxima) {
    __shared__ double scratch[32];
    const long long lo = (long long)blockIdx.x * chunk;
    const long long hi = min(lo + chunk, n);
    double m = 0.0;
    for (long long i = lo + threadIdx.x; i < hi; i += blockDim.x) m = fmax(m, (double)p[i]);
    m = sr::block_max(m, scratch);
    if (threadIdx.x == 0) maxima[blockIdx.x] = m;
}

// out[j] = the k-th largest of x[i * width + j] over i < m, for the column j = blockIdx.x (one
// vector: width 1, one block; 1 <= k <= m <= size, size a power of two whose doubles fit in the
// block's dynamic shared memory): a bitonic sort, descending, in shared memory.
__global__ void ppr_kth_largest(const double* __restrict__ x, int m, int width, int size, int k, double* out) {
    extern __shared__ double v[];
    const int j = blockIdx.x;
    for (int i = threadIdx.x; i < size; i += blockDim.x)
        v[i] = (i < m) ? x[(long long)i * width + j] : -1.0;  // x >= 0: pads sort last
    __syncthreads();
    for (int len = 2; len <= size; len <<= 1) {
        for (int stride = len >> 1; stride > 0; stride >>= 1) {
            for (int i = threadIdx.x; i < size; i += blockDim.x) {
                const int o = i ^ stride;
                if (o > i) {
                    const bool desc = (i & len) == 0;
                    const double a = v[i], b = v[o];
                    if (desc ? (a < b) : (a > b)) { v[i] = b; v[o] = a; }
                }
            }
            __syncthreads();
        }
    }
    if (threadIdx.x == 0) out[j] = v[k - 1];
}

// The candidates, written out with everything the host needs in one copy: for every p[i] >= *t
// (t > 0; else every positive entry) a row (store id, value as double bits, external id) of
// three int64 at out[1 + 3 r], for rows r < cap; out[0] counts all the candidates (it may
// exceed cap: the caller then runs again with room for all). The store id is ids[i] when
// has_ids (p in another id order), else i; the external id is external[store id] when has_ext,
// else -1.
template <typename T>
__global__ void ppr_select_pack(const T* __restrict__ p, int n, const double* __restrict__ t,
                                const long long* __restrict__ ids, int has_ids,
                                const long long* __restrict__ external, int has_ext,
                                long long* __restrict__ out, int cap) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const double th = *t;
    double x = 0.0;
    bool take = false;
    if (i < n) {
        x = (double)p[i];
        take = (th > 0.0) ? (x >= th) : (x > 0.0);
    }
    const long long at = (long long)sr::warp_slot(take, reinterpret_cast<unsigned long long*>(out));
    if (take && at < cap) {
        const long long sid = has_ids ? ids[i] : (long long)i;
        out[1 + 3 * at] = sid;
        out[2 + 3 * at] = __double_as_longlong(x);
        out[3 + 3 * at] = has_ext ? external[sid] : -1;
    }
}
