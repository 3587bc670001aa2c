"""What runs before a batch and its ``graph_ms``. GPU only.

On R-MAT 11.2 M edges a 1,000-edge batch's DF-P floods its frontier and ranks for about 11 ms,
and the next batch's graph update runs 1.5-2x slower on the host than on sx-mathoverflow's base.
This script applies the same kind of batch (``SIZE`` edges, default 1,000,
:mod:`_update_batches`) to two engines on the same graph and times each measured batch after a
different predecessor:

- engine A (DF-P as usual): right after a flooded batch; and after a flooded batch and 5 ms of
  Python spinning (an idle GPU, a busy host);
- engine B (``max_iter=1``: a cheap rank of about 0.5 ms, its ranks not converged): right after a
  batch of its own; after one and 5 ms of Python spinning; after one and a kernel that writes
  256 MiB (so the GPU's L2 cache holds nothing of the graph update's data, as after a flood).

Per condition it prints the median ``graph_ms``, its device span (the one-wait batch's CUDA events
from before the graph update's launch to its end; the host's queueing after the first event is
inside it) and the rest, which is host time before that event and after the wait. ``ROUNDS``
(default 30) measured batches per condition after 3 rounds of warm-up.

    PYTHONPATH=. [SIZE=1000] [ROUNDS=30] python3 benchmarks/profiling/after_flood.py
"""
import os
import sys

import numpy as np

sys.path.insert(0, ".")
sys.path.insert(0, os.path.dirname(__file__))
from _probe_graph import host_spin  # noqa: E402
from _update_batches import random_batch  # noqa: E402
from streamrank.batch import EdgeBatch  # noqa: E402
from streamrank.bench.host_probe import fixed_host_work_us  # noqa: E402
from streamrank.config import RankConfig  # noqa: E402
from streamrank.engine import Engine  # noqa: E402
from streamrank.bench.rmat import rmat_edges  # noqa: E402


def main() -> None:
    import cupy as cp

    size = int(os.environ.get("SIZE", "1000"))
    rounds = int(os.environ.get("ROUNDS", "30"))
    src, dst = rmat_edges(20, 11, seed=1)
    ids = np.unique(np.concatenate([src, dst]))
    flooding = Engine("gpu", "dfp", config=RankConfig(dangling="uniform"))
    cheap = Engine("gpu", "dfp", config=RankConfig(dangling="uniform", max_iter=1))
    for eng in (flooding, cheap):
        eng.load_edges(src, dst)
    rng = np.random.default_rng(7)
    big = cp.empty(1 << 28, dtype=cp.uint8)

    def batch():
        return EdgeBatch.from_arrays(*random_batch(rng, ids, src, dst, size))

    def thrash():
        big.fill(1)
        cp.cuda.get_current_stream().synchronize()  # sync: the 256 MiB written before the batch

    conditions = [  # (label, engine, what runs between its two batches)
        ("A right after a flooded batch", flooding, lambda: None),
        ("A after a flood + 5 ms Python spin", flooding, lambda: host_spin(5000.0)),
        ("B right after a cheap batch", cheap, lambda: None),
        ("B after a cheap batch + 5 ms spin", cheap, lambda: host_spin(5000.0)),
        ("B after a cheap batch + L2 thrash", cheap, thrash),
    ]
    graph_ms = {c[0]: [] for c in conditions}
    span = {c[0]: [] for c in conditions}
    rank_ms = {c[0]: [] for c in conditions}
    for r in range(rounds + 3):
        for label, eng, between in conditions:
            eng.apply(batch())  # the predecessor
            between()
            st = eng.apply(batch())
            if r >= 3:
                stepper = eng._stepper  # its events: the last one-wait batch's
                graph_ms[label].append(st.graph_ms)
                span[label].append(cp.cuda.get_elapsed_time(stepper.start, stepper.graph_done))
                rank_ms[label].append(st.rank_ms)
        if r % 10 == 0:
            print(f"round {r}: fixed host work {fixed_host_work_us():.1f} us", flush=True)
    print(f"{'condition':<38} {'graph ms':>9} {'p90':>7} {'span ms':>8} {'rest ms':>8} {'rank ms':>8}")
    for label, _, _ in conditions:
        g, s = np.asarray(graph_ms[label]), np.asarray(span[label])
        print(f"{label:<38} {np.median(g):>9.4f} {np.percentile(g, 90):>7.4f} {np.median(s):>8.4f} "
              f"{np.median(g - s):>8.4f} {np.median(rank_ms[label]):>8.3f}")
    print(f"fixed host work at the end: {fixed_host_work_us():.1f} us")


if __name__ == "__main__":
    main()
