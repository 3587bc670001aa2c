"""What :meth:`streamrank.Engine.apply` returns for one applied batch."""

from __future__ import annotations

from dataclasses import dataclass

from .rank.result import RankResult
from .store.changes import AppliedChanges


@dataclass
class StepResult:
    """One applied batch.

    Attributes
    ----------
    seq : int
        Batch sequence number (1 for the first batch after the base graph).
    changes : AppliedChanges
    rank : RankResult
        On the CPU with DT, DF or DF-P, ``rank.x`` is the engine's live iterate (advanced in
        place by the next batch); copy it to keep it.
    graph_ms, rank_ms : float
        Wall time of the graph update and of the rank update (device work included). A small
        GPU batch runs both with one host wait (:mod:`streamrank.rank.gpu.step`): then ``graph_ms``
        is the time until the graph update had finished on the device (CUDA events) plus its
        bookkeeping (the store up to date on the host), and ``rank_ms`` the rest of the batch's
        wall time, which includes the store's upkeep for the next batch (room reserved ahead,
        compaction), done while the rank loop runs.
    """

    seq: int
    changes: AppliedChanges
    rank: RankResult
    graph_ms: float
    rank_ms: float

    @property
    def total_ms(self) -> float:
        return self.graph_ms + self.rank_ms
