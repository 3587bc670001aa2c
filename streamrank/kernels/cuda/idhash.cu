// Kernels of the device id map (streamrank/ids/gpu.py); the table itself is in idhash.cuh.
#include "idhash.cuh"

// Insert ids[i] -> first_val + i for i < count (the ids are distinct and absent from the table):
// a rebuild (ids = every external id, first_val = 0) or the new ids of a batch.
__global__ void hash_insert_range(long long* keys, int* vals, unsigned long long mask,
                                  const long long* __restrict__ ids, long long count, long long first_val) {
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    sr::hash_insert(keys, vals, mask, ids[i], static_cast<int>(first_val + i));
  }
}

// out[i] = the internal id of ids[i], or -1.
__global__ void hash_lookup(const long long* __restrict__ keys, const int* __restrict__ vals,
                            unsigned long long mask, const long long* __restrict__ ids, long long m,
                            long long* __restrict__ out) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < m) out[i] = sr::hash_find(keys, vals, mask, ids[i]);
}

// out[i] = the internal id of ids[i] (or -1), out[m + i] = attr[that id] (or 0): a lookup and
// a per-vertex attribute (e.g. the out-degree) in one launch and one buffer.
template <typename A>
__global__ void hash_lookup_attr(const long long* __restrict__ keys, const int* __restrict__ vals,
                                 unsigned long long mask, const long long* __restrict__ ids, long long m,
                                 const A* __restrict__ attr, long long* __restrict__ out) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= m) return;
  const long long v = sr::hash_find(keys, vals, mask, ids[i]);
  out[i] = v;
  out[m + i] = (v >= 0) ? static_cast<long long>(attr[v]) : 0;
}

