// Entry points of the emulated kernels for tests/test_fast_update_emulated.py (see cuda_host.h).
#include "cuda_host.h"
#include "idhash.cu"
#include "graph_fast_update.cu"

extern "C" void emu_hash_insert(long long* keys, int* vals, unsigned long long mask, const long long* ids,
                                long long count, long long first_val) {
  blockDim.x = 1;
  threadIdx.x = 0;
  hash_insert_range(keys, vals, mask, ids, count, first_val);
}

extern "C" void emu_fast_update(const long long* bsrc, const long long* bdst, const unsigned char* bins, int m,
                                long long* hkeys, int* hvals, unsigned long long hmask, long long* ext, int n,
                                int room, long long* out_off, int* out_deg, int* out_cap, int* out_idx,
                                long long out_end, long long out_size, long long* in_off, int* in_deg,
                                int* in_cap, int* in_idx, long long in_end, long long in_size,
                                unsigned char* work, long long work_bytes, long long* changes,
                                long long* counters) {
  blockDim.x = FU_THREADS;
  g_block = new std::barrier<>(FU_THREADS);
  g_warps = new WarpSync[FU_THREADS / 32];
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < FU_THREADS; ++t) {
    threads.emplace_back([=] {
      threadIdx.x = t;
      fast_update(bsrc, bdst, bins, m, hkeys, hvals, hmask, ext, n, room, out_off, out_deg, out_cap, out_idx,
                  out_end, out_size, in_off, in_deg, in_cap, in_idx, in_end, in_size, work, work_bytes,
                  changes, counters);
    });
  }
  for (auto& t : threads) t.join();
  delete g_block;
  delete[] g_warps;
  g_block = nullptr;
  g_warps = nullptr;
}
