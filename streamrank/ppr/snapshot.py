"""The GPU power iteration's read-only snapshot of the graph (one per graph version).

The store's in-CSR has gaps (room for insertions) and vertex ids in order of first appearance,
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

from ._graph import GraphArrays, expand_segments

_MASK32 = (1 << 32) - 1


@dataclass
class SweepPlan:
    """Vertices grouped by in-degree bucket for the pull sweep (``kernels/ppr_power.cu``)."""

    order: object  # int32 device array: vertex ids, bucket by bucket, ascending within a bucket
    bstart: object  # int32 device array (NUM_BUCKETS + 1): bucket starts in ``order``
    blk: object  # int32 device array (NUM_BUCKETS + 1): first block of each bucket
    blocks: int  # total blocks of one sweep
    counts: tuple  # vertices per bucket (host)


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


def build_plan(xp, in_degree, *, bounds, block: int) -> SweepPlan:
    """Group vertices by in-degree: bucket ``i`` holds degrees in ``(bounds[i-1], bounds[i]]``
    and gets ``2**i`` lanes per vertex; the last bucket (above ``bounds[-1]``) a block each."""
    n = int(in_degree.shape[0])
    nb = len(bounds) + 1
    b = xp.zeros(n, dtype=xp.int64)
    for bound in bounds:
        b += in_degree > bound
    order = xp.argsort(b * max(n, 1) + xp.arange(n, dtype=xp.int64)).astype(xp.int32)
    counts = xp.bincount(b, minlength=nb).get()  # sync: the host sizes the grid
    blocks = [int(-(-int(c) // (block >> i))) if i < nb - 1 else int(c) for i, c in enumerate(counts)]
    bstart = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
    blk = np.concatenate([[0], np.cumsum(blocks)]).astype(np.int32)
    return SweepPlan(order, xp.asarray(bstart), xp.asarray(blk), int(blk[-1]), tuple(int(c) for c in counts))


def build_snapshot(ga: GraphArrays, *, bounds, block: int) -> Snapshot:
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
    plan = build_plan(cp, in_degree, bounds=bounds, block=block)
    cp.cuda.Device().synchronize()  # sync: the build time is reported
    return Snapshot(n, m, old_of_new, new_of_old, in_offset, in_degree, in_indices, out_degree, plan,
                    (time.perf_counter() - t0) * 1e3)
