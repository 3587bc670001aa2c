"""Per-kernel device time (events around every launch) and per-iteration frontier sizes of one
DF-P and one warm batch at 1e-6, 1e-4 and 1e-2 of the edges on R-MAT (docs/architecture.md). GPU only.

    PYTHONPATH=. python3 benchmarks/profiling/dfp_kernels_rmat.py 24
"""
import sys, time, collections
sys.path.insert(0, ".")
import cupy as cp
from streamrank.bench.inputs import load_base_edges, BatchMaker
from streamrank.config import RankConfig
from streamrank.store.gpu import GpuGraph
from streamrank.rank.gpu import pagerank as pagerank_gpu
from streamrank.rank.gpu import iterations as itm, state as stm, frontier_loop as flm
scale = int(sys.argv[1])
s, d = load_base_edges({"kind": "rmat", "scale": scale, "edge_factor": 16}, xp=cp, seed=0)
g = GpuGraph.from_edges(s, d)
cfg = RankConfig()
x = pagerank_gpu.static_pagerank(g, config=cfg).x
ind = g._in.deg[:g.num_vertices]; outd = g._out.deg[:g.num_vertices]
print("n", g.num_vertices, "m", g.num_edges, "max in", int(ind.max()), "max out", int(outd.max()),
      "in>=1024:", int((ind >= 1024).sum()), "in>=64:", int((ind >= 64).sum()))
names = {}
ok = itm._kernel
def kern(dtype, name):
    f = ok(dtype, name); names[id(f)] = name.split("<")[0]; return f
itm._kernel = kern; stm_kernel = stm._kernel
rec = []
def mk(orig, mod):
    def L(fn, grid, block, args, **kw):
        a, b = cp.cuda.Event(), cp.cuda.Event(); a.record(); orig(fn, grid, block, args, **kw); b.record()
        rec.append((names.get(id(fn), mod + ":" + str(grid)), a, b))
    return L
for mod in (itm, stm, flm, pagerank_gpu):
    mod.launch = mk(mod.launch, mod.__name__.split(".")[-1])
maker = BatchMaker(g, s, d, xp=cp, seed=1)
m = g.num_edges
for frac in (1e-6, 1e-4, 1e-2):
    size = max(1, int(frac * m))
    ch = g.apply(maker.make(size)); cp.cuda.Device().synchronize()
    for algo in ("dfp", "warm"):
        rec.clear()
        t = time.perf_counter()
        r = pagerank_gpu.update_pagerank(algo, g, ch, x, config=cfg); cp.cuda.Device().synchronize()
        wall = (time.perf_counter() - t) * 1e3
        agg = collections.defaultdict(lambda: [0.0, 0])
        for nm, a, b in rec:
            agg[nm][0] += cp.cuda.get_elapsed_time(a, b); agg[nm][1] += 1
        print(f"== frac {frac} size {size} {algo}: wall {wall:.2f} ms, {r.iterations} it, affected sum {sum(r.affected):.3g}")
        print("   frontier per it:", [int(v) for v in r.affected[:60]])
        for nm, (ms, c) in sorted(agg.items(), key=lambda kv: -kv[1][0])[:10]:
            print(f"   {nm}: {ms:.2f} ms over {c} launches")
    x = r.x
