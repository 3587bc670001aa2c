"""How closely two engines agree after ``auto``'s warm sweeps: the one-wait engine against the
two-step one (``engine.ONE_SYNC`` False) on the same batches, as
``tests/test_gpu_one_sync.py::test_hand_over_after_the_wait`` runs them, with that test's graph,
batches and engines (3,000 vertices with hubs, batches of 1 to 3,000 edges, tol 1e-12, a flood
threshold low enough that ``auto`` hands most batches to warm sweeps) and other seeds. Warm sweeps
update the ranks in place, so the order blocks run in moves the last digits; this prints, per run,
the largest difference relative to the ranks and in ``p`` against the bound the test asserts
(``_warm_bound``: ``2 * tol * alpha / (1 - alpha)``).

    REPS=6 PYTHONPATH=. python3 benchmarks/profiling/warm_agreement.py

Set ``CUPY_CACHE_DIR`` to an empty folder to start from a cold kernel cache.
"""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests"))
from test_gpu_one_sync import _base, _batches, _engine, _warm_bound  # noqa: E402 (the test's own)
from streamrank.rank.gpu import rehearsal as host_rehearsal, pagerank as pagerank_gpu
from streamrank.backend import to_host  # noqa: E402
from streamrank.batch import EdgeBatch  # noqa: E402
from streamrank.config import RankConfig  # noqa: E402
from streamrank.rank.gpu import frontier_loop


def main() -> None:
    reps = int(os.environ.get("REPS", "6"))
    patch = pytest.MonkeyPatch()  # the settings the test makes, for the whole run
    patch.setattr(frontier_loop, "_LOOP_HANDOVER", 1e-9)  # the loop hands every grown frontier over
    patch.setattr(pagerank_gpu, "_AUTO_FLOOD", 0.01)  # auto: warm sweeps past 1% of the vertices
    cfg = RankConfig(switch_degree=8, tol=1e-12)
    bound = _warm_bound(cfg)
    print(f"bound on |p_one - p_two|: {bound:.3e} (2 tol alpha / (1 - alpha), tol {cfg.tol:g})")
    print("rehearsal | run | batches (warm) | largest relative difference | batches over 5e-10 relative | "
          "largest |p difference| | bound / largest")
    worst_rel, worst_p = 0.0, 0.0
    for rehearse in (False, True):
        patch.setattr(host_rehearsal, "AFTER_MS", 0.0 if rehearse else float("inf"))
        for rep in range(reps):
            rng = np.random.default_rng(20261127 + rep)
            s, d = _base(rng)
            one = _engine(patch, True, "auto", cfg, s, d)
            two = _engine(patch, False, "auto", cfg, s, d)
            rels, pabs, warm = [], [], 0
            for bs, bd, ins in _batches(rng, s, d):
                a = one.apply(EdgeBatch.from_arrays(bs, bd, ins))
                b = two.apply(EdgeBatch.from_arrays(bs, bd, ins))
                xa, xb = to_host(a.rank.x), to_host(b.rank.x)  # host copies: a sync each
                warm += "warm" in a.rank.algorithm
                rels.append(float(np.max(np.abs(xa - xb) / np.abs(xb))))
                pabs.append(float(np.max(np.abs(xa / xa.sum() - xb / xb.sum()))))
            worst_rel, worst_p = max(worst_rel, max(rels)), max(worst_p, max(pabs))
            print(f"{'every batch' if rehearse else 'none':>11} | {rep} | {len(rels)} ({warm}) | {max(rels):.2e} | "
                  f"{sum(r > 5e-10 for r in rels)} | {max(pabs):.2e} | {bound / max(pabs):.0f}")
    print(f"all runs: largest relative difference {worst_rel:.2e}, largest |p difference| {worst_p:.2e}, "
          f"bound / largest {bound / worst_p:.0f}")


if __name__ == "__main__":
    main()
