"""The plan of an id-map addition: what a batch's new vertex ids will be, before they are added.

Both id maps (:class:`streamrank.ids.cpu.IdMap` on the host, :class:`streamrank.ids.gpu.GpuIdMap`
on the device) split ``add`` into ``plan_add`` (no change) and ``commit_add``, so that a graph
store can check the memory a batch needs before it changes anything. :func:`plan_new_ids` is the
rule both maps number new ids by.

Order of new ids: first appearance in the queried ids, except in an addition of more than
:data:`DEGREE_ORDER_MIN` new ids (a bulk load, a large batch), which numbers them by descending
count in the queried ids (their degree in the batch, since a store queries the interleaved
endpoints of its distinct insertions), ties by first appearance. Frequently gathered vertices then
sit together at small internal ids, which makes the sweeps' random gathers hit the cache more
often (docs/architecture.md). The GPU store's fused small-batch kernel adds at most
``2 * FAST_MAX_EDGES`` = 4,096 new ids and numbers them by first appearance: the same rule.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..backend import to_host


#: An addition of more than this many new ids numbers them by descending degree in the batch.
DEGREE_ORDER_MIN = 4096


@dataclass(frozen=True)
class IdPlan:
    """The ids an addition will create (:meth:`IdMap.plan_add`, :meth:`GpuIdMap.plan_add`).

    Attributes
    ----------
    internal : array of int64
        Internal id of every queried id, the new ones included (numbered from ``base``).
    fresh : array of int64
        The new external ids in the order of their internal ids ``base + i`` (first appearance,
        or degree for a large addition: :func:`plan_new_ids`).
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


def plan_new_ids(xp, ids, internal, base: int) -> IdPlan:
    """The plan of adding the unknown ids among ``ids`` to a map of ``base`` ids.

    Parameters
    ----------
    xp : module
        :mod:`numpy` or :mod:`cupy` (where ``ids`` and ``internal`` live).
    ids : array of int64
        The queried external ids.
    internal : array of int64
        Their internal ids in the map, -1 for unknown ones (filled in place with the new ids).
    base : int
        Size of the map.

    Returns
    -------
    IdPlan
    """
    missing = internal < 0
    new_ids = ids[missing]  # CuPy: a boolean mask syncs for the output size
    if new_ids.shape[0] == 0:
        return IdPlan(internal, new_ids, new_ids, new_ids, base)
    uniq, first, counts = xp.unique(new_ids, return_index=True, return_counts=True)
    k = int(uniq.shape[0])
    if k > DEGREE_ORDER_MIN:
        # descending count, then first appearance, as one int64 key: -count * len + first, with
        # first < len (both below 2**31 for any batch a store accepts; the product stays within
        # int64). No max() needed: on the GPU a CuPy reduction compiles per size class.
        order = xp.argsort(-counts.astype(xp.int64) * int(new_ids.shape[0]) + first)
    else:
        order = xp.argsort(first)  # first-appearance order
    rank = xp.empty(k, dtype=xp.int64)
    rank[order] = xp.arange(k, dtype=xp.int64)
    internal[missing] = base + rank[xp.searchsorted(uniq, new_ids)]
    return IdPlan(internal, xp.ascontiguousarray(uniq[order]), uniq, rank, base)


class PlannedIdMap:
    """What both id maps build on their ``plan_add`` / ``commit_add`` and ``external``."""

    def add(self, ids):
        """Internal ids of ``ids``, adding the unknown ones (numbered as :func:`plan_new_ids` says).

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
