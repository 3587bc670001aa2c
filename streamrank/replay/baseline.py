"""What a Python user would otherwise run after every batch: a NetworkX PageRank recompute.

``streamrank replay --baseline networkx`` times :func:`networkx.pagerank` on the graph as it
stands after a few batches spread over the replay, in the same process as the engines, so the
engine's time per batch can be set beside it.

The recompute is asked for the accuracy the engine is held to, an L1 error of at most
:data:`TARGET_L1`: NetworkX stops when an iteration changes the ranks by less than
``|V| * tol`` in L1, and the error left is at most ``alpha / (1 - alpha)`` times that change, so
``tol = TARGET_L1 * (1 - alpha) / (alpha * |V|)`` (:func:`networkx_tol`; 7e-12 on
sx-mathoverflow). Its default ``tol=1e-6`` would stop at an L1 error near 0.1 there. The L1 error
of each recompute against the oracle is recorded beside its time.

Building the NetworkX graph is timed apart and not counted (a user keeping a
``networkx.DiGraph`` current pays that per edge instead); only the ``pagerank`` call is.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ..errors import BackendUnavailableError, InvalidArgumentError, StreamrankError

BASELINES = ("networkx",)
#: L1 error the baseline recompute is asked for (the engine's DF-P bar).
TARGET_L1 = 1e-6


@dataclass
class BaselineRun:
    """One timed recompute: ``ms`` of the ``pagerank`` call, ``build_ms`` of building the
    NetworkX graph (not counted), the ``tol`` passed, ``ranks`` by internal id."""

    ms: float
    build_ms: float
    tol: float
    ranks: np.ndarray


@dataclass
class BaselineTimes:
    """Wall times of the baseline recompute on sampled batches' graphs, and its errors."""

    name: str
    batches: list = field(default_factory=list)  # batch numbers (1-based) sampled
    ms: list = field(default_factory=list)
    build_ms: list = field(default_factory=list)
    tol: list = field(default_factory=list)
    l1_error: list = field(default_factory=list)  # of each recompute against the oracle

    @property
    def median_ms(self) -> float:
        return float(np.median(self.ms)) if self.ms else float("nan")

    def add(self, batch: int, run: BaselineRun, l1_error: float) -> None:
        self.batches.append(int(batch))
        self.ms.append(run.ms)
        self.build_ms.append(run.build_ms)
        self.tol.append(run.tol)
        self.l1_error.append(float(l1_error))

    def to_dict(self) -> dict:
        return {"baseline": self.name, "batches": list(self.batches), "ms": list(self.ms),
                "median_ms": self.median_ms, "target_l1": TARGET_L1, "tol": list(self.tol),
                "l1_error": list(self.l1_error), "build_ms": list(self.build_ms),
                "build_ms_median": float(np.median(self.build_ms)) if self.build_ms else float("nan")}


def check_baseline(name):
    """Validate a baseline name (``None`` or one of :data:`BASELINES`)."""
    if name is not None and name not in BASELINES:
        raise InvalidArgumentError(f"baseline must be one of {BASELINES}, got {name!r}")
    return name


def sample_batches(num_batches: int, samples: int) -> set:
    """Batch numbers (1-based) spread evenly over the replay, at most ``samples`` of them."""
    if int(samples) < 1:
        raise InvalidArgumentError(f"baseline samples must be >= 1, got {samples}")
    if num_batches <= 0:
        return set()
    return {int(b) for b in np.unique(np.linspace(1, num_batches, min(int(samples), num_batches)).round())}


def networkx_tol(num_vertices: int, alpha: float, target_l1: float = TARGET_L1) -> float:
    """The ``tol`` of :func:`networkx.pagerank` that bounds its L1 error by ``target_l1``."""
    return target_l1 * (1.0 - alpha) / (alpha * max(int(num_vertices), 1))


def time_networkx(graph, *, alpha: float, dangling: str) -> BaselineRun:
    """One ``networkx.pagerank`` call on the current edges of ``graph``, timed.

    In ``dangling="self-loop"`` mode every vertex gets its implicit self-loop as an extra edge
    of a ``MultiDiGraph`` (the same ranks as the engine's self-loop mode).
    """
    try:
        import networkx as nx
    except ImportError as exc:
        raise BackendUnavailableError("--baseline networkx needs NetworkX (pip install networkx)") from exc
    from ..backend import to_host

    t0 = time.perf_counter()
    s, d = graph.edges()
    s, d = to_host(s).tolist(), to_host(d).tolist()
    n = int(graph.num_vertices)
    G = nx.MultiDiGraph() if dangling == "self-loop" else nx.DiGraph()
    G.add_nodes_from(range(n))
    G.add_edges_from(zip(s, d))
    if dangling == "self-loop":
        G.add_edges_from((v, v) for v in range(n))
    tol = networkx_tol(n, alpha)
    t1 = time.perf_counter()
    try:
        pr = nx.pagerank(G, alpha=alpha, tol=tol, max_iter=10_000)
    except nx.PowerIterationFailedConvergence as exc:
        raise StreamrankError(f"networkx.pagerank did not converge to tol={tol:g}: {exc}") from exc
    t2 = time.perf_counter()
    ranks = np.fromiter((pr[v] for v in range(n)), dtype=np.float64, count=n)
    return BaselineRun((t2 - t1) * 1e3, (t1 - t0) * 1e3, tol, ranks)
