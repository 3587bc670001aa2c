"""The id map on the device: a hash table from external ids to dense internal ids.

Same interface as :class:`streamrank.ids.cpu.IdMap` (``lookup``, ``lookup_with``, ``add``,
``external``, ``len``, ``state``, ``from_external``) and the same numbering (new ids in order of
first appearance, by degree in a large addition: :mod:`streamrank.ids.plan`), but new ids never
re-sort the map: the table (``kernels/cuda/idhash.cuh``) is open addressing with linear probing over
a power-of-two number of slots, keys = external ids (-1 = empty), values = internal ids (int32). The load factor stays at or below 1/2; the table is
rebuilt (one launch over the ids, no sync) only when an addition would pass that.
``external`` (internal -> external) is a device array with spare capacity, so adding ids writes
only the new ones. :class:`streamrank.store.gpu.GpuGraph` also adds ids from its fused update
kernel, through :meth:`GpuIdMap.room` and :meth:`GpuIdMap.note_added`.
"""

from __future__ import annotations

import numpy as np

from ..errors import InvalidArgumentError
from ..kernels.cuda.launch import _cupy, grid_for_threads, launch
from .plan import IdPlan, PlannedIdMap, plan_new_ids
from ..kernels.cuda.loader import get_kernel

_CU = "idhash.cu"
_NAMES = ("hash_insert_range", "hash_lookup", "hash_lookup_attr<int>", "hash_lookup_attr<long long>")
#: Fewest slots of a table.
MIN_SLOTS = 1024
#: Largest number of ids (internal ids are int32).
MAX_IDS = 2**31 - 1


def _kernel(name: str):
    return get_kernel(_CU, name, _NAMES)


def _slots_for(count: int) -> int:
    """The smallest power of two (>= MIN_SLOTS) holding ``count`` keys at load factor <= 1/2."""
    slots = MIN_SLOTS
    while slots < 2 * count:
        slots *= 2
    return slots


class GpuIdMap(PlannedIdMap):
    """External <-> internal vertex ids on the device (CuPy).

    Parameters
    ----------
    xp : module, optional
        :mod:`cupy` (the default when omitted).
    """

    def __init__(self, xp=None):
        self.xp = _cupy() if xp is None else xp
        cp = self.xp
        self._n = 0
        self._ext = cp.zeros(0, dtype=cp.int64)  # internal -> external; [0, _n) in use
        self.keys = cp.full(MIN_SLOTS, -1, dtype=cp.int64)
        self.vals = cp.zeros(MIN_SLOTS, dtype=cp.int32)

    # ------------------------------------------------------------------ sizes
    def __len__(self) -> int:
        return self._n

    @property
    def external(self):
        """Internal id -> external id (int64 device array view, length ``len(self)``)."""
        return self._ext[: self._n]

    @property
    def external_buffer(self):
        """The whole ``external`` array including its spare capacity (for the fused update)."""
        return self._ext

    @property
    def mask(self) -> np.uint64:
        """Slots of the table minus one, as the kernels take it."""
        return np.uint64(self.keys.shape[0] - 1)

    @property
    def room(self) -> int:
        """Ids that can still be added without a rebuild or a copy of ``external``."""
        return max(0, min(self.keys.shape[0] // 2, self._ext.shape[0]) - self._n)

    def _reserve_sizes(self, extra: int) -> tuple:
        """``(external length, table slots)`` after :meth:`reserve` of ``extra``."""
        need = self._n + int(extra)
        if need > MAX_IDS:
            raise InvalidArgumentError(f"the device id map holds at most {MAX_IDS} ids")
        ext = self._ext.shape[0]
        if need > ext:
            ext = max(need, ext * 3 // 2)
        slots = self.keys.shape[0]
        if 2 * need > slots:
            slots = max(_slots_for(need), 2 * slots)
        return ext, slots

    def growth_bytes(self, extra: int) -> int:
        """Bytes :meth:`reserve` of ``extra`` allocates (a longer ``external``, a larger table)."""
        ext, slots = self._reserve_sizes(extra)
        nbytes = 8 * ext if ext != self._ext.shape[0] else 0
        return nbytes + (12 * slots if slots != self.keys.shape[0] else 0)

    @property
    def nbytes(self) -> int:
        """Bytes of the map's device arrays (spare capacity included)."""
        return int(self._ext.nbytes + self.keys.nbytes + self.vals.nbytes)

    def reserve(self, extra: int) -> None:
        """Make :attr:`room` at least ``extra`` (grows ``external`` and rebuilds the table
        geometrically when needed; asynchronous, no host sync). New arrays are allocated before
        any is replaced, so an out-of-memory error leaves the map as it was."""
        cp = self.xp
        ext_len, slots = self._reserve_sizes(extra)
        bigger = keys = vals = None
        if ext_len != self._ext.shape[0]:
            bigger = cp.zeros(ext_len, dtype=cp.int64)
        if slots != self.keys.shape[0]:
            keys = cp.full(slots, -1, dtype=cp.int64)
            vals = cp.zeros(slots, dtype=cp.int32)
        if bigger is not None:
            bigger[: self._n] = self._ext[: self._n]
            self._ext = bigger
        if keys is not None:
            self.keys, self.vals = keys, vals
            self._insert(self._ext[: self._n], 0)

    def note_added(self, count: int) -> None:
        """Record ``count`` ids appended to ``external`` and the table by a device kernel."""
        self._n += int(count)

    def _rebuild(self, slots: int) -> None:
        cp = self.xp
        keys = cp.full(slots, -1, dtype=cp.int64)
        vals = cp.zeros(slots, dtype=cp.int32)
        self.keys, self.vals = keys, vals
        self._insert(self._ext[: self._n], 0)

    def _insert(self, ids, first_val: int) -> None:
        """Table entries ids[i] -> first_val + i (ids distinct and absent; room reserved)."""
        m = int(ids.shape[0])
        if m:
            launch(_kernel("hash_insert_range"), grid_for_threads(m), 256,
                   (self.keys, self.vals, self.mask, ids, np.int64(m), np.int64(first_val)))

    # ------------------------------------------------------------------ lookups
    def lookup(self, ids):
        """Internal ids of ``ids`` (int64, same shape); -1 where an id is unknown."""
        cp = self.xp
        ids = cp.ascontiguousarray(cp.asarray(ids, dtype=cp.int64))
        out = cp.empty(ids.shape, dtype=cp.int64)
        m = int(ids.size)
        if m:
            launch(_kernel("hash_lookup"), -(-m // 256), 256,
                   (self.keys, self.vals, self.mask, ids, np.int64(m), out))
        return out

    def lookup_with(self, ids, attr):
        """``(internal, attr[internal])`` of the 1-D ``ids`` as one ``(2, len(ids))`` int64 device
        array: -1 and 0 where an id is unknown; one kernel, one buffer. ``attr`` is a per-vertex
        int32 or int64 array (e.g. the out-degrees)."""
        cp = self.xp
        ids = cp.ascontiguousarray(cp.asarray(ids, dtype=cp.int64).ravel())
        m = int(ids.shape[0])
        out = cp.zeros((2, m), dtype=cp.int64)
        if m == 0:
            return out
        attr = cp.asarray(attr)
        if attr.dtype not in (cp.int32, cp.int64):
            attr = attr.astype(cp.int64)
        attr = cp.ascontiguousarray(attr)
        name = "hash_lookup_attr<int>" if attr.dtype == cp.int32 else "hash_lookup_attr<long long>"
        launch(_kernel(name), -(-m // 256), 256, (self.keys, self.vals, self.mask, ids, np.int64(m), attr, out))
        return out

    # ------------------------------------------------------------------ additions
    def plan_add(self, ids) -> IdPlan:
        """What :meth:`add` would do, without changing the map (:class:`streamrank.ids.plan.IdPlan`):
        the internal id of every element of ``ids``, unknown ones numbered from ``len(self)`` by
        :func:`streamrank.ids.plan.plan_new_ids` (first appearance, or degree in a large addition).
        Syncs once (to size the unknown ids)."""
        cp = self.xp
        ids = cp.ascontiguousarray(cp.asarray(ids, dtype=cp.int64))
        return plan_new_ids(cp, ids, self.lookup(ids), self._n)

    def commit_add(self, plan: IdPlan) -> int:
        """Add the new ids of ``plan`` (from :meth:`plan_add` on this map, unchanged since);
        returns how many."""
        if plan.base != self._n:
            raise InvalidArgumentError("the id plan is stale: the map changed since plan_add")
        k = plan.count
        if k == 0:
            return 0
        self.reserve(k)
        start = self._n
        self._ext[start: start + k] = plan.fresh
        self._insert(plan.fresh, start)
        self._n += k
        return k

    @classmethod
    def from_external(cls, external, xp=None, *, room: int = 0) -> "GpuIdMap":
        """Rebuild from ``external`` (internal id -> external id, distinct), with ``room`` more
        ids reserved."""
        m = cls(xp)
        cp = m.xp
        ext = cp.asarray(external, dtype=cp.int64).ravel()
        n = int(ext.shape[0])
        if n + int(room) > MAX_IDS:
            raise InvalidArgumentError(f"the device id map holds at most {MAX_IDS} ids")
        m._ext = cp.zeros(n + int(room), dtype=cp.int64)
        m._ext[:n] = ext
        m._n = n
        m._rebuild(_slots_for(n + int(room)))
        return m
