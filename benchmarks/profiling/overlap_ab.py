"""The graph's bookkeeping overlapped with the rank loop, or not (``gpu_step.OVERLAP_BOOKKEEPING``,
``STREAMRANK_GRAPH_OVERLAP``), alternated batch by batch in ONE process on the sx-mathoverflow
replay: the host's speed drifts between processes by 30% and more on the lent machines, so two
processes cannot tell a 15 us difference apart; alternate batches of one process can. GPU only.

    SXMO=path/sx-mathoverflow.txt.gz DANGLING=self-loop SIZES=5,50,506 BATCHES=100 PYTHONPATH=. \
        python3 benchmarks/profiling/overlap_ab.py

Prints per size and setting the medians of the batch's wall time (``Engine.apply``, the caller's
clock), ``total_ms`` and ``graph_ms``. The file's last 10% of lines must hold all the batches
(2 * BATCHES + 5 per size; sx-mathoverflow: 50,655 lines).
"""
import os
import sys
import time

import numpy as np

sys.path.insert(0, ".")
sys.path.insert(0, os.path.dirname(__file__))
from _sxmo import sized_replay_from_env  # noqa: E402
from streamrank.rank.gpu import step as gpu_step

replay, sizes, batches = sized_replay_from_env("5,50,506", per_batch=2)  # two settings per round
eng = replay.engine
print(f"dangling {replay.dangling}; medians over {batches} batches per setting, alternated batch by batch")
print(f"{'lines':>6} {'overlap':>8} {'wall ms':>8} {'total ms':>9} {'graph ms':>9}")
for size in sizes:
    for _ in range(5):
        eng.apply(replay.next_batch(size))
    rec = {True: [], False: []}
    for b in range(2 * batches):
        flag = b % 2 == 0
        gpu_step.OVERLAP_BOOKKEEPING = flag
        batch = replay.next_batch(size)
        t = time.perf_counter()
        st = eng.apply(batch)
        rec[flag].append(((time.perf_counter() - t) * 1e3, st.graph_ms + st.rank_ms, st.graph_ms))
    for flag in (True, False):
        m = np.median(np.asarray(rec[flag]), axis=0)
        print(f"{size:>6} {str(flag):>8} {m[0]:>8.3f} {m[1]:>9.3f} {m[2]:>9.3f}", flush=True)
