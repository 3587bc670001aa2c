"""What the host pays to launch a one-wait batch's captured CUDA graphs, in the batch and alone.

``graph_update_scale.py PARTS=1`` times ``BatchGraphs.replay`` of the graph update at 11-14 us on
a slow host, where ``host_costs.py`` times the launch of a graph of 1-8
empty kernel nodes at 1.8-2.7 us. This script finds where the difference is, in one process on
sx-mathoverflow's base (uniform mode, DF-P, random batches of ``SIZE`` edges as in
graph_update_scale.py):

1. in each batch, the host time of each captured graph's ``launch()`` call alone (the graph
   update's and the rank loop's, whether armed between batches or replayed by
   ``BatchGraphs.replay``), next to the fixed host work of ``streamrank.bench.host_probe`` just before;
2. after the batches, with the device idle: the graph update's captured graph launched again
   (the last batch replayed: its edges are present, so it changes nothing), an empty graph of 4
   kernel nodes, and the update's graph on a stream of its own; each right after a sync, and after
   ``GAP_MS`` (5) of sleep;
3. what the host does in such a gap: the update's graph launch and the fixed host work after
   ``GAP_MS`` asleep, spinning in Python, and spinning with a ``cudaStreamQuery`` every 50 us.

    SXMO=.device-data/sx-mathoverflow.txt.gz PYTHONPATH=. python3 benchmarks/profiling/replay_cost.py
"""
import os
import sys
import time

import cupy as cp
import numpy as np

sys.path.insert(0, ".")
sys.path.insert(0, os.path.dirname(__file__))
from _probe_graph import empty_graph  # noqa: E402
from _update_batches import random_batch, sxmo_base  # noqa: E402
from streamrank.rank.gpu import capture as gpu_batch_graph
from streamrank.store import gpu_fast as graph_gpu_fast
from streamrank.batch import EdgeBatch  # noqa: E402
from streamrank.bench.host_probe import fixed_host_work_us  # noqa: E402
from streamrank.config import RankConfig  # noqa: E402
from streamrank.engine import Engine  # noqa: E402
from streamrank.rank.gpu import frontier_loop

size, batches = int(os.environ.get("SIZE", "1000")), int(os.environ.get("BATCHES", "60"))
gap_s = float(os.environ.get("GAP_MS", "5")) / 1e3
LAUNCH = {"graph": [], "rank": []}


def timed_replay(self, slot, key, queue):
    """BatchGraphs.replay with the launch call alone timed."""
    graph = self.graph_for(slot, key, queue)
    if graph is None:
        return False
    t = time.perf_counter_ns()
    graph.launch()
    LAUNCH[slot].append((time.perf_counter_ns() - t) / 1e3)
    return True


gpu_batch_graph.BatchGraphs.replay = timed_replay


class _TimedLaunch:
    """A captured graph whose ``launch()`` call is timed (the graph update's, armed between batches
    by FastUpdater.arm and launched by launch_armed without BatchGraphs.replay)."""

    def __init__(self, graph, slot):
        self.graph, self.slot = graph, slot

    def launch(self):
        t = time.perf_counter_ns()
        self.graph.launch()
        LAUNCH[self.slot].append((time.perf_counter_ns() - t) / 1e3)


_arm = graph_gpu_fast.FastUpdater.arm


def timed_arm(self, *a, **kw):
    """FastUpdater.arm, the armed graph's launch timed."""
    _arm(self, *a, **kw)
    if self._armed is not None:
        version, arrays, graph = self._armed
        self._armed = (version, arrays, _TimedLaunch(graph, "graph"))


graph_gpu_fast.FastUpdater.arm = timed_arm
_arm_loop = frontier_loop.arm_loop


def timed_arm_loop(*a, **kw):
    """frontier_loop.arm_loop, the armed loop's launch timed (launch_armed_loop replays it without
    BatchGraphs.replay)."""
    armed = _arm_loop(*a, **kw)
    return None if armed is None else armed._replace(graph=_TimedLaunch(armed.graph, "rank"))


frontier_loop.arm_loop = timed_arm_loop

src, dst = sxmo_base()
eng = Engine("gpu", "dfp", config=RankConfig(dangling="uniform"))
eng.load_edges(src, dst)
ids = np.unique(np.concatenate([src, dst]))
rng = np.random.default_rng(3)
probe, graph_ms = [], []
for b in range(batches + 5):
    batch = EdgeBatch.from_arrays(*random_batch(rng, ids, src, dst, size))
    probe.append(fixed_host_work_us())
    st = eng.apply(batch)
    graph_ms.append(st.graph_ms)
    if b == 4:
        for v in LAUNCH.values():
            v.clear()
        probe.clear()
        graph_ms.clear()
md = lambda v: float(np.median(v)) if len(v) else float("nan")  # noqa: E731
print(f"batches of {size} edges: {len(graph_ms)}; graph_ms median {md(graph_ms) * 1e3:.1f} us; fixed host work "
      f"median {md(probe):.1f} us; launch() of the captured graphs in the batch: graph update "
      f"{md(LAUNCH['graph']):.2f} us (p10 {np.percentile(LAUNCH['graph'], 10):.2f}, p90 "
      f"{np.percentile(LAUNCH['graph'], 90):.2f}), rank loop {md(LAUNCH['rank']):.2f} us", flush=True)

update = eng._stepper.graphs._slots["graph"][1]
stream = cp.cuda.get_current_stream()
empty = empty_graph(4)
own = cp.cuda.Stream(non_blocking=True)


def alone(label, g, on=None, gap=0.0, n=200):
    ts = []
    for _ in range(n):
        cp.cuda.Device().synchronize()  # sync: the device idle before the launch, as before a batch
        if gap:
            time.sleep(gap)
        t = time.perf_counter_ns()
        g.launch(on) if on is not None else g.launch()
        ts.append((time.perf_counter_ns() - t) / 1e3)
    cp.cuda.Device().synchronize()  # sync: the last launch done
    print(f"  {label:58s} median {md(ts):6.2f} us, p90 {np.percentile(ts, 90):6.2f}", flush=True)


print(f"alone (current stream {'legacy default' if stream.ptr == 0 else hex(stream.ptr)}):")
for gap in (0.0, gap_s):
    tag = f", after {gap * 1e3:.0f} ms asleep" if gap else ""
    alone("graph update's graph (the last batch again)" + tag, update, gap=gap)
    alone("empty graph of 4 kernel nodes" + tag, empty, gap=gap)
    alone("graph update's graph on a stream of its own" + tag, update, on=own, gap=gap)
    alone("empty graph on a stream of its own" + tag, empty, on=own, gap=gap)


def gap(kind: str) -> None:
    """Idle the host for GAP_MS: asleep, spinning in Python, or spinning with a stream query
    every 50 us (a CUDA call that touches the driver without waiting)."""
    if kind == "sleep":
        time.sleep(gap_s)
        return
    end = time.perf_counter() + gap_s
    nxt = 0.0
    while (now := time.perf_counter()) < end:
        if kind == "spin+query" and now >= nxt:
            stream.done  # cudaStreamQuery: the stream is idle, so it returns at once
            nxt = now + 50e-6


print(f"after a gap of {gap_s * 1e3:.0f} ms (median of 100):")
for kind in ("sleep", "spin", "spin+query", "sleep", "spin", "spin+query"):
    launch_us, work_us = [], []
    for _ in range(100):
        cp.cuda.Device().synchronize()  # sync: the device idle before the gap
        gap(kind)
        t = time.perf_counter_ns()
        update.launch()
        launch_us.append((time.perf_counter_ns() - t) / 1e3)
        cp.cuda.Device().synchronize()  # sync: the launch done before the host work is timed
        gap(kind)
        work_us.append(fixed_host_work_us())
    print(f"  {kind:12s} graph launch {md(launch_us):6.2f} us, fixed host work {md(work_us):6.1f} us", flush=True)
