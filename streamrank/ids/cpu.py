"""Map external vertex ids (non-negative int64) to dense internal ids 0..n-1.

On the host the map keeps the external ids sorted next to their internal ids and looks a batch
up with ``searchsorted``; new ids get the next internal ids in order of first appearance (in a
large addition, by degree: :mod:`streamrank.ids.plan`).
Internal ids are never reused (vertices are not removed). A batch's new ids go into a small
sorted side table, merged into the main one when it outgrows ``1/MERGE_SHARE`` of it, and
``external`` grows by doubling: adding ids costs O(batch) amortized, not a copy of the whole map.
An addition is planned first (:meth:`IdMap.plan_add`, no change) and committed after
(:meth:`IdMap.commit_add`), so a graph store can check the memory a batch needs before it
changes anything. ``IdMap(cupy)`` gives the device map (:class:`streamrank.ids.gpu.GpuIdMap`,
a hash table) with the same interface and numbering.
"""

from __future__ import annotations

import numpy as np

from ..kernels.cpu.batch_plan import insert_sorted
from ..errors import InvalidArgumentError
from .plan import IdPlan, PlannedIdMap, plan_new_ids

#: The side table of recent ids is merged into the main sorted table when it holds more than
#: ``max(MERGE_MIN, len / MERGE_SHARE)`` ids.
MERGE_SHARE = 8
MERGE_MIN = 4096


def _search(keys, vals, ids):
    """``vals`` at the positions of ``ids`` in the sorted ``keys``; -1 where absent."""
    n = keys.shape[0]
    if n == 0:
        return np.full(ids.shape, -1, dtype=np.int64)
    pos = np.minimum(np.searchsorted(keys, ids), n - 1)
    return np.where(keys[pos] == ids, vals[pos], -1)


class IdMap(PlannedIdMap):
    """Dense id map on the host.

    Parameters
    ----------
    xp : module
        :mod:`numpy`; any other array module (CuPy) returns a
        :class:`streamrank.ids.gpu.GpuIdMap` instead.
    """

    def __new__(cls, xp=np):
        if xp is not np:
            from .gpu import GpuIdMap

            return GpuIdMap(xp)
        return super().__new__(cls)

    def __init__(self, xp=np):
        self.xp = xp
        self._keys = np.zeros(0, dtype=np.int64)       # main table: sorted external ids
        self._vals = np.zeros(0, dtype=np.int64)       # ... and their internal ids
        self._new_keys = np.zeros(0, dtype=np.int64)   # side table of recent ids, sorted
        self._new_vals = np.zeros(0, dtype=np.int64)
        self._external = np.zeros(0, dtype=np.int64)   # internal id -> external id, with room
        self._n = 0

    def __len__(self) -> int:
        return self._n

    @property
    def external(self):
        """External id of every internal id (a view; length ``len(self)``)."""
        return self._external[: self._n]

    def lookup(self, ids):
        """Internal ids of ``ids``; -1 where an id is unknown."""
        ids = np.asarray(ids, dtype=np.int64)
        out = _search(self._keys, self._vals, ids)
        if self._new_keys.shape[0]:
            miss = out < 0
            if miss.any():
                out[miss] = _search(self._new_keys, self._new_vals, ids[miss])
        return out

    def tables(self) -> tuple:
        """``(keys, vals, new_keys, new_vals)``: the main sorted table of external ids with their
        internal ids and the side table of recent ids (read-only views for compiled lookups:
        :mod:`streamrank.kernels.cpu.batch_plan`)."""
        return self._keys, self._vals, self._new_keys, self._new_vals

    def lookup_with(self, ids, attr):
        """``(internal, attr[internal])`` of the 1-D ``ids`` as one ``(2, len(ids))`` int64 array of
        this map's backend: -1 and 0 where an id is unknown. ``attr`` is a per-vertex int64
        array (e.g. the out-degrees)."""
        xp = self.xp
        ids = xp.ascontiguousarray(xp.asarray(ids, dtype=xp.int64).ravel())
        m, n = int(ids.shape[0]), self._n
        out = xp.zeros((2, m), dtype=xp.int64)
        if m == 0 or n == 0:
            out[0] = -1
            return out
        out[0] = self.lookup(ids)
        found = out[0] >= 0
        out[1, found] = np.asarray(attr)[out[0, found]]
        return out

    def plan_add(self, ids) -> "IdPlan":
        """What :meth:`add` would do, without changing the map: the internal id of every element
        of ``ids`` (unknown ones numbered from ``len(self)`` by :func:`streamrank.ids.plan.plan_new_ids`:
        first appearance, or degree in a large addition) and the new ids. :meth:`commit_add`
        then adds them."""
        ids = self.xp.asarray(ids, dtype=self.xp.int64)
        return plan_new_ids(self.xp, ids, self.lookup(ids), len(self))

    def growth_bytes(self, count: int) -> int:
        """Most bytes :meth:`commit_add` of ``count`` new ids allocates: ``external`` grown by
        doubling, the side table with the new ids, and its merge into the main table."""
        k = int(count)
        if k <= 0:
            return 0
        end = self._n + k
        grow = 8 * max(end, 2 * int(self._external.shape[0]), 1024) if end > self._external.shape[0] else 0
        side = int(self._new_keys.shape[0]) + k
        return grow + 16 * side + 16 * (int(self._keys.shape[0]) + side)

    @property
    def nbytes(self) -> int:
        """Bytes of the map's arrays."""
        return int(self._external.nbytes + self._keys.nbytes + self._vals.nbytes + self._new_keys.nbytes
                   + self._new_vals.nbytes)

    def commit_add(self, plan: "IdPlan") -> int:
        """Add the new ids of ``plan`` (made by :meth:`plan_add` on this map, unchanged since);
        returns how many."""
        if plan.base != len(self):
            raise InvalidArgumentError("the id plan is stale: the map changed since plan_add")
        k = int(plan.fresh.shape[0])
        if k == 0:
            return 0
        start, end = self._n, self._n + k
        if end > self._external.shape[0]:
            grown = np.empty(max(end, 2 * self._external.shape[0], 1024), dtype=np.int64)
            grown[:start] = self._external[:start]
            self._external = grown
        self._external[start:end] = plan.fresh
        self._n = end
        self._new_keys, self._new_vals = insert_sorted(self._new_keys, self._new_vals, plan.uniq, start + plan.rank)
        if self._new_keys.shape[0] > max(MERGE_MIN, self._keys.shape[0] // MERGE_SHARE):
            at = np.searchsorted(self._keys, self._new_keys)
            self._keys = np.insert(self._keys, at, self._new_keys)
            self._vals = np.insert(self._vals, at, self._new_vals)
            self._new_keys = self._new_keys[:0]
            self._new_vals = self._new_vals[:0]
        return k

    @classmethod
    def from_external(cls, external, xp=np) -> "IdMap":
        """Rebuild from ``external`` (internal id -> external id); a device map for CuPy."""
        if xp is not np:
            from .gpu import GpuIdMap

            return GpuIdMap.from_external(external, xp)
        m = cls(xp)
        ext = np.array(external, dtype=np.int64)  # a copy: the map appends to it
        m._external, m._n = ext, int(ext.shape[0])
        perm = np.argsort(ext, kind="stable")
        m._keys = ext[perm]
        m._vals = perm.astype(np.int64)
        return m

