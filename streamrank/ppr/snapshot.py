"""The GPU power iteration's read-only snapshot of the graph (one per graph version).

The store's in-CSR has gaps (room for insertions) and vertex ids in order of first appearance
(by degree only within a large batch or bulk load),
so a pull sweep streams ~50% more index slots than there are edges and gathers each source's
contribution from a random place in a |V|-long vector. The snapshot relabels the vertices by
out-degree, descending, and stores a compact in-CSR in that id space with every in-list sorted:
the contributions of the high out-degree sources, which most in-edges come from, then sit
together and stay in cache. Built on the device from the store's arrays (an expand, two gathers
and one sort of |E| keys), cached per graph version, so the first query after a batch pays it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ..errors import InvalidArgumentError
from ._graph import GraphArrays, expand_segments

_MASK32 = (1 << 32) - 1


@dataclass
class SweepPlan:
    """Vertices grouped by in-degree bucket for the pull sweep (``kernels/cuda/ppr_power.cu``).

    Buckets ``0 .. len(bounds) - 1`` give each vertex a group of ``2**b`` lanes, the next one a
    block per vertex, and the last one (in-degree above ``split``) several blocks per vertex,
    each summing ``split`` positions of the in-list; their partial sums meet in ``split_acc``.
    """

    order: object  # int32 device array: vertex ids by (in-degree, id), so bucket by bucket
    bstart: object  # int32 device array (buckets + 1): bucket starts in ``order``
    blk: object  # int32 device array (buckets + 1): first block of each bucket
    blocks: int  # total blocks of one sweep
    counts: tuple  # vertices per bucket (host)
    block: int  # threads per block
    split: int  # in-list positions per block in the last bucket
    split_slot: object  # int32 device array: per block of the last bucket, its vertex's rank there
    split_part: object  # int32 device array: per block of the last bucket, which slice it sums
    split_acc: object  # float64 device array: a partial-sum slot per split vertex (kept zero)
    split_count: object  # int32 device array: slices done per split vertex (kept zero)


@dataclass
class Snapshot:
    """Compact in-CSR of the graph in the out-degree-sorted id space.

    Attributes
    ----------
    n, num_edges : int
    old_of_new, new_of_old : int64 device arrays
        The relabeling (store id of snapshot id ``i``, and its inverse).
    in_offset, in_degree, out_degree : device arrays (int32, or int64 from 2**31 edges)
    in_indices : int32 device array (sources, snapshot ids, ascending within each list)
    plan : SweepPlan
    build_ms : float
        Wall time of the build (device synchronized).
    """

    n: int
    num_edges: int
    old_of_new: object
    new_of_old: object
    in_offset: object
    in_degree: object
    in_indices: object
    out_degree: object
    plan: SweepPlan
    build_ms: float


def build_plan(xp, in_degree, *, bounds, block: int, split: int) -> SweepPlan:
    """Group vertices by in-degree: bucket ``i`` holds degrees in ``(bounds[i-1], bounds[i]]``
    and gets ``2**i`` lanes per vertex; above ``bounds[-1]`` a block each, and above ``split``
    ``ceil(degree / split)`` blocks each.

    ``order`` sorts by (in-degree, id), so the buckets come out in order; the sweep takes its
    blocks from the end (the largest in-lists start first, and no big list is left to finish
    alone at the end)."""
    if len(bounds) != 6 or list(bounds) != sorted(bounds) or split < bounds[-1]:
        raise InvalidArgumentError(f"need 6 ascending bucket bounds and split >= the last, got {bounds}, {split}")
    n = int(in_degree.shape[0])
    nb = len(bounds) + 2
    deg = in_degree.astype(xp.int64)
    if n and int(deg.max()) >= (1 << 62) // n:  # sync: (degree, id) does not fit one int64 key
        order = xp.lexsort(xp.stack([xp.arange(n, dtype=xp.int64), deg])).astype(xp.int32)
    else:
        order = xp.argsort(deg * max(n, 1) + xp.arange(n, dtype=xp.int64)).astype(xp.int32)
    b = xp.zeros(n, dtype=xp.int64)
    for bound in tuple(bounds) + (split,):
        b += deg > bound
    counts = xp.bincount(b, minlength=nb).get()  # sync: the host sizes the grid
    bstart = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
    big = xp.sort(deg[deg > split]) if counts[-1] else xp.zeros(0, dtype=xp.int64)  # the last bucket, in order
    parts = -(-big // split)
    slot = xp.repeat(xp.arange(big.shape[0], dtype=xp.int32), parts)
    part = (xp.arange(slot.shape[0], dtype=xp.int64) - (xp.cumsum(parts) - parts)[slot]).astype(xp.int32)
    blocks = [int(-(-int(c) // (block >> i))) for i, c in enumerate(counts[:-2])] + [int(counts[-2]),
                                                                                      int(slot.shape[0])]
    blk = np.concatenate([[0], np.cumsum(blocks)]).astype(np.int32)
    return SweepPlan(order, xp.asarray(bstart), xp.asarray(blk), int(blk[-1]), tuple(int(c) for c in counts),
                     int(block), int(split), slot, part, xp.zeros(max(int(counts[-1]), 1), dtype=xp.float64),
                     xp.zeros(max(int(counts[-1]), 1), dtype=xp.int32))


def build_snapshot(ga: GraphArrays, *, bounds, block: int, split: int) -> Snapshot:
    """Build the snapshot of ``ga`` (a GPU store's arrays)."""
    cp = ga.xp
    t0 = time.perf_counter()
    n, m = ga.n, ga.num_edges
    out_deg = ga.out_degree[:n].astype(cp.int64)
    # descending out-degree, ties by store id: unique keys, so the order is deterministic
    old_of_new = cp.argsort((int(out_deg.max()) - out_deg if n else out_deg) * max(n, 1)  # sync: max degree
                            + cp.arange(n, dtype=cp.int64))
    new_of_old = cp.empty(n, dtype=cp.int64)
    new_of_old[old_of_new] = cp.arange(n, dtype=cp.int64)
    pos, seg = expand_segments(cp, ga.in_offset[:n], ga.in_degree[:n])
    keys = (new_of_old[seg] << 32) | new_of_old[ga.in_indices[pos]]
    del pos, seg
    keys = cp.sort(keys)
    idx_dtype = cp.int32 if m < 2**31 else cp.int64
    in_indices = (keys & _MASK32).astype(cp.int32)
    in_degree = cp.bincount(keys >> 32, minlength=n).astype(idx_dtype)
    del keys
    in_offset = cp.zeros(n, dtype=idx_dtype)
    if n > 1:
        cp.cumsum(in_degree[:-1], out=in_offset[1:])
    out_degree = out_deg[old_of_new].astype(idx_dtype)
    plan = build_plan(cp, in_degree, bounds=bounds, block=block, split=split)
    cp.cuda.Device().synchronize()  # sync: the build time is reported
    return Snapshot(n, m, old_of_new, new_of_old, in_offset, in_degree, in_indices, out_degree, plan,
                    (time.perf_counter() - t0) * 1e3)
