"""One direction of the device graph store: a gapped CSR and the kernels that update it.

``off[u]`` (int64), ``deg[u]``, ``cap[u]`` (int32) index one int32 array ``idx``: ``u``'s
neighbours are ``idx[off[u] : off[u] + deg[u]]``, the slots up to ``off[u] + cap[u]`` are free,
and ``idx[end:]`` is room for relocated lists (docs/architecture.md). Rows of vertices
from ``num_vertices`` up to the vertex capacity are kept at zero (no list, no room), which the
fast update relies on. Used by :class:`streamrank.store.gpu.GpuGraph` (the slow path of
``apply``, builds, compaction, export).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..kernels.cuda.launch import BLOCK, grid_for_threads, grid_for_warps, launch
from ..kernels.cuda.loader import get_kernel

_UPDATE_CU = "graph_update.cu"
_UPDATE_NAMES = (
    "edge_find<int>",
    "delete_grouped<int>",
    "insert_grouped<int>",
    "relocate_all<int>",
    "gather_edges<int>",
    "plan_groups<int>",
    "plan_big_deletions<int>",
    "mark_targets<long long>",
    "big_delete_scan<int>",
    "big_delete_move<int>",
    "count_flags2<bool>",
    "ids_out_of_range<long long>",
)
#: Lists at least this long lose their deleted entries by the whole grid instead of a warp.
BIG_LIST = 2048
#: Most vertices of the device store (internal ids are int32; one id is kept for the kernels).
MAX_VERTICES = 2**31 - 2
#: Sorted edge keys ``u << 32 | t``: an invalid key (sorts last), and the mask of ``t``.
NO_KEY = np.int64(0x7FFFFFFFFFFFFFFF)
MASK32 = np.int64(0xFFFFFFFF)


def update_kernel(name: str):
    return get_kernel(_UPDATE_CU, name, _UPDATE_NAMES)


def count_flags(cp, a, b, out) -> None:
    """Add the numbers of true entries of the bool device arrays ``a`` and ``b`` (None: none) to
    ``out[0]`` and ``out[1]`` (an int64 device array; asynchronous, no sync).

    One kernel for every size (``count_flags2`` in graph_update.cu), where ``a.sum()`` would
    compile a CuPy reduction per size class on first use, for seconds, mid-stream.
    """
    b = a[:0] if b is None else b
    na, nb = int(a.shape[0]), int(b.shape[0])
    if na or nb:
        launch(update_kernel("count_flags2<bool>"), grid_for_threads(max(na, nb)), BLOCK,
               (cp.ascontiguousarray(a), np.int64(na), cp.ascontiguousarray(b), np.int64(nb), out))


def ids_fit_31_bits(cp, a, b) -> bool:
    """Whether every id of the int64 device arrays ``a`` and ``b`` (same length) lies in
    ``[0, 2**31)``: one launch and one 4-byte read (a sync)."""
    n = int(a.shape[0])
    if n == 0:
        return True
    flag = cp.zeros(1, dtype=cp.int32)
    launch(update_kernel("ids_out_of_range<long long>"), grid_for_threads(n), BLOCK,
           (cp.ascontiguousarray(a), cp.ascontiguousarray(b), np.int64(n), flag))
    return not int(flag.get()[0])  # sync: chooses the collapse's sort


def _slack(cp, deg):
    """Spare slots given to a vertex of degree ``deg`` at (re)build time."""
    return 2 + (deg >> 3)


def _exclusive_cumsum(cp, a):
    out = cp.empty(a.shape[0] + 1, dtype=cp.int64)
    out[0] = 0
    cp.cumsum(a, out=out[1:])
    return out


class DeletionPlan(NamedTuple):
    """What :meth:`Direction.delete` takes (from :meth:`Direction.plan_deletions`)."""

    gend: object   # per key, the end of its group (int64)
    csum: object   # inclusive prefix sum of the long lists' degrees by group leader (int64)
    holes: object  # per key, scratch: positions of deleted entries to fill (int32)
    surv: object   # per key, scratch: positions of kept entries to move (int32)
    hcnt: object   # per key, holes found (int32, zeroed)
    scnt: object   # per key, survivors found (int32, zeroed)
    tmask: object  # bit t set for every target t of the keys (uint32 words)


# ---------------------------------------------------------------------- one direction
class Direction:
    """One gapped CSR direction: ``off`` (int64), ``deg``/``cap`` (int32), ``idx`` (int32)."""

    def __init__(self, cp, vcap: int):
        self.cp = cp
        self.off = cp.zeros(vcap, dtype=cp.int64)
        self.deg = cp.zeros(vcap, dtype=cp.int32)
        self.cap = cp.zeros(vcap, dtype=cp.int32)
        self.idx = cp.zeros(1024, dtype=cp.int32)
        self.end = 0  # host copy of the first never-used slot of idx

    @property
    def nbytes(self) -> int:
        """Bytes of this direction's arrays (spare rows and slots included)."""
        return int(self.off.nbytes + self.deg.nbytes + self.cap.nbytes + self.idx.nbytes)

    def rows_bytes(self, vcap: int) -> int:
        """Bytes :meth:`grow_vertices` to ``vcap`` rows allocates."""
        return 16 * int(vcap) if vcap > self.off.shape[0] else 0

    def grow_vertices(self, vcap: int) -> None:
        """Rows for ``vcap`` vertices (new rows zero). The three arrays are allocated before any
        is replaced, so an out-of-memory error leaves the direction as it was."""
        cp = self.cp
        old = self.off.shape[0]
        if vcap <= old:
            return
        grown = {name: cp.zeros(vcap, dtype=getattr(self, name).dtype) for name in ("off", "deg", "cap")}
        for name, b in grown.items():
            b[:old] = getattr(self, name)
            setattr(self, name, b)

    def _reserved_length(self, extra: int) -> int:
        need = self.end + int(extra)
        if need <= self.idx.shape[0]:
            return self.idx.shape[0]
        return max(need + (1 << 16), int(self.idx.shape[0] * 1.5))

    def reserve_bytes(self, extra: int) -> int:
        """Bytes :meth:`reserve` of ``extra`` slots allocates (a longer ``idx``; 0 when it fits)."""
        length = self._reserved_length(extra)
        return 4 * length if length != self.idx.shape[0] else 0

    def reserve(self, extra: int) -> None:
        """Make room for ``extra`` more slots after ``end`` (copies idx when it must grow)."""
        length = self._reserved_length(extra)
        if length == self.idx.shape[0]:
            return
        cp = self.cp
        bigger = cp.zeros(length, dtype=cp.int32)
        bigger[: self.end] = self.idx[: self.end]
        self.idx = bigger

    @staticmethod
    def compact_bytes(n: int, num_edges: int) -> int:
        """Upper bound of the bytes :meth:`compact` of ``n`` vertices and ``num_edges`` edges
        allocates (a fresh ``idx`` at most ``E + E/8 + 2n`` long plus its tail, and three per-vertex
        temporaries)."""
        end = int(num_edges) + int(num_edges) // 8 + 2 * int(n)
        return 4 * (end + max(1 << 16, end // 4)) + 24 * (int(n) + 1)

    def compact(self, n: int) -> None:
        """Rewrite idx with every vertex at ``deg + slack`` capacity (a pass over all edges).
        The new array is filled before anything is replaced: an out-of-memory error on the way
        leaves the direction as it was."""
        cp = self.cp
        deg = self.deg[:n].astype(cp.int64)
        cap = deg + _slack(cp, deg)
        off = _exclusive_cumsum(cp, cap)
        end = int(off[n].get())  # sync: the host sizes the new idx
        new_idx = cp.zeros(end + max(1 << 16, end // 4), dtype=cp.int32)
        cap32 = cap.astype(cp.int32)
        if n:
            launch(update_kernel("relocate_all<int>"), grid_for_warps(n), BLOCK,
                   (np.int64(n), self.off, self.deg, off, self.idx, new_idx))
        self.idx = new_idx
        self.off[:n] = off[:n]
        self.cap[:n] = cap32
        self.end = end

    def gather(self, n: int, num_edges: int):
        """All ``(u, t)`` pairs of this direction as int64 arrays (unsorted)."""
        cp = self.cp
        start = _exclusive_cumsum(cp, self.deg[:n].astype(cp.int64))
        us = cp.empty(num_edges, dtype=cp.int64)
        ts = cp.empty(num_edges, dtype=cp.int64)
        if n and num_edges:
            launch(update_kernel("gather_edges<int>"), grid_for_warps(n), BLOCK,
                   (np.int64(n), self.off, self.deg, start, self.idx, us, ts))
        return us, ts

    def _groups(self, keys):
        """``(gend, need)`` of sorted keys (``plan_groups`` in graph_update.cu, one launch)."""
        cp = self.cp
        m = int(keys.shape[0])
        gend = cp.empty(m, dtype=cp.int64)
        need = cp.empty(m, dtype=cp.int64)
        if m:
            launch(update_kernel("plan_groups<int>"), grid_for_threads(m), BLOCK,
                   (keys, np.int64(m), self.deg, self.cap, gend, need))
        return gend, need

    def plan_insertions(self, keys):
        """Relocation plan for sorted keys ``u << 32 | t`` (invalid keys = NO_KEY, at the end).

        Returns ``(gend, new_off, new_cap, total)``: per key the end of its group, and for group
        leaders whose list overflows the new offset (else -1) and capacity; ``total`` is a device
        scalar holding the slots to reserve.
        """
        cp = self.cp
        gend, need = self._groups(keys)
        if keys.shape[0] == 0:
            return gend, need, need.astype(cp.int32), cp.zeros((), dtype=cp.int64)
        csum = cp.cumsum(need)
        new_off = cp.where(need > 0, self.end + csum - need, -1)
        return gend, new_off, need.astype(cp.int32), csum[-1]

    def plan_deletions(self, keys, m: int | None = None, *, n: int | None = None) -> DeletionPlan:
        """What :meth:`delete` of the first ``m`` sorted keys takes (all of them when None),
        allocated before the commit of a batch so that the commit allocates nothing: the group
        ends, the mask of the keys' targets (``n``: a bound on them, the vertex count; the
        direction's row count when None), and for the long lists (degree >= BIG_LIST, deleted
        from by the whole grid) their sizes' prefix sum and the scratch of the deletion.
        Asynchronous (no sync)."""
        cp = self.cp
        m = int(keys.shape[0]) if m is None else int(m)
        n = int(self.deg.shape[0]) if n is None else int(n)
        gend = self._groups(keys)[0]
        sizes = cp.empty(m, dtype=cp.int64)
        tmask = cp.zeros(max(1, (n + 31) // 32), dtype=cp.uint32)
        if m:
            launch(update_kernel("plan_big_deletions<int>"), grid_for_threads(m), BLOCK,
                   (keys, np.int64(m), self.deg, np.int32(BIG_LIST), sizes))
            launch(update_kernel("mark_targets<long long>"), grid_for_threads(m), BLOCK,
                   (keys, np.int64(m), tmask))
        counts = cp.zeros(2 * m, dtype=cp.int32)
        return DeletionPlan(gend, cp.cumsum(sizes), cp.empty(m, dtype=cp.int32),
                            cp.empty(m, dtype=cp.int32), counts[:m], counts[m:], tmask)

    def delete(self, keys, m: int, plan: DeletionPlan | None = None) -> None:
        """Remove the edges of the first ``m`` sorted keys ``u << 32 | t`` (all present, distinct)
        from their lists (three launches, no sync): a warp per short list, the long ones by the
        whole grid (``big_delete_scan`` / ``big_delete_move`` in graph_update.cu; list order is
        not kept); an entry whose target is in no key is kept without a search."""
        if m == 0:
            return
        if plan is None:
            plan = self.plan_deletions(keys, m)
        big, mm = np.int32(BIG_LIST), np.int64(m)
        launch(update_kernel("delete_grouped<int>"), grid_for_warps(m), BLOCK,
               (keys, plan.gend, mm, self.off, self.deg, self.idx, big, plan.tmask))
        # the long lists' total length is read on the device: the largest grid, every time
        launch(update_kernel("big_delete_scan<int>"), grid_for_threads(1 << 40), BLOCK,
               (keys, plan.gend, mm, plan.csum, self.off, self.deg, self.idx, plan.tmask, plan.holes,
                plan.surv, plan.hcnt, plan.scnt))
        launch(update_kernel("big_delete_move<int>"), grid_for_warps(m), BLOCK,
               (keys, plan.gend, mm, self.off, self.deg, self.idx, big, plan.holes, plan.surv, plan.hcnt))

    def insert(self, keys, m: int, plan) -> None:
        if m == 0:
            return
        gend, new_off, new_cap, _ = plan
        launch(update_kernel("insert_grouped<int>"), grid_for_warps(m), BLOCK,
               (keys, gend, np.int64(m), new_off, new_cap, self.off, self.deg, self.cap, self.idx))
