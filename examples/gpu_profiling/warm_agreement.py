"""How closely two engines agree after ``auto``'s warm sweeps (stop 40): the one-wait engine
against the two-step one (STREAMRANK_ONE_SYNC=0) on the same batches, as
``tests/test_gpu_one_sync.py::test_hand_over_after_the_wait`` runs them (3,000 vertices with hubs,
batches of 1 to 3,000 edges, tol 1e-12, a flood threshold low enough that ``auto`` hands most
batches to warm sweeps). Warm sweeps update the ranks in place, so the order blocks run in moves
the last digits; this prints, per run, the largest difference relative to the ranks and in ``p``
against the bound the test asserts, ``2 * tol * alpha / (1 - alpha)``.

    REPS=6 PYTHONPATH=. python3 examples/gpu_profiling/warm_agreement.py

Set ``CUPY_CACHE_DIR`` to an empty folder to start from a cold kernel cache.
"""
import os

import numpy as np

from streamrank import engine as engine_mod, gpu_step, host_rehearsal, pagerank_gpu
from streamrank.backend import to_host
from streamrank.batch import EdgeBatch
from streamrank.config import RankConfig
from streamrank.rank_gpu import frontier_loop


def graph(rng, n=3000, m=20000, hubs=6):
    """A random graph over ``n`` vertices with ``hubs`` vertices of 400 in- and 400 out-edges."""
    s, d = rng.integers(0, n, m), rng.integers(0, n, m)
    hs = rng.choice(n, hubs, replace=False)
    s = np.concatenate([s, np.repeat(hs, 400), rng.integers(0, n, 400 * hubs)])
    d = np.concatenate([d, rng.integers(0, n, 400 * hubs), np.repeat(hs, 400)])
    return s, d


def batches(rng, s, d, n=3000):
    """Mixed batches: 70% insertions (some to new vertices), the rest deletions of stored edges."""
    for k in (1, 5, 50, 2, 500, 7, 2048, 3000, 40):
        ins = rng.random(k) < 0.7
        pick = rng.integers(0, len(s), k)
        yield (np.where(ins, rng.integers(0, n + 200, k), s[pick]),
               np.where(ins, rng.integers(0, n + 200, k), d[pick]), ins)


def engine(one_sync: bool, cfg: RankConfig, s, d):
    engine_mod.ONE_SYNC = one_sync  # read when the engine is built
    eng = engine_mod.Engine("gpu", "auto", config=cfg)
    eng.load_edges(s, d)
    return eng


def main() -> None:
    reps = int(os.environ.get("REPS", "6"))
    gpu_step.CUDA_GRAPHS = True
    frontier_loop._LOOP_HANDOVER = 1e-9  # the loop hands every grown frontier over
    pagerank_gpu._AUTO_FLOOD = 0.01  # auto: warm sweeps past 1% of the vertices
    cfg = RankConfig(switch_degree=8, tol=1e-12)
    bound = 2.0 * cfg.tol * cfg.alpha / (1.0 - cfg.alpha)
    print(f"bound on |p_one - p_two|: {bound:.3e} (2 tol alpha / (1 - alpha), tol {cfg.tol:g})")
    print("rehearsal | run | batches (warm) | largest relative difference | batches over 5e-10 relative | "
          "largest |p difference| | bound / largest")
    worst_rel, worst_p = 0.0, 0.0
    for rehearse in (False, True):
        host_rehearsal.AFTER_MS = 0.0 if rehearse else float("inf")
        for rep in range(reps):
            rng = np.random.default_rng(20261127 + rep)
            s, d = graph(rng)
            one, two = engine(True, cfg, s, d), engine(False, cfg, s, d)
            rels, pabs, warm = [], [], 0
            for bs, bd, ins in batches(rng, s, d):
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
