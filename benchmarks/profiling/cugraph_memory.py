"""Device bytes per edge that cuGraph (pylibcugraph) takes to build its graph from the store's
edges and run PageRank, as the bench's cuGraph baseline does: RMM's statistics (every allocation
pylibcugraph makes goes through RMM) plus the input arrays the bench hands it (CuPy). Calibrates
``streamrank.bench.baselines.CUGRAPH_BYTES_PER_EDGE``. GPU with pylibcugraph and rmm only.

    PYTHONPATH=. python3 benchmarks/profiling/cugraph_memory.py 22 24 25
"""
import sys

sys.path.insert(0, ".")
import cupy as cp
import rmm.statistics

from streamrank.bench.inputs import load_base_keys
from streamrank.oracle.cugraph_static import build_cugraph_graph, pagerank_on
from streamrank.store.gpu import GpuGraph

rmm.statistics.enable_statistics()
pool = cp.get_default_memory_pool()
print(f"{'R-MAT':>6}{'edges':>15}{'inputs B/e':>12}{'build B/e':>11}{'+ PageRank B/e':>16}{'held B/e':>10}")
for scale in (int(a) for a in sys.argv[1:]):
    g = GpuGraph.from_keys(load_base_keys({"kind": "rmat", "scale": scale, "edge_factor": 16}, xp=cp, seed=0),
                           id_bound=1 << scale)
    before = pool.used_bytes()
    s, d = g.edges()  # what the bench passes (the store's edge list)
    e = int(s.shape[0])
    inputs = pool.used_bytes() - before
    pool.free_all_blocks()
    with rmm.statistics.statistics():
        h, cg = build_cugraph_graph(s, d, g.num_vertices, weight_dtype="float64")
        cp.cuda.Device().synchronize()  # sync: the build's allocations are done
        built = rmm.statistics.get_statistics()
        build_peak, held = built.peak_bytes, built.current_bytes
        p0 = cp.full(g.num_vertices, 1.0 / g.num_vertices)
        p = pagerank_on(h, cg, tol=1e-6, graph_dtype="float64", initial=p0)
        cp.cuda.Device().synchronize()  # sync: PageRank has run
        peak = rmm.statistics.get_statistics().peak_bytes
    # the build's own CuPy temporaries (int32 copies, float64 weights) count beside RMM's
    cupy_peak = pool.total_bytes() - before - inputs
    print(f"{scale:>6}{e:>15,}{inputs / e:>12.1f}{(build_peak + cupy_peak) / e:>11.1f}{(peak + cupy_peak) / e:>16.1f}"
          f"{held / e:>10.1f}", flush=True)
    del h, cg, p, p0, s, d, g
    pool.free_all_blocks()
