"""Result types of rank computations."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class RankResult:
    """The outcome of one static or dynamic rank computation.

    Attributes
    ----------
    x : array
        The local-form solution ``x = (I - alpha P^T)^-1 1`` (or its self-loop variant), on the
        backend that computed it. The engine iterates on ``x``.
    total : float
        ``sum(x)``.
    iterations : int
        Iterations run.
    converged : bool
        Whether the L-infinity change fell below ``tol`` within ``max_iter``.
    affected : list of int
        Vertices processed in each iteration (all vertices for Static/ND).
    algorithm : str
    device : str
    initially_affected : int
        Vertices marked before the first iteration.
    """

    x: Any
    total: float
    iterations: int
    converged: bool
    affected: list = field(default_factory=list)
    algorithm: str = ""
    device: str = "cpu"
    initially_affected: int = 0

    @property
    def ranks(self):
        """Standard PageRank ``p = x / sum(x)`` (sums to 1), on the computing backend."""
        return self.x / self.total

    @property
    def affected_total(self) -> int:
        return int(sum(self.affected))
