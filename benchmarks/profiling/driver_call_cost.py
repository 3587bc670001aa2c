"""Host cost of the CUDA driver calls on a one-wait batch's path, by the stream they go to and the
GPU's state before them. GPU only.

``host_costs.py`` measures an event's ``record()`` at 1.5 us and a captured graph's ``launch()`` at
1.8 us (the legacy default stream, right after ``Device().synchronize()``), against 7-10 us for
each inside the engine's batches and in ``host_speed_series.py`` (a non-blocking stream, right
after ``stream.synchronize()``). This script times, in one process,
``record()`` of a timing event and of one without timing, ``launch()`` of a captured graph of four
empty kernels and a plain kernel launch, on the legacy default stream, a blocking stream, a
non-blocking stream and the per-thread default stream, in three states:

- ``synced``: the stream synchronized just before the call (as at a batch's start);
- ``synced+idle``: synchronized, then 200 us of host spinning (an idle GPU for a while);
- ``busy``: a 200 us kernel queued on the stream just before (the GPU has work in hand).

With ``ENGINE=1`` it first builds an engine on sx-mathoverflow's base (``SXMO``; DF-P, self-loop),
applies 30 batches of 50 edges, then times the same matrix and, over 60 more batches, the engine's
own two ``record()`` calls (``OneSyncStepper.start`` and ``graph_done``, timed by a subclass).

    PYTHONPATH=. [ENGINE=1] python3 benchmarks/profiling/driver_call_cost.py
"""
import os
import sys
import time

import cupy as cp
import numpy as np

sys.path.insert(0, ".")
sys.path.insert(0, os.path.dirname(__file__))
from _probe_graph import empty_graph, empty_kernel, host_spin  # noqa: E402

N = int(os.environ.get("N", "300"))
spin_src = r'''
extern "C" __global__ void spin(long long ns) {
    long long t0; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    long long t = t0;
    while (t - t0 < ns) { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); }
}
'''
spin = cp.RawModule(code=spin_src).get_function("spin")
empty = empty_kernel()
graph = empty_graph(4)
ev_t, ev_nt = cp.cuda.Event(), cp.cuda.Event(disable_timing=True)


def matrix(title: str):
    streams = {"legacy default": cp.cuda.Stream.null, "blocking": cp.cuda.Stream(),
               "non-blocking": cp.cuda.Stream(non_blocking=True), "per-thread default": cp.cuda.Stream.ptds}
    calls = {"record (timing)": lambda s: ev_t.record(s), "record (no timing)": lambda s: ev_nt.record(s),
             "graph.launch (4 nodes)": lambda s: graph.launch(s),
             "kernel launch (2 args)": lambda s: empty((1,), (32,), (np.uint64(0), np.uint64(0)), stream=s)}
    print(f"== {title}: host us per call, median (p90) over {N}")
    print(f"{'stream':<20} {'state':<12} " + " ".join(f"{c:>24}" for c in calls))
    for sname, s in streams.items():
        for state in ("synced", "synced+idle", "busy"):
            row = []
            for cname, call in calls.items():
                ts = []
                for i in range(N + 20):
                    s.synchronize()  # sync: the state below starts from an idle stream
                    if state == "synced+idle":
                        host_spin(200)
                    elif state == "busy":
                        spin((1,), (1,), (np.int64(200_000),), stream=s)
                    t0 = time.perf_counter_ns()
                    call(s)
                    t1 = time.perf_counter_ns()
                    if i >= 20:
                        ts.append((t1 - t0) / 1e3)
                s.synchronize()  # sync: before the next call kind
                row.append(f"{np.median(ts):>15.2f} ({np.percentile(ts, 90):>6.2f})")
            print(f"{sname:<20} {state:<12} " + " ".join(row), flush=True)


print(f"device: {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}")
matrix("a fresh process")

if os.environ.get("ENGINE", "0") != "0":
    from _update_batches import random_batch, sxmo_base  # noqa: E402
    from streamrank.batch import EdgeBatch  # noqa: E402
    from streamrank.config import RankConfig  # noqa: E402
    from streamrank.engine import Engine  # noqa: E402

    class TimedEvent(cp.cuda.Event):
        """An event whose ``record()`` host time is kept."""
        def __init__(self, *a, **kw):
            super().__init__(*a, **kw)
            self.us = []

        def record(self, stream=None):
            t0 = time.perf_counter_ns()
            super().record(stream)
            self.us.append((time.perf_counter_ns() - t0) / 1e3)

    src, dst = sxmo_base()
    eng = Engine("gpu", "dfp", config=RankConfig(dangling="self-loop"))
    eng.load_edges(src, dst)
    ids = np.unique(np.concatenate([src, dst]))
    rng = np.random.default_rng(5)
    for _ in range(30):
        eng.apply(EdgeBatch.from_arrays(*random_batch(rng, ids, src, dst, 50)))
    matrix("the same process, after an engine's 30 batches")
    stepper = eng._stepper
    stepper.start, stepper.graph_done = TimedEvent(), TimedEvent()
    for _ in range(60):
        eng.apply(EdgeBatch.from_arrays(*random_batch(rng, ids, src, dst, 50)))
    for name in ("start", "graph_done"):
        us = getattr(stepper, name).us
        print(f"engine's {name}.record() over {len(us)} batches: median {np.median(us):.2f} us, "
              f"p90 {np.percentile(us, 90):.2f}")
