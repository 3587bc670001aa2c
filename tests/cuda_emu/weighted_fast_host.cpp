// Entry points of the weighted store's fused path, emulated (tests/test_weighted_fast_emulated.py;
// see cuda_host.h): graph_weighted_fast.cu's kernels around graph_fast_update.cu built for the
// weighted store (FU_WEIGHTED: the commit moves each slot's weight with it).
#include <vector>
#include "cuda_host.h"
#include "idhash.cu"
#define FU_WEIGHTED 1
#include "graph_fast_update.cu"
#include "graph_weighted_fast.cu"

EMU_HASH_INSERT

// The nine launches of WeightedFastUpdater.launch_weighted, `grid` blocks for the grid kernels;
// `hdr` the device buffer wfast_classify stages the structural batch in (64 bytes, then src, dst and the
// insert flags, FU_MAX entries each).
// `stage`: the batch as WeightedFastUpdater stages it (WfStage's layout).
extern "C" void emu_weighted_fast_update(
    const long long* stage, double zero_rel, long long* hkeys, int* hvals, unsigned long long hmask, long long* ext,
    long long* out_off, int* out_deg, int* out_cap, int* out_idx, double* out_wt, long long out_size,
    long long* in_off, int* in_deg, int* in_cap, int* in_idx, double* in_wt, long long in_size, double* W,
    long long* hdr, unsigned char* work, long long work_bytes, unsigned char* wwork,
    long long* counters, long long* hcounters, int grid) {
  run_grid(1, FU_THREADS, [=] { wfast_sort(stage, wwork); });
  run_grid(grid, 256, [=] {
    wfast_pairs(stage, zero_rel, hkeys, hvals, hmask, out_off, out_deg, out_idx, out_wt, in_off, in_deg, in_idx,
                in_wt, wwork);
  });
  run_grid(1, FU_THREADS, [=] { wfast_classify(stage, hdr, wwork); });
  run_grid(1, FU_THREADS, [=] {
    fast_update_hdr(hdr, hkeys, hvals, hmask, ext, out_off, out_deg, out_cap, out_idx, out_size, in_off, in_deg,
                    in_cap, in_idx, in_size, work, work_bytes, counters, hcounters);
  });
  run_grid(2, FU_THREADS, [=] {
    fast_update_plan(out_deg, out_cap, in_deg, in_cap, hkeys, hvals, hmask, ext, work, counters, hcounters);
  });
  run_grid(grid, FU_SCAN_THREADS, [=] { fast_update_scan(out_off, out_idx, in_off, in_idx, work, counters); });
  run_grid(grid, FU_COMMIT_THREADS, [=] {
    fast_update_commit(out_off, out_deg, out_cap, out_idx, in_off, in_deg, in_cap, in_idx, work, counters, out_wt,
                       in_wt);
  });
  run_grid(grid, 256, [=] {
    wfast_weights(hkeys, hvals, hmask, out_off, out_deg, out_idx, out_wt, in_off, in_deg, in_idx, in_wt, wwork, counters);
  });
  run_grid(grid, 256, [=] {
    wfast_rows(hkeys, hvals, hmask, out_off, out_deg, out_wt, W, wwork, counters, hcounters);
  });
}
