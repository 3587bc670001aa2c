"""The fused graph update's pinned buffers used through their mapped device addresses, or copied
(``FLAG=MAPPED_COUNTERS``, the default: the counters written by the kernel into pinned memory, or
copied after the update, ``STREAMRANK_FAST_MAPPED``; ``FLAG=MAPPED_STAGING``: the staged batch
read by the kernel from pinned memory, or copied before it, ``STREAMRANK_FAST_MAPPED_STAGE``), in
ONE process: two engines on the same sx-mathoverflow replay, one per setting, take the same
batches alternately (the host's speed drifts between processes by 30% and more on the lent
machines). GPU only.

    SXMO=path/sx-mathoverflow.txt.gz DANGLING=self-loop SIZES=5,50,506 BATCHES=40 PYTHONPATH=. \
        python3 benchmarks/profiling/mapped_ab.py

Prints per size and setting the medians of the device events from the batch's start to the
graph update's end, ``graph_ms`` and ``total_ms``. Each engine replays the file's last 10% of
lines (BATCHES + 5 batches per size).
"""
import os
import sys

import numpy as np

sys.path.insert(0, ".")
sys.path.insert(0, os.path.dirname(__file__))
from _sxmo import sized_replay_from_env  # noqa: E402
from streamrank.store import gpu_fast as graph_gpu_fast
import cupy as cp  # noqa: E402

FLAG = os.environ.get("FLAG", "MAPPED_COUNTERS")
ADDRESS = {"MAPPED_COUNTERS": "host_dev_ptr", "MAPPED_STAGING": "stage_mapped_ptr"}[FLAG]
replays = {}
for mapped in (True, False):  # the updater reads the setting when the engine's first batch creates it
    setattr(graph_gpu_fast, FLAG, mapped)
    replays[mapped], sizes, batches = sized_replay_from_env("5,50,506", default_batches=40)
    assert (getattr(replays[mapped].engine.graph._fast, ADDRESS) != 0) == mapped, "no mapped address here"
print(f"{FLAG}; dangling {replays[True].dangling}; medians over {batches} batches per setting, alternated "
      "batch by batch")
print(f"{'lines':>6} {'mapped':>7} {'start->graph end us':>20} {'graph ms':>9} {'total ms':>9}")
for size in sizes:
    for _ in range(5):
        for r in replays.values():
            r.engine.apply(r.next_batch(size))
    rec = {True: [], False: []}
    for b in range(batches):
        for mapped in ((True, False) if b % 2 == 0 else (False, True)):  # who goes first alternates
            eng = replays[mapped].engine
            st = eng.apply(replays[mapped].next_batch(size))
            ev = cp.cuda.get_elapsed_time(eng._stepper.start, eng._stepper.graph_done) * 1e3
            rec[mapped].append((ev, st.graph_ms, st.graph_ms + st.rank_ms))
    for mapped in (True, False):
        m = np.median(np.asarray(rec[mapped]), axis=0)
        print(f"{size:>6} {str(mapped):>7} {m[0]:>20.1f} {m[1]:>9.3f} {m[2]:>9.3f}", flush=True)
