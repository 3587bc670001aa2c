"""Static and dynamic PageRank on the CPU: argument checks and dispatch to compiled kernels.

Every algorithm runs its whole iteration loop in one compiled call (:mod:`.cpu_kernels`,
Numba, multi-core over fixed chunks and blocks: results are the same for any thread count).
All but ``warm`` iterate the local form of docs/architecture.md, in the order
``config.update_order`` names (Gauss-Seidel in fixed blocks by default, or Jacobi, which reads
the previous iterate only), and stop when ``max_v |dx[v]| / sum(x) < tol``:

* ``static``: from ``x = 1`` over all vertices;
* ``nd`` (naive-dynamic): over all vertices, warm-started from the previous ``x``;
* ``dt`` (dynamic traversal): over every vertex reachable from the endpoints of changed edges;
* ``df`` (dynamic frontier): from the vertices a batch directly affects, growing the frontier
  through out-neighbours of vertices whose relative change exceeds ``frontier_tol``;
* ``dfp``: as ``df``, and vertices whose relative change is at most ``prune_tol`` are unmarked;
* ``warm``: the standard-form power iteration ``y <- base + alpha P^T y`` over all vertices,
  warm-started from the previous ``x``, ``base = (alpha * D + (1 - alpha) * sum(y)) / n`` (``D``:
  the dangling vertices' sum; none in self-loop mode), until ``max|dy| / sum(y) < tol``; returns
  the local-form ``x = y / base``. It needs fewer sweeps than ND: the standard form removes the
  error along the stationary vector every step, which the local form only shrinks by ``alpha``.

A weighted graph (:class:`streamrank.store.cpu_weighted.WeightedCpuGraph`) runs the same kernels
with its weights passed along (:mod:`streamrank.kernels.cpu.common`): a vertex sends ``x[u] w(u, v)
/ W[u]`` along ``(u, v)``, ``W[u]`` its out-weight, in place of ``x[u] / outdeg(u)``; a batch's
reweighted edges count as insertions (:func:`.workspace.changed_edges`). Its frontier loop needs a
workspace made with ``weighted=True``.
"""

from __future__ import annotations

import time

import numpy as np

from ...store.changes import AppliedChanges
from ...config import ALGORITHMS, RankConfig, check_algorithm
from ...kernels.cpu.common import GS_BLOCK, PARALLEL_EDGES, SPARSE_BLOCK
from ...kernels.cpu.marking import initial_frontier, reachable_frontier
from ...kernels.cpu.frontier import FRONTIER
from ...kernels.cpu.sweeps import SWEEPS
from .threads import threads_set
from .workspace import FrontierWorkspace, changed_edges
from ...errors import InvalidArgumentError
from ..result import RankResult


# ---------------------------------------------------------------------------- helpers
def _validate(graph, x_prev, config):
    if not isinstance(config, RankConfig):
        raise InvalidArgumentError(f"config must be a RankConfig, got {type(config).__name__}")
    if x_prev is not None:
        x_prev = np.asarray(x_prev, dtype=np.float64)
        if x_prev.ndim != 1 or x_prev.shape[0] > graph.num_vertices:
            raise InvalidArgumentError(
                f"x_prev has shape {x_prev.shape}, graph has {graph.num_vertices} vertices")
    return x_prev


def _extend(x_prev, n):
    """The previous ``x`` grown to ``n`` vertices (a new array); new vertices start at 1."""
    x = np.ones(n, dtype=np.float64)
    if x_prev is not None:
        x[: x_prev.shape[0]] = x_prev
    return x


def _weighted(graph) -> bool:
    return bool(getattr(graph, "weighted", False))


# ---------------------------------------------------------------------------- full sweeps
def _sweeps(graph, x, config, algorithm, *, standard=False):
    n = graph.num_vertices
    if n == 0:
        return RankResult(x, 0.0, 0, True, [], algorithm, "cpu")
    affected = np.zeros(config.max_iter, dtype=np.int64)
    gs = config.update_order == "gauss-seidel" and not standard
    kernel = SWEEPS[(standard, config.dangling == "self-loop", gs)]
    order_args = (*graph.sweep_order, graph.sweep_blocks) if gs else ()
    weights = (graph.in_weights, graph.out_weight) if _weighted(graph) else ()
    x, it, conv, total, base = kernel(graph.kernel_arrays(), graph.num_edges, x, config.alpha, config.tol,
                                      config.max_iter, affected, *order_args, *weights)
    if standard:
        x /= base
        total /= base
    return RankResult(x, float(total), int(it), bool(conv), affected[:it].tolist(), algorithm, "cpu", n)


def static_pagerank(graph, *, config: RankConfig = RankConfig(), x0=None) -> RankResult:
    """Static PageRank of ``graph`` (all vertices, synchronous iterations of the local form).

    Parameters
    ----------
    graph : CpuGraph
    config : RankConfig
    x0 : ndarray, optional
        Starting local-form vector (default all ones); shorter vectors are padded with ones.

    Returns
    -------
    RankResult
        ``ranks`` is the standard PageRank vector (internal-id order).
    """
    x0 = _validate(graph, x0, config)
    return _sweeps(graph, _extend(x0, graph.num_vertices), config, "static")


# ---------------------------------------------------------------------------- frontier
def _useful_threads(graph, gs: bool) -> int:
    """The most threads a Gauss-Seidel batch of ``graph`` keeps busy: its dense passes run one
    thread per block of the store's sweep blocks, its sparse steps one per block of
    ``SPARSE_BLOCK`` frontier entries. Every thread of a parallel region is woken, and the ones
    that find no block keep their cores busy waiting for the next region: on the 16-core host,
    sx-mathoverflow (two blocks) ran up to a third slower per batch on 16 threads than on 2. A
    frontier holds vertices with edges only, the ones before the store's sweep end. Jacobi steps
    split into chunks of ``CHUNK`` entries: no limit."""
    if not gs:
        return 1 << 30
    return max(graph.sweep_blocks.shape[0], -(-graph.sweep_end // _sparse_block()), 1)  # frontiers: vertices with edges


def _sparse_block() -> int:
    """The sparse steps' Gauss-Seidel block: ``SPARSE_BLOCK`` entries, never more than the dense
    passes' ``GS_BLOCK``."""
    return min(GS_BLOCK, SPARSE_BLOCK)


def _frontier(graph, changes, x_prev, config, algorithm, workspace):
    """DT / DF / DF-P on ``workspace`` (a throwaway one when ``None``)."""
    ws = FrontierWorkspace(_weighted(graph)) if workspace is None else workspace
    selfloop = config.dangling == "self-loop"
    gs = config.update_order == "gauss-seidel"
    ws.begin(graph, changes, np.zeros(0) if x_prev is None else x_prev, selfloop, gs)
    g = graph.kernel_arrays()
    ins_src, ins_dst, del_src, del_dst = changed_edges(changes)
    if algorithm == "dt":
        nf = reachable_frontier(g, ins_src, ins_dst, del_src, del_dst, ws.flags, ws.F)
    else:
        nf = initial_frontier(g, ins_src, del_src, del_dst, selfloop, ws.flags, ws.F)
    affected = np.zeros(config.max_iter, dtype=np.int64)
    kernel = FRONTIER[(algorithm, selfloop, gs)]
    args = (g, graph.num_edges, graph.num_vertices, ws.arrays(), nf, ws.total, ws.clock, config.alpha, config.tol,
            config.frontier_tol, config.prune_tol, _sparse_block(), config.max_iter, affected, *ws.weights(graph))
    if graph.num_edges + graph.num_vertices < PARALLEL_EDGES:  # no step can go parallel: nothing to choose
        it, conv, total, cand = kernel(*args)
    else:
        threads = ws.threads.choose()
        t0 = time.perf_counter()
        with threads_set(min(threads, _useful_threads(graph, gs))):
            it, conv, total, cand = kernel(*args)
        ws.threads.observe(threads, (time.perf_counter() - t0) * 1e3, int(affected[:it].sum()))
    x = ws.finish(graph, it, total, cand)
    return RankResult(x, ws.total, int(it), bool(conv), affected[:it].tolist(), algorithm, "cpu", int(nf))


def _update_static(graph, changes, x_prev, config, workspace):
    return static_pagerank(graph, config=config)


def _update_nd(graph, changes, x_prev, config, workspace):
    return _sweeps(graph, _extend(x_prev, graph.num_vertices), config, "nd")


def _update_warm(graph, changes, x_prev, config, workspace):
    return _sweeps(graph, _extend(x_prev, graph.num_vertices), config, "warm", standard=True)


def _update_dt(graph, changes, x_prev, config, workspace):
    return _frontier(graph, changes, x_prev, config, "dt", workspace)


def _update_df(graph, changes, x_prev, config, workspace):
    return _frontier(graph, changes, x_prev, config, "df", workspace)


def _update_dfp(graph, changes, x_prev, config, workspace):
    return _frontier(graph, changes, x_prev, config, "dfp", workspace)


#: algorithm name -> update function ``(graph, changes, x_prev, config, workspace) -> RankResult``
#: (``x_prev``: the previous ranks, as many as vertices before the batch)
UPDATES = {"static": _update_static, "nd": _update_nd, "dt": _update_dt, "df": _update_df,
           "dfp": _update_dfp, "warm": _update_warm,
           # no in-batch switch on the CPU: auto runs DF-P; AutoPolicy chooses warm after a flood
           "auto": _update_dfp}


def update_pagerank(algorithm: str, graph, changes: AppliedChanges, x_prev, *,
                    config: RankConfig = RankConfig(), workspace: FrontierWorkspace | None = None) -> RankResult:
    """Update the ranks after ``changes`` were applied to ``graph``.

    Parameters
    ----------
    algorithm : {"static", "nd", "dt", "df", "dfp", "warm", "auto"}
    graph : CpuGraph or WeightedCpuGraph
        The graph *after* the batch.
    changes : AppliedChanges
        What :meth:`CpuGraph.apply` returned.
    x_prev : ndarray
        The local-form vector before the batch (length: vertices before the batch). Not
        modified, except when it is the ``x`` that ``workspace`` returned for the previous batch
        of ``graph``: then DT, DF and DF-P advance it in place.
    config : RankConfig
    workspace : FrontierWorkspace, optional
        Per-vertex arrays of DT / DF / DF-P kept across batches (:mod:`streamrank.rank.cpu.workspace`;
        made with ``weighted=True`` for a weighted graph):
        pass the same one for every batch of a graph so that a batch costs its frontier's work
        and not a pass over all vertices. Without one, each call allocates and fills its own.

    Returns
    -------
    RankResult
        For DT, DF and DF-P with a ``workspace``, ``x`` is a view of the workspace's iterate,
        valid until the next update on that workspace.
    """
    check_algorithm(algorithm)
    if not isinstance(changes, AppliedChanges):
        raise InvalidArgumentError("changes must be the AppliedChanges of the batch")
    if workspace is not None and not isinstance(workspace, FrontierWorkspace):
        raise InvalidArgumentError(f"workspace must be a FrontierWorkspace, got {type(workspace).__name__}")
    x_prev = _validate(graph, x_prev, config)
    return UPDATES[algorithm](graph, changes, x_prev, config, workspace)


__all__ = ["ALGORITHMS", "UPDATES", "FrontierWorkspace", "static_pagerank", "update_pagerank"]
