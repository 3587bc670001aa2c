// Id map lookup on the device (streamrank/idmap.py): one binary search per id in the sorted
// external ids, in one launch (instead of a searchsorted, two gathers, a compare and a select).

// out[i] = vals[j] where keys[j] == ids[i] (keys sorted ascending, n > 0), else -1.
__global__ void idmap_lookup(const long long* __restrict__ keys, const long long* __restrict__ vals, long long n,
                             const long long* __restrict__ ids, long long m, long long* __restrict__ out) {
    const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i >= m) return;
    const long long x = ids[i];
    long long lo = 0, hi = n;  // first j with keys[j] >= x
    while (lo < hi) {
        const long long mid = (lo + hi) >> 1;
        if (keys[mid] < x) lo = mid + 1; else hi = mid;
    }
    out[i] = (lo < n && keys[lo] == x) ? vals[lo] : -1;
}
