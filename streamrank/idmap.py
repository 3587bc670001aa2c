"""Map external vertex ids (non-negative int64) to dense internal ids 0..n-1.

On the host the map keeps the external ids sorted next to their internal ids and looks a batch
up with one ``searchsorted``; new ids get the next internal ids in order of first appearance.
Internal ids are never reused (vertices are not removed). ``IdMap(cupy)`` gives the device map
(:class:`streamrank.idmap_gpu.GpuIdMap`, a hash table) with the same interface and numbering.
"""

from __future__ import annotations

import numpy as np

from .backend import to_host


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

    def add(self, ids):
        """Internal ids of ``ids``, adding the unknown ones.

        Returns
        -------
        internal : array of int64
            The internal id of every element of ``ids``.
        num_new : int
            How many vertices were added.
        """
        xp = self.xp
        ids = xp.asarray(ids, dtype=xp.int64)
        internal = self.lookup(ids)
        missing = internal < 0
        new_ids = ids[missing]
        if new_ids.shape[0] == 0:
            return internal, 0
        uniq, first = xp.unique(new_ids, return_index=True)
        order = xp.argsort(first)  # first-appearance order
        fresh = uniq[order]
        start = len(self)
        self.external = xp.concatenate([self.external, fresh])
        # merge the sorted new keys into the sorted map: O(|V|) copies, no re-sort
        at = np.searchsorted(self._sorted_keys, uniq)
        self._sorted_keys = np.insert(self._sorted_keys, at, uniq)
        self._sorted_vals = np.insert(self._sorted_vals, at, start + np.argsort(order))
        internal[missing] = self.lookup(new_ids)
        return internal, int(fresh.shape[0])

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

