"""What a Python user would otherwise run after every batch: a NetworkX PageRank recompute.

``streamrank replay --baseline networkx`` times :func:`networkx.pagerank` (its defaults:
``tol=1e-6``, ``max_iter=100``; ``alpha`` from the replay) on the graph as it stands after a few
batches spread over the replay, in the same process as the engines, so the engine's time per
batch can be set beside it. Building the NetworkX graph is not timed (a user keeping a
``networkx.DiGraph`` current pays that per edge instead); only the ``pagerank`` call is.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from .errors import BackendUnavailableError, InvalidArgumentError

BASELINES = ("networkx",)


@dataclass
class BaselineTimes:
    """Wall times of the baseline recompute on sampled batches' graphs."""

    name: str
    batches: list = field(default_factory=list)  # batch numbers (1-based) sampled
    ms: list = field(default_factory=list)

    @property
    def median_ms(self) -> float:
        return float(np.median(self.ms)) if self.ms else float("nan")

    def to_dict(self) -> dict:
        return {"baseline": self.name, "batches": list(self.batches), "ms": list(self.ms),
                "median_ms": self.median_ms}


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


def time_networkx(graph, *, alpha: float, dangling: str) -> float:
    """Milliseconds of one ``networkx.pagerank`` call on the current edges of ``graph``.

    In ``dangling="self-loop"`` mode every vertex gets its implicit self-loop as an extra edge
    of a ``MultiDiGraph`` (the same ranks as the engine's self-loop mode).
    """
    try:
        import networkx as nx
    except ImportError as exc:
        raise BackendUnavailableError("--baseline networkx needs NetworkX (pip install networkx)") from exc
    from .backend import to_host

    s, d = graph.edges()
    s, d = to_host(s).tolist(), to_host(d).tolist()
    n = int(graph.num_vertices)
    G = nx.MultiDiGraph() if dangling == "self-loop" else nx.DiGraph()
    G.add_nodes_from(range(n))
    G.add_edges_from(zip(s, d))
    if dangling == "self-loop":
        G.add_edges_from((v, v) for v in range(n))
    t0 = time.perf_counter()
    nx.pagerank(G, alpha=alpha)
    return (time.perf_counter() - t0) * 1e3
