"""Static and dynamic PageRank of weighted graphs on the CPU: the weighted kernels' dispatch.

The same algorithms and interface as :mod:`.pagerank` (``static``, ``nd``, ``dt``, ``df``,
``dfp``, ``warm``, ``auto``) for a :class:`~streamrank.store.cpu_weighted.WeightedCpuGraph`, on
the kernels of :mod:`streamrank.kernels.cpu.weighted`: a vertex's out-weight replaces its
out-degree. They iterate in Jacobi order whatever ``config.update_order`` says (the fixed point,
hence the ranks, is the same; Gauss-Seidel's mirror of the in-edges has no weights). A batch's
reweighted edges (:attr:`~streamrank.store.changes.AppliedChanges.reweighted_src`) count as
insertions at their source: its out-weight, so every contribution it sends, changed.

:class:`WeightedWorkspace` keeps ``x``, ``c = x / W`` and ``1 / W`` from batch to batch, so that
DT, DF and DF-P cost their frontier, not a pass over all vertices.
"""

from __future__ import annotations

import time

import numpy as np

from ...config import RankConfig, check_algorithm
from ...errors import InvalidArgumentError
from ...kernels.cpu.common import PARALLEL_EDGES
from ...kernels.cpu.marking import initial_frontier, reachable_frontier
from ...kernels.cpu import weighted as kw
from ...store.changes import AppliedChanges
from ..result import RankResult
from .threads import ThreadChooser, threads_set

#: The running ``sum(x)`` is replaced by an exact sum every this many batches.
RESYNC_BATCHES = 256


def _check(graph, x_prev, config):
    if not getattr(graph, "weighted", False):
        raise InvalidArgumentError("the weighted rank code takes a weighted graph store")
    if not isinstance(config, RankConfig):
        raise InvalidArgumentError(f"config must be a RankConfig, got {type(config).__name__}")
    if x_prev is not None:
        x_prev = np.asarray(x_prev, dtype=np.float64)
        if x_prev.ndim != 1 or x_prev.shape[0] > graph.num_vertices:
            raise InvalidArgumentError(f"x_prev has shape {x_prev.shape}, graph has {graph.num_vertices} vertices")
    return x_prev


def _extend(x_prev, n):
    x = np.ones(n, dtype=np.float64)
    if x_prev is not None:
        x[: x_prev.shape[0]] = x_prev
    return x


def _sweeps(graph, x, config, algorithm, *, standard=False):
    n = graph.num_vertices
    if n == 0:
        return RankResult(x, 0.0, 0, True, [], algorithm, "cpu")
    affected = np.zeros(config.max_iter, dtype=np.int64)
    kernel = kw.standard_sweeps if standard else kw.local_sweeps
    par = graph.num_edges + n >= PARALLEL_EDGES
    x, it, conv, total = kernel(graph.kernel_arrays(), graph.in_weights, graph.out_weight, x, config.alpha,
                                config.tol, config.max_iter, affected, config.dangling == "self-loop", par)
    return RankResult(x, float(total), int(it), bool(conv), affected[:it].tolist(), algorithm, "cpu", n)


def static_pagerank(graph, *, config: RankConfig = RankConfig(), x0=None) -> RankResult:
    """Static PageRank of a weighted ``graph`` (all vertices, Jacobi sweeps of the local form from
    ``x0``, default all ones)."""
    x0 = _check(graph, x0, config)
    return _sweeps(graph, _extend(x0, graph.num_vertices), config, "static")


class WeightedWorkspace:
    """Per-vertex state of the weighted frontier loop (DT, DF, DF-P), reused across batches.

    It continues from its own previous result only (the vector handed in is the one it returned
    last, for the same graph, dangling mode and no change between); otherwise it loads afresh
    (one pass over all vertices).
    """

    def __init__(self):
        self.cap = 0
        self.n = 0
        self.total = 0.0
        self._graph = None
        self._version = -1
        self._selfloop = None
        self._x_view = None
        self._batches = 0
        self.threads = ThreadChooser()
        self._allocate(0)

    def _allocate(self, cap: int):
        self.x, self.c, self.inv, self.xnew = np.empty(cap), np.empty(cap), np.empty(cap), np.empty(cap)
        self.flags = np.zeros(cap, dtype=np.uint8)
        self.status = np.zeros(cap, dtype=np.uint8)
        self.F = np.empty(cap, dtype=np.int32)
        self.Fnext = np.empty(cap, dtype=np.int32)
        self.cap = cap

    def _grow(self, n: int):
        if n <= self.cap:
            return
        kept = (self.x, self.c, self.inv)
        self._allocate(max(n, 2 * self.cap, 1024))
        m = self.n
        for new, old in zip((self.x, self.c, self.inv), kept):
            new[:m] = old[:m]

    def begin(self, graph, changes: AppliedChanges, x_prev, selfloop: bool):
        """Make ``x``, ``c`` and ``inv`` current for ``graph`` (after ``changes``) from ``x_prev``."""
        n = graph.num_vertices
        n_before = changes.num_vertices_before
        continues = (x_prev is self._x_view and graph is self._graph and selfloop == self._selfloop
                     and self.n == n_before and changes.num_vertices_after == n
                     and graph.version == self._version + (not changes.empty))
        if not continues:
            self.n = 0
            self._grow(n)
            self.flags[:n] = 0
            self.x[:n] = _extend(x_prev, n)
            kw.inverse_weights(graph.out_weight, n, selfloop, self.inv)
            np.multiply(self.x[:n], self.inv[:n], out=self.c[:n])
            self.total = float(self.x[:n].sum())
            self._graph, self._selfloop, self._batches = graph, selfloop, 0
        else:
            self._grow(n)
            self.x[n_before:n] = 1.0
            self.total += float(n - n_before)
            touched = np.concatenate([np.asarray(a, dtype=np.int64) for a in (
                changes.ins_src, changes.del_src, _or_empty(changes.reweighted_src))] + [np.arange(n_before, n)])
            kw.refresh(touched, graph.out_weight, selfloop, self.x, self.c, self.inv)
        self.n = n

    def finish(self, graph, total: float):
        """Record the loop's outcome; returns the iterate (a view of the workspace's ``x``)."""
        self.total = total
        self._batches += 1
        if self._batches % RESYNC_BATCHES == 0:
            self.total = float(self.x[: self.n].sum())
        self._version = graph.version
        self._x_view = self.x[: self.n]
        return self._x_view


def _or_empty(a):
    return np.zeros(0, dtype=np.int64) if a is None else a


def _ids(*arrays):
    return np.ascontiguousarray(np.concatenate([np.asarray(a, dtype=np.int64) for a in arrays]))


def _frontier(graph, changes, x_prev, config, algorithm, workspace):
    ws = WeightedWorkspace() if workspace is None else workspace
    selfloop = config.dangling == "self-loop"
    ws.begin(graph, changes, x_prev, selfloop)
    g = graph.kernel_arrays()
    rew_src, rew_dst = _or_empty(changes.reweighted_src), _or_empty(changes.reweighted_dst)
    changed_src = _ids(changes.ins_src, rew_src)  # a reweight acts at its source like an insertion
    del_src, del_dst = _ids(changes.del_src), _ids(changes.del_dst)
    if algorithm == "dt":
        nf = reachable_frontier(g, changed_src, _ids(changes.ins_dst, rew_dst), del_src, del_dst, ws.flags, ws.F)
    else:
        nf = initial_frontier(g, changed_src, del_src, del_dst, selfloop, ws.flags, ws.F)
    affected = np.zeros(config.max_iter, dtype=np.int64)
    grow, prune = algorithm != "dt", algorithm == "dfp"
    args = (g, graph.in_weights, graph.num_edges, ws.inv, ws.x[: ws.n], ws.c, ws.flags, ws.F, ws.Fnext, ws.xnew,
            ws.status, nf, ws.total, config.alpha, selfloop, config.tol, config.frontier_tol, config.prune_tol,
            grow, prune, config.max_iter, affected, PARALLEL_EDGES)
    if graph.num_edges + graph.num_vertices < PARALLEL_EDGES:
        it, conv, total = kw.frontier_loop(*args)
    else:
        threads = ws.threads.choose()
        t0 = time.perf_counter()
        with threads_set(threads):
            it, conv, total = kw.frontier_loop(*args)
        ws.threads.observe(threads, (time.perf_counter() - t0) * 1e3, int(affected[:it].sum()))
    x = ws.finish(graph, total)
    return RankResult(x, ws.total, int(it), bool(conv), affected[:it].tolist(), algorithm, "cpu", int(nf))


def update_pagerank(algorithm: str, graph, changes: AppliedChanges, x_prev, *,
                    config: RankConfig = RankConfig(), workspace: WeightedWorkspace | None = None) -> RankResult:
    """Update the ranks of a weighted ``graph`` after ``changes`` (as
    :func:`streamrank.rank.cpu.pagerank.update_pagerank`; ``auto`` runs DF-P)."""
    check_algorithm(algorithm)
    if not isinstance(changes, AppliedChanges):
        raise InvalidArgumentError("changes must be the AppliedChanges of the batch")
    if workspace is not None and not isinstance(workspace, WeightedWorkspace):
        raise InvalidArgumentError(f"workspace must be a WeightedWorkspace, got {type(workspace).__name__}")
    x_prev = _check(graph, x_prev, config)
    if algorithm == "static":
        return static_pagerank(graph, config=config)
    if algorithm == "nd":
        return _sweeps(graph, _extend(x_prev, graph.num_vertices), config, "nd")
    if algorithm == "warm":
        return _sweeps(graph, _extend(x_prev, graph.num_vertices), config, "warm", standard=True)
    return _frontier(graph, changes, x_prev, config, "dfp" if algorithm == "auto" else algorithm, workspace)


#: The engine builds one workspace per engine (as for the unweighted code's ``FrontierWorkspace``).
FrontierWorkspace = WeightedWorkspace

__all__ = ["FrontierWorkspace", "WeightedWorkspace", "static_pagerank", "update_pagerank"]
