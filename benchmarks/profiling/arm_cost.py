"""Host time of packing the next batch's rank loop ahead (``pagerank_gpu.arm_update``), whole and
by piece, on sx-mathoverflow's base after a few one-wait batches (DF-P, ``DANGLING`` mode).

The arming runs beside the running loop, so it is off the batch's path while the loop lasts longer
than the graph's bookkeeping, its upkeep and the arming together; this measures how much host time
that is. Each piece is timed ``N`` times in the state the last batch left (the arming itself is
repeated: each run takes new stamp epochs, which only need to grow).

    SXMO=.device-data/sx-mathoverflow.txt.gz PYTHONPATH=. python3 benchmarks/profiling/arm_cost.py
"""
import os
import sys
import time

import cupy as cp
import numpy as np

sys.path.insert(0, ".")
sys.path.insert(0, os.path.dirname(__file__))
from _update_batches import random_batch, sxmo_base  # noqa: E402
from streamrank.rank.gpu import pagerank as pagerank_gpu
from streamrank.batch import EdgeBatch  # noqa: E402
from streamrank.bench.host_probe import host_probe_us  # noqa: E402
from streamrank.config import RankConfig  # noqa: E402
from streamrank.engine import Engine  # noqa: E402
from streamrank.rank.gpu import frontier_loop, state

n_runs = int(os.environ.get("N", "300"))
src, dst = sxmo_base()
eng = Engine("gpu", "dfp", config=RankConfig(dangling=os.environ.get("DANGLING", "self-loop")))
eng.load_edges(src, dst)
ids = np.unique(np.concatenate([src, dst]))
rng = np.random.default_rng(3)
captured = {}
_launch_update = pagerank_gpu.launch_update


def keep(*a, **kw):
    """launch_update, keeping the last PendingRank (the arming's input)."""
    p = _launch_update(*a, **kw)
    captured["rank"] = p
    return p


pagerank_gpu.launch_update = keep
for _ in range(10):
    eng.apply(EdgeBatch.from_arrays(*random_batch(rng, ids, src, dst, 50)))
cp.cuda.Device().synchronize()  # sync: nothing in flight while the pieces are timed
rank, graph, replay = captured["rank"], eng.graph, eng._stepper.graphs
config, n = rank.config, graph.num_vertices
room = 2 * graph.fast.max_edges
ws = state._workspace(graph, config.dtype, n + room)
x = cp.empty(n + room, dtype=config.dtype)
x_prev = rank.x[:n]
k, grid, image = frontier_loop.loop_parts(graph, ws, x, x_prev, (0,) * 6, config, 2, None)


def t(label, f):
    f()
    ts = []
    for _ in range(n_runs):
        t0 = time.perf_counter_ns()
        f()
        ts.append((time.perf_counter_ns() - t0) / 1e3)
    print(f"  {label:52s} {np.median(ts):7.2f} us (p90 {np.percentile(ts, 90):7.2f})", flush=True)


print(f"host probe {host_probe_us():.1f} us; captures so far {replay.captures}; {n:,} vertices")
t("arm_update (whole)", lambda: pagerank_gpu.arm_update(rank, graph, replay=replay))
print(f"  (captures after it: {replay.captures})")
t("_workspace(graph, dtype, n + room)", lambda: state._workspace(graph, config.dtype, n + room))
t("cp.empty(n + room)", lambda: cp.empty(n + room, dtype=config.dtype))
t("rank.x[:n]", lambda: rank.x[:n])
t("loop_parts (both structs)", lambda: frontier_loop.loop_parts(graph, ws, x, x_prev, (0,) * 6, config, 2, None))
t("  _args_bytes", lambda: state._args_bytes(graph, ws, x, config))
t("  _loop_kernel", lambda: frontier_loop._loop_kernel(config.dtype, 1, 2))
t("_queue_parts", lambda: frontier_loop._queue_parts(graph, ws, k, grid))
key, queue = frontier_loop._queue_parts(graph, ws, k, grid)
t("replay.graph_for (key held)", lambda: replay.graph_for("rank", key, queue))
t("np.frombuffer(image).copy()", lambda: np.frombuffer(image, dtype=np.uint8).copy())
t("_rank_arrays + int(x.data.ptr)", lambda: (pagerank_gpu._rank_arrays(graph), int(rank.x.data.ptr)))
