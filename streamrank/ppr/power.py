"""Power iteration (pull, synchronous) on the CPU: the exact reference of every method."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ._graph import GraphArrays, expand_segments


def in_matrix(ga: GraphArrays):
    """The pattern ``A[v, u] = 1`` for each edge u -> v, as a SciPy CSR matrix (in-CSR order)."""
    pos, seg = expand_segments(np, ga.in_offset, ga.in_degree)
    cols = ga.in_indices[pos]
    indptr = np.zeros(ga.n + 1, dtype=np.int64)
    np.cumsum(ga.in_degree, out=indptr[1:])
    return sp.csr_matrix((np.ones(cols.shape[0]), cols, indptr), shape=(ga.n, ga.n))


def power_cpu(ga: GraphArrays, pers_dense, *, alpha, dangling, tol, max_iter, leaky=False, matrix=None,
              dtype="float64"):
    """Iterate ``p <- alpha X p + alpha (d . p) w + (1 - alpha) v`` until the L-infinity change
    is below ``tol``.

    ``w = v`` (``dangling="personalization"``) or ``1/|V|`` (``"uniform"``); ``leaky=True``
    drops the dangling term (the leaky vector used by the uniform split). ``dtype`` is the type
    the iterate is stored in between iterations (float32: the fast approximate mode); the
    result is float64.

    Returns
    -------
    p, iterations, converged, last_change
    """
    n = ga.n
    A = in_matrix(ga) if matrix is None else matrix
    deg = ga.out_degree.astype(np.float64)
    dang = deg == 0
    inv = np.where(dang, 0.0, 1.0 / np.where(dang, 1.0, deg))
    p = pers_dense.astype(dtype)
    change = np.inf
    for it in range(1, int(max_iter) + 1):
        p = p.astype(np.float64)
        s = A @ (p * inv)
        new = alpha * s + (1.0 - alpha) * pers_dense
        if not leaky:
            dmass = float(p[dang].sum())
            new += alpha * dmass * (pers_dense if dangling == "personalization" else 1.0 / n)
        new = new.astype(dtype).astype(np.float64)
        change = float(np.max(np.abs(new - p))) if n else 0.0
        p = new
        if change < tol:
            return p, it, True, change
    return p.astype(np.float64), int(max_iter), False, change
