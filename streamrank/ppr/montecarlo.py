"""Complete-path Monte Carlo on the CPU (NumPy, all walks advanced together per step).

Each walk starts at a seed (drawn from the personalization), every vertex it visits is
counted, and at each step it moves to a uniformly random out-neighbour with probability
``alpha`` (from a dangling vertex: to a seed drawn from the personalization, or to a uniform
random vertex, per the dangling mode) and ends otherwise. The expected number of visits to
``v`` per walk is ``p[v] / (1 - alpha)``, so ``counts / sum(counts)`` estimates ``p``; with ``m``
walks each entry's standard error is about ``sqrt(p[v] / ((1 - alpha) m))``. First steps from
a seed are spread evenly over its out-neighbours (walk ``i`` takes neighbour ``i mod deg``).
"""

from __future__ import annotations

import numpy as np

from ._graph import GraphArrays


def montecarlo_cpu(ga: GraphArrays, pers, *, alpha: float, dangling: str, walks: int, rng_seed: int = 0):
    """Returns (estimate p, walks, steps)."""
    rng = np.random.default_rng(rng_seed)
    n = ga.n
    seeds, w = pers.internal, pers.weights

    def draw_seeds(m):
        if seeds.shape[0] == 1:
            return np.full(m, seeds[0], dtype=np.int64)
        return seeds[np.minimum(np.searchsorted(np.cumsum(w), rng.random(m), side="right"), seeds.shape[0] - 1)]

    counts = np.zeros(n, dtype=np.int64)
    cur = draw_seeds(int(walks))
    np.add.at(counts, cur, 1)
    steps = int(cur.shape[0])
    first = True
    while cur.shape[0]:
        cur = cur[rng.random(cur.shape[0]) < alpha]
        m = cur.shape[0]
        if m == 0:
            break
        deg = ga.out_degree[cur].astype(np.int64)
        dang = deg == 0
        nxt = np.empty(m, dtype=np.int64)
        live = ~dang
        if first:
            j = np.arange(m, dtype=np.int64)[live] % deg[live]
        else:
            j = (rng.random(int(live.sum())) * deg[live]).astype(np.int64)
        nxt[live] = ga.out_indices[ga.out_offset[cur[live]].astype(np.int64) + j]
        nd = int(dang.sum())
        if nd:
            nxt[dang] = draw_seeds(nd) if dangling == "personalization" else rng.integers(0, n, nd)
        np.add.at(counts, nxt, 1)
        steps += m
        cur = nxt
        first = False
    return counts / max(counts.sum(), 1), int(walks), steps
