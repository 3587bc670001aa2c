"""Complete-path Monte Carlo on the CPU (compiled walk loop, :func:`streamrank.kernels.cpu.ppr.walks`).

Each walk starts at a seed (drawn from the personalization), every vertex it visits is
counted, and at each step it moves to a uniformly random out-neighbour with probability
``alpha`` (from a dangling vertex: to a seed drawn from the personalization, or to a uniform
random vertex, per the dangling mode) and ends otherwise. The expected number of visits to
``v`` per walk is ``p[v] / (1 - alpha)``, so ``counts / sum(counts)`` estimates ``p``; with ``m``
walks each entry's standard error is about ``sqrt(p[v] / ((1 - alpha) m))``. First steps from
a seed are spread evenly over its out-neighbours (walk ``i`` takes neighbour ``i mod deg``). On a
weighted graph a step draws an out-edge in proportion to its weight (first steps spread evenly in
proportion, :func:`streamrank.kernels.cpu.ppr.walks`).
"""

from __future__ import annotations

import numpy as np

from ..kernels.cpu.ppr import walks as _walks
from ._graph import GraphArrays


def montecarlo_cpu(ga: GraphArrays, pers, *, alpha: float, dangling: str, walks: int, rng_seed: int = 0):
    """Returns (estimate p, walks, steps)."""
    seeds = np.ascontiguousarray(pers.internal, dtype=np.int64)
    cum = np.cumsum(np.asarray(pers.weights, dtype=np.float64))
    args = (ga.n, ga.out_offset, ga.out_degree, ga.out_indices, seeds, cum, float(alpha),
            dangling == "personalization", int(walks), int(rng_seed))
    counts, steps = _walks(*args, ga.out_cumulative) if ga.weighted else _walks(*args)
    return counts / max(int(counts.sum()), 1), int(walks), int(steps)
