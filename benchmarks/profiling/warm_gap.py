"""Does the host stay fast through a gap if the gap keeps re-running the work that follows it?
GPU only.

A batch's host work runs 2-3x slower after a gap of a few ms (an R-MAT batch's 11 ms flood,
sleeping, or spinning in Python), and ``replay_cost.py`` times a graph's ``launch()`` at 20-37 us
after 5 ms instead of 2.5. If the cause is that the host's caches lose the working set of
that work during the gap (another tenant of the core, or its sibling), re-running the same work
during the gap should keep it fast. Each round: a gap of ``GAP_MS`` filled one way, then the timed
work: the fixed host work of ``streamrank.bench.host_probe`` and then an event's ``record()`` and a
4-node graph's ``launch()`` into an idle stream (what a one-wait batch does before its update runs).
Ways to fill the gap:

- ``sleep``: ``time.sleep``;
- ``spin``: a tight Python loop on the clock;
- ``spin + query``: the same, with ``stream.done`` (``cudaStreamQuery``) every ``EVERY_US``;
- ``spin + host work``: the fixed host work every ``EVERY_US``;
- ``spin + launches``: an event record and the launch of another 4-node graph on a side stream
  every ``EVERY_US`` (the same driver paths as the timed calls);
- ``spin + both``: the host work and the side launches every ``EVERY_US``.

    PYTHONPATH=. [GAP_MS=5] [EVERY_US=100] [N=100] python3 benchmarks/profiling/warm_gap.py
"""
import os
import sys
import time

import cupy as cp
import numpy as np

sys.path.insert(0, ".")
sys.path.insert(0, os.path.dirname(__file__))
from _probe_graph import empty_graph  # noqa: E402
from streamrank.bench.host_probe import fixed_host_work, fixed_host_work_us  # noqa: E402

GAP = float(os.environ.get("GAP_MS", "5")) * 1e-3
EVERY = float(os.environ.get("EVERY_US", "100")) * 1e-6
N = int(os.environ.get("N", "100"))
stream = cp.cuda.Stream(non_blocking=True)
side = cp.cuda.Stream(non_blocking=True)
graph, side_graph = empty_graph(4), empty_graph(4)
ev, side_ev = cp.cuda.Event(), cp.cuda.Event()


def fill(kind: str) -> None:
    end = time.perf_counter() + GAP
    if kind == "sleep":
        time.sleep(GAP)
        return
    nxt = 0.0
    while (now := time.perf_counter()) < end:
        if kind == "spin" or now < nxt:
            continue
        nxt = now + EVERY
        if kind == "spin + query":
            stream.done
        if kind in ("spin + host work", "spin + both"):
            fixed_host_work()
        if kind in ("spin + launches", "spin + both"):
            side_ev.record(side)
            side_graph.launch(side)


print(f"device: {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}; gap {GAP * 1e3:g} ms, "
      f"work in it every {EVERY * 1e6:g} us, {N} rounds; medians (p90) in us")
print(f"{'gap filled with':<18} {'host work':>16} {'record()':>16} {'launch()':>16}")
kinds = ("sleep", "spin", "spin + query", "spin + host work", "spin + launches", "spin + both")
res = {k: ([], [], []) for k in kinds}
for i in range(N + 5):
    for kind in (kinds if i % 2 == 0 else kinds[::-1]):
        stream.synchronize()
        side.synchronize()
        fill(kind)
        p = fixed_host_work_us()
        t0 = time.perf_counter_ns()
        ev.record(stream)
        t1 = time.perf_counter_ns()
        graph.launch(stream)
        t2 = time.perf_counter_ns()
        if i >= 5:
            for lst, v in zip(res[kind], (p, (t1 - t0) / 1e3, (t2 - t1) / 1e3)):
                lst.append(v)
for kind in kinds:
    cells = " ".join(f"{np.median(v):>8.1f} ({np.percentile(v, 90):>5.1f})" for v in res[kind])
    print(f"{kind:<18} {cells}")
