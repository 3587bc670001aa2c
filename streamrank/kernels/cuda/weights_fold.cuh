// The fold of one pair's records in arrival order under the weighted store's rule (the CPU
// store's, kernels/cpu/weighted_csr.py), shared by the device-planned update (graph_weights.cu)
// and the fused one (graph_weighted_fast.cu).
#pragma once

namespace {

__device__ __forceinline__ double wfold_nan() { return __longlong_as_double(0x7ff8000000000000LL); }

// The weight after records lo .. hi - 1 from `w` (NaN: absent); record(r, insert, x) gives record
// r's kind and weight (NaN on a deletion: none given). `set` (summing 0): an insertion sets the
// weight, a deletion removes the edge. `sum`: an insertion adds, a deletion with a weight
// subtracts (the edge goes when at most zero_rel of the weight before is left), one without
// removes it.
template <typename Record>
__device__ __forceinline__ double fold_records(double w, long long lo, long long hi, Record record, int summing,
                                               double zero_rel) {
  for (long long r = lo; r < hi; ++r) {
    bool insert;
    double x;
    record(r, insert, x);
    if (insert) {
      w = (summing && !isnan(w)) ? w + x : x;
    } else if (isnan(w)) {
      continue;
    } else if (summing && !isnan(x)) {
      const double left = w - x;
      w = left > zero_rel * w ? left : wfold_nan();
    } else {
      w = wfold_nan();
    }
  }
  return w;
}

}  // namespace
