"""One wait per batch (streamrank/rank/gpu/step.py), replayed from captured CUDA graphs or queued call by
call, against two synchronized steps, on the same replay in one process: blocks of batches
alternate between the three (``Engine._stepper`` swapped), so clock drift and the graph's growth
fall on all alike. Then, with clock wrappers, where
the one-wait batch's host time goes, and the device time of its two kernels (events; the loop's
device clock, ``LOOP_TICKS``).

    SXMO=.device-data/sx-mathoverflow.txt.gz DANGLING=self-loop SIZE=5 BATCHES=450 PYTHONPATH=. \
        python3 benchmarks/profiling/one_sync_ab.py
"""
import os
import sys
import time

import numpy as np

sys.path.insert(0, ".")
sys.path.insert(0, os.path.dirname(__file__))
from _clock import TIMES, wrap  # noqa: E402
from _sxmo import replay_from_env  # noqa: E402

import cupy as cp  # noqa: E402

from streamrank import engine as engm
from streamrank.rank.gpu import capture as gpu_batch_graph, step as gpu_step
from streamrank.store import gpu as graph_gpu, gpu_fast as graph_gpu_fast
from streamrank.rank.gpu import pagerank as pagerank_gpu
from streamrank.rank.gpu import frontier_loop as fl

replay = replay_from_env()
eng, size = replay.engine, replay.size
stepper = eng._stepper or gpu_step.OneSyncStepper(cp)
gpu_step.CUDA_GRAPHS = False
plain = gpu_step.OneSyncStepper(cp)  # one wait, queued call by call
gpu_step.CUDA_GRAPHS = True
batches = int(os.environ.get("BATCHES", "400"))
block = 10
modes = {"graphs": stepper, "one wait": plain, "two steps": None}
res = {k: [] for k in modes}
its = {k: [] for k in modes}
gms = {k: [] for k in modes}
for i in range(batches):
    mode = list(modes)[(i // block) % 3]
    eng._stepper = modes[mode]
    b = replay.next_batch(size)
    t = time.perf_counter()
    s = eng.apply(b)
    res[mode].append((time.perf_counter() - t) * 1e3)
    its[mode].append(s.rank.iterations)
    gms[mode].append(s.graph_ms)
print(f"== {replay.dangling} SIZE={size}: {batches} batches, blocks of {block} alternated: replayed CUDA graphs, "
      "one wait queued call by call, two synchronized steps")
for k, v in res.items():
    print(f"  {k:10s} median {np.median(v):.3f} ms  p10 {np.percentile(v, 10):.3f}  p90 {np.percentile(v, 90):.3f}"
          f"  iterations median {np.median(its[k]):.1f}  graph update (StepResult.graph_ms) median {np.median(gms[k]):.3f}")
print(f"  graphs: steps {stepper.steps}, captures {stepper.graphs.captures}, unavailable {stepper.graphs.unavailable}")

# ---- where the one-wait batch's time goes
eng._stepper = stepper
T = TIMES


wrap(engm.Engine, "apply", "Engine.apply")
wrap(gpu_step.OneSyncStepper, "apply", " OneSyncStepper.apply")
wrap(gpu_batch_graph.BatchGraphs, "replay", "   BatchGraphs.replay")
wrap(fl, "loop_parts", "    loop_parts (argument image)")
wrap(graph_gpu.GpuGraph, "launch_fast", "  GpuGraph.launch_fast")
wrap(graph_gpu_fast.FastUpdater, "stage", "    FastUpdater.stage")
wrap(graph_gpu_fast.FastUpdater, "launch", "   FastUpdater.launch")
wrap(pagerank_gpu, "launch_update", "  launch_update")
wrap(pagerank_gpu, "_workspace", "   _workspace")
wrap(fl, "_lists_bytes", "    _lists_bytes")
wrap(fl, "_args_bytes", "    _args_bytes")
wrap(fl, "queue_status", "   queue_status")
wrap(graph_gpu.GpuGraph, "finish_fast", "  GpuGraph.finish_fast")
wrap(graph_gpu.GpuGraph, "_ensure_room", "   _ensure_room")
wrap(pagerank_gpu, "finish_update", "  finish_update")
orig_lk = fl._loop_kernel


class KW:
    def __init__(s, k):
        s.k = k

    def __call__(s, *a, **kw):
        t = time.perf_counter_ns()
        s.k(*a, **kw)
        T["    loop launch call"].append((time.perf_counter_ns() - t) / 1e3)


fl._loop_kernel = lambda *a: (lambda kg: (KW(kg[0]), kg[1]))(orig_lk(*a))
ticks = cp.zeros(3 * 600 + 4, dtype=cp.uint64)
fl.LOOP_TICKS = ticks
gdev, loop_dev = [], []
n = 100
for i in range(n):
    s = eng.apply(replay.next_batch(size))
    gdev.append(cp.cuda.get_elapsed_time(stepper.start, stepper.graph_done) * 1e3)
    it = s.rank.iterations
    tk = ticks[[0, 3 + 3 * it]].get().astype(np.int64)
    loop_dev.append((tk[1] - tk[0]) / 1e3)
print(f"== with clock wrappers, {n} batches: median us per call (calls per batch)")
for k, v in T.items():
    print(f"  {k:34s} {np.median(v):8.1f} us  x{len(v) / n:.2f}")
print(f"  device: start event -> graph kernel done {np.median(gdev):.1f} us; loop kernel (its clock) "
      f"{np.median(loop_dev):.1f} us")

# ---- finer: the kernel launches and copies inside, then cProfile's own time per function
if os.environ.get("FINE", "1") == "1":
    wrap(graph_gpu_fast, "launch", "    graph kernel launch call")
    rt = cp.cuda.runtime
    wrap(rt, "memcpyAsync", "    memcpyAsync (any)")
    T.clear()
    for i in range(n):
        eng.apply(replay.next_batch(size))
    print(f"== finer, {n} batches")
    for k, v in T.items():
        print(f"  {k:34s} {np.median(v):8.1f} us  x{len(v) / n:.2f}")
    import cProfile
    import pstats
    fl.LOOP_TICKS = None
    pr = cProfile.Profile()
    pr.enable()
    for i in range(n):
        eng.apply(replay.next_batch(size))
    pr.disable()
    pstats.Stats(pr).sort_stats("tottime").print_stats(30)
