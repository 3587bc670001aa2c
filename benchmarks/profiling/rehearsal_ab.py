"""The host's rehearsal after a long batch (streamrank/rank/gpu/rehearsal.py), on and off, in one engine
(docs/GPU.md, "Stop 36"). GPU only.

One engine per graph (DF-P, ``DANGLING`` mode, default uniform) takes batches of ``SIZES`` edges
(``_update_batches.py``: ``GRAPHS``, default rmat, whose 506-1,000-edge batches flood and rank for
about 10 ms); the rehearsal is switched on for every other batch (``host_rehearsal.ENABLED``), so
the batch after one that rehearsed and the batch after one that did not alternate, on the same host
and graph. Printed per size and setting of the batch before: medians of the next batch's
``graph_ms``, its host-clock-only bound (``OneSyncStepper.graph_wall_ms``), its device span (from
the timing event before the update's launch to the update's end), the batch before's own time
(``total``: the rehearsal's cost is in it), the rehearsals run, and the fixed host work timed before
the batch (its host's speed).

    PYTHONPATH=. [GRAPHS=rmat] [SIZES=50,506,1000] [BATCHES=40] python3 benchmarks/profiling/rehearsal_ab.py
"""
import os
import sys

import cupy as cp
import numpy as np

sys.path.insert(0, ".")
sys.path.insert(0, os.path.dirname(__file__))
from _update_batches import graphs, random_batch  # noqa: E402
from streamrank.rank.gpu import rehearsal as host_rehearsal
from streamrank.batch import EdgeBatch  # noqa: E402
from streamrank.bench.host_probe import fixed_host_work_us  # noqa: E402
from streamrank.config import RankConfig  # noqa: E402
from streamrank.engine import Engine  # noqa: E402

os.environ.setdefault("GRAPHS", "rmat")
sizes = [int(s) for s in os.environ.get("SIZES", "50,506,1000").split(",")]
batches = int(os.environ.get("BATCHES", "40"))
dangling = os.environ.get("DANGLING", "uniform")
rng = np.random.default_rng(7)
print(f"device: {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}; rehearsal after batches over "
      f"{host_rehearsal.AFTER_MS:g} ms; medians")
print(f"{'graph':<32} {'batch':>6} {'batch before':>13} {'graph ms':>9} {'p90':>7} {'wall ms':>8} {'span ms':>8} "
      f"{'before: total ms':>17} {'rehearsals':>10} {'host us':>8}", flush=True)
for gname, src, dst in graphs():
    eng = Engine("gpu", "dfp", config=RankConfig(dangling=dangling))
    eng.load_edges(src, dst)
    ids = np.unique(np.concatenate([src, dst]))
    stepper = eng._stepper
    for size in sizes:
        rows = {True: [], False: []}
        prev_on, prev_total, runs0 = None, None, stepper.rehearsal.runs
        for b in range(2 * batches + 6):
            bs, bd, ins = random_batch(rng, ids, src, dst, size)
            on = b % 2 == 0
            host_rehearsal.ENABLED = on  # whether this batch ends with the rehearsal
            p = fixed_host_work_us()
            st = eng.apply(EdgeBatch.from_arrays(bs, bd, ins))
            ev = cp.cuda.get_elapsed_time(stepper.start, stepper.graph_done)
            if b >= 6 and prev_on is not None:
                rows[prev_on].append((st.graph_ms, stepper.graph_wall_ms, ev, prev_total, p))
            prev_on, prev_total = on, st.total_ms
        host_rehearsal.ENABLED = True
        runs = stepper.rehearsal.runs - runs0
        for setting in (True, False):
            a = np.asarray(rows[setting])
            label = "rehearsed" if setting else "not"
            print(f"{gname:<32} {size:>6} {label:>13} {np.median(a[:, 0]):>9.4f} {np.percentile(a[:, 0], 90):>7.4f} "
                  f"{np.median(a[:, 1]):>8.4f} {np.median(a[:, 2]):>8.4f} {np.median(a[:, 3]):>17.3f} "
                  f"{runs if setting else 0:>10} {np.median(a[:, 4]):>8.1f}", flush=True)
