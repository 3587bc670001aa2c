"""Complete-path Monte Carlo on the GPU (``kernels/cuda/ppr_montecarlo.cu``): one thread per walker.

On a weighted graph a step draws the out-edge in proportion to its weight, as the CPU's walks
(:mod:`.montecarlo`): :func:`out_cumulative` holds per out-slot the running weight sum within its
vertex's list, and the walk kernel's ``WT = 1`` instantiation binary-searches it
(``O(log outdeg)`` per step, no per-step scan of the list).
"""

from __future__ import annotations

import numpy as np

from ._graph import GraphArrays
from .gpu_kernels import ctype, kernel

BLOCK = 256


def out_cumulative(ga: GraphArrays):
    """Per out-slot of a weighted graph the running sum of the weights within its vertex's live
    list (the slot included; slots in the gaps are left 0). Callers cache it per graph version."""
    import cupy as cp

    wt = cp.asarray(ga.out_weights, dtype=cp.float64)
    cum = cp.zeros(wt.shape[0], dtype=cp.float64)
    if ga.n:
        k = kernel("ppr_montecarlo.cu", f"ppr_segment_sums<{ctype(ga.out_offset)}, {ctype(ga.out_degree)}>",
                   weighted=True)
        k(((ga.n * 32 + BLOCK - 1) // BLOCK,), (BLOCK,), (np.int32(ga.n), ga.out_offset, ga.out_degree, wt, cum))
    return cum


def montecarlo_gpu(ga: GraphArrays, pers, *, alpha: float, dangling: str, walks: int,
                   walkers: int | None = None, rng_seed: int = 0, out_cum=None):
    """Spend a step budget of ``walks / (1 - alpha)`` visits (the expected length of ``walks``
    complete walks) over ``walkers`` threads, each respawning at the seed until its share is
    spent. A weighted graph's walks take ``out_cum`` (:func:`out_cumulative`, computed here when
    not given). Returns (estimate p on the device, walks completed, steps counted)."""
    import cupy as cp

    walkers = int(min(walks, 1 << 16) if walkers is None else walkers)
    budget = int(np.ceil(walks / (1.0 - alpha)))
    per = max(1, -(-budget // walkers))
    seeds = cp.asarray(pers.internal, dtype=cp.int32)
    cdf = cp.asarray(np.cumsum(pers.weights), dtype=cp.float64)
    counts = cp.zeros(ga.n, dtype=cp.uint32)
    totals = cp.zeros(2, dtype=cp.uint64)
    wt = ga.weighted
    if wt and out_cum is None:
        out_cum = out_cumulative(ga)
    k = kernel("ppr_montecarlo.cu", f"ppr_mc_walk<{ctype(ga.out_offset)}, {ctype(ga.out_degree)}, {int(wt)}>",
               weighted=wt)
    alpha_u32 = np.uint32(min(int(alpha * 4294967296.0), 4294967295))
    k(((walkers + BLOCK - 1) // BLOCK,), (BLOCK,),
      (np.int32(walkers), np.int64(per), np.uint64(rng_seed & 0xFFFFFFFFFFFFFFFF), ga.out_offset, ga.out_degree,
       ga.out_indices, out_cum if wt else np.uint64(0), np.int32(ga.n), seeds, cdf, np.int32(seeds.shape[0]),
       np.int32(0 if dangling == "personalization" else 1), alpha_u32, counts, totals))
    tot = totals.get()  # sync: walks and steps for the result (and the normalization)
    p = counts.astype(cp.float64) / float(max(int(tot[1]), 1))
    return p, int(tot[0]), int(tot[1])
