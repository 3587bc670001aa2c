// Device hash map of external vertex ids (streamrank/ids/gpu.py): open addressing with linear
// probing over a power-of-two table. keys[] holds external ids (non-negative int64; -1 = empty
// slot), vals[] the internal ids (int32). The host keeps the load factor at or below 1/2, so a
// probe always meets an empty slot. Entries are never removed.
#pragma once

#define SR_HASH_EMPTY (-1LL)

namespace sr {

// splitmix64's finalizer: consecutive ids spread over the whole table.
__device__ __forceinline__ unsigned long long hash_mix(long long key) {
  unsigned long long x = static_cast<unsigned long long>(key);
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

// The internal id of `key`, or -1. `mask` = table size - 1.
__device__ __forceinline__ long long hash_find(const long long* keys, const int* vals,
                                               unsigned long long mask, long long key) {
  unsigned long long h = hash_mix(key) & mask;
  while (true) {
    const long long k = keys[h];
    if (k == key) return static_cast<long long>(vals[h]);
    if (k == SR_HASH_EMPTY) return -1;
    h = (h + 1) & mask;
  }
}

// Insert `key` -> `val` (concurrent inserts of distinct keys are safe: a slot is claimed with
// atomicCAS). A key already present gets its value overwritten.
__device__ __forceinline__ void hash_insert(long long* keys, int* vals, unsigned long long mask,
                                            long long key, int val) {
  const unsigned long long empty = static_cast<unsigned long long>(SR_HASH_EMPTY);
  const unsigned long long want = static_cast<unsigned long long>(key);
  unsigned long long h = hash_mix(key) & mask;
  while (true) {
    const unsigned long long prev =
        atomicCAS(reinterpret_cast<unsigned long long*>(keys + h), empty, want);
    if (prev == empty || prev == want) {
      vals[h] = val;
      return;
    }
    h = (h + 1) & mask;
  }
}

}  // namespace sr
