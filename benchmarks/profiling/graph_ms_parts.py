"""What the one-wait batch's ``graph_ms`` is made of, per batch on the sx-mathoverflow replay: the engine's host work before the graph update
is queued, the host time of queueing it (staging + graph replay), the device events from the
batch's start to the graph kernel's end, and the graph's bookkeeping after the wait. GPU only.

    SXMO=path/sx-mathoverflow.txt.gz DANGLING=self-loop SIZES=5,50,506 BATCHES=80 PYTHONPATH=. \
        python3 benchmarks/profiling/graph_ms_parts.py

``TICKS=1`` compiles the fused kernel with its step clock (``gpu_fast.TICKS``) and prints its steps.

Under ``ncu --kernel-name regex:fast_update`` the same run gives the kernel's own duration.
"""
import os, sys, time
import numpy as np
sys.path.insert(0, ".")
sys.path.insert(0, os.path.dirname(__file__))
from _clock import GRAPH_PIECES, TIMES, wrap_graph_update  # noqa: E402
from _sxmo import sized_replay_from_env  # noqa: E402
import cupy as cp  # noqa: E402
from streamrank.store import gpu as graph_gpu
from streamrank.store import gpu_fast

ticks = os.environ.get("TICKS", "0") != "0"
gpu_fast.TICKS = ticks  # before the replay's engine compiles the fused kernel

replay, sizes, batches = sized_replay_from_env("5,50,506", default_batches=80)  # 85 x 561 lines fit the file
eng = replay.engine
stepper = eng._stepper
assert stepper is not None, "the one-wait path is off (engine.ONE_SYNC False?)"

wrap_graph_update()  # TIMES["pre"], ["queue"], ["book"] and the pieces inside (_clock.GRAPH_PIECES)
_changes_name = "SectionChanges" if hasattr(graph_gpu, "SectionChanges") else "AppliedChanges"  # (older checkouts)
_changes = getattr(graph_gpu, _changes_name)


def timed_changes(*a, **kw):
    t = time.perf_counter_ns()
    r = _changes(*a, **kw)
    TIMES["changes"].append((time.perf_counter_ns() - t) / 1e3)
    return r


setattr(graph_gpu, _changes_name, timed_changes)
STEPS = ["1 collapse + lookups", "2 new ids", "3 membership", "4 plan out", "4 plan in", "5 commit",
         "(1's table)", "(4 out: sort)", "(4 out: writes)", "(4 out: plan)"]
print(f"device: {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}, dangling {replay.dangling}")
print("lines | graph_ms | engine before queueing | queueing (host) | start -> graph kernel end (events) "
      "| bookkeeping | total ms  (medians, us unless said)")
for size in sizes:
    for _ in range(5):  # warm: this size's captures
        eng.apply(replay.next_batch(size))
    TIMES.clear()
    gms, ev, tot, steps = [], [], [], []
    for _ in range(batches):
        st = eng.apply(replay.next_batch(size))
        gms.append(st.graph_ms * 1e3)
        tot.append((st.graph_ms + st.rank_ms))
        ev.append(cp.cuda.get_elapsed_time(stepper.start, stepper.graph_done) * 1e3)
        if ticks:
            t = eng.graph._fast.ticks().astype(np.int64)
            steps.append(np.concatenate([np.diff(t[:7]), [t[7] - t[0], t[8] - t[3], t[9] - t[8], t[4] - t[9]]]) / 1e3)
    med = lambda a: float(np.median(a))  # noqa: E731
    print(f"{size} | {med(gms):.1f} | {med(TIMES['pre']):.1f} | {med(TIMES['queue']):.1f} | {med(ev):.1f} | "
          f"{med(TIMES['book']):.1f} | {med(tot):.3f}")
    print("   host pieces (us): " + ", ".join(f"{lab} {med(TIMES[lab]):.1f}" for lab in (*GRAPH_PIECES, "changes")
                                               if TIMES[lab]))
    if steps:
        m = np.median(np.asarray(steps), axis=0)
        print("   kernel steps (us, device clock): " + ", ".join(f"{n} {v:.1f}" for n, v in zip(STEPS, m))
              + f"; steps 1-5 {m[:6].sum():.1f}")
