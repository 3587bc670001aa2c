// Entry points of the emulated kernels for tests/test_fast_update_emulated.py (see cuda_host.h).
#include <vector>
#include "cuda_host.h"
#include "idhash.cu"
#include "graph_fast_update.cu"

EMU_HASH_INSERT

// The three grid kernels after the first one: fast_update_plan (two blocks), then
// fast_update_scan and fast_update_commit, `grid` blocks each.
static void run_lists(long long* hkeys, int* hvals, unsigned long long hmask, long long* ext, long long* out_off,
                      int* out_deg, int* out_cap, int* out_idx, long long* in_off, int* in_deg, int* in_cap,
                      int* in_idx, unsigned char* work, long long* counters, long long* hcounters, int grid) {
  run_grid(2, FU_THREADS, [=] {
    fast_update_plan(out_deg, out_cap, in_deg, in_cap, hkeys, hvals, hmask, ext, work, counters, hcounters);
  });
  run_grid(grid, FU_SCAN_THREADS, [=] { fast_update_scan(out_off, out_idx, in_off, in_idx, work, counters); });
  run_grid(grid, FU_COMMIT_THREADS, [=] {
    fast_update_commit(out_off, out_deg, out_cap, out_idx, in_off, in_deg, in_cap, in_idx, work, counters, nullptr,
                       nullptr);  // (the unweighted build: no weights)
  });
}

// The four launches of GpuGraph's fast path; `grid` blocks for the two grid kernels; `hcounters`
// (may be null) stands for the mapped host copy of the counters.
extern "C" void emu_fast_update(const long long* bsrc, const long long* bdst, const unsigned char* bins, int m,
                                long long* hkeys, int* hvals, unsigned long long hmask, long long* ext, int n,
                                int room, long long* out_off, int* out_deg, int* out_cap, int* out_idx,
                                long long out_end, long long out_size, long long* in_off, int* in_deg,
                                int* in_cap, int* in_idx, long long in_end, long long in_size,
                                unsigned char* work, long long work_bytes, long long* changes,
                                long long* counters, long long* hcounters, int grid) {
  run_grid(1, FU_THREADS, [=] {
    fast_update(bsrc, bdst, bins, m, hkeys, hvals, hmask, ext, n, room, out_off, out_deg, out_cap, out_idx,
                out_end, out_size, in_off, in_deg, in_cap, in_idx, in_end, in_size, work, work_bytes, changes,
                counters, hcounters);
  });
  run_lists(hkeys, hvals, hmask, ext, out_off, out_deg, out_cap, out_idx, in_off, in_deg, in_cap, in_idx, work,
            counters, hcounters, grid);
}

// The same with the batch and its sizes in a staged buffer (fast_update_hdr: a 64-byte header, then
// src, dst and the insert flags, FU_MAX entries each; on the GPU mapped pinned memory).
extern "C" void emu_fast_update_hdr(const long long* hdr, long long* hkeys, int* hvals, unsigned long long hmask,
                                    long long* ext, long long* out_off, int* out_deg, int* out_cap, int* out_idx,
                                    long long out_size, long long* in_off, int* in_deg, int* in_cap, int* in_idx,
                                    long long in_size, unsigned char* work, long long work_bytes, long long* counters,
                                    long long* hcounters, int grid) {
  run_grid(1, FU_THREADS, [=] {
    fast_update_hdr(hdr, hkeys, hvals, hmask, ext, out_off, out_deg, out_cap, out_idx, out_size, in_off, in_deg,
                    in_cap, in_idx, in_size, work, work_bytes, counters, hcounters);
  });
  run_lists(hkeys, hvals, hmask, ext, out_off, out_deg, out_cap, out_idx, in_off, in_deg, in_cap, in_idx, work,
            counters, hcounters, grid);
}

// Step 4's block sort alone (fast_update_block.cuh) on `keys` (P positions; top = P: one sorted
// array, P / 2: two halves sorted independently).
extern "C" void emu_block_sort_keys(long long* keys, int P, int top) {
  std::vector<long long> scratch(P > 0 ? P : 1, -7);  // the sort's second shared array
  long long* const tmp = scratch.data();
  run_grid(1, FU_THREADS, [=] { block_sort_keys(keys, tmp, P, top); });
}
