"""Map external vertex ids (non-negative int64) to dense internal ids 0..n-1.

On the host the map keeps the external ids sorted next to their internal ids and looks a batch
up with one ``searchsorted``; new ids get the next internal ids in order of first appearance. An addition is planned first
(:meth:`IdMap.plan_add`, no change) and committed after (:meth:`IdMap.commit_add`), so a graph
store can check the memory a batch needs before it changes anything.
Internal ids are never reused (vertices are not removed). ``IdMap(cupy)`` gives the device map
(:class:`streamrank.idmap_gpu.GpuIdMap`, a hash table) with the same interface and numbering.
"""

from __future__ import annotations

import numpy as np

from .backend import to_host
from .errors import InvalidArgumentError
from .id_plan import IdPlan


class IdMap:
    """Dense id map on the host.

    Parameters
    ----------
    xp : module
        :mod:`numpy`; any other array module (CuPy) returns a
        :class:`streamrank.idmap_gpu.GpuIdMap` instead.
    """

    def __new__(cls, xp=np):
        if xp is not np:
            from .idmap_gpu import GpuIdMap

            return GpuIdMap(xp)
        return super().__new__(cls)

    def __init__(self, xp=np):
        self.xp = xp
        self._sorted_keys = xp.zeros(0, dtype=xp.int64)
        self._sorted_vals = xp.zeros(0, dtype=xp.int64)
        self.external = xp.zeros(0, dtype=xp.int64)  # internal id -> external id

    def __len__(self) -> int:
        return int(self.external.shape[0])

    def lookup(self, ids):
        """Internal ids of ``ids``; -1 where an id is unknown."""
        xp = self.xp
        ids = xp.asarray(ids, dtype=xp.int64)
        n = self._sorted_keys.shape[0]
        if n == 0:
            return xp.full(ids.shape, -1, dtype=xp.int64)
        pos = xp.searchsorted(self._sorted_keys, ids)
        pos_c = xp.minimum(pos, n - 1)
        found = self._sorted_keys[pos_c] == ids
        return xp.where(found, self._sorted_vals[pos_c], -1)

    def lookup_with(self, ids, attr):
        """``(internal, attr[internal])`` of the 1-D ``ids`` as one ``(2, len(ids))`` int64 array of
        this map's backend: -1 and 0 where an id is unknown. ``attr`` is a per-vertex int64
        array (e.g. the out-degrees)."""
        xp = self.xp
        ids = xp.ascontiguousarray(xp.asarray(ids, dtype=xp.int64).ravel())
        m, n = int(ids.shape[0]), int(self._sorted_keys.shape[0])
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
        of ``ids`` (unknown ones numbered from ``len(self)`` in order of first appearance) and
        the new ids. :meth:`commit_add` then adds them."""
        xp = self.xp
        ids = xp.asarray(ids, dtype=xp.int64)
        internal = self.lookup(ids)
        missing = internal < 0
        new_ids = ids[missing]
        if new_ids.shape[0] == 0:
            return IdPlan(internal, new_ids, new_ids, new_ids, len(self))
        uniq, first = xp.unique(new_ids, return_index=True)
        order = xp.argsort(first)  # first-appearance order
        rank = xp.empty(order.shape[0], dtype=xp.int64)
        rank[order] = xp.arange(order.shape[0], dtype=xp.int64)
        internal[missing] = len(self) + rank[xp.searchsorted(uniq, new_ids)]
        return IdPlan(internal, uniq[order], uniq, rank, len(self))

    def growth_bytes(self, count: int) -> int:
        """Bytes :meth:`commit_add` of ``count`` new ids allocates (the map's three arrays are
        copied one larger: a host copy of O(|V|))."""
        return 24 * (len(self) + int(count)) if int(count) > 0 else 0

    @property
    def nbytes(self) -> int:
        """Bytes of the map's arrays."""
        return int(self.external.nbytes + self._sorted_keys.nbytes + self._sorted_vals.nbytes)

    def commit_add(self, plan: "IdPlan") -> int:
        """Add the new ids of ``plan`` (made by :meth:`plan_add` on this map, unchanged since);
        returns how many."""
        if plan.base != len(self):
            raise InvalidArgumentError("the id plan is stale: the map changed since plan_add")
        k = int(plan.fresh.shape[0])
        if k == 0:
            return 0
        start = len(self)
        self.external = self.xp.concatenate([self.external, plan.fresh])
        # merge the sorted new keys into the sorted map: O(|V|) copies, no re-sort
        at = np.searchsorted(self._sorted_keys, plan.uniq)
        self._sorted_keys = np.insert(self._sorted_keys, at, plan.uniq)
        self._sorted_vals = np.insert(self._sorted_vals, at, start + plan.rank)
        return k

    def add(self, ids):
        """Internal ids of ``ids``, adding the unknown ones.

        Returns
        -------
        internal : array of int64
            The internal id of every element of ``ids``.
        num_new : int
            How many vertices were added.
        """
        plan = self.plan_add(ids)
        return plan.internal, self.commit_add(plan)

    def state(self) -> dict:
        """Host arrays for a checkpoint."""
        return {"external": to_host(self.external)}

    @classmethod
    def from_external(cls, external, xp=np) -> "IdMap":
        """Rebuild from ``external`` (internal id -> external id); a device map for CuPy."""
        if xp is not np:
            from .idmap_gpu import GpuIdMap

            return GpuIdMap.from_external(external, xp)
        m = cls(xp)
        ext = xp.asarray(external, dtype=xp.int64)
        m.external = ext
        perm = xp.argsort(ext)
        m._sorted_keys = ext[perm]
        m._sorted_vals = perm.astype(xp.int64)
        return m

