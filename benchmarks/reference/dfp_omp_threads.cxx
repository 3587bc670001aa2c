// Thread-scaling driver for the reference DF-P's OpenMP method (pagerankPruneDynamicFrontierOmp).
//
// Built by benchmarks/cpu_threads.py against the headers of the reference implementation
// (.device-data/anchors, puzzlef/pagerank-cuda-dynamic); it calls that code unchanged and only
// replaces its main.cu's driver: the same temporal protocol (ROWS vertices created up front, a
// self-loop on every vertex, the first 90% of the lines as the base graph, then BATCHES
// insert-only batches of FRACTION * SIZE lines), but it runs only the OpenMP DF-P method, once
// per thread count in THREADS for every batch, each thread count continuing from its own
// previous ranks as the reference's driver does. The graph update and the error's exact ranks
// (pagerankStaticOmp, 500 iterations, as the reference's driver) run on all threads, untimed.
// Output: one line per batch and thread count in the reference's log format, so the same
// summary applies.
//
// Usage: dfp_omp_threads FILE ROWS SIZE FRACTION THREADS [BATCHES] [FRONTIER_TOL PRUNE_TOL]
//   THREADS: comma-separated thread counts, e.g. 1,2,4,8,16
#define BUILD  0
#define OPENMP 1
#include <cstdio>
#include <cstdlib>
#include <string>
#include <sstream>
#include <vector>
#include <omp.h>
#include "inc/_main.hxx"
#include "inc/Graph.hxx"
#include "inc/snap.hxx"
#include "inc/csr.hxx"
#include "inc/properties.hxx"
#include "inc/duplicate.hxx"
#include "inc/transpose.hxx"
#include "inc/selfLoop.hxx"
#include "inc/batch.hxx"
#include "inc/pagerank.hxx"
#include "inc/pagerankPrune.hxx"

using namespace std;

int main(int argc, char **argv) {
  if (argc < 6) { fprintf(stderr, "usage: %s FILE ROWS SIZE FRACTION THREADS [BATCHES] [FTOL PTOL]\n", argv[0]); return 2; }
  const char *file = argv[1];
  size_t rows = strtoull(argv[2], nullptr, 10);
  size_t size = strtoull(argv[3], nullptr, 10);
  double fraction = strtod(argv[4], nullptr);
  vector<int> threads;
  { stringstream ss(argv[5]); string t; while (getline(ss, t, ',')) threads.push_back(stoi(t)); }
  int batches = argc > 6 ? atoi(argv[6]) : 20;
  double ftol = argc > 8 ? strtod(argv[7], nullptr) : 1e-6;
  double ptol = argc > 8 ? strtod(argv[8], nullptr) : 1e-6;
  int most = omp_get_max_threads();
  using V = double;
  DiGraph<uint32_t> x;
  ifstream fstream(file);
  readTemporalOmpW(x, fstream, false, false, rows, size_t(0.90 * size));
  auto fl = [](auto u) { return true; };
  x = addSelfLoopsOmp(x, None(), fl);
  auto xt = transposeWithDegreeOmp(x);
  auto r0 = pagerankStaticOmp(xt, PagerankOptions<V>(1, 1e-100));
  vector<vector<V>> prev(threads.size(), r0.ranks);
  vector<tuple<uint32_t, uint32_t>> deletions, insertions;
  for (int b = 0; b < batches; ++b) {
    omp_set_num_threads(most);
    auto y = duplicate(x);
    insertions.clear();
    auto fb = [&](auto u, auto v, auto w) { insertions.push_back({u, v}); };
    readTemporalDo(fstream, false, false, rows, size_t(fraction * size), fb);
    tidyBatchUpdateU(deletions, insertions, y);
    applyBatchUpdateOmpU(y, deletions, insertions);
    auto yt = transposeWithDegreeOmp(y);
    auto s0 = pagerankStaticOmp(yt, PagerankOptions<V>(1, 1e-100));
    for (size_t i = 0; i < threads.size(); ++i) {
      omp_set_num_threads(threads[i]);
      #pragma omp parallel
      { }  // the team of this size exists before the timed call
      auto a = pagerankPruneDynamicFrontierOmp<true>(x, xt, y, yt, deletions, insertions, &prev[i],
                                                     PagerankOptions<V>(1, 1e-10, ftol, ptol));
      omp_set_num_threads(most);
      auto err = l1NormDeltaOmp(a.ranks, s0.ranks);
      printf("{-%.3e/+%.3e batchf, %03d batchi, %03d threads} -> {%09.3fms, %09.3fms init, %09.3fms mark, "
             "%09.3fms comp, %03d iter, %.2e err} pagerankPruneDynamicFrontierOmp\n",
             0.0, fraction, b, threads[i], a.time, a.initializationTime, a.markingTime, a.computationTime,
             a.iterations, err);
      copyValuesOmpW(prev[i], a.ranks);
    }
    fflush(stdout);
    swap(x, y);
    swap(xt, yt);
  }
  return 0;
}
