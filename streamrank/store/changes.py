"""What applying a batch really changed: the input of the rank update."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: Reasons an edge of a batch is counted and dropped instead of applied.
DROP_REASONS = ("duplicate", "present_insertion", "absent_deletion")


@dataclass
class AppliedChanges:
    """Edges that changed the graph, in internal ids, on the graph's backend.

    Attributes
    ----------
    ins_src, ins_dst : array of int64
        Inserted edges (each was absent before the batch).
    del_src, del_dst : array of int64
        Deleted edges (each was present before the batch).
    num_vertices_before, num_vertices_after : int
        Vertex count before and after (new ids grow the graph).
    received : int
        Edges in the batch as it arrived.
    dropped : dict
        Counts per reason in :data:`DROP_REASONS`: in-batch duplicates collapsed (including
        insert/delete pairs resolved in arrival order), insertions of present edges, deletions of
        absent edges.
    reweighted_src, reweighted_dst : array of int64 or None
        Weighted graphs: edges present before and after the batch whose weight changed (their
        source's out-weight and contributions changed, as for an insertion there). None on an
        unweighted graph.
    """

    ins_src: Any
    ins_dst: Any
    del_src: Any
    del_dst: Any
    num_vertices_before: int
    num_vertices_after: int
    received: int
    dropped: dict = field(default_factory=lambda: {r: 0 for r in DROP_REASONS})
    reweighted_src: Any = None
    reweighted_dst: Any = None

    @property
    def num_insertions(self) -> int:
        return int(self.ins_src.shape[0])

    @property
    def num_reweights(self) -> int:
        """Edges whose weight changed (0 on an unweighted graph)."""
        return 0 if self.reweighted_src is None else int(self.reweighted_src.shape[0])

    @property
    def num_deletions(self) -> int:
        return int(self.del_src.shape[0])

    @property
    def num_new_vertices(self) -> int:
        return self.num_vertices_after - self.num_vertices_before

    @property
    def empty(self) -> bool:
        return (self.num_insertions == 0 and self.num_deletions == 0 and self.num_new_vertices == 0
                and self.num_reweights == 0)

    def summary(self) -> dict:
        """Plain counts, for logs, metrics and JSON (``reweighted`` on a weighted graph only)."""
        out = {
            "received": self.received,
            "inserted": self.num_insertions,
            "deleted": self.num_deletions,
            "new_vertices": self.num_new_vertices,
            **{f"dropped_{k}": int(v) for k, v in self.dropped.items()},
        }
        if self.reweighted_src is not None:
            out["reweighted"] = self.num_reweights
        return out


#: The edge arrays of :class:`AppliedChanges`, in the order of a :class:`SectionChanges` buffer.
_SECTIONS = ("ins_src", "ins_dst", "del_src", "del_dst")


class SectionChanges(AppliedChanges):
    """:class:`AppliedChanges` whose edge arrays are sections of one device buffer (the fused graph
    kernel's: ``ins_src``, ``ins_dst``, ``del_src``, ``del_dst`` at offsets 0, m, 2m, 3m), each
    sliced at its first use: the one-wait GPU batch ranks its changes on the device and usually
    reads none of them on the host, where a CuPy slice costs a few microseconds.

    Parameters
    ----------
    buf : device array
        At least 4 m entries.
    m : int
        The batch's size (the sections' stride).
    inserted, deleted : int
        Applied insertions and deletions (the sections' lengths).
    num_vertices_before, num_vertices_after, received, dropped
        As for :class:`AppliedChanges`.
    """

    def __init__(self, buf, m: int, inserted: int, deleted: int, num_vertices_before: int,
                 num_vertices_after: int, received: int, dropped: dict):
        # the dataclass fields other than the arrays; the arrays come from __getattr__
        self._sections = (buf, int(m), int(inserted), int(deleted))
        self.num_vertices_before = num_vertices_before
        self.num_vertices_after = num_vertices_after
        self.received = received
        self.dropped = dropped

    def __getattr__(self, name):  # only for attributes not set yet: the four arrays
        if name not in _SECTIONS:
            raise AttributeError(name)
        buf, m, ni, nd = self.__dict__["_sections"]
        k = _SECTIONS.index(name)
        start = k * m
        view = buf[start:start + (ni if k < 2 else nd)]
        setattr(self, name, view)
        return view

    @property
    def num_insertions(self) -> int:
        return self._sections[2]

    @property
    def num_deletions(self) -> int:
        return self._sections[3]
