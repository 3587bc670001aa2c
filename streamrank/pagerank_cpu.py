"""Static and dynamic PageRank on the CPU (NumPy/SciPy): the reference backend.

All algorithms iterate the local form of DESIGN.md, synchronously (Jacobi: every iteration reads
the previous iterate), and stop when ``max_v |dx[v]| / sum(x) < tol``:

* ``static``: from ``x = 1`` over all vertices;
* ``nd`` (naive-dynamic): over all vertices, warm-started from the previous ``x``;
* ``dt`` (dynamic traversal): over every vertex reachable from the endpoints of changed edges;
* ``df`` (dynamic frontier): from the vertices a batch directly affects, growing the frontier
  through out-neighbours of vertices whose relative change exceeds ``frontier_tol``;
* ``dfp``: as ``df``, and vertices whose relative change is at most ``prune_tol`` are unmarked.

Per iteration, DT/DF/DF-P gather over the in-edges of the affected rows only (SciPy row
slicing), or sweep with one full SpMV when the frontier holds over a fifth of the edges. Three
vector passes over |V| remain per iteration (the flag scan, the contributions ``x / d`` and, for
wide frontiers, the marking SpMV): cheap next to the gathers at the sizes the CPU backend serves.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .changes import AppliedChanges
from .config import ALGORITHMS, RankConfig, check_algorithm
from .errors import InvalidArgumentError
from .result import RankResult

_TINY = float(np.finfo(np.float64).tiny)


# ---------------------------------------------------------------------------- helpers
def _out_weights(graph, config: RankConfig):
    """``1/d(u)`` per vertex (0 for a dangling vertex in uniform mode) and ``d`` itself."""
    d = graph.out_degree.astype(np.float64)
    if config.dangling == "self-loop":
        d = d + 1.0
    with np.errstate(divide="ignore"):
        inv = np.where(d > 0, 1.0 / np.maximum(d, 1.0), 0.0)
    return inv, d


def _in_matrix(graph):
    """The in-adjacency as a SciPy CSR matrix (row v holds v's in-neighbours)."""
    n = graph.num_vertices
    data = np.ones(graph.in_indices.shape[0], dtype=np.float64)
    return sp.csr_matrix((data, graph.in_indices, graph.in_indptr), shape=(n, n))


def _gather_rows(indptr, indices, rows):
    """Row id (position in ``rows``) and column of every entry of the given CSR rows."""
    starts = indptr[rows]
    lens = indptr[rows + 1] - starts
    total = int(lens.sum())
    if total == 0:
        return np.zeros(0, np.int64), np.zeros(0, indices.dtype)
    owner = np.repeat(np.arange(rows.shape[0], dtype=np.int64), lens)
    first = np.cumsum(lens) - lens
    pos = np.arange(total, dtype=np.int64) - first[owner] + starts[owner]
    return owner, indices[pos]


def _closed_form(s, rows, config, d):
    """Local-form value from the in-sum ``s`` of ``rows``."""
    val = 1.0 + config.alpha * s
    if config.dangling == "self-loop":
        val = val / (1.0 - config.alpha / d[rows])
    return val


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
    """The previous ``x`` grown to ``n`` vertices; new vertices start at 1."""
    x = np.ones(n, dtype=np.float64)
    if x_prev is not None:
        x[: x_prev.shape[0]] = x_prev
    return x


# ---------------------------------------------------------------------------- full sweeps
def _iterate_all(graph, x, config, algorithm):
    n = graph.num_vertices
    if n == 0:
        return RankResult(x, 0.0, 0, True, [], algorithm, "cpu")
    A = _in_matrix(graph)
    inv, d = _out_weights(graph, config)
    rows = np.arange(n)
    affected = []
    converged = False
    for _ in range(config.max_iter):
        new = _closed_form(A @ (x * inv), rows, config, d)
        err = float(np.abs(new - x).max())
        x = new
        total = float(x.sum())
        affected.append(n)
        if err / total < config.tol:
            converged = True
            break
    return RankResult(x, total, len(affected), converged, affected, algorithm, "cpu", n)


def static_pagerank(graph, *, config: RankConfig = RankConfig(), x0=None) -> RankResult:
    """Static PageRank of ``graph`` (all vertices, synchronous iterations).

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
    return _iterate_all(graph, _extend(x0, graph.num_vertices), config, "static")


# ---------------------------------------------------------------------------- marking
def _out_neighbours(graph, vertices):
    """Out-neighbours of ``vertices`` (with repeats)."""
    if vertices.shape[0] == 0:
        return np.zeros(0, dtype=np.int64)
    _, cols = _gather_rows(graph.out_indptr, graph.out_indices, vertices.astype(np.int64))
    return cols


def initial_marking(graph, changes: AppliedChanges, config: RankConfig) -> np.ndarray:
    """Vertices a batch directly affects (DF/DF-P), as a boolean mask over vertices.

    Out-neighbours (new graph) of the source of every inserted or deleted edge, the target of
    every deleted edge, and in self-loop mode the sources themselves.
    """
    n = graph.num_vertices
    mask = np.zeros(n, dtype=bool)
    sources = np.unique(np.concatenate([changes.ins_src, changes.del_src]).astype(np.int64))
    mask[_out_neighbours(graph, sources)] = True
    mask[changes.del_dst] = True  # inserted targets are out-neighbours of their sources already
    if config.dangling == "self-loop":
        mask[sources] = True
    return mask


def reachable_marking(graph, changes: AppliedChanges) -> np.ndarray:
    """Every vertex reachable along out-edges from the endpoints of changed edges (DT)."""
    n = graph.num_vertices
    mask = np.zeros(n, dtype=bool)
    frontier = np.unique(np.concatenate(
        [changes.ins_src, changes.ins_dst, changes.del_src, changes.del_dst]).astype(np.int64))
    mask[frontier] = True
    while frontier.shape[0]:
        nb = np.unique(_out_neighbours(graph, frontier))
        frontier = nb[~mask[nb]]
        mask[frontier] = True
    return mask


# ---------------------------------------------------------------------------- frontier sweeps
def _iterate_subset(graph, x, mask, config, algorithm, *, grow: bool, prune: bool):
    inv, d = _out_weights(graph, config)
    A = _in_matrix(graph)
    in_deg = graph.in_degree
    # A gather over the affected rows costs about 5x a full SpMV per edge (NumPy/SciPy
    # row slicing against the C matvec), so a frontier holding over a fifth of the edges is
    # swept with the full SpMV and its rows taken: same values, less time.
    dense_edges = max(graph.num_edges // 5, 1)
    dense_marks = max(graph.num_vertices // 64, 16)
    total = float(x.sum())
    affected = []
    initially = int(mask.sum())
    converged = False
    for _ in range(config.max_iter):
        rows = np.flatnonzero(mask)
        if rows.shape[0] == 0:
            converged = True
            break
        c = x * inv
        if int(in_deg[rows].sum()) >= dense_edges:
            s = (A @ c)[rows]
        else:
            s = A[rows] @ c
        new = _closed_form(s, rows, config, d)
        old = x[rows]
        delta = np.abs(new - old)
        x[rows] = new  # Jacobi: every read of this iteration happened above
        total += float((new - old).sum())
        affected.append(int(rows.shape[0]))
        if grow or prune:
            rel = delta / np.maximum(np.maximum(new, old), _TINY)
            if prune:
                mask[rows[rel <= config.prune_tol]] = False
            if grow:
                spread = rows[rel > config.frontier_tol]
                if spread.shape[0] > dense_marks:
                    # many spreaders: one in-matrix SpMV finds every vertex with a flagged
                    # in-neighbour, cheaper than slicing that many out-rows
                    flag = np.zeros(x.shape[0])
                    flag[spread] = 1.0
                    mask |= (A @ flag) > 0
                elif spread.shape[0]:
                    mask[_out_neighbours(graph, spread)] = True
        if float(delta.max()) / total < config.tol:
            converged = True
            break
    total = float(x.sum())  # exact sum (the running sum drifts by rounding)
    return RankResult(x, total, len(affected), converged, affected, algorithm, "cpu", initially)


def update_pagerank(algorithm: str, graph, changes: AppliedChanges, x_prev, *,
                    config: RankConfig = RankConfig()) -> RankResult:
    """Update the ranks after ``changes`` were applied to ``graph``.

    Parameters
    ----------
    algorithm : {"static", "nd", "dt", "df", "dfp"}
    graph : CpuGraph
        The graph *after* the batch.
    changes : AppliedChanges
        What :meth:`CpuGraph.apply` returned.
    x_prev : ndarray
        The local-form vector before the batch (length: vertices before the batch).
    config : RankConfig

    Returns
    -------
    RankResult
    """
    check_algorithm(algorithm)
    if not isinstance(changes, AppliedChanges):
        raise InvalidArgumentError("changes must be the AppliedChanges of the batch")
    x_prev = _validate(graph, x_prev, config)
    if algorithm == "static":
        return static_pagerank(graph, config=config)
    x = _extend(x_prev, graph.num_vertices)
    if algorithm == "nd":
        return _iterate_all(graph, x, config, "nd")
    if algorithm == "dt":
        mask = reachable_marking(graph, changes)
        return _iterate_subset(graph, x, mask, config, "dt", grow=False, prune=False)
    mask = initial_marking(graph, changes, config)
    return _iterate_subset(graph, x, mask, config, algorithm, grow=True, prune=(algorithm == "dfp"))


__all__ = ["ALGORITHMS", "static_pagerank", "update_pagerank", "initial_marking", "reachable_marking"]
