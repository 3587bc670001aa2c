"""Power iteration for many seed sets at once on the GPU (kernels in ``kernels/cuda/ppr_batch.cu``).

The iterates of up to :data:`MAX_WIDTH` queries form a row-major ``|V| x W`` matrix in the
snapshot's id space (``W`` the batch padded to a multiple of 32). A sweep reads each in-edge's
source index once for the whole batch and then ``W`` contiguous values, so the index traffic
and the random-access latency of the single-query sweep are shared by every query of the
batch. Same semantics, dangling modes, tolerance and truncation as
:func:`streamrank.ppr.gpu_power.power_gpu`; every query of a batch runs the same number of
iterations (until the slowest has converged).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InvalidArgumentError
from ._graph import GraphArrays
from .gpu_kernels import ctype, kernel
from .gpu_power import drive_chunks
from .snapshot import Snapshot

#: Queries per batch (the kernels keep up to 4 x 32 columns per warp in registers).
MAX_WIDTH = 128
#: In-list positions per work item: a longer list is cut into slices summed by several warps.
SLICE = 256
#: Threads per block of the batch sweep (PPR_BATCH_WARPS in the kernel source).
SWEEP_BLOCK = 256
#: Blocks per SM of the persistent sweep grid.
BLOCKS_PER_SM = 8
_MODES = {"personalization": 0, "uniform": 1}
_BLOCK = 256


def batch_width(n: int, dtype: str, *, share: float = 0.5) -> int:
    """Queries per batch that fit: the four ``n x W`` matrices take at most ``share`` of the
    device's free memory; a multiple of 32 up to :data:`MAX_WIDTH`, 0 when not even 32 fit."""
    import cupy as cp

    free, _total = cp.cuda.Device().mem_info
    free += cp.get_default_memory_pool().free_bytes()  # blocks CuPy holds for reuse
    per_column = 4 * max(n, 1) * np.dtype(dtype).itemsize
    return int(min(MAX_WIDTH, int(share * free // per_column) // 32 * 32))


@dataclass
class BatchItems:
    """The sweep's work items over a snapshot: a vertex each, or a slice of a long in-list."""

    v: object  # int32: vertex (snapshot id), items sorted by in-degree
    lo: object  # offset type: first in-list position of the item
    length: object  # int32: positions in the item
    slot: object  # int32: the split vertex's accumulator slot, -1 for a whole list
    items: int
    slots: int
    slice_len: int


def batch_items(snap: Snapshot, *, slice_len: int = SLICE) -> BatchItems:
    """Work items of ``snap`` (callers cache them with the snapshot)."""
    import cupy as cp

    order = snap.plan.order.astype(cp.int64)
    deg = snap.in_degree[order].astype(cp.int64)
    parts = cp.maximum((deg + slice_len - 1) // slice_len, 1)
    starts = cp.cumsum(parts) - parts
    total = int(starts[-1] + parts[-1]) if snap.n else 0  # sync: the item count sizes the arrays
    seg = cp.repeat(cp.arange(snap.n, dtype=cp.int64), parts)
    k = cp.arange(total, dtype=cp.int64) - starts[seg]
    lo = k * slice_len
    length = cp.minimum(deg[seg] - lo, slice_len).astype(cp.int32)
    split = parts > 1
    rank = cp.cumsum(split) - 1
    slot = cp.where(split[seg], rank[seg], -1).astype(cp.int32)
    slots = int(split.sum())  # sync
    return BatchItems(order[seg].astype(cp.int32), lo.astype(snap.in_offset.dtype), length, slot, total, slots,
                      int(slice_len))


@dataclass
class BatchRun:
    """The iterates of a batch (snapshot space, ``n x width``, type ``dtype``) and how it ended."""

    p: object
    width: int
    iterations: int
    converged: bool
    changes: np.ndarray  # last max |change| per query (host)


def power_batch_gpu(ga: GraphArrays, snap: Snapshot, items: BatchItems, seed_sets, *, alpha: float,
                    dangling: str, tol: float, max_iter: int, dtype: str = "float64") -> BatchRun:
    """Power iteration of ``len(seed_sets) <= MAX_WIDTH`` queries at once.

    ``seed_sets`` holds each query's (internal store ids, weights summing to 1) as host
    arrays. Returns the iterates in the snapshot's id space (row ``i`` is snapshot vertex
    ``i``, column ``j`` query ``j``).
    """
    import cupy as cp

    n, used = ga.n, len(seed_sets)
    if not 1 <= used <= MAX_WIDTH:
        raise InvalidArgumentError(f"a batch holds 1 to {MAX_WIDTH} queries, got {used}")
    nch = -(-used // 32)
    width = 32 * nch
    max_iter = int(max_iter)
    mode = _MODES[dangling]
    # the seeds of every query (the flagged rows) and their weights per column, on the host
    flagged_store = np.unique(np.concatenate([np.asarray(ids, dtype=np.int64) for ids, _ in seed_sets]))
    wts = np.zeros((flagged_store.shape[0], width))
    for j, (ids, w) in enumerate(seed_sets):
        wts[np.searchsorted(flagged_store, ids), j] = w
    nf = int(flagged_store.shape[0])
    flagged = snap.new_of_old[cp.asarray(flagged_store)].astype(cp.int32)
    wts_d = cp.asarray(wts)
    flag = cp.full(n, -1, dtype=cp.int32)
    flag[flagged] = cp.arange(nf, dtype=cp.int32)
    t = ctype(np.empty(0, dtype=dtype))
    o, d = ctype(snap.in_offset), ctype(snap.out_degree)
    k_init = kernel("ppr_batch.cu", f"ppr_batch_init<{d}, {t}>")
    k_sweep = kernel("ppr_batch.cu", f"ppr_batch_sweep<{o}, {d}, {t}, {nch}>")
    k_seeds = kernel("ppr_batch.cu", f"ppr_batch_seeds<{d}, {t}>")
    bufs = [cp.zeros((n, width), dtype=dtype), cp.zeros((n, width), dtype=dtype)]
    contribs = [cp.zeros((n, width), dtype=dtype), cp.empty((n, width), dtype=dtype)]
    seed_sum = cp.zeros((nf, width), dtype=cp.float64)
    acc = cp.zeros((max(items.slots, 1), width), dtype=cp.float64)  # kept zero by the sweep
    count = cp.zeros(max(items.slots, 1), dtype=cp.int32)
    # scal[0, t, j]: d . p of query j after t iterations; scal[1, t, j]: its max |change| in t
    scal = cp.zeros((2, max_iter + 2, width), dtype=cp.float64)
    scal[1, 0] = np.inf
    cells = nf * width
    k_init(((cells + _BLOCK - 1) // _BLOCK,), (_BLOCK,),
           (flagged, np.int32(nf), np.int32(width), wts_d, snap.out_degree, bufs[0], contribs[0], scal[0, 0]))
    grid = (int(cp.cuda.Device().attributes["MultiProcessorCount"]) * BLOCKS_PER_SM,)
    args = (np.int32(mode), np.float64(1.0 / max(n, 1)), np.float64(alpha))
    def launch(j):
        cur, prv = j % 2, (j - 1) % 2
        k_sweep(grid, (SWEEP_BLOCK,),
                (items.v, items.lo, items.length, items.slot, np.int64(items.items), np.int32(items.slice_len),
                 snap.in_offset, snap.in_degree, snap.in_indices, snap.out_degree, flag, contribs[prv],
                 bufs[prv], scal[0, j - 1], *args, scal[1, j - 1], np.float64(tol), bufs[cur],
                 contribs[cur], seed_sum, acc, count, scal[0, j], scal[1, j]))
        k_seeds(((cells + _BLOCK - 1) // _BLOCK,), (_BLOCK,),
                (flagged, np.int32(nf), np.int32(width), wts_d, seed_sum, snap.out_degree, scal[0, j - 1],
                 *args, scal[1, j - 1], np.float64(tol), bufs[prv], bufs[cur], contribs[cur], scal[0, j],
                 scal[1, j]))

    it, converged, changes = drive_chunks(0, max_iter, tol, launch, lambda a, b: scal[1, a:b, :used].get())
    return BatchRun(bufs[it % 2], width, it, converged, changes)


def batch_top_k(run: BatchRun, snap: Snapshot, k: int, used: int, *, external=None, cap: int | None = None):
    """The :class:`~.semantics.TopK` of each of the first ``used`` columns (values descending,
    ties by store id, external ids when ``external`` is given), as :func:`~.semantics.top_k`.

    Three kernels list the candidates of every column at once (the chunk-maxima bound of
    :func:`~.semantics.top_k`, per column) into a buffer of ``cap`` entries (default
    ``max(65536, 64 k used)``; when more qualify, flat columns, the selection runs once more
    with room for all), and one copy brings them, with their store and external ids, to the
    host."""
    import cupy as cp

    from .semantics import _TOPK_GPU_CHUNKS, TopK, top_k

    p, width = run.p, run.width
    n = int(p.shape[0])
    k = min(int(k), n)
    chunk = max(-(-n // _TOPK_GPU_CHUNKS), 1)
    nch = -(-n // chunk)
    t = cp.zeros(width, dtype=cp.float64)
    if nch >= k:
        maxima = cp.empty((nch, width), dtype=cp.float64)
        kernel("ppr_batch.cu", f"ppr_batch_chunk_max<{ctype(p)}>")(
            (nch,), (min(width, 256),), (p, np.int64(n), np.int32(width), np.int64(chunk), maxima))
        size = 1 << max(nch - 1, 1).bit_length()
        kernel("ppr_topk.cu", "ppr_kth_largest")(
            (width,), (1024,), (maxima, np.int32(nch), np.int32(width), np.int32(size), np.int32(k), t),
            shared_mem=size * 8)
    cap = max(1 << 16, 64 * k * used) if cap is None else int(cap)
    total = n * width
    while True:
        out = cp.empty(max(cap, 1), dtype=cp.int64)
        count = cp.zeros(1, dtype=cp.int32)
        kernel("ppr_batch.cu", f"ppr_batch_select<{ctype(p)}>")(
            ((total + _BLOCK - 1) // _BLOCK,), (_BLOCK,),
            (p, np.int64(total), np.int32(width), np.int32(used), t, out, np.int32(cap), count))
        found = int(count.get()[0])  # sync: the candidate count
        if found <= cap:
            break
        cap = found
    cand = out[:found]
    store_d = snap.old_of_new[cand // width].astype(cp.int64)
    ext_on_device = external is not None and not isinstance(external, np.ndarray)
    cols = [store_d, cand % width, p.ravel()[cand].astype(cp.float64).view(cp.int64)]
    if ext_on_device:
        cols.append(external[store_d].astype(cp.int64))
    packed = cp.stack(cols).get()  # sync: the candidates, their ids and external ids, one copy
    res = []
    for j in range(used):
        sel = packed[1] == j
        if np.count_nonzero(sel) < k:  # fewer than k positive entries: that column on its own
            res.append(top_k(cp, p[:, j], k, ids=snap.old_of_new, external=external))
            continue
        ids, v = packed[0][sel], packed[2][sel].view(np.float64)
        order = np.lexsort((ids, -v))[:k]
        ext = None
        if external is not None:
            ext = packed[3][sel][order] if ext_on_device else np.asarray(external[ids[order]], dtype=np.int64)
        res.append(TopK(ids[order], v[order], ext))
    return res


def column_vector(run: BatchRun, snap: Snapshot, j: int) -> np.ndarray:
    """Query ``j``'s full vector over store ids (host float64)."""
    return run.p[:, j][snap.new_of_old].astype("float64").get()
