"""Power iteration on the GPU: the exact reference (kernels in ``kernels/ppr_power.cu``).

Two phases. While the support of ``p`` is small (the first iterations from a few seeds), an
iteration pushes from the support along the store's out-edges (cost: the support's out-degree
sum). Once that would cost more than a share of a pull over all edges, every iteration is one
launch of the degree-bucketed pull sweep over the graph's :class:`~.snapshot.Snapshot` (compact,
relabeled by out-degree), which also produces the next contributions, the dangling sum and the
max change.
"""

from __future__ import annotations

import numpy as np

from ._graph import GraphArrays
from .gpu_kernels import ctype, kernel
from .snapshot import Snapshot, build_snapshot

BLOCK = 256
#: In-degree upper bounds of the lane-group buckets (1, 2, 4, 8, 16, 32 lanes); above the
#: last bound a whole block pulls for the vertex.
BUCKET_BOUNDS = (2, 4, 8, 16, 32, 1024)
NUM_BUCKETS = len(BUCKET_BOUNDS) + 1
#: The sparse phase runs while the support's out-degree sum is below this share of |E|: a push
#: with atomics costs far more per edge than the pull sweep (on R-MAT 22 the second push from a
#: seed, 5% of |E| into a few hubs, took longer than a whole sweep).
SPARSE_EDGE_SHARE = 0.01
_MODES = {"personalization": 0, "uniform": 1}
_LEAKY = 2


def snapshot_of(ga: GraphArrays) -> Snapshot:
    """Build the power iteration's snapshot of ``ga`` (callers cache it per graph version)."""
    return build_snapshot(ga, bounds=BUCKET_BOUNDS, block=BLOCK)


def power_gpu(ga: GraphArrays, pers_dense, *, alpha, dangling, tol, max_iter, leaky=False, snap=None,
              seeds=None, dtype="float64"):
    """GPU counterpart of :func:`streamrank.ppr.power.power_cpu` (same arguments, CuPy arrays).

    ``snap`` is the graph's :class:`~.snapshot.Snapshot` (built here when None); ``seeds`` (device int32
    array of the personalization's support) enables the sparse first phase, which is only used
    without a uniform dangling term (that term makes every entry non-zero at once). ``dtype``
    is the type of the dense phase's vectors (``"float32"`` halves the gathered bytes; sums and
    the dangling and change reductions stay in float64); the result is float64.

    Returns
    -------
    p, iterations, converged, last_change
    """
    import cupy as cp

    n = ga.n
    max_iter = int(max_iter)
    if snap is None:
        snap = snapshot_of(ga)
    mode = _LEAKY if leaky else _MODES[dangling]
    inv_n = 1.0 / max(n, 1)
    p = pers_dense.copy()
    # scal[0, t]: d . p after t iterations; scal[1, t]: max |change| of iteration t
    scal = cp.zeros((2, max_iter + 2), dtype=cp.float64)
    it, change = 0, float("inf")
    if n == 0:
        return p, 1, True, 0.0

    if seeds is not None and mode != _MODES["uniform"] and int(seeds.shape[0]) * 64 < n:
        p, it, change = _sparse_phase(ga, p, scal, seeds, pers_dense, mode=mode, inv_n=inv_n, alpha=alpha,
                                      tol=tol, max_iter=max_iter)
        if change < tol or it >= max_iter:
            return p, it, change < tol, change

    # dense phase in the snapshot's id space
    plan = snap.plan
    p = p[snap.old_of_new].astype(dtype)
    pers = pers_dense[snap.old_of_new]
    p_new = cp.empty_like(p)
    c = cp.empty_like(p)
    c_new = cp.empty_like(p)
    t = ctype(p)
    k_contrib = kernel("ppr_power.cu", f"ppr_power_contrib<{ctype(snap.out_degree)}, {t}>")
    k_sweep = kernel("ppr_power.cu", f"ppr_power_sweep<{ctype(snap.in_offset)}, {ctype(snap.in_degree)}, {t}>")
    k_contrib(((n + BLOCK - 1) // BLOCK,), (BLOCK,), (p, snap.out_degree, np.int32(n), c, scal[0, it:]))
    converged = False
    for it in range(it + 1, max_iter + 1):
        k_sweep((plan.blocks,), (BLOCK,),
                (plan.order, plan.bstart, plan.blk, snap.in_offset, snap.in_degree, snap.in_indices,
                 snap.out_degree, c, p, pers, scal[0, it - 1:], np.int32(mode), np.float64(inv_n),
                 np.float64(alpha), p_new, c_new, scal[0, it:], scal[1, it:]))
        p, p_new = p_new, p
        c, c_new = c_new, c
        change = float(scal[1, it].get())  # sync: one scalar per iteration for the convergence test
        if change < tol:
            converged = True
            break
    return p[snap.new_of_old].astype(cp.float64, copy=False), it, converged, change


def _sparse_phase(ga, p, scal, seeds, pers_dense, *, mode, inv_n, alpha, tol, max_iter):
    """Push iterations from the support of ``p`` while they are cheaper than a sweep.

    ``p`` holds the iterate (zero outside the seeds). Returns the iterate (float64, store ids),
    the iterations done and the last change. The kernels build the next support list
    themselves, and the host sizes their grids from an upper bound (the seeds plus the
    support's out-degree sum), so an iteration synchronizes once: to read the new support's
    size, its out-degree sum and the change together.
    """
    import cupy as cp

    n = ga.n
    o, d = ctype(ga.out_offset), ctype(ga.out_degree)
    k_seed = kernel("ppr_power.cu", "ppr_sparse_seed")
    k_scatter = kernel("ppr_power.cu", f"ppr_sparse_scatter<{o}, {d}>")
    k_finish = kernel("ppr_power.cu", f"ppr_sparse_finish<{d}>")
    k_diff = kernel("ppr_power.cu", "ppr_sparse_diff")
    k_clear = kernel("ppr_power.cu", "ppr_sparse_clear")
    p_new = cp.zeros_like(p)
    acc = cp.zeros(n, dtype=cp.float64)
    mark = cp.zeros(n, dtype=cp.uint32)
    lists = [cp.empty(n, dtype=cp.int32) for _ in range(3)]  # previous, support, next
    count = cp.zeros(1, dtype=cp.int32)
    volume = cp.zeros(max_iter + 2, dtype=cp.float64)
    s = int(seeds.shape[0])
    lists[1][:s] = seeds
    sizes = [0, s]  # previous, support
    budget = SPARSE_EDGE_SHARE * max(ga.num_edges, 1)
    vol = float(ga.out_degree[seeds].sum())  # sync: the first push-or-sweep decision
    grid = lambda items: (max((items + BLOCK - 1) // BLOCK, 1),)  # noqa: E731
    it, change = 0, float("inf")
    while it < max_iter and vol <= budget:
        it += 1
        prev, sup, nxt = lists
        m = sizes[1]
        bound = min(n, s + int(vol))  # the new support's size is at most this
        k_seed(grid(s), (BLOCK,), (seeds, np.int32(s), mark, nxt, count))
        if m:
            k_scatter(grid(m * 32), (BLOCK,),
                      (sup, np.int32(m), ga.out_offset, ga.out_degree, ga.out_indices, p, acc, mark, nxt, count,
                       scal[0, it - 1:]))
        if sizes[0]:
            k_clear(grid(sizes[0]), (BLOCK,), (prev, np.int32(sizes[0]), p_new))
        k_finish(grid(bound), (BLOCK,),
                 (nxt, count, ga.out_degree, pers_dense, scal[0, it - 1:], np.int32(mode), np.float64(inv_n),
                  np.float64(alpha), acc, mark, p, p_new, scal[1, it:], volume[it:]))
        if m:
            k_diff(grid(m), (BLOCK,), (sup, np.int32(m), p, p_new, scal[1, it:]))
        p, p_new = p_new, p
        both = cp.stack([count[0].astype(cp.float64), volume[it], scal[1, it]])
        size, vol, change = (float(x) for x in both.get())  # sync: new support size, its volume, change
        lists = [sup, nxt, prev]
        sizes = [m, int(size)]
        if change < tol:
            break
    return p, it, change
