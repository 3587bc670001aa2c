"""Rank-update settings shared by every algorithm and backend (DESIGN.md, "Definitions")."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from .errors import ConfigError, InvalidArgumentError

#: Rank update algorithms (docs/architecture.md). ``warm``: the standard-form
#: power iteration warm-started from the previous ranks; ``auto``: per batch DF-P or warm sweeps
#: (:mod:`streamrank.rank.auto_policy`).
ALGORITHMS = ("static", "nd", "dt", "df", "dfp", "warm", "auto")
DANGLING_MODES = ("uniform", "self-loop")
DTYPES = ("float64", "float32")
#: Order of the vertex updates within an iteration of the local form (``update_order``).
UPDATE_ORDERS = ("gauss-seidel", "jacobi")
#: Storage of the gathered contributions in the GPU's standard-form sweeps (``sweep_contributions``).
CONTRIBUTION_DTYPES = DTYPES


@dataclass(frozen=True)
class RankConfig:
    """PageRank settings.

    Parameters
    ----------
    alpha : float
        Damping factor, in (0, 1). Default 0.85.
    tol : float
        Convergence tolerance: the L-infinity norm of the change of the normalized ranks
        between two iterations, ``max_v |x_new[v] - x_old[v]| / sum(x_new)``. Default 1e-10.
    frontier_tol : float
        DF/DF-P: a vertex whose relative change ``|new-old| / max(new, old)`` exceeds this marks
        its out-neighbours affected. Default 1e-6.
    prune_tol : float
        DF-P: a vertex whose relative change is at most this is unmarked. Default 1e-6.
    max_iter : int
        Iteration cap. Default 500.
    dangling : {"uniform", "self-loop"}
        ``"uniform"``: standard PageRank (dangling rank spread over all vertices, as NetworkX and
        cuGraph compute it). ``"self-loop"``: every vertex gets an implicit self-loop (the
        published DF-P setting), solved in closed form.
    dtype : {"float64", "float32"}
        Rank precision (the GPU backend honours float32; the CPU always uses float64).
    switch_degree : int
        GPU: in/out-degree at which thread-per-vertex kernels hand over to block-per-vertex
        kernels. Default 64.
    sweep_contributions : {"float64", "float32"}
        GPU, standard-form sweeps (Static's first phase, ``warm``, ``auto``'s warm part): the
        type the gathered contributions ``y[u] / d(u)`` are stored in. ``"float32"`` halves the
        bytes of the random gathers (the vector of a 9 M-vertex graph then fits an H100's L2);
        the iterate, its sums and the test stay in ``dtype``, and the last sweeps run in
        ``dtype`` so the criterion is the same (docs/architecture.md measures the error). The CPU
        always uses float64. Default ``"float64"``.
    update_order : {"gauss-seidel", "jacobi"}
        CPU, the local-form iterations of Static, ND, DT, DF and DF-P. ``"jacobi"``: every
        vertex reads its in-neighbours' values from the start of the iteration (what the GPU
        always does). ``"gauss-seidel"``: the updates run in fixed blocks of
        ``SPARSE_BLOCK`` (2,048) frontier entries (on a pass over all vertices, as many blocks
        of ``GS_BLOCK`` (16,384) vertex positions, cut at equal work: ``CpuGraph.sweep_blocks``), and
        within a block a vertex reads the values its block has already updated in this
        iteration; blocks read each other's values from the start of the iteration. The block
        size does not depend on the thread count, so neither do the results; on a frontier or
        graph of fewer vertices than a block it is plain Gauss-Seidel, which needs about half
        the iterations of Jacobi (docs/architecture.md). ``warm`` is Jacobi
        either way. Default ``"gauss-seidel"``.
    """

    alpha: float = 0.85
    tol: float = 1e-10
    frontier_tol: float = 1e-6
    prune_tol: float = 1e-6
    max_iter: int = 500
    dangling: str = "uniform"
    dtype: str = "float64"
    switch_degree: int = 64
    sweep_contributions: str = "float64"
    update_order: str = "gauss-seidel"

    def __post_init__(self):
        if not (0.0 < float(self.alpha) < 1.0):
            raise InvalidArgumentError(f"alpha must be in (0, 1), got {self.alpha}")
        for name in ("tol", "frontier_tol", "prune_tol"):
            v = getattr(self, name)
            if not (float(v) >= 0.0):
                raise InvalidArgumentError(f"{name} must be >= 0, got {v}")
        if int(self.max_iter) < 1:
            raise InvalidArgumentError(f"max_iter must be >= 1, got {self.max_iter}")
        if self.dangling not in DANGLING_MODES:
            raise InvalidArgumentError(f"dangling must be one of {DANGLING_MODES}, got {self.dangling!r}")
        if self.dtype not in DTYPES:
            raise InvalidArgumentError(f"dtype must be one of {DTYPES}, got {self.dtype!r}")
        if self.sweep_contributions not in CONTRIBUTION_DTYPES:
            raise InvalidArgumentError(f"sweep_contributions must be one of {CONTRIBUTION_DTYPES}, "
                                       f"got {self.sweep_contributions!r}")
        if self.update_order not in UPDATE_ORDERS:
            raise InvalidArgumentError(f"update_order must be one of {UPDATE_ORDERS}, got {self.update_order!r}")
        if int(self.switch_degree) < 1:
            raise InvalidArgumentError(f"switch_degree must be >= 1, got {self.switch_degree}")

    def to_dict(self) -> dict:
        return asdict(self)


def check_algorithm(name: str) -> str:
    """Validate an algorithm name (one of :data:`ALGORITHMS`)."""
    if name not in ALGORITHMS:
        raise InvalidArgumentError(f"algorithm must be one of {ALGORITHMS}, got {name!r}")
    return name


#: How a weighted graph combines repeated pairs (``Engine(multi_edges=...)``, docs/api.md).
MULTI_EDGES = ("set", "sum")

def check_weighting(weighted, multi_edges) -> tuple[bool, str]:
    """``(weighted, multi_edges)`` validated.

    Raises
    ------
    ConfigError
        For a non-boolean ``weighted``, ``multi_edges`` outside ``{"set", "sum"}``, or ``"sum"``
        without ``weighted=True``.
    """
    if not isinstance(weighted, (bool, np.bool_)):
        raise ConfigError(f"weighted must be True or False, got {weighted!r}")
    if multi_edges not in MULTI_EDGES:
        raise ConfigError(f"multi_edges must be one of {MULTI_EDGES}, got {multi_edges!r}")
    if multi_edges == "sum" and not weighted:
        raise ConfigError("multi_edges='sum' needs weighted=True (--multi-edges sum turns --weighted on)")
    return bool(weighted), str(multi_edges)
