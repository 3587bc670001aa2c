"""Where the GPU graph update's time goes by batch size on R-MAT.

Applies random batches (as ``streamrank bench`` makes them: 80% insertions between existing
vertices, 20% deletions of present edges) of 2,000 / 26,000 / 100,000 edges (or SIZES) to a
GpuGraph, prints the median wall time per batch, then the same batches' stages with a device
sync after each (``GpuGraph.stage_ms``), then the time of single CuPy operations at 26,000
elements. GPU only. For an A/B, run it alternately with PYTHONPATH at two checkouts.

    PYTHONPATH=. python3 benchmarks/profiling/graph_update_stages.py [SCALE [SIZES]]
"""
import sys, time
import numpy as np
import cupy as cp
from streamrank.bench.rmat import rmat_edges
from streamrank.store.gpu import GpuGraph
from streamrank.batch import EdgeBatch
from streamrank.backend import to_host

scale = int(sys.argv[1]) if len(sys.argv) > 1 else 22
s, d = rmat_edges(scale, xp=cp)
g = GpuGraph.from_edges(s, d)
E = g.num_edges
print(f"rmat:{scale}: {g.num_vertices} vertices, {E} edges")
es, ed = (to_host(a) for a in g.edges_external())
ext = to_host(g.ids.external)
sizes = [int(x) for x in sys.argv[2].split(",")] if len(sys.argv) > 2 else [2000, 26000, 100000]
rng = np.random.default_rng(0)
def batch(k):
    ins = rng.random(k) < 0.8
    pick = rng.integers(0, len(es), k)
    bs = np.where(ins, ext[rng.integers(0, len(ext), k)], es[pick])
    bd = np.where(ins, ext[rng.integers(0, len(ext), k)], ed[pick])
    return EdgeBatch.from_arrays(cp.asarray(bs), cp.asarray(bd), cp.asarray(ins), xp=cp)
for k in sizes:
    bs = [batch(k) for _ in range(6)]
    g.apply(bs[0]); cp.cuda.Device().synchronize()
    t = []
    for b in bs[1:3]:
        t0 = time.perf_counter(); g.apply(b); cp.cuda.Device().synchronize(); t.append(time.perf_counter() - t0)
    g.stage_ms = {}
    for b in bs[3:]:
        g._t = time.perf_counter(); g.apply(b)
    st = {kk: v / 3 for kk, v in g.stage_ms.items()}
    g.stage_ms = None
    print(f"batch {k}: plain {np.median(t)*1e3:.2f} ms; staged: " + ", ".join(f"{kk} {v:.3f}" for kk, v in st.items()))
# single ops at 26k
k = 26000
x = cp.asarray(rng.integers(0, 1 << 40, k)); y = cp.asarray(rng.integers(0, 1 << 40, k)); a = cp.arange(k, dtype=cp.int64)
def tm(f, r=20):
    f(); cp.cuda.Device().synchronize(); t0 = time.perf_counter()
    for _ in range(r): f()
    cp.cuda.Device().synchronize(); return (time.perf_counter() - t0) / r * 1e3
print(f"26k ops (ms): lexsort3 {tm(lambda: cp.lexsort(cp.stack([a, y, x]))):.3f}, sort {tm(lambda: cp.sort(x)):.3f}, "
      f"argsort {tm(lambda: cp.argsort(x)):.3f}, unique {tm(lambda: cp.unique(x)):.3f}, nonzero {tm(lambda: cp.nonzero(x > 5)[0]):.3f}, "
      f"cumsum {tm(lambda: cp.cumsum(x)):.3f}, where {tm(lambda: cp.where(x > 3, x, y)):.3f}, get {tm(lambda: x[:4].get()):.3f}")
