"""Independent static PageRank: the oracle dynamic ranks are checked against.

:func:`scipy_pagerank` is a plain float64 power iteration on the *standard* formulation
(``p = alpha P^T p + (alpha * dangling mass + 1 - alpha) / N``), deliberately not the engine's
local form, iterated to an L1 change below 1e-15: an independent implementation of the same
definition. :func:`oracle_pagerank` uses cuGraph instead when asked and installed
(:mod:`streamrank.oracle.cugraph_static`).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..backend import to_host
from ..config import DANGLING_MODES
from ..errors import InvalidArgumentError


def scipy_pagerank(src, dst, num_vertices: int, *, weight=None, alpha: float = 0.85, dangling: str = "uniform",
                   tol: float = 1e-15, max_iter: int = 10_000) -> np.ndarray:
    """Static PageRank in float64 from an edge list (internal ids, no duplicate edges).

    Parameters
    ----------
    src, dst : array of int
        Edges ``src[i] -> dst[i]`` (internal ids in ``[0, num_vertices)``).
    num_vertices : int
    weight : array of float, optional
        Positive edge weights: ``u`` sends ``p[u] * w(u, v) / W[u]`` along ``(u, v)``, ``W[u]`` the
        sum of its out-edges' weights. Default: every edge weight 1.
    alpha : float
    dangling : {"uniform", "self-loop"}
        ``"self-loop"`` adds a self-loop of weight 1 to every vertex (the published DF-P setting).
    tol : float
        Stop when the L1 change between iterations is below this.
    max_iter : int

    Returns
    -------
    ndarray of float64
        Ranks summing to 1, indexed by internal id.
    """
    if dangling not in DANGLING_MODES:
        raise InvalidArgumentError(f"dangling must be one of {DANGLING_MODES}")
    n = int(num_vertices)
    if n == 0:
        return np.zeros(0)
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    wt = np.ones(src.shape[0]) if weight is None else np.asarray(weight, dtype=np.float64)
    if wt.shape != src.shape or (wt.size and not bool(np.all((wt > 0) & np.isfinite(wt)))):
        raise InvalidArgumentError("weight must hold one finite positive weight per edge")
    if dangling == "self-loop":
        loops = np.arange(n, dtype=np.int64)
        src, dst = np.concatenate([src, loops]), np.concatenate([dst, loops])
        wt = np.concatenate([wt, np.ones(n)])
    outdeg = np.bincount(src, weights=wt, minlength=n).astype(np.float64)
    w = wt / outdeg[src]
    PT = sp.csr_matrix((w, (dst, src)), shape=(n, n))  # duplicates (explicit + implicit loop) add up
    dangling_mask = outdeg == 0
    p = np.full(n, 1.0 / n)
    for _ in range(max_iter):
        new = alpha * (PT @ p) + (alpha * p[dangling_mask].sum() + 1.0 - alpha) / n
        new /= new.sum()
        if np.abs(new - p).sum() < tol:
            return new
        p = new
    return p


def oracle_pagerank(graph, *, alpha: float = 0.85, dangling: str = "uniform",
                    use: str = "auto") -> np.ndarray:
    """Static PageRank of a graph store's current edges, as a host float64 vector.

    Parameters
    ----------
    graph : CpuGraph or GpuGraph
        A weighted store's edge weights are used.
    alpha : float
    dangling : {"uniform", "self-loop"}
    use : {"auto", "scipy", "cugraph"}
        ``"auto"``: cuGraph (float64) for a GPU graph where pylibcugraph is installed, else
        SciPy (float64, independent of the engine). ``"cugraph"``: cuGraph's PageRank (raises
        BackendUnavailableError where it is not installed). ``"scipy"``: always SciPy.

    Returns
    -------
    ndarray of float64, in internal-id order.
    """
    if oracle_name(graph, use) == "cugraph":
        from .cugraph_static import cugraph_pagerank

        return cugraph_pagerank(graph, alpha=alpha, dangling=dangling)
    s, d = graph.edges()
    s, d = to_host(s), to_host(d)  # device-to-host copy of the edge list on the GPU (oracle only)
    w = to_host(graph.edge_weights()) if getattr(graph, "weighted", False) else None
    return scipy_pagerank(s, d, graph.num_vertices, weight=w, alpha=alpha, dangling=dangling)


def oracle_name(graph, use: str = "auto") -> str:
    """Which oracle :func:`oracle_pagerank` uses for ``graph``: ``"scipy"`` or ``"cugraph"``."""
    if use not in ("auto", "scipy", "cugraph"):
        raise InvalidArgumentError(f"use must be auto, scipy or cugraph, got {use!r}")
    if use != "auto":
        return use
    if getattr(graph, "backend_name", "cpu") == "gpu":
        from .cugraph_static import cugraph_available

        if cugraph_available():
            return "cugraph"
    return "scipy"
