"""The one-wait batch's bookkeeping beside the commit (stop 32) against after the whole update,
alternated batch by batch in one process, so both see the same host speed.

``streamrank.gpu_step.EARLY_COUNTERS`` on: the host waits for the graph update's counters (final
when its planning ends) and does its bookkeeping while the commit of the lists runs; off: it waits
for the whole update, then does it. Graphs and batches as in graph_update_scale.py (sx-mathoverflow's
base, and R-MAT ``SCALE`` 20 / ``EDGE_FACTOR`` 11 with ``GRAPHS=both``; random batches of ``SIZES``
edges, 80% insertions, 20% deletions of stored edges; DF-P, uniform mode). Prints per graph and
size the medians of ``graph_ms`` and of the batch's total for each setting.

    PYTHONPATH=. python3 examples/gpu_profiling/early_counters_ab.py
"""
import os
import sys
import time

import numpy as np

sys.path.insert(0, ".")
from streamrank import gpu_step  # noqa: E402
from streamrank.batch import EdgeBatch  # noqa: E402
from streamrank.bench.host_probe import fixed_host_work  # noqa: E402
from streamrank.bench.temporal import _read_lines  # noqa: E402
from streamrank.config import RankConfig  # noqa: E402
from streamrank.engine import Engine  # noqa: E402
from streamrank.rmat import rmat_edges  # noqa: E402

sizes = [int(s) for s in os.environ.get("SIZES", "5,50,506,1000").split(",")]
batches = int(os.environ.get("BATCHES", "80"))


def graphs():
    s, d = _read_lines(os.environ.get("SXMO", ".device-data/sx-mathoverflow.txt.gz"))
    k = int(0.9 * s.shape[0])
    keep = s[:k] != d[:k]
    yield "sx-mathoverflow base", s[:k][keep], d[:k][keep]
    if os.environ.get("GRAPHS", "sxmo") == "both":
        yield "R-MAT scale 20, edge factor 11", *rmat_edges(int(os.environ.get("SCALE", "20")),
                                                             int(os.environ.get("EDGE_FACTOR", "11")), seed=1)


rng = np.random.default_rng(3)
print(f"{'graph':<32} {'batch':>6} {'graph ms early':>15} {'graph ms after':>15} {'total early':>12} "
      f"{'total after':>12} {'host us':>8}", flush=True)
for name, src, dst in graphs():
    eng = Engine("gpu", "dfp", config=RankConfig(dangling="uniform"))
    eng.load_edges(src, dst)
    ids = np.unique(np.concatenate([src, dst]))
    for size in sizes:
        rec = {True: ([], []), False: ([], [])}
        probe = []
        for b in range(batches + 6):
            n_del = size // 5
            n_ins = size - n_del
            pick = rng.integers(0, src.shape[0], n_del)
            batch = EdgeBatch.from_arrays(np.concatenate([rng.choice(ids, n_ins), src[pick]]),
                                          np.concatenate([rng.choice(ids, n_ins), dst[pick]]),
                                          np.concatenate([np.ones(n_ins, bool), np.zeros(n_del, bool)]))
            early = b % 2 == 0
            gpu_step.EARLY_COUNTERS = early
            t = time.perf_counter()
            fixed_host_work()
            probe.append((time.perf_counter() - t) * 1e6)
            st = eng.apply(batch)
            if b >= 6:  # after warm-up batches of both settings
                rec[early][0].append(st.graph_ms)
                rec[early][1].append(st.total_ms)
        md = lambda v: float(np.median(v))  # noqa: E731
        print(f"{name:<32} {size:>6} {md(rec[True][0]):>15.4f} {md(rec[False][0]):>15.4f} {md(rec[True][1]):>12.4f} "
              f"{md(rec[False][1]):>12.4f} {md(probe):>8.1f}", flush=True)
