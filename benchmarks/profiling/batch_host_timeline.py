"""Where a small DF-P batch's time goes on the host: wall time per function of the graph update
and the rank update (clock wrappers), the kernels' device time (events) and the loop's
per-iteration device clock (docs/architecture.md). GPU only; the padded
sx-mathoverflow protocol (self-loop) or uniform dangling.

    SXMO=path/sx-mathoverflow.txt.gz DANGLING=self-loop SIZE=5 PYTHONPATH=. \
        python3 benchmarks/profiling/batch_host_timeline.py
"""
import os, sys, time
import numpy as np
sys.path.insert(0, ".")
sys.path.insert(0, os.path.dirname(__file__))
from _clock import TIMES, wrap  # noqa: E402
from _sxmo import replay_from_env  # noqa: E402
from streamrank.batch import EdgeBatch
from streamrank.rank.gpu import pagerank as pagerank_gpu
from streamrank.store import gpu as graph_gpu, gpu_fast as graph_gpu_fast
from streamrank import engine as engm
from streamrank.rank.gpu import frontier_loop as fl
import cupy as cp

replay = replay_from_env()
eng, dang, size = replay.engine, replay.dangling, replay.size
eng._stepper = None  # the two synchronized steps this script profiles
def nxt():
    return replay.next_batch(size)
T = TIMES
wrap(engm.Engine, "apply", "Engine.apply")
wrap(graph_gpu.GpuGraph, "apply", " GpuGraph.apply")
wrap(graph_gpu.GpuGraph, "_apply_fast", "  _apply_fast")
wrap(graph_gpu_fast.FastUpdater, "stage", "  FastUpdater.stage")
wrap(graph_gpu_fast.FastUpdater, "launch", "   FastUpdater.launch")
wrap(graph_gpu.GpuGraph, "_ensure_room", "   _ensure_room")
wrap(graph_gpu.GpuGraph, "_maybe_compact", "   _maybe_compact")
wrap(EdgeBatch, "from_arrays", " EdgeBatch.from_arrays")
wrap(pagerank_gpu, "update_pagerank", " update_pagerank")
wrap(pagerank_gpu, "_dynamic", "  _dynamic")
wrap(pagerank_gpu, "_result", "   _result")
wrap(pagerank_gpu, "_as_prev", "   _as_prev")
wrap(pagerank_gpu, "_workspace", "   _workspace")
wrap(pagerank_gpu, "_frontier_loop", "   _frontier_loop")
wrap(fl, "_lists_bytes", "    _lists_bytes")
wrap(fl, "_args_bytes", "    _args_bytes")
wrap(fl, "queue_status", "    queue_status")
wrap(fl, "loop_outcome", "    loop_outcome")
orig_lk = fl._loop_kernel
class KW:
    def __init__(s, k): s.k = k
    def __call__(s, *a, **kw):
        t = time.perf_counter_ns(); s.k(*a, **kw); T["    kernel launch call"].append((time.perf_counter_ns() - t) / 1e3)
def lk(*a):
    k, g = orig_lk(*a); return KW(k), g
fl._loop_kernel = lk
ticks = cp.zeros(3 * 600 + 4, dtype=cp.uint64); fl.LOOP_TICKS = ticks  # layout: LoopLists::ticks
per_it, head = [], []
for i in range(60):
    b = nxt()
    s = eng.apply(b)
    it = s.rank.iterations
    tk = ticks[3: 3 * it + 4: 3].get().astype(np.int64)  # each iteration's start, then the end
    per_it.append(np.diff(tk) / 1e3)
print(f"== {dang} SIZE={size}: median us per call over 60 batches (calls per batch)")
for k, v in T.items():
    print(f"  {k:40s} {np.median(v):8.1f} us  x{len(v) / 60:.2f}")
pi = np.concatenate(per_it)
print(f"  device per iteration (ticks): median {np.median(pi):.1f} us, p10 {np.percentile(pi,10):.1f}, p90 {np.percentile(pi,90):.1f}; iterations median {np.median([len(p) for p in per_it])}")
print("  first batch per-iteration us:", np.round(per_it[-1], 1).tolist())
