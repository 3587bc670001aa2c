"""cuGraph (pylibcugraph) static PageRank: the GPU oracle and the "what a user would run" baseline.

Semantics, as cuGraph states them and as this module uses them:

- cuGraph's PageRank is the standard one: dangling vertices spread their rank uniformly over all
  vertices, ranks sum to 1 (the engine's ``dangling="uniform"``). For ``dangling="self-loop"``
  this module adds an explicit self-loop to every vertex before calling cuGraph, which is the
  published DF-P setting (an existing self-loop then counts twice, as in
  :func:`streamrank.oracle.static.scipy_pagerank`).
- cuGraph's ``epsilon``/``tol`` bounds the **L1** norm of the change between iterations, summed
  over all vertices (not the engine's L-infinity change of ``x / sum(x)``); with many vertices
  the same number is a much tighter criterion.
- A warm start passes the previous ranks as the initial guess (cuGraph normalizes them).

Verified only where pylibcugraph is installed (it is not part of the default device image);
:func:`cugraph_available` says whether it is.
"""

from __future__ import annotations

import functools

from ..config import DANGLING_MODES
from ..errors import BackendUnavailableError, DeviceMemoryError, InvalidArgumentError, KernelError


@functools.lru_cache(maxsize=1)
def cugraph_available() -> bool:
    """Whether pylibcugraph imports here."""
    try:
        import pylibcugraph  # noqa: F401
    except Exception:
        return False
    return True


def cugraph_failure(what: str, exc: BaseException) -> KernelError:
    """The package's error for a failure ``exc`` of the cuGraph call ``what`` (raise it ``from
    exc``): :class:`~streamrank.errors.DeviceMemoryError` where the device ran out of memory
    (RMM's ``out_of_memory`` / ``std::bad_alloc`` inside pylibcugraph, or CuPy's allocation
    error while preparing its inputs; :func:`~streamrank.store.memory.out_of_memory` words it),
    else :class:`~streamrank.errors.KernelError`."""
    text = str(exc) or type(exc).__name__
    if isinstance(exc, MemoryError) or "out_of_memory" in text or "bad_alloc" in text:
        from ..store.memory import out_of_memory

        try:
            import cupy as xp
        except ImportError:  # the free memory is then left unread
            xp = None
        return out_of_memory(exc, xp=xp, what=what, error=DeviceMemoryError,
                             changed="the engine's graph and ranks are untouched")
    return KernelError(f"{what} failed: {text}")


def _plc():
    try:
        import pylibcugraph
    except Exception as exc:
        raise BackendUnavailableError(f"cuGraph (pylibcugraph) is not installed: {exc}") from exc
    return pylibcugraph


def build_cugraph_graph(src, dst, num_vertices: int, *, dangling: str = "uniform",
                        weight_dtype: str = "float32", weight=None):
    """A pylibcugraph ``SGGraph`` (transposed storage, no renumbering) of internal-id edges.

    Parameters
    ----------
    src, dst : cupy arrays of int
        Edges in internal ids ``[0, num_vertices)``.
    num_vertices : int
    dangling : {"uniform", "self-loop"}
    weight_dtype : {"float32", "float64"}
        Edge-weight type, which is also the type cuGraph computes the ranks in: float32 for
        the baseline a cuGraph user would run, float64 for the oracle.
    weight : array of float, optional
        Edge weights (host or device), one per edge; default 1. In self-loop mode the added
        loops weigh 1.

    Returns
    -------
    (ResourceHandle, SGGraph)

    Raises
    ------
    DeviceMemoryError
        The graph did not fit in the device memory left (cuGraph allocates through RMM, beside
        CuPy's pool and what it caches).
    KernelError
        Any other failure of pylibcugraph.
    """
    if dangling not in DANGLING_MODES:
        raise InvalidArgumentError(f"dangling must be one of {DANGLING_MODES}, got {dangling!r}")
    if weight_dtype not in ("float32", "float64"):
        raise InvalidArgumentError(f"weight_dtype must be float32 or float64, got {weight_dtype!r}")
    plc = _plc()
    try:
        return _build(plc, src, dst, num_vertices, dangling, weight_dtype, weight)
    except (InvalidArgumentError, KernelError):
        raise
    except Exception as exc:  # pylibcugraph raises RuntimeError/TypeError across versions; CuPy MemoryError
        raise cugraph_failure("building the cuGraph graph", exc) from exc


def _build(plc, src, dst, num_vertices, dangling, weight_dtype, weight):
    import cupy as cp

    s = cp.asarray(src).astype(cp.int32)
    d = cp.asarray(dst).astype(cp.int32)
    w = cp.ones(s.shape[0], dtype=weight_dtype) if weight is None else cp.asarray(weight).astype(weight_dtype)
    if w.shape != s.shape:
        raise InvalidArgumentError(f"weight has {w.shape[0]} entries for {s.shape[0]} edges")
    if dangling == "self-loop":
        loops = cp.arange(int(num_vertices), dtype=cp.int32)
        s, d = cp.concatenate([s, loops]), cp.concatenate([d, loops])
        w = cp.concatenate([w, cp.ones(loops.shape[0], dtype=weight_dtype)])
    vertices = cp.arange(int(num_vertices), dtype=cp.int32)
    handle = plc.ResourceHandle()
    props = plc.GraphProperties(is_symmetric=False, is_multigraph=False)
    graph = plc.SGGraph(
        resource_handle=handle, graph_properties=props, src_or_offset_array=s,
        dst_or_index_array=d, weight_array=w, store_transposed=True, renumber=False,
        do_expensive_check=False, vertices_array=vertices,
    )
    return handle, graph


def pagerank_on(handle, graph, *, alpha: float = 0.85, tol: float = 1e-6, max_iter: int = 500,
                initial=None, graph_dtype: str = "float32"):
    """Run pylibcugraph PageRank on a graph from :func:`build_cugraph_graph`.

    Parameters
    ----------
    tol : float
        cuGraph's epsilon: bound on the L1 change between iterations.
    initial : cupy array, optional
        Initial guess (ranks indexed by internal id).

    Returns
    -------
    cupy array of float32
        Ranks by internal id (sums to 1).
    """
    plc = _plc()
    import cupy as cp

    guess_v = guess_x = None
    if initial is not None:
        guess_x = cp.asarray(initial, dtype=graph_dtype)
        guess_v = cp.arange(guess_x.shape[0], dtype=cp.int32)
    try:
        verts, vals = plc.pagerank(
            resource_handle=handle, graph=graph, precomputed_vertex_out_weight_vertices=None,
            precomputed_vertex_out_weight_sums=None, initial_guess_vertices=guess_v,
            initial_guess_values=guess_x, alpha=float(alpha), epsilon=float(tol),
            max_iterations=int(max_iter), do_expensive_check=False,
        )
    except Exception as exc:
        raise cugraph_failure("cuGraph PageRank", exc) from exc
    out = cp.zeros(int(verts.shape[0]), dtype=vals.dtype)
    out[cp.asarray(verts)] = cp.asarray(vals)
    return out


def personalized_pagerank_on(handle, graph, vertices, values, *, alpha: float = 0.85, tol: float = 1e-12,
                             max_iter: int = 10_000, graph_dtype: str = "float64"):
    """pylibcugraph personalized PageRank on a graph from :func:`build_cugraph_graph`.

    ``vertices``/``values``: the personalization (internal ids, weights). cuGraph returns a
    dangling vertex's rank to the personalization (``dangling="personalization"`` of
    :mod:`streamrank.ppr`); ``tol`` is its epsilon (L1 change).

    Returns
    -------
    cupy array
        The PPR vector by internal id.
    """
    plc = _plc()
    import cupy as cp

    try:
        res = plc.personalized_pagerank(
            resource_handle=handle, graph=graph, precomputed_vertex_out_weight_vertices=None,
            precomputed_vertex_out_weight_sums=None, initial_guess_vertices=None, initial_guess_values=None,
            personalization_vertices=cp.asarray(vertices, dtype=cp.int32),
            personalization_values=cp.asarray(values, dtype=graph_dtype), alpha=float(alpha),
            epsilon=float(tol), max_iterations=int(max_iter), do_expensive_check=False,
        )
    except Exception as exc:
        raise cugraph_failure("cuGraph personalized PageRank", exc) from exc
    verts, vals = res[0], res[1]  # (some versions add a convergence flag)
    out = cp.zeros(int(verts.shape[0]), dtype=vals.dtype)
    out[cp.asarray(verts)] = cp.asarray(vals)
    return out


def cugraph_pagerank(graph, *, alpha: float = 0.85, dangling: str = "uniform", tol: float = 1e-10,
                     max_iter: int = 10_000):
    """Static PageRank of a graph store by cuGraph, as a host float64 vector (internal ids).

    Raises
    ------
    BackendUnavailableError
        Where pylibcugraph is not installed.
    """
    import numpy as np

    _plc()
    s, d = graph.edges()
    w = graph.edge_weights() if getattr(graph, "weighted", False) else None
    handle, g = build_cugraph_graph(s, d, graph.num_vertices, dangling=dangling, weight_dtype="float64", weight=w)
    p = pagerank_on(handle, g, alpha=alpha, tol=tol, max_iter=max_iter, graph_dtype="float64")
    host = np.asarray(p.get(), dtype=np.float64)  # device-to-host copy of the ranks (oracle only)
    return host / host.sum()
