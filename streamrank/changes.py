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
    """

    ins_src: Any
    ins_dst: Any
    del_src: Any
    del_dst: Any
    num_vertices_before: int
    num_vertices_after: int
    received: int
    dropped: dict = field(default_factory=lambda: {r: 0 for r in DROP_REASONS})

    @property
    def num_insertions(self) -> int:
        return int(self.ins_src.shape[0])

    @property
    def num_deletions(self) -> int:
        return int(self.del_src.shape[0])

    @property
    def num_new_vertices(self) -> int:
        return self.num_vertices_after - self.num_vertices_before

    @property
    def empty(self) -> bool:
        return self.num_insertions == 0 and self.num_deletions == 0 and self.num_new_vertices == 0

    def summary(self) -> dict:
        """Plain counts, for logs, metrics and JSON."""
        return {
            "received": self.received,
            "inserted": self.num_insertions,
            "deleted": self.num_deletions,
            "new_vertices": self.num_new_vertices,
            **{f"dropped_{k}": int(v) for k, v in self.dropped.items()},
        }
