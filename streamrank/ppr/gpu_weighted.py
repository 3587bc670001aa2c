"""Personalized PageRank of a weighted graph on the GPU: the power iteration (cuSPARSE).

A vertex ``u`` sends ``p[u] w(u, v) / W[u]`` along ``(u, v)`` (``W[u]`` its out-weight), as the
CPU's weighted power iteration (:func:`streamrank.ppr.power.power_cpu`) does. The in-direction's
live slots and their weights become one CSR matrix ``M`` (``M[v, u] = w(u, v) / W[u]``), built
once per graph version (:func:`streamrank.ppr._graph.cached`), and the iteration is
``p <- alpha M p + alpha (d . p) w + (1 - alpha) v`` from ``p = v`` until the L-infinity change is
below ``tol``. The other methods take the weights in their kernels' weighted instantiations
(push, pull and hybrid: :mod:`.gpu_local`; Monte Carlo: :mod:`.gpu_montecarlo`).
"""

from __future__ import annotations

from ._graph import cached, expand_segments


def weighted_matrix(graph):
    """``(M, dangling)``: the weighted transition matrix (CuPy CSR, rows = targets) and the
    float64 indicator of the vertices without out-edges."""
    import cupy as cp
    import cupyx.scipy.sparse as sp

    def make():
        n = int(graph.num_vertices)
        deg = cp.asarray(graph.in_degree).astype(cp.int64)
        pos, _seg = expand_segments(cp, cp.asarray(graph.in_offset), deg)
        src = cp.asarray(graph.in_indices)[pos].astype(cp.int32)
        w_out = cp.asarray(graph.out_weight, dtype=cp.float64)
        inv = cp.where(w_out > 0, 1.0 / cp.where(w_out > 0, w_out, 1.0), 0.0)
        data = cp.asarray(graph.in_weights)[pos] * inv[src]
        indptr = cp.zeros(n + 1, dtype=cp.int32)
        cp.cumsum(deg, out=indptr[1:]) if n else None
        m = sp.csr_matrix((data, src, indptr), shape=(n, n))
        return m, (w_out == 0).astype(cp.float64)

    return cached(graph, ("weighted-matrix",), make)


def power_gpu_weighted(graph, pers_dense, *, alpha, dangling, tol, max_iter, leaky=False, dtype="float64"):
    """GPU counterpart of :func:`streamrank.ppr.power.power_cpu` for a weighted graph (store or
    :class:`~streamrank.ppr._graph.DeviceGraphView` with weights); ``pers_dense`` a device vector.

    Returns
    -------
    p, iterations, converged, last_change
        ``p`` float64 (device) in the store's id order.
    """
    import cupy as cp

    m, dang = weighted_matrix(graph)
    n = int(graph.num_vertices)
    pers = cp.asarray(pers_dense, dtype=cp.float64)
    w = pers if dangling == "personalization" else cp.full(n, 1.0 / max(n, 1))
    store32 = dtype == "float32"
    p = pers.astype(cp.float32).astype(cp.float64) if store32 else pers.copy()
    change = float("inf")
    for it in range(1, int(max_iter) + 1):
        new = alpha * (m @ p) + (1.0 - alpha) * pers
        if not leaky:
            new += (alpha * cp.dot(dang, p)) * w
        if store32:
            new = new.astype(cp.float32).astype(cp.float64)
        change = float(cp.abs(new - p).max()) if n else 0.0  # sync: the convergence test
        p = new
        if change < tol:
            return p, it, True, change
    return p, int(max_iter), False, change
