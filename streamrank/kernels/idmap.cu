// Id map lookup on the device (streamrank/idmap.py): one binary search per id in the sorted
// external ids, in one launch (instead of a searchsorted, two gathers, a compare and a select).

// The internal id of external id x: vals[j] where keys[j] == x (keys sorted ascending), else -1.
__device__ __forceinline__ long long idmap_find(const long long* __restrict__ keys,
                                                const long long* __restrict__ vals, long long n, long long x) {
    long long lo = 0, hi = n;  // first j with keys[j] >= x
    while (lo < hi) {
        const long long mid = (lo + hi) >> 1;
        if (keys[mid] < x) lo = mid + 1; else hi = mid;
    }
    return (lo < n && keys[lo] == x) ? vals[lo] : -1;
}

// out[i] = the internal id of ids[i], or -1.
__global__ void idmap_lookup(const long long* __restrict__ keys, const long long* __restrict__ vals, long long n,
                             const long long* __restrict__ ids, long long m, long long* __restrict__ out) {
    const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < m) out[i] = idmap_find(keys, vals, n, ids[i]);
}

// out[i] = the internal id of ids[i] (or -1), out[m + i] = attr[that id] (or 0): a lookup and
// a per-vertex attribute (e.g. the out-degree) in one launch and one buffer.
template <typename A>
__global__ void idmap_lookup_attr(const long long* __restrict__ keys, const long long* __restrict__ vals,
                                  long long n, const long long* __restrict__ ids, long long m,
                                  const A* __restrict__ attr, long long* __restrict__ out) {
    const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i >= m) return;
    const long long v = idmap_find(keys, vals, n, ids[i]);
    out[i] = v;
    out[m + i] = (v >= 0) ? (long long)attr[v] : 0;
}
