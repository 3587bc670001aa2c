"""Complete-path Monte Carlo on the GPU (``kernels/cuda/ppr_montecarlo.cu``): one thread per walker."""

from __future__ import annotations

import numpy as np

from ._graph import GraphArrays
from .gpu_kernels import ctype, kernel

BLOCK = 256


def montecarlo_gpu(ga: GraphArrays, pers, *, alpha: float, dangling: str, walks: int,
                   walkers: int | None = None, rng_seed: int = 0):
    """Spend a step budget of ``walks / (1 - alpha)`` visits (the expected length of ``walks``
    complete walks) over ``walkers`` threads, each respawning at the seed until its share is
    spent. Returns (estimate p on the device, walks completed, steps counted)."""
    import cupy as cp

    walkers = int(min(walks, 1 << 16) if walkers is None else walkers)
    budget = int(np.ceil(walks / (1.0 - alpha)))
    per = max(1, -(-budget // walkers))
    seeds = cp.asarray(pers.internal, dtype=cp.int32)
    cdf = cp.asarray(np.cumsum(pers.weights), dtype=cp.float64)
    counts = cp.zeros(ga.n, dtype=cp.uint32)
    totals = cp.zeros(2, dtype=cp.uint64)
    k = kernel("ppr_montecarlo.cu", f"ppr_mc_walk<{ctype(ga.out_offset)}, {ctype(ga.out_degree)}>")
    alpha_u32 = np.uint32(min(int(alpha * 4294967296.0), 4294967295))
    k(((walkers + BLOCK - 1) // BLOCK,), (BLOCK,),
      (np.int32(walkers), np.int64(per), np.uint64(rng_seed & 0xFFFFFFFFFFFFFFFF), ga.out_offset, ga.out_degree,
       ga.out_indices, np.int32(ga.n), seeds, cdf, np.int32(seeds.shape[0]),
       np.int32(0 if dangling == "personalization" else 1), alpha_u32, counts, totals))
    tot = totals.get()  # sync: walks and steps for the result (and the normalization)
    p = counts.astype(cp.float64) / float(max(int(tot[1]), 1))
    return p, int(tot[0]), int(tot[1])
