"""The engine: a graph store and its ranks, advanced one batch at a time.

Used by the replay tool, the daemon, personalized PageRank queries and the benchmarks. It picks
the backend (:func:`streamrank.backend.resolve_backend`) and with it the graph store and the rank
code; the rest of the package only sees this class.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from .backend import Backend, resolve_backend
from .batch import EdgeBatch
from .changes import AppliedChanges
from .auto_policy import AutoPolicy
from .config import RankConfig, check_algorithm
from .errors import InvalidArgumentError, StreamrankError
from .result import RankResult


@dataclass
class StepResult:
    """One applied batch.

    Attributes
    ----------
    seq : int
        Batch sequence number (1 for the first batch after the base graph).
    changes : AppliedChanges
    rank : RankResult
    graph_ms, rank_ms : float
        Wall time of the graph update and of the rank update (device work included).
    """

    seq: int
    changes: AppliedChanges
    rank: RankResult
    graph_ms: float
    rank_ms: float

    @property
    def total_ms(self) -> float:
        return self.graph_ms + self.rank_ms


def _modules(backend: Backend):
    if backend.is_gpu:
        from . import graph_gpu, pagerank_gpu

        return graph_gpu.GpuGraph, pagerank_gpu
    from . import graph, pagerank_cpu

    return graph.CpuGraph, pagerank_cpu


class Engine:
    """Dynamic PageRank over a changing graph.

    Parameters
    ----------
    device : {"auto", "cpu", "gpu"} or Backend
    algorithm : {"static", "nd", "dt", "df", "dfp", "warm", "auto"}
        Rank update used by :meth:`apply`. Default ``"dfp"``. ``"auto"`` chooses per batch
        between DF-P and warm sweeps (:mod:`streamrank.auto_policy`); ``step.rank.algorithm``
        records what ran.
    config : RankConfig
    """

    def __init__(self, device="auto", algorithm: str = "dfp", *, config: RankConfig = RankConfig()):
        if not isinstance(config, RankConfig):
            raise InvalidArgumentError("config must be a RankConfig")
        self.backend = resolve_backend(device)
        self.algorithm = check_algorithm(algorithm)
        self.config = config
        graph_cls, self._rank = _modules(self.backend)
        self.graph = graph_cls()
        self.x = self.backend.xp.zeros(0, dtype=np.float64)
        self.seq = 0
        self.last: RankResult | None = None
        self.policy = AutoPolicy() if self.algorithm == "auto" else None

    # ------------------------------------------------------------------ building
    def load_edges(self, src, dst, insert=None, *, vertices=None) -> RankResult:
        """Apply base edges (external ids) and recompute the ranks statically.

        ``insert`` (default: all insertions) gives per-edge ops in arrival order, as for
        :meth:`EdgeBatch.from_arrays`. ``vertices`` (external ids) are created first, in their
        order, edges or not (:meth:`add_vertices`). Does not advance :attr:`seq`.
        """
        if vertices is not None:
            self.add_vertices(vertices)
        self.graph.apply(EdgeBatch.from_arrays(src, dst, insert, xp=self.backend.xp))
        return self.recompute()

    def add_vertices(self, ids) -> int:
        """Create the vertices ``ids`` (external ids, in this order) that the graph lacks, without
        edges: isolated vertices, as the published DF-P protocol creates ``0 .. N-1`` up front.

        The ranks are not recomputed (call :meth:`recompute` or :meth:`load_edges` after).
        Returns how many vertices were created.
        """
        xp = self.backend.xp
        ids = xp.asarray(ids, dtype=xp.int64)
        if ids.ndim != 1:
            raise InvalidArgumentError(f"ids must be one-dimensional, got shape {ids.shape}")
        fresh = ids[self.graph.ids.lookup(ids) < 0]
        if fresh.shape[0] == 0:
            return 0
        # A vertex is created by its first insertion: insert a self-loop on every new id (no
        # unknown vertex can hold one already), then delete those loops again.
        before = self.graph.num_vertices
        self.graph.apply(EdgeBatch.from_arrays(fresh, fresh, xp=xp))
        self.graph.apply(EdgeBatch.from_arrays(fresh, fresh, xp.zeros(fresh.shape[0], dtype=bool), xp=xp))
        n = self.graph.num_vertices
        x = xp.ones(n, dtype=self.x.dtype)
        x[: self.x.shape[0]] = self.x
        self.x = x
        return n - before

    def recompute(self) -> RankResult:
        """Replace the ranks with a static computation of the current graph."""
        res = self._rank.static_pagerank(self.graph, config=self.config)
        self._take(res)
        return res

    # ------------------------------------------------------------------ one batch
    def apply(self, batch: EdgeBatch) -> StepResult:
        """Apply one batch to the graph and update the ranks.

        Parameters
        ----------
        batch : EdgeBatch

        Returns
        -------
        StepResult
        """
        if not isinstance(batch, EdgeBatch):
            raise InvalidArgumentError(f"apply() takes an EdgeBatch, got {type(batch).__name__}")
        t0 = time.perf_counter()
        changes = self.graph.apply(batch)  # the store moves the batch to its backend
        self.backend.synchronize()  # so that the stage timings include the device work
        t1 = time.perf_counter()
        algorithm = self.policy.choose(changes) if self.policy else self.algorithm
        res = self._rank.update_pagerank(algorithm, self.graph, changes, self.x, config=self.config)
        self.backend.synchronize()
        t2 = time.perf_counter()
        if self.policy:
            self.policy.observe(res, changes, self.graph.num_vertices)
        self._take(res)
        self.seq += 1
        return StepResult(self.seq, changes, res, (t1 - t0) * 1e3, (t2 - t1) * 1e3)

    def _take(self, res: RankResult):
        self.x = res.x
        self.last = res

    # ------------------------------------------------------------------ reading
    @property
    def num_vertices(self) -> int:
        return self.graph.num_vertices

    def ranks(self):
        """``(external_ids, p)`` as host NumPy arrays; ``p`` sums to 1."""
        ext = self.backend.to_host(self.graph.ids.external)  # device-to-host copy on the GPU
        x = self.backend.to_host(self.x)
        if x.shape[0] == 0:
            return ext, x.astype(np.float64)
        return ext, x.astype(np.float64) / float(x.sum())

    def top_k(self, k: int):
        """``(external_ids, p)`` of the ``k`` best vertices, descending."""
        from .metrics import top_k as _top

        if int(k) < 1:
            raise InvalidArgumentError(f"k must be >= 1, got {k}")
        ext, p = self.ranks()
        idx = _top(p, int(k))
        return ext[idx], p[idx]

    # ------------------------------------------------------------------ checkpoints
    def state(self) -> dict:
        """Host arrays and scalars that rebuild this engine exactly."""
        st = dict(self.graph.state())
        st["x"] = self.backend.to_host(self.x).astype(np.float64)
        st["seq"] = np.int64(self.seq)
        return st

    @classmethod
    def from_state(cls, state: dict, *, device="auto", algorithm: str = "dfp",
                   config: RankConfig = RankConfig()) -> "Engine":
        """Rebuild an engine saved by :meth:`state` (on any backend)."""
        eng = cls(device, algorithm, config=config)
        try:
            eng.graph = type(eng.graph).from_state(state)
            x = np.asarray(state["x"], dtype=np.float64)
            seq = int(state["seq"])
        except KeyError as exc:
            raise StreamrankError(f"engine state lacks {exc}") from exc
        if x.shape[0] != eng.graph.num_vertices:
            raise StreamrankError("engine state: ranks and graph disagree in size")
        eng.x = eng.backend.asarray(x)
        eng.seq = seq
        return eng
