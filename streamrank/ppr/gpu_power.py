"""Power iteration on the GPU: the exact reference (kernels in ``kernels/cuda/ppr_power.cu``).

Two phases. While the support of ``p`` is small (the first iterations from a few seeds), an
iteration pushes from the support along the store's out-edges (cost: the support's out-degree
sum). Once that would cost more than a share of a pull over all edges, every iteration is one
launch of the degree-bucketed pull sweep over the graph's :class:`~.snapshot.Snapshot` (compact,
relabeled by out-degree), which also produces the next contributions, the dangling sum and the
max change.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..kernels.cuda.loader import resident_blocks
from ._graph import GraphArrays
from .gpu_kernels import ctype, kernel
from .snapshot import Snapshot, build_snapshot

#: Threads per block of the dense sweep.
BLOCK = 256
#: Threads per block of the sparse phase's kernels.
SPARSE_BLOCK = 256
#: In-degree upper bounds of the lane-group buckets (1, 2, 4, 8, 16, 32 lanes); above the
#: last bound a whole block pulls for the vertex, and above :data:`SPLIT` several blocks do.
BUCKET_BOUNDS = (2, 4, 8, 16, 32, 1024)
#: In-list positions per block for the largest in-lists (a hub's list on one block would
#: finish long after the rest of the sweep).
SPLIT = 4096
NUM_BUCKETS = len(BUCKET_BOUNDS) + 2
#: The sparse phase runs while the support's out-degree sum is below this share of |E| (a push
#: with atomics costs more per edge than the pull sweep).
SPARSE_EDGE_SHARE = 0.01
#: The dense phase runs as one cooperative launch when its sweep has at most this many
#: resident grids of blocks (small graphs, where launches cost more than sweeps).
COOP_WAVES = 4
#: Why the cooperative launch is not used in this process (set at its first failure).
coop_unavailable: str | None = None
#: Dense iterations queued between two reads of the convergence test (the sweep of an
#: iteration after convergence exits at once, so overshooting costs a launch, not a sweep).
CHUNK = 8
_MODES = {"personalization": 0, "uniform": 1}
_LEAKY = 2


def snapshot_of(ga: GraphArrays, *, bounds=BUCKET_BOUNDS, split: int = SPLIT) -> Snapshot:
    """Build the power iteration's snapshot of ``ga`` (callers cache it per graph version;
    ``bounds`` and ``split`` other than the defaults are for tests)."""
    return build_snapshot(ga, bounds=bounds, block=BLOCK, split=split)


@dataclass
class PowerRun:
    """The GPU power iteration's result: ``p`` in the store's id order (``ids is None``) or in
    the snapshot's (``ids``: the store id of each position), in float64 or the dense phase's
    ``dtype``."""

    p: object
    ids: object
    iterations: int
    converged: bool
    change: float

    def store_vector(self):
        """``p`` over store ids, float64 (device)."""
        import cupy as cp

        if self.ids is None:
            return self.p.astype(cp.float64, copy=False)
        out = cp.empty(self.p.shape[0], dtype=cp.float64)
        out[self.ids] = self.p
        return out


def drive_chunks(it: int, max_iter: int, tol: float, launch, changes):
    """The host loop of the dense phase: queue :data:`CHUNK` iterations (``launch(j)``), then
    read their changes in one copy (``changes(first + 1, last + 1)``, a host array with a row
    per iteration: one value, or one per query of a batch), and stop at the first iteration
    whose largest change is below ``tol``; the launches after it did nothing. With ``tol <= 0``
    (a truncated run) everything is queued before the one read.

    Returns
    -------
    (last iteration, converged, that iteration's row of changes)
    """
    converged, row = False, None
    while it < max_iter and not converged:
        first, last = it, (max_iter if tol <= 0 else min(it + CHUNK, max_iter))
        for j in range(first + 1, last + 1):
            launch(j)
        block = changes(first + 1, last + 1)  # sync: the queued iterations' changes, read once
        worst = block.reshape(block.shape[0], -1).max(axis=1)
        below = np.nonzero(worst < tol)[0]
        it, converged = (first + 1 + int(below[0]), True) if below.size else (last, False)
        row = block[it - first - 1]
    return it, converged, row


def personalization_gpu(n: int, pers):
    """The dense personalization vector (float64, store ids) and the device int32 seed list of
    a :class:`~.semantics.Personalization`: one host-to-device copy and one kernel."""
    import cupy as cp

    ns = int(pers.internal.shape[0])
    pd = cp.zeros(n, dtype=cp.float64)
    seeds = cp.empty(ns, dtype=cp.int32)
    sw = cp.asarray(np.concatenate([pers.internal.astype(np.float64), pers.weights]))
    if ns:
        kernel("ppr_power.cu", "ppr_seed_setup")(((ns + 255) // 256,), (256,), (sw, np.int32(ns), pd, seeds))
    return pd, seeds


def power_gpu(ga: GraphArrays, pers_dense, *, alpha, dangling, tol, max_iter, leaky=False, snap=None,
              seeds=None, seed_volume=None, dtype="float64", coop=None) -> PowerRun:
    """GPU counterpart of :func:`streamrank.ppr.power.power_cpu` (same arguments, CuPy arrays).

    ``snap`` is the graph's :class:`~.snapshot.Snapshot` (built here when None); ``seeds`` (device int32
    array of the personalization's support) enables the sparse first phase, which is only used
    without a uniform dangling term (that term makes every entry non-zero at once);
    ``seed_volume``, the seeds' out-degree sum when the caller knows it, saves a round trip. ``dtype``
    is the type of the dense phase's vectors (``"float32"`` halves the gathered bytes; sums
    and the dangling and change reductions stay in float64); the result is float64.

    The dense phase queues :data:`CHUNK` iterations and then reads their changes at once (with
    ``tol <= 0``, a truncated run, it reads nothing until the end). On a small graph (a sweep
    of at most :data:`COOP_WAVES` resident grids) it runs instead as one cooperative launch
    that iterates on the device (``kernels/cuda/ppr_power_coop.cu``); ``coop=False`` turns that
    off, ``coop=True`` requires it (for tests), None decides by size.

    Returns
    -------
    PowerRun
        In the store's order after the sparse phase alone, else in the snapshot's (no final
        permutation: the top-k maps its few candidates instead).
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
        return PowerRun(p, None, 1, True, 0.0)

    if seeds is not None and mode != _MODES["uniform"] and int(seeds.shape[0]) * 64 < n:
        p, it, change = _sparse_phase(ga, p, scal, seeds, pers_dense, mode=mode, inv_n=inv_n, alpha=alpha,
                                      tol=tol, max_iter=max_iter, volume=seed_volume)
        if change < tol or it >= max_iter:
            return PowerRun(p, None, it, change < tol, change)

    # dense phase in the snapshot's id space; iteration j writes bufs[(j - start) % 2]
    plan = snap.plan
    start = it
    bufs = [p[snap.old_of_new].astype(dtype), None]
    bufs[1] = cp.empty_like(bufs[0])
    contribs = [cp.empty_like(bufs[0]), cp.empty_like(bufs[0])]
    pers = pers_dense[snap.old_of_new]
    scal[1, start] = np.inf  # the first sweep's "previous change": not converged
    t = ctype(bufs[0])
    k_contrib = kernel("ppr_power.cu", f"ppr_power_contrib<{ctype(snap.out_degree)}, {t}>")
    k_sweep = kernel("ppr_power.cu", f"ppr_power_sweep<{ctype(snap.in_offset)}, {ctype(snap.in_degree)}, {t}>")
    k_contrib(((n + SPARSE_BLOCK - 1) // SPARSE_BLOCK,), (SPARSE_BLOCK,),
              (bufs[0], snap.out_degree, np.int32(n), contribs[0], scal[0, it:]))
    if coop is not False:
        done = _dense_coop(snap, t, bufs, contribs, pers, scal, mode=mode, inv_n=inv_n, alpha=alpha, tol=tol,
                           start=start, max_iter=max_iter, required=coop is True)
        if done is not None:
            it, change = done
            return PowerRun(bufs[(it - start) % 2], snap.old_of_new, it, change < tol, change)
    def launch(j):
        cur, prv = (j - start) % 2, (j - start - 1) % 2
        k_sweep((plan.blocks,), (plan.block,),
                (plan.order, plan.bstart, plan.blk, snap.in_offset, snap.in_degree, snap.in_indices,
                 snap.out_degree, contribs[prv], bufs[prv], pers, scal[0, j - 1:], np.int32(mode),
                 np.float64(inv_n), np.float64(alpha), scal[1, j - 1:], np.float64(tol), bufs[cur],
                 contribs[cur], scal[0, j:], scal[1, j:], np.int32(plan.split), plan.split_slot,
                 plan.split_part, plan.split_acc, plan.split_count))

    it, converged, last_change = drive_chunks(it, max_iter, tol, launch, lambda a, b: scal[1, a:b].get())
    change = float(last_change)
    return PowerRun(bufs[(it - start) % 2], snap.old_of_new, it, converged, change)


def _sparse_phase(ga, p, scal, seeds, pers_dense, *, mode, inv_n, alpha, tol, max_iter, volume=None):
    """Push iterations from the support of ``p`` while they are cheaper than a sweep.

    ``p`` holds the iterate (zero outside the seeds). Returns the iterate (float64, store ids),
    the iterations done and the last change. The kernels build the next support list
    themselves, and the host sizes their grids from what it read at the end of the previous
    iteration (the support's size and out-degree sum), so an iteration synchronizes once.
    """
    import cupy as cp

    n = ga.n
    o, d = ctype(ga.out_offset), ctype(ga.out_degree)
    k_seed = kernel("ppr_power.cu", "ppr_sparse_seed")
    k_prep = kernel("ppr_power.cu", f"ppr_sparse_prep<{d}>")
    k_scatter = kernel("ppr_power.cu", f"ppr_sparse_scatter<{o}, {d}>")
    k_finish = kernel("ppr_power.cu", f"ppr_sparse_finish<{d}>")
    k_diff = kernel("ppr_power.cu", "ppr_sparse_diff")
    k_clear = kernel("ppr_power.cu", "ppr_sparse_clear")
    p_new = cp.zeros_like(p)
    acc = cp.zeros(n, dtype=cp.float64)
    mark = cp.zeros(n, dtype=cp.uint32)
    lists = [cp.empty(n, dtype=cp.int32) for _ in range(3)]  # previous, support, next
    deg = cp.empty(n, dtype=cp.int64)
    # status[t]: the support after iteration t (its size, its out-degree sum), max |change| of t
    status = cp.zeros((max_iter + 2, 3), dtype=cp.float64)
    count = cp.zeros(1, dtype=cp.int32)
    s = int(seeds.shape[0])
    lists[1][:s] = seeds
    sizes = [0, s]  # previous, support
    budget = SPARSE_EDGE_SHARE * max(ga.num_edges, 1)
    # the first push-or-sweep decision (a sync unless the caller brought the seeds' volume)
    vol = int(ga.out_degree[seeds].sum()) if volume is None else int(volume)
    grid = lambda items: (max((items + SPARSE_BLOCK - 1) // SPARSE_BLOCK, 1),)  # noqa: E731
    blk = (SPARSE_BLOCK,)
    it, change = 0, float("inf")
    while it < max_iter and vol <= budget:
        it += 1
        prev, sup, nxt = lists
        m = sizes[1]
        bound = min(n, s + vol)  # the new support's size is at most this
        k_seed(grid(s), blk, (seeds, np.int32(s), mark, nxt, count))
        k_prep(grid(m), blk, (sup, np.int32(m), ga.out_degree, p, deg, scal[0, it - 1:]))
        if vol:
            ends = cp.cumsum(deg[:m])
            k_scatter(grid(vol), blk,
                      (sup, np.int32(m), ends, np.int64(vol), ga.out_offset, ga.out_degree, ga.out_indices, p,
                       acc, mark, nxt, count))
        if sizes[0]:
            k_clear(grid(sizes[0]), blk, (prev, np.int32(sizes[0]), p_new))
        k_finish(grid(bound), blk,
                 (nxt, count, ga.out_degree, pers_dense, scal[0, it - 1:], np.int32(mode), np.float64(inv_n),
                  np.float64(alpha), acc, mark, p, p_new, status[it:]))
        k_diff(grid(m), blk, (sup, np.int32(m), p, p_new, status[it, 2:]))
        size, vol_f, change = (float(x) for x in status[it].get())  # sync: new support, its volume, change
        p, p_new = p_new, p
        lists = [sup, nxt, prev]
        sizes = [m, int(size)]
        vol = int(vol_f)
        if change < tol:
            break
    return p, it, change


def _dense_coop(snap, t, bufs, contribs, pers, scal, *, mode, inv_n, alpha, tol, start, max_iter, required):
    """The dense phase as one cooperative launch; ``(last iteration, its change)``, or None when
    the graph is too large for it or cooperative launches fail here (then remembered)."""
    global coop_unavailable
    import cupy as cp

    plan = snap.plan
    if coop_unavailable is not None and not required:
        return None
    try:
        k = kernel("ppr_power_coop.cu", f"ppr_power_coop<{ctype(snap.in_offset)}, {ctype(snap.in_degree)}, {t}>")
        grid = resident_blocks(k, plan.block)
        if plan.blocks > COOP_WAVES * grid and not required:
            return None
        done = cp.zeros(1, dtype=cp.int32)
        k((min(grid, plan.blocks),), (plan.block,),
          (plan.order, plan.bstart, plan.blk, snap.in_offset, snap.in_degree, snap.in_indices, snap.out_degree,
           contribs[0], contribs[1], bufs[0], bufs[1], pers, np.int32(mode), np.float64(inv_n), np.float64(alpha),
           np.float64(tol), np.int32(plan.split), plan.split_slot, plan.split_part, plan.split_acc,
           plan.split_count, scal[0], scal[1], np.int32(start), np.int32(max_iter), done))
        it = int(done.get()[0])  # sync: the iteration the device stopped at
    except Exception as exc:  # compilation or launch (e.g. no cooperative launch on this device)
        if required:
            raise
        coop_unavailable = f"{type(exc).__name__}: {exc}"
        return None
    return it, float(scal[1, it].get())  # (nothing queued since: no wait)
