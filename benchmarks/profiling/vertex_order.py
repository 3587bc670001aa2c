"""One full sweep and Static from scratch on R-MAT with the vertex ids in the generator's random
order and relabelled by degree (out+in, out, in), each against cuSPARSE's SpMV, in one process
(docs/architecture.md). GPU only.

    PYTHONPATH=. python3 benchmarks/profiling/vertex_order.py 24
"""
import sys, time
sys.path.insert(0, ".")
import cupy as cp
from streamrank.backend import resolve_backend
from streamrank.bench.inputs import load_base_edges
from streamrank.bench.sweep_bytes import measure_sweeps
from streamrank.config import RankConfig
from streamrank.store.gpu import GpuGraph
from streamrank.rank.gpu import pagerank as pagerank_gpu
b = resolve_backend("gpu")
scale = int(sys.argv[1])
s, d = load_base_edges({"kind": "rmat", "scale": scale, "edge_factor": 16}, xp=cp, seed=0)
n = int(max(int(s.max()), int(d.max()))) + 1
outd = cp.bincount(s, minlength=n); ind = cp.bincount(d, minlength=n)
print("max in", int(ind.max()), "max out", int(outd.max()), "n", n, "e", s.shape[0])
cfg = RankConfig()
from streamrank.ids import plan as id_plan
store_rule = id_plan.DEGREE_ORDER_MIN
id_plan.DEGREE_ORDER_MIN = 2**62  # the store's own degree order off: the orders below are what is measured
def run(name, s2, d2):
    g = GpuGraph.from_edges(s2, d2)
    r = pagerank_gpu.static_pagerank(g, config=cfg)
    t = time.perf_counter(); r = pagerank_gpu.static_pagerank(g, config=cfg); cp.cuda.Device().synchronize()
    print(f"== {name}: static {(time.perf_counter()-t)*1e3:.2f} ms {r.iterations} it")
    measure_sweeps(g, cfg, b, x0=r.x, log=lambda m: print(name, m))
    del g
run("random ids", s, d)
for kname, key in (("out+in", outd + ind), ("out", outd), ("in", ind)):
    order = cp.argsort(-key, kind="stable")
    new = cp.empty(n, dtype=cp.int64); new[order] = cp.arange(n, dtype=cp.int64)
    run(f"sorted by {kname} degree", new[s], new[d])
id_plan.DEGREE_ORDER_MIN = store_rule
run("the store's rule (bulk load by out+in degree)", s, d)
