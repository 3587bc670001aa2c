"""One float32-contribution sweep on R-MAT: the engine's sweep kernel against stripped copies with
variants (benchmarks/profiling/sweep_probe.cu: hub contributions in shared memory, load hints,
grid size), alternated in one process, medians of the rounds. GPU only.

    PYTHONPATH=. python3 benchmarks/profiling/sweep_probe.py --scale 24 --rounds 3
    ncu --kernel-name regex:'^p?sweep' --metrics ... python3 benchmarks/profiling/sweep_probe.py --once

A variant of the copies is HUB:HINT:GRID:HOT[:MB]: the ids below HUB gathered from shared memory,
HINT the load hints of sweep_probe.cu (1 streaming index loads, 2 ids below HOT kept in L1 and the
others not allocated there, 4 every gather from L2 only, 8 ids below HOT evict-last in L2 and the
others evict-first, 16 ids below HOT evict-last in L2), a grid of GRID*SM + 2*GRID*SM blocks,
MB resident blocks asked of the compiler (default 3). An engine variant is MB:GRID.
"""
import argparse
import pathlib
import statistics
import sys
import time

sys.path.insert(0, ".")
import cupy as cp

from streamrank.backend import resolve_backend
from streamrank.bench.inputs import load_base_keys
from streamrank.config import RankConfig
from streamrank.rank.gpu import sweeps as sweeps_mod
from streamrank.rank.gpu.state import _workspace
from streamrank.rank.gpu.sweeps import run_fixed_sweeps
from streamrank.store.gpu import GpuGraph

p = argparse.ArgumentParser()
p.add_argument("--scale", type=int, default=24)
p.add_argument("--rounds", type=int, default=3)
p.add_argument("--sweeps", type=int, default=20)
p.add_argument("--engine", default="5:8",
               help="engine variants MINBLOCKS:GRIDMUL,... (sweeps._MIN_BLOCKS; gt = m*SM, gb = 2m*SM)")
p.add_argument("--once", action="store_true", help="each kernel once (for ncu)")
p.add_argument("--variants", help="copies HUB:HINT:GRID:HOT[:MB],... (see above)", default="0:0:8:0,0:1:8:0,0:4:8:0,0:2:8:16384,0:2:8:32768,0:2:8:49152,0:3:8:49152,"
                                     "0:3:8:65536,0:3:8:98304,8192:1:8:0,12288:1:8:0,12288:1:2:0,24576:1:2:0")
a = p.parse_args()

variants = []
for v in a.variants.split(","):
    t = tuple(int(x) for x in v.split(":"))
    variants.append(t + (3,) if len(t) == 4 else t)

b = resolve_backend("gpu")
t0 = time.perf_counter()
# the bench's R-MAT: sorted distinct keys in bounded memory, consumed by the bounded build
g = GpuGraph.from_keys(load_base_keys({"kind": "rmat", "scale": a.scale, "edge_factor": 16}, xp=cp, seed=0),
                       id_bound=1 << a.scale)
cp.get_default_memory_pool().free_all_blocks()
n, e = int(g.num_vertices), int(g.num_edges)
print(f"R-MAT {a.scale}: {n:,} vertices, {e:,} edges, built in {time.perf_counter() - t0:.1f} s", flush=True)

sm = cp.cuda.Device().attributes["MultiProcessorCount"]
deg = g._in.deg[:n]
off = g._in.off[:n]
idx = g._in.idx
od = g._out.deg[:n]
big = 1024
rows = [deg < 4, deg >= big, (deg >= 4) & (deg < 16), (deg >= 16) & (deg < 64), (deg >= 64) & (deg < big)]
lists = [cp.nonzero(r)[0].astype(cp.int32) for r in rows]
cnt = cp.asarray([int(x.shape[0]) for x in lists], dtype=cp.int64)
print("buckets (<4, big, 4-15, 16-63, 64-1023):", [int(x) for x in cnt.get()], flush=True)
odh = od.astype(cp.int64)
for h in sorted({8192, 12288, 24576, 49152} | {k[3] for k in variants if k[3] > 0}):
    print(f"gathers from ids < {h}: {float(odh[:h].sum()) / e:.3f} of the edges", flush=True)

cfg = RankConfig()
alpha = float(cfg.alpha)
base = (1.0 - alpha) / n
y0 = cp.full(n, 1.0 / n)
c0 = cp.where(od > 0, y0 / cp.maximum(od, 1), y0).astype(cp.float32)
c1 = cp.empty_like(c0)
y = cp.empty(n, dtype=cp.float64)

src = pathlib.Path(__file__).with_name("sweep_probe.cu").read_text()
mods = {}
for mb in sorted({k[4] for k in variants}):
    names = sorted({f"psweep<{k[0]}, {k[1]}>" for k in variants if k[4] == mb})
    mods[mb] = cp.RawModule(code=src, options=("-std=c++17", f"-DPMB={mb}"), name_expressions=names)
funcs = {}
for key in variants:
    f = mods[key[4]].get_function(f"psweep<{key[0]}, {key[1]}>")
    if key[0]:
        f.max_dynamic_shared_size_bytes = key[0] * 4
    funcs[key] = f


def launch(key, cin, cout):
    h, hint, gmul, hot, _ = key
    gt, gb = gmul * sm, 2 * gmul * sm
    funcs[key]((gt + gb,), (256,), (cin, cout, idx, off, deg, od, y, lists[0], lists[1], lists[2], lists[3],
                                    lists[4], cnt, cp.int32(n), cp.int32(gt), cp.int32(gb), cp.float64(base),
                                    cp.float64(alpha), cp.int32(hot)), shared_mem=h * 4)


def time_probe(key, sweeps):
    cin, cout = c0, c1
    launch(key, cin, cout)  # warm-up
    ev0, ev1 = cp.cuda.Event(), cp.cuda.Event()
    ev0.record()
    for _ in range(sweeps):
        launch(key, cin, cout)
        cin, cout = cout, cin
    ev1.record()
    ev1.synchronize()  # sync: the timed launches have run
    return cp.cuda.get_elapsed_time(ev0, ev1) / sweeps


def engine_variant(mb, gmul):
    """The engine's sweep compiled for ``mb`` resident blocks, its grid gt = gmul*SM, gb = 2*gmul*SM."""
    sweeps_mod._MIN_BLOCKS = mb
    ws = _workspace(g, "float64")
    ws.gt, ws.gb = gmul * sm, 2 * gmul * sm
    ws.part = cp.zeros(3 * (ws.gt + ws.gb), dtype=cp.float64)
    ws.ws_ptrs = None


def time_engine(sweeps, contrib="float32", variant=(5, 8)):
    engine_variant(*variant)
    c = RankConfig(**{**cfg.to_dict(), "sweep_contributions": contrib})
    ev0, ev1 = cp.cuda.Event(), cp.cuda.Event()
    ev0.record()
    run_fixed_sweeps(g, y0, c, sweeps=sweeps)
    ev1.record()
    ev1.synchronize()  # sync: the sweeps have run
    return cp.cuda.get_elapsed_time(ev0, ev1) / sweeps


if a.once:
    for ev in [tuple(int(x) for x in v.split(":")) for v in a.engine.split(",")]:
        engine_variant(*ev)
        for contrib in ("float32", "float64"):
            run_fixed_sweeps(g, y0, RankConfig(**{**cfg.to_dict(), "sweep_contributions": contrib}), sweeps=2)
    for key in funcs:
        launch(key, c0, c1)
    cp.cuda.Device().synchronize()
    sys.exit(0)

# agreement: one sweep of each variant from the same contributions against the baseline's
launch(variants[0], c0, c1)
yref = y.copy()
for key in variants[1:]:
    launch(key, c0, c1)
    print(f"variant {key}: max |y - y_base| = {float(cp.abs(y - yref).max()):.3e}", flush=True)

engines = [tuple(int(x) for x in v.split(":")) for v in a.engine.split(",")]
for ev in engines:
    time_engine(2, variant=ev)
    k = sweeps_mod._sweep_kernel("float64", "sweep<int, double, float, 0>")
    print(f"engine sweep, min blocks {ev[0]}: {k.num_regs} registers, {k.local_size_bytes} B local (spills)", flush=True)
res = {f"engine {ct} mb {ev[0]} grid {ev[1]}": [] for ct in ("f32", "f64") for ev in engines}
res.update({k: [] for k in variants})
for r in range(a.rounds):
    for ev in engines:
        for ct, contrib in (("f32", "float32"), ("f64", "float64")):
            # per sweep: the difference of 2n and n sweeps (the call's setup cancels)
            t1 = time_engine(a.sweeps, contrib, ev) * a.sweeps
            t2 = time_engine(2 * a.sweeps, contrib, ev) * 2 * a.sweeps
            res[f"engine {ct} mb {ev[0]} grid {ev[1]}"].append((t2 - t1) / a.sweeps)
    for key in variants:
        res[key].append(time_probe(key, a.sweeps))
    print(f"round {r + 1}: " + ", ".join(f"{k}: {v[-1]:.3f}" for k, v in res.items()), flush=True)
print(f"\nms per sweep, median of {a.rounds} rounds of {a.sweeps} sweeps (HUB ids in shared memory, HINT, hot ids, "
      f"grid multiplier of {sm} SMs: gt = m*SM, gb = 2m*SM)")
print(f"{'variant':<28}{'median':>9}{'min':>9}{'max':>9}")
for k, v in res.items():
    name = k if isinstance(k, str) else f"hub {k[0]} hint {k[1]} grid {k[2]} hot {k[3]} mb {k[4]}"
    print(f"{name:<28}{statistics.median(v):9.3f}{min(v):9.3f}{max(v):9.3f}")
