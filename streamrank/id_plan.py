"""The plan of an id-map addition: what a batch's new vertex ids will be, before they are added.

Both id maps (:class:`streamrank.idmap.IdMap` on the host, :class:`streamrank.idmap_gpu.GpuIdMap`
on the device) split ``add`` into ``plan_add`` (no change) and ``commit_add``, so that a graph
store can check the memory a batch needs before it changes anything.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class IdPlan:
    """The ids an addition will create (:meth:`IdMap.plan_add`, :meth:`GpuIdMap.plan_add`).

    Attributes
    ----------
    internal : array of int64
        Internal id of every queried id, the new ones included (numbered from ``base``).
    fresh : array of int64
        The new external ids in order of first appearance (their internal ids: ``base + i``).
    uniq, rank : arrays of int64
        The new ids sorted, and each one's position in ``fresh``.
    base : int
        Size of the map when planned (a plan applies only to an unchanged map).
    """

    internal: object
    fresh: object
    uniq: object
    rank: object
    base: int

    @property
    def count(self) -> int:
        """How many ids the plan adds."""
        return int(self.fresh.shape[0])
