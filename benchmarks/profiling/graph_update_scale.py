"""The batch's graph update (``StepResult.graph_ms``) against the graph's size; the target is
<= 0.1 ms for batches of up to 1,000 edges on graphs of up to 10 M edges. GPU only.

Graphs: the sx-mathoverflow base (the published protocol's first 90% of lines, 0.2 M edges) and
an R-MAT graph of ``SCALE`` (default 20) and ``EDGE_FACTOR`` (default 11: about 10 M distinct
edges). Batches of ``SIZES`` (default 5,50,506,1000) edges, 80% insertions of random pairs of
existing ids, 20% deletions of stored edges; ``BATCHES`` (default 60) per size after 5 warm-up
batches; DF-P in ``DANGLING`` mode (default uniform), so the graph update is the one-wait path
of a production batch.

    SXMO=path/sx-mathoverflow.txt.gz PYTHONPATH=. python3 benchmarks/profiling/graph_update_scale.py

With ``TICKS=1`` (the fused kernel compiled with its step clock, ``gpu_fast.TICKS``) each size also prints the fused kernel's steps (device clock, us)
and the membership scan each batch asks for: per query the shorter of out(u) and in(v), summed and
at its largest (from the degrees before the batch). The last column adds the upkeep for the next
batch (``OneSyncStepper.upkeep_ms``), which ``graph_ms`` does not count. ``LINEINFO=1`` compiles it with
source lines for Nsight Compute (update_ncu.sh). With ``PARTS=1`` each size also prints
what ``graph_ms`` is made of (graph_ms_parts.py's split, on these graphs): the engine's host work
before queueing, the host's queueing, the device events from the batch's start to the graph
update's end (and of it the device time from the graph's launch), the bookkeeping after the wait
(and the upkeep for the next batch after ``graph_ms`` ends), the host pieces inside them, per batch
the captures of CUDA graphs and the reservations of tail room, and the time of a fixed piece of host work
(NumPy and Python calls) run just before each batch: when it grows with the graph, the host itself
runs slower there. ``GC=off`` disables Python's garbage collector after loading, ``GC=freeze``
freezes what loading made (``gc.freeze``). ``IDLE=sleep|spin`` with ``IDLE_MS`` (10) idles the host
that long after each batch (asleep, or spinning in Python), ``SCHEDULE=spin|yield|block`` sets the
CUDA driver's wait (cuDevicePrimaryCtxSetFlags, before the context exists), ``GRAPHS=sxmo|rmat`` runs one
graph only (default both). ``PROBE=1`` times the fixed piece of host work before each batch without the wrappers and prints
its median as the row's last column ("host us"; PARTS=1 prints it too). ``PIN=K`` pins the main thread (the one that queues and waits) to CPU
``K`` once the engine exists (``os.sched_setaffinity`` of the calling thread: the driver's and
library threads keep the process's mask); each line then names that CPU.
"""
import os
import sys
import time

import numpy as np

sys.path.insert(0, ".")
sys.path.insert(0, os.path.dirname(__file__))
from _update_batches import graphs, random_batch  # noqa: E402
from streamrank.batch import EdgeBatch  # noqa: E402
from streamrank.config import RankConfig  # noqa: E402
from streamrank.engine import Engine  # noqa: E402
from streamrank.store import gpu_fast  # noqa: E402

#: TICKS=1 / LINEINFO=1: the fused graph update's profiling compile options, set before it compiles
ticks = os.environ.get("TICKS", "0") != "0"
gpu_fast.TICKS = ticks
gpu_fast.LINEINFO = os.environ.get("LINEINFO", "0") != "0"

parts = os.environ.get("PARTS", "0") != "0"
if parts:
    import cupy as cp
    from _clock import GRAPH_PIECES, LAUNCH, TIMES, wrap, wrap_graph_update  # noqa: E402
    from streamrank.store import gpu_lists as graph_gpu_lists

    wrap_graph_update()
    wrap(graph_gpu_lists.Direction, "reserve", "reserve")

#: PROBE=1 (or PARTS=1): time the fixed host work before each batch and print its median with the
#: row (column "host us"; without PARTS' clock wrappers on the path)
probe = parts or os.environ.get("PROBE", "0") != "0"
if probe:
    from streamrank.bench.host_probe import fixed_host_work_us  # noqa: E402

#: GC=off: the collector disabled after loading; GC=freeze: gc.freeze() after loading (the objects
#: made so far are never scanned again)
gc_mode = os.environ.get("GC", "on")

_schedule = os.environ.get("SCHEDULE")
if _schedule:  # the primary context's flags (CU_CTX_SCHED_*), before any CUDA call of this process
    import ctypes
    _cu = ctypes.CDLL("libcuda.so.1")
    assert _cu.cuInit(0) == 0 and _cu.cuDevicePrimaryCtxSetFlags(0, {"spin": 1, "yield": 2, "block": 4}[_schedule]) == 0
pin = os.environ.get("PIN")
idle, idle_s = os.environ.get("IDLE"), float(os.environ.get("IDLE_MS", "10")) / 1e3
sizes = [int(s) for s in os.environ.get("SIZES", "5,50,506,1000").split(",")]
batches = int(os.environ.get("BATCHES", "60"))
dangling = os.environ.get("DANGLING", "uniform")


rng = np.random.default_rng(3)
STEPS = ["1 collapse+lookups", "2 new ids", "3 membership", "4 plan out", "4 plan in", "5 commit",
         "(1's table)", "(4 out's sort)", "(5's deletion scan)"]
print(f"{'graph':<34} {'vertices':>9} {'edges':>10} {'batch':>6} {'graph ms median':>16} {'p95':>7} "
      f"{'rank ms median':>15} {'+ upkeep ms':>12}" + (f" {'host us':>8}" if probe else ""))
for name, src, dst in graphs():
    eng = Engine("gpu", "dfp", config=RankConfig(dangling=dangling))
    eng.load_edges(src, dst)
    if pin is not None:  # the calling thread only (Linux: pid 0 is this thread)
        os.sched_setaffinity(0, {int(pin)})
    if gc_mode != "on":
        import gc
        gc.collect()
        gc.disable() if gc_mode == "off" else gc.freeze()
    ids = np.unique(np.concatenate([src, dst]))
    for size in sizes:
        g_ms, r_ms, steps, scans, ev, caps, dev, up_ms, host_us = [], [], [], [], [], [], [], [], []
        for b in range(batches + 5):
            if b == 5 and parts:
                TIMES.clear()  # the warm-up batches' times out
            bs, bd, ins = random_batch(rng, ids, src, dst, size)
            if ticks and b >= 5:  # the scan lengths of this batch's queries, before it
                g = eng.graph
                u, v = g.ids.lookup(bs).get(), g.ids.lookup(bd).get()
                ok = (u >= 0) & (v >= 0)
                mn = np.minimum(g.out_degree.get()[u[ok]], g.in_degree.get()[v[ok]])
                scans.append((mn.sum(), mn.max(initial=0)))
            c0 = eng._stepper.graphs.captures if parts and eng._stepper.graphs else 0
            if idle == "sleep":
                time.sleep(idle_s)
            elif idle == "spin":
                t_end = time.perf_counter() + idle_s
                while time.perf_counter() < t_end:
                    pass
            if probe and b >= 5:
                host_us.append(fixed_host_work_us())
            st = eng.apply(EdgeBatch.from_arrays(bs, bd, ins))
            if b >= 5 and parts:
                ev.append(cp.cuda.get_elapsed_time(eng._stepper.start, eng._stepper.graph_done) * 1e3)
                dev.append(cp.cuda.get_elapsed_time(LAUNCH["event"], eng._stepper.graph_done) * 1e3)
                caps.append((eng._stepper.graphs.captures if eng._stepper.graphs else 0) - c0)
            if b >= 5:
                g_ms.append(st.graph_ms)
                # the upkeep for the next batch (room, buffers) after graph_ms ends
                up_ms.append(st.graph_ms + getattr(eng._stepper, "upkeep_ms", 0.0))
                r_ms.append(st.rank_ms)
                if ticks:
                    t = eng.graph._fast.ticks().astype(np.int64)
                    scan = t[10] - t[5] if t.shape[0] > 10 and t[10] > t[5] else 0  # (none before the grid commit)
                    steps.append(np.concatenate([np.diff(t[:7]), [t[7] - t[0], t[8] - t[3], scan]]) / 1e3)
        print(f"{name:<34} {eng.graph.num_vertices:>9} {eng.graph.num_edges:>10} {size:>6} "
              f"{np.median(g_ms):>16.3f} {np.percentile(g_ms, 95):>7.3f} {np.median(r_ms):>15.3f} "
              f"{np.median(up_ms):>12.3f}" + (f" {np.median(host_us):>8.1f}" if host_us else "")
              + (f"  pinned to cpu {pin}" if pin is not None else ""), flush=True)
        if steps:
            m = np.median(np.asarray(steps), axis=0)
            print("   kernel steps (us): " + ", ".join(f"{n} {v:.1f}" for n, v in zip(STEPS, m))
                  + f"; steps 1-5 {m[:6].sum():.1f}", flush=True)
        if parts and ev:
            md = lambda k: float(np.median(TIMES[k])) if TIMES[k] else 0.0  # noqa: E731
            print(f"   graph_ms parts (us, medians): before queueing {md('pre'):.1f}, queueing {md('queue'):.1f}, "
                  f"start -> graph update end (events) {np.median(ev):.1f} (of it graph launch -> end "
                  f"{np.median(dev):.1f}), bookkeeping {md('book'):.1f} (then upkeep {md('upkeep'):.1f}); "
                  f"captures per batch {np.mean(caps):.2f}, tail reservations {len(TIMES['reserve'])} "
                  f"({md('reserve'):.0f} us median), one-wait batches {len(TIMES['queue'])} of {batches}; "
                  f"fixed host work just before the batch {np.median(host_us):.1f} us", flush=True)
            print("   host pieces (us): " + ", ".join(f"{lab} {md(lab):.1f}" for lab in GRAPH_PIECES), flush=True)
            if steps:  # the graph's copies and launch gaps: device time after the launch outside steps 1-5
                print(f"   graph launch -> end outside the kernel's steps 1-5: "
                      f"{np.median(dev) - np.median(np.asarray(steps)[:, :6].sum(axis=1)):.1f} us", flush=True)
        if scans:
            a = np.asarray(scans)
            print(f"   membership scans per batch: sum median {np.median(a[:, 0]):.0f}, "
                  f"longest median {np.median(a[:, 1]):.0f} (max {a[:, 1].max()})", flush=True)
