"""Power iteration on the GPU: the exact reference (kernels in ``kernels/ppr_power.cu``)."""

from __future__ import annotations

import numpy as np

from ._graph import GraphArrays
from .gpu_kernels import ctype, kernel

BLOCK = 256


def power_gpu(ga: GraphArrays, pers_dense, *, alpha, dangling, tol, max_iter, leaky=False,
              switch_degree: int = 32):
    """GPU counterpart of :func:`streamrank.ppr.power.power_cpu` (same arguments, CuPy arrays).

    Per iteration: a contribution kernel (``c = p / outdeg`` and the dangling sum, on the
    device), a thread-per-vertex pull for in-degree below ``switch_degree`` and a
    warp-per-vertex pull for the others, and one synchronizing read of the max change.
    """
    import cupy as cp

    n = ga.n
    o, d = ctype(ga.in_offset), ctype(ga.in_degree)
    k_contrib = kernel("ppr_power.cu", f"ppr_power_contrib<{ctype(ga.out_degree)}>")
    k_thread = kernel("ppr_power.cu", f"ppr_power_thread<{o}, {d}>")
    k_warp = kernel("ppr_power.cu", f"ppr_power_warp<{o}, {d}>")
    high = cp.nonzero(ga.in_degree >= switch_degree)[0].astype(cp.int32)  # sync: list size
    m = int(high.shape[0])
    p = pers_dense.copy()
    p_new = cp.empty_like(p)
    c = cp.empty_like(p)
    scal = cp.zeros(2, dtype=cp.float64)  # [dangling sum, max change]
    zero = cp.zeros(1, dtype=cp.float64)
    mode = 0 if dangling == "personalization" else 1
    inv_n = 1.0 / max(n, 1)
    grid_v = ((n + BLOCK - 1) // BLOCK,)
    grid_w = ((m * 32 + BLOCK - 1) // BLOCK,)
    change = float("inf")
    dsum = zero if leaky else scal[0:1]
    for it in range(1, int(max_iter) + 1):
        scal.fill(0)
        k_contrib(grid_v, (BLOCK,), (p, ga.out_degree, np.int32(n), c, scal[0:1]))
        args = (ga.in_offset, ga.in_degree, ga.in_indices, c, p, pers_dense, dsum, np.int32(mode),
                np.float64(inv_n), np.float64(alpha))
        k_thread(grid_v, (BLOCK,), (np.int32(n),) + args + (np.int32(switch_degree), p_new, scal[1:2]))
        if m:
            k_warp(grid_w, (BLOCK,), (high, np.int32(m)) + args + (p_new, scal[1:2]))
        p, p_new = p_new, p
        change = float(scal[1].get())  # sync: one scalar per iteration for the convergence test
        if change < tol:
            return p, it, True, change
    return p, int(max_iter), False, change
